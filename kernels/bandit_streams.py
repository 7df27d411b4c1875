"""The fused bandit loop fed by counter-based streams: nothing pre-drawn.

:func:`make_bandit_streams` closes over a policy's piece (:mod:`.bandit`) and an
environment's round body, and runs rounds ``[t0, t0 + n)`` of a run generating, at each
round ``t``, the environment's contexts, expected rewards and rewards and the policy's
selection and step noise into the run's scratch, from Philox4x64-10 (:mod:`.philox`)
under the run's 128-bit key at counters ``(t, stream, block, 0)`` (the policy's initial
noise at ``(0, STREAM_INIT, block, 0)``); then the round is :func:`.bandit.make_round`'s
body, the one the pre-drawn loop runs. So a run's numbers depend only on its key, never on
batches, chunks of rounds, threads or the device, and a run holds only its state, its
scratch and its outputs: docs/streams.md gives the layout and the memory.

An environment's round body (:meth:`vits_ref.envs.Environment.counter_piece` returns one
and its parameters) has the signature

``env_round(env, k0, k1, t, X, x_flat, means, rewards)``
    writes round ``t``'s contexts ``X`` (K, d) (``x_flat`` is the same memory, flat),
    expected rewards ``means`` (K,) and rewards ``rewards`` (K,); ``env`` is the
    environment's parameter tuple.

This module holds those of the synthetic environments (:func:`pool_round`,
:func:`hard_round`). Their sums run in index order (``z = sum_i x_i theta_i`` from
``i = 0``), which the NumPy reference (:mod:`vits_ref.reference.streams`) repeats, so the
CPU's values are the reference's bit for bit.

**Block-safe.** The round bodies store into the run's scratch only through primitives
(the Philox fills; :func:`pool_contexts`, :func:`linear_means`, :func:`bernoulli_rewards`,
:func:`noisy_means`; :func:`.linalg.copy_mat`), each with a cooperative twin in
:mod:`.coop_philox` or :mod:`.coop_linalg` that computes every entry as the serial loop
does. So :func:`vits_ref.drivers.cuda_coop.rebind` runs the streamed loop with a block of
threads per run (:class:`vits_ref.drivers.cuda_coop.BlockStreams`), equal to the serial
loop bit for bit (docs/streams.md).
"""

from vits_ref.config import kernel

from .bandit import first_kl, make_round
from .linalg import copy_mat
from .philox import fill_bounded, fill_normals, fill_uniforms, normal_at
from .scalars import sigmoid
from .views import take, take2, take3

#: Stream ids: the counter's second word (docs/streams.md).
STREAM_CONTEXT_INDEX = 0
STREAM_CONTEXT_NOISE = 1
STREAM_REWARD = 2
STREAM_INIT = 3
STREAM_SELECT = 4
STREAM_STEP = 5

REWARD_LINEAR = 0
REWARD_QUADRATIC = 1
REWARD_LOGISTIC = 2


def scratch_size(d, K, n_init, n_sel, S, M):
    """Length of a run's scratch: contexts (K d), means and rewards (K each), the
    selection noise (``n_sel``), the step noise (``S M d``) and the initial noise
    (``n_init``)."""
    return K * d + 2 * K + n_sel + S * M * d + n_init


@kernel(inline=True)
def arm_mean(X, theta, code, a):
    """Arm ``a``'s expected reward: ``z``, ``z^2`` or ``sigmoid(z)`` for ``z = sum_i
    X[a, i] theta[i]`` (summed in index order from 0.0), as
    :meth:`vits_ref.envs.Environment.expected_reward` (to rounding: NumPy's product sums
    in another order)."""
    z = 0.0
    for i in range(X.shape[1]):
        z += X[a, i] * theta[i]
    if code == REWARD_QUADRATIC:
        return z * z
    if code == REWARD_LOGISTIC:
        return sigmoid(z)
    return z


@kernel(inline=True)
def linear_means(X, theta, code, means):
    """``means[a]`` = :func:`arm_mean` for every arm. A primitive: its cooperative twin
    (``kernels.coop_philox``) gives each thread whole arms."""
    for a in range(X.shape[0]):
        means[a] = arm_mean(X, theta, code, a)


@kernel(inline=True)
def pool_contexts(pool, zeta, idx, X):
    """``X[a, i] = zeta X[a, i] + pool[idx[a], i]`` in place (``idx`` (K,) holds the pool
    indices as floats). A primitive: its cooperative twin splits the entries."""
    K, d = X.shape
    for a in range(K):
        j = int(idx[a])
        for i in range(d):
            X[a, i] = zeta * X[a, i] + pool[j, i]


@kernel(inline=True)
def bernoulli_rewards(means, rewards):
    """``rewards[a] = 1 if rewards[a] < means[a] else 0`` in place (``rewards`` holds the
    arms' uniforms). A primitive: its cooperative twin splits the arms."""
    for a in range(means.shape[0]):
        rewards[a] = 1.0 if rewards[a] < means[a] else 0.0


@kernel(inline=True)
def noisy_means(means, noise_scale, eps, rewards):
    """``rewards[a] = means[a] + noise_scale eps`` (one noise for every arm). A primitive:
    its cooperative twin splits the arms."""
    for a in range(means.shape[0]):
        rewards[a] = means[a] + noise_scale * eps


