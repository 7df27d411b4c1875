"""Cooperative versions of :mod:`.linalg`'s primitives: a CUDA block's threads split the work.

Every function here has the signature and the result of its namesake in :mod:`.linalg`,
and is called by *every* thread of a 1-D block with the same arguments (arrays every
thread can address: shared or global memory). Each opens with a barrier (the operands
written before the call are visible, and every thread has finished reading what the call
overwrites), splits the output entries over the threads (``threadIdx.x``, stride
``blockDim.x``) and closes with a barrier (the result is visible to every thread after the
call). Scalars they return (``inv_transpose``'s and ``cholesky``'s success) are computed
identically by every thread, so the caller's control flow stays uniform across the block.

The primitives (:data:`REPLACEMENTS`):

* products: ``gemm_nn``, ``gemm_tn``, ``gemm_nt``, ``gemv``, ``gram``, ``syrk_lower``;
* factors and solves: ``cholesky`` (column by column, the rows below the diagonal split),
  ``solve_lower``, ``solve_lower_t``, ``chol_rank1_update``, ``inv_transpose``;
* in-place updates, element-wise (each entry read and written by one thread):
  ``fill_vec``, ``scaled_identity``, ``copy_mat``, ``div_vec``, ``div_mat``, ``add_vec``,
  ``add_diff_vec``, ``sub_vec``, ``sub_mat``, ``axpy_vec``, ``axpy_mat``, ``add_axpby_vec``,
  ``add_scaled_diff_mat`` (``B += h (X - Y)``), ``add_scaled_diff_t_mat``
  (``B += h (X^T - Y)``, VITS-II's square-root step), ``add_rows``, ``sub_rows``,
  ``add_outer_pair`` (``V += x x^T``, ``eta V += eta x x^T``), ``sub_outer_div`` (Sherman-Morrison),
  ``symmetrize`` (each pair by one thread); and per output entry a reduction in the serial
  order: ``mean_rows``, ``sub_rows_pair_mean`` (draws and gradients centred, the mean
  gradient, in one pass),
  ``add_sqrt_rowdots`` (LinUCB's widths).

Each output entry is computed with the arithmetic and in the order of :mod:`.linalg`'s
loops (where an entry is more than one line, by the same function: :func:`.linalg.pivot`,
:func:`.linalg.rotation`, :func:`.linalg.syrk_entry`; ``gemm_tn`` and ``gemm_nt`` are
``gemm_nn`` on transposed views in both modules), so on one target the cooperative and
the serial loops give the same bits (the
simulator tests check equality on blocks of 1 to 16 threads; the CPU drivers' BLAS differs
from both by rounding). The triangular solves and the rank-one Cholesky update keep their
column order (axpy form: the order of :func:`.linalg.solve_lower_t` and, for
:func:`solve_lower`, the same sequence of subtractions as the dot form).

**The bodies are block-safe.** The fused bandit pieces (:mod:`.vits`, :mod:`.lints`,
:mod:`.linucb`, :mod:`.langevin`, the random policy) and what they call (:mod:`.linear`'s
statistics and potential, :mod:`.diagnostics`' KL) store into their state only through
these primitives; outside them they keep scalars in registers and only read shared state
(``argmax``, ``all_finite_*``, the KL's traces), which is safe because every primitive
closes with a barrier (the reads see its result) and opens with one (no thread overwrites
what another is still reading). So a body rebuilt by
:func:`vits_ref.drivers.cuda_coop.rebind` runs on a block with every thread running its
scalar flow, and ``serial_shared_writes`` of every piece's rounds body finds only the
loop's outputs (``regret``, ``arms``, ``kl_out``: the same value stored by every thread,
never read back) (``tests/test_coop_design.py``).

Used only through :func:`vits_ref.drivers.cuda_coop.rebind`, which rebuilds a body with
these in place of :mod:`.linalg`'s; this module imports ``numba.cuda`` (the optional
``cuda`` extra) and is never imported by the CPU path.
"""

import math

from numba import config as numba_config
from numba import cuda

from vits_ref.config import kernel

from . import linalg
from .linalg import pivot, rotation, syrk_entry


class _SimulatedCuda:
    """Under Numba's CUDA simulator, the running kernel's simulated ``cuda`` module.

    The simulator hands its fake module (``threadIdx``, ``syncthreads``, ...) only to
    kernels and device functions; these primitives are plain bodies, so they look it up
    here at call time. Compiled for a GPU, ``cuda`` below is the real module.
    """

    def __getattr__(self, name):
        from numba.cuda.simulator.kernel import _get_kernel_context

        return getattr(_get_kernel_context(), name)


if getattr(numba_config, "ENABLE_CUDASIM", 0):
    cuda = _SimulatedCuda()  # noqa: F811


