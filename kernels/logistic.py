"""Logistic (Bernoulli-GLM) potential and its IRLS/Newton MAP fit, as kernel bodies.

The potential of the VITS paper's logistic bandits (section 5 and appendix G;
ALGORITHMS.md section 2) on a history ``X[:n]`` (n, d), ``y[:n]`` in {0, 1}::

    U(theta) = eta [ sum_s (log(1 + exp(z_s)) - y_s z_s) + lam/2 |theta|^2 ],  z = X theta
    grad U   = eta ( X^T (sigmoid(z) - y) + lam theta )
    hess U   = eta ( X^T diag(sigmoid'(z)) X + lam I )

Numerical forms (finite for every finite ``z``; no overflow, no inf, no warnings):

- ``log(1 + exp(z)) - y z = (1 - y) softplus(z) + y softplus(-z)`` with
  ``softplus(z) = max(z, 0) + log1p(exp(-|z|))``: both terms are >= 0, so there is no
  cancellation (``softplus(z) - z`` would lose every digit at ``z = 700, y = 1``);
- ``sigmoid(z) - y = (1 - y) sigmoid(z) - y sigmoid(-z)`` and
  ``sigmoid'(z) = e / (1 + e)^2`` with ``e = exp(-|z|) <= 1``.

The data-term products are BLAS on the CPU (:func:`~vits_ref.kernels.linalg.gemm_nt`,
:func:`~vits_ref.kernels.linalg.gemm_tn`), loops on CUDA and in plain Python. The Hessian's
data term is one Gram product ``(sqrt(w) X)^T (sqrt(w) X)`` of ``sqrt(w)``-scaled rows held
in an (n, d) scratch buffer. For the mean Hessian over M points (what VITS's inner steps
use) the weights are averaged first, ``mean_j X^T diag(w_j) X = X^T diag(mean_j w_j) X``,
so M draws cost one product, not M.

IRLS (Algorithm 1 of the diffusion paper, ALGORITHMS.md section 3) for the logit link with
a general Gaussian prior ``N(theta0, Sigma0)``, given as its precision ``P0 = inv(Sigma0)``
and ``b0 = P0 theta0``, and the data term scaled by ``eta``, is computed in its Newton
form: for the canonical link ``g = sigmoid`` the IRLS update
``theta <- inv(P0 + eta X^T W X) (b0 + eta X^T W z~)``,
``z~ = X theta + (y - g(X theta)) / g'(X theta)``, equals the Newton step
``theta <- theta - H^-1 grad`` on ``U(theta) = eta sum_s l_s + 1/2 theta^T P0 theta -
b0^T theta``. The Newton form never divides by ``g'``, which underflows to 0 for
``|z| > 745``. A backtracking (step-halving) safeguard on ``U`` makes every iteration a
descent step, so the iteration converges from any warm start (plain IRLS can overshoot
on nearly separable data). ``P0 = eta lam I``, ``b0 = 0`` is Newton on the VITS potential.

Every body takes its scratch as arguments and allocates nothing; the ``*_cpu`` drivers
(compiled with :func:`vits_ref.config.cpu_jit`) allocate the scratch and call them.
"""

import math

import numpy as np

from vits_ref.config import cpu_jit, kernel

from .linalg import cholesky, gemm_nt, gemm_tn, solve_lower, solve_lower_t
from .scalars import bernoulli_nll, residual_weight, sigmoid, softplus  # noqa: F401

# IRLS status codes (first element of the tuple the IRLS bodies return)
IRLS_CONVERGED = 1
IRLS_MAX_ITER = 0
IRLS_FAILED = -1  # a non-finite value or a Hessian that is not positive definite

_MAX_HALVINGS = 60  # 2^-60 ~ 1e-18: past this the step is below rounding of theta

# --------------------------------------------------------------------------- the potential


@kernel
def weighted_gram(X, w, scale, Xw, out):
    """``out = scale X^T diag(w) X`` as the Gram matrix of ``sqrt(scale w)``-scaled rows.

    ``Xw`` is an (n, d) scratch buffer (n = ``X.shape[0]``); ``w >= 0``. One BLAS product on
    the CPU; the result is made exactly symmetric (lower triangle copied to the upper).
    """
    n, d = X.shape
    if n == 0:
        for i in range(d):
            for j in range(d):
                out[i, j] = 0.0
        return
    for s in range(n):
        c = math.sqrt(scale * w[s])
        for i in range(d):
            Xw[s, i] = c * X[s, i]
    gemm_tn(Xw, Xw, out)
    for i in range(d):
        for j in range(i + 1, d):
            out[i, j] = out[j, i]


