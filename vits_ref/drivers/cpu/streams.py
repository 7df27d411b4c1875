"""Bandit runs fed by counter-based streams (:mod:`vits_ref.kernels.bandit_streams`), and
the Philox fills that the tests and benchmarks call on their own.

:func:`bandit_streams` runs rounds of independent runs, each drawing its environment and
its noise from its own Philox key (blocks of runs in threads, :func:`._runs.over_runs`);
:func:`stream_draws` draws the same numbers without the policy (the benchmark's drawing
cost). The fills
(:func:`philox_words`, :func:`philox_fills`) are module-level, built by
:func:`vits_ref.config.stamped`.
"""

import functools

from ...config import cpu_jit, stamped
from ...kernels import philox
from ...kernels.bandit_streams import STREAM_SELECT, STREAM_STEP, make_bandit_streams
from ...kernels.potential import fingerprint
from ...kernels.views import take, take2
from ._runs import over_runs


@functools.cache
def bandit_streams(piece, env_round):
    """``run(params, env, keys, dims, bufs, scratch, t0, n, kl_rounds, regret, arms, kl_out,
    status)``: rounds ``[t0, t0 + n)`` of independent runs fed by counter-based streams,
    blocks of runs in threads (:func:`._runs.over_runs`) over a serial loop with the body
    inlined (:func:`vits_ref.kernels.bandit_streams.make_bandit_streams`).

    ``keys`` (R, 2) uint64 are the runs' keys, ``bufs`` (R, state size) and ``scratch``
    (R, :func:`~vits_ref.kernels.bandit_streams.scratch_size`) their state and scratch
    (kept by the caller between calls), ``regret``, ``arms`` (R, T) and ``kl_out`` (R,
    n_kl) the outputs, ``status`` (R,) each run's status. Each run is computed by one
    thread from its own key, so the results depend neither on the threads nor on the
    chunks of rounds.
    """
    body = make_bandit_streams(piece, env_round, inline=True)  # one copy: in this loop
    fp = (piece.fingerprint, fingerprint(env_round))  # Numba's cache key follows the bodies

    @cpu_jit
    def run(params, env, keys, dims, bufs, scratch, t0, n, kl_rounds, regret, arms, kl_out,
            status):
        _ = fp
        for r in range(keys.shape[0]):
            status[r] = body(params, env, keys[r], dims, bufs[r], scratch[r], t0, n,
                             kl_rounds, regret[r], arms[r], kl_out[r])

    # keys, bufs, scratch and the outputs have the runs on their leading axis
    return over_runs(run, (2, 4, 5, 9, 10, 11, 12))


#: the kinds of fill of :func:`philox_fills`
FILL_UNIFORMS, FILL_NORMALS, FILL_BOUNDED, NORMALS_BY_ELEMENT = 0, 1, 2, 3


@stamped
def philox_words(stamp):
    @cpu_jit
    def philox_words(keys, ctrs, out):
        """``out[n]`` (4,) = Philox4x64-10 of counter ``ctrs[n]`` (4,) under key ``keys[n]``
        (2,), all uint64 (:func:`vits_ref.kernels.philox.philox4x64`)."""
        _ = stamp
        for n in range(keys.shape[0]):
            w0, w1, w2, w3 = philox.philox4x64(ctrs[n, 0], ctrs[n, 1], ctrs[n, 2], ctrs[n, 3],
                                                keys[n, 0], keys[n, 1])
            out[n, 0], out[n, 1], out[n, 2], out[n, 3] = w0, w1, w2, w3

    return philox_words


@stamped
def philox_fills(stamp):
    @cpu_jit
    def philox_fills(kind, keys, c0, c1, m, out):
        """Row ``r`` of ``out`` (R, n): a fill (``kind``: :data:`FILL_UNIFORMS`,
        :data:`FILL_NORMALS`, :data:`FILL_BOUNDED` in ``[0, m)``, or
        :data:`NORMALS_BY_ELEMENT`: ``normal_at`` element by element) under key ``keys[r]`` at
        counter ``(c0 + r, c1, ·, 0)`` (a serial loop: compiled in a fraction of a parallel
        one's time; the fills' thread invariance is tested on the cooperative twins and the
        streamed loop's blocks of runs)."""
        _ = stamp
        for r in range(out.shape[0]):
            k0, k1 = keys[r, 0], keys[r, 1]
            row = out[r]
            if kind == FILL_UNIFORMS:
                philox.fill_uniforms(k0, k1, c0 + r, c1, row)
            elif kind == FILL_NORMALS:
                philox.fill_normals(k0, k1, c0 + r, c1, row)
            elif kind == FILL_BOUNDED:
                philox.fill_bounded(k0, k1, c0 + r, c1, m, row)
            else:
                for i in range(row.shape[0]):
                    row[i] = philox.normal_at(k0, k1, c0 + r, c1, i)

    return philox_fills


@functools.cache
def stream_draws(env_round):
    """``run(env, keys, dims, scratch, T)``: rounds ``0 .. T - 1`` of each run's
    environment (``env_round``) and normal selection and step noise generated into its
    scratch, as the streamed loop generates them, without the policy (the benchmark's
    drawing cost, :mod:`vits_ref._bench.streams`)."""
    fp = fingerprint(env_round)

    @cpu_jit
    def run(env, keys, dims, scratch, T):
        _ = fp
        d, K, n_init, n_sel, S, M = dims
        for r in range(keys.shape[0]):
            k0, k1 = keys[r, 0], keys[r, 1]
            buf = scratch[r]
            X, o = take2(buf, 0, K, d)
            x_flat, _o = take(buf, 0, K * d)
            means, o = take(buf, o, K)
            rewards, o = take(buf, o, K)
            sel, o = take(buf, o, n_sel)
            steps, o = take(buf, o, S * M * d)
            for t in range(T):
                env_round(env, k0, k1, t, X, x_flat, means, rewards)
                philox.fill_normals(k0, k1, t, STREAM_SELECT, sel)
                philox.fill_normals(k0, k1, t, STREAM_STEP, steps)

    return run
