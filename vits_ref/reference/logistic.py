"""Plain-NumPy reference of the logistic (Bernoulli-GLM) potential and its IRLS fit.

On a history ``X`` (n, d), ``y`` (n,) in {0, 1} (docs/algorithms.md section 2)::

    U(theta) = eta [ sum_s (log(1 + exp(z_s)) - y_s z_s) + lam/2 |theta|^2 ],  z = X theta
    grad U   = eta ( X^T (sigmoid(z) - y) + lam theta )
    hess U   = eta ( X^T diag(sigmoid'(z)) X + lam I )

One array expression per line of the algorithm; the stable scalar forms are the library's
single implementation, :mod:`vits_ref.gaussian.special` (``bernoulli_nll``, ``residual``,
``sigmoid_prime``, the ufuncs of the kernels' own bodies), so this reference differs from
the kernels (:mod:`vits_ref.kernels.logistic`) only in the order of its sums. IRLS is the
damped Newton iteration of :mod:`vits_ref.kernels.newton` on ``U`` plus a Gaussian prior
term ``1/2 theta^T P0 theta - b0^T theta``.

Examples
--------
>>> import numpy as np
>>> from vits_ref.reference import logistic
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((200, 3)); y = (rng.random(200) < 0.5).astype(float)
>>> status, it, theta, H = logistic.irls(X, y, 1.0, np.eye(3), np.zeros(3), np.zeros(3))
>>> G, _ = logistic.grads_hessian(X, y, theta[None, :], 1.0, 1.0)   # ridge lam = 1: P0 = I
>>> bool(status == logistic.CONVERGED and np.abs(G).max() < 1e-8)
True
"""

import numpy as np

from ..gaussian.special import bernoulli_nll, residual, sigmoid_prime
from ..kernels.newton import CONVERGED, FAILED, MAX_HALVINGS, MAX_ITER

__all__ = ["CONVERGED", "FAILED", "MAX_ITER", "grads_hessian", "irls", "prior_term",
           "value"]


def value(X, y, theta, eta, lam):
    """``U(theta) = eta (sum_s (log(1 + exp(x_s theta)) - y_s x_s theta) + lam/2 |theta|^2)``."""
    return eta * (bernoulli_nll(X @ theta, y).sum() + 0.5 * lam * (theta @ theta))


def grads_hessian(X, y, thetas, eta, lam):
    """Gradients of ``U`` at the rows of ``thetas`` (M, d) and the mean of their Hessians.

    ``G[j] = eta (X^T (sigmoid(X theta_j) - y) + lam theta_j)``,
    ``H = eta (X^T diag(mean_j sigmoid'(X theta_j)) X + lam I)``.
    """
    Z = X @ thetas.T                                  # (n, M)
    G = eta * (residual(Z, y[:, None]).T @ X + lam * thetas)        # (M, d)
    w = sigmoid_prime(Z).mean(axis=1)
    H = eta * (X.T @ (w[:, None] * X) + lam * np.eye(X.shape[1]))   # the n d^2 Gram product
    return G, H


def prior_term(P0, b0, theta):
    """``1/2 theta^T P0 theta - b0^T theta``: the Gaussian prior ``N(inv(P0) b0, inv(P0))``."""
    return theta @ (0.5 * (P0 @ theta) - b0)


def irls(X, y, eta, P0, b0, theta, tol=1e-8, max_iter=100):
    """IRLS (Newton form, step halving) for ``F = U(lam = 0) + prior_term(P0, b0, .)``.

    The iteration of :func:`vits_ref.kernels.newton.make_newton`: the gradient and
    Hessian at the iterate, a Cholesky factorisation (failure: :data:`FAILED`), converged
    when the last full Newton step ``|H^-1 grad| <= tol max(1, |theta|)``, else the Newton
    step halved until ``F`` does not rise beyond its rounding level. Returns
    ``(status, iterations, theta, H)`` with ``H = eta X^T diag(sigmoid'(X theta)) X + P0``
    at the returned ``theta`` (None if ``F`` was not finite).
    """
    def objective(t):
        return value(X, y, t, eta, 0.0) + prior_term(P0, b0, t)

    theta = np.array(theta, dtype=float)
    f = objective(theta)
    it, last = 0, np.inf
    while True:
        if not np.isfinite(f):
            return FAILED, it, theta, None
        G, H = grads_hessian(X, y, theta[None, :], eta, 0.0)
        g = G[0] + P0 @ theta - b0
        H = H + P0
        try:
            L = np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            return FAILED, it, theta, H
        if last <= tol * max(1.0, float(np.linalg.norm(theta))):
            return CONVERGED, it, theta, H
        if it >= max_iter:
            return MAX_ITER, it, theta, H
        step = -np.linalg.solve(L.T, np.linalg.solve(L, g))
        step_norm = float(np.linalg.norm(step))
        if not np.isfinite(step_norm):
            return FAILED, it, theta, H
        t, slack = 1.0, 1e-12 * (1.0 + abs(f))
        for _ in range(MAX_HALVINGS):
            trial = theta + t * step
            f_new = objective(trial)
            if f_new <= f + slack:
                break
            t *= 0.5
        theta, f, last = trial, f_new, step_norm
        it += 1
