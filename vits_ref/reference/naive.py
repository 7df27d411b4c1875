"""Naive, independent closed forms: explicit inverses, determinants, ``scipy.linalg.sqrtm``.

Written for clarity, not speed or stability, and only used on small, well-conditioned
problems: the tests compare :mod:`vits_ref.gaussian` and the baselines' kernels with them,
and :mod:`.bandit` builds its LinTS and LMC rounds from them.
"""

import numpy as np
import scipy.linalg
from scipy.stats import multivariate_normal

# --- Gaussians (vits_ref.gaussian) -----------------------------------------------------

def kl_gaussian_naive(m1, s1, m2, s2):
    """KL(N(m1, s1) || N(m2, s2)) with explicit inverse and determinants."""
    m1, s1, m2, s2 = (np.asarray(a, dtype=float) for a in (m1, s1, m2, s2))
    s2inv = np.linalg.inv(s2)
    diff = m2 - m1
    return 0.5 * (np.trace(s2inv @ s1) + diff @ s2inv @ diff - len(m1)
                  + np.log(np.linalg.det(s2)) - np.log(np.linalg.det(s1)))


def w2_squared_gaussian_naive(m1, s1, m2, s2):
    """Squared W2 with scipy.linalg.sqrtm: ``|m1-m2|^2 + tr(S1 + S2 - 2 (S1^½ S2 S1^½)^½)``."""
    m1, s1, m2, s2 = (np.asarray(a, dtype=float) for a in (m1, s1, m2, s2))
    r = np.real(scipy.linalg.sqrtm(s1))
    cross = np.real(scipy.linalg.sqrtm(r @ s2 @ r))
    diff = m1 - m2
    return diff @ diff + np.trace(s1 + s2 - 2.0 * cross)


def linear_posterior_naive(features, rewards, prior_mean, prior_cov, noise_var):
    """Diffusion paper eq. 3 with explicit inverses."""
    phi = np.asarray(features, dtype=float)
    y = np.asarray(rewards, dtype=float)
    p0 = np.linalg.inv(prior_cov)
    cov = np.linalg.inv(p0 + phi.T @ phi / noise_var)
    mean = cov @ (p0 @ np.asarray(prior_mean, dtype=float) + phi.T @ y / noise_var)
    return mean, cov


def product_gaussian_naive(m1, s1, m2, s2):
    """Diffusion paper Lemma 6 with explicit inverses; log Z from scipy."""
    p1, p2 = np.linalg.inv(s1), np.linalg.inv(s2)
    cov = np.linalg.inv(p1 + p2)
    mean = cov @ (p1 @ np.asarray(m1, dtype=float) + p2 @ np.asarray(m2, dtype=float))
    log_z = multivariate_normal(mean=m2, cov=np.asarray(s1) + np.asarray(s2)).logpdf(m1)
    return mean, cov, float(log_z)


# --- baselines (kernels/lints.py, linucb.py, langevin.py) -------------------------------

def lints_draw_naive(V, b, eta, z):
    """A LinTS draw ``L^-T (L^-1 b + z / sqrt(eta))`` with ``L = cholesky(V)`` by dense solves."""
    L = np.linalg.cholesky(V)
    y = np.linalg.solve(L, b) + np.asarray(z) / np.sqrt(eta)
    return np.linalg.solve(L.T, y)


def langevin_linear_naive(theta, etaV, eta_b, eps, h):
    """ULA steps ``theta <- theta - h (etaV theta - eta_b) + sqrt(2 h) eps_s``, one per row."""
    theta = np.array(theta, dtype=float)
    for e in eps:
        theta = theta - h * (etaV @ theta - eta_b) + np.sqrt(2.0 * h) * e
    return theta


def ula_stationary_cov(etaV, h):
    """Stationary covariance of ULA on a Gaussian target with precision ``etaV``.

    ``theta' = (I - h A) theta + sqrt(2h) eps`` has stationary covariance ``S`` solving
    ``S = (I - hA) S (I - hA) + 2h I``, i.e. ``S = inv(A (I - hA/2))`` (A symmetric).
    """
    A = np.asarray(etaV, dtype=float)
    return np.linalg.inv(A @ (np.eye(len(A)) - 0.5 * h * A))


def linucb_scores_naive(V, b, X, alpha):
    """LinUCB scores with an explicit inverse of ``V``."""
    Vinv = np.linalg.inv(V)
    theta = Vinv @ b
    width = np.sqrt(np.array([x @ Vinv @ x for x in X]))
    return X @ theta + alpha * width
