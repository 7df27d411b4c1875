"""Laplace TS with an IRLS MAP (vits_ref.Laplace; the Newton kernel kernels/newton.py on the
logistic potential kernels/logistic.py is IRLS).

Independent references: statsmodels' GLM (Binomial) fitted by its own IRLS (optional
dependency, skipped when absent), SciPy's BFGS on a plain NumPy potential, inverse
finite-difference Hessians, and the closed-form linear-Gaussian posterior.
"""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from vits_ref.kernels import newton as knewton
from vits_ref.kernels.logistic import POTENTIAL as LOGISTIC

import vits_ref as vr
from vits_ref.drivers import cpu
from vits_ref.gaussian import linear_posterior
from vits_ref.models.logistic import potential_scratch


def _irls_args(X, y, eta):
    """The logistic likelihood as kernel data and its scratch (the prior comes as P0, b0)."""
    n, d = X.shape
    data = (X, y, eta, 0.0, False, np.zeros((1, 1)), np.zeros(1))
    scratch = potential_scratch(n, d)
    return data, scratch


def irls(X, y, eta, P0, b0, theta, tol, max_iter, H, L):
    """IRLS = the compiled Newton driver on the logistic potential; theta in place."""
    data, scratch = _irls_args(X, y, eta)
    return cpu.newton(LOGISTIC)(data, P0, b0, theta, tol, max_iter, H, L, scratch)


def rel_err(got, want):
    want = np.asarray(want)
    return np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want))


def moment_check(x, mean, cov, n_se=5.0):
    """Mean and covariance of the rows of ``x`` within ``n_se`` standard errors.

    For i.i.d. Gaussian rows: SE(mean_i) = sqrt(S_ii/n) and Var(S_hat_ij) = (S_ii S_jj +
    S_ij^2)/n. With d <= 4 there are at most 14 entries tested at 5 SE: a correct
    implementation fails with probability < 14 * 5.7e-7 ~ 1e-5.
    """
    n = x.shape[0]
    var = np.diag(cov)
    assert np.all(np.abs(x.mean(axis=0) - mean) < n_se * np.sqrt(var / n))
    se = np.sqrt((np.outer(var, var) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(x, rowvar=False) - cov) < n_se * se)


# --------------------------------------------------------------------------- NumPy reference


def u_np(theta, X, y, eta, lam):
    z = X @ theta
    return eta * (np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * theta @ theta)


def grad_np(theta, X, y, eta, lam):
    return eta * (X.T @ (expit(X @ theta) - y) + lam * theta)


def check_vs_bfgs(theta, fun, jac, mu, x0):
    """``theta`` against SciPy's BFGS minimiser of ``fun`` (an independent optimiser).

    ``fun`` is ``mu``-strongly convex, so any point ``x`` lies within ``|grad(x)| / mu`` of
    the minimiser: the BFGS answer and ``theta`` agree to ``(|g(theta)| + |g(x_bfgs)|)/mu``.
    BFGS's line search stalls at |g| ~ 1e-9..1e-6 here (rounding of ``fun``, "precision
    loss"), so the bound, not SciPy's success flag, is what is asserted; it is required
    to be small (< 1e-5 relative) so that the check has teeth. The NumPy gradient at
    ``theta`` itself is at rounding level: Newton converges quadratically.
    """
    ref = minimize(fun, x0, jac=jac, method="BFGS", options={"gtol": 1e-9, "maxiter": 2000})
    g_ref = np.linalg.norm(jac(ref.x))
    g_map = np.linalg.norm(jac(theta))
    scale = np.linalg.norm(jac(np.zeros_like(theta)))  # gradient size at the start
    assert g_map < 1e-12 * scale
    bound = (g_ref + g_map) / mu
    assert bound < 1e-5 * np.linalg.norm(theta)
    assert np.linalg.norm(theta - ref.x) <= 1.01 * bound


def fd_hessian(theta, X, y, eta, lam, h=1e-5):
    E = np.eye(theta.size) * h
    Hfd = np.array([(grad_np(theta + e, X, y, eta, lam) - grad_np(theta - e, X, y, eta, lam))
                    / (2 * h) for e in E])
    return 0.5 * (Hfd + Hfd.T)


@pytest.fixture(scope="module")
def logit_data():
    rng = np.random.default_rng(31337)
    n, d = 300, 4
    X = rng.standard_normal((n, d)) * np.array([1.0, 0.5, 2.0, 1.0])
    y = (rng.random(n) < expit(X @ np.array([0.8, -1.5, 0.4, 0.0]))).astype(float)
    return X, y


# --------------------------------------------------------------------------- statsmodels


