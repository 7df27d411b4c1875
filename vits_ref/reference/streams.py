"""Plain-NumPy reference of the counter-based streams (docs/streams.md).

Vectorised Philox4x64-10 over arrays of counters (:func:`philox4x64`; NumPy's own
``numpy.random.Philox`` is the independent check of both this and the kernel, in
``tests/test_philox.py``), the transforms of :mod:`vits_ref.kernels.philox` (uniforms,
Box-Muller normals, bounded integers) and a run's whole arrays as the streamed loop
generates them (:func:`run_arrays`): contexts, means and rewards (:func:`env_rounds`, from
the environment's one description of a round) and the policy's initial,
selection and step noise, in the shapes of the pre-drawn fused loop
(:func:`vits_ref.kernels.bandit.make_bandit_rounds`), which fed with them must give what
``simulate(..., stream="philox")`` gives (``tests/test_streams.py``).

Transcendentals: ``libm=True`` (the default) computes ``log``, ``cos`` and ``sin`` with
Python's :mod:`math` (the C library's functions, those Numba's CPU code calls), element by
element: bit for bit the kernel's values on the CPU. NumPy's ufuncs have their own SIMD
``log``, which differs from the C library's by one ulp on about 0.35% of the arguments
(measured on 2 000 000 uniforms, 2026-11-22; ``cos`` and ``sin`` agreed everywhere), so
``libm=False`` (fast) gives normals within a few ulps of the kernel's.
"""

import math

import numpy as np

from ..kernels import bandit_streams as ks
from ..kernels.philox import M0, M1, ROUNDS, TWO_PI, W0, W1

_LO = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _mulhilo(a, b):
    """``(lo, hi)`` of the 128-bit products of uint64 arrays (32-bit halves)."""
    a_lo, a_hi = a & _LO, a >> _S32
    b_lo, b_hi = b & _LO, b >> _S32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _S32) + (p1 & _LO) + (p2 & _LO)
    hi = p3 + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)
    lo = ((mid & _LO) << _S32) | (p0 & _LO)
    return lo, hi