@kernel
def logistic_value(X, y, theta, eta, lam, z):
    """``U(theta)``; ``z`` is an (n,) scratch buffer (receives ``X theta``)."""
    n, d = X.shape
    for s in range(n):
        acc = 0.0
        for i in range(d):
            acc += X[s, i] * theta[i]
        z[s] = acc
    total = 0.0
    for s in range(n):
        total += bernoulli_nll(z[s], y[s])
    sq = 0.0
    for i in range(d):
        sq += theta[i] * theta[i]
    return eta * (total + 0.5 * lam * sq)


@kernel
def logistic_grads_hessian(X, y, thetas, eta, lam, want_hessian, Z, wbar, Xw, G, H):
    """Gradients of ``U`` at the M rows of ``thetas`` and the mean of their Hessians.

    Parameters
    ----------
    X, y : (n, d), (n,)
        The history (views ``X[:n]``, ``y[:n]`` of the model's buffers).
    thetas : (M, d)
    eta, lam : float
    want_hessian : bool
        If False, ``H`` is left untouched and the Gram product is skipped.
    Z : (n, M) scratch
        Receives ``X thetas^T``, then the residuals ``sigmoid(z) - y``.
    wbar : (n,) scratch
        Receives ``mean_j sigmoid'(z_sj)``.
    Xw : (n, d) scratch
        ``sqrt(wbar)``-scaled rows.
    G : (M, d) output
        ``G[j] = eta (X^T (sigmoid(X theta_j) - y) + lam theta_j)``.
    H : (d, d) output
        ``eta (X^T diag(wbar) X + lam I) = mean_j hess U(theta_j)``.
    """
    n, d = X.shape
    M = thetas.shape[0]
    if n > 0:
        gemm_nt(X, thetas, Z)
        inv_m = 1.0 / M
        for s in range(n):
            acc = 0.0
            ys = y[s]
            for j in range(M):
                r, w = residual_weight(Z[s, j], ys)
                Z[s, j] = r
                acc += w
            wbar[s] = acc * inv_m
        gemm_tn(Z, X, G)
    else:
        for j in range(M):
            for i in range(d):
                G[j, i] = 0.0
    for j in range(M):
        for i in range(d):
            G[j, i] = eta * (G[j, i] + lam * thetas[j, i])
    if want_hessian:
        weighted_gram(X, wbar, eta, Xw, H)
        el = eta * lam
        for i in range(d):
            H[i, i] += el


# --------------------------------------------------------------------------- IRLS


@kernel
def _prior_and_data_value(X, y, eta, P0, b0, theta2, z2):
    """``eta sum_s l_s + 1/2 theta^T P0 theta - b0^T theta``, ``z2 = X theta`` precomputed."""
    n, d = X.shape
    total = 0.0
    for s in range(n):
        total += bernoulli_nll(z2[s, 0], y[s])
    quad = 0.0
    for i in range(d):
        acc = 0.0
        for k in range(d):
            acc += P0[i, k] * theta2[0, k]
        quad += theta2[0, i] * (0.5 * acc - b0[i])
    return eta * total + quad


