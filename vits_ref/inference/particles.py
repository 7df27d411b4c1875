r"""Particle engines: SVGD (Liu & Wang 2016) and online particle VI (the OPVI paper's OPVI).

Both move ``n_particles`` particles along the SVGD direction
(:func:`vits_ref.inference.svgd.phi`; compiled steps :func:`vits_ref.drivers.cpu.svgd_steps`, which
take the gradients from the model's compiled potential for all particles at once) and
follow the engine protocol of :mod:`~vits_ref.inference.base`: :meth:`~SVGD.sample` draws
particles with replacement, :attr:`~SVGD.mean` and :attr:`~SVGD.cov` are the particles' moments, and
:meth:`~SVGD.kl_to_posterior` (linear model) compares the Gaussian with those moments to
the exact posterior. The particles persist across updates (warm start), as does AdaGrad's
history.
"""

import math

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from . import svgd as _svgd
from .base import ParticleEngine

OPTIMIZERS = ("adagrad", "sgd")
#: AdaGrad of Liu & Wang's ``svgd.py``: ``alpha = 0.9`` (decay of the historical squared
#: gradient), ``fudge_factor = 1e-6``
ADAGRAD_ALPHA = 0.9
ADAGRAD_FUDGE = 1e-6
#: OPVI's prior weight ``eta_t = 6 / (pi^2 t^2)`` (the OPVI paper, section 3; sums to 1 over t)
PAPER_PRIOR_WEIGHT = "6/(pi^2 t^2)"


