"""Plain-NumPy CAVI for a mixture of linear-Gaussian experts, and the NIG closed forms.

The same algorithm as :mod:`vits_ref.kernels.cavi` (Urteaga & Wiggins, eqs. 12-13,
docs/algorithms.md section 4), written with whole-array NumPy operations over the
observations and SciPy's special functions: responsibilities by a log-sum-exp
(``scipy.special.logsumexp``), the M-step by explicit inverses, the ELBO from the same
terms. Tests compare the compiled kernels with it; ``vits_ref._bench.vts`` times one CAVI
round of both in one process.

The NIG closed forms (:func:`nig_posterior`, :func:`nig_log_evidence`) are the exact
posterior and marginal likelihood of Bayesian linear regression with unknown noise
variance, ``y | w, s2 ~ N(X w, s2 I)``, ``w | s2 ~ N(u0, s2 V0)``,
``s2 ~ InvGamma(alpha0, beta0)``: VTS with one component must reproduce them.
"""

import math

import numpy as np
from scipy import special

LOG_2PI = math.log(2.0 * math.pi)


def nig_posterior(X, y, u0, V0, alpha0, beta0):
    """The exact NIG posterior ``(u, V, alpha, beta)`` by explicit inverses.

    ``inv(V) = inv(V0) + X^T X``, ``u = V (inv(V0) u0 + X^T y)``, ``alpha = alpha0 + n/2``,
    ``beta = beta0 + 1/2 (y^T y + u0^T inv(V0) u0 - u^T inv(V) u)``.
    """
    X, y = np.asarray(X, float), np.asarray(y, float)
    P0 = np.linalg.inv(V0)
    P = P0 + X.T @ X
    V = np.linalg.inv(P)
    u = V @ (P0 @ u0 + X.T @ y)
    alpha = alpha0 + 0.5 * len(y)
    beta = beta0 + 0.5 * (y @ y + u0 @ P0 @ u0 - u @ P @ u)
    return u, V, alpha, beta


def nig_log_evidence(X, y, u0, V0, alpha0, beta0):
    """``log p(y | X)`` under the NIG prior: the multivariate Student t
    ``y ~ t_{2 alpha0}(X u0, (beta0/alpha0) (I + X V0 X^T))`` (SciPy's ``multivariate_t``)."""
    from scipy import stats

    X, y = np.asarray(X, float), np.asarray(y, float)
    shape = beta0 / alpha0 * (np.eye(len(y)) + X @ V0 @ X.T)
    return float(stats.multivariate_t(loc=X @ u0, shape=shape, df=2.0 * alpha0).logpdf(y))


def copy_factors(f):
    """A copy of a factors (or prior) dict: ``gamma`` (K,), ``u`` (K, d), ``V`` (K, d, d),
    ``alpha``, ``beta`` (K,)."""
    return {k: np.array(f[k], float) for k in ("gamma", "u", "V", "alpha", "beta")}


def log_rho(X, y, f):
    """Eq. (12) before normalisation, ``(n, K)`` (with the ``-1/2 log 2 pi`` constant)."""
    xVx = np.einsum("ti,kij,tj->tk", X, f["V"], X)
    res = y[:, None] - X @ f["u"].T
    return (special.digamma(f["gamma"]) - special.digamma(f["gamma"].sum()) - 0.5 * LOG_2PI
            - 0.5 * (np.log(f["beta"]) - special.digamma(f["alpha"]))
            - 0.5 * (xVx + res ** 2 * f["alpha"] / f["beta"]))


