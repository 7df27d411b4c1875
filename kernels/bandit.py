"""The fused whole-run loop of the linear bandit, generic over the policy's pieces.

One run is ``T`` rounds of: the policy selects an arm from its state, the loop records the
exact regret and looks up the pre-realised reward, the policy updates its state (for VITS
and Langevin: the statistics ``V``, ``b`` and ``K_t`` inner steps), and on the requested
rounds the KL to the exact posterior is recorded. Here all randomness comes in as arrays
drawn beforehand with NumPy (:mod:`vits_ref.bandit.simulate` says in which order), so the CPU and
CUDA drivers and the NumPy reference (:mod:`vits_ref.reference`) consume the same numbers;
:mod:`.bandit_streams` runs the same round body (:func:`make_round`) on inputs generated
in the loop from counter-based streams (docs/streams.md).

A policy contributes a :class:`BanditPiece`: five kernel bodies with one signature each,

``views(buf, d, K, M, T) -> (state, used)``
    the policy's state (a tuple of arrays: statistics, Gaussian, scratch) carved from one
    flat float64 buffer per run (``state_size(d, K, M, T)`` long, ``M`` the draws per
    step, ``T`` the run's horizon); one buffer per run keeps the drivers generic and lets
    CUDA hand each thread or block its own slice. Pieces on sufficient statistics ignore
    ``T``; a piece whose potential reads the whole history (the logistic pieces of
    :mod:`.logistic_bandit`) keeps it in the buffer, ``T`` rows;
``init(params, state, init_noise)``, ``select(params, state, X, noise) -> arm``,
``update(params, state, x, r, n_obs, noise) -> ok``, ``kl(params, state) -> float``

where ``params`` is the policy's hyperparameters, an instance of the piece's
:class:`typing.NamedTuple` (``piece.params_type``, defined beside the piece in its module:
:class:`~vits_ref.kernels.lints.LinTSParams`, :class:`~vits_ref.kernels.vits.VITSParams`,
...). Numba compiles a NamedTuple as a tuple with named fields, so the bodies read it by
position or by name alike. :func:`make_bandit_rounds`
closes over a piece and runs a chunk of rounds ``[t0, t1)`` from the state buffer (so a
long run is fed a chunk of pre-drawn rounds at a time, with bounded memory);
:func:`make_bandit_run` is the same body over the whole horizon. The drivers
(:mod:`vits_ref.drivers`) cache one compiled loop per piece. No list of policies exists
anywhere: a new policy brings its own piece.
"""

from typing import NamedTuple

from vits_ref.config import kernel

from .linalg import copy_vec
from .potential import fingerprint
from .views import take, take2

SCHEDULE_CONSTANT = 0
SCHEDULE_DECAYED = 1


@kernel(inline=True)
def step_size(schedule, h0, eta, t):
    """Step size at round ``t`` (1-based number of observations).

    ``constant``: ``h0``; ``decayed``: ``h0 / (eta t)`` (the VITS authors' code).
    """
    if schedule == SCHEDULE_DECAYED:
        return h0 / (eta * t)
    return h0


@kernel(inline=True)
def argmax(x):
    """Index of the first maximum (ties go to the lowest index, like ``np.argmax``)."""
    best = 0
    for i in range(1, x.shape[0]):
        if x[i] > x[best]:
            best = i
    return best


@kernel(inline=True)
def instant_regret(means, arm):
    """``max_a means[a] - means[arm]``: the exact regret of playing ``arm`` (``means`` (K,))."""
    best = means[0]
    for a in range(1, means.shape[0]):
        if means[a] > best:
            best = means[a]
    return best - means[arm]


class BanditPiece:
    """A policy's bodies for the fused loop (see the module docstring).

    ``state_size(d, K, M, T)`` is plain Python (the drivers size the buffers with it);
    ``tests/test_bandit_pieces.py`` checks that ``views`` uses exactly that many entries.
    ``select_noise`` says what the entries of ``select``'s noise are: standard normals
    (the default) or uniforms in (0, 1); the counter-based streams
    (:mod:`.bandit_streams`) draw them accordingly. ``params_type`` is the
    :class:`typing.NamedTuple` of the hyperparameters the bodies read (None: any tuple);
    :class:`vits_ref.drivers.fused.FusedSpec` checks that a spec's ``params`` is one.
    Hashed by identity: one compiled loop per piece.
    """

    def __init__(self, name, state_size, views, init, select, update, kl,
                 select_noise="normal", params_type=None):
        if select_noise not in ("normal", "uniform"):
            raise ValueError(f"select_noise must be 'normal' or 'uniform', got "
                             f"{select_noise!r}")
        if params_type is not None and not (isinstance(params_type, type)
                                            and issubclass(params_type, tuple)
                                            and hasattr(params_type, "_fields")):
            raise TypeError(f"params_type must be a NamedTuple class or None, got "
                            f"{params_type!r}")
        self.name = name
        self.select_noise = select_noise
        self.params_type = params_type
        self.state_size = state_size
        self.views = views
        self.init = init
        self.select = select
        self.update = update
        self.kl = kl
        self.fingerprint = fingerprint(views, init, select, update, kl)

    def __repr__(self):
        return f"BanditPiece({self.name!r})"


