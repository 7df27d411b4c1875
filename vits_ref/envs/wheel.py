r"""The wheel bandit of Riquelme, Tucker and Snoek (2018), "Deep Bayesian Bandits Showdown".

Section 4 of the paper: contexts ``x`` uniform in the unit disc of ``R^2``; five arms; an
exploration parameter ``delta`` in (0, 1). One arm pays ``N(mu_1, sigma^2)`` whatever the
context; inside the disc of radius ``delta`` the four others pay ``N(mu_2, sigma^2)``,
``mu_2 < mu_1``, so the constant arm is optimal there; outside it, the arm of ``x``'s
quadrant pays ``N(mu_3, sigma^2)``, ``mu_3 >> mu_1``, and is optimal, the three others
still paying ``mu_2``. The paper's values: ``mu_1 = 1.2``, ``mu_2 = 1.0``, ``mu_3 = 50``,
``sigma = 0.01``, ``delta`` in {0.5, 0.7, 0.9, 0.95, 0.99}. A large ``delta`` hides the
high rewards in a thin ring, which only an approximate posterior that keeps exploring
finds: the standard hard case for approximate posteriors.

Parameterisation (that of the authors' sampler, ``sample_wheel_bandit_data`` in their code):
arms 0-3 are the quadrant arms, arm 0 for ``x_1 > 0, x_2 > 0``, arm 1 for ``x_1 > 0,
x_2 <= 0``, arm 2 for ``x_1 <= 0, x_2 > 0``, arm 3 for ``x_1 <= 0, x_2 <= 0``; arm 4 is the
constant arm (the paper's ``a_1``); the high reward needs ``|x| >= delta``.
"""

import numpy as np

from .. import _validate as val
from .base import Environment
from .disjoint import decode, encode
from .rounds import Draw, RoundDraws

__all__ = ["WheelBandit", "wheel"]

#: The arms: four quadrant arms, then the constant arm.
N_ARMS = 5
CONSTANT_ARM = 4