def test_irls_vs_statsmodels_glm_unpenalised(logit_data):
    sm = pytest.importorskip("statsmodels.api")
    X, y = logit_data
    # statsmodels' own IRLS, run to a deviance change of 1e-14 (its default 1e-8 leaves the
    # parameters at ~1e-5 relative); the result is the unpenalised MLE and the inverse Fisher
    # information at it
    res = sm.GLM(y, X, family=sm.families.Binomial()).fit(tol=1e-14, maxiter=200)
    # lam = 1e-12 (and eta = 1): the prior moves the MAP by lam |theta| / lmin(H) ~ 1e-13
    eng = vr.Laplace(4, model="logistic", lam=1e-12, tol=1e-12).update(X, y)
    assert eng.diagnostics["converged"]
    # both at their optimum to ~1e-13; cond(H) ~ 20 amplifies rounding to ~1e-13: 1e-9
    assert rel_err(eng.mean, res.params) < 1e-9
    assert rel_err(eng.cov, res.cov_params()) < 1e-9


def test_irls_vs_statsmodels_ridge(logit_data):
    sm = pytest.importorskip("statsmodels.api")
    X, y = logit_data
    n = X.shape[0]
    eta, lam = 3.0, 2.5
    # statsmodels' fit_regularized(L1_wt=0) minimises -loglike/n + alpha |theta|^2 / 2
    # (its docstring and GLM._fit_ridge): with alpha = lam/n this is U/(eta n), the same
    # minimiser (eta scales the whole potential and does not move the MAP)
    res = sm.GLM(y, X, family=sm.families.Binomial()).fit_regularized(alpha=lam / n,
                                                                      L1_wt=0.0)
    eng = vr.Laplace(4, model="logistic", eta=eta, lam=lam).update(X, y)
    # statsmodels stops BFGS at SciPy's default gtol = 1e-5 on the gradient of U/(eta n), so
    # its parameters are within |g| / lmin(hess U/(eta n)) of the optimum: bound it, x3
    hess_avg = eng.precision / (eta * n)
    bound = 3 * 1e-5 / np.linalg.eigvalsh(hess_avg)[0]
    assert np.max(np.abs(eng.mean - res.params)) < bound
    assert bound < 0.01 * np.max(np.abs(eng.mean))  # and the bound is not vacuous


# --------------------------------------------------------------------------- SciPy, FD


@pytest.mark.parametrize("eta,lam", [(1.0, 1.0), (2.0, 0.7), (0.3, 5.0)])
def test_map_vs_bfgs_and_cov_vs_fd_hessian(logit_data, eta, lam):
    X, y = logit_data
    eng = vr.Laplace(4, model="logistic", eta=eta, lam=lam).update(X, y)
    assert eng.diagnostics["converged"] and 2 <= eng.diagnostics["newton_iterations"] <= 10
    # U is (eta lam)-strongly convex
    check_vs_bfgs(eng.mean, lambda th: u_np(th, X, y, eta, lam),
                  lambda th: grad_np(th, X, y, eta, lam), eta * lam, np.zeros(4))
    # covariance: inverse of a central-difference Hessian of the NumPy gradient at the MAP
    # (truncation h^2 |U''''| ~ 1e-10 relative, rounding eps |g| / h ~ 1e-11): 1e-6
    Hfd = fd_hessian(eng.mean, X, y, eta, lam)
    assert rel_err(eng.precision, Hfd) < 1e-6
    assert rel_err(eng.cov, np.linalg.inv(Hfd)) < 1e-6
    # eta scales the posterior precision and leaves the MAP alone
    base = vr.Laplace(4, model="logistic", eta=1.0, lam=lam).update(X, y)
    assert rel_err(eng.mean, base.mean) < 1e-8
    assert rel_err(eng.cov, base.cov / eta) < 1e-8


def test_irls_general_gaussian_prior(logit_data, spd):
    """The kernel with prior N(theta0, inv(P0)) and data scaled by eta, against BFGS."""
    X, y = logit_data
    rng = np.random.default_rng(5)
    P0 = spd(rng, 4, cond=20.0) * 3.0
    theta0 = rng.standard_normal(4)
    eta = 1.8

    def u(th):
        z = X @ th
        r = th - theta0
        return eta * np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * r @ P0 @ r

    def g(th):
        return eta * X.T @ (expit(X @ th) - y) + P0 @ (th - theta0)

    theta = rng.standard_normal(4)  # arbitrary warm start
    H, L = np.empty((4, 4)), np.empty((4, 4))
    status, it = irls(X, y, eta, P0, P0 @ theta0, theta, 1e-10, 50, H, L)
    assert status == knewton.CONVERGED and it >= 2
    check_vs_bfgs(theta, u, g, np.linalg.eigvalsh(P0)[0], theta0)
    s = expit(X @ theta)
    Hx = eta * (X * (s * (1 - s))[:, None]).T @ X + P0  # posterior precision, closed form
    assert rel_err(H, Hx) < 1e-12
    assert rel_err(L @ L.T, Hx) < 1e-12 and np.array_equal(np.triu(L, 1), np.zeros((4, 4)))