@kernel(inline=True)
def _tid():
    return cuda.threadIdx.x


@kernel(inline=True)
def _nthreads():
    return cuda.blockDim.x


@kernel(inline=True)
def _sync():
    cuda.syncthreads()


@kernel
def gemm_nn(a, b, out):
    """``out = a @ b``, output entries split over the block."""
    _sync()
    n, k = a.shape
    m = b.shape[1]
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        s = 0.0
        for p in range(k):
            s += a[i, p] * b[p, j]
        out[i, j] = s
    _sync()


@kernel
def gemm_tn(a, b, out):
    """``out = a.T @ b``: :func:`gemm_nn` on the transposed view."""
    gemm_nn(a.T, b, out)


@kernel
def gemm_nt(a, b, out):
    """``out = a @ b.T``: :func:`gemm_nn` on the transposed view."""
    gemm_nn(a, b.T, out)


@kernel
def gemv(a, x, out):
    """``out = a @ x``, rows split over the block."""
    _sync()
    n, k = a.shape
    for i in range(_tid(), n, _nthreads()):
        s = 0.0
        for p in range(k):
            s += a[i, p] * x[p]
        out[i] = s
    _sync()


@kernel
def gram(a, out):
    """``out = a.T @ a`` (both triangles, as :func:`.linalg.gram` on CUDA)."""
    gemm_tn(a, a, out)


@kernel
def syrk_lower(a, alpha, beta, c):
    """Lower triangle of ``c`` <- ``beta c + alpha a^T a`` (strict upper untouched)."""
    _sync()
    d = a.shape[1]
    for e in range(_tid(), d * d, _nthreads()):
        i = e // d
        j = e - i * d
        if j <= i:
            c[i, j] = syrk_entry(a, alpha, beta, c, i, j)
    _sync()


@kernel
def solve_lower(L, b, out):
    """Solve ``L x = b`` into ``out`` (may alias ``b``): column by column, the updates of
    the rows below split over the block."""
    _sync()
    d = L.shape[0]
    t, nt = _tid(), _nthreads()
    if out is not b:
        for i in range(t, d, nt):
            out[i] = b[i]
    for i in range(d):
        _sync()
        xi = out[i] / L[i, i]
        _sync()  # every thread has read out[i] before it is overwritten
        if t == 0:
            out[i] = xi
        for j in range(i + 1 + t, d, nt):
            out[j] -= L[j, i] * xi
    _sync()


@kernel
def solve_lower_t(L, b, out):
    """Solve ``L^T x = b`` into ``out`` (may alias ``b``), :func:`.linalg.solve_lower_t`'s
    column order, the updates split over the block."""
    _sync()
    d = L.shape[0]
    t, nt = _tid(), _nthreads()
    if out is not b:
        for i in range(t, d, nt):
            out[i] = b[i]
    for i in range(d - 1, -1, -1):
        _sync()
        xi = out[i] / L[i, i]
        _sync()
        if t == 0:
            out[i] = xi
        for k in range(t, i, nt):
            out[k] -= L[i, k] * xi
    _sync()


@kernel
def chol_rank1_update(L, x, work):
    """``L L^T <- L L^T + x x^T`` in place (:func:`.linalg.chol_rank1_update`'s
    arithmetic), the rows below each pivot split over the block."""
    _sync()
    d = L.shape[0]
    t, nt = _tid(), _nthreads()
    for i in range(t, d, nt):
        work[i] = x[i]
    for k in range(d):
        _sync()
        r, c, s, ic = rotation(L[k, k], work[k])
        _sync()  # every thread has read L[k, k] and work[k]
        if t == 0:
            L[k, k] = r
        if c < linalg.STEEP_ROTATION:
            for i in range(k + 1 + t, d, nt):
                lik = (L[i, k] + s * work[i]) * ic
                L[i, k] = lik
                work[i] = c * work[i] - s * lik
        else:
            for i in range(k + 1 + t, d, nt):
                lold = L[i, k]
                L[i, k] = (lold + s * work[i]) * ic
                work[i] = (work[i] - s * lold) * ic
    _sync()


