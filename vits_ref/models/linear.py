"""Reward models as potentials ``U(theta) = -log posterior(theta) + const``.

The linear-Gaussian model keeps sufficient statistics, never the history
(docs/algorithms.md section 1)::

    U(theta) = eta/2 ( sum_s (phi_s theta - r_s)^2 + lam |theta|^2 )
    V = lam I + sum_s phi_s phi_s^T,  b = sum_s r_s phi_s
    grad U = eta (V theta - b),  hess U = eta V
"""

import numpy as np

from .. import _validate as val
from ..kernels.linear import POTENTIAL
from .base import Model


def general_prior(dim, prior_mean, prior_cov):
    """Validated ``(prior_mean, prior_cov)``; ``(None, None)`` for the default prior.

    ``prior_cov`` may be a vector (a diagonal covariance) or a matrix; ``prior_mean``
    defaults to 0 when only ``prior_cov`` is given.
    """
    return val.mean_and_cov(dim, prior_mean, prior_cov, "prior_mean", "prior_cov",
                            "the default prior is N(0, I/(lam eta))")


class Linear(Model):
    """Linear-Gaussian potential with prior ``N(0, I/(lam eta))`` and noise variance ``1/eta``.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d``.
    eta : float, default 1.0
        Inverse temperature (inverse noise variance).
    lam : float, default 1.0
        Ridge (prior precision in units of ``eta``).
    prior_mean, prior_cov : array or None
        A general Gaussian prior ``N(theta0, Sigma0)`` instead of ``N(0, I/(lam eta))``
        (``lam`` is then unused). It enters the statistics as ``V0 = inv(Sigma0)/eta``,
        ``b0 = V0 theta0`` (docs/algorithms.md section 1, general form), so the potential, its
        gradient ``eta (V theta - b)`` and every kernel are unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.models import Linear
    >>> m = Linear(2, eta=2.0, lam=1.0)
    >>> m.add(np.array([[1.0, 0.0]]), np.array([1.0]))
    >>> m.grad(np.zeros(2))
    array([-2.,  0.])
    """

    name = "linear"
    #: for vits_ref.load (vits_ref.inference.persist): the constructor's arguments and the
    #: state that add changes
    _persist_params = ("dim", "eta", "lam", "prior_mean", "prior_cov")
    _persist_state = ("V", "b", "sum_r2", "n_obs")
    #: the kernel bodies of this potential (``data = (eta V, eta b)``)
    potential = POTENTIAL

    def __init__(self, dim, eta=1.0, lam=1.0, prior_mean=None, prior_cov=None):
        self.dim = val.positive_int(dim, "dim")
        self.input_dim = self.dim
        self.eta, self.lam = val.eta_lam(eta, lam)
        self.prior_mean, self.prior_cov = general_prior(self.dim, prior_mean, prior_cov)
        if self.prior_cov is None:
            self.V = self.lam * np.eye(self.dim)
            self.b = np.zeros(self.dim)
        else:
            self.V = np.linalg.inv(self.prior_cov) / self.eta
            self.V = 0.5 * (self.V + self.V.T)
            self.b = self.V @ self.prior_mean
            if not (np.all(np.isfinite(self.V)) and np.all(np.isfinite(self.b))):
                raise ValueError("prior_cov (with eta and prior_mean) gives a prior precision "
                                 "inv(prior_cov)/eta that is not finite: its scale over- or "
                                 "underflows; rescale the problem")
        self._V0, self._b0 = self.V.copy(), self.b.copy()
        self.sum_r2 = 0.0
        self.n_obs = 0

    def _persist_check(self):
        """After vits_ref.load: a sum of squared rewards cannot be negative."""
        if self.sum_r2 < 0:
            raise ValueError(f"sum_r2 = {self.sum_r2!r} is negative (a sum of squares)")

    def prior_statistics(self):
        """The prior's share ``(V0, b0)`` of the statistics (copies): ``(lam I, 0)``, or
        ``(inv(Sigma0)/eta, V0 theta0)`` for a general prior; ``V - V0`` and ``b - b0`` are
        the data's."""
        return self._V0.copy(), self._b0.copy()

    def kernel_data(self, prior=True):
        """``(eta V, eta b)`` for the kernels; ``prior=False``: the likelihood's part only."""
        if prior:
            return self.eta * self.V, self.eta * self.b
        return self.eta * (self.V - self._V0), self.eta * (self.b - self._b0)

    def kernel_scratch(self, n_rows=1):
        """The linear potential needs no scratch."""
        return 0

    def add(self, features, rewards):
        """Add observations: ``features`` (n, d), ``rewards`` (n,)."""
        self._add_observed(*val.observations(features, rewards, self.dim))

    def _add_observed(self, features, rewards):
        self.V += features.T @ features
        self.b += features.T @ rewards
        self.sum_r2 += float(rewards @ rewards)
        self.n_obs += features.shape[0]

    def _state(self):
        """What :meth:`add` changes (for the engines' transactional update)."""
        return self.V.copy(), self.b.copy(), self.sum_r2, self.n_obs

    def _restore(self, state):
        V, b, self.sum_r2, self.n_obs = state
        self.V[...] = V
        self.b[...] = b

    def _theta(self, theta):
        theta = val.float_array(theta, "theta", finite=False)
        if theta.shape != (self.dim,):
            raise ValueError(f"theta must have shape ({self.dim},), got {theta.shape}")
        return theta

    def value(self, theta):
        """``U(theta)`` including the constant ``eta/2 sum r^2``."""
        theta = self._theta(theta)
        return 0.5 * self.eta * (theta @ self.V @ theta - 2 * theta @ self.b + self.sum_r2)

    def grad(self, theta):
        """``eta (V theta - b)``, shape ``(dim,)`` for ``theta`` of shape ``(dim,)``."""
        return self.eta * (self.V @ self._theta(theta) - self.b)

    def hess(self, theta=None):
        """``eta V`` (constant)."""
        return self.eta * self.V

    def grads_hessian(self, thetas, want_hessian=True):
        """Gradients at the rows of ``thetas`` (M, d) and the (constant) Hessian ``eta V``."""
        G = self.eta * (np.asarray(thetas, dtype=float) @ self.V - self.b)
        return G, (self.eta * self.V if want_hessian else None)

    def predict(self, theta, contexts):
        """``contexts @ theta``: the expected reward of each arm."""
        return np.asarray(contexts, dtype=float) @ theta

    def spawn(self, eta, lam):
        """A linear model of the same dimension and prior with no data."""
        return type(self)(self.dim, eta=eta, lam=lam, prior_mean=self.prior_mean,
                          prior_cov=self.prior_cov)

    def posterior(self):
        """The exact posterior ``(mean, cov) = (V^-1 b, inv(eta V))``."""
        from ..gaussian import linear_posterior_from_stats

        return linear_posterior_from_stats(self.V, self.b, eta=self.eta)
