"""Logistic (Bernoulli-GLM) potential and its IRLS/Newton MAP fit, as kernel bodies.

The potential of the VITS paper's logistic bandits (section 5 and appendix G;
docs/algorithms.md section 2) on a history ``X[:n]`` (n, d), ``y[:n]`` in {0, 1}::

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

IRLS (Algorithm 1 of the diffusion paper, docs/algorithms.md section 3; the generic Newton
kernel :mod:`.newton` runs it on this potential) for the logit link with
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

The potential's bodies (:data:`POTENTIAL`, the interface of :mod:`.potential`) take
``data = (X, y, eta, lam, has_prior, P0, theta0)``: the history views ``X[:n]``,
``y[:n]``, the temperature and ridge, and an optional general Gaussian prior
``N(theta0, inv(P0))`` whose term ``1/2 (theta - theta0)^T P0 (theta - theta0)`` is not
tempered by ``eta`` and replaces the ridge (the model then passes ``lam = 0``).
``scratch = (zbuf, wbuf, Xwbuf, D, DP, key)``: flat ``(>= n M,)``, ``(>= n,)``, ``(>= n, d)``,
two ``(>= M, d)`` buffers the model sizes with its capacity, and ``key`` (d + 1,), which
records the ``(n, theta)`` whose ``X theta`` :func:`value` left in ``zbuf`` (the Newton
iteration's gradient at the accepted point then reuses it). Bodies allocate nothing.
"""

import math

from vits_ref.config import kernel

from .linalg import gemm_nn, gemm_nt, gemm_tn
from .potential import Potential, linear_scores
from .scalars import bernoulli_nll, nll_residual, residual_weight

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
def logistic_value(X, y, theta, eta, lam, z2):
    """``U(theta)`` (default prior); ``z2`` an (n, 1) scratch buffer (receives ``X theta``)."""
    n, d = X.shape
    if n > 0:
        gemm_nt(X, theta.reshape((1, d)), z2)
    total = 0.0
    for s in range(n):
        total += bernoulli_nll(z2[s, 0], y[s])
    return tempered_value(total, theta, eta, lam)


@kernel(inline=True)
def tempered_value(total, theta, eta, lam):
    """``eta (total + lam/2 |theta|^2)``: ``U`` from the data term ``total`` (the sum of
    the observations' negative log-likelihoods)."""
    sq = 0.0
    for i in range(theta.shape[0]):
        sq += theta[i] * theta[i]
    return eta * (total + 0.5 * lam * sq)


@kernel(inline=True)
def tempered_gradients(thetas, eta, lam, G):
    """``G <- eta (G + lam thetas)``: the gradients from their data terms ``X^T r_j``."""
    for j in range(thetas.shape[0]):
        for i in range(thetas.shape[1]):
            G[j, i] = eta * (G[j, i] + lam * thetas[j, i])


@kernel
def logistic_grads_hessian(X, y, thetas, eta, lam, want_hessian, Z, wbar, Xw, G, H,
                           have_z=False):
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
        if not have_z:
            gemm_nt(X, thetas, Z)
        if M == 1:  # one point (Newton, Langevin): the same numbers without the inner loop
            for s in range(n):
                r, w = residual_weight(Z[s, 0], y[s])
                Z[s, 0] = r
                wbar[s] = w
        else:
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
    tempered_gradients(thetas, eta, lam, G)
    if want_hessian:
        weighted_gram(X, wbar, eta, Xw, H)
        el = eta * lam
        for i in range(d):
            H[i, i] += el


# --------------------------------------------------------------------------- potential


@kernel
def grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """The potential interface: :func:`logistic_grads_hessian` plus the general prior."""
    X, y, eta, lam, has_prior, P0, theta0 = data
    zbuf, wbuf, Xwbuf, D, DP, key = scratch
    n = X.shape[0]
    M, d = thetas.shape
    # Newton evaluates U at the accepted point just before its gradient: X theta is then
    # still in zbuf (value() left it there and recorded (n, theta) in key), bit for bit
    have_z = M == 1 and key[0] == n
    if have_z:
        for i in range(d):
            if key[i + 1] != thetas[0, i]:
                have_z = False
                break
    logistic_grads_hessian(X, y, thetas, eta, lam, want_hessian, zbuf[:n * M].reshape((n, M)),
                           wbuf[:n], Xwbuf[:n], G, H, have_z)
    key[0] = -1.0  # zbuf now holds residuals
    if has_prior:  # + P0 (theta - theta0) and + P0
        prior_gradients(thetas, P0, theta0, D, DP, G)
        if want_hessian:
            for i in range(d):
                for j in range(d):
                    H[i, j] += P0[i, j]