class SVGD(ParticleEngine):
    r"""Stein variational gradient descent on the full potential, warm-started each update.

    Parameters
    ----------
    dim : int
        Size of the features (the parameter dimension for ``"linear"``/``"logistic"``).
    model : str or model object, default "linear"
        A name of :data:`vits_ref.models.MODELS` or a model object.
    eta, lam : float, default 1.0
        Inverse temperature and ridge of the model.
    n_particles : int, default 100
        Number of particles ``n``.
    step_size : float, default 0.01
        AdaGrad's step (``x <- x + step phi / (1e-6 + sqrt(hist))``: every coordinate moves
        by about ``step_size`` per step, whatever the scale of ``phi``), or the plain ascent
        step ``x <- x + step phi`` with ``optimizer="sgd"``.
    n_steps : int, default 50
        SVGD steps per :meth:`update`.
    bandwidth : float or "median", default "median"
        The RBF bandwidth ``h`` or the median heuristic (recomputed at every step).
    repulsion : float, default 1.0
        Weight of the repulsive term (1 is SVGD).
    optimizer : {"adagrad", "sgd"}, default "adagrad"
        ``"adagrad"``: Liu & Wang's ``svgd.py`` (``hist = phi^2`` at the first step, then
        ``0.9 hist + 0.1 phi^2``; fudge factor 1e-6). It moves each coordinate by about
        ``step_size`` per step, so with a constant step the particles keep a jitter of that
        order around the fixed point; ``"sgd"`` converges to the fixed point itself when
        ``step_size`` is below ``2 / L`` (``L`` the Hessian's largest eigenvalue).
    form : {"auto", "loop", "gemm"}, default "auto"
        The direction's form (:func:`vits_ref.inference.svgd.choose_form`).
    seed : int, SeedSequence, Generator or None
        Seeds the two streams: :meth:`sample`'s draws and the initial particles.

    Notes
    -----
    The particles start as ``n`` draws of the prior: ``N(0, I/(lam eta))`` or the model's
    ``(prior_mean, prior_cov)``, or ``model.sample_prior(n, rng)`` where the model has it.
    Each :meth:`update` appends the observations and runs ``n_steps`` steps of

    .. math::

        x_i \leftarrow x_i + \epsilon\, \phi(x_i),\quad
        \phi(x_i) = \frac1n\sum_j\big[k(x_j, x_i)\nabla\log p(x_j)
                    + r\,\nabla_{x_j}k(x_j, x_i)\big]

    (Liu & Wang 2016, eq. 8; ``grad log p = -grad U``) with AdaGrad's scaling. A
    non-finite direction raises :class:`vits_ref.DivergenceError` and leaves the particles
    and AdaGrad's history as they were (the model keeps the observations).

    SVGD's fixed point underestimates the variance in higher dimension with few particles
    (Ba et al. 2021; ``tests/test_svgd.py`` measures it: at n = 100 on a standard Gaussian
    the particles' variance at the fixed point is 0.92 of the truth at d = 2, 0.43 at
    d = 10 and 0.086 at d = 50), so :meth:`kl_to_posterior` grows with ``d / n``.

    ``diagnostics`` (:class:`~vits_ref.inference.base.Diagnostics`): ``n_obs``,
    ``step_size``, ``n_steps``, ``bandwidth`` (the last step's ``h``), ``total_steps``
    (steps taken in all; formerly ``steps``, still readable with a DeprecationWarning).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 2)); r = X @ [1.0, -0.5] + rng.standard_normal(50)
    >>> eng = vr.SVGD(2, n_particles=100, n_steps=300, seed=1).update(X, r)
    >>> bool(np.allclose(eng.mean, eng.model.posterior()[0], atol=0.05))
    True
    """

    name = "SVGD"
    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("particles", "_hist", "_t")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, n_particles=100, step_size=0.01,
                 n_steps=50, bandwidth="median", repulsion=1.0, optimizer="adagrad",
                 form="auto", seed=None):
        self.n_particles = val.positive_int(n_particles, "n_particles")
        self.step_size = val.positive_float(step_size, "step_size")
        self.n_steps = val.positive_int(n_steps, "n_steps")
        self.bandwidth = bandwidth if isinstance(bandwidth, str) else float(
            val.positive_float(bandwidth, "bandwidth"))
        self._h = _svgd._bandwidth(bandwidth)
        self.repulsion = val.positive_float(repulsion, "repulsion", allow_zero=True)
        self.optimizer = val.choice(optimizer, "optimizer", OPTIMIZERS)
        self.form = val.choice(form, "form", _svgd.FORMS)
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        n, d = self.n_particles, self.dim
        self._gemm = _svgd._form(self.form, n, d) == "gemm"
        self._parallel = _svgd.use_parallel(n, d)
        self.particles = self._initial_particles()
        self._hist = np.zeros((n, d))
        self._t = 0  # steps taken (AdaGrad initialises its history at the first)
        self._G = np.empty((n, d))
        self._phi = np.empty((n, d))
        self._H = np.empty((1, 1))  # grads_hessian(want_hessian=False) leaves it untouched
        self._scratch = cpu.svgd_scratch(n, d)
        self.diagnostics.update(step_size=None, n_steps=0, bandwidth=None, total_steps=0)

    def _initial_particles(self):
        n, d = self.n_particles, self.dim
        sample_prior = getattr(self.model, "sample_prior", None)
        if sample_prior is not None:
            X = np.array(sample_prior(n, self._rng_update), dtype=float)
            if X.shape != (n, d):
                raise ValueError(f"model.sample_prior returned shape {X.shape}, "
                                 f"expected {(n, d)}")
            return np.ascontiguousarray(X)
        return self._prior_particles()

    def _params(self):
        return {**super()._params(), "n_particles": self.n_particles,
                "step_size": self.step_size, "n_steps": self.n_steps,
                "bandwidth": self.bandwidth, "repulsion": self.repulsion,
                "optimizer": self.optimizer, "form": self.form}

    # -- the steps ----------------------------------------------------------------------
    def _steps(self, data, n_steps, repulsion):
        """``n_steps`` steps on copies of the particles and history, committed if finite."""
        X, hist = self.particles.copy(), self._hist.copy()
        trace = np.empty(n_steps)
        alpha = ADAGRAD_ALPHA if self.optimizer == "adagrad" else -1.0
        ok = cpu.svgd_steps(self.model.potential, self._parallel)(
            X, data, n_steps, self._h, repulsion, self._gemm, self.step_size, alpha,
            ADAGRAD_FUDGE, self._t, hist, self._G, self._H, self._phi, self._scratch,
            self.model.kernel_scratch(self.n_particles), trace)
        if not ok or not np.all(np.isfinite(X)):
            raise self._diverged(
                self.step_size, "The SVGD direction became non-finite (a step too large for "
                                "the potential, or particles where it overflows); the "
                                "particles are unchanged.")
        self.particles, self._hist = X, hist
        self._t += n_steps
        self.diagnostics.update(step_size=self.step_size, n_steps=n_steps,
                                bandwidth=float(trace[-1]), total_steps=self._t)

    def _refit(self, features, rewards):
        self._steps(self.model.kernel_data(), self.n_steps, self.repulsion)

    # -- protocol (sample and mean: ParticleEngine's) -----------------------------------
    @property
    def cov(self):
        """The particles' covariance ``1/n sum_i (x_i - mean)(x_i - mean)^T`` (the moments
        of the particle measure; singular when ``n_particles <= dim``)."""
        Z = self.particles - self.mean
        return Z.T @ Z / self.n_particles