@kernel(inline=True)
def noisy_rewards(k0, k1, t, code, noise_scale, means, rewards):
    """Round ``t``'s rewards: ``Bernoulli(means[a])`` by one uniform per arm (``u_a <
    means[a]``, stream :data:`STREAM_REWARD`) for logistic rewards, else ``means[a] +
    noise_scale eps`` with one normal ``eps`` for every arm (element 0 of the stream), as
    :meth:`vits_ref.envs.Environment.realise` draws them. Stores only through the
    primitives (:func:`bernoulli_rewards`, :func:`noisy_means`, the fill); ``eps`` is a
    scalar every thread of a block computes alike."""
    if code == REWARD_LOGISTIC:
        fill_uniforms(k0, k1, t, STREAM_REWARD, rewards)
        bernoulli_rewards(means, rewards)
    else:
        eps = normal_at(k0, k1, t, STREAM_REWARD, 0)
        noisy_means(means, noise_scale, eps, rewards)


@kernel
def pool_round(env, k0, k1, t, X, x_flat, means, rewards):
    """The pool environment's round ``t`` (appendix H of the VITS paper).

    ``env = (pool (P, d), theta (d,), zeta, noise_scale, code)``: arm ``a`` is
    ``zeta g_a + pool[i_a]`` with ``i_a`` in ``[0, P)`` (element ``a`` of
    :func:`.philox.fill_bounded`, stream :data:`STREAM_CONTEXT_INDEX`) and ``g_a`` (d,)
    standard normals (elements ``a d .. a d + d - 1`` of stream
    :data:`STREAM_CONTEXT_NOISE`); means and rewards by :func:`linear_means` and
    :func:`noisy_rewards`. The pool indices are held in ``means`` until the contexts are
    built (:func:`pool_contexts`).
    """
    pool, theta, zeta, noise_scale, code = env
    fill_normals(k0, k1, t, STREAM_CONTEXT_NOISE, x_flat)
    fill_bounded(k0, k1, t, STREAM_CONTEXT_INDEX, pool.shape[0], means)
    pool_contexts(pool, zeta, means, X)
    linear_means(X, theta, code, means)
    noisy_rewards(k0, k1, t, code, noise_scale, means, rewards)


@kernel
def hard_round(env, k0, k1, t, X, x_flat, means, rewards):
    """The hard instance's round ``t`` (appendix G of the VITS paper).

    ``env = (arms (K, d), theta (d,), noise_scale, code)``: the same arms every round
    (nothing drawn for the contexts, copied by :func:`.linalg.copy_mat`); means and
    rewards by :func:`linear_means` and :func:`noisy_rewards` (linear or logistic).
    """
    arms, theta, noise_scale, code = env
    copy_mat(arms, X)
    linear_means(X, theta, code, means)
    noisy_rewards(k0, k1, t, code, noise_scale, means, rewards)


def make_bandit_streams(piece, env_round, inline=False):
    """The streamed body running rounds ``[t0, t0 + n)`` of a run for ``piece`` on the
    environment whose round body is ``env_round``.

    ``rounds(params, env, key, dims, buf, scratch, t0, n, kl_rounds, regret, arms, kl_out)
    -> status``: ``params`` the policy's (the piece's NamedTuple,
    :attr:`BanditPiece.params_type <vits_ref.kernels.bandit.BanditPiece>`), ``env`` the
    environment's tuple; ``key`` (2,)
    uint64 the run's key; ``dims = (d, K, n_init, n_sel, S, M)`` the sizes of the contexts
    and of the policy's noise (initial, selection, steps ``(S, M, d)``); ``buf`` the run's
    state buffer (``piece.state_size(d, K, M, T)``, ``T = regret.shape[0]``), carrying the
    state between calls (initialised when ``t0 == 0``); ``scratch`` the run's scratch
    (:func:`scratch_size`); ``kl_rounds``, ``regret``, ``arms``, ``kl_out`` as in
    :func:`.bandit.make_bandit_rounds`. Selection noise is standard normal, or uniform in
    (0, 1) for a piece whose ``select_noise`` is ``"uniform"``. Returns 0, or the 1-based
    round at which the policy's state became non-finite.
    """
    views, init = piece.views, piece.init
    one_round = make_round(piece)
    uniform_select = piece.select_noise == "uniform"

    @kernel(inline=inline)
    def rounds(params, env, key, dims, buf, scratch, t0, n, kl_rounds, regret, arms,
               kl_out):
        d, K, n_init, n_sel, S, M = dims
        k0, k1 = key[0], key[1]
        state, _ = views(buf, d, K, M, regret.shape[0])
        X, o = take2(scratch, 0, K, d)
        x_flat, _ = take(scratch, 0, K * d)
        means, o = take(scratch, o, K)
        rewards, o = take(scratch, o, K)
        sel, o = take(scratch, o, n_sel)
        steps, _ = take3(scratch, o, S, M, d)
        steps_flat, o = take(scratch, o, S * M * d)
        if t0 == 0:
            init_noise, _ = take(scratch, o, n_init)
            fill_normals(k0, k1, 0, STREAM_INIT, init_noise)
            init(params, state, init_noise)
        nk = first_kl(kl_rounds, t0)
        for t in range(t0, t0 + n):
            env_round(env, k0, k1, t, X, x_flat, means, rewards)
            if uniform_select:
                fill_uniforms(k0, k1, t, STREAM_SELECT, sel)
            else:
                fill_normals(k0, k1, t, STREAM_SELECT, sel)
            fill_normals(k0, k1, t, STREAM_STEP, steps_flat)
            status, nk = one_round(params, state, t, X, means, rewards, sel, steps, kl_rounds,
                                   nk, regret, arms, kl_out)
            if status != 0:
                return status
        return 0

    return rounds
