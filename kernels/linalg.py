"""Small dense linear-algebra bodies shared by every kernel.

Products go through :func:`gemm_nn` / :func:`gemm_tn` / :func:`gemv`: on the CPU they
compile to BLAS (``np.dot`` with an ``out`` buffer, which PERFORMANCE.md measured as fast
as a direct dgemm call from Numba at d = 20, and 3-8x faster than loops with fastmath
off); on CUDA, and when called from plain Python (the CUDA simulator, tests), they are
the loops written below. Everything else is loops, written once.
"""

import math

import numpy as np
from numba.extending import overload

from vits_ref.config import kernel

# --------------------------------------------------------------------------- products


def gemm_nn(a, b, out):
    """``out = a @ b`` (loops; the CPU target uses BLAS)."""
    n, k = a.shape
    m = b.shape[1]
    for i in range(n):
        for j in range(m):
            s = 0.0
            for p in range(k):
                s += a[i, p] * b[p, j]
            out[i, j] = s


def gemm_tn(a, b, out):
    """``out = a.T @ b`` (loops; the CPU target uses BLAS)."""
    k, n = a.shape
    m = b.shape[1]
    for i in range(n):
        for j in range(m):
            s = 0.0
            for p in range(k):
                s += a[p, i] * b[p, j]
            out[i, j] = s


def gemm_nt(a, b, out):
    """``out = a @ b.T`` (loops; the CPU target uses BLAS)."""
    n, k = a.shape
    m = b.shape[0]
    for i in range(n):
        for j in range(m):
            s = 0.0
            for p in range(k):
                s += a[i, p] * b[j, p]
            out[i, j] = s


def gemv(a, x, out):
    """``out = a @ x`` (loops; the CPU target uses BLAS)."""
    n, k = a.shape
    for i in range(n):
        s = 0.0
        for p in range(k):
            s += a[i, p] * x[p]
        out[i] = s


def inv_transpose(b, out, work):
    """``out = inv(b).T`` by Gauss-Jordan elimination with partial pivoting.

    ``work`` is a (d, 2d) scratch buffer. Returns False if ``b`` is singular (a zero or
    non-finite pivot), which the callers report as divergence. The CPU target uses
    LAPACK (``np.linalg.inv``, 2x faster for VITS-I at d = 20) and returns False when it
    raises on a singular matrix.
    """
    d = b.shape[0]
    for i in range(d):
        for j in range(d):
            work[i, j] = b[i, j]
            work[i, d + j] = 1.0 if i == j else 0.0
    for c in range(d):
        piv = c
        best = abs(work[c, c])
        for r in range(c + 1, d):
            if abs(work[r, c]) > best:
                best = abs(work[r, c])
                piv = r
        if best == 0.0 or not math.isfinite(best):
            return False
        if piv != c:
            for j in range(2 * d):
                tmp = work[c, j]
                work[c, j] = work[piv, j]
                work[piv, j] = tmp
        inv_p = 1.0 / work[c, c]
        for j in range(2 * d):
            work[c, j] *= inv_p
        for r in range(d):
            if r != c:
                f = work[r, c]
                if f != 0.0:
                    for j in range(2 * d):
                        work[r, j] -= f * work[c, j]
    for i in range(d):
        for j in range(d):
            out[j, i] = work[i, d + j]
    return True


@overload(gemm_nn, target="cpu")
def _gemm_nn_cpu(a, b, out):
    def impl(a, b, out):
        np.dot(a, b, out)
    return impl


@overload(gemm_tn, target="cpu")
def _gemm_tn_cpu(a, b, out):
    def impl(a, b, out):
        np.dot(a.T, b, out)
    return impl


@overload(gemm_nt, target="cpu")
def _gemm_nt_cpu(a, b, out):
    def impl(a, b, out):
        np.dot(a, b.T, out)
    return impl


@overload(gemv, target="cpu")
def _gemv_cpu(a, x, out):
    def impl(a, x, out):
        np.dot(a, x, out)
    return impl


