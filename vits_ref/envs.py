"""The VITS paper's bandit environments, seeded, with exact expected rewards.

An environment is a problem *instance* (its ``theta_star``, pool or arm set, drawn from
the environment's own seed) plus the per-round randomness of a run, drawn by
:meth:`Environment.realise` from the run's generator. Every realisation carries the
expected reward of every arm, so regret is exact (no noisy rewards enter it).
"""

from dataclasses import dataclass

import numpy as np

from . import _validate as val

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


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic function


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
        return _sigmoid(z)

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


class PoolEnvironment(Environment):
    """Appendix H of the VITS paper: arms drawn from a fixed pool plus ``zeta`` noise.

    A pool of ``pool_size`` vectors ``N(0, I_d)`` and ``theta_star ~ N(0, I_d/d)`` are fixed
    by ``seed``. Each round, each of the ``K`` arms is a pool vector drawn uniformly plus
    ``zeta N(0, I_d)``. Rewards: ``x theta* + alpha eps`` with ``alpha = sqrt(1 + zeta^2)``
    (linear), or ``(x theta*)^2 + alpha eps`` with ``alpha = (1 + zeta^2) sqrt(3 + 6/d)``
    (quadratic): signal-to-noise ratio 1 in both. Small ``zeta``: ill-conditioned.
    """

    name = "pool"

    def __init__(self, dim=20, n_arms=50, zeta=0.1, reward="linear", pool_size=50, seed=None):
        self.zeta = val.positive_float(zeta, "zeta", allow_zero=True)
        self.pool_size = val.positive_int(pool_size, "pool_size")
        if val.choice(reward, "reward", REWARDS) == "logistic":
            raise ValueError("reward must be 'linear' or 'quadratic' for the pool environment")
        super().__init__(dim, n_arms, reward, seed)
        if self.reward == "linear":
            self.noise_scale = float(np.sqrt(1.0 + self.zeta ** 2))
        else:
            self.noise_scale = float((1.0 + self.zeta ** 2) * np.sqrt(3.0 + 6.0 / self.dim))

    def _build(self, rng):
        self.pool = rng.standard_normal((self.pool_size, self.dim))
        self.theta_star = rng.standard_normal(self.dim) / np.sqrt(self.dim)

    def _contexts(self, T, rng):
        idx = rng.integers(self.pool_size, size=(T, self.n_arms))
        return self.pool[idx] + self.zeta * rng.standard_normal((T, self.n_arms, self.dim))

    def _params(self):
        return {"dim": self.dim, "n_arms": self.n_arms, "zeta": self.zeta,
                "reward": self.reward, "pool_size": self.pool_size, "seed": self.seed}


class HardInstance(Environment):
    """Appendix G of the VITS paper: a non-contextual instance that needs exploration.

    ``theta_star`` is a unit-norm Gaussian; the arms are ``{theta*, theta*_eps, x_2..x_{K-1}}``
    with ``theta*_eps = (theta* + eps)/|theta* + eps|``, ``eps ~ N(0, 0.1^2 I)``, and the
    others unit-normalised Gaussians; the same arms every round. Rewards ``x theta* + N(0, 1)``
    (linear) or ``Bernoulli(sigmoid(x theta*))`` (logistic).
    """

    name = "hard"

    def __init__(self, dim=10, n_arms=10, reward="linear", seed=None):
        if val.choice(reward, "reward", REWARDS) == "quadratic":
            raise ValueError("reward must be 'linear' or 'logistic' for the hard instance")
        super().__init__(dim, n_arms, reward, seed)
        if self.n_arms < 2:
            raise ValueError(f"n_arms must be >= 2 for the hard instance, got {self.n_arms}")
        self.noise_scale = 1.0

    def _build(self, rng):
        theta = rng.standard_normal(self.dim)
        self.theta_star = theta / np.linalg.norm(theta)
        near = self.theta_star + 0.1 * rng.standard_normal(self.dim)
        others = rng.standard_normal((max(self.n_arms - 2, 0), self.dim))
        others /= np.linalg.norm(others, axis=1, keepdims=True)
        self.arms = np.vstack([self.theta_star, near / np.linalg.norm(near), others])

    def _contexts(self, T, rng):
        return np.broadcast_to(self.arms, (T,) + self.arms.shape).copy()

    def _params(self):
        return {"dim": self.dim, "n_arms": self.n_arms, "reward": self.reward,
                "seed": self.seed}


def pool(dim=20, n_arms=50, zeta=0.1, reward="linear", pool_size=50, seed=None):
    """The pool environment of appendix H (see :class:`PoolEnvironment`).

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.pool(dim=20, n_arms=50, zeta=0.1, reward="linear", seed=0)
    >>> run = env.realise(100, rng=1)
    >>> run.contexts.shape, run.means.shape
    ((100, 50, 20), (100, 50))
    """
    return PoolEnvironment(dim=dim, n_arms=n_arms, zeta=zeta, reward=reward,
                           pool_size=pool_size, seed=seed)


def hard_instance(dim=10, n_arms=10, reward="linear", seed=None):
    """The hard non-contextual instance of appendix G (see :class:`HardInstance`).

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.hard_instance(dim=10, n_arms=10, reward="linear", seed=0)
    >>> float(env.optimal_mean_reward(env.arms))
    1.0
    """
    return HardInstance(dim=dim, n_arms=n_arms, reward=reward, seed=seed)


def movielens(path=None, n_movies=100, seed=None, rank=5, reward="logistic", noise_scale=0.75,
              synthetic_kwargs=None, lam=1.0, n_iter=50, data_seed=0):
    """The MovieLens per-arm bandit of section 5 (see
    :class:`vits_ref.movielens.MovieLensEnvironment`).

    Parameters
    ----------
    path : str, os.PathLike or None
        A MovieLens-1M ``ratings.dat`` (or ml-latest ``ratings.csv``) you downloaded; None
        uses the synthetic low-rank stand-in (``env.source`` says which).
    n_movies : int, default 100
        Number of arms, distinct random movies fixed by ``seed``.
    seed : int, SeedSequence, Generator or None
    rank : int, default 5
    reward : {"logistic", "linear"}
    noise_scale : float, default 0.75
        Noise of the linear variant.
    synthetic_kwargs : dict, optional
        Sizes of the stand-in (:func:`vits_ref.movielens.synthetic_ratings`); default the
        full-size one (6040 users, 3706 movies, 100 000 ratings).
    lam, n_iter : float, int
        Alternating least squares settings (:func:`vits_ref.movielens.factorize`).
    data_seed : int, default 0
        Seeds the stand-in and the ALS initialisation (the data, shared by every
        instance); ``seed`` only picks the movies.

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.movielens(n_movies=10, seed=0,
    ...                         synthetic_kwargs={"n_users": 200, "n_movies": 150,
    ...                                           "n_ratings": 3000})
    >>> env.source, env.theta_star.shape, env.prior_mean.shape
    ('synthetic', (10, 5), (5,))
    >>> run = env.realise(100, rng=1)
    >>> run.contexts.shape, run.means.shape, bool((run.contexts == run.contexts[:, :1]).all())
    ((100, 10, 5), (100, 10), True)
    """
    from .movielens import MovieLensEnvironment  # the module imports this one

    return MovieLensEnvironment(path=path, n_movies=n_movies, reward=reward, rank=rank,
                                noise_scale=noise_scale, synthetic_kwargs=synthetic_kwargs,
                                lam=lam, n_iter=n_iter, data_seed=data_seed, seed=seed)