@kernel
def inv_transpose(b, out, work):
    """``out = inv(b).T`` by Gauss-Jordan with partial pivoting (:func:`.linalg.inv_transpose`'s
    arithmetic); ``work`` (d, 2d). The pivot search runs in every thread (reads only), the
    row operations are split over the block; ``out`` holds the column's factors meanwhile.
    Returns False (in every thread) for a singular ``b``."""
    _sync()
    d = b.shape[0]
    t, nt = _tid(), _nthreads()
    for e in range(t, d * 2 * d, nt):
        i = e // (2 * d)
        j = e - i * 2 * d
        if j < d:
            work[i, j] = b[i, j]
        else:
            work[i, j] = 1.0 if i == j - d else 0.0
    for c in range(d):
        _sync()
        piv, best = pivot(work, c, d)
        if best == 0.0 or not math.isfinite(best):
            _sync()
            return False
        _sync()  # every thread has its pivot before rows move
        if piv != c:
            for j in range(t, 2 * d, nt):
                tmp = work[c, j]
                work[c, j] = work[piv, j]
                work[piv, j] = tmp
        _sync()
        inv_p = 1.0 / work[c, c]
        _sync()
        for j in range(t, 2 * d, nt):
            work[c, j] *= inv_p
        _sync()
        for r in range(t, d, nt):
            out[r, 0] = work[r, c]  # the factors, before column c changes
        _sync()
        for e in range(t, d * 2 * d, nt):
            r = e // (2 * d)
            j = e - r * 2 * d
            f = out[r, 0]
            if r != c and f != 0.0:
                work[r, j] -= f * work[c, j]
    _sync()
    for e in range(t, d * d, nt):
        i = e // d
        j = e - i * d
        out[j, i] = work[i, d + j]
    _sync()
    return True


@kernel
def cholesky(a, out):
    """Lower Cholesky factor of ``a`` into ``out`` (:func:`.linalg.cholesky`'s arithmetic):
    column by column, the diagonal in every thread (reads only; a non-SPD ``a`` returns
    False in every thread), the rows below it and the zeros above it split over the block."""
    _sync()
    d = a.shape[0]
    t, nt = _tid(), _nthreads()
    for j in range(d):
        _sync()  # column j - 1 is complete
        s = a[j, j]
        for k in range(j):
            s -= out[j, k] * out[j, k]
        if not s > 0.0:
            _sync()
            return False
        ljj = math.sqrt(s)
        if t == 0:
            out[j, j] = ljj
        for i in range(j + 1 + t, d, nt):
            s = a[i, j]
            for k in range(j):
                s -= out[i, k] * out[j, k]
            out[i, j] = s / ljj
        for i in range(t, j, nt):
            out[i, j] = 0.0
    _sync()
    return True


# ----------------------------------------------------------------- in-place updates
# Element-wise: every entry is read and written by one thread, so the output may be the
# input where the serial loop allows it.


@kernel
def fill_vec(x, value):
    """``x[:] = value``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        x[i] = value
    _sync()


@kernel
def scaled_identity(a, s):
    """``a = s I``."""
    _sync()
    d = a.shape[0]
    for e in range(_tid(), d * d, _nthreads()):
        i = e // d
        j = e - i * d
        a[i, j] = s if i == j else 0.0
    _sync()


@kernel
def copy_mat(a, out):
    """``out[:, :] = a``."""
    _sync()
    n, m = a.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        out[i, j] = a[i, j]
    _sync()


@kernel
def div_vec(x, s, out):
    """``out = x / s``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        out[i] = x[i] / s
    _sync()


@kernel
def div_mat(a, s, out):
    """``out = a / s``."""
    _sync()
    n, m = a.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        out[i, j] = a[i, j] / s
    _sync()


@kernel
def add_vec(x, y):
    """``y += x``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        y[i] += x[i]
    _sync()


@kernel
def add_diff_vec(x, y, z):
    """``z += x - y``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        z[i] += x[i] - y[i]
    _sync()


@kernel
def sub_vec(x, y):
    """``y -= x``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        y[i] -= x[i]
    _sync()


@kernel
def sub_mat(x, y):
    """``y -= x``."""
    _sync()
    n, m = x.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        y[i, j] -= x[i, j]
    _sync()


@kernel
def axpy_vec(alpha, x, y):
    """``y += alpha x``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        y[i] += alpha * x[i]
    _sync()


@kernel
def axpy_mat(alpha, x, y):
    """``y += alpha x``."""
    _sync()
    n, m = x.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        y[i, j] += alpha * x[i, j]
    _sync()


@kernel
def add_axpby_vec(alpha, x, beta, y, z):
    """``z += alpha x + beta y``."""
    _sync()
    for i in range(_tid(), x.shape[0], _nthreads()):
        z[i] += alpha * x[i] + beta * y[i]
    _sync()


@kernel
def add_scaled_diff_mat(h, x, y, b):
    """``b += h (x - y)``."""
    _sync()
    n, m = b.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        b[i, j] += h * (x[i, j] - y[i, j])
    _sync()


@kernel
def add_scaled_diff_t_mat(h, x, y, b):
    """``b += h (x^T - y)``."""
    _sync()
    n, m = b.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        b[i, j] += h * (x[j, i] - y[i, j])
    _sync()