@overload(inv_transpose, target="cpu")
def _inv_transpose_cpu(b, out, work):
    def impl(b, out, work):
        try:
            inv = np.linalg.inv(b)
        except Exception:  # LinAlgError: singular (the caller reports divergence)
            return False
        for i in range(b.shape[0]):
            for j in range(b.shape[1]):
                if not math.isfinite(inv[i, j]):
                    return False
                out[j, i] = inv[i, j]
        return True
    return impl


# The CUDA target compiles the loop bodies above as they are.
@overload(gemm_nn, target="cuda")
def _gemm_nn_cuda(a, b, out):
    return gemm_nn


@overload(gemm_tn, target="cuda")
def _gemm_tn_cuda(a, b, out):
    return gemm_tn


@overload(gemm_nt, target="cuda")
def _gemm_nt_cuda(a, b, out):
    return gemm_nt


@overload(gemv, target="cuda")
def _gemv_cuda(a, x, out):
    return gemv


@overload(inv_transpose, target="cuda")
def _inv_transpose_cuda(b, out, work):
    return inv_transpose


# --------------------------------------------------------------------------- Cholesky


@kernel
def cholesky(a, out):
    """Lower Cholesky factor of the SPD matrix ``a`` into ``out``; False if not SPD."""
    d = a.shape[0]
    for j in range(d):
        s = a[j, j]
        for k in range(j):
            s -= out[j, k] * out[j, k]
        if not s > 0.0:
            return False
        ljj = math.sqrt(s)
        out[j, j] = ljj
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= out[i, k] * out[j, k]
            out[i, j] = s / ljj
        for i in range(j):
            out[i, j] = 0.0
    return True


@kernel
def chol_rank1_update(L, x, work):
    """Update the lower factor ``L`` in place so that ``L L^T <- L L^T + x x^T``.

    O(d^2) (Golub & Van Loan, sec. 6.5.4, with Givens-like rotations); ``x`` is not
    modified (``work`` of length d holds the running vector).
    """
    d = L.shape[0]
    for i in range(d):
        work[i] = x[i]
    for k in range(d):
        lkk = L[k, k]
        xk = work[k]
        # sqrt instead of hypot and a multiplication by 1/c instead of a division: 2x
        # faster at d = 20; overflow would need |x| ~ 1e154
        r = math.sqrt(lkk * lkk + xk * xk)
        c = r / lkk
        s = xk / lkk
        ic = lkk / r
        L[k, k] = r
        for i in range(k + 1, d):
            lik = (L[i, k] + s * work[i]) * ic
            L[i, k] = lik
            work[i] = c * work[i] - s * lik


@kernel
def solve_lower(L, b, out):
    """Solve ``L x = b`` (L lower triangular) into ``out``; ``out`` may alias ``b``."""
    d = L.shape[0]
    for i in range(d):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]


@kernel
def solve_lower_t(L, b, out):
    """Solve ``L^T x = b`` (L lower triangular) into ``out``; ``out`` may alias ``b``."""
    d = L.shape[0]
    if out is not b:
        for i in range(d):
            out[i] = b[i]
    # column (axpy) form: row i of L is column i of L^T, so the inner loop reads L
    # contiguously and vectorises without reassociation (the dot form strides down a column)
    for i in range(d - 1, -1, -1):
        xi = out[i] / L[i, i]
        out[i] = xi
        for k in range(i):
            out[k] -= L[i, k] * xi


@kernel
def log_abs_det_chol(L):
    """``log det(L L^T) = 2 sum log L_ii`` for a Cholesky factor ``L``."""
    s = 0.0
    for i in range(L.shape[0]):
        s += math.log(L[i, i])
    return 2.0 * s


@kernel
def all_finite_vec(x):
    """True if every entry of the vector ``x`` is finite."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 0.0
    return s == 0.0


@kernel
def all_finite_mat(a):
    """True if every entry of the matrix ``a`` is finite (0 * inf and 0 * nan are nan)."""
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * 0.0
    return s == 0.0
