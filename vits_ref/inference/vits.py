"""VITS: Gaussian variational inference by Wasserstein gradient steps on a square root.

VITS paper (Clavier, Huix & Durmus, ICML 2024), Algorithms 1-3; docs/algorithms.md section 2.
"""

import math

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..drivers.fused import FusedSpec, thompson_noise, thompson_noise_chunks
from ..kernels import logistic_bandit as klogb
from ..kernels import vits as kvits
from ..kernels.vits import VARIANT_HF, VARIANT_HF_CV, VARIANT_I, VARIANT_II
from .base import GaussianEngine
from .schedules import (
    SCHEDULES,
    check_theoretical,
    schedule_code,
    step_size,
    theoretical_step,
)

VARIANTS = {"I": VARIANT_I, "II": VARIANT_II, "hessian_free": VARIANT_HF}
_NAMES = {"I": "VITS-I", "II": "VITS-II", "hessian_free": "VITS-II-HF"}


class VITS(GaussianEngine):
    """Variational Thompson-sampling posterior ``N(mu, B B^T)`` (VITS-I, VITS-II, Hessian-free).

    Parameters
    ----------
    dim : int
        Parameter dimension ``d``.
    variant : {"I", "II", "hessian_free"}, default "II"
        ``"I"``: exact ``inv(B)^T`` each step (O(d^3), LAPACK on the CPU); ``"II"``: the
        O(d^2)-storage recursion with ``C ~ inv(B)``; ``"hessian_free"``: VITS-II with ``A``
        estimated from gradients only (eq. 13).
    model : str or model object, default "linear"
        The reward model (the potential ``U``): a name of :data:`vits_ref.models.MODELS`
        or a model object such as ``vits_ref.models.MLP(20)`` (its ``dim`` parameters must
        equal ``dim``). Non-linear models run each step through the model's compiled
        ``grads_hessian`` and the same update body.
    eta, lam : float, default 1.0
        Inverse temperature and ridge; prior ``N(0, I/(lam eta))``.
    step_size : float, default 0.01
        ``h0``: the step (``constant``) or its scale (``decayed``: ``h_t = h0/(eta t)``).
        Ignored by the ``theoretical`` schedule.
    cov_step_size : float or None
        Separate ``h0`` for the square root ``(B, C)``; defaults to ``step_size`` (the
        authors' code allows two).
    n_steps : int, default 10
        ``K_t`` for the ``constant`` and ``decayed`` schedules.
    n_mc : int, default 1
        Monte Carlo draws per step, averaged (20 in the paper for Hessian-free).
    schedule : {"decayed", "constant", "theoretical"}, default "decayed"
        See :mod:`vits_ref.inference.schedules`.
    symmetrize : bool, default False
        Hessian-free only: use ``(A + A^T)/2``. Off by default to follow Algorithm 3; on,
        the estimator's variance is lower (see ``tests/test_vits.py``).
    control_variate : bool, default False
        Hessian-free only: estimate ``A`` from ``grad U(theta_j) - grad U(mu)`` instead of
        ``grad U(theta_j)`` (one more gradient per step for non-linear models). Unbiased
        like Algorithm 3's estimator since ``E[theta_j - mu] = 0``, without its noise term
        ``mean_j (theta_j - mu) grad U(mu)^T``, large while ``mu`` is far from the mode
        (the first rounds, where the plain estimator diverges). Off by default: not in the
        paper.
    horizon, R : int, float
        ``T`` and the sub-Gaussian constant, for the ``theoretical`` schedule.
    max_steps : int, default 10000
        Cap on ``K_t`` under the ``theoretical`` schedule (capped rounds are counted in
        ``diagnostics["capped_rounds"]``).
    seed : int, SeedSequence, Generator or None

    Notes
    -----
    Initialisation (Algorithm 1): ``B = I/sqrt(lam eta)``, ``C = sqrt(lam eta) I``,
    ``mu ~ N(0, I/(lam eta))``. Each :meth:`update` adds the observations then runs
    ``K_t`` steps warm-started from the current state; see :mod:`vits_ref.kernels.vits`
    for the step. A batch of observations gets one step schedule (``K_t`` steps at ``h_t``,
    ``t`` the count after the batch), not one per observation: see
    :meth:`vits_ref.inference.base.Engine.update`. For the linear model the fixed point
    of the square-root recursion is ``B B^T = inv(eta V)``, the exact posterior covariance.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 3)); r = X @ [1.0, -1.0, 0.5]
    >>> # h lmax(eta V) = 0.33; 20 draws per step keep the mean's Monte Carlo noise small
    >>> eng = vr.VITS(3, variant="II", step_size=0.005, schedule="constant", n_steps=3000,
    ...               n_mc=20, seed=1).update(X, r)
    >>> bool(eng.kl_to_posterior() < 0.05)
    True
    """

    #: what :meth:`update` changes in place (the transactional snapshot)
    _state_attrs = ("mu", "B", "C")
    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("mu", "B", "C")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, variant="II", step_size=0.01,
                 cov_step_size=None, n_steps=10, n_mc=1, schedule="decayed", symmetrize=False,
                 control_variate=False, horizon=None, R=1.0, max_steps=10000, seed=None):
        variant = val.choice(variant, "variant", tuple(VARIANTS))
        self.variant = variant
        self.name = _NAMES[variant]
        self.schedule = val.choice(schedule, "schedule", SCHEDULES)
        self.step_size = val.positive_float(step_size, "step_size")
        self.cov_step_size = (self.step_size if cov_step_size is None
                              else val.positive_float(cov_step_size, "cov_step_size"))
        self.n_steps = val.positive_int(n_steps, "n_steps")
        self.n_mc = val.positive_int(n_mc, "n_mc")
        if not isinstance(symmetrize, (bool, np.bool_)):
            raise TypeError(f"symmetrize must be a bool, got {type(symmetrize).__name__}")
        self.symmetrize = bool(symmetrize)
        if not isinstance(control_variate, (bool, np.bool_)):
            raise TypeError(f"control_variate must be a bool, got "
                            f"{type(control_variate).__name__}")
        if control_variate and variant != "hessian_free":
            raise ValueError("control_variate applies to variant='hessian_free' only")
        self.control_variate = bool(control_variate)
        self.variant_code = VARIANT_HF_CV if self.control_variate else VARIANTS[variant]
        self.R = val.positive_float(R, "R")
        self.max_steps = val.positive_int(max_steps, "max_steps")
        if self.schedule == "theoretical":
            if horizon is None:
                raise ValueError("horizon (the number of rounds T) is required by "
                                 "schedule='theoretical'")
            self.horizon = val.positive_int(horizon, "horizon")
        else:
            self.horizon = None if horizon is None else val.positive_int(horizon, "horizon")
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        start = self._prior_start()
        if start is None:
            s0 = math.sqrt(self.lam * self.eta)
            self.B = np.eye(self.dim) / s0
            self.C = np.eye(self.dim) * s0
            self.mu = self._rng_update.standard_normal(self.dim) / s0
        else:  # a general prior N(theta0, Sigma0): B = chol(Sigma0), C = inv(B)
            theta0, self.B = start
            self.C = np.linalg.inv(self.B)
            self.mu = theta0 + self.B @ self._rng_update.standard_normal(self.dim)
        if self.schedule == "theoretical" and self.model.name == "linear":
            check_theoretical(self.model.V, self.eta, self.horizon, self.R)
        # the posterior covariance never exceeds the prior's (the potential's Hessian, or
        # Gauss-Newton matrix, is at least the prior precision): a square root B larger
        # than 1e6 times the prior's largest standard deviation has left the stable range
        prior_sd = (1.0 / s0 if start is None
                    else math.sqrt(self.dim * float(np.max(np.diag(self.model.prior_cov)))))
        self._max_abs_B = 1e6 * prior_sd
        self._steps = cpu.vits_steps(self.model.potential)
        self._scratch = cpu.vits_scratch(self.dim, self.n_mc)
        self.diagnostics.update(step_size=None, n_steps=0, capped_rounds=0)

    def _params(self):
        return {**super()._params(), "variant": self.variant, "step_size": self.step_size,
                "cov_step_size": self.cov_step_size, "n_steps": self.n_steps,
                "n_mc": self.n_mc, "schedule": self.schedule, "symmetrize": self.symmetrize,
                "control_variate": self.control_variate,
                "horizon": self.horizon, "R": self.R, "max_steps": self.max_steps}

    def _steps_and_sizes(self):
        t = max(self.model.n_obs, 1)  # an empty first batch runs steps at the prior
        if self.schedule == "theoretical":
            if self.model.name != "linear":
                raise ValueError("schedule='theoretical' (appendix A.2) is defined for "
                                 "model='linear' only")
            try:
                h, K = theoretical_step(self.model.V, self.eta, self.horizon, self.R)
            except ValueError as err:
                raise self._diverged(None, str(err) + "; the features are too large") from None
            if K > self.max_steps:
                self.diagnostics["capped_rounds"] += 1
                K = self.max_steps
            return K, h, h
        return (self.n_steps, step_size(self.schedule, self.step_size, self.eta, t),
                step_size(self.schedule, self.cov_step_size, self.eta, t))

    def _refit(self, features, rewards):
        K, h_mu, h = self._steps_and_sizes()
        eps = self._rng_update.standard_normal((K, self.n_mc, self.dim))
        # one compiled step for every model: the potential's bodies, closed over
        ok = self._steps(self.variant_code, self.symmetrize, self.mu, self.B, self.C,
                         self.model.kernel_data(), eps, h_mu, h, self._scratch,
                         self.model.kernel_scratch(self.n_mc))
        self.diagnostics.update(step_size=h, n_steps=K)
        if not ok:
            self._check_finite(h, np.full(1, np.nan))
        self._check_finite(h, self.mu, self.B, self.C)
        big = float(np.abs(self.B).max())
        if big > self._max_abs_B:
            raise self._diverged(
                h, f"The square root B left its stable range: max |B| = {big:.3g} exceeds "
                   f"1e6 times the prior's standard deviation ({self._max_abs_B:.3g}); the "
                   f"covariance B B^T never exceeds the prior's.")

    def fused(self, kl=False):
        """The fused loop's spec on the linear or logistic model with the default prior,
        else None.

        The loop starts from the default prior ``N(0, I/(lam eta))`` and runs the
        ``constant`` or ``decayed`` schedule: :data:`vits_ref.kernels.vits.PIECE` on the
        linear model's statistics, :data:`vits_ref.kernels.logistic_bandit.VITS_PIECE` on
        the logistic model's history. Both fail a run at this engine's bound on
        ``max |B|``, where :meth:`update` raises.
        """
        code = schedule_code(self.schedule)
        kind = self._fused_model()
        if kind is None or code is None:
            return None
        params = kvits.VITSParams(variant=self.variant_code, symmetrize=self.symmetrize,
                                  schedule=code, eta=self.eta, lam=self.lam,
                                  h0_mu=self.step_size, h0=self.cov_step_size,
                                  max_abs_B=self._max_abs_B)
        piece = kvits.PIECE if kind == "linear" else klogb.VITS_PIECE
        sched, h0, eta = self.schedule, self.cov_step_size, self.eta
        S, M = self.n_steps, self.n_mc
        return FusedSpec(
            piece=piece, params=params,
            draw=lambda seed, T, d: thompson_noise(seed, T, d, n_steps=S, n_mc=M),
            draw_chunks=lambda seed, T, d, c: thompson_noise_chunks(seed, T, d, c,
                                                                    n_steps=S, n_mc=M),
            step_size=lambda rnd: step_size(sched, h0, eta, rnd),
            gaussian=piece is kvits.PIECE, n_draws_per_round=1 + S * M,
            binary_rewards=piece is klogb.VITS_PIECE,
            divergence_detail=(
                f"The state became non-finite or the square root B left its stable range "
                f"(max |B| above {self._max_abs_B:.3g}, 1e6 times the prior's standard "
                f"deviation; the covariance B B^T never exceeds the prior's)."))

    def _sample(self, n):
        eps = self._rng_sample.standard_normal((n, self.dim))
        return self.mu + eps @ self.B.T

    @property
    def mean(self):
        """The variational mean ``mu`` (a copy)."""
        return self.mu.copy()

    @property
    def cov(self):
        """The variational covariance ``B B^T``."""
        return self.B @ self.B.T

    @property
    def precision(self):
        """``C^T C`` (VITS-II's running approximation of ``inv(cov)``); ``inv(cov)`` for VITS-I."""
        if self.variant == "I":
            return np.linalg.inv(self.cov)
        return self.C.T @ self.C
