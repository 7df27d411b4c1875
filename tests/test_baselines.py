"""Baselines of the VITS paper: LinTS (exact), LinUCB, Langevin (LMC-TS).

Closed forms from ``vits_ref.gaussian`` and dense NumPy in ``tests/reference.py``.
"""

import math

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.gaussian import linear_posterior
from vits_ref.reference.naive import linucb_scores_naive, ula_stationary_cov


def rel_err(got, want):
    want = np.asarray(want)
    return np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want))


def moment_check(x, mean, cov, n_se=5.0):
    """Mean and covariance of the rows of ``x`` within ``n_se`` standard errors.

    For i.i.d. Gaussian rows: SE(mean_i) = sqrt(S_ii/n) and Var(S_hat_ij) = (S_ii S_jj +
    S_ij^2)/n. With d <= 5 there are at most 20 entries tested at 5 SE: a correct
    implementation fails with probability < 20 * 5.7e-7 ~ 1e-5.
    """
    n = x.shape[0]
    var = np.diag(cov)
    assert np.all(np.abs(x.mean(axis=0) - mean) < n_se * np.sqrt(var / n))
    se = np.sqrt((np.outer(var, var) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(x, rowvar=False) - cov) < n_se * se)


# ---------------------------------------------------------------------------------------
# LinTS
# ---------------------------------------------------------------------------------------

def test_lints_samples_match_posterior(small_problem):
    p = small_problem
    eng = vr.LinTS(p.dim, eta=p.eta, lam=p.lam, seed=1).update(p.X, p.r)
    mean, cov = linear_posterior(p.X, p.r, eta=p.eta, lam=p.lam)
    x = eng.sample(50_000)
    assert x.shape == (50_000, p.dim)
    # power: 5 SE on the variances is 5 sqrt(2/50000) = 3% of them
    moment_check(x, mean, cov)


def test_lints_mean_cov_closed_form(small_problem):
    p = small_problem
    eng = vr.LinTS(p.dim, eta=p.eta, lam=p.lam, seed=0).update(p.X, p.r)
    mean, cov = linear_posterior(p.X, p.r, eta=p.eta, lam=p.lam)
    # two triangular solves from a factor built by 12 rank-one updates, cond(V) ~ 10
    assert rel_err(eng.mean, mean) < 1e-10
    assert rel_err(eng.cov, cov) < 1e-10
    assert eng.kl_to_posterior() == pytest.approx(0.0, abs=1e-10)
    # the prior before any data: N(0, I/(lam eta))
    prior = vr.LinTS(3, eta=p.eta, lam=p.lam)
    assert np.array_equal(prior.mean, np.zeros(3))
    assert rel_err(prior.cov, np.eye(3) / (p.lam * p.eta)) < 1e-14


@pytest.mark.parametrize("one_at_a_time", [False, True])
def test_lints_rank_one_factor_after_200_updates(rng, one_at_a_time):
    d, lam, eta = 5, 0.7, 2.0
    X = rng.standard_normal((200, d)) * np.logspace(0, 1, d)
    r = rng.standard_normal(200)
    eng = vr.LinTS(d, eta=eta, lam=lam, seed=0)
    if one_at_a_time:
        for i in range(200):
            eng.update(X[i:i + 1], r[i:i + 1])
    else:
        eng.update(X, r)
    V = lam * np.eye(d) + X.T @ X
    # 200 backward-stable rank-one updates accumulate ~200 d eps ~ 2e-13; 1e-10 margin
    assert rel_err(eng.L @ eng.L.T, V) < 1e-10
    assert rel_err(eng.L, np.linalg.cholesky(V)) < 1e-10
    assert rel_err(eng.mean, np.linalg.solve(V, X.T @ r)) < 1e-10
    assert rel_err(eng.cov, np.linalg.inv(eta * V)) < 1e-10


def test_lints_sample_streams(small_problem):
    p = small_problem
    a, b = (vr.LinTS(p.dim, eta=p.eta, lam=p.lam, seed=5).update(p.X, p.r) for _ in range(2))
    assert np.array_equal(a.sample(4), b.sample(4))
    c = vr.LinTS(p.dim, eta=p.eta, lam=p.lam, seed=6).update(p.X, p.r)
    assert not np.array_equal(a.sample(4), c.sample(4))


# ---------------------------------------------------------------------------------------
# LinUCB
# ---------------------------------------------------------------------------------------

def test_linucb_scores_and_sherman_morrison(rng):
    d, K, lam, alpha = 5, 8, 0.5, 1.3
    pol = vr.LinUCB(d, alpha=alpha, lam=lam)
    V, b = lam * np.eye(d), np.zeros(d)
    scale = np.logspace(0, 1, d)
    for t in range(200):
        X = rng.standard_normal((K, d)) * scale
        if t % 50 == 0:
            # scores against np.linalg.inv(V) along the way; the recursion's error grows
            # like cond(V) eps per update (cond(V) <= ~1e4 here): 1e-8 is a wide margin
            assert rel_err(pol.scores(X), linucb_scores_naive(V, b, X, alpha)) < 1e-8
        arm = pol.select(X)
        assert arm == int(np.argmax(linucb_scores_naive(V, b, X, alpha)))
        reward = float(rng.standard_normal())
        pol.update(X, arm, reward)
        V += np.outer(X[arm], X[arm])
        b += reward * X[arm]
    assert rel_err(pol.Vinv, np.linalg.inv(V)) < 1e-8
    assert rel_err(pol.b, b) < 1e-13
    X = rng.standard_normal((K, d))
    assert rel_err(pol.scores(X), linucb_scores_naive(V, b, X, alpha)) < 1e-8