@kernel
def add_rows(v, a):
    """``a[m] += v`` for every row."""
    _sync()
    n, d = a.shape
    for e in range(_tid(), n * d, _nthreads()):
        m = e // d
        i = e - m * d
        a[m, i] += v[i]
    _sync()


@kernel
def sub_rows(v, a):
    """``a[m] -= v`` for every row."""
    _sync()
    n, d = a.shape
    for e in range(_tid(), n * d, _nthreads()):
        m = e // d
        i = e - m * d
        a[m, i] -= v[i]
    _sync()


@kernel
def sub_rows_pair_mean(u, a, v, b, out):
    """``a[m] -= u``, ``b[m] -= v`` for every row and ``out = mean_m b[m]``: each thread owns
    whole columns."""
    _sync()
    M, d = b.shape
    for i in range(_tid(), d, _nthreads()):
        s = 0.0
        for m in range(M):
            b[m, i] -= v[i]
            s += b[m, i]
            a[m, i] -= u[i]
        out[i] = s / M
    _sync()


@kernel
def mean_rows(a, out):
    """``out = mean_m a[m]``, the columns split over the block (each summed in row order)."""
    _sync()
    M, d = a.shape
    for i in range(_tid(), d, _nthreads()):
        s = 0.0
        for m in range(M):
            s += a[m, i]
        out[i] = s / M
    _sync()


@kernel
def add_outer_pair(x, alpha, a, b):
    """``a += x x^T`` and ``b += alpha x x^T``."""
    _sync()
    n, m = a.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        a[i, j] += x[i] * x[j]
        b[i, j] += (alpha * x[i]) * x[j]
    _sync()


@kernel
def sub_outer_div(x, y, s, a):
    """``a -= x y^T / s``."""
    _sync()
    n, m = a.shape
    for e in range(_tid(), n * m, _nthreads()):
        i = e // m
        j = e - i * m
        a[i, j] -= x[i] * y[j] / s
    _sync()


@kernel
def symmetrize(a):
    """``a <- (a + a^T) / 2``: each pair ``(i, j), i < j`` read and written by one thread."""
    _sync()
    d = a.shape[0]
    for e in range(_tid(), d * d, _nthreads()):
        i = e // d
        j = e - i * d
        if j > i:
            s = 0.5 * (a[i, j] + a[j, i])
            a[i, j] = s
            a[j, i] = s
    _sync()


@kernel
def add_sqrt_rowdots(alpha, x, y, out):
    """``out_a += alpha sqrt(max(x_a . y_a, 0))``, the rows split over the block."""
    _sync()
    K, d = x.shape
    for a in range(_tid(), K, _nthreads()):
        q = 0.0
        for i in range(d):
            q += x[a, i] * y[a, i]
        out[a] += alpha * math.sqrt(max(q, 0.0))
    _sync()


#: :mod:`.linalg`'s primitives and their cooperative versions (what ``rebind`` swaps).
REPLACEMENTS = {
    linalg.gemm_nn: gemm_nn,
    linalg.gemm_tn: gemm_tn,
    linalg.gemm_nt: gemm_nt,
    linalg.gemv: gemv,
    linalg.gram: gram,
    linalg.syrk_lower: syrk_lower,
    linalg.solve_lower: solve_lower,
    linalg.solve_lower_t: solve_lower_t,
    linalg.chol_rank1_update: chol_rank1_update,
    linalg.inv_transpose: inv_transpose,
    linalg.cholesky: cholesky,
    linalg.fill_vec: fill_vec,
    linalg.scaled_identity: scaled_identity,
    linalg.copy_mat: copy_mat,
    linalg.div_vec: div_vec,
    linalg.div_mat: div_mat,
    linalg.add_vec: add_vec,
    linalg.add_diff_vec: add_diff_vec,
    linalg.sub_vec: sub_vec,
    linalg.sub_mat: sub_mat,
    linalg.axpy_vec: axpy_vec,
    linalg.axpy_mat: axpy_mat,
    linalg.add_axpby_vec: add_axpby_vec,
    linalg.add_scaled_diff_mat: add_scaled_diff_mat,
    linalg.add_scaled_diff_t_mat: add_scaled_diff_t_mat,
    linalg.add_rows: add_rows,
    linalg.sub_rows: sub_rows,
    linalg.sub_rows_pair_mean: sub_rows_pair_mean,
    linalg.mean_rows: mean_rows,
    linalg.add_outer_pair: add_outer_pair,
    linalg.sub_outer_div: sub_outer_div,
    linalg.symmetrize: symmetrize,
    linalg.add_sqrt_rowdots: add_sqrt_rowdots,
}