def batch_size(t, batch="power", batch_power=0.55, N=None, rho=None):
    r"""OPVI's mini-batch size ``B_t`` at round ``t >= 1`` (the OPVI paper).

    ``"power"``: ``ceil(t^batch_power)`` (the paper's experiments: ``t^0.55``);
    ``"saturating"``: ``ceil(N t^rho / (N + t^rho))`` (section 4, the schedule of its
    regret bound, which tends to ``N``). Always at least 1.
    """
    if batch == "power":
        return max(1, math.ceil(t ** batch_power))
    tr = t ** rho
    return max(1, math.ceil(N * tr / (N + tr)))


class OPVI(SVGD):
    r"""Online particle-based variational inference (the OPVI paper, Algorithm 1).

    Parameters
    ----------
    dim, model, eta, lam, n_particles, step_size, bandwidth, optimizer, form, seed
        As :class:`SVGD`.
    n_steps : int, default 1
        Steps per round (Algorithm 1 takes one).
    batch : {"power", "saturating"}, default "power"
        The mini-batch schedule :func:`batch_size`: ``ceil(t^batch_power)`` or
        ``ceil(N t^rho / (N + t^rho))``.
    batch_power : float, default 0.55
        The paper's exponent (section 5: "B_t = t^0.55 ... test to be the best setting").
    N, rho : float or None
        The saturating schedule's ``N`` (its limit, the paper's ``N_T``) and ``rho > 0``;
        required with ``batch="saturating"``.
    prior_weight : "6/(pi^2 t^2)" or float, default "6/(pi^2 t^2)"
        The prior's weight ``eta_t`` at round ``t``: the paper's ``6/(pi^2 t^2)``, or a
        constant ``>= 0`` (1: the plain posterior on the mini-batch).
    repulsion : float, default 0.1
        Weight of the repulsive term (the paper scales it by 0.1).

    Notes
    -----
    Round ``t`` (the ``t``-th :meth:`update`) appends the observations, draws a mini-batch
    of ``min(B_t, n_obs)`` observations uniformly without replacement from all those seen
    so far (our reading of "select samples for mini-batch B_t arbitrarily from N_T": in a
    bandit one observation arrives per round, so the batch cannot be the round's arrivals)
    from the engine's update stream, and runs ``n_steps`` steps along

    .. math::

        v_t(x_i) = \frac1n\sum_j\Big[k(x_j, x_i)\Big(\nabla\sum_{k\in B_t}\log p(d_k|x_j)
                   + \eta_t\nabla\log p_0(x_j)\Big) + 0.1\,\nabla_{x_j}k(x_j, x_i)\Big]

    (Algorithm 1: the summed, not rescaled, mini-batch log-likelihood; the prior weighted
    by ``eta_t``). The potential on the mini-batch comes from the model's hook
    ``minibatch_data(index, like_weight, prior_weight)`` (:mod:`vits_ref.models`); for the
    linear model, which keeps sufficient statistics only, the engine keeps the history
    itself (preallocated, doubling) and forms the mini-batch's statistics.

    ``diagnostics`` adds ``batch_size`` and ``prior_weight`` of the last round.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> eng = vr.OPVI(2, n_particles=20, seed=0)
    >>> eng.update(np.eye(2), np.ones(2)).diagnostics["batch_size"]
    1
    """

    name = "OPVI"
    #: what vits_ref.load puts back after construction (with SVGD's)
    _persist_state = ("round", "_history")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, n_particles=100, step_size=0.01,
                 n_steps=1, batch="power", batch_power=0.55, N=None, rho=None,
                 prior_weight=PAPER_PRIOR_WEIGHT, bandwidth="median", repulsion=0.1,
                 optimizer="adagrad", form="auto", seed=None):
        self.batch = val.choice(batch, "batch", ("power", "saturating"))
        self.batch_power = val.positive_float(batch_power, "batch_power")
        if self.batch == "saturating":
            if N is None or rho is None:
                raise ValueError("batch='saturating' needs N (the batch size's limit) and "
                                 "rho (its growth exponent), e.g. N=10000, rho=0.55")
            N = val.positive_float(N, "N")
            rho = val.positive_float(rho, "rho")
        self.N, self.rho = N, rho
        if isinstance(prior_weight, str):
            if prior_weight.replace(" ", "") != PAPER_PRIOR_WEIGHT.replace(" ", ""):
                raise ValueError(f"prior_weight must be {PAPER_PRIOR_WEIGHT!r} or a number "
                                 f">= 0, got {prior_weight!r}")
            self.prior_weight = PAPER_PRIOR_WEIGHT
        else:
            self.prior_weight = val.positive_float(prior_weight, "prior_weight",
                                                   allow_zero=True)
        super().__init__(dim, model=model, eta=eta, lam=lam, n_particles=n_particles,
                         step_size=step_size, n_steps=n_steps, bandwidth=bandwidth,
                         repulsion=repulsion, optimizer=optimizer, form=form, seed=seed)
        if hasattr(self.model, "minibatch_data"):
            self._history = None
        elif self.model.name == "linear":
            self._history = _LinearHistory(self.model)
        else:
            raise TypeError(f"OPVI needs the model hook minibatch_data(index, like_weight, "
                            f"prior_weight) (vits_ref.models); the {self.model.name!r} model "
                            f"has none")
        self.round = 0
        self.diagnostics.update(batch_size=None, prior_weight=None)

    def _params(self):
        return {**super()._params(), "batch": self.batch, "batch_power": self.batch_power,
                "N": self.N, "rho": self.rho, "prior_weight": self.prior_weight}

    def eta_t(self, t):
        """The prior's weight at round ``t``."""
        if self.prior_weight == PAPER_PRIOR_WEIGHT:
            return 6.0 / (math.pi ** 2 * t * t)
        return self.prior_weight

    def _refit(self, features, rewards):
        if self._history is not None:
            self._history.add(features, rewards)
        t = self.round + 1
        n_obs = self.model.n_obs
        B = min(batch_size(t, self.batch, self.batch_power, self.N, self.rho), n_obs)
        index = np.sort(self._rng_update.choice(n_obs, size=B, replace=False))
        w0 = self.eta_t(t)
        if self._history is not None:
            data = self._history.minibatch_data(index, 1.0, w0)
        else:
            data = self.model.minibatch_data(index, like_weight=1.0, prior_weight=w0)
        self._steps(data, self.n_steps, self.repulsion)
        self.round = t
        self.diagnostics.update(batch_size=B, prior_weight=w0)