def mstep(X, y, R, prior):
    """Eq. (13): the factors given the responsibilities ``R`` (n, K)."""
    P0 = np.linalg.inv(prior["V"])
    N = R.sum(axis=0)
    Sxx = np.einsum("tk,ti,tj->kij", R, X, X)
    Sxy = (R * y[:, None]).T @ X
    Syy = R.T @ y ** 2
    P = P0 + Sxx
    V = np.linalg.inv(P)
    b = np.einsum("kij,kj->ki", P0, prior["u"]) + Sxy
    u = np.einsum("kij,kj->ki", V, b)
    c0 = np.einsum("ki,kij,kj->k", prior["u"], P0, prior["u"])
    extra = np.maximum(Syy + c0 - np.einsum("ki,ki->k", u, b), 0.0)
    return {"gamma": prior["gamma"] + N, "u": u, "V": V, "alpha": prior["alpha"] + 0.5 * N,
            "beta": prior["beta"] + 0.5 * extra}


def kl_divergence(f, prior):
    """``KL(q(pi) || p(pi)) + sum_k KL(q(w_k, s2_k) || p(w_k, s2_k))``."""
    g, g0 = f["gamma"], prior["gamma"]
    kl = (special.gammaln(g.sum()) - special.gammaln(g).sum() - special.gammaln(g0.sum())
          + special.gammaln(g0).sum()
          + ((g - g0) * (special.digamma(g) - special.digamma(g.sum()))).sum())
    a, b, a0, b0 = f["alpha"], f["beta"], prior["alpha"], prior["beta"]
    kl += ((a - a0) * special.digamma(a) - special.gammaln(a) + special.gammaln(a0)
           + a0 * (np.log(b) - np.log(b0)) + a * (b0 - b) / b).sum()
    P0 = np.linalg.inv(prior["V"])
    d = f["u"].shape[1]
    diff = f["u"] - prior["u"]
    tr = np.einsum("kij,kji->k", P0, f["V"])
    quad = np.einsum("ki,kij,kj->k", diff, P0, diff)
    logdet_V0 = np.linalg.slogdet(prior["V"])[1]
    logdet_V = np.linalg.slogdet(f["V"])[1]
    kl += (0.5 * (tr + a / b * quad - d + logdet_V0 - logdet_V)).sum()
    return float(kl)


def cavi(X, y, prior, factors=None, tol=1e-6, max_iter=100):
    """CAVI from ``factors`` (default: the prior) with the kernels' stopping rule.

    Iteration ``i``: E-step (responsibilities, ``ELBO(r_i, theta_{i-1})`` recorded), then
    M-step; stop after the M-step of the first ``i >= 2`` whose ELBO moved by at most
    ``tol`` relative to the previous one, or after ``max_iter`` iterations.

    Returns
    -------
    factors : dict
    R : (n, K) array
        The last responsibilities.
    trace : (iterations,) array
        The ELBO of every iteration.
    """
    X, y = np.asarray(X, float), np.asarray(y, float)
    f = copy_factors(prior if factors is None else factors)
    trace = []
    R = None
    for it in range(max_iter):
        lr = log_rho(X, y, f)
        lse = special.logsumexp(lr, axis=1)
        R = np.exp(lr - lse[:, None])
        trace.append(float(lse.sum()) - kl_divergence(f, prior))
        f = mstep(X, y, R, prior)
        if it >= 1 and abs(trace[-1] - trace[-2]) <= tol * abs(trace[-2]):
            break
    return f, R, np.array(trace)


def vts_prior(dim, n_components, gamma0=1.0, u0=None, V0=None, alpha0=1.0, beta0=1.0):
    """A prior dict (``gamma``, ``u``, ``V``, ``alpha``, ``beta``, one row per component)
    with :class:`vits_ref.VTS`'s defaults: ``u0_k = k 1_d`` (the authors' code), ``V0 = I``."""
    K, d = n_components, dim
    u = (np.arange(K, dtype=float)[:, None] * np.ones(d) if u0 is None
         else np.broadcast_to(np.asarray(u0, float), (K, d)).copy())
    V = np.broadcast_to(np.eye(d) if V0 is None else np.asarray(V0, float), (K, d, d)).copy()
    return {"gamma": np.full(K, gamma0, float), "u": u, "V": V,
            "alpha": np.full(K, alpha0, float), "beta": np.full(K, beta0, float)}