def make_round(piece):
    """The body of one round for ``piece``, shared by the pre-drawn loop
    (:func:`make_bandit_rounds`) and the streamed one
    (:func:`vits_ref.kernels.bandit_streams.make_bandit_streams`).

    ``one_round(params, state, tg, X, means, rewards, sel_noise, step_noise, kl_rounds, nk,
    regret, arms, kl_out) -> (status, nk)``: round ``tg`` (0-based, global) with the
    round's contexts ``X`` (K, d), ``means``, ``rewards`` (K,), selection noise (·) and
    step noise (S, M, d): the policy selects an arm, the exact regret and the arm are
    recorded at ``tg``, the policy updates on the arm's reward with ``n_obs = tg + 1``
    observations, and when ``kl_rounds[nk] == n_obs`` the KL is recorded and ``nk``
    advanced. ``status`` is 0, or ``n_obs`` when the update left a non-finite state.
    """
    select, update, kl = piece.select, piece.update, piece.kl

    @kernel(inline=True)
    def one_round(params, state, tg, X, means, rewards, sel_noise, step_noise, kl_rounds,
                  nk, regret, arms, kl_out):
        arm = select(params, state, X, sel_noise)
        regret[tg] = instant_regret(means, arm)
        arms[tg] = arm
        n_obs = tg + 1
        if not update(params, state, X[arm], rewards[arm], n_obs, step_noise):
            return n_obs, nk
        if nk < kl_rounds.shape[0] and kl_rounds[nk] == n_obs:
            kl_out[nk] = kl(params, state)
            nk += 1
        return 0, nk

    return one_round


@kernel(inline=True)
def first_kl(kl_rounds, t0):
    """Index of the first of ``kl_rounds`` (1-based, increasing) after round ``t0``."""
    nk = 0
    while nk < kl_rounds.shape[0] and kl_rounds[nk] <= t0:
        nk += 1
    return nk


def make_bandit_rounds(piece, inline=False):
    """The body running rounds ``[t0, t0 + n)`` of a run for ``piece``.

    ``rounds(params, buf, t0, contexts, means, rewards, init_noise, sel_noise, step_noise,
    kl_rounds, regret, arms, kl_out) -> status``: ``contexts`` (n, K, d), ``means`` and
    ``rewards`` (n, K), ``sel_noise`` (n, ·) and ``step_noise`` (n, S, M, d) are the rows of
    rounds ``t0 .. t0 + n - 1`` (0-based) of the run's realisation and randomness;
    ``init_noise`` (d,) is read only when ``t0 == 0``, which initialises the state; ``buf``
    is the run's flat state buffer, which carries the state from one call to the next;
    ``kl_rounds`` (n_kl,) are increasing 1-based *global* rounds; ``regret``, ``arms``
    (T,) and ``kl_out`` (n_kl,) are the whole run's outputs, written at the global rounds.
    Step sizes, the number of observations and the KL rounds all use the global round
    ``t0 + t + 1``, so running ``[0, T)`` in one call or in chunks of any sizes, in order,
    gives bit-identical results. Returns 0, or the 1-based global round at which the
    policy's state became non-finite. Each round is :func:`make_round`'s body.

    ``inline``: the body is inlined into its caller (:func:`vits_ref.config.kernel`): the
    CPU driver's loop over the runs, whose machine code then holds one copy of it (as a
    function of its own, LLVM optimised and emitted it once for itself and again, linked,
    for the driver).

    This is what bounds the memory of a long run: the caller draws the realisation and the
    randomness a chunk of rounds at a time (:meth:`vits_ref.envs.Environment.realise_chunks`,
    :func:`vits_ref.drivers.fused.draw_chunks`) and keeps only the state buffer between chunks.
    """
    views, init = piece.views, piece.init
    one_round = make_round(piece)

    @kernel(inline=inline)
    def rounds(params, buf, t0, contexts, means, rewards, init_noise, sel_noise, step_noise,
               kl_rounds, regret, arms, kl_out):
        n, K, d = contexts.shape
        state, _ = views(buf, d, K, step_noise.shape[2], regret.shape[0])
        if t0 == 0:
            init(params, state, init_noise)
        nk = first_kl(kl_rounds, t0)
        for t in range(n):
            status, nk = one_round(params, state, t0 + t, contexts[t], means[t], rewards[t],
                                   sel_noise[t], step_noise[t], kl_rounds, nk, regret, arms,
                                   kl_out)
            if status != 0:
                return status
        return 0

    return rounds


