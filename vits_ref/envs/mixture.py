"""Mixture-of-linear-Gaussians bandits: scenarios A and B of the VTS paper (Urteaga & Wiggins).

Each arm ``a`` pays ``y ~ sum_k pi_ak N(x w_ak, s2_ak)`` for the round's context ``x``; the
context is shared by the arms (Urteaga & Wiggins, section 2: "the given context x_{t+1}") and drawn
``U(0, 1)^d`` each round. A realisation's ``contexts`` (T, A, d) repeat it on every arm's
row, which is how the library's per-arm policies (:class:`vits_ref.VTS`,
:class:`vits_ref.PerArm`) read contexts: arm ``a`` is scored at row ``a``.

Scenarios (Urteaga & Wiggins, section 4, eqs. 18-19), ``d = 2``, two arms, unit variances:

- A: arm 0 = 0.5 N(x (0, 0), 1) + 0.5 N(x (1, 1), 1);
  arm 1 = 0.5 N(x (2, 2), 1) + 0.5 N(x (3, 3), 1).
- B: arm 0 = 0.5 N(x (1, 1), 1) + 0.5 N(x (2, 2), 1);
  arm 1 = 0.3 N(x (0, 0), 1) + 0.7 N(x (3, 3), 1).

Expected rewards are ``sum_k pi_ak x w_ak`` (exact regret). In A arm 1 is always best; in
B arm 1's mean ``2.1 (x1 + x2)`` beats arm 0's ``1.5 (x1 + x2)`` too, but its rewards are
bimodal and overlap arm 0's.
"""

import numpy as np

from .. import _validate as val
from .base import Environment
from .rounds import Draw, RoundDraws

__all__ = ["SCENARIOS", "MixtureEnvironment", "vts_scenario"]

#: The paper's scenarios: ``(weights (A, K), coefficients (A, K, d))``, unit variances.
SCENARIOS = {
    "A": (np.array([[0.5, 0.5], [0.5, 0.5]]),
          np.array([[[0.0, 0.0], [1.0, 1.0]], [[2.0, 2.0], [3.0, 3.0]]])),
    "B": (np.array([[0.5, 0.5], [0.3, 0.7]]),
          np.array([[[1.0, 1.0], [2.0, 2.0]], [[0.0, 0.0], [3.0, 3.0]]])),
}


class MixtureEnvironment(Environment):
    """Arms paying mixtures of linear-Gaussian experts on a shared uniform context.

    Parameters
    ----------
    weights : (A, K) array_like
        Mixture weights of each arm (rows sum to 1).
    coefs : (A, K, d) array_like
        Each expert's coefficients ``w_ak``.
    noise_sd : float or (A, K) array_like, default 1.0
        Each expert's noise standard deviation ``sqrt(s2_ak)``.
    seed : int, SeedSequence, Generator or None
        Unused by the instance (it is fully specified); kept for the protocol.
    label : str, optional
        A name for messages and results (e.g. ``"scenario B"``).

    Notes
    -----
    A run draws, per round, the context ``x ~ U(0, 1)^d`` (shared by the arms), then for
    every arm its expert ``z ~ Cat(pi_a)`` and its noise ``N(0, 1)``:
    ``rewards[t, a] = x w_{a z} + sd_{a z} eps``; only the played arm's is observed.
    """

    name = "mixture"

    def __init__(self, weights, coefs, noise_sd=1.0, seed=None, label=None):
        coefs = val.float_array(coefs, "coefs", ndim=3)
        A, K, d = coefs.shape
        weights = val.float_array(weights, "weights", ndim=2, shape=(A, K))
        if np.any(weights < 0) or not np.allclose(weights.sum(axis=1), 1.0, atol=1e-12):
            raise ValueError("weights must be non-negative with rows summing to 1")
        noise = val.float_array(np.broadcast_to(noise_sd, (A, K)), "noise_sd")
        if np.any(noise <= 0):
            raise ValueError("noise_sd must be > 0")
        self.weights, self.coefs, self.noise_sd = weights, coefs, noise
        self.label = label
        super().__init__(d, A, "linear", seed)

    def _build(self, rng):
        # the instance is the arguments: nothing random
        self.noise_scale = None

    def expected_reward(self, contexts):
        """``sum_k pi_ak x w_ak`` for the arms' rows: ``contexts`` (..., A, d) -> (..., A)."""
        x = np.asarray(contexts, dtype=float)
        mean_coef = np.einsum("ak,akd->ad", self.weights, self.coefs)
        return np.einsum("...ad,ad->...a", x, mean_coef)

    def round_draws(self):
        """A round: the shared context ``x ~ U(0, 1)^d``, then per arm a uniform ``u_a``
        (its expert ``z_a``, the first ``k`` with ``u_a < pi_a1 + ... + pi_ak``) and a
        normal ``eps_a``: ``rewards[t, a] = x w_{a z_a} + sd_{a z_a} eps_a``. No counter
        piece."""
        A, K, d = self.coefs.shape
        cum = np.cumsum(self.weights, axis=1)
        coefs, noise_sd = self.coefs, self.noise_sd

        def contexts(parts, n):
            return np.broadcast_to(parts[0][:, None, :], (n, A, d)).copy()

        def rewards(contexts, means, parts):
            u, eps = parts
            # every row of a round's contexts is its x: row 0, contiguous as x was drawn
            x = np.ascontiguousarray(contexts[:, 0, :])
            z = np.minimum((u[:, :, None] >= cum[None, :, :]).sum(axis=2), K - 1)  # (n, A)
            arms = np.arange(A)
            w = coefs[arms[None, :], z]                                          # (n, A, d)
            return np.einsum("td,tad->ta", x, w) + noise_sd[arms[None, :], z] * eps

        return RoundDraws((Draw("uniform", (d,)),), contexts,
                          (Draw("uniform", (A,)), Draw("normal", (A,))), rewards)

    def _params(self):
        return {"weights": self.weights.tolist(), "coefs": self.coefs.tolist(),
                "noise_sd": self.noise_sd.tolist(), "seed": self.seed, "label": self.label}

    def __repr__(self):
        what = f"{self.label!r}, " if self.label else ""
        return (f"MixtureEnvironment({what}A={self.n_arms}, K={self.weights.shape[1]}, "
                f"d={self.dim})")


def vts_scenario(name, seed=None):
    """Scenario ``"A"`` or ``"B"`` of the VTS paper (eqs. 18-19; module docstring).

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.vts_scenario("B")
    >>> run = env.realise(3, rng=0)
    >>> run.contexts.shape, run.means.shape
    ((3, 2, 2), (3, 2))
    >>> bool((run.means[:, 1] > run.means[:, 0]).all())
    True
    """
    key = val.choice(name, "name", tuple(SCENARIOS))
    weights, coefs = SCENARIOS[key]
    return MixtureEnvironment(weights, coefs, 1.0, seed=seed, label=f"scenario {key}")
