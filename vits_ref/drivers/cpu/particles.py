"""Particle engines' drivers: the SVGD direction (:mod:`vits_ref.kernels.svgd`) and SVGD
ascent steps on a potential's particles (SVGD, OPVI).

The direction comes in two forms: "loop", the row bodies in a ``prange`` over particles
(distances, exponentials and the weighted sum of one particle per iteration); "gemm", the
BLAS form: the Gram matrix ``X X^T`` and the product ``K [Y | 1]`` by ``np.dot`` (BLAS
beats the loops on the CPU once ``n d`` is large, see
:func:`vits_ref.inference.svgd.choose_form`) and the ``n^2`` exponentials by NumPy's
vectorised ``np.exp`` (about 5x faster than the compiled ``exp_nonpos`` loop on AVX-512:
NumPy's SIMD exp, which Numba has no way to emit without SVML), called from an
object-mode block (about 2 us, :func:`_numpy_exp`); the CUDA path keeps the compiled
bodies.
"""

import functools

import numpy as np
from numba import objmode, prange

from ...config import cpu_jit, sources_stamp, stamped
from ...kernels.linalg import all_finite_mat, gemm_nn
from ...kernels.svgd import (
    adagrad_row,
    centre_into,
    kernel_row,
    median_bandwidth_from,
    median_sqdist,
    neg_scaled_sqdist_row,
    phi_finish_sums_row,
    phi_row,
    shifted_grads,
    shifted_grads_ones,
    sqdist_from_gram_lower,
    sqdist_row,
    transpose_into,
)


