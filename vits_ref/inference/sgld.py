"""Stochastic-gradient Langevin dynamics (Welling & Teh 2011): the particle papers' baseline.

The OPVI paper compares OPVI with "LD" at a fixed mini-batch of 20 and at full batch; this is
that baseline, as an engine of the common protocol (:mod:`~vits_ref.inference.base`).
"""

import math

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from .base import ParticleEngine


class SGLD(ParticleEngine):
    r"""Stochastic-gradient Langevin dynamics on mini-batches, several chains at once.

    Parameters
    ----------
    dim : int
        The features' size for a model name (as every engine), or the model's number of
        parameters for a model object.
    model : str or model object, default "linear"
        A name of :data:`vits_ref.models.MODELS` or a model object. The model must have the
        mini-batch hook ``minibatch_data(index, like_weight, prior_weight)``
        (:mod:`vits_ref.models`).
    eta, lam : float, default 1.0
        The model's inverse temperature and ridge.
    step_size : float, default 1e-3
        ``a``: the constant step, or the scale of the polynomial schedule.
    batch_size : int, default 20
        ``B``: observations per step (all of them while fewer have been seen).
    n_particles : int, default 1
        Independent chains, all advanced by every step.
    n_steps : int, default 1
        Steps per :meth:`update`.
    schedule : {"constant", "polynomial"}, default "constant"
        ``h_t = a`` or Welling & Teh's ``h_t = a (b + t)^-gamma`` (``t`` the number of
        steps taken so far, from 0).
    step_offset : float, default 1.0
        ``b`` of the polynomial schedule.
    step_decay : float, default 0.55
        ``gamma`` of the polynomial schedule; Welling & Teh require ``gamma in (0.5, 1]``
        for the step sizes to satisfy ``sum h_t = inf``, ``sum h_t^2 < inf``.
    init : (n_particles, dim) array or None
        Starting states. None: the model's ``init_particles(n, seed)`` if it has one, else
        draws from the prior ``N(0, I/(lam eta))`` (or the model's general prior).
    seed : int, SeedSequence, Generator or None

    Notes
    -----
    One step (Welling & Teh 2011, eq. 4) with ``N`` observations seen, a mini-batch ``S`` of
    ``B`` of them drawn uniformly without replacement, and ``z ~ N(0, I)``:

    .. math::

        \theta \leftarrow \theta - \frac{h_t}{2}\Big(\frac{N}{B}\sum_{i \in S}
            \nabla(-\log p(y_i | \theta)) + \nabla(-\log p_0(\theta))\Big) + \sqrt{h_t}\, z,

    i.e. ``theta - h_t/2 grad U_S + sqrt(h_t) z`` with ``U_S`` the model's
    ``minibatch_data(S, like_weight=N/B, prior_weight=1)`` potential, whose gradients come
    from the model's compiled ``grads_hessian`` on all chains at once. ``B >= N`` is
    full-batch unadjusted Langevin with step ``h/2``. There is no Metropolis correction:
    the stationary law carries an ``O(h)`` bias, and the mini-batch noise adds one of order
    ``h N^2 / B`` (Welling & Teh's argument that it vanishes as ``h_t -> 0``).

    :meth:`sample` draws ``n`` of the chains' current states (uniformly, with replacement,
    from the sampling stream); :attr:`mean` and :attr:`cov` are the chains' moments
    (``cov`` with ``ddof = 1``), so ``kl_to_posterior`` on the linear model measures their
    Gaussian moments against the exact posterior.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> x = vr.models.welling_teh_data(100, seed=0)
    >>> eng = vr.SGLD(2, model=vr.models.WellingTeh(), step_size=1e-2, n_particles=8,
    ...               n_steps=5, seed=0)
    >>> eng.update(np.empty((100, 0)), x).sample(3).shape  # x: the rewards, no features
    (3, 2)
    """

    name = "SGLD"
    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("particles", "t")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, step_size=1e-3, batch_size=20,
                 n_particles=1, n_steps=1, schedule="constant", step_offset=1.0,
                 step_decay=0.55, init=None, seed=None):
        self.step_size = val.positive_float(step_size, "step_size")
        self.batch_size = val.positive_int(batch_size, "batch_size")
        self.n_particles = val.positive_int(n_particles, "n_particles")
        self.n_steps = val.positive_int(n_steps, "n_steps")
        self.schedule = val.choice(schedule, "schedule", ("constant", "polynomial"))
        self.step_offset = val.positive_float(step_offset, "step_offset")
        self.step_decay = val.positive_float(step_decay, "step_decay", allow_zero=True)
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        if not callable(getattr(self.model, "minibatch_data", None)):
            raise TypeError(f"SGLD needs a model with the mini-batch hook minibatch_data("
                            f"index, like_weight, prior_weight); the {self.model.name!r} "
                            f"model has none")
        self.init = None if init is None else val.float_array(
            init, "init", ndim=2, shape=(self.n_particles, self.dim)).copy()
        self.particles = self._start() if self.init is None else self.init.copy()
        self.t = 0  # steps taken
        self._H = np.empty((1, 1))  # the gradient hook leaves it untouched
        self._grads = cpu.grads_hessian(self.model.potential)
        self.diagnostics.update(step_size=None, n_steps=0, batch_size=0)

    def _params(self):
        return {**super()._params(), "step_size": self.step_size,
                "batch_size": self.batch_size, "n_particles": self.n_particles,
                "n_steps": self.n_steps, "schedule": self.schedule,
                "step_offset": self.step_offset, "step_decay": self.step_decay,
                "init": self.init}

    def _start(self):
        init = getattr(self.model, "init_particles", None)
        if callable(init):
            return np.ascontiguousarray(init(self.n_particles, seed=self._rng_update),
                                        dtype=np.float64)
        return self._prior_particles()

    def step_size_at(self, t):
        """``h_t``: ``a``, or ``a (b + t)^-gamma`` under ``schedule="polynomial"``."""
        if self.schedule == "constant":
            return self.step_size
        return self.step_size * (self.step_offset + t) ** (-self.step_decay)

    def run(self, n_steps):
        """``n_steps`` SGLD steps on the data seen so far (what :meth:`update` runs)."""
        n_steps = val.positive_int(n_steps, "n_steps")
        N = self.model.n_obs
        B = min(self.batch_size, N)
        M, d = self.particles.shape
        G = np.empty((M, d))
        scratch = self.model.kernel_scratch(M)
        rng = self._rng_update
        h = self.step_size
        for _ in range(n_steps):
            if B == N:
                idx = np.arange(N)
            else:
                idx = rng.choice(N, size=B, replace=False)
            data = self.model.minibatch_data(idx, N / B if B else 0.0, 1.0)
            h = self.step_size_at(self.t)
            self._grads(data, self.particles, False, G, self._H, scratch)
            z = rng.standard_normal((M, d))
            self.particles -= 0.5 * h * G
            self.particles += math.sqrt(h) * z
            self.t += 1
            self._check_finite(h, self.particles)
        self.diagnostics.update(step_size=h, n_steps=n_steps, batch_size=B)
        return self

    def _refit(self, features, rewards):
        self.run(self.n_steps)

    @property
    def cov(self):
        """The chains' covariance (dim, dim), ``ddof = 1`` (zeros for one chain)."""
        if self.n_particles < 2:
            return np.zeros((self.dim, self.dim))
        return np.atleast_2d(np.cov(self.particles, rowvar=False))