def test_irls_python_body_matches_driver(logit_data):
    """The body called from Python (loops; what the CUDA simulator runs) vs the driver."""
    X, y = logit_data
    X, y = X[:40], y[:40]
    n, d = X.shape
    eta, lam = 1.3, 0.9
    P0, b0 = eta * lam * np.eye(d), np.zeros(d)
    theta_c = np.zeros(d)
    Hc, Lc = np.empty((d, d)), np.empty((d, d))
    sc, itc = irls(X, y, eta, P0, b0, theta_c, 1e-10, 50, Hc, Lc)
    theta2 = np.zeros((1, d))
    H, L = np.empty((d, d)), np.empty((d, d))
    data, scratch = _irls_args(X, y, eta)
    sp, itp = knewton.make_newton(LOGISTIC)(data, P0, b0, theta2, 1e-10, 50, H, L,
                                            np.empty((1, d)), np.empty(d), np.empty((1, d)),
                                            scratch)
    assert (sp, itp) == (sc, itc) == (knewton.CONVERGED, itc)
    # loops vs BLAS: rounding only (cond(H) ~ 10)
    assert rel_err(theta2[0], theta_c) < 1e-12
    assert rel_err(H, Hc) < 1e-12 and rel_err(L, Lc) < 1e-12


# --------------------------------------------------------------------------- linear model


def test_linear_model_is_exact(ill_conditioned):
    p = ill_conditioned
    eng = vr.Laplace(p.dim, model="linear", eta=p.eta, lam=p.lam).update(p.X, p.r)
    mean, cov = linear_posterior(p.X, p.r, eta=p.eta, lam=p.lam)
    # one Newton step is exact for a quadratic potential; the second confirms (|step| at
    # rounding level, cond ~ 110 times eps): 1e-10 is 1000x that
    assert eng.diagnostics["converged"] and eng.diagnostics["newton_iterations"] == 2
    assert rel_err(eng.mean, mean) < 1e-10
    assert rel_err(eng.cov, cov) < 1e-10
    assert eng.kl_to_posterior() == pytest.approx(0.0, abs=1e-10)
    lints = vr.LinTS(p.dim, eta=p.eta, lam=p.lam).update(p.X, p.r)
    assert rel_err(eng.mean, lints.mean) < 1e-10 and rel_err(eng.cov, lints.cov) < 1e-10
    # one observation at a time, warm-started: the same posterior
    inc = vr.Laplace(p.dim, model="linear", eta=p.eta, lam=p.lam)
    for i in range(p.X.shape[0]):
        inc.update(p.X[i:i + 1], p.r[i:i + 1])
    assert rel_err(inc.mean, mean) < 1e-10 and rel_err(inc.cov, cov) < 1e-10


# --------------------------------------------------------------------------- behaviour


def test_prior_and_warm_start(logit_data):
    X, y = logit_data
    eng = vr.Laplace(4, model="logistic", eta=2.0, lam=0.5)
    assert np.array_equal(eng.mean, np.zeros(4))
    assert rel_err(eng.cov, np.eye(4)) < 1e-15  # inv(eta lam I)
    eng.update(np.empty((0, 4)), np.empty(0))  # no data: still the prior
    assert np.allclose(eng.mean, 0.0, atol=0.0) and rel_err(eng.cov, np.eye(4)) < 1e-15
    batch = vr.Laplace(4, model="logistic", eta=2.0, lam=0.5).update(X, y)
    its = []
    for i in range(0, 300, 10):
        eng.update(X[i:i + 10], y[i:i + 10])
        its.append(eng.diagnostics["newton_iterations"])
    assert eng.diagnostics["n_obs"] == 300 and eng.diagnostics["converged"]
    # the same MAP (both converged to tol 1e-8; quadratic convergence leaves ~1e-16)
    assert rel_err(eng.mean, batch.mean) < 1e-8 and rel_err(eng.cov, batch.cov) < 1e-8
    # warm starts: late rounds (10 new points among hundreds) need few Newton steps
    assert max(its[-10:]) <= 4


