"""VTS (:mod:`vits_ref.kernels.cavi`): CAVI fits of a mixture of linear experts, the VTS
arm update and selection, and many VTS runs (blocks of runs in threads, :mod:`._runs`).

Each factory compiles once per process (and is cached on disk); the drivers allocate the
bodies' scratch ``(dv (4, d), kv (4, K), M (d, d), kd (K, d), kdd (K, d, d))``.
"""

import functools

import numpy as np

from ...config import cpu_jit, sources_stamp
from ...kernels.cavi import (
    arm_update,
    cavi_iterate,
    expected_reward,
    init_factors,
    select,
    vts_run,
)
from ._forward import kernel_driver
from ._runs import over_runs


@functools.cache
def cavi_fit():
    """``run(X, y, n, prior, fac, st, resp, tol, max_iter, trace) -> (iterations, elbo, ok)``:
    CAVI on the first ``n`` rows from the factors in ``fac``
    (:func:`vits_ref.kernels.cavi.cavi_iterate`)."""
    stamp = sources_stamp()

    @cpu_jit
    def run(X, y, n, prior, fac, st, resp, tol, max_iter, trace):
        _ = stamp
        d, K = X.shape[1], fac[0].shape[0]
        scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
               np.zeros((K, d, d)))
        W = np.empty((n, d))
        return cavi_iterate(X, y, n, prior, fac, st, resp, W, tol, max_iter, trace, scr)

    return run


cavi_init = kernel_driver("cavi_init", init_factors, """\
``run(prior, fac, st)``: factors at the prior, zero statistics.""")


@functools.cache
def vts_update():
    """``run(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace) -> (iterations,
    elbo, ok)``: append ``(x, r)`` at row ``n`` and refit the arm (``W``: scratch as large
    as ``X``; :func:`vits_ref.kernels.cavi.arm_update`)."""
    stamp = sources_stamp()

    @cpu_jit
    def run(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace):
        _ = stamp
        d, K = X.shape[1], fac[0].shape[0]
        scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
               np.zeros((K, d, d)))
        return arm_update(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace, scr)

    return run


@functools.cache
def vts_select():
    """``run(contexts, facs, scoring, sample_params, rng, scores, expected) -> arm``: every
    arm's Thompson score (:func:`vits_ref.kernels.cavi.select`, the xoroshiro128+ state
    ``rng`` advanced in place) and, in ``expected``, every arm's posterior-mean expected
    reward (:func:`vits_ref.kernels.cavi.expected_reward`)."""
    stamp = sources_stamp()

    @cpu_jit
    def run(contexts, facs, scoring, sample_params, rng, scores, expected):
        _ = stamp
        d, K = contexts.shape[1], facs[0].shape[1]
        scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
               np.zeros((K, d, d)))
        for a in range(contexts.shape[0]):
            expected[a] = expected_reward(contexts[a], (facs[0][a], facs[1][a], facs[2][a],
                                                        facs[3][a], facs[4][a]))
        return select(contexts, facs, scoring, sample_params, rng, scores, scr)

    return run


@functools.cache
def vts_runs():
    """``call(params, prior, contexts, means, rewards, rngs, regret, arms, sqerr, iters,
    status)``: independent VTS runs (:func:`vits_ref.kernels.cavi.vts_run`), blocks of runs
    in threads over a serial compiled loop (:func:`._runs.over_runs`; ``call.serial``).

    Runs on the leading axis of every per-run array (``contexts`` (R, T, A, d), ``means``
    and ``rewards`` (R, T, A), ``rngs`` (R, 2) uint64, the outputs); each run allocates its
    own state (histories of ``T`` rows per arm) and is computed by one thread, so the
    results depend neither on the number of threads nor on the blocks. A ``prange`` loop
    compiled the run's body into three more machine-code libraries (:mod:`._runs`): VTS's
    was the longest compilation of ``python -m vits_ref compile vits-fig1``.
    """
    stamp = sources_stamp()

    @cpu_jit
    def run(params, prior, contexts, means, rewards, rngs, regret, arms, sqerr, iters,
            status):
        _ = stamp
        R, T, A, d = contexts.shape
        K = prior[0].shape[0]
        for r in range(R):
            hist = (np.empty((A, T, d)), np.empty((A, T)), np.empty((A, T, K)),
                    np.empty((A, T, d)))
            counts = np.zeros(A, dtype=np.int64)
            facs = (np.empty((A, K)), np.empty((A, K, d)), np.empty((A, K, d, d)),
                    np.empty((A, K)), np.empty((A, K)))
            sts = (np.empty((A, K)), np.empty((A, K, d)), np.empty((A, K, d, d)),
                   np.empty((A, K)))
            work = (np.empty(max(params[3], 1)), np.empty(A))
            scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
                   np.zeros((K, d, d)))
            status[r] = vts_run(params, prior, contexts[r], means[r], rewards[r], rngs[r],
                                hist, counts, facs, sts, work, scr, regret[r], arms[r],
                                sqerr[r], iters[r])

    # every argument but params and prior has the runs on its leading axis
    return over_runs(run, (2, 3, 4, 5, 6, 7, 8, 9, 10))
