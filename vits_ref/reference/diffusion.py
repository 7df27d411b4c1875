"""Plain-NumPy reverse chains of a diffusion prior: the naive loops the tests and
benchmarks compare the compiled chains (:mod:`vits_ref.kernels.diffusion_chain`) against.

Each function follows the equations of Kveton et al. (docs/algorithms.md section 3) literally:
explicit ``s0_hat`` and ``mu_t``, products of Gaussians by ``np.linalg.solve``, IRLS by
:func:`vits_ref.reference.logistic.irls`, DPS's residuals from the history itself (not
from sufficient statistics). The noise regressor is the Gaussian prior's closed form
``eps_t(s) = sqrt(1 - abar_t) inv(C_t) (s - sqrt(abar_t) m)`` computed here by
``np.linalg.solve`` (independent of the prior's ``eps_params``), or any callable. The
normals ``z`` (T + 1, d) are used as the kernels use them: ``z[T]`` for ``s_T``,
``z[t - 1]`` for the step ``s_t -> s_{t-1}``, a draw of ``N(m, inv(P))`` being
``m + L^-T z`` with ``P = L L^T``.

:func:`chain_moments` and :func:`laplace_linear_moments` propagate the first two moments
exactly through a chain whose ``eps`` is affine (the exact Gaussian prior): the chain is
then linear-Gaussian, so its output law is known in closed form.
"""

import numpy as np
from scipy.linalg import solve_triangular

from . import logistic as ref_logistic


def gaussian_eps(prior):
    """``(eps(t, s), jac(t))`` of the exact Gaussian prior ``N(prior.mean, prior.cov)``."""
    m, S, ab = prior.mean, prior.cov, prior.schedule.abar
    eye = np.eye(prior.dim)

    def C(t):
        return ab[t] * S + (1.0 - ab[t]) * eye

    def eps(t, s):
        return np.sqrt(1.0 - ab[t]) * np.linalg.solve(C(t), s - np.sqrt(ab[t]) * m)

    def jac(t):
        return np.sqrt(1.0 - ab[t]) * np.linalg.inv(C(t))

    return eps, jac


def _eps(prior, eps):
    if eps is not None:
        return eps
    if hasattr(prior, "cov"):
        return gaussian_eps(prior)[0]
    return prior.eps


def s0_hat(prior, t, s, eps_t):
    """``(s - sqrt(1 - abar_t) eps_t) / sqrt(abar_t)``."""
    ab = prior.schedule.abar[t]
    return (s - np.sqrt(1.0 - ab) * eps_t) / np.sqrt(ab)


def reverse_mean(prior, t, s, eps=None):
    """``mu_t(s) = sqrt(abar_{t-1}) beta_t/(1 - abar_t) s0_hat
    + sqrt(alpha_t)(1 - abar_{t-1})/(1 - abar_t) s``."""
    eps = _eps(prior, eps)
    sch = prior.schedule
    ab, al, be = sch.abar, sch.alpha, sch.beta
    s0 = s0_hat(prior, t, s, eps(t, s))
    return (np.sqrt(ab[t - 1]) * be[t] / (1.0 - ab[t]) * s0
            + np.sqrt(al[t]) * (1.0 - ab[t - 1]) / (1.0 - ab[t]) * s)


def _noise(P, z):
    """``L^-T z`` with ``P = L L^T``: a draw of ``N(0, inv(P))``."""
    return solve_triangular(np.linalg.cholesky(P), z, lower=True, trans="T")


def _start(prior):
    L0 = prior.start_chol
    if not np.array_equal(L0, np.tril(L0)):
        L0 = np.linalg.cholesky(L0 @ L0.T)
    return prior.start_mean, L0


def reverse_chain(prior, z, eps=None):
    """One draw of the plain reverse chain from the normals ``z`` (T + 1, d)."""
    T = prior.n_stages
    m0, L0 = _start(prior)
    s = m0 + L0 @ z[T]
    for t in range(T, 0, -1):
        s = reverse_mean(prior, t, s, eps) + _noise(prior.reverse_prec[t], z[t - 1])
    return s


def laplace_linear(prior, G, h, w, z, eps=None):
    """One LaplaceDPS draw, linear model (Algorithm 2, Theorem 2): evidence
    ``Sbar^-1 = w G``, ``Sbar^-1 thetabar = w h``; products of Gaussians by explicit solves."""
    T = prior.n_stages
    ab = prior.schedule.abar
    m0, L0 = _start(prior)
    P0 = np.linalg.inv(L0 @ L0.T)
    M = P0 + w * G / ab[T]
    s = np.linalg.solve(M, P0 @ m0 + w * h / np.sqrt(ab[T])) + _noise(M, z[T])
    for t in range(T, 0, -1):
        P = prior.reverse_prec[t]
        mu = reverse_mean(prior, t, s, eps)
        M = P + w * G / ab[t - 1]
        s = np.linalg.solve(M, P @ mu + w * h / np.sqrt(ab[t - 1])) + _noise(M, z[t - 1])
    return s


