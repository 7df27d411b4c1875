"""Small dense linear-algebra bodies shared by every kernel.

Products go through :func:`gemm_nn` / :func:`gemm_tn` / :func:`gemv`: on the CPU they
compile to BLAS (``np.dot`` with an ``out`` buffer, lowered in the caller by
:func:`_dot_into`; docs/performance.md measured ``np.dot`` at d = 20 within about 0.45 us
a call of a direct dgemm call from Numba, and 3-5x faster than loops with fastmath off);
on CUDA, and when called from plain Python (the CUDA simulator, tests), they are the
loops written below. Everything else is loops, written once.

Every array store of the fused bandit pieces' bodies (:mod:`.vits`, :mod:`.lints`,
:mod:`.linucb`, :mod:`.langevin`, and the :mod:`.linear` and :mod:`.diagnostics` bodies
they call) happens inside a function of this module (the products, factors, solves, and
the in-place updates at the end: fills, ``axpy``, row updates, rank-one updates,
``symmetrize``), so that a CUDA block can run such a body with every thread on shared
state: :mod:`.coop_linalg` holds each one's block-cooperative twin, with
the same arithmetic per entry (docs/cuda.md, "Cooperative kernels").
"""

import inspect
import math

import numpy as np
from llvmlite import binding as ll
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import get_cython_function_address, intrinsic

from vits_ref.config import cpu_overload, cuda_twin, inline_before_typing, kernel

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


@kernel
def gemm_tn(a, b, out):
    """``out = a.T @ b``: :func:`gemm_nn` on the transposed view (a view, no copy: BLAS on
    the CPU, the loops with ``a``'s strides swapped elsewhere)."""
    gemm_nn(a.T, b, out)


@kernel
def gemm_nt(a, b, out):
    """``out = a @ b.T``: :func:`gemm_nn` on the transposed view."""
    gemm_nn(a, b.T, out)


def gemv(a, x, out):
    """``out = a @ x`` (:func:`gemv_loops`; the CPU target uses BLAS)."""
    gemv_loops(a, x, out)


@kernel
def gemv_loops(a, x, out):
    """``out = a @ x`` by loops on every target: :func:`gemv`'s body off the CPU, and what
    a caller uses that keeps the loops' summation order on the CPU too (the one-point
    passes of :mod:`.ddpm_mlp`, which a NumPy reference replays)."""
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
    LAPACK (``dgetrf`` and ``dgetri``, as Numba's ``np.linalg.inv``: the same bits; 2x
    faster for VITS-I at d = 20) and returns False on a singular or non-finite matrix.
    """
    d = b.shape[0]
    for i in range(d):
        for j in range(d):
            work[i, j] = b[i, j]
            work[i, d + j] = 1.0 if i == j else 0.0
    for c in range(d):
        piv, best = pivot(work, c, d)
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


@kernel(inline=True)
def pivot(work, c, d):
    """``(r, |work[r, c]|)`` for the row ``c <= r < d`` of the largest ``|work[r, c]|``
    (the first on ties): the partial pivot of :func:`inv_transpose`'s column ``c``."""
    piv = c
    best = abs(work[c, c])
    for r in range(c + 1, d):
        if abs(work[r, c]) > best:
            best = abs(work[r, c])
            piv = r
    return piv, best


def _numba_dot_codegen():
    """Numba's own lowering of ``np.dot(a, b, out)`` (``numba.np.linalg.dot_3``'s: the
    contiguity copies, the shape checks, then ``dgemm``, ``dgemv`` or ``ddot`` by the
    operands' shapes and layouts), or None where those private names are gone or changed."""
    try:
        from numba.np.linalg import dot_3_mm, dot_3_vm, ensure_blas, make_contiguous
    except ImportError:
        return None
    # private names: taken only with the parameters they have had since Numba 0.49 (where
    # the module moved to numba.np), so that a Numba that changed them falls back to
    # np.dot instead of failing every driver's compilation
    lowering = ["context", "builder", "sig", "args"]
    if not (all(list(inspect.signature(f).parameters) == lowering
                for f in (dot_3_mm, dot_3_vm, make_contiguous))
            and not inspect.signature(ensure_blas).parameters):
        return None

    def codegen(context, builder, sig, args):
        ensure_blas()
        with make_contiguous(context, builder, sig, args) as (sig, args):
            if sig.args[0].ndim == 2 and sig.args[1].ndim == 2:
                return dot_3_mm(context, builder, sig, args)
            return dot_3_vm(context, builder, sig, args)

    return codegen


