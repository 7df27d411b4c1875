r"""The forward-noise schedule of a diffusion prior (DDPM; Ho et al. 2020).

Kveton et al. (NeurIPS 2024), section 3; docs/algorithms.md section 3.
"""

import numpy as np

from .. import _validate as val


class Schedule:
    r"""The schedule ``alpha_t``, ``beta_t``, ``abar_t``, ``btilde_t`` of a T-stage diffusion.

    Parameters
    ----------
    n_stages : int, default 100
        The number of diffusion stages ``T`` (100 in Kveton et al.).
    alpha : float or (T,) array, default 0.97
        ``alpha_t`` for ``t = 1..T``, each in (0, 1): one float for a constant schedule
        (0.97 in Kveton et al., so ``abar_T = 0.97^100 ~ 0.048``), or one value per stage.

    Attributes
    ----------
    alpha, beta, abar, btilde, btilde_raw : (T + 1,) ndarray
        Indexed by the stage ``t = 0..T`` (entry 0 is stage 0): ``alpha[0] = 1``,
        ``beta = 1 - alpha``, ``abar[t] = prod_{l <= t} alpha_l`` (``abar[0] = 1``), and for
        ``t >= 1`` the DDPM reverse variance
        ``btilde_raw[t] = (1 - abar[t-1]) / (1 - abar[t]) beta[t]`` (``btilde_raw[0] = 0``).
        ``btilde`` equals ``btilde_raw`` except ``btilde[1] = beta[1]`` (see Notes).

    Notes
    -----
    Forward process ``q(s_t | s_{t-1}) = N(sqrt(alpha_t) s_{t-1}, beta_t I)``, so
    ``s_t = sqrt(abar_t) s_0 + sqrt(1 - abar_t) eps``. The DDPM reverse step
    ``s_{t-1} | s_t ~ N(mu_t(s_t), btilde_t I)`` uses the posterior variance of
    ``q(s_{t-1} | s_t, s_0)``, which is exactly 0 at ``t = 1`` (``abar_0 = 1``). With that
    zero the last LaplaceDPS stage has an infinite prior precision and ignores the evidence
    (samples then converge to ``sqrt(alpha_1)`` times the least-squares
    estimate instead of the estimate, breaking Theorem 3 of Kveton et al.). ``btilde[1]`` is
    therefore clipped to ``beta[1]``, as Ho et al. (2020) do for their
    ``sigma_1^2 = beta_1`` choice; ``btilde_raw`` keeps the unclipped value.

    Examples
    --------
    >>> from vits_ref.diffusion import Schedule
    >>> s = Schedule(3, alpha=0.5)
    >>> s.abar
    array([1.   , 0.5  , 0.25 , 0.125])
    >>> float(s.btilde_raw[1]), float(s.btilde[1]), float(s.btilde[2])  # (1-.5)/(1-.25)*.5
    (0.0, 0.5, 0.3333333333333333)
    """

    def __init__(self, n_stages=100, alpha=0.97):
        T = val.positive_int(n_stages, "n_stages")
        if np.ndim(alpha) == 0:
            a = val.positive_float(alpha, "alpha")
            alphas = np.full(T, a)
        else:
            alphas = val.float_array(alpha, "alpha", ndim=1, shape=(T,))
        bad = ~((alphas > 0.0) & (alphas < 1.0))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"alpha must be in (0, 1) (alpha_t = 1 adds no noise, alpha_t = 0 "
                             f"erases the signal), got {float(alphas[i])!r}"
                             + (f" at stage {i + 1}" if np.ndim(alpha) else ""))
        self.n_stages = T
        self.alpha = np.concatenate(([1.0], alphas))
        self.beta = 1.0 - self.alpha
        self.abar = np.cumprod(self.alpha)
        raw = np.zeros(T + 1)
        raw[1:] = (1.0 - self.abar[:-1]) / (1.0 - self.abar[1:]) * self.beta[1:]
        self.btilde_raw = raw
        self.btilde = raw.copy()
        self.btilde[1] = self.beta[1]
        for name in ("alpha", "beta", "abar", "btilde", "btilde_raw"):
            getattr(self, name).setflags(write=False)

    def coefficients(self):
        """The per-stage scalars the compiled chains read, ``(T + 1, 6)``.

        Row ``t`` (``t >= 1``; row 0 is unused): ``abar_t``, ``sqrt(abar_t)``,
        ``sqrt(1 - abar_t)``, ``c0_t = sqrt(abar_{t-1}) beta_t / (1 - abar_t)``,
        ``c1_t = sqrt(alpha_t) (1 - abar_{t-1}) / (1 - abar_t)`` (the DDPM mean
        ``mu_t(s) = c0_t s0_hat + c1_t s``) and ``sqrt(btilde_t)`` (clipped), DPS's noise.
        """
        T = self.n_stages
        out = np.zeros((T + 1, 6))
        ab, al, be = self.abar, self.alpha, self.beta
        out[:, 0] = ab
        out[:, 1] = np.sqrt(ab)
        out[:, 2] = np.sqrt(1.0 - ab)
        out[1:, 3] = np.sqrt(ab[:-1]) * be[1:] / (1.0 - ab[1:])
        out[1:, 4] = np.sqrt(al[1:]) * (1.0 - ab[:-1]) / (1.0 - ab[1:])
        out[:, 5] = np.sqrt(self.btilde)
        return out

    def __repr__(self):
        a = self.alpha[1:]
        alpha = float(a[0]) if np.all(a == a[0]) else "array"
        return f"Schedule(n_stages={self.n_stages}, alpha={alpha!r})"
