"""The fused bandit loops: whole runs (:func:`bandit_run`, :func:`bandit_runs`) and chunks
of rounds (:func:`bandit_rounds`) of any bandit piece (:mod:`vits_ref.drivers.fused`),
over pre-drawn randomness; the streamed loops are in :mod:`.streams`.

One driver per piece, cached in the process and closing over the piece's
``fingerprint``; the ``prange`` drivers run one independent run per iteration, each from
its own arrays, so the results do not depend on the number of threads.
"""

import functools

import numpy as np
from numba import prange

from ...config import cpu_jit
from ...kernels.bandit import make_bandit_rounds, make_bandit_run


@functools.cache
def bandit_run(piece):
    """``run(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
    regret, arms, kl_out) -> status``: one run (allocates its state buffer)."""
    body = make_bandit_run(piece)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies
    size = piece.state_size

    @cpu_jit
    def run(params, n_state, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out):
        _ = fp
        buf = np.empty(n_state)
        return body(params, buf, contexts, means, rewards, init_noise, sel_noise, step_noise,
                    kl_rounds, regret, arms, kl_out)

    def call(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out):
        T, K, d = contexts.shape
        return run(params, size(d, K, step_noise.shape[2], T), contexts, means, rewards,
                   init_noise, sel_noise, step_noise, kl_rounds, regret, arms, kl_out)

    return call


@functools.cache
def bandit_runs(piece):
    """``run(params, contexts, ..., kl_out, status)``: ``prange`` over independent runs.

    Every per-run array has the runs on its leading axis; each run is computed by one
    thread from its own arrays, so the results do not depend on the number of threads.
    """
    body = make_bandit_run(piece)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies
    size = piece.state_size

    @cpu_jit(parallel=True)
    def run(params, bufs, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status):
        _ = fp
        for r in prange(contexts.shape[0]):
            status[r] = body(params, bufs[r], contexts[r], means[r], rewards[r], init_noise[r],
                             sel_noise[r], step_noise[r], kl_rounds, regret[r], arms[r],
                             kl_out[r])

    def call(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out, status):
        R, T, K, d = contexts.shape
        bufs = np.empty((R, size(d, K, step_noise.shape[3], T)))
        run(params, bufs, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status)

    return call


@functools.cache
def bandit_rounds(piece):
    """``run(params, bufs, t0, contexts, ..., kl_out, status)``: rounds ``[t0, t0 + n)`` of
    independent runs, ``prange`` over the runs (:func:`vits_ref.kernels.bandit.make_bandit_rounds`).

    ``bufs`` (R, ``piece.state_size(d, K, M, T)``) are the runs' state buffers, kept by the
    caller between calls (initialised by the call with ``t0 == 0``); ``contexts`` (R, n, K,
    d), ``means``, ``rewards`` (R, n, K), ``sel_noise`` (R, n, ·), ``step_noise`` (R, n, S,
    M, d) the chunk's rows; ``init_noise`` (R, ·); ``regret``, ``arms`` (R, T) and
    ``kl_out`` (R, n_kl) the whole runs' outputs, written at the global rounds; ``status``
    (R,) set to each run's status for the chunk. Each run is computed by one thread from its
    own arrays, so the results depend neither on the number of threads nor on the chunks.
    """
    body = make_bandit_rounds(piece)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit(parallel=True)
    def run(params, bufs, t0, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status):
        _ = fp
        for r in prange(contexts.shape[0]):
            status[r] = body(params, bufs[r], t0, contexts[r], means[r], rewards[r],
                             init_noise[r], sel_noise[r], step_noise[r], kl_rounds, regret[r],
                             arms[r], kl_out[r])

    return run