def philox4x64(counters, key):
    """Philox4x64-10 of ``counters`` (..., 4) uint64 under ``key`` (2,) uint64: (..., 4)."""
    c = np.asarray(counters, dtype=np.uint64)
    c0, c1, c2, c3 = (c[..., i].copy() for i in range(4))
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            if r > 0:
                k0 = np.uint64((int(k0) + int(W0)) % 2 ** 64)
                k1 = np.uint64((int(k1) + int(W1)) % 2 ** 64)
            lo0, hi0 = _mulhilo(M0, c0)
            lo1, hi1 = _mulhilo(M1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return np.stack([c0, c1, c2, c3], axis=-1)


def words(key, rounds, stream, n):
    """The first ``n`` words of the stream ``stream`` at each of ``rounds``: word ``i``
    of round ``t`` is word ``i % 4`` of counter ``(t, stream, i // 4, 0)``;
    (len(rounds), n) uint64."""
    rounds = np.atleast_1d(np.asarray(rounds, dtype=np.uint64))
    nb = (n + 3) // 4
    ctr = np.zeros((rounds.size, nb, 4), dtype=np.uint64)
    ctr[..., 0] = rounds[:, None]
    ctr[..., 1] = stream
    ctr[..., 2] = np.arange(nb, dtype=np.uint64)[None, :]
    return philox4x64(ctr, key).reshape(rounds.size, 4 * nb)[:, :n]


def to_uniform(w):
    """``((w >> 12) + 0.5) 2^-52`` (in (0, 1))."""
    return ((w >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0 ** -52


def uniforms(key, rounds, stream, n):
    """:func:`vits_ref.kernels.philox.fill_uniforms` at each of ``rounds``: (len, n)."""
    return to_uniform(words(key, rounds, stream, n))


_log = np.frompyfunc(math.log, 1, 1)
_cos = np.frompyfunc(math.cos, 1, 1)
_sin = np.frompyfunc(math.sin, 1, 1)


def normals(key, rounds, stream, n, libm=True):
    """:func:`vits_ref.kernels.philox.fill_normals` at each of ``rounds``: (len, n).

    Box-Muller on the word pairs ``(0, 1)`` and ``(2, 3)`` of each block:
    ``sqrt(-2 ln u1) (cos, sin)(2 pi u2)``.
    """
    nb = (n + 3) // 4
    if nb == 0:
        return np.zeros((np.atleast_1d(rounds).size, 0))
    u = to_uniform(words(key, rounds, stream, 4 * nb)).reshape(-1, nb, 2, 2)
    u1, u2 = u[..., 0], u[..., 1]
    if libm:
        lg = _log(u1).astype(np.float64)
        ang = TWO_PI * u2
        c, s = _cos(ang).astype(np.float64), _sin(ang).astype(np.float64)
    else:
        lg = np.log(u1)
        ang = TWO_PI * u2
        c, s = np.cos(ang), np.sin(ang)
    rad = np.sqrt(-2.0 * lg)
    z = np.stack([rad * c, rad * s], axis=-1)  # (len, nb, 2 pairs, 2)
    return z.reshape(z.shape[0], 4 * nb)[:, :n]


def bounded(key, rounds, stream, n, m):
    """:func:`vits_ref.kernels.philox.fill_bounded` at each of ``rounds``: integers in
    ``[0, m)``, ``floor(w m / 2^64)``; (len, n) int64."""
    _, hi = _mulhilo(words(key, rounds, stream, n), np.uint64(m))
    return hi.astype(np.int64)


def run_key(run_seed):
    """A run's 128-bit key (2,) uint64 from its SeedSequence (child ``r`` of the root)."""
    return run_seed.generate_state(2, dtype=np.uint64)


def draw_rows(draw, key, rounds, libm=True):
    """A :class:`vits_ref.envs.rounds.Draw`'s rows at each of ``rounds`` from its counter
    stream (:attr:`~vits_ref.envs.rounds.Draw.stream`): normals, uniforms or bounded
    integers (:func:`normals`, :func:`uniforms`, :func:`bounded`), shape ``(len(rounds),)
    + draw.shape``; a ValueError for a draw without a stream or a counter transform."""
    size = int(np.prod(draw.shape, dtype=np.int64))
    if draw.stream is None or draw.kind not in ("normal", "uniform", "integers"):
        raise ValueError(f"the draw {draw!r} has no counter-based stream")
    if draw.kind == "normal":
        rows = normals(key, rounds, draw.stream, size, libm)
    elif draw.kind == "uniform":
        rows = uniforms(key, rounds, draw.stream, size)
    else:
        rows = bounded(key, rounds, draw.stream, size, draw.high)
    return rows.reshape((rows.shape[0],) + draw.shape)


def index_order_scores(X, theta):
    """``z = sum_i X[..., i] theta[i]`` summed in index order from 0.0, as the kernels'
    :func:`~vits_ref.kernels.bandit_streams.arm_mean` sums (NumPy's product sums in
    another order)."""
    z = np.zeros(X.shape[:-1])
    for i in range(X.shape[-1]):
        z += X[..., i] * theta[i]
    return z


def env_rounds(env, key, rounds, libm=True):
    """What :meth:`env.counter_piece() <vits_ref.envs.Environment.counter_piece>`'s body
    writes at each of ``rounds``, ``(contexts (n, K, d), means (n, K), rewards (n, K))``,
    from the environment's one description of a round
    (:meth:`~vits_ref.envs.Environment.round_draws`): every draw's rows from its counter
    stream (:func:`draw_rows`), built by the description's own builders, the expected
    rewards by the environment's reward model on scores summed in the kernels' order
    (:func:`index_order_scores`)."""
    env.counter_piece()  # a ValueError, as simulate gives, for an environment without one
    desc = env.round_draws()
    rounds = np.atleast_1d(np.asarray(rounds))
    ctx = [draw_rows(d, key, rounds, libm) for d in desc.context_draws]
    rew = [draw_rows(d, key, rounds, libm) for d in desc.reward_draws]
    X = desc.contexts(ctx, rounds.size)
    means = env._link(index_order_scores(X, env.theta_star))
    return X, means, desc.rewards(X, means, rew)


def run_arrays(env, key, n_rounds, dims, select_noise="normal", libm=True):
    """A run's arrays as the streamed loop generates them.

    ``env`` an environment with a counter piece; ``key`` (2,) uint64; ``dims = (d, K,
    n_init, n_sel, S, M)``; ``select_noise`` the piece's (``"normal"`` or ``"uniform"``).
    Returns ``(contexts (T, K, d), means (T, K), rewards (T, K), init (n_init,), sel (T,
    n_sel), steps (T, S, M, d))``, the arguments of the pre-drawn loop.
    """
    d, K, n_init, n_sel, S, M = dims
    rounds = np.arange(n_rounds)
    X, means, rewards = env_rounds(env, key, rounds, libm)
    init = normals(key, [0], ks.STREAM_INIT, n_init, libm)[0]
    if select_noise == "uniform":
        sel = uniforms(key, rounds, ks.STREAM_SELECT, n_sel)
    else:
        sel = normals(key, rounds, ks.STREAM_SELECT, n_sel, libm)
    steps = normals(key, rounds, ks.STREAM_STEP, S * M * d, libm).reshape(n_rounds, S, M, d)
    return X, means, rewards, init, sel, steps
