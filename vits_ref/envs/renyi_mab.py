"""The Rényi appendix's multi-armed bandit: three arms paying Gaussian mixtures (Table 4).

Li & Turner, appendix C, Table 4 ("MAB multi-modal generative process"): arm 1 pays
``0.97 N(10, 1) + 0.03 N(22, 1)``, arm 2 ``N(16, 3)``, arm 3 ``0.97 N(10, 1) + 0.03 N(10, 1)``
(the table's Sigma column read as variances, as Sigma is a covariance everywhere in the
appendix). Expected rewards 10.36, 16 and 10: arm 2 (index 1) is optimal, arm 1 has a rare
high mode. The arms are not contextual: every arm's feature is the constant 1 (``dim = 1``),
so the linear score ``x theta`` of a draw is the draw itself.
"""

import numpy as np

from .. import _validate as val
from .base import Environment
from .rounds import Draw, RoundDraws

__all__ = ["TABLE4", "MixtureArms", "renyi_mab"]

#: Appendix C, Table 4: per arm, the components ``(mean, variance, weight)``.
TABLE4 = (
    ((10.0, 1.0, 0.97), (22.0, 1.0, 0.03)),
    ((16.0, 3.0, 1.0),),
    ((10.0, 1.0, 0.97), (10.0, 1.0, 0.03)),
)


class MixtureArms(Environment):
    """A multi-armed bandit whose arms pay Gaussian mixtures; features are the constant 1.

    Parameters
    ----------
    arms : sequence of sequences of (mean, variance, weight)
        Each arm's mixture components (weights are normalised per arm).
    seed : int, SeedSequence, Generator or None
        Unused by the instance (the arms are fixed); kept for the environment protocol.

    Notes
    -----
    ``realise(T, rng)`` draws, for every round and arm, a component by its weight and a
    reward from it (arms independent, the reward of an arm that is not played is never
    observed). ``means`` are the mixtures' expectations, so regret is exact.

    Examples
    --------
    >>> from vits_ref.envs.renyi_mab import renyi_mab
    >>> env = renyi_mab()
    >>> env.arm_means
    array([10.36, 16.  , 10.  ])
    >>> env.realise(5, rng=0).rewards.shape
    (5, 3)
    """

    name = "mixture-arms"

    def __init__(self, arms=TABLE4, seed=None):
        comps = []
        for a, arm in enumerate(arms):
            arr = val.float_array(arm, f"arms[{a}]", ndim=2, shape=(None, 3))
            if arr.shape[0] == 0 or np.any(arr[:, 1] <= 0) or np.any(arr[:, 2] <= 0):
                raise ValueError(f"arms[{a}] needs at least one component, each with a "
                                 f"variance > 0 and a weight > 0")
            comps.append(arr)
        self.arms = tuple(tuple(map(tuple, c)) for c in comps)
        self._means = [c[:, 0] for c in comps]
        self._sds = [np.sqrt(c[:, 1]) for c in comps]
        self._weights = [c[:, 2] / c[:, 2].sum() for c in comps]
        self.arm_means = np.array([w @ m for w, m in zip(self._weights, self._means,
                                                         strict=True)])
        self.noise_scale = None  # rewards are drawn arm by arm (round_draws)
        super().__init__(1, len(comps), "linear", seed)

    def _build(self, rng):
        self.theta_star = np.ones(1)  # unused: expected rewards are the arms' means

    def expected_reward(self, contexts):
        """The arms' expected rewards, shape ``contexts.shape[:-1]`` (the last axis before
        the feature axis indexes the arms)."""
        contexts = np.asarray(contexts, dtype=float)
        return np.broadcast_to(self.arm_means, contexts.shape[:-1]).copy()

    def round_draws(self):
        """A round: nothing drawn for the (constant) features; then arm by arm, the
        component (a categorical draw with the arm's weights) and a normal: ``rewards[t,
        a] = m_{a c} + s_{a c} eps``. No counter piece."""
        K = self.n_arms
        comps, sds = self._means, self._sds

        def contexts(parts, n):
            return np.ones((n, K, 1))

        def rewards(contexts, means, parts):
            out = np.empty(means.shape)
            for a in range(K):
                comp = parts[2 * a]
                out[:, a] = comps[a][comp] + sds[a][comp] * parts[2 * a + 1]
            return out

        draws = []
        for w in self._weights:
            draws += [Draw("choice", (), p=w), Draw("normal", ())]
        return RoundDraws((), contexts, tuple(draws), rewards)

    def _params(self):
        return {"arms": self.arms, "seed": self.seed}

    def __repr__(self):
        return f"MixtureArms(n_arms={self.n_arms}, arm_means={self.arm_means.tolist()})"


def renyi_mab(seed=None):
    """The appendix C bandit (Table 4): :class:`MixtureArms` with :data:`TABLE4`."""
    return MixtureArms(TABLE4, seed=seed)