class _LinearHistory:
    """The linear model's observations for OPVI's mini-batches (the model keeps statistics
    only): preallocated buffers that double when full.

    ``minibatch_data`` returns the linear potential's ``(eta V_B, eta b_B)`` for
    ``U = like_weight * eta/2 sum_{s in B} (x_s theta - r_s)^2 + prior_weight * (-log p0)``:
    ``V_B = like_weight X_B^T X_B + prior_weight V0``, ``b_B = like_weight X_B^T r_B +
    prior_weight b0`` with the prior's ``V0 = lam I`` (or ``inv(Sigma0)/eta``), ``b0 = V0
    theta0``.
    """

    #: OPVI's state: the buffers (which double when full) and the rows they hold
    _persist_state = ("X", "r", "n")
    _persist_growing = ("X", "r")
    _persist_bounds = (("n", "X", 0), ("n", "r", 0))

    def __init__(self, model, capacity=256):
        self.eta = model.eta
        self.V0, self.b0 = model.prior_statistics()
        self.X = np.empty((capacity, model.dim))
        self.r = np.empty(capacity)
        self.n = 0

    def add(self, features, rewards):
        need = self.n + features.shape[0]
        if need > self.X.shape[0]:
            cap = self.X.shape[0]
            while cap < need:
                cap *= 2
            X, r = np.empty((cap, self.X.shape[1])), np.empty(cap)
            X[:self.n], r[:self.n] = self.X[:self.n], self.r[:self.n]
            self.X, self.r = X, r
        self.X[self.n:need] = features
        self.r[self.n:need] = rewards
        self.n = need

    def minibatch_data(self, index, like_weight, prior_weight):
        XB, rB = self.X[index], self.r[index]
        V = like_weight * (XB.T @ XB) + prior_weight * self.V0
        b = like_weight * (XB.T @ rB) + prior_weight * self.b0
        return self.eta * V, self.eta * b
