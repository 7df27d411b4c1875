"""Reward models as potentials ``U(theta) = -log posterior(theta) + const``.

The linear-Gaussian model keeps sufficient statistics, never the history
(ALGORITHMS.md section 1)::

    U(theta) = eta/2 ( sum_s (phi_s theta - r_s)^2 + lam |theta|^2 )
    V = lam I + sum_s phi_s phi_s^T,  b = sum_s r_s phi_s
    grad U = eta (V theta - b),  hess U = eta V
"""

import numpy as np

from .. import _validate as val


class Linear:
    """Linear-Gaussian potential with prior ``N(0, I/(lam eta))`` and noise variance ``1/eta``.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d``.
    eta : float, default 1.0
        Inverse temperature (inverse noise variance).
    lam : float, default 1.0
        Ridge (prior precision in units of ``eta``).

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

    def __init__(self, dim, eta=1.0, lam=1.0):
        self.dim = val.positive_int(dim, "dim")
        self.input_dim = self.dim
        self.eta = val.positive_float(eta, "eta")
        self.lam = val.positive_float(lam, "lam")
        self.V = self.lam * np.eye(self.dim)
        self.b = np.zeros(self.dim)
        self.sum_r2 = 0.0
        self.n_obs = 0

    def add(self, features, rewards):
        """Add observations: ``features`` (n, d), ``rewards`` (n,)."""
        features, rewards = val.observations(features, rewards, self.dim)
        self.V += features.T @ features
        self.b += features.T @ rewards
        self.sum_r2 += float(rewards @ rewards)
        self.n_obs += features.shape[0]

    def value(self, theta):
        """``U(theta)`` including the constant ``eta/2 sum r^2``."""
        theta = np.asarray(theta, dtype=float)
        return 0.5 * self.eta * (theta @ self.V @ theta - 2 * theta @ self.b + self.sum_r2)

    def grad(self, theta):
        """``eta (V theta - b)``."""
        return self.eta * (self.V @ np.asarray(theta, dtype=float) - self.b)

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
        """A linear model of the same dimension with no data."""
        return Linear(self.dim, eta=eta, lam=lam)

    def posterior(self):
        """The exact posterior ``(mean, cov) = (V^-1 b, inv(eta V))``."""
        from ..gaussian import linear_posterior_from_stats

        return linear_posterior_from_stats(self.V, self.b, eta=self.eta)
