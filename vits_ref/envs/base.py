"""The environment protocol: a seeded problem instance and the realisations of its runs.

An environment is a problem *instance* (its ``theta_star``, pool or arm set, drawn from
the environment's own seed) plus the per-round randomness of a run, drawn by
:meth:`Environment.realise` from the run's generator. Every realisation carries the
expected reward of every arm, so regret is exact (no noisy rewards enter it).

Logistic rewards use the library's one stable sigmoid, :func:`vits_ref.gaussian.special.sigmoid`
(the kernels' scalar body compiled as a ufunc), so an environment's expected rewards are
exactly the probabilities the kernels compute.
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as val

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
        z = np.asarray(contexts, dtype=float) @ self.theta_star
        if self.reward == "linear":
            return z
        if self.reward == "quadratic":
            return z * z
        # imported on first use: loading the compiled ufuncs takes about 0.3 s, which
        # ``import vits_ref`` does not pay
        from ..gaussian.special import sigmoid

        return sigmoid(z)

    def optimal_mean_reward(self, contexts):
        """Expected reward of the best arm among ``contexts`` (K, d)."""
        return float(self.expected_reward(contexts).max())

    def _rewards(self, means, rng):
        T, K = means.shape
        if self.reward == "logistic":
            u = rng.random((T, K))
            return (u < means).astype(float)
        # the same noise draw for every arm of a round: only the played arm's is observed
        return means + self.noise_scale * rng.standard_normal((T, 1))

    # -- instances and runs ----------------------------------------------------------------
    def realise(self, n_rounds, rng=None):
        """Draw one run of ``n_rounds`` rounds from ``rng`` (int, SeedSequence or Generator)."""
        n_rounds = val.positive_int(n_rounds, "n_rounds")
        # the whole realisation is held at once (simulate draws long runs in chunks)
        if n_rounds * self.n_arms * (self.dim + 2) > _MAX_ELEMENTS:
            raise ValueError(f"n_rounds={n_rounds} is too large to realise at once "
                             f"({self.n_arms} arms x {self.dim} dims per round): use "
                             f"realise_chunks, or simulate, which draws in chunks")
        rng = val.as_generator(rng, "rng")
        contexts = self._contexts(n_rounds, rng)
        means = self.expected_reward(contexts)
        return Realisation(contexts, means, self._rewards(means, rng))

    # -- chunks of rounds -----------------------------------------------------------------
    def realise_chunks(self, n_rounds, rng=None, chunk=1024):
        """:meth:`realise` a chunk of rounds at a time: a generator of :class:`Realisation`
        for rounds ``[t0, t0 + n)``, ``n = min(chunk, n_rounds - t0)``.

        The chunks are the rows of ``realise(n_rounds, rng)``, bit for bit, while only one
        chunk's draws are held at a time, so a run's memory does not grow with the horizon
        (:func:`vits_ref.bandit.simulate` draws its fused runs this way). ``rng`` is left where
        :meth:`realise` leaves it.

        Why two passes: a run's draws come from one Generator in *stream order*: all the
        rounds' contexts, then all the rounds' rewards (for the pool environment even the
        contexts are two draws: all the pool indices, then all the perturbations). The
        rewards of round 0 therefore come after every context of the run in the stream,
        and cannot be drawn before the contexts have been drawn. The first pass draws (and
        discards) each of the stream's draws but the last, chunk by chunk, saving the
        generator's state (``bit_generator.state``) where each draw starts; the second pass
        keeps one generator per draw, restored from those states, and draws every chunk's
        rows of each. This relies on each draw being *chunk-safe*: drawing its rows ``n`` at
        a time consumes the stream exactly as one draw of all of them (true of a
        Generator's ``standard_normal``, ``random``, ``integers`` and ``choice`` with
        ``p``: row-major fills with no state outside ``bit_generator.state``;
        ``tests/test_chunked_rounds.py`` checks every environment). The first pass costs
        one more draw of all but the last draw's numbers.

        An environment declares its draws in stream order by :meth:`_draws` (by default
        its contexts' :meth:`_context_draws` then its rewards' :meth:`_reward_draws`).
        One that does not (a subclass overriding ``_contexts``, ``_rewards`` or
        ``realise`` without the matching ``_context_draws``, ``_reward_draws`` or
        ``_draws``) is not chunk-safe (:attr:`chunk_safe` False): it is realised whole and
        sliced, which gives the same rows without bounding the memory.
        """
        n_rounds = val.positive_int(n_rounds, "n_rounds")
        chunk = val.positive_int(chunk, "chunk")
        rng = val.as_generator(rng, "rng")
        return self._realise_chunks(n_rounds, rng, chunk)  # validated now, drawn lazily

    def _realise_chunks(self, n_rounds, rng, chunk):
        draws = self._chunk_draws()
        if draws is None:
            real = self.realise(n_rounds, rng)
            for t0 in range(0, n_rounds, chunk):
                sl = slice(t0, t0 + chunk)
                yield Realisation(real.contexts[sl], real.means[sl], real.rewards[sl])
            return
        if chunk >= n_rounds:  # one chunk: the draws one after the other, as realise does
            yield self._assemble([draw(rng, n_rounds) for draw in draws], n_rounds)
            return
        # first pass: where each draw starts in the stream
        states = []
        for k, draw in enumerate(draws):
            states.append(rng.bit_generator.state)
            if k < len(draws) - 1:
                for t0 in range(0, n_rounds, chunk):
                    draw(rng, min(chunk, n_rounds - t0))
        gens = []
        for state in states:
            bitgen = type(rng.bit_generator)()
            bitgen.state = state
            gens.append(np.random.Generator(bitgen))
        # second pass: every chunk's rows of every draw
        for t0 in range(0, n_rounds, chunk):
            n = min(chunk, n_rounds - t0)
            yield self._assemble([draw(g, n) for draw, g in zip(draws, gens, strict=True)], n)
        rng.bit_generator.state = gens[-1].bit_generator.state

    @property
    def chunk_safe(self):
        """Whether :meth:`realise_chunks` draws chunk by chunk (bounded memory) rather than
        slicing one whole realisation."""
        return self._chunk_draws() is not None

    def _chunk_draws(self):
        cls = type(self)
        if _owner(cls, "realise") is not _owner(cls, "_draws"):
            return None
        return self._draws()

    def _draws(self):
        """The run's draws in stream order, ``draw(rng, n) -> array of n rows`` each, or
        None (not chunk-safe); :meth:`_assemble` builds a :class:`Realisation` from them."""
        cls = type(self)
        if (_owner(cls, "_contexts") is not _owner(cls, "_context_draws")
                or _owner(cls, "_rewards") is not _owner(cls, "_reward_draws")):
            return None
        ctx = self._context_draws()
        return None if ctx is None else tuple(ctx) + tuple(self._reward_draws())

    def _assemble(self, parts, n):
        """A chunk's :class:`Realisation` from its rows of each of :meth:`_draws`, computed
        as :meth:`realise` computes them."""
        n_ctx = len(self._context_draws())
        contexts = self._contexts_from(parts[:n_ctx], n)
        means = self.expected_reward(contexts)
        return Realisation(contexts, means, self._rewards_from(means, parts[n_ctx:]))

    def _context_draws(self):
        """The draws of ``_contexts`` in stream order (a tuple, maybe empty), or None."""
        return None

    def _contexts_from(self, parts, n):  # pragma: no cover - with _context_draws
        raise NotImplementedError

    def _reward_draws(self):
        """The draws of :meth:`_rewards` in stream order."""
        if self.reward == "logistic":
            K = self.n_arms
            return (lambda rng, n: rng.random((n, K)),)
        return (lambda rng, n: rng.standard_normal((n, 1)),)

    def _rewards_from(self, means, parts):
        """:meth:`_rewards` from its draws' rows."""
        if self.reward == "logistic":
            return (parts[0] < means).astype(float)
        return means + self.noise_scale * parts[0]

    # -- counter-based streams ------------------------------------------------------------
    def counter_piece(self):
        """``(env_round, params)``: the kernel body generating a round of this environment
        from counter-based streams, and its parameter tuple (``simulate(...,
        stream="philox")``; :mod:`vits_ref.kernels.bandit_streams`, docs/streams.md).

        Raises ValueError for an environment without one (the default): its rounds can
        only be drawn by NumPy (``stream="numpy"``).
        """
        raise ValueError(f"the counter-based stream (stream='philox') is not available for "
                         f"the environment {self!r}: it has no counter piece (use "
                         f"stream='numpy')")

    def new_instance(self, seed):
        """The same environment with a fresh instance drawn from ``seed``."""
        return type(self)(**{**self._params(), "seed": seed})

    def _params(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"


def _owner(cls, name):
    """The class of ``cls``'s MRO that defines ``name`` (None if none does)."""
    return next((c for c in cls.__mro__ if name in vars(c)), None)