def laplace_logistic(prior, X, y, z, eta=1.0, tol=1e-8, max_iter=100, eps=None):
    """One LaplaceDPS draw, logistic model (Theorem 4): per stage IRLS
    (:func:`vits_ref.reference.logistic.irls`) with prior
    ``N(mu_t(s_t)/sqrt(abar_{t-1}), Sigma_t/abar_{t-1})``, warm-started from the previous
    stage, rescaled by ``sqrt(abar_{t-1})``. Returns ``(s_0, statuses)``."""
    T = prior.n_stages
    ab = prior.schedule.abar
    m0, L0 = _start(prior)
    Pst = np.linalg.inv(L0 @ L0.T)
    P0, b0 = ab[T] * Pst, np.sqrt(ab[T]) * (Pst @ m0)
    theta = m0 / np.sqrt(ab[T])
    statuses = []
    status, _, theta, H = ref_logistic.irls(X, y, eta, P0, b0, theta, tol, max_iter)
    statuses.append(status)
    s = np.sqrt(ab[T]) * (theta + _noise(H, z[T]))
    for t in range(T, 0, -1):
        P = prior.reverse_prec[t]
        mu = reverse_mean(prior, t, s, eps)
        P0, b0 = ab[t - 1] * P, np.sqrt(ab[t - 1]) * (P @ mu)
        status, _, theta, H = ref_logistic.irls(X, y, eta, P0, b0, theta, tol, max_iter)
        statuses.append(status)
        s = np.sqrt(ab[t - 1]) * (theta + _noise(H, z[t - 1]))
    return s, statuses


def dps_linear(prior, X, y, z, eps=None, jac=None):
    """One DPS draw (Algorithm 4 of Kveton et al., line 5's sign fixed) from the history
    ``X`` (N, d), ``y`` (N,): residuals ``y - X s0_hat``, gradient with respect to ``s_t``
    through the Jacobian ``jac(t)`` of ``eps_t`` (default: the Gaussian prior's)."""
    if eps is None or jac is None:
        eps, jac = gaussian_eps(prior)
    T = prior.n_stages
    sch = prior.schedule
    ab, al, be, bt = sch.abar, sch.alpha, sch.beta, sch.btilde
    m0, L0 = _start(prior)
    s = m0 + L0 @ z[T]
    for t in range(T, 0, -1):
        s0 = s0_hat(prior, t, s, eps(t, s))
        r = y - X @ s0
        rss = float(r @ r)
        ds0 = (np.eye(prior.dim) - np.sqrt(1.0 - ab[t]) * jac(t)) / np.sqrt(ab[t])
        grad = ds0.T @ (-2.0 * X.T @ r)
        zeta = 1.0 / np.sqrt(rss) if rss > 0 else 0.0
        s = (np.sqrt(ab[t - 1]) * be[t] / (1.0 - ab[t]) * s0
             + np.sqrt(al[t]) * (1.0 - ab[t - 1]) / (1.0 - ab[t]) * s
             + np.sqrt(bt[t]) * z[t - 1] - zeta * grad)
    return s


# --------------------------------------------------------------------------- exact moments


def _affine_mean_map(prior, t):
    """``(M_t, k_t)`` with ``mu_t(s) = M_t s + k_t`` for the exact Gaussian prior."""
    eps, jac = gaussian_eps(prior)
    J = jac(t)
    e0 = eps(t, np.zeros(prior.dim))  # eps_t(s) = J s + e0
    sch = prior.schedule
    ab, al, be = sch.abar, sch.alpha, sch.beta
    c0 = np.sqrt(ab[t - 1]) * be[t] / (1.0 - ab[t])
    c1 = np.sqrt(al[t]) * (1.0 - ab[t - 1]) / (1.0 - ab[t])
    eye = np.eye(prior.dim)
    M = c0 / np.sqrt(ab[t]) * (eye - np.sqrt(1.0 - ab[t]) * J) + c1 * eye
    k = -c0 * np.sqrt(1.0 - ab[t]) / np.sqrt(ab[t]) * e0
    return M, k


def chain_moments(prior):
    """Exact ``(mean, cov)`` of the plain reverse chain's output for a Gaussian prior.

    The chain is linear-Gaussian (``mu_t`` affine, Gaussian noise of covariance
    ``inv(reverse_prec[t])``), so ``m <- M_t m + k_t``, ``C <- M_t C M_t^T + Sigma_t``
    from the start's moments. With ``reverse_variance="exact"`` and ``start="exact"`` this
    returns ``(prior.mean, prior.cov)`` (to rounding); with ``"ddpm"`` and ``"standard"``
    it measures the DDPM chain's bias at finite T (its covariance falls short).
    """
    T = prior.n_stages
    m0, L0 = _start(prior)
    m, C = m0.copy(), L0 @ L0.T
    for t in range(T, 0, -1):
        M, k = _affine_mean_map(prior, t)
        m = M @ m + k
        C = M @ C @ M.T + np.linalg.inv(prior.reverse_prec[t])
        C = 0.5 * (C + C.T)
    return m, C


def laplace_linear_moments(prior, G, h, w):
    """Exact ``(mean, cov)`` of the linear LaplaceDPS output for a Gaussian prior.

    Each stage is ``s_{t-1} = S_t P_t (M_t s_t + k_t) + S_t w h / sqrt(abar_{t-1}) + noise``
    with noise ``N(0, S_t)``: linear-Gaussian, propagated exactly.
    """
    T = prior.n_stages
    ab = prior.schedule.abar
    m0, L0 = _start(prior)
    P0 = np.linalg.inv(L0 @ L0.T)
    S = np.linalg.inv(P0 + w * G / ab[T])
    m = S @ (P0 @ m0 + w * h / np.sqrt(ab[T]))
    C = S
    for t in range(T, 0, -1):
        P = prior.reverse_prec[t]
        M, k = _affine_mean_map(prior, t)
        S = np.linalg.inv(P + w * G / ab[t - 1])
        A = S @ P @ M
        m = A @ m + S @ (P @ k + w * h / np.sqrt(ab[t - 1]))
        C = A @ C @ A.T + S
        C = 0.5 * (C + C.T)
    return m, C