def test_linucb_alpha_zero_is_greedy(rng):
    pol = vr.LinUCB(3, alpha=0.0, lam=1.0)
    X = rng.standard_normal((4, 3))
    pol.update(X, 2, 1.0)
    theta = np.linalg.solve(np.eye(3) + np.outer(X[2], X[2]), X[2])
    assert rel_err(pol.scores(X), X @ theta) < 1e-12


def test_linucb_ties_go_to_lowest_index():
    pol = vr.LinUCB(2)
    assert pol.select(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])) == 0


# ---------------------------------------------------------------------------------------
# Langevin (LMC-TS)
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def langevin_problem():
    rng = np.random.default_rng(99)
    X = rng.standard_normal((10, 2)) * np.array([1.0, 0.5])
    r = X @ np.array([1.0, -2.0]) + rng.standard_normal(10)
    eta, lam = 1.5, 1.0
    mean, cov = linear_posterior(X, r, eta=eta, lam=lam)
    etaV = eta * (lam * np.eye(2) + X.T @ X)
    return X, r, eta, lam, mean, cov, np.linalg.eigvalsh(etaV), etaV


def test_langevin_long_run_matches_posterior(langevin_problem):
    X, r, eta, lam, mean, cov, eigs, etaV = langevin_problem
    # ULA on a Gaussian target is an AR(1) process whose stationary law is Gaussian with
    # the exact mean and covariance inv(A (I - hA/2)), A = eta V: the bias is O(h), at
    # most h lmax / 2 = 2% relative with h lmax = 0.04.
    h = 0.04 / eigs[-1]
    # thinning: sample(n) runs n_steps steps between draws; the slowest direction's lag-1
    # autocorrelation is (1 - h lmin)^n_steps = exp(-4) = 0.02 (cond ~ 2.6), so the
    # thinned draws are nearly independent (their variance inflation (1+rho)/(1-rho) is
    # 1.04, absorbed in the 6-SE tolerance below).
    n_steps = int(math.ceil(4.0 / (h * eigs[0])))
    eng = vr.Langevin(2, eta=eta, lam=lam, step_size=h, n_steps=n_steps, schedule="constant",
                      seed=17)
    eng.update(X, r)
    for _ in range(5):  # burn-in: 5 more updates, contraction e^-20 of the initial error
        eng.update(np.empty((0, 2)), np.empty(0))
    n = 20_000
    x = eng.sample(n)
    stationary = ula_stationary_cov(etaV, h)
    bias = np.abs(stationary - cov)
    assert np.all(np.diag(bias) <= 0.021 * np.diag(cov))  # the O(h) bias claimed above
    var = np.diag(stationary)
    # the mean is unbiased: 6 SE (2 coordinates; autocorrelation inflation 1.04)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 6 * np.sqrt(var / n))
    # covariance: exact posterior within 6 SE plus the bias bound
    se = np.sqrt((np.outer(var, var) + stationary ** 2) / n)
    emp = np.cov(x, rowvar=False)
    assert np.all(np.abs(emp - cov) < 6 * se + bias)
    # ... and the ULA covariance itself within 6 SE (the bias is resolved, not hidden)
    assert np.all(np.abs(emp - stationary) < 6 * se)
    # power: 6 SE on the variances is 6 sqrt(2/n) = 6% of them
    assert np.all(6 * np.diag(se) < 0.061 * var)


def test_langevin_sample_leaves_chain_untouched(langevin_problem):
    X, r, eta, lam, *_ = langevin_problem
    kw = dict(eta=eta, lam=lam, step_size=0.01, n_steps=10, schedule="constant", seed=3)
    a, b = vr.Langevin(2, **kw), vr.Langevin(2, **kw)
    a.update(X, r)
    b.update(X, r)
    theta = b.theta.copy()
    x = b.sample(50)
    assert np.array_equal(x[0], theta)  # n = 1 (and the first draw) is the chain's state
    assert np.array_equal(b.theta, theta)
    assert np.unique(x, axis=0).shape[0] == 50  # the other draws continue a copy
    assert np.array_equal(b.sample(1)[0], theta)
    # the optimisation trajectory is unchanged by the sampling
    a.update(X[:2], r[:2])
    b.update(X[:2], r[:2])
    assert np.array_equal(a.theta, b.theta)


def test_langevin_decayed_step(langevin_problem):
    X, r, eta, lam, *_ = langevin_problem
    eng = vr.Langevin(2, eta=eta, lam=lam, step_size=0.05, n_steps=3, seed=0)
    for t in range(1, 4):
        eng.update(X[t - 1:t], r[t - 1:t])
        assert eng.diagnostics["step_size"] == pytest.approx(0.05 / (eta * t), rel=1e-15)