_DOT_CODEGEN = _numba_dot_codegen()


@intrinsic
def _dot_into(typingctx, a, b, out):
    """``np.dot(a, b, out)`` for float64 arrays (matrix-matrix or matrix-vector), lowered
    into its caller by Numba's own code for it (:func:`_numba_dot_codegen`): the same BLAS
    calls with the same arguments, so the same bits.

    ``np.dot`` itself is an overload whose implementation Numba compiles as a function of
    its own for each combination of layouts (``a.T`` is another layout than ``a``), linked
    into every caller up the chain and optimised and emitted again in each: the products
    of a VITS driver were 4-6 such functions, each under a wrapper of our own (about
    1.5 s of a README snippet's cold compilation)."""
    if not all(isinstance(t, types.Array) and t.dtype == types.float64 for t in (a, b, out)):
        return None
    if (a.ndim, b.ndim, out.ndim) not in ((2, 2, 2), (2, 1, 1), (1, 2, 1)):
        return None
    return out(a, b, out), _DOT_CODEGEN


def _dot_blas(a, b, out):
    """:func:`gemm_nn` and :func:`gemv` on the CPU: ``np.dot(a, b, out)`` lowered in the
    caller."""
    _dot_into(a, b, out)


def _dot_numpy(a, b, out):
    np.dot(a, b, out)


# On the CPU a call of gemm_nn or gemv is replaced by the BLAS form's IR before typing
# (vits_ref.config.inline_before_typing), as the views of kernels/views.py are; the
# overloads answer a call the untyped inliner does not see. Without Numba's private
# lowering of np.dot (another Numba), np.dot itself.
_DOT_CPU = _dot_blas if _DOT_CODEGEN is not None else _dot_numpy


@cpu_overload(gemm_nn)
def _gemm_nn_cpu(a, b, out):
    return _DOT_CPU


@cpu_overload(gemv)
def _gemv_cpu(a, x, out):
    return _DOT_CPU


inline_before_typing(gemm_nn, _DOT_CPU)
inline_before_typing(gemv, _DOT_CPU)


@cpu_overload(inv_transpose)
def _inv_transpose_cpu(b, out, work):
    # What Numba's np.linalg.inv does (numba/np/linalg.py, inv_impl), called directly: the
    # same LAPACK calls (dgetrf, then dgetri with its workspace query) on the same
    # column-major copy, so the same bits. np.linalg.inv inside a try/except compiled
    # about ten functions more (its checks, the copy, the exception's paths): 2-3 s of CPU
    # in every VITS driver on a cold cache, VITS-II's included (the variant is a runtime
    # parameter). A non-finite ``b`` (where np.linalg.inv raised) or a singular one (LAPACK's
    # info > 0) returns False, as the raise did. Those LAPACK bindings are Numba's private
    # names (numba.np.linalg, since 0.2x, still in 0.68): where they are gone, the same
    # inverse through np.linalg.inv itself (the same bits, the ten functions compiled).
    try:
        from numba.np.linalg import _LAPACK, F_INT_nptype, ensure_lapack

        ensure_lapack()
        getrf = _LAPACK().numba_xxgetrf(types.float64)
        getri = _LAPACK().numba_ez_xxgetri(types.float64)
    except (ImportError, AttributeError):
        return _inv_transpose_by_numpy
    kind = ord("d")
    int_type = F_INT_nptype

    def impl(b, out, work):
        n = b.shape[0]
        a = np.empty(n * n)  # column-major: a[i + n j] = b[i, j]
        for i in range(n):
            for j in range(n):
                if not math.isfinite(b[i, j]):
                    return False
                a[i + n * j] = b[i, j]
        ipiv = np.empty(n, dtype=int_type)
        if getrf(kind, n, n, a.ctypes, n, ipiv.ctypes) != 0:
            return False
        info = getri(kind, n, a.ctypes, n, ipiv.ctypes)
        if ipiv.size != n or info != 0:  # ipiv read after the call: alive until then
            return False
        for i in range(n):
            for j in range(n):
                v = a[i + n * j]  # inv(b)[i, j]
                if not math.isfinite(v):
                    return False
                out[j, i] = v
        return True
    return impl