def svgd_scratch(n, d):
    """The SVGD direction's scratch ``(XT (d, n), D (n, n), w (m,), Y (n, d), Y1 (n, d + 1),
    acc (n, d + 1), sq (n,), Xc (n, d), shift (d,))``, ``m = max(1, n (n - 1) / 2)`` (the
    median's work). An engine keeps one across its steps."""
    m = max(1, n * (n - 1) // 2)
    return (np.empty((d, n)), np.empty((n, n)), np.empty(m), np.empty((n, d)),
            np.empty((n, d + 1)), np.empty((n, d + 1)), np.empty(n), np.empty((n, d)),
            np.empty(d))


@stamped
def _numpy_exp(stamp):
    @cpu_jit(nogil=False)
    def _numpy_exp(D):
        """``D <- exp(D)`` by NumPy's SIMD ``np.exp``, from an object-mode block.

        Compiled with ``nogil=False``: an object-mode block holds the GIL whatever the
        flag, and Numba warns ("Code running in object mode won't allow parallel
        execution despite nogil=True") when it compiles or loads one inside a ``nogil``
        function. Called from the compiled drivers, which bypass its GIL handling, so
        :func:`svgd_phi` keeps ``nogil=True``.
        """
        _ = stamp
        with objmode():
            np.exp(D, D)

    return _numpy_exp


@functools.cache
def svgd_phi(parallel=False):
    """``run(X, G, h, repulsion, gemm, out, scr) -> h``: the SVGD direction into ``out``.

    ``G``: gradients of ``log p`` at the particles ``X`` (n, d); ``h > 0`` a fixed bandwidth,
    ``h <= 0`` the median heuristic; ``gemm``: the BLAS form; ``scr`` from
    :func:`svgd_scratch`. Returns the bandwidth used. Each particle's row is computed by
    one iteration of a ``prange`` (the median is serial; BLAS and ``np.exp`` compute each
    entry the same way whatever Numba's thread count), so the result does not depend on
    the number of Numba threads. ``parallel=False`` compiles the same code with the
    ``prange`` loops serial: each parallel region costs a launch (about 2 us on an idle
    machine, milliseconds on a loaded one), which small problems do not repay
    (:func:`vits_ref.inference.svgd.use_parallel`).

    Both forms read the particles shifted near the origin ``Xc = X - shift``
    (:func:`vits_ref.kernels.svgd.centre_into`; the direction is the same, its products lose
    no digits to a common offset). The BLAS form, per step: ``sq_i = |x_i|^2``; ``D = X
    X^T`` (BLAS); the strict lower triangle of the squared distances (only when the median
    needs it) and the median by sampling selection
    (:func:`vits_ref.kernels.svgd.median_sqdist`); ``D <- -dist^2 / h`` row by row; ``D <-
    exp(D)`` (NumPy); ``acc = D [G - c X | 1]`` (one BLAS product whose last column is the
    kernel's row sums); ``out_i = (acc_i + c S_i x_i) / n``.
    """
    stamp = sources_stamp()

    @cpu_jit(parallel=parallel)
    def run(X, G, h, repulsion, gemm, out, scr):
        _ = stamp
        XT, D, w, Y, Y1, acc, sq, Xc, mu = scr
        n, d = X.shape
        median = h <= 0.0
        centre_into(X, Xc, mu)
        if gemm:
            for i in prange(n):
                s = 0.0
                for k in range(d):
                    s += Xc[i, k] * Xc[i, k]
                sq[i] = s
            gemm_nn(Xc, Xc.T, D)  # BLAS (np.dot's call, lowered here): the Gram matrix
            if median:
                for i in prange(n):
                    sqdist_from_gram_lower(sq, i, D[i])
        else:
            transpose_into(Xc, XT)
            if median:
                for i in prange(n):
                    sqdist_row(Xc, XT, i, D[i])
        if median:
            h = median_bandwidth_from(median_sqdist(D, w), n)
        inv_h = 1.0 / h
        c = 2.0 * repulsion * inv_h
        if gemm:
            for i in prange(n):
                shifted_grads_ones(Xc, G, c, Y1, i)
                neg_scaled_sqdist_row(sq, i, D[i], inv_h, median)
            _numpy_exp(D)  # NumPy's SIMD exp: the kernel matrix K
            gemm_nn(D, Y1, acc)  # BLAS (np.dot's call, lowered here): K [G - c X | 1]
            for i in prange(n):
                phi_finish_sums_row(acc[i], Xc, i, c, out[i])
        else:
            for i in prange(n):
                shifted_grads(Xc, G, c, Y, i)
            for i in prange(n):
                if not median:
                    sqdist_row(Xc, XT, i, D[i])
                s = kernel_row(D[i], inv_h)
                phi_row(D[i], Y, Xc, i, c, s, out[i])
        return h

    return run


#: The two forms of :func:`svgd_phi`, which :func:`svgd_steps` calls as globals.
_PHI_SERIAL, _PHI_PARALLEL = svgd_phi(False), svgd_phi(True)


@functools.cache
def svgd_steps(potential, parallel=False):
    """``run(X, data, n_steps, h, repulsion, gemm, step, alpha, fudge, t0, hist, G, H, phi,
    scr, pscr, trace) -> ok``: SVGD ascent steps on ``U``'s particles ``X`` in place.

    Each step: ``G = grad U`` at every particle (the potential's ``grads_hessian``, one call
    for all rows), ``g = -G``, the direction :func:`svgd_phi` (fixed ``h > 0`` or the
    median heuristic) into ``phi``, then :func:`vits_ref.kernels.svgd.adagrad_row` (``alpha
    < 0``: plain ascent) with ``t0`` the number of steps taken before (``t0 = 0``: the
    first step initialises ``hist``). ``trace[s]`` receives the bandwidth of step ``s``.
    Returns False (leaving ``X`` partly updated) as soon as a direction is non-finite.
    ``parallel``: as in :func:`svgd_phi`.
    """
    grads = potential.grads_hessian
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit(parallel=parallel)
    def run(X, data, n_steps, h, repulsion, gemm, step, alpha, fudge, t0, hist, G, H, phi,
            scr, pscr, trace):
        _ = fp
        n = X.shape[0]
        for s in range(n_steps):
            grads(data, X, False, G, H, pscr)
            for i in prange(n):
                for k in range(X.shape[1]):
                    G[i, k] = -G[i, k]
            # the direction by a module-level dispatcher, chosen on the closure's bool (a
            # constant branch, pruned when compiled), never a dispatcher in the closure:
            # it pickles with a uuid drawn per process, which made the cache key new in
            # every process (vits_ref/config.py, on the cache key)
            if parallel:
                trace[s] = _PHI_PARALLEL(X, G, h, repulsion, gemm, phi, scr)
            else:
                trace[s] = _PHI_SERIAL(X, G, h, repulsion, gemm, phi, scr)
            if not all_finite_mat(phi):
                return False
            first = t0 + s == 0
            for i in prange(n):
                adagrad_row(X, phi, hist, i, step, alpha, fudge, first)
        return True

    return run
