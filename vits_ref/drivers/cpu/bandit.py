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


@functools.cache
def bandit_online(piece):
    """``(start, choose, learn, choose_many)``: a run of ``piece`` one decision at a time,
    or a batch of decisions in one call (``choose_many``), over a state
    buffer the caller keeps (:class:`vits_ref.bandit.online.Online`).

    ``params`` is the piece's parameters as a plain tuple, ``tuple(spec.params)``, rebuilt
    into the piece's ``params_type`` inside the call: Numba types a plain tuple of numbers
    through its fast path, a NamedTuple through Python (about 0.5 against 2.4 us a call on
    this machine), which was most of a LinTS decision's cost.
    ``start(params, buf, K, d, M, T, init_noise)`` initialises the state;
    ``choose(params, buf, M, T, X, sel_noise, bound) -> arm`` is the piece's ``select`` on
    the round's contexts ``X`` (K, d), or -1 if an entry of ``X`` is not finite or exceeds
    ``bound`` in magnitude; ``learn(params, buf, K, M, T, x, r, n_obs, step_noise, bound)
    -> code`` is its ``update`` on the played arm's features ``x`` (d,) and reward ``r``
    with ``n_obs`` observations: 1, 0 if the state became non-finite, -1 if ``r`` and -2
    if ``x`` is not finite or beyond ``bound``. The same bodies as the fused loop's rounds
    (:func:`vits_ref.kernels.bandit.make_round`), so the same noise gives the same arms.
    The data are checked here, in one pass, so that a call costs O(K d) and no NumPy
    reductions.
    """
    views, init, select, update = piece.views, piece.init, piece.select, piece.update
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies
    P = piece.params_type
    if P is None:
        raise TypeError(f"{piece.name}: the online loop needs a piece with a params_type")

    @cpu_jit
    def start(tup, buf, K, d, M, T, init_noise):
        _ = fp
        state, _o = views(buf, d, K, M, T)
        init(P(*tup), state, init_noise)

    @cpu_jit
    def choose(tup, buf, M, T, X, sel_noise, bound):
        _ = fp
        params = P(*tup)
        K, d = X.shape
        for i in range(K):
            for j in range(d):
                if not abs(X[i, j]) <= bound:  # NaN compares False
                    return -1
        state, _o = views(buf, d, K, M, T)
        return select(params, state, X, sel_noise)

    @cpu_jit
    def learn(tup, buf, K, M, T, x, r, n_obs, step_noise, bound):
        _ = fp
        params = P(*tup)
        if not abs(r) <= bound:
            return -1
        d = x.shape[0]
        for j in range(d):
            if not abs(x[j]) <= bound:
                return -2
        state, _o = views(buf, d, K, M, T)
        return 1 if update(params, state, x, r, n_obs, step_noise) else 0

    @cpu_jit
    def choose_many(tup, buf, M, T, Xs, sel_noise, bound, out):
        """``choose`` for ``n`` rounds' contexts ``Xs`` (n, K, d) with ``sel_noise`` (n, .)
        into ``out`` (n,); returns the index of the first round whose contexts are refused
        (nothing after it is chosen), or ``n``."""
        _ = fp
        for i in range(Xs.shape[0]):
            arm = choose(tup, buf, M, T, Xs[i], sel_noise[i], bound)
            if arm < 0:
                return i
            out[i] = arm
        return Xs.shape[0]

    return start, choose, learn, choose_many

