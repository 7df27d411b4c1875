"""The environment protocol: a seeded problem instance and the realisations of its runs.

An environment is a problem *instance* (its ``theta_star``, pool or arm set, drawn from
the environment's own seed) plus the per-round randomness of a run, drawn by
:meth:`Environment.realise` from the run's generator. What a round draws is declared
once, by :meth:`Environment.round_draws` (:mod:`vits_ref.envs.rounds`): the whole and the
chunked realisations and the counter-based streams' round body all derive from it. Every
realisation carries the expected reward of every arm, so regret is exact (no noisy rewards
enter it).

Logistic rewards use the library's one stable sigmoid, :func:`vits_ref.gaussian.special.sigmoid`
(the kernels' scalar body compiled as a ufunc), so an environment's expected rewards are
exactly the probabilities the kernels compute.
"""

import itertools
from dataclasses import dataclass

import numpy as np

from .. import _validate as val
from .rounds import Draw, realise_blocks, slice_chunks

__all__ = ["REWARDS", "Environment", "Realisation"]

#: The reward models of the shared-parameter environments.
REWARDS = ("linear", "quadratic", "logistic")

#: Most values a whole realisation may hold (2**40 floats, 8 TiB: beyond any memory;
#: above it NumPy would fail with an error that names no argument).
_MAX_ELEMENTS = 2 ** 40


@dataclass(frozen=True)
class Realisation:
    """One run's draws: ``contexts`` (T, K, d), ``means`` (T, K), ``rewards`` (T, K).

    ``rewards[t, a]`` is what arm ``a`` would pay at round ``t``; ``means`` its expectation.
    """

    contexts: np.ndarray
    means: np.ndarray
    rewards: np.ndarray

    @property
    def optimal_means(self):
        """Expected reward of the best arm at each round, shape (T,)."""
        return self.means.max(axis=1)