def _inv_transpose_by_numpy(b, out, work):
    """:func:`inv_transpose` on the CPU through ``np.linalg.inv`` (the fallback of
    :func:`_inv_transpose_cpu`): False where it raises (a singular or non-finite ``b``) or
    gives a non-finite entry."""
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


# The CUDA target compiles the loop bodies above as they are (a copy of each, registered
# with numba-cuda alone: vits_ref.config.cuda_twin).
for _f in (gemm_nn, gemv, inv_transpose):
    cuda_twin(_f)(_f)


# --------------------------------------------------------------------------- J^T J


def syrk_lower(a, alpha, beta, c):
    """Lower triangle of ``c`` (``i >= j``) <- ``beta c + alpha a^T a``; strict upper untouched.

    ``beta == 0`` overwrites (whatever ``c`` held, NaN included), as BLAS does. Loops here
    (CUDA, the simulator, tests); BLAS ``dsyrk`` on the CPU for C-contiguous operands.
    """
    d = a.shape[1]
    for i in range(d):
        for j in range(i + 1):
            c[i, j] = syrk_entry(a, alpha, beta, c, i, j)


@kernel(inline=True)
def syrk_entry(a, alpha, beta, c, i, j):
    """Entry ``(i, j)`` of ``beta c + alpha a^T a``; with ``beta == 0`` ``c`` is not read
    (it may hold NaN)."""
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k, i] * a[k, j]
    if beta == 0.0:
        return alpha * s
    return beta * c[i, j] + alpha * s


# scipy's Fortran BLAS, registered under our own symbol name so that compiled functions
# refer to it by name and stay cacheable (a ctypes pointer would be baked into the cached
# code and Numba refuses to cache it). The symbol is re-registered at every import, before
# any cached function of this module can be loaded.
_DSYRK = "vits_ref_dsyrk"
ll.add_symbol(_DSYRK, get_cython_function_address("scipy.linalg.cython_blas", "dsyrk"))


@intrinsic
def _dsyrk_lower(typingctx, a, alpha, beta, c):
    """``dsyrk('U', 'N', d, n, alpha, a, d, beta, c, d)`` on C-ordered ``a`` (n, d), ``c`` (d, d).

    Read in Fortran order ``a`` is ``A = a^T`` (d, n) and ``c``'s lower triangle is the
    upper triangle of the Fortran matrix, so this is ``lower(c) <- beta c + alpha a^T a``.
    """
    sig = types.void(a, alpha, beta, c)

    def codegen(context, builder, sig, args):
        aty, alty, bty, cty = sig.args
        av = context.make_array(aty)(context, builder, args[0])
        cv = context.make_array(cty)(context, builder, args[3])
        rows, d = cgutils.unpack_tuple(builder, av.shape, 2)
        i8, i32, f64 = ir.IntType(8), ir.IntType(32), ir.DoubleType()

        def slot(ty, value):
            ptr = cgutils.alloca_once(builder, ty)
            builder.store(value, ptr)
            return ptr

        d32 = builder.trunc(d, i32)
        alval = context.cast(builder, args[1], alty, types.float64)
        bval = context.cast(builder, args[2], bty, types.float64)
        argv = [slot(i8, ir.Constant(i8, ord("U"))), slot(i8, ir.Constant(i8, ord("N"))),
                slot(i32, d32), slot(i32, builder.trunc(rows, i32)),
                slot(f64, alval), av.data, slot(i32, d32), slot(f64, bval),
                cv.data, slot(i32, d32)]
        fnty = ir.FunctionType(ir.VoidType(), [v.type for v in argv])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _DSYRK)
        builder.call(fn, argv)
        return context.get_dummy_value()

    return sig, codegen