def make_bandit_run(piece):
    """The whole-run body for ``piece``: :func:`make_bandit_rounds` over rounds ``[0, T)``.

    ``run(params, buf, contexts, means, rewards, init_noise, sel_noise, step_noise,
    kl_rounds, regret, arms, kl_out) -> status``: ``contexts`` (T, K, d), ``means`` and
    ``rewards`` (T, K) are the run's realisation; ``init_noise`` (d,), ``sel_noise``
    (T, ·) and ``step_noise`` (T, S, M, d) its pre-drawn randomness; ``kl_rounds`` (n_kl,)
    increasing 1-based rounds; ``regret``, ``arms`` (T,) and ``kl_out`` (n_kl,) outputs;
    ``buf`` the run's flat state buffer. Returns 0, or the 1-based round at which the
    policy's state became non-finite.
    """
    rounds = make_bandit_rounds(piece)

    @kernel
    def run(params, buf, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out):
        return rounds(params, buf, 0, contexts, means, rewards, init_noise, sel_noise,
                      step_noise, kl_rounds, regret, arms, kl_out)

    return run


def late_queue_size(d, Q):
    """Entries of the pending-feedback queue of :func:`make_bandit_rounds_late`: ``Q``
    slots of a context row and its reward."""
    return Q * (d + 1)


def make_bandit_rounds_late(piece, inline=False):
    """The body running rounds ``[t0, t0 + n)`` of a run for ``piece`` with late or batched
    feedback: :func:`make_bandit_rounds` with a queue of pending feedback.

    ``rounds(params, buf, t0, k0, contexts, means, rewards, init_noise, sel_noise,
    step_noise, order, learnt, kl_rounds, regret, arms, kl_out) -> status``. Every round
    the policy selects an arm from its state and the round's context row and reward join
    the queue; then the updates due by the end of the round are made, in the delivery
    order of :func:`vits_ref.bandit.delivery.delivery_schedule`: the ``k``-th update
    (0-based, over the run) learns round ``order[k - k0]``, with ``n_obs = k + 1`` and the
    step noise ``step_noise[k - k0]``, and ``learnt[t]`` (global, cumulative) is the number
    of updates made by the end of round ``t0 + t``; ``k0`` is the number made before the
    chunk. This is the order, the observation counts and the draws of the policy's own
    ``update`` in :func:`vits_ref.simulate`'s Python loop (the engines draw their step
    noise per update, from their update stream), so both give the same numbers bit for
    bit. The KL of a recorded round is that of the state after the round's deliveries.

    The queue is the end of ``buf``, after the piece's state: ``Q`` slots of ``d + 1``
    entries (:func:`late_queue_size`), round ``s`` in slot ``s mod Q``; a round is learnt
    at most ``Q - 1`` rounds after its own (the schedule's ``span``), so no pending round
    is overwritten. Returns 0, or the number of observations ``k + 1`` of the update that
    left a non-finite state. ``inline`` as in :func:`make_bandit_rounds`.
    """
    views, init = piece.views, piece.init
    select, update, kl = piece.select, piece.update, piece.kl

    @kernel(inline=inline)
    def rounds(params, buf, t0, k0, contexts, means, rewards, init_noise, sel_noise,
               step_noise, order, learnt, kl_rounds, regret, arms, kl_out):
        n, K, d = contexts.shape
        state, used = views(buf, d, K, step_noise.shape[2], regret.shape[0])
        queue, _ = take2(buf, used, (buf.shape[0] - used) // (d + 1), d + 1)
        Q = queue.shape[0]
        if t0 == 0:
            init(params, state, init_noise)
        nk = first_kl(kl_rounds, t0)
        k = k0
        for t in range(n):
            tg = t0 + t
            X = contexts[t]
            arm = select(params, state, X, sel_noise[t])
            regret[tg] = instant_regret(means[t], arm)
            arms[tg] = arm
            slot = queue[tg % Q]
            copy_vec(X[arm], slot[:d])
            slot[d] = rewards[t, arm]
            while k < learnt[t]:
                j = k - k0
                due = queue[order[j] % Q]
                if not update(params, state, due[:d], due[d], k + 1, step_noise[j]):
                    return k + 1
                k += 1
            if nk < kl_rounds.shape[0] and kl_rounds[nk] == tg + 1:
                kl_out[nk] = kl(params, state)
                nk += 1
        return 0

    return rounds


# --------------------------------------------------------------------------- random policy


class RandomParams(NamedTuple):
    """The parameters of :data:`RANDOM`: none is read. The one field keeps the tuple
    non-empty (the drivers pass every piece's parameters the same way)."""

    #: unused (0.0)
    unused: float = 0.0


def _random_size(d, K, M, T):
    return 0


@kernel(inline=True)
def _random_views(buf, d, K, M, T):
    empty, o = take(buf, 0, 0)
    return (empty,), o


@kernel(inline=True)
def _random_init(params, state, init_noise):
    pass


@kernel(inline=True)
def _random_select(params, state, X, noise):
    K = X.shape[0]
    arm = int(noise[0] * K)
    if arm >= K:
        arm = K - 1
    return arm


@kernel(inline=True)
def _random_update(params, state, x, r, n_obs, noise):
    return True


@kernel(inline=True)
def _random_kl(params, state):
    return 0.0


#: The uniformly random policy: arm ``floor(u K)`` for the round's uniform ``u``.
RANDOM = BanditPiece("random", _random_size, _random_views, _random_init, _random_select,
                     _random_update, _random_kl, select_noise="uniform",
                     params_type=RandomParams)