class WheelBandit(Environment):
    r"""The wheel bandit (Riquelme, Tucker and Snoek, 2018; module docstring).

    Parameters
    ----------
    delta : float, default 0.95
        The exploration parameter, in (0, 1): the radius inside which the constant arm is
        optimal.
    mu_constant, mu_small, mu_large : float, default 1.2, 1.0, 50.0
        ``mu_1`` (the constant arm), ``mu_2`` (a quadrant arm off its region) and ``mu_3``
        (a quadrant arm on it), with ``mu_small < mu_constant < mu_large``.
    noise_sd : float, default 0.01
        ``sigma``, the same for every arm.
    intercept : bool, default True
        Append a constant 1 to the context (the linear baselines of Riquelme et al. fit an
        intercept; without one no linear score can express the constant arm's mean).
    seed : int, SeedSequence, Generator or None
        Unused: the instance is fully specified (kept for the protocol).

    Notes
    -----
    A round draws ``(u_1, u_2) ~ U(0, 1)^2`` and sets ``x = sqrt(u_1) (cos 2 pi u_2,
    sin 2 pi u_2)``: uniform in the disc (the radius has density ``2 r``), the distribution
    of the authors' rejection sampler by a draw whose rows are chunk-safe; then one
    ``N(0, 1)`` per arm, ``rewards = means + sigma eps``. The reward is not linear in ``x``:
    the linear engines use the context ``(x_1, x_2, 1)`` as given, in the disjoint encoding
    (:mod:`vits_ref.envs.disjoint`: one linear score per arm, ``d = 5 p``), as the paper's
    linear baselines do. :meth:`expected_reward` reads ``x`` back from the arm features.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> env = vr.envs.wheel(delta=0.5)
    >>> env.dim, env.n_arms
    (15, 5)
    >>> x = np.array([[0.0, 0.1], [0.6, 0.6], [0.6, -0.6], [-0.6, 0.6], [-0.6, -0.6]])
    >>> env.wheel_means(x).tolist()[:2]
    [[1.0, 1.0, 1.0, 1.0, 1.2], [50.0, 1.0, 1.0, 1.0, 1.2]]
    """

    name = "wheel"

    def __init__(self, delta=0.95, mu_constant=1.2, mu_small=1.0, mu_large=50.0,
                 noise_sd=0.01, intercept=True, seed=None):
        delta = val.positive_float(delta, "delta")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        mus = [float(val.float_array(m, name, ndim=0))
               for m, name in ((mu_constant, "mu_constant"), (mu_small, "mu_small"),
                               (mu_large, "mu_large"))]
        if not mus[1] < mus[0] < mus[2]:
            raise ValueError(f"the means must satisfy mu_small < mu_constant < mu_large, got "
                             f"mu_small={mus[1]!r}, mu_constant={mus[0]!r}, "
                             f"mu_large={mus[2]!r}")
        if not isinstance(intercept, (bool, np.bool_)):
            raise TypeError(f"intercept must be True or False, got {intercept!r}")
        self.delta = delta
        self.mu_constant, self.mu_small, self.mu_large = mus
        self.noise_scale = val.noise_sd(noise_sd, "noise_sd")
        self.intercept = bool(intercept)
        self.n_features = 3 if self.intercept else 2
        super().__init__(N_ARMS * self.n_features, N_ARMS, "linear", seed)

    def _build(self, rng):
        pass  # the instance is the arguments: nothing random

    # -- reward model ----------------------------------------------------------------------
    def wheel_means(self, x):
        """Expected rewards of the five arms at points ``x`` (..., 2) of the disc -> (..., 5)."""
        x = np.asarray(x, dtype=float)
        means = np.full(x.shape[:-1] + (N_ARMS,), self.mu_small)
        means[..., CONSTANT_ARM] = self.mu_constant
        right, up = x[..., 0] > 0, x[..., 1] > 0
        quadrant = np.where(right, np.where(up, 0, 1), np.where(up, 2, 3))
        far = np.hypot(x[..., 0], x[..., 1]) >= self.delta
        np.put_along_axis(means, quadrant[..., None],
                          np.where(far, self.mu_large, self.mu_small)[..., None], axis=-1)
        return means

    def expected_reward(self, contexts):
        """Expected rewards for arm features ``(..., 5, d)`` -> ``(..., 5)`` (:meth:`wheel_means`
        of the context read back from arm 0's block)."""
        return self.wheel_means(decode(contexts, self.n_features)[..., :2])

    # -- a run's draws: the points, then the arms' noise ------------------------------------
    def round_draws(self):
        """A round: two uniforms ``(u, v)``, the point ``sqrt(u) (cos 2 pi v, sin 2 pi v)``
        (uniform in the disc: the polar inverse-CDF draw, chunk-safe, where the authors'
        sampler rejects points of the square), in the disjoint encoding; then one normal
        per arm, ``reward = mean + noise_sd eps``. No counter piece."""
        intercept, noise = self.intercept, self.noise_scale

        def contexts(parts, n):
            u = parts[0]
            r, phi = np.sqrt(u[:, 0]), 2.0 * np.pi * u[:, 1]
            cols = [r * np.cos(phi), r * np.sin(phi)] + ([np.ones(n)] if intercept else [])
            return encode(np.stack(cols, axis=1), N_ARMS)

        def rewards(contexts, means, parts):
            return means + noise * parts[0]

        return RoundDraws((Draw("uniform", (2,)),), contexts, (Draw("normal", (N_ARMS,)),),
                          rewards)

    def _params(self):
        return {"delta": self.delta, "mu_constant": self.mu_constant,
                "mu_small": self.mu_small, "mu_large": self.mu_large,
                "noise_sd": self.noise_scale, "intercept": self.intercept, "seed": self.seed}


def wheel(delta=0.95, mu_constant=1.2, mu_small=1.0, mu_large=50.0, noise_sd=0.01,
          intercept=True, seed=None):
    """The wheel bandit of Riquelme et al. (2018) (see :class:`WheelBandit`).

    Examples
    --------
    >>> import vits_ref as vr
    >>> run = vr.envs.wheel(delta=0.9).realise(100, rng=0)
    >>> run.contexts.shape, run.means.shape
    ((100, 5, 15), (100, 5))
    """
    return WheelBandit(delta=delta, mu_constant=mu_constant, mu_small=mu_small,
                       mu_large=mu_large, noise_sd=noise_sd, intercept=intercept, seed=seed)