@cpu_overload(syrk_lower)
def _syrk_lower_cpu(a, alpha, beta, c):
    blas_ok = (isinstance(a, types.Array) and isinstance(c, types.Array)
               and a.dtype == types.float64 and c.dtype == types.float64
               and a.layout == "C" and c.layout == "C" and c.mutable)
    if not blas_ok:
        return syrk_lower

    def impl(a, alpha, beta, c):
        if a.shape[0] == 0:  # nothing to add: scale (beta 0: clear) the lower triangle
            for i in range(c.shape[0]):
                for j in range(i + 1):
                    c[i, j] = 0.0 if beta == 0.0 else beta * c[i, j]
            return
        _dsyrk_lower(a, float(alpha), float(beta), c)
    return impl


cuda_twin(syrk_lower)(syrk_lower)


def gram(a, out):
    """``out = a.T @ a`` (symmetric, both triangles). Loops here (CUDA, the simulator);
    on the CPU BLAS: a general product below d = 64, ``dsyrk`` (half the flops, slower
    per call at small d) and a mirroring pass above."""
    gemm_tn(a, a, out)


#: ``np.dot(a, b, out)`` for :func:`gram`'s general product (:func:`_dot_into`, or
#: ``np.dot`` itself without Numba's private lowering of it).
_GRAM_DOT = _dot_into if _DOT_CODEGEN is not None else np.dot


@cpu_overload(gram)
def _gram_cpu(a, out):
    def impl(a, out):
        d = a.shape[1]
        if d < 64:
            _GRAM_DOT(a.T, a, out)
            return
        syrk_lower(a, 1.0, 0.0, out)
        for i in range(d):
            for j in range(i + 1, d):
                out[i, j] = out[j, i]
    return impl


cuda_twin(gram)(gram)


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


#: :func:`chol_rank1_update` rotates the running vector by the Givens form from this
#: ``c = r / l_kk`` on (its short form then loses ``c^2`` ulps: 256 here)
STEEP_ROTATION = 16.0


@kernel
def chol_rank1_update(L, x, work):
    """Update the lower factor ``L`` in place so that ``L L^T <- L L^T + x x^T``.

    O(d^2) (Golub & Van Loan, sec. 6.5.4, with Givens-like rotations); ``x`` is not
    modified (``work`` of length d holds the running vector).

    Column ``k`` rotates ``(l_ik, w_i)`` by ``cos = l_kk / r``, ``sin = w_k / r``
    (``r = sqrt(l_kk^2 + w_k^2)``, ``c = 1 / cos``, ``s = w_k / l_kk``):
    ``l_ik <- (l_ik + s w_i) / c`` and ``w_i <- (w_i - s l_ik) / c`` (Givens). The short
    form ``w_i <- c w_i - s l_ik^new`` (one product less) subtracts two terms of size
    ``c |w_i|`` to leave ``|w_i| / c``: it loses ``c^2`` ulps, all the digits once
    ``c > 1e8`` (a first context of 1e9 against ``lam = 1``: the variance across it came out
    9e-5 instead of 1). It is kept below :data:`STEEP_ROTATION`, where it loses at most
    256 ulps, so the factors of ordinary data are bit for bit those of earlier releases;
    steeper rotations take the Givens form (``tests/test_lints_edges.py``).
    """
    d = L.shape[0]
    for i in range(d):
        work[i] = x[i]
    for k in range(d):
        r, c, s, ic = rotation(L[k, k], work[k])
        L[k, k] = r
        if c < STEEP_ROTATION:
            for i in range(k + 1, d):
                lik = (L[i, k] + s * work[i]) * ic
                L[i, k] = lik
                work[i] = c * work[i] - s * lik
        else:
            for i in range(k + 1, d):
                lold = L[i, k]
                L[i, k] = (lold + s * work[i]) * ic
                work[i] = (work[i] - s * lold) * ic


