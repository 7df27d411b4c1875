r"""Plain-NumPy Rényi variational inference (Li & Turner 2016, appendix C).

The same algorithm as :mod:`vits_ref.kernels.renyi`, written with array expressions: the
yardstick the tests compare the compiled bodies against (to 1e-12) and the benchmark
(:mod:`vits_ref._bench.renyi`) times them against. ``q = N(mu, L L^T)`` is held as
``P`` (d + 1, d): ``P[0] = mu``, the strict lower triangle of ``P[1:]`` is that of ``L``
and its diagonal is ``log diag(L)``. With draws ``theta_j = mu + L eps_j``:

.. math::

    \log w_j = -U(\theta_j) + \log\det L + \tfrac12|\epsilon_j|^2 + \tfrac d2\log 2\pi,\qquad
    \hat L_\alpha = \tfrac{1}{1-\alpha}\log\tfrac1M\sum_j w_j^{1-\alpha},

    \nabla\hat L_\alpha = \sum_j \hat w_j \nabla\log w_j,\quad
    \hat w = \mathrm{softmax}((1-\alpha)\log w)

(docs/algorithms.md section 6). ``values_grads(thetas) -> (U (M,), G (M, d))`` gives the
potential and its gradients at the rows of ``thetas``: :func:`linear_values_grads`,
:func:`logistic_values_grads` and :func:`mixture_values_grads` build it for the linear,
logistic and mixture-prior potentials.

Examples
--------
>>> import numpy as np
>>> from vits_ref.reference import renyi
>>> vg = renyi.linear_values_grads(np.eye(2), np.zeros(2))  # U = |theta|^2/2: N(0, I)
>>> P = renyi.params_from(np.zeros(2), np.eye(2))           # q = N(0, I), the target
>>> eps = np.sqrt(2.0) * np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1]])  # mean 0, cov I
>>> bound, ess, grad = renyi.renyi_grad(0.5, P, eps, vg)
>>> # every w_j = int exp(-U) = 2 pi; these draws' gradients cancel exactly
>>> bool(np.isclose(bound, np.log(2 * np.pi))), bool(np.abs(grad).max() < 1e-15)
(True, True)
"""

import numpy as np

from ..gaussian.special import bernoulli_nll, residual

LOG_2PI = float(np.log(2.0 * np.pi))
#: Adam's defaults (Kingma & Ba 2015)
BETA1, BETA2, ADAM_EPS = 0.9, 0.999, 1e-8


def params_from(mean, L):
    """``P`` (d + 1, d) from a mean and a lower factor with a positive diagonal."""
    L = np.tril(np.asarray(L, dtype=float))
    P = np.zeros((L.shape[0] + 1, L.shape[0]))
    P[0] = mean
    P[1:] = np.tril(L, -1) + np.diag(np.log(np.diag(L)))
    return P


def factor(P):
    """``L`` from ``P``: the strict lower triangle of ``P[1:]`` and ``exp`` of its diagonal."""
    return np.tril(P[1:], -1) + np.diag(np.exp(np.diag(P[1:])))


def log_weights(P, eps, values_grads):
    """``(log w (M,), G (M, d))`` at the draws ``theta_j = mu + L eps_j``."""
    d = P.shape[1]
    L = factor(P)
    thetas = P[0] + eps @ L.T
    U, G = values_grads(thetas)
    logw = -U + np.sum(np.diag(P[1:])) + 0.5 * np.sum(eps * eps, axis=1) + 0.5 * d * LOG_2PI
    return logw, G


def bound_and_weights(alpha, logw):
    """``(bound, weights, ess)``: the Monte Carlo Rényi bound (log-sum-exp), the
    self-normalised weights and their effective sample size; ``alpha = 1``: the ELBO."""
    M = logw.shape[0]
    if alpha == 1.0:
        return logw.mean(), np.full(M, 1.0 / M), float(M)
    z = (1.0 - alpha) * logw
    mx = z.max()
    e = np.exp(z - mx)
    w = e / e.sum()
    return (mx + np.log(e.sum() / M)) / (1.0 - alpha), w, 1.0 / np.sum(w * w)


def renyi_bound(alpha, P, eps, values_grads):
    """The Monte Carlo Rényi bound at ``P`` with the draws ``eps`` (M, d)."""
    return bound_and_weights(alpha, log_weights(P, eps, values_grads)[0])[0]


