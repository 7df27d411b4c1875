"""The environment protocol: a seeded problem instance and the realisations of its runs.

An environment is a problem *instance* (its ``theta_star``, pool or arm set, drawn from
the environment's own seed) plus the per-round randomness of a run, drawn by
:meth:`Environment.realise` from the run's generator. Every realisation carries the
expected reward of every arm, so regret is exact (no noisy rewards enter it).

Logistic rewards use the library's one stable sigmoid, :func:`vits_ref.special.sigmoid`
(the kernels' scalar body compiled as a ufunc), so an environment's expected rewards are
exactly the probabilities the kernels compute.
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as val

__all__ = ["REWARDS", "Environment", "Realisation"]

#: The reward models of the shared-parameter environments.
REWARDS = ("linear", "quadratic", "logistic")


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
        from ..special import sigmoid

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
        rng = val.as_generator(rng, "rng")
        contexts = self._contexts(n_rounds, rng)
        means = self.expected_reward(contexts)
        return Realisation(contexts, means, self._rewards(means, rng))

    def new_instance(self, seed):
        """The same environment with a fresh instance drawn from ``seed``."""
        return type(self)(**{**self._params(), "seed": seed})

    def _params(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"