@kernel(inline=True)
def rotation(lkk, xk):
    """``(r, c, s, 1/c)`` of the rotation taking ``(lkk, xk)`` to ``(r, 0)`` in
    :func:`chol_rank1_update`: ``r = sqrt(lkk^2 + xk^2)``, ``c = r / lkk``, ``s = xk / lkk``."""
    # sqrt instead of hypot and a multiplication by 1/c instead of a division: 2x
    # faster at d = 20; overflow would need |x| ~ 1e154
    r = math.sqrt(lkk * lkk + xk * xk)
    return r, r / lkk, xk / lkk, lkk / r


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
def half_quadratic(P, b, theta):
    """``1/2 theta^T P theta - b^T theta`` (a Gaussian potential up to its constant)."""
    d = theta.shape[0]
    total = 0.0
    for i in range(d):
        acc = 0.0
        for k in range(d):
            acc += P[i, k] * theta[k]
        total += theta[i] * (0.5 * acc - b[i])
    return total


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


@kernel
def max_abs_mat(a):
    """``max |a_ij|`` of a finite matrix (check :func:`all_finite_mat` first: a NaN entry
    may be skipped)."""
    m = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            v = abs(a[i, j])
            if v > m:
                m = v
    return m


# --------------------------------------------------------------------------- in-place updates
#
# The bodies' element-wise stores, each written once here as the loop it replaces, so that
# a body stores into its state only through primitives: :mod:`.coop_linalg` has a
# block-cooperative twin of each (same arithmetic per entry), which is what lets a CUDA
# block run a whole body with every thread on shared state (docs/cuda.md, "Cooperative
# kernels"). ``y -= a x`` is written ``axpy(-a, x, y)``: ``y + (-a) x`` and ``y - a x``
# are the same IEEE operation, bit for bit. They are inlined into their callers at Numba's
# IR level: as separate functions, each call passes its arrays' structures and reference
# counts, which cost the VITS-HF round 4% on the CPU (d = 20, 20 draws).


@kernel(inline=True)
def fill_vec(x, value):
    """``x[:] = value``."""
    for i in range(x.shape[0]):
        x[i] = value


@kernel(inline=True)
def scaled_identity(a, s):
    """``a = s I`` (square ``a``)."""
    d = a.shape[0]
    # zeros, then the diagonal: a conditional expression here left a phi node that Numba's
    # inliner carried out of scope in the prange drivers (NumbaIRAssumptionWarning, which
    # asks users to report it)
    for i in range(d):
        for j in range(d):
            a[i, j] = 0.0
    for i in range(d):
        a[i, i] = s


@kernel(inline=True)
def copy_vec(x, out):
    """``out[:] = x`` (same length; ``out`` may be a view of the buffer ``x`` views, not
    overlapping it). A loop, not a slice assignment: Numba's slice assignment from an
    array compiles a shape-mismatch error message (``str`` of the shapes, about 3.5 s of
    CPU in every process that compiles a caller) that this loop does not need."""
    for i in range(x.shape[0]):
        out[i] = x[i]


@kernel(inline=True)
def copy_mat(a, out):
    """``out[:, :] = a``."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]


@kernel(inline=True)
def div_vec(x, s, out):
    """``out = x / s`` (a division per entry, not a product by ``1/s``); ``out`` may be ``x``."""
    for i in range(x.shape[0]):
        out[i] = x[i] / s


@kernel(inline=True)
def div_mat(a, s, out):
    """``out = a / s`` (a division per entry); ``out`` may be ``a``."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] / s


@kernel(inline=True)
def add_vec(x, y):
    """``y += x``."""
    for i in range(x.shape[0]):
        y[i] += x[i]


@kernel(inline=True)
def add_diff_vec(x, y, z):
    """``z += x - y`` (each entry ``z_i + (x_i - y_i)``)."""
    for i in range(x.shape[0]):
        z[i] += x[i] - y[i]


@kernel(inline=True)
def sub_vec(x, y):
    """``y -= x``."""
    for i in range(x.shape[0]):
        y[i] -= x[i]


@kernel(inline=True)
def sub_mat(x, y):
    """``y -= x`` (matrices)."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] -= x[i, j]


@kernel(inline=True)
def axpy_vec(alpha, x, y):
    """``y += alpha x``."""
    for i in range(x.shape[0]):
        y[i] += alpha * x[i]


@kernel(inline=True)
def axpy_mat(alpha, x, y):
    """``y += alpha x`` (matrices)."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] += alpha * x[i, j]