class Environment:
    """Base class: a reward model on arm features and a seeded instance."""

    name = "environment"

    def __init__(self, dim, n_arms, reward, seed):
        self.dim = val.positive_int(dim, "dim")
        self.n_arms = val.positive_int(n_arms, "n_arms")
        self.reward = val.choice(reward, "reward", REWARDS)
        self.seed = seed
        self._build(val.as_generator(seed))

    # -- reward model --------------------------------------------------------------------
    def expected_reward(self, contexts):
        """Expected reward of each row of ``contexts`` (..., d) under ``theta_star``."""
        return self._link(np.asarray(contexts, dtype=float) @ self.theta_star)

    def optimal_mean_reward(self, contexts):
        """Expected reward of the best arm among ``contexts`` (K, d)."""
        return float(self.expected_reward(contexts).max())

    def _link(self, z):
        """The reward model's expected reward of the scores ``z = x theta*``: ``z``, ``z^2``
        or ``sigmoid(z)`` (the one place of the three formulas; the counter streams'
        reference, :func:`vits_ref.reference.streams.env_rounds`, applies it to scores
        summed in the kernels' order)."""
        if self.reward == "linear":
            return z
        if self.reward == "quadratic":
            return z * z
        # imported on first use: loading the compiled ufuncs takes about 0.3 s, which
        # ``import vits_ref`` does not pay
        from ..gaussian.special import sigmoid

        return sigmoid(z)

    # -- what a round draws ----------------------------------------------------------------
    def round_draws(self):
        """What a round draws and how it is built: a :class:`vits_ref.envs.rounds.RoundDraws`,
        the one description from which :meth:`realise`, :meth:`realise_chunks` and
        :meth:`counter_piece` derive; None for an environment that does not declare its
        draws (the default), which then overrides :meth:`_contexts` and :meth:`_rewards`
        (or :meth:`realise`) and is realised whole (:attr:`chunk_safe` False)."""
        return None

    def _reward_round(self, counter=None):
        """A :class:`~vits_ref.envs.rounds.RoundDraws`'s reward half for the shared reward
        models, as ``dict(reward_draws=..., rewards=..., counter=counter)``: logistic
        rewards ``Bernoulli(means)`` by one uniform per arm (``u_a < means_a``), the others
        ``means + noise_scale eps`` with one normal ``eps`` a round for every arm (only the
        played arm's is observed). Stream :data:`~vits_ref.kernels.bandit_streams.STREAM_REWARD`
        (docs/streams.md)."""
        from ..kernels.bandit_streams import STREAM_REWARD

        if self.reward == "logistic":
            return {"reward_draws": (Draw("uniform", (self.n_arms,), stream=STREAM_REWARD),),
                    "rewards": _bernoulli, "counter": counter}
        scale = self.noise_scale

        def noisy(contexts, means, parts):
            return means + scale * parts[0]

        return {"reward_draws": (Draw("normal", (1,), stream=STREAM_REWARD),),
                "rewards": noisy, "counter": counter}

    def _declared(self):
        """The :meth:`round_draws` a realisation may use, or None: an environment whose
        class (or a base other than :class:`Environment`) redefines :meth:`realise`,
        :meth:`_contexts` or :meth:`_rewards` draws its own way."""
        cls = type(self)
        if any(_owner(cls, name) is not Environment for name in _OWN_WAY):
            return None
        return self.round_draws()

    @property
    def chunk_safe(self):
        """Whether :meth:`realise_chunks` draws block by block (bounded memory, one pass)
        rather than slicing one whole realisation."""
        return self._declared() is not None

    def _contexts(self, T, rng):
        """The features of ``T`` rounds drawn from ``rng`` (the context draws of
        :meth:`round_draws`); a subclass may redefine it (then realised whole)."""
        draws = self._undeclared_check()
        return draws.contexts([d.numpy(rng, T) for d in draws.context_draws], T)

    def _rewards(self, contexts, means, rng):
        """The rewards of the rounds of ``contexts`` drawn from ``rng`` (the reward draws of
        :meth:`round_draws`); a subclass may redefine it (then realised whole)."""
        draws = self._undeclared_check()
        return draws.rewards(contexts, means, [d.numpy(rng, means.shape[0])
                                               for d in draws.reward_draws])

    def _undeclared_check(self):
        draws = self.round_draws()
        if draws is None:
            raise NotImplementedError(f"{type(self).__name__} declares no round_draws: it "
                                      f"must define _contexts and _rewards, or realise")
        return draws

    # -- instances and runs ----------------------------------------------------------------
    def realise(self, n_rounds, rng=None):
        """Draw one run of ``n_rounds`` rounds from ``rng`` (int, SeedSequence or Generator).

        The rounds are drawn in blocks (:mod:`vits_ref.envs.rounds`): a run of at most
        :func:`~vits_ref.envs.rounds.block_rounds` rounds draws, for all its rounds, each
        of :meth:`round_draws`' draws in turn, then builds its features, expected rewards
        and rewards; a longer run is such blocks one after the other.
        """
        n_rounds = self._check_rounds(n_rounds)
        rng = val.as_generator(rng, "rng")
        draws = self._declared()
        if draws is None:
            contexts = self._contexts(n_rounds, rng)
            means = self.expected_reward(contexts)
            return Realisation(contexts, means, self._rewards(contexts, means, rng))
        blocks = realise_blocks(self, draws, n_rounds, rng)
        first = next(blocks)
        if first[0].shape[0] == n_rounds:
            return Realisation(*first)
        out = tuple(np.empty((n_rounds,) + a.shape[1:], dtype=a.dtype) for a in first)
        t0 = 0
        for block in itertools.chain([first], blocks):
            n = block[0].shape[0]
            for dst, src in zip(out, block, strict=True):
                dst[t0:t0 + n] = src
            t0 += n
        return Realisation(*out)

    def _check_rounds(self, n_rounds):
        n_rounds = val.positive_int(n_rounds, "n_rounds")
        # the whole realisation is held at once (simulate draws long runs in chunks)
        if n_rounds * self.n_arms * (self.dim + 2) > _MAX_ELEMENTS:
            raise ValueError(f"n_rounds={n_rounds} is too large to realise at once "
                             f"({self.n_arms} arms x {self.dim} dims per round): use "
                             f"realise_chunks, or simulate, which draws in chunks")
        return n_rounds

    # -- chunks of rounds -----------------------------------------------------------------
    def realise_chunks(self, n_rounds, rng=None, chunk=1024):
        """:meth:`realise` a chunk of rounds at a time: a generator of :class:`Realisation`
        for rounds ``[t0, t0 + n)``, ``n = min(chunk, n_rounds - t0)``.

        The chunks are the rows of ``realise(n_rounds, rng)``, bit for bit, and ``rng`` is
        left where :meth:`realise` leaves it. The run is drawn in one pass, block by block
        (:mod:`vits_ref.envs.rounds`), so it holds one block of rounds and one chunk at a
        time, whatever the horizon (:func:`vits_ref.bandit.simulate` draws its fused runs
        this way); a chunk within a block is a view of it.

        An environment that does not declare its draws (:meth:`round_draws` None, or a
        subclass redefining ``realise``, ``_contexts`` or ``_rewards``:
        :attr:`chunk_safe` False) is realised whole and sliced, which gives the same rows
        without bounding the memory.
        """
        n_rounds = val.positive_int(n_rounds, "n_rounds")
        chunk = val.positive_int(chunk, "chunk")
        rng = val.as_generator(rng, "rng")
        return self._realise_chunks(n_rounds, rng, chunk)  # validated now, drawn lazily

    def _realise_chunks(self, n_rounds, rng, chunk, out=None):
        """:meth:`realise_chunks`' generator; ``out`` as in
        :func:`~vits_ref.envs.rounds.realise_blocks` (a chunk-safe environment only)."""
        draws = self._declared()
        if draws is None:
            real = self.realise(n_rounds, rng)
            blocks = iter([(real.contexts, real.means, real.rewards)])
        else:
            blocks = realise_blocks(self, draws, n_rounds, rng, out)
        for part in slice_chunks(blocks, n_rounds, chunk):
            yield Realisation(*part)

    # -- counter-based streams ------------------------------------------------------------
    def counter_piece(self):
        """``(env_round, params)``: the kernel body generating a round of this environment
        from counter-based streams, and its parameter tuple (``simulate(...,
        stream="philox")``; :mod:`vits_ref.kernels.bandit_streams`, docs/streams.md): the
        ``counter`` of :meth:`round_draws`.

        Raises ValueError for an environment without one: its rounds can only be drawn by
        NumPy (``stream="numpy"``). A subclass that redefines how the rounds are drawn
        (any of ``realise``, ``_contexts``, ``_rewards``, ``expected_reward``, ``_build``
        or ``round_draws`` below the class that declared the counter piece) has none.
        """
        draws = self.round_draws()
        owner = _owner(type(self), "round_draws")
        if (draws is None or draws.counter is None
                or any(_owner(type(self), name) not in (owner, Environment)
                       for name in _COUNTER_DRAWS)):
            raise ValueError(f"the counter-based stream (stream='philox') is not available "
                             f"for the environment {self!r}: it has no counter piece (use "
                             f"stream='numpy')")
        return draws.counter()

    def new_instance(self, seed):
        """The same environment with a fresh instance drawn from ``seed``."""
        return type(self)(**{**self._params(), "seed": seed})

    def _params(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"


#: The methods whose redefinition makes an environment draw its own way (realised whole).
_OWN_WAY = ("realise", "_contexts", "_rewards")
#: What a counter piece reproduces: a subclass redefining any of these below the class
#: that declared it has no counter piece.
_COUNTER_DRAWS = _OWN_WAY + ("expected_reward", "_build", "round_draws")


def _bernoulli(contexts, means, parts):
    return (parts[0] < means).astype(float)


def _owner(cls, name):
    """The class of ``cls``'s MRO that defines ``name`` (None if none does)."""
    return next((c for c in cls.__mro__ if name in vars(c)), None)