def renyi_grad(alpha, P, eps, values_grads):
    """``(bound, ess, grad)``: ``grad`` (d + 1, d) is the gradient of ``-bound`` in ``P``.

    ``grad[0] = sum_j w_j G_j``; ``grad[1:]`` lower triangle ``sum_j w_j G_j eps_j^T`` with
    the diagonal ``L_ii (...)_ii - 1`` (the log-diagonal's chain rule and ``log det L``).
    """
    logw, G = log_weights(P, eps, values_grads)
    bound, w, ess = bound_and_weights(alpha, logw)
    L = factor(P)
    D = (w[:, None] * G).T @ eps
    grad = np.zeros_like(P)
    grad[0] = w @ G
    grad[1:] = np.tril(D, -1) + np.diag(np.diag(L) * np.diag(D) - 1.0)
    return bound, ess, grad


def adam_update(P, grad, m, v, t, lr, beta1=BETA1, beta2=BETA2, adam_eps=ADAM_EPS):
    """One Adam step; returns ``(P, m, v, t)`` (new arrays, ``t`` an int)."""
    t = t + 1
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    mhat = m / (1.0 - beta1 ** t)
    vhat = v / (1.0 - beta2 ** t)
    return P - lr * mhat / (np.sqrt(vhat) + adam_eps), m, v, t


def renyi_steps(alpha, P, eps, lr, values_grads, m=None, v=None, t=0, beta1=BETA1,
                beta2=BETA2, adam_eps=ADAM_EPS):
    """``eps.shape[0]`` Adam steps on ``-L_alpha`` from ``P`` with Adam state ``(m, v, t)``.

    Returns ``(P, m, v, t, trace)``, ``trace`` (S, 2) each step's ``(bound, ess)`` at its
    starting point. Raises FloatingPointError on a non-finite bound, gradient or state.
    """
    m = np.zeros_like(P) if m is None else m
    v = np.zeros_like(P) if v is None else v
    trace = np.empty((eps.shape[0], 2))
    for s in range(eps.shape[0]):
        bound, ess, grad = renyi_grad(alpha, P, eps[s], values_grads)
        trace[s] = bound, ess
        if not (np.isfinite(bound) and np.all(np.isfinite(grad))):
            raise FloatingPointError("non-finite Rényi bound or gradient")
        P, m, v, t = adam_update(P, grad, m, v, t, lr, beta1, beta2, adam_eps)
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(factor(P)))):
        raise FloatingPointError("non-finite Rényi-VI state")
    return P, m, v, t, trace


# --------------------------------------------------------------------------- potentials


def linear_values_grads(etaV, eta_b):
    """``U = 1/2 theta^T etaV theta - eta_b^T theta`` and ``grad U`` at rows of thetas."""
    def values_grads(thetas):
        G = thetas @ etaV - eta_b
        return 0.5 * np.einsum("ij,ij->i", thetas, thetas @ etaV) - thetas @ eta_b, G
    return values_grads


def logistic_values_grads(X, y, eta, lam):
    """The logistic potential ``eta (sum_s (log(1 + exp(z_s)) - y_s z_s) + lam/2 |theta|^2)``,
    ``z = X theta``, and its gradient at the rows of thetas: one (M, n) array of ``z``."""
    def values_grads(thetas):
        Z = thetas @ X.T
        sq = np.einsum("ij,ij->i", thetas, thetas)
        return (eta * (bernoulli_nll(Z, y).sum(axis=1) + 0.5 * lam * sq),
                eta * (residual(Z, y) @ X + lam * thetas))
    return values_grads


def mixture_log_prior(thetas, means, variances, weights):
    """``(log prior (M,), responsibilities (M, K))`` of a diagonal Gaussian mixture."""
    diff = thetas[:, None, :] - means[None, :, :]
    logc = np.log(weights) - 0.5 * np.sum(np.log(2.0 * np.pi * variances), axis=1)
    lk = logc - 0.5 * np.sum(diff * diff / variances, axis=2)
    mx = lk.max(axis=1, keepdims=True)
    e = np.exp(lk - mx)
    return mx[:, 0] + np.log(e.sum(axis=1)), e / e.sum(axis=1, keepdims=True)


def mixture_values_grads(etaV, eta_b, means, variances, weights):
    """The mixture-prior potential ``1/2 theta^T etaV theta - eta_b^T theta - log prior``."""
    lin = linear_values_grads(etaV, eta_b)

    def values_grads(thetas):
        U, G = lin(thetas)
        logp, r = mixture_log_prior(thetas, means, variances, weights)
        u = (thetas[:, None, :] - means[None, :, :]) / variances
        return U - logp, G + np.einsum("mk,mki->mi", r, u)
    return values_grads
