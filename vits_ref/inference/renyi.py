r"""Rényi variational inference: a Gaussian fitted by Adam on the Monte Carlo Rényi bound.

Li & Turner (2016), "Rényi divergence variational inference", eqs. (13)-(14); its Rényi
appendix, appendix C (the appendix's bandit's inner loop) and eq. (68) (the bound);
docs/algorithms.md section 6. The compiled steps are :mod:`vits_ref.kernels.renyi`.
"""

import warnings

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..errors import DivergenceError
from .base import GaussianEngine


class RenyiVI(GaussianEngine):
    r"""Gaussian ``q = N(mu, L L^T)`` maximising the Monte Carlo Rényi bound, by Adam.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d``.
    model : str or model object, default "linear"
        The potential ``U = -log p(data, theta) + const``: a name of
        :data:`vits_ref.models.MODELS` (``"linear"``, ``"logistic"``, ...) or a model object
        (e.g. :class:`vits_ref.models.mixture_prior.MixturePrior`, the Rényi bandit's arm
        model). Every other argument is keyword-only (the engines' common order, ``eta``
        and ``lam`` first; keywords keep ``alpha`` from being read as ``eta``).
    eta, lam : float, default 1.0
        Inverse temperature and ridge of the model (prior ``N(0, I/(lam eta))`` for the
        default linear and logistic models).
    alpha : float, default 0.5
        Rényi order ``alpha >= 0``. ``alpha = 1`` is the KL / ELBO case (uniform weights,
        handled exactly); ``alpha < 1`` is mass-covering, ``alpha > 1`` mode-seeking;
        ``alpha = 0`` is the importance-weighted bound ``log mean_j w_j`` (Burda et al.).
    n_mc : int, default 300
        Monte Carlo draws ``M`` per step (300 in appendix C).
    n_steps : int, default 10
        Adam steps per :meth:`update` (10 in appendix C).
    step_size : float, default 2e-2
        Adam's step size, its "learning rate" (2e-2 in appendix C). Read at each
        :meth:`update`, so it may be lowered between updates (a schedule; the tests finish
        at 1e-3 to shrink the Monte Carlo jitter), as may ``n_steps``. Named ``step_size``
        as in every engine (formerly ``learning_rate``).
    betas : (float, float), default (0.9, 0.999)
        Adam's moment decay rates ``(b1, b2)`` in ``[0, 1)`` (Kingma & Ba's defaults).
    adam_eps : float, default 1e-8
        Adam's ``eps``.
    init_mean, init_cov : array or None
        The starting ``q`` (``init_cov`` a matrix or the diagonal as a vector; ``init_mean``
        defaults to 0). Default: the model's prior, ``N(0, I/(lam eta))`` or the model's
        ``(prior_mean, prior_cov)``. Appendix C starts every arm at ``N(25, 1e-8)``.
    learning_rate : float, optional
        Deprecated former name of ``step_size`` (accepted for one release, with a
        ``DeprecationWarning``); so is the attribute ``learning_rate``.
    seed : int, SeedSequence, Generator or None
        Seeds the two streams: Thompson draws (:meth:`sample`) and the steps' draws.

    Notes
    -----
    The family is parameterised by ``mu``, the strict lower triangle of ``L`` and
    ``log diag(L)`` (so the diagonal stays positive). With ``theta_j = mu + L eps_j``,
    ``eps_j ~ N(0, I)``, ``log w_j = -U(theta_j) - log q(theta_j)`` and

    .. math::

        \hat L_\alpha = \frac{1}{1-\alpha}\log\frac1M\sum_{j=1}^M w_j^{1-\alpha},\qquad
        \nabla\hat L_\alpha = \sum_j \hat w_j\,\nabla\log w_j,\quad
        \hat w = \mathrm{softmax}\big((1-\alpha)\log w\big)

    (Li & Turner eqs. 13-14; the appendix's eq. 68, whose integral is estimated by draws
    from ``q``). ``\log w_j`` and ``\hat L_\alpha`` are log-sum-exp stable. Each
    :meth:`update` appends the observations and runs ``n_steps`` Adam steps on
    ``-\hat L_\alpha``, each with fresh draws from the update stream; Adam's moments and
    step count persist across updates (warm start), as in appendix C's bandit loop. The
    exact bound satisfies ``L_alpha = log p(data) - D_alpha(q || p(theta | data))``: for
    a Gaussian posterior (``model="linear"``) its maximiser in the Gaussian family is the
    posterior itself for every ``alpha > 0`` (``tests/test_renyi_vi.py`` checks that
    alpha = 0.5, 1 and 2 converge there). For ``alpha != 1`` the Monte Carlo bound is
    biased (by ``O(1/M)``) and so is its gradient's zero; ``alpha = 1`` is unbiased.

    ``diagnostics`` (:class:`~vits_ref.inference.base.Diagnostics`): ``n_obs``,
    ``step_size`` (Adam's step size), ``n_steps``, ``bound`` and ``ess`` (the Monte Carlo
    bound, up to the potential's constant, and the weights' effective sample size
    ``1/sum w^2``, at the start of the update's last step), ``total_steps`` (Adam's step
    count ``t``; formerly ``adam_steps``, still readable with a DeprecationWarning).

    A non-finite bound, gradient or state raises :class:`vits_ref.DivergenceError`
    (naming the engine, the round and the step size) and leaves the engine as it was
    before the update: its ``q``, Adam state, random stream and the model's data.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 2)); r = X @ [1.0, -0.5] + rng.standard_normal(50)
    >>> eng = vr.RenyiVI(2, alpha=1.0, n_steps=1000, seed=1).update(X, r)
    >>> bool(eng.kl_to_posterior() < 0.01)
    True
    """

    #: what vits_ref.load puts back after construction: q's parameters and factor, Adam's
    #: state, the last update's trace (with Engine's streams and model)
    _persist_state = ("_P", "_L", "_m", "_v", "_t", "trace")
    _persist_growing = ("trace",)

    def __init__(self, dim, model="linear", *, eta=1.0, lam=1.0, alpha=0.5, n_mc=300,
                 n_steps=10, step_size=2e-2, betas=(0.9, 0.999), adam_eps=1e-8,
                 init_mean=None, init_cov=None, learning_rate=None, seed=None):
        self.alpha = val.positive_float(alpha, "alpha", allow_zero=True)
        self.name = f"Renyi-VI (alpha={self.alpha:g})"
        self.n_mc = val.positive_int(n_mc, "n_mc")
        self.n_steps = val.positive_int(n_steps, "n_steps")
        step_size = val.renamed(step_size, learning_rate, "step_size", "learning_rate", 2e-2)
        self.step_size = val.positive_float(step_size, "step_size")
        self.betas = _betas(betas)
        self.adam_eps = val.positive_float(adam_eps, "adam_eps")
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        d = self.dim
        self.init_mean, self.init_cov = _init(d, init_mean, init_cov)
        if self.init_cov is not None:
            mean, L = self.init_mean, np.linalg.cholesky(self.init_cov)
        else:
            start = self._prior_start()
            if start is None:  # N(0, I/(lam eta))
                mean, L = np.zeros(d), np.eye(d) / np.sqrt(self.lam * self.eta)
            else:
                mean, L = start
        self._P = np.zeros((d + 1, d))
        self._P[0] = mean
        self._P[1:] = np.tril(L, -1) + np.diag(np.log(np.diag(L)))
        self._L = np.tril(L).copy()
        # Adam's state (first and second moments, step count): persists across updates
        self._m = np.zeros_like(self._P)
        self._v = np.zeros_like(self._P)
        self._t = np.zeros(1)
        self._scratch = cpu.renyi_scratch(d, self.n_mc)
        self._steps = cpu.renyi_steps(self.model.potential)
        self.trace = np.empty((0, 2))
        self.diagnostics.update(step_size=None, n_steps=0, bound=None, ess=None,
                                total_steps=0)

    def _params(self):
        return {**super()._params(), "alpha": self.alpha, "n_mc": self.n_mc,
                "n_steps": self.n_steps, "step_size": self.step_size,
                "betas": self.betas, "adam_eps": self.adam_eps,
                "init_mean": None if self.init_cov is None else self.init_mean,
                "init_cov": self.init_cov}

    @property
    def learning_rate(self):
        """Deprecated: :attr:`step_size` (Adam's step size), under its former name."""
        warnings.warn("RenyiVI.learning_rate is deprecated and will be removed in the next "
                      "release: use step_size", DeprecationWarning, stacklevel=2)
        return self.step_size

    @learning_rate.setter
    def learning_rate(self, value):
        warnings.warn("RenyiVI.learning_rate is deprecated and will be removed in the next "
                      "release: use step_size", DeprecationWarning, stacklevel=2)
        self.step_size = value

    # -- pickling (worker processes of vits_ref.bandit.simulate): the compiled steps are rebuilt
    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_steps"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._steps = cpu.renyi_steps(self.model.potential)

    # -- protocol -----------------------------------------------------------------------
    def _refit(self, features, rewards):
        # the steps run in place on q and Adam's state: a DivergenceError is rolled back by
        # Engine.update's transaction (q, Adam state, streams, the model's observations)
        S, M, d = self.n_steps, self.n_mc, self.dim
        eps = self._rng_update.standard_normal((S, M, d))
        P, m, v, t = self._P, self._m, self._v, self._t
        trace = np.empty((S, 2))
        b1, b2 = self.betas
        ok = self._steps(self.alpha, P, self.model.kernel_data(), eps, self.step_size,
                         b1, b2, self.adam_eps, (m, v, t), self._scratch,
                         self.model.kernel_scratch(M), trace)
        if not ok:
            raise DivergenceError(
                self.name, self.model.n_obs, self.step_size,
                detail="The step size is Adam's step_size (its learning rate); the Monte "
                       "Carlo Rényi bound, its gradient or Adam's second moment became "
                       "non-finite (a step size too large for the log-diagonal of L, draws "
                       "where the model's potential overflows, or gradients beyond 1e154, "
                       "whose squares overflow: features too large). The engine is "
                       "unchanged.")
        self._L = self._scratch[0].copy()
        self.trace = trace
        self.diagnostics.update(step_size=self.step_size, n_steps=S,
                                bound=float(trace[-1, 0]), ess=float(trace[-1, 1]),
                                total_steps=int(t[0]))

    def _sample(self, n):
        eps = self._rng_sample.standard_normal((n, self.dim))
        return self._P[0] + eps @ self._L.T

    def _q_scale_tril(self):
        # the factor exp'd from P's log-diagonal: KL(q || p) without forming L L^T
        return self._L

    @property
    def mean(self):
        """The variational mean ``mu`` (a copy)."""
        return self._P[0].copy()

    @property
    def scale_tril(self):
        """The lower factor ``L`` of the covariance (a copy)."""
        return self._L.copy()

    @property
    def cov(self):
        """The variational covariance ``L L^T``."""
        return self._L @ self._L.T

    @property
    def params(self):
        """``P`` (d + 1, d): ``mu``, then ``L`` with ``log diag(L)`` on its diagonal (a copy)."""
        return self._P.copy()

    @property
    def adam_state(self):
        """``(m, v, t)``: Adam's moments (shaped like :attr:`params`) and step count (copies)."""
        return self._m.copy(), self._v.copy(), int(self._t[0])


def _betas(betas):
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise TypeError(f"betas must be a pair (b1, b2), got {betas!r}") from None
    out = []
    for name, b in (("betas[0]", b1), ("betas[1]", b2)):
        b = val.positive_float(b, name, allow_zero=True)
        if b >= 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {b}")
        out.append(b)
    return tuple(out)


def _init(dim, init_mean, init_cov):
    """Validated ``(init_mean, init_cov)``; ``(None, None)`` to start at the prior."""
    return val.mean_and_cov(dim, init_mean, init_cov, "init_mean", "init_cov",
                            "the default start is the model's prior")
