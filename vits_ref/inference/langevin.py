"""Langevin Monte Carlo Thompson sampling (LMC-TS, Xu et al. 2022)."""

import math

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..drivers.fused import FusedSpec, thompson_noise, thompson_noise_chunks
from ..kernels import langevin as klangevin
from ..kernels import logistic_bandit as klogb
from .base import Engine
from .schedules import schedule_code, step_size


class Langevin(Engine):
    """Unadjusted Langevin chain on the potential: ``theta <- theta - h grad U + sqrt(2h) eps``.

    Parameters
    ----------
    dim : int
        Parameter dimension.
    model : str or model object, default "linear"
        A name of :data:`vits_ref.models.MODELS` or a model object (see :class:`VITS`).
    eta, lam : float, default 1.0
        Inverse temperature and ridge of the potential.
    step_size : float, default 0.01
        ``h0``: constant step, or ``h_t = h0 / (eta t)`` under ``schedule="decayed"``.
    n_steps : int, default 10
        Langevin steps per update (10 or 50 in the VITS paper).
    schedule : {"decayed", "constant"}, default "decayed"
    seed : int, SeedSequence, Generator or None

    Notes
    -----
    The chain starts at ``theta ~ N(0, I/(lam eta))`` and is warm-started each round;
    a batch of observations gets one schedule of ``n_steps`` steps at ``h_t`` (``t`` the
    count after the batch), not one per observation
    (:meth:`vits_ref.inference.base.Engine.update`).
    The injected noise is ``sqrt(2 h_t)`` with the *current* step (the LMC-TS authors' code
    freezes it at the first step size). The engine keeps no Gaussian: :meth:`sample`
    returns the chain's current state for ``n = 1`` (what LMC-TS plays) and, for ``n > 1``,
    continues a copy of the chain ``n_steps`` steps between draws using the sampling
    stream, leaving the engine's chain untouched.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> eng = vr.Langevin(2, step_size=0.01, n_steps=10, seed=0)
    >>> eng.update(np.eye(2), np.ones(2)).sample(1).shape
    (1, 2)
    """

    name = "LMC-TS"
    #: what :meth:`update` changes in place (the transactional snapshot)
    _state_attrs = ("theta",)
    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("theta",)

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, step_size=0.01, n_steps=10,
                 schedule="decayed", seed=None):
        self.step_size = val.positive_float(step_size, "step_size")
        self.n_steps = val.positive_int(n_steps, "n_steps")
        self.schedule = val.choice(schedule, "schedule", ("constant", "decayed"))
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        start = self._prior_start()
        z = self._rng_update.standard_normal(self.dim)
        self.theta = (z / math.sqrt(self.lam * self.eta) if start is None
                      else start[0] + start[1] @ z)
        self._steps = cpu.langevin_steps(self.model.potential)
        self._g = np.empty(self.dim)
        self._H = np.empty((1, 1))  # the gradient hook leaves it untouched
        self.diagnostics.update(step_size=None, n_steps=0)

    def _params(self):
        return {**super()._params(), "step_size": self.step_size, "n_steps": self.n_steps,
                "schedule": self.schedule}

    def _h(self):
        return step_size(self.schedule, self.step_size, self.eta, max(self.model.n_obs, 1))

    def _run(self, theta, rng):
        eps = rng.standard_normal((self.n_steps, self.dim))
        h = self._h()
        self._steps(theta, self.model.kernel_data(), eps, h, self._g, self._H,
                    self.model.kernel_scratch(1))
        return h

    def fused(self, kl=False):
        """The fused loop's spec on the linear (:data:`vits_ref.kernels.langevin.PIECE`) or
        logistic model (:data:`vits_ref.kernels.logistic_bandit.LANGEVIN_PIECE`) with the
        default prior, else None."""
        code = schedule_code(self.schedule)
        kind = self._fused_model()
        if kind is None or code is None:
            return None
        piece = klangevin.PIECE if kind == "linear" else klogb.LANGEVIN_PIECE
        sched, h0, eta, S = self.schedule, self.step_size, self.eta, self.n_steps
        return FusedSpec(
            piece=piece,
            params=klangevin.LangevinParams(schedule=code, eta=self.eta, lam=self.lam,
                                            h0=self.step_size),
            draw=lambda seed, T, d: thompson_noise(seed, T, d, select=False, n_steps=S),
            draw_chunks=lambda seed, T, d, c: thompson_noise_chunks(seed, T, d, c,
                                                                    select=False, n_steps=S),
            step_size=lambda rnd: step_size(sched, h0, eta, rnd), n_draws_per_round=S,
            binary_rewards=piece is klogb.LANGEVIN_PIECE)

    def _refit(self, features, rewards):
        h = self._run(self.theta, self._rng_update)
        self.diagnostics.update(step_size=h, n_steps=self.n_steps)
        self._check_finite(h, self.theta)

    def _sample(self, n):
        out = np.empty((n, self.dim))
        out[0] = self.theta
        chain = self.theta.copy()
        for i in range(1, n):
            h = self._run(chain, self._rng_sample)
            self._check_finite(h, chain)
            out[i] = chain
        return out