@kernel
def value(data, theta, scratch):
    """The potential interface: ``U(theta)`` with the general prior's term if any."""
    X, y, eta, lam, has_prior, P0, theta0 = data
    n = X.shape[0]
    key = scratch[5]
    u = logistic_value(X, y, theta, eta, lam, scratch[0][:n].reshape((n, 1)))
    key[0] = n  # zbuf[:n] holds X theta for this theta (see grads_hessian)
    for i in range(theta.shape[0]):
        key[i + 1] = theta[i]
    if has_prior:
        u += prior_value(theta, P0, theta0)
    return u


@kernel(inline=True)
def prior_value(theta, P0, theta0):
    """The general prior's term ``1/2 (theta - theta0)^T P0 (theta - theta0)``."""
    d = theta.shape[0]
    q = 0.0
    for i in range(d):
        acc = 0.0
        for k in range(d):
            acc += P0[i, k] * (theta[k] - theta0[k])
        q += (theta[i] - theta0[i]) * acc
    return 0.5 * q


@kernel(inline=True)
def prior_gradients(thetas, P0, theta0, D, DP, G):
    """``G[m] += P0 (thetas[m] - theta0)``, the general prior's gradients, through the
    (>= M, d) scratch buffers ``D`` and ``DP``."""
    M, d = thetas.shape
    Dm = D[:M]
    DPm = DP[:M]
    for m in range(M):
        for i in range(d):
            Dm[m, i] = thetas[m, i] - theta0[i]
    gemm_nn(Dm, P0, DPm)
    for m in range(M):
        for i in range(d):
            G[m, i] += DPm[m, i]


@kernel(inline=True)
def values_grads(data, thetas, logw, G, H, scratch):
    """``logw[j] -= U(thetas[j])`` and the gradients ``G`` in one pass over the history.

    What the Rényi steps need at their M draws (:func:`vits_ref.kernels.renyi.make_values_grads`;
    ``H`` untouched): one product ``Z = thetas X^T`` (M, n) and, per entry, the negative
    log-likelihood and the residual from one ``exp`` (:func:`.scalars.nll_residual`), then
    ``G = Z X``. Calling :func:`value` per draw and then :func:`grads_hessian` costs M
    matrix-vector products instead of one product, and two ``exp`` per entry instead of
    one: a 10-step update at M = 300, n = 1000 took 1.4 times as long that way (at d = 10
    and d = 42). What remains is one ``exp`` and one ``log1p`` per entry, scalar calls.
    """
    X, y, eta, lam, has_prior, P0, theta0 = data
    zbuf, wbuf, Xwbuf, D, DP, key = scratch
    n = X.shape[0]
    M = thetas.shape[0]
    key[0] = -1.0  # zbuf is about to hold residuals, not a value's X theta
    if n > 0:
        Z = zbuf[:n * M].reshape((M, n))
        gemm_nt(thetas, X, Z)
        for j in range(M):
            total = 0.0
            for s in range(n):
                nll, r = nll_residual(Z[j, s], y[s])
                total += nll
                Z[j, s] = r
            logw[j] -= tempered_value(total, thetas[j], eta, lam)
        gemm_nn(Z, X, G)
    else:
        for j in range(M):
            logw[j] -= tempered_value(0.0, thetas[j], eta, lam)
            for i in range(thetas.shape[1]):
                G[j, i] = 0.0
    tempered_gradients(thetas, eta, lam, G)
    if has_prior:
        for j in range(M):
            logw[j] -= prior_value(thetas[j], P0, theta0)
        prior_gradients(thetas, P0, theta0, D, DP, G)


#: The logistic potential's bodies; ``predict`` scores ``x theta`` (monotone in the mean
#: reward ``sigmoid(x theta)``, so the argmax is the same).
POTENTIAL = Potential("logistic", grads_hessian, value, linear_scores)
