"""Plain-NumPy reference of the counter-based streams (docs/streams.md).

Vectorised Philox4x64-10 over arrays of counters (:func:`philox4x64`; NumPy's own
``numpy.random.Philox`` is the independent check of both this and the kernel, in
``tests/test_philox.py``), the transforms of :mod:`vits_ref.kernels.philox` (uniforms,
Box-Muller normals, bounded integers) and a run's whole arrays as the streamed loop
generates them (:func:`run_arrays`): contexts, means, rewards and the policy's initial,
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


def _means(X, theta, code):
    z = np.zeros(X.shape[:-1])
    for i in range(X.shape[-1]):  # index order from 0.0, as the kernel sums
        z += X[..., i] * theta[i]
    if code == ks.REWARD_QUADRATIC:
        return z * z
    if code == ks.REWARD_LOGISTIC:
        from ..gaussian.special import sigmoid

        return sigmoid(z)
    return z


def _rewards(key, rounds, code, noise_scale, means, libm):
    if code == ks.REWARD_LOGISTIC:
        u = uniforms(key, rounds, ks.STREAM_REWARD, means.shape[1])
        return (u < means).astype(np.float64)
    eps = normals(key, rounds, ks.STREAM_REWARD, 1, libm)
    return means + noise_scale * eps


def pool_rounds(env, key, rounds, d, K, libm=True):
    """:func:`vits_ref.kernels.bandit_streams.pool_round` at each of ``rounds``:
    ``(contexts (n, K, d), means (n, K), rewards (n, K))``."""
    pool, theta, zeta, noise_scale, code = env
    g = normals(key, rounds, ks.STREAM_CONTEXT_NOISE, K * d, libm).reshape(-1, K, d)
    idx = bounded(key, rounds, ks.STREAM_CONTEXT_INDEX, K, pool.shape[0])
    X = zeta * g + pool[idx]
    means = _means(X, theta, code)
    return X, means, _rewards(key, rounds, code, noise_scale, means, libm)


def hard_rounds(env, key, rounds, d, K, libm=True):
    """:func:`vits_ref.kernels.bandit_streams.hard_round` at each of ``rounds``."""
    arms, theta, noise_scale, code = env
    X = np.broadcast_to(arms, (len(rounds), K, d)).copy()
    means = _means(X, theta, code)
    return X, means, _rewards(key, rounds, code, noise_scale, means, libm)


def rounds_of(env_round):
    """The reference of an environment's round body: by convention the function named
    like the body with an ``s`` (``pool_round`` -> :func:`pool_rounds`); a ValueError if
    this module has none."""
    ref = globals().get(env_round.__name__ + "s")
    if ref is None:
        raise ValueError(f"no NumPy reference of the round body {env_round.__name__!r} in "
                         f"vits_ref.reference.streams")
    return ref


def run_arrays(env, key, n_rounds, dims, select_noise="normal", libm=True):
    """A run's arrays as the streamed loop generates them.

    ``env`` an environment with a counter piece; ``key`` (2,) uint64; ``dims = (d, K,
    n_init, n_sel, S, M)``; ``select_noise`` the piece's (``"normal"`` or ``"uniform"``).
    Returns ``(contexts (T, K, d), means (T, K), rewards (T, K), init (n_init,), sel (T,
    n_sel), steps (T, S, M, d))``, the arguments of the pre-drawn loop.
    """
    d, K, n_init, n_sel, S, M = dims
    body, params = env.counter_piece()
    rounds = np.arange(n_rounds)
    X, means, rewards = rounds_of(body)(params, key, rounds, d, K, libm)
    init = normals(key, [0], ks.STREAM_INIT, n_init, libm)[0]
    if select_noise == "uniform":
        sel = uniforms(key, rounds, ks.STREAM_SELECT, n_sel)
    else:
        sel = normals(key, rounds, ks.STREAM_SELECT, n_sel, libm)
    steps = normals(key, rounds, ks.STREAM_STEP, S * M * d, libm).reshape(n_rounds, S, M, d)
    return X, means, rewards, init, sel, steps