@kernel(inline=True)
def add_axpby_vec(alpha, x, beta, y, z):
    """``z += alpha x + beta y`` (each entry ``z_i + ((alpha x_i) + (beta y_i))``)."""
    for i in range(x.shape[0]):
        z[i] += alpha * x[i] + beta * y[i]


@kernel(inline=True)
def add_scaled_diff_mat(h, x, y, b):
    """``b += h (x - y)`` (matrices; ``b`` may be neither ``x`` nor ``y``)."""
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            b[i, j] += h * (x[i, j] - y[i, j])


@kernel(inline=True)
def add_scaled_diff_t_mat(h, x, y, b):
    """``b += h (x^T - y)`` (square matrices; ``b`` may be neither ``x`` nor ``y``)."""
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            b[i, j] += h * (x[j, i] - y[i, j])


@kernel(inline=True)
def add_rows(v, a):
    """``a[m] += v`` for every row ``m``."""
    for m in range(a.shape[0]):
        for i in range(a.shape[1]):
            a[m, i] += v[i]


@kernel(inline=True)
def sub_rows(v, a):
    """``a[m] -= v`` for every row ``m``."""
    for m in range(a.shape[0]):
        for i in range(a.shape[1]):
            a[m, i] -= v[i]


@kernel(inline=True)
def sub_rows_pair_mean(u, a, v, b, out):
    """``a[m] -= u`` and ``b[m] -= v`` for every row ``m`` (``a``, ``b`` of one shape), and
    ``out = mean_m b[m]`` of the updated rows, in one pass (each entry of ``out`` summed
    from 0 over the rows in order): the draws and gradients centred, and the mean gradient.
    ``out`` must not overlap ``a`` or ``b``."""
    M, d = b.shape
    for i in range(d):
        out[i] = 0.0
    for m in range(M):
        for i in range(d):
            b[m, i] -= v[i]
            out[i] += b[m, i]
            a[m, i] -= u[i]
    for i in range(d):
        out[i] /= M


@kernel(inline=True)
def mean_rows(a, out):
    """``out = mean_m a[m]``: each entry summed from 0 over the rows in order, then divided
    by the number of rows; ``out`` must not overlap ``a``. (Row by row: the inner loop runs
    along a row, contiguous, and vectorises; each entry's order is the same.)"""
    M, d = a.shape
    for i in range(d):
        out[i] = 0.0
    for m in range(M - 1):
        for i in range(d):
            out[i] += a[m, i]
    for i in range(d):  # the last row and the division in one pass
        out[i] = (out[i] + a[M - 1, i]) / M


@kernel(inline=True)
def add_outer_pair(x, alpha, a, b):
    """``a += x x^T`` and ``b += alpha x x^T`` in one pass (a statistic and its scaled copy,
    ``V`` and ``eta V``): each entry ``a_ij + x_i x_j`` and ``b_ij + (alpha x_i) x_j``."""
    for i in range(a.shape[0]):
        xi = x[i]
        axi = alpha * xi
        for j in range(a.shape[1]):
            a[i, j] += xi * x[j]
            b[i, j] += axi * x[j]


@kernel(inline=True)
def sub_outer_div(x, y, s, a):
    """``a -= x y^T / s``, each entry ``a_ij - (x_i y_j) / s``."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] -= x[i] * y[j] / s


@kernel(inline=True)
def symmetrize(a):
    """``a <- (a + a^T) / 2`` (square ``a``; the diagonal untouched)."""
    d = a.shape[0]
    for i in range(d):
        for j in range(i + 1, d):
            s = 0.5 * (a[i, j] + a[j, i])
            a[i, j] = s
            a[j, i] = s


@kernel(inline=True)
def add_sqrt_rowdots(alpha, x, y, out):
    """``out_a += alpha sqrt(max(x_a . y_a, 0))`` for every row ``a`` of ``x`` and ``y``
    (with ``y = x inv(V)``: ``alpha |x_a|_{inv(V)}``, LinUCB's width); the dot product
    summed in order from 0."""
    K, d = x.shape
    for a in range(K):
        q = 0.0
        for i in range(d):
            q += x[a, i] * y[a, i]
        out[a] += alpha * math.sqrt(max(q, 0.0))
