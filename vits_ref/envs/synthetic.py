"""The VITS paper's synthetic environments: the pool of appendix H, the hard instance of G.

Both share one parameter ``theta_star`` across the arms and are seeded: the instance
(``theta_star``, the pool or the arm set) comes from ``seed``, each run's draws from the
run's generator (:meth:`vits_ref.envs.Environment.realise`).
"""

import numpy as np

from .. import _validate as val
from .base import REWARDS, Environment
from .rounds import Draw, RoundDraws

__all__ = ["HardInstance", "PoolEnvironment", "hard_instance", "pool"]

#: Largest ``zeta`` of the pool environment: features of scale ``zeta`` and quadratic
#: rewards of scale ``zeta^2`` stay far below :data:`vits_ref._validate.MAX_ABS_DATA`.
MAX_ZETA = 1e50


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
        if self.zeta > MAX_ZETA:
            raise ValueError(f"zeta must be <= {MAX_ZETA:g} (features scale like zeta and the "
                             f"quadratic rewards like zeta^2; beyond it the bandit's "
                             f"statistics overflow), got {self.zeta!r}")
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

    def round_draws(self):
        """A round: ``K`` pool indices (uniform integers, stream
        :data:`~vits_ref.kernels.bandit_streams.STREAM_CONTEXT_INDEX`), ``K d`` standard
        normals ``g`` (stream ``STREAM_CONTEXT_NOISE``), arm ``a`` ``zeta g_a +
        pool[i_a]``; then the reward model's draws (:meth:`Environment._reward_round`).
        Counter piece: :func:`vits_ref.kernels.bandit_streams.pool_round`."""
        from ..kernels import bandit_streams as ks

        K, d, zeta = self.n_arms, self.dim, self.zeta
        pool = np.ascontiguousarray(self.pool, dtype=float)
        if pool.shape != (self.pool_size, d):  # the compiled pass reads it unchecked
            raise ValueError(f"pool must have shape (pool_size, dim) = ({self.pool_size}, "
                             f"{d}), got {pool.shape}")

        def contexts(parts, n):
            # one compiled pass, in place on the normals (drawn into the caller's buffer
            # where it has one): zeta g + pool[i] by the counter-based round's body, the
            # sum realise always formed (products and sums commute exactly); NumPy's
            # gather, scale and add passed over the block three times
            from ..drivers import cpu

            idx, g = parts
            cpu.pool_block(pool, zeta, np.asarray(idx, dtype=np.int64), g)
            return g

        def counter():
            code = ks.REWARD_QUADRATIC if self.reward == "quadratic" else ks.REWARD_LINEAR
            return ks.pool_round, (np.ascontiguousarray(pool),
                                   np.ascontiguousarray(self.theta_star), float(zeta),
                                   float(self.noise_scale), code)

        return RoundDraws(
            (Draw("integers", (K,), high=self.pool_size, stream=ks.STREAM_CONTEXT_INDEX),
             Draw("normal", (K, d), stream=ks.STREAM_CONTEXT_NOISE, into_contexts=True)),
            contexts, **self._reward_round(counter))

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

    def round_draws(self):
        """A round: nothing drawn for the contexts (the same arms every round), then the
        reward model's draws (:meth:`Environment._reward_round`). Counter piece:
        :func:`vits_ref.kernels.bandit_streams.hard_round`."""
        from ..kernels import bandit_streams as ks

        arms = self.arms

        def contexts(parts, n):
            return np.broadcast_to(arms, (n,) + arms.shape).copy()

        def counter():
            code = ks.REWARD_LOGISTIC if self.reward == "logistic" else ks.REWARD_LINEAR
            return ks.hard_round, (np.ascontiguousarray(arms),
                                   np.ascontiguousarray(self.theta_star),
                                   float(self.noise_scale), code)

        return RoundDraws((), contexts, **self._reward_round(counter))

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
