"""Baselines of the VITS paper on the linear potential: LinTS, LinUCB, LMC-TS.

LinTS keeps the lower Cholesky factor ``L`` of ``V = lam I + sum phi phi^T`` and updates
it by :func:`~vits_ref.kernels.linalg.chol_rank1_update` per observation (O(d^2), no
refactorisation); a posterior draw is
``theta = L^-T (L^-1 b + z / sqrt(eta))`` ~ ``N(V^-1 b, inv(eta V))``.
LinUCB keeps ``inv(V)`` by Sherman-Morrison. LMC-TS (Xu et al. 2022) runs
``theta <- theta - h grad U(theta) + sqrt(2 h) eps`` with ``grad U = eta (V theta - b)``.
"""

import math

import numpy as np

from vits_ref.config import cpu_jit, kernel

from .linalg import chol_rank1_update, gemm_nn, gemv, solve_lower, solve_lower_t


@kernel
def lints_draw(L, b, eta, z, out):
    """One exact posterior draw from the Cholesky factor: ``out = L^-T (L^-1 b + z/sqrt(eta))``."""
    solve_lower(L, b, out)
    s = 1.0 / math.sqrt(eta)
    for i in range(out.shape[0]):
        out[i] += s * z[i]
    solve_lower_t(L, out, out)


@kernel
def linucb_scores(Vinv, b, alpha, X, theta, VX, out):
    """``out_a = x_a theta_hat + alpha sqrt(x_a^T inv(V) x_a)``, ``theta_hat = inv(V) b``.

    ``VX`` (K, d) is scratch for ``X inv(V)`` (inv(V) symmetric).
    """
    gemv(Vinv, b, theta)
    gemv(X, theta, out)
    gemm_nn(X, Vinv, VX)
    K, d = X.shape
    for a in range(K):
        q = 0.0
        for i in range(d):
            q += X[a, i] * VX[a, i]
        out[a] += alpha * math.sqrt(max(q, 0.0))


@kernel
def sherman_morrison(Vinv, x, u):
    """``inv(V + x x^T) = inv(V) - (inv(V) x)(inv(V) x)^T / (1 + x^T inv(V) x)``, in place."""
    gemv(Vinv, x, u)
    d = x.shape[0]
    den = 1.0
    for i in range(d):
        den += x[i] * u[i]
    for i in range(d):
        for j in range(d):
            Vinv[i, j] -= u[i] * u[j] / den


@kernel
def langevin_linear_steps(theta, etaV, eta_b, eps, h, grad):
    """``S = eps.shape[0]`` unadjusted Langevin steps on the linear potential, in place.

    ``theta <- theta - h eta (V theta - b) + sqrt(2 h) eps_s``; the noise scale follows the
    current ``h`` (the LMC-TS authors' code freezes it at the first step size).
    """
    S, d = eps.shape
    c = math.sqrt(2.0 * h)
    for s in range(S):
        gemv(etaV, theta, grad)
        for i in range(d):
            theta[i] += -h * (grad[i] - eta_b[i]) + c * eps[s, i]


@cpu_jit
def chol_update_rows_cpu(L, X):
    """Rank-one updates of the lower factor ``L`` with every row of ``X``, in place."""
    work = np.empty(L.shape[0])
    for n in range(X.shape[0]):
        chol_rank1_update(L, X[n], work)


@cpu_jit
def lints_draws_cpu(L, b, eta, Z, out):
    """Rows of ``out`` are exact posterior draws built from the rows of ``Z``."""
    for n in range(Z.shape[0]):
        lints_draw(L, b, eta, Z[n], out[n])


@cpu_jit
def langevin_linear_steps_cpu(theta, etaV, eta_b, eps, h):
    """CPU driver of :func:`langevin_linear_steps`."""
    grad = np.empty(theta.shape[0])
    langevin_linear_steps(theta, etaV, eta_b, eps, h, grad)
