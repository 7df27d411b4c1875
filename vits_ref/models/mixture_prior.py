r"""Linear-Gaussian rewards under a Gaussian-mixture prior: the Rényi bandit's arm model.

Li & Turner's Rényi appendix models an arm's reward as ``p(o | s) = N(s x, Sigma_l)``
(appendix B, eqs. 48 and 66; ``x = 1`` for a multi-armed bandit) and gives each arm a
two-component prior (appendix C, Table 3). With noise variance ``1/eta`` and the prior
``sum_k w_k N(m_k, diag(v_k))``:

.. math::

    U(\theta) = \frac{\eta}{2}\sum_s (x_s\theta - r_s)^2
                - \log\sum_k w_k\,\mathcal N(\theta;\, m_k, \mathrm{diag}(v_k)) + \mathrm{const}.

The likelihood is kept as the sufficient statistics ``V = sum x x^T``, ``b = sum r x``
(no history); the kernels are :data:`vits_ref.kernels.renyi.MIXTURE_PRIOR`. The posterior
is a mixture too, with no closed form a Gaussian engine's ``kl_to_posterior`` could use.
Every engine runs on it; the Laplace engine, which takes the likelihood alone
(``kernel_data(prior=False)``) and adds a Gaussian prior term, uses the mixture's
moment-matched Gaussian ``N(prior_mean, prior_cov)``, not the mixture.
"""

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..kernels.renyi import MIXTURE_PRIOR
from .base import Model


class MixturePrior(Model):
    """Gaussian rewards ``r = x theta + noise`` (variance ``1/eta``), Gaussian-mixture prior.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d`` (also the features' size; 1 for a multi-armed bandit's
        arm, whose feature is the constant 1).
    means : (K, d) array
        Component means ``m_k``.
    variances : (K, d) array
        Component variances ``v_k > 0`` (diagonal covariances).
    weights : (K,) array or None
        Mixture weights ``w_k > 0`` (normalised here); None: equal weights.
    eta : float, default 1.0
        Inverse noise variance of the rewards (``1/Sigma_l`` in the appendix).
    lam : float, default 1.0
        Unused (the mixture replaces the ridge prior); kept for the model protocol.

    Attributes
    ----------
    prior_mean, prior_cov : ndarray
        The mixture's mean and covariance (moment-matched), where an engine that starts
        "at the prior" with a Gaussian starts.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.models.mixture_prior import MixturePrior
    >>> arm = MixturePrior(1, means=[[13.0], [20.0]], variances=[[1.5], [1.5]])
    >>> arm.prior_mean, arm.prior_cov   # 16.5 and 1.5 + 3.5^2
    (array([16.5]), array([[13.75]]))
    >>> arm.add(np.ones((2, 1)), np.array([10.0, 11.0]))
    >>> float(arm.grad(np.array([10.5]))[0]) < 0   # -grad U > 0: the prior pulls towards 13
    True
    """

    name = "mixture-prior"
    #: for vits_ref.load (vits_ref.inference.persist): the constructor's arguments and the
    #: state; the weights and their log constants too, normalised again by the constructor
    #: (not always to the same last bit)
    _persist_params = ("dim", "means", "variances", "weights", "eta", "lam")
    _persist_state = ("V", "b", "n_obs", "weights", "_logc")
    #: the kernel bodies of this potential (:data:`vits_ref.kernels.renyi.MIXTURE_PRIOR`)
    potential = MIXTURE_PRIOR

    def __init__(self, dim, means, variances, weights=None, eta=1.0, lam=1.0):
        self.dim = val.positive_int(dim, "dim")
        self.input_dim = self.dim
        self.eta = val.positive_float(eta, "eta")
        self.lam = val.positive_float(lam, "lam")
        self.means = val.float_array(means, "means", ndim=2, shape=(None, self.dim))
        K = self.means.shape[0]
        if K == 0:
            raise ValueError("means must have at least one component (row)")
        self.variances = val.float_array(variances, "variances", ndim=2, shape=(K, self.dim))
        if np.any(self.variances <= 0):
            raise ValueError("variances must be > 0")
        w = (np.full(K, 1.0 / K) if weights is None
             else val.float_array(weights, "weights", ndim=1, shape=(K,)))
        if np.any(w <= 0):
            raise ValueError("weights must be > 0")
        self.weights = w / w.sum()
        self._inv_var = 1.0 / self.variances
        # log w_k - 1/2 sum_i log(2 pi v_ki): each component's normalised log weight
        self._logc = np.log(self.weights) - 0.5 * np.sum(np.log(2 * np.pi * self.variances),
                                                         axis=1)
        self.prior_mean = self.weights @ self.means
        dev = self.means - self.prior_mean
        self.prior_cov = (np.diag(self.weights @ self.variances)
                          + (self.weights[:, None] * dev).T @ dev)
        self.V = np.zeros((self.dim, self.dim))
        self.b = np.zeros(self.dim)
        self.n_obs = 0
        self._scratch = (np.empty(K), np.empty(self.dim))
        self._H = np.empty((self.dim, self.dim))

    def kernel_data(self, prior=True):
        """``(eta V, eta b, means, 1/variances, log c)``; ``prior=False``: no components."""
        if prior:
            return (self.eta * self.V, self.eta * self.b, self.means, self._inv_var,
                    self._logc)
        d = self.dim
        return (self.eta * self.V, self.eta * self.b, np.zeros((0, d)), np.zeros((0, d)),
                np.zeros(0))

    def kernel_scratch(self, n_rows=1):
        """``(responsibilities (K,), ubar (d,))``: reused row by row, whatever ``n_rows``."""
        return self._scratch

    def add(self, features, rewards):
        """Add observations: ``features`` (n, d), ``rewards`` (n,)."""
        features, rewards = val.observations(features, rewards, self.dim)
        self.V += features.T @ features
        self.b += features.T @ rewards
        self.n_obs += features.shape[0]

    def _thetas(self, thetas):
        thetas = np.ascontiguousarray(thetas, dtype=np.float64)
        if thetas.ndim != 2 or thetas.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (M, {self.dim}), got {thetas.shape}")
        return thetas

    def value(self, theta):
        """``U(theta)`` (without the likelihood's constant ``eta/2 sum r^2``)."""
        theta = self._thetas(np.asarray(theta, dtype=float)[None, :])[0]
        return float(cpu.value(MIXTURE_PRIOR)(self.kernel_data(), theta, self._scratch))

    def grads_hessian(self, thetas, want_hessian=True):
        """Gradients at the rows of ``thetas`` (M, d) and the mean of the exact Hessians."""
        thetas = self._thetas(thetas)
        G = np.empty_like(thetas)
        H = np.empty((self.dim, self.dim))
        want = bool(want_hessian)
        cpu.grads_hessian(MIXTURE_PRIOR)(self.kernel_data(), thetas, want, G, H,
                                         self._scratch)
        return G, (H if want else None)

    def grad(self, theta):
        """``grad U(theta)``."""
        return self.grads_hessian(np.asarray(theta, dtype=float)[None, :], False)[0][0]

    def hess(self, theta):
        """The exact Hessian (indefinite between the prior's modes)."""
        return self.grads_hessian(np.asarray(theta, dtype=float)[None, :], True)[1]

    def predict(self, theta, contexts):
        """``contexts @ theta``: the expected reward of each arm."""
        return np.asarray(contexts, dtype=float) @ theta

    def spawn(self, eta, lam):
        """A model with the same prior and no data."""
        return MixturePrior(self.dim, self.means, self.variances, self.weights, eta=eta,
                            lam=lam)