def test_non_convergence_warns_and_flags(logit_data):
    X, y = logit_data
    eng = vr.Laplace(4, model="logistic", max_iter=1)
    with pytest.warns(RuntimeWarning, match=r"round 300 within max_iter=1"):
        eng.update(X, y)
    assert eng.diagnostics == {"n_obs": 300, "newton_iterations": 1, "converged": False}
    # the state is the last iterate, with its own Hessian (one Newton step from 0)
    assert np.all(np.isfinite(eng.mean)) and not np.allclose(eng.mean, 0.0)
    s = expit(X @ eng.mean)
    H = (X * (s * (1 - s))[:, None]).T @ X + np.eye(4)
    assert rel_err(eng.precision, H) < 1e-12
    # converging later is not an error: more iterations allowed, no warning
    ok = vr.Laplace(4, model="logistic", max_iter=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok.update(X, y)
    assert ok.diagnostics["converged"]


def test_divergence_raises():
    # features of 1e150 (the largest accepted): the fit still overflows
    X = np.full((3, 2), 1e150)
    y = np.array([1.0, 0.0, 1.0])
    with pytest.raises(vr.DivergenceError, match="Laplace.*round 3"):
        vr.Laplace(2, model="logistic").update(X, y)


def test_samples_match_mean_and_cov(logit_data):
    X, y = logit_data
    eng = vr.Laplace(4, model="logistic", eta=1.5, lam=1.0, seed=11).update(X, y)
    x = eng.sample(50_000)
    assert x.shape == (50_000, 4)
    # power: 5 SE on the variances is 5 sqrt(2/50000) = 3% of them
    moment_check(x, eng.mean, eng.cov)


def test_reproducible_and_fresh(logit_data):
    X, y = logit_data
    a, b = (vr.Laplace(4, model="logistic", seed=5).update(X, y) for _ in range(2))
    assert np.array_equal(a.sample(6), b.sample(6))
    c = vr.Laplace(4, model="logistic", seed=6).update(X, y)
    assert not np.array_equal(a.sample(3), c.sample(3))
    # sampling does not touch the fit
    m = a.mean
    a.sample(100)
    assert np.array_equal(a.mean, m)
    f = vr.Laplace(4, model="logistic", eta=2.0, lam=0.3, tol=1e-9, max_iter=7,
                   seed=1).fresh(seed=5)
    assert (f.eta, f.lam, f.tol, f.max_iter, f.n_obs, f.name) == (2.0, 0.3, 1e-9, 7, 0,
                                                                   "Laplace")
    f2 = vr.Laplace(4, model="logistic", seed=0).fresh(seed=5)
    assert np.array_equal(f2.update(X, y).sample(6),
                          vr.Laplace(4, model="logistic", seed=5).update(X, y).sample(6))


def test_bad_arguments():
    with pytest.raises(ValueError, match="tol"):
        vr.Laplace(2, model="logistic", tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        vr.Laplace(2, model="logistic", max_iter=0)
    with pytest.raises(ValueError, match="model"):
        vr.Laplace(2, model="probit")
    with pytest.raises(ValueError, match="features"):
        vr.Laplace(2, model="logistic").update(np.ones((1, 3)), np.ones(1))


def test_hard_instance_logistic_rewards():
    """Bernoulli rewards of the appendix-G instance: a posterior that covers theta*."""
    env = vr.envs.hard_instance(dim=10, n_arms=10, reward="logistic", seed=3)
    run = env.realise(3000, rng=4)
    assert set(np.unique(run.rewards)) <= {0.0, 1.0}
    rng = np.random.default_rng(8)
    arms = rng.integers(10, size=3000)  # uniform exploration: every arm often
    t = np.arange(3000)
    eng = vr.Laplace(10, model="logistic", lam=1.0, seed=0)
    eng.update(run.contexts[t, arms], run.rewards[t, arms])
    assert eng.diagnostics["converged"]
    # the arms span R^10 and each is played ~300 times, so the Laplace posterior is close to
    # Gaussian around the MLE: (theta* - MAP)^T H (theta* - MAP) ~ chi2_10, whose 99.99%
    # quantile is 35.6 (the prior N(0, I) with |theta*| = 1 adds a bias of order 1/300)
    r = env.theta_star - eng.mean
    assert r @ eng.precision @ r < 35.6
    # Thompson sampling with it: every round feeds a reward in {0, 1}
    pol = vr.ThompsonSampling(vr.Laplace(10, model="logistic", seed=2))
    for s in range(30):
        arm = pol.select(run.contexts[s])
        pol.update(run.contexts[s], arm, run.rewards[s, arm])
    assert pol.engine.n_obs == 30 and pol.engine.diagnostics["converged"]