@kernel
def irls_logistic(X, y, eta, P0, b0, theta2, tol, max_iter, H, L,
                  z2, w, Xw, g2, step, trial2, ztrial2):
    """MAP and posterior precision of the logistic GLM with prior ``N(theta0, inv(P0))``.

    Minimises ``U(theta) = eta sum_s (log(1 + exp(x_s theta)) - y_s x_s theta)
    + 1/2 theta^T P0 theta - b0^T theta`` (``b0 = P0 theta0``) by Newton/IRLS steps with
    step halving, warm-started from ``theta2[0]``.

    Parameters
    ----------
    X, y : (n, d), (n,)
    eta : float
        Scale of the data term (the inverse temperature).
    P0, b0 : (d, d), (d,)
        Prior precision and ``P0 theta0``.
    theta2 : (1, d), in/out
        The warm start on entry, the last iterate (the MAP when converged) on exit.
    tol : float
        Converged when the last Newton step ``delta = -H^-1 grad`` satisfies
        ``|delta|_2 <= tol max(1, |theta|_2)``: the relative change of ``theta`` (the
        undamped step, so a halved step never fakes convergence), with an absolute floor
        for ``|theta| < 1``.
    max_iter : int
        Cap on the number of Newton steps.
    H, L : (d, d) outputs
        The posterior precision ``inv(Sigma_hat) = P0 + eta X^T diag(sigmoid'(X theta)) X``
        at the returned ``theta`` and its lower Cholesky factor.
    z2 : (n, 1), w : (n,), Xw : (n, d), g2 : (1, d), step : (d,), trial2 : (1, d),
    ztrial2 : (n, 1)
        Scratch.

    Returns
    -------
    status : int
        :data:`IRLS_CONVERGED` (1), :data:`IRLS_MAX_ITER` (0: the cap was reached; ``theta``,
        ``H``, ``L`` are those of the last iterate) or :data:`IRLS_FAILED` (-1: a non-finite
        value or a precision that is not positive definite).
    iterations : int
        Newton steps taken. The precision is always evaluated at the returned ``theta``
        (one more Gram product than steps).
    """
    n, d = X.shape
    if n > 0:
        gemm_nt(X, theta2, z2)
    f = _prior_and_data_value(X, y, eta, P0, b0, theta2, z2)
    it = 0
    last = math.inf
    while True:
        if not math.isfinite(f):
            return IRLS_FAILED, it
        # gradient and precision at the current iterate
        if n > 0:
            for s in range(n):
                r, ws = residual_weight(z2[s, 0], y[s])
                z2[s, 0] = r
                w[s] = ws
            gemm_tn(z2, X, g2)
        else:
            for i in range(d):
                g2[0, i] = 0.0
        weighted_gram(X, w, eta, Xw, H)
        for i in range(d):
            acc = 0.0
            for k in range(d):
                H[i, k] += P0[i, k]
                acc += P0[i, k] * theta2[0, k]
            g2[0, i] = eta * g2[0, i] + acc - b0[i]
        if not cholesky(H, L):
            return IRLS_FAILED, it
        tnorm = 0.0
        for i in range(d):
            tnorm += theta2[0, i] * theta2[0, i]
        tnorm = math.sqrt(tnorm)
        if last <= tol * max(1.0, tnorm):
            return IRLS_CONVERGED, it
        if it >= max_iter:
            return IRLS_MAX_ITER, it
        # Newton direction: step = -H^-1 g
        for i in range(d):
            step[i] = -g2[0, i]
        solve_lower(L, step, step)
        solve_lower_t(L, step, step)
        snorm = 0.0
        for i in range(d):
            snorm += step[i] * step[i]
        snorm = math.sqrt(snorm)
        if not math.isfinite(snorm):
            return IRLS_FAILED, it
        # step halving until U does not increase beyond its rounding level
        t = 1.0
        slack = 1e-12 * (1.0 + abs(f))
        f_new = f
        for _ in range(_MAX_HALVINGS):
            for i in range(d):
                trial2[0, i] = theta2[0, i] + t * step[i]
            if n > 0:
                gemm_nt(X, trial2, ztrial2)
            f_new = _prior_and_data_value(X, y, eta, P0, b0, trial2, ztrial2)
            if f_new <= f + slack:
                break
            t *= 0.5
        for i in range(d):
            theta2[0, i] = trial2[0, i]
        for s in range(n):
            z2[s, 0] = ztrial2[s, 0]
        f = f_new
        last = snorm  # the full Newton step: a damped step never fakes convergence
        it += 1


# --------------------------------------------------------------------------- CPU drivers


@cpu_jit
def logistic_value_cpu(X, y, theta, eta, lam):
    """Compiled ``U(theta)`` (allocates an (n,) scratch)."""
    z = np.empty(X.shape[0])
    return logistic_value(X, y, theta, eta, lam, z)


@cpu_jit
def logistic_grads_hessian_cpu(X, y, thetas, eta, lam, want_hessian, wbar, Xw, G, H):
    """Compiled :func:`logistic_grads_hessian`; ``wbar`` (>= n,) and ``Xw`` (>= n, d) are
    scratch (the model's, sized with its capacity), ``G`` (M, d) and ``H`` (d, d) outputs."""
    n = X.shape[0]
    Z = np.empty((n, thetas.shape[0]))
    logistic_grads_hessian(X, y, thetas, eta, lam, want_hessian, Z, wbar[:n], Xw[:n], G, H)


@cpu_jit
def irls_logistic_cpu(X, y, eta, P0, b0, theta, tol, max_iter, H, L):
    """Compiled :func:`irls_logistic`; ``theta`` (d,) is updated in place.

    Returns ``(status, iterations)``.
    """
    n, d = X.shape
    theta2 = np.empty((1, d))
    theta2[0] = theta
    z2 = np.empty((n, 1))
    ztrial2 = np.empty((n, 1))
    w = np.empty(n)
    Xw = np.empty((n, d))
    g2 = np.empty((1, d))
    trial2 = np.empty((1, d))
    step = np.empty(d)
    status, it = irls_logistic(X, y, eta, P0, b0, theta2, tol, max_iter, H, L,
                               z2, w, Xw, g2, step, trial2, ztrial2)
    theta[:] = theta2[0]
    return status, it
