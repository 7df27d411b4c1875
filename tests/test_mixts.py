"""MixTS (exact mixture posterior) and TunedTS (MLE Gaussian prior) against closed forms,
a brute-force grid posterior and independent references."""

import numpy as np
import pytest
from scipy.special import expit, logsumexp
from scipy.stats import norm

import vits_ref as vr
from vits_ref.gaussian import linear_posterior_general
from vits_ref.gaussian.divergences import linear_gaussian_log_evidence
from vits_ref.inference.mixts import TunedLaplace, TunedLinTS

WEIGHTS = np.array([0.3, 0.7])
MEANS = np.array([[-1.0, 0.5], [1.0, -0.5]])
COVS = np.array([[[0.3, 0.1], [0.1, 0.2]], [[0.2, -0.05], [-0.05, 0.4]]])


def data(n, theta=(0.2, 0.1), sigma=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    y = X @ np.asarray(theta) + sigma * rng.standard_normal(n)
    return X, y


def grid_posterior(X, y, sigma, half=6.0, h=0.0125):
    """Prior density times likelihood on a grid of cell centres, in log space."""
    centres = -half + h / 2 + h * np.arange(int(round(2 * half / h)))
    T1, T2 = np.meshgrid(centres, centres, indexing="ij")
    pts = np.column_stack([T1.ravel(), T2.ravel()])
    log_prior = logsumexp(np.stack([np.log(w) + vr.gaussian.logpdf(pts, m, S)
                                    for w, m, S in zip(WEIGHTS, MEANS, COVS, strict=True)]),
                          axis=0)
    resid = y[None, :] - pts @ X.T
    log_lik = (-0.5 * np.sum(resid ** 2, axis=1) / sigma ** 2
               - 0.5 * y.size * np.log(2 * np.pi * sigma ** 2))
    return pts, log_prior + log_lik, h


def test_mixture_posterior_equals_grid_posterior():
    sigma = 1.0
    X, y = data(6, sigma=sigma)
    eng = vr.MixTS(WEIGHTS, MEANS, COVS, sigma=sigma, seed=0).update(X, y)
    w = eng.diagnostics["weights"]
    assert 0.05 < w[0] < 0.95  # both components matter: a non-trivial check
    pts, log_joint, h = grid_posterior(X, y, sigma)
    # the midpoint rule on the 12 x 12 box: the integrands are Gaussian mixtures, for which
    # the rule is spectrally accurate (error ~ exp(-2 pi^2 s^2 / h^2) with the posterior
    # standard deviations s >= 0.2: below 1e-100); the mass outside the box, more than
    # 8 standard deviations from every mean, is below 1e-14. So 1e-8 is rounding only.
    log_z = logsumexp(log_joint) + 2 * np.log(h)
    assert eng.diagnostics["log_marginal"] == pytest.approx(log_z, abs=1e-8)
    p = np.exp(log_joint - logsumexp(log_joint))
    mean = p @ pts
    cov = (pts - mean).T @ ((pts - mean) * p[:, None])
    np.testing.assert_allclose(eng.mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(eng.cov, cov, rtol=0, atol=1e-8)
    # the mass of each mode's half-plane {theta_1 > 0}: closed form from the mixture vs
    # the grid, whose cell edges include theta_1 = 0. On a half-line the midpoint rule
    # errs by about h^2/24 |f'(0)| for the theta_1-marginal density f; |f'| is at most
    # sum_k w_k / (s_k^2 sqrt(2 pi e)) with s_k the components' standard deviations
    comps = eng.component_posteriors()
    exact = sum(wk * norm.sf(0.0, loc=m[0], scale=np.sqrt(S[0, 0]))
                for wk, (m, S) in zip(w, comps, strict=True))
    fprime = sum(wk / (S[0, 0] * np.sqrt(2 * np.pi * np.e))
                 for wk, (_, S) in zip(w, comps, strict=True))
    assert 0.1 < exact < 0.9
    assert abs(p[pts[:, 0] > 0].sum() - exact) <= h ** 2 / 24 * fprime + 1e-12


def test_component_posteriors_and_evidence_are_the_closed_forms():
    sigma = 0.7
    X, y = data(25, sigma=sigma, seed=3)
    eng = vr.MixTS(WEIGHTS, MEANS, COVS, sigma=sigma).update(X[:10], y[:10]).update(X[10:],
                                                                                    y[10:])
    noise = sigma ** 2 * np.eye(y.size)
    log_ev = []
    for k, (m, S) in enumerate(zip(MEANS, COVS, strict=True)):
        mean_k, cov_k = linear_posterior_general(X, y, m, S, sigma ** 2)
        got_mean, got_cov = eng.component_posteriors()[k]
        np.testing.assert_allclose(got_mean, mean_k, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got_cov, cov_k, rtol=1e-10, atol=1e-12)
        # log N(y; X m_k, sigma^2 I + X S_k X^T), by a dense n x n Cholesky
        log_ev.append(linear_gaussian_log_evidence(y - X @ m, X, S, noise))
    np.testing.assert_allclose(eng.diagnostics["log_evidence"], log_ev, rtol=1e-10)
    log_w = np.log(WEIGHTS) + np.array(log_ev)
    np.testing.assert_allclose(eng.posterior_weights, np.exp(log_w - logsumexp(log_w)),
                               rtol=1e-9)
    assert eng.diagnostics["log_marginal"] == pytest.approx(logsumexp(log_w), rel=1e-10)
    assert eng.n_obs == 25


def test_one_component_is_lints():
    eta, lam = 4.0, 2.0
    X, y = data(40, sigma=0.5, seed=1)
    mix = vr.MixTS([1.0], np.zeros((1, 2)), [np.eye(2) / (lam * eta)], sigma=eta ** -0.5)
    lin = vr.LinTS(2, eta=eta, lam=lam)
    for lo in range(0, 40, 7):
        mix.update(X[lo:lo + 7], y[lo:lo + 7])
        lin.update(X[lo:lo + 7], y[lo:lo + 7])
    np.testing.assert_allclose(mix.mean, lin.mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mix.cov, lin.cov, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(mix.posterior_weights, [1.0])


def test_draws_follow_the_mixture():
    X, y = data(6)
    eng = vr.MixTS(WEIGHTS, MEANS, COVS, seed=4).update(X, y)
    n = 20_000
    s = eng.sample(n)
    # 5 standard errors of the sample mean per coordinate
    se = np.sqrt(np.diag(eng.cov) / n)
    assert np.all(np.abs(s.mean(axis=0) - eng.mean) < 5 * se)
    # share of draws nearer component 1's posterior mean than component 0's: the
    # mixture's own probability of that half-plane, a binomial proportion (5 s.e.)
    (m0, S0), (m1, S1) = eng.component_posteriors()
    normal = m1 - m0
    cut = normal @ (m0 + m1) / 2
    frac = np.mean(s @ normal > cut)
    prob = sum(w * norm.sf(cut, loc=normal @ m, scale=np.sqrt(normal @ S @ normal))
               for w, (m, S) in zip(eng.posterior_weights, [(m0, S0), (m1, S1)],
                                    strict=True))
    assert abs(frac - prob) < 5 * np.sqrt(prob * (1 - prob) / n)
    eng2 = vr.MixTS(WEIGHTS, MEANS, COVS, seed=4).update(X, y)
    np.testing.assert_array_equal(eng2.sample(n), s)


def test_many_observations_stay_finite_and_pick_the_right_component():
    # 100 000 observations: the likelihoods underflow (log p(h | k) ~ -1.5e5) but the
    # weights come from log-sum-exp
    X, y = data(100_000, theta=(1.0, -0.5), seed=2)
    eng = vr.MixTS(WEIGHTS, MEANS, COVS).update(X, y)
    assert np.all(np.isfinite(eng.diagnostics["log_evidence"]))
    assert eng.diagnostics["log_evidence"].max() < -1e5
    # the weights tend to the prior densities at theta_* (the likelihood's mass is the same
    # for both components), not to 0/1; exactly, by Bayes' rule at any point theta,
    # p(h | k) = p(h | theta) N(theta; m_k, S_k) / N(theta; m_hat_k, S_hat_k): an identity
    # in the engine's component posteriors, with every O(n) term cancelled
    theta = eng.mean
    log_ratio = np.log(eng.posterior_weights[0] / eng.posterior_weights[1])
    identity = [np.log(WEIGHTS[k]) + vr.gaussian.logpdf(theta, MEANS[k], COVS[k])
                - vr.gaussian.logpdf(theta, *eng.component_posteriors()[k]) for k in (0, 1)]
    assert log_ratio == pytest.approx(identity[0] - identity[1], abs=1e-6)
    # and the large-n limit log(w_0 N(theta; m_0, S_0) / (w_1 N(theta; m_1, S_1))): it
    # ignores the components' posterior means differing by 3e-4 (posterior sd 5.5e-3),
    # worth a few 1e-3 in the log ratio here (measured 3e-3)
    limit = [np.log(WEIGHTS[k]) + vr.gaussian.logpdf(theta, MEANS[k], COVS[k]) for k in (0, 1)]
    assert log_ratio == pytest.approx(limit[0] - limit[1], abs=2e-2)
    assert eng.posterior_weights[1] > 0.999999
    # posterior mean within 5 posterior standard deviations of the truth
    z = (eng.mean - [1.0, -0.5]) / np.sqrt(np.diag(eng.cov))
    assert np.all(np.abs(z) < 5)
    # sequential updates equal the batch (the statistics are sums)
    seq = vr.MixTS(WEIGHTS, MEANS, COVS)
    for lo in range(0, 100_000, 25_000):
        seq.update(X[lo:lo + 25_000], y[lo:lo + 25_000])
    np.testing.assert_allclose(seq.mean, eng.mean, rtol=1e-9)


def test_fresh_and_protocol():
    eng = vr.MixTS(WEIGHTS, MEANS, COVS, sigma=2.0, seed=0)
    np.testing.assert_allclose(eng.posterior_weights, WEIGHTS)
    assert eng.diagnostics["log_marginal"] == pytest.approx(0.0, abs=1e-12)  # no data
    X, y = data(5)
    eng.update(X, y)
    new = eng.fresh(seed=1)
    assert new.n_obs == 0 and new.sigma == 2.0 and isinstance(new, vr.MixTS)
    np.testing.assert_allclose(new.posterior_weights, WEIGHTS)
    np.testing.assert_allclose(new.mean, WEIGHTS @ MEANS)
    assert set(eng.diagnostics) >= {"n_obs", "weights", "log_evidence", "log_marginal"}


def test_from_samples_recovers_the_papers_mixture():
    shape = vr.envs.PRIOR_SHAPES["mixture"]
    weights, means, covs = shape.mixture
    n = 10_000
    eng = vr.MixTS.from_samples(shape.sample(n, rng=0), n_components=2, sigma=2.0, seed=0)
    order = np.argsort(eng.prior_means[:, 0])
    # weights: binomial proportion of n, 5 s.e.; means: 5 s.e. of n/2 draws of sd 0.22
    np.testing.assert_allclose(eng.prior_weights[order], weights,
                               atol=5 * np.sqrt(0.25 / n))
    np.testing.assert_allclose(eng.prior_means[order], means,
                               atol=5 * np.sqrt(0.05 / (n / 2)))
    # covariance entries: s.e. of a variance 0.05 estimated from n/2 draws is
    # 0.05 sqrt(2 / (n/2)) = 1e-3; of the covariance 0.05 / sqrt(n/2) = 7e-4
    np.testing.assert_allclose(eng.prior_covs[order], covs, atol=5e-3)
    assert eng.prior_fit.converged


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"weights": [0.5, -0.5]}, ValueError, "positive"),
    ({"weights": [1.0]}, ValueError, "weights must have shape"),
    ({"covs": np.array([np.eye(2), -np.eye(2)])}, ValueError, r"covs\[1\]"),
    ({"covs": np.ones((2, 2, 3))}, ValueError, "covs must have shape"),
    ({"means": np.zeros(2)}, ValueError, "means must be 2-D"),
    ({"sigma": 0.0}, ValueError, "sigma"),
])
def test_mixts_validation(kwargs, exc, text):
    args = {"weights": WEIGHTS, "means": MEANS, "covs": COVS, **kwargs}
    with pytest.raises(exc, match=text):
        vr.MixTS(**args)


# ------------------------------------------------------------------------------------------
# TunedTS
# ------------------------------------------------------------------------------------------

def prior_samples(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return rng.multivariate_normal([0.5, -1.0, 0.2], [[1.0, 0.3, 0.0], [0.3, 0.5, 0.1],
                                                      [0.0, 0.1, 0.8]], size=n)


def test_tuned_ts_linear_is_the_general_prior_posterior():
    samples = prior_samples()
    sigma = 2.0
    eng = vr.TunedTS(samples, sigma=sigma, seed=0)
    assert isinstance(eng, TunedLinTS) and eng.name == "TunedTS"
    m0 = samples.mean(axis=0)
    S0 = np.cov(samples.T, bias=True)  # the MLE: divisor n
    np.testing.assert_allclose(eng.mean, m0, rtol=1e-12)
    np.testing.assert_allclose(eng.cov, S0, rtol=1e-10)
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(30, 3))
    y = X @ [1.0, 0.0, -1.0] + sigma * rng.standard_normal(30)
    eng.update(X, y)
    # eta = 1/sigma^2 with an untempered prior is the paper's eq. 3
    mean, cov = linear_posterior_general(X, y, m0, S0, sigma ** 2)
    np.testing.assert_allclose(eng.mean, mean, rtol=1e-10)
    np.testing.assert_allclose(eng.cov, cov, rtol=1e-10)
    new = eng.fresh(seed=3)
    assert new.name == "TunedTS" and new.n_obs == 0
    np.testing.assert_allclose(new.mean, m0, rtol=1e-12)


def test_standard_ts_is_lints_with_unit_prior():
    sigma = 2.0
    eng = vr.TunedTS.standard(3, sigma=sigma, seed=0)
    lin = vr.LinTS(3, eta=1 / sigma ** 2, lam=sigma ** 2)
    X, y = prior_samples(20, seed=2), np.linspace(-1, 1, 20)
    eng.update(X, y)
    lin.update(X, y)
    assert eng.name == "TS"
    np.testing.assert_allclose(eng.mean, lin.mean, rtol=1e-10)
    np.testing.assert_allclose(eng.cov, lin.cov, rtol=1e-10)
    # the default prior: the fused compiled loop runs it, with the Python loop's regret
    assert eng.fused() is not None and eng.fresh(seed=1).name == "TS"
    env = vr.envs.prior_bandit("banana", n_arms=20, seed=0)
    pol = vr.ThompsonSampling(vr.TunedTS.standard(2, sigma=sigma))
    kw = dict(n_rounds=30, n_runs=2, seed=1, new_instance_per_run=True)
    fused, loop = vr.simulate(pol, env, fused=True, **kw), vr.simulate(pol, env, fused=False, **kw)
    assert fused.fused and not loop.fused
    np.testing.assert_allclose(fused.regret, loop.regret, rtol=0, atol=1e-12)


def test_tuned_ts_logistic_is_the_laplace_posterior():
    samples = prior_samples()
    eng = vr.TunedTS(samples, model="logistic", seed=0)
    assert isinstance(eng, TunedLaplace) and eng.name == "TunedTS"
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(200, 3))
    y = (rng.random(200) < expit(X @ [1.0, -2.0, 0.5])).astype(float)
    eng.update(X, y)
    m0, P0 = samples.mean(axis=0), np.linalg.inv(np.cov(samples.T, bias=True))
    theta = eng.mean
    # independent NumPy: the gradient of the negative log posterior vanishes at the MAP
    # (IRLS stops at a relative step of 1e-8; Newton converges quadratically, so the
    # gradient is far below that) and the covariance is the inverse Hessian there
    grad = X.T @ (expit(X @ theta) - y) + P0 @ (theta - m0)
    assert np.abs(grad).max() < 1e-8
    p = expit(X @ theta)
    hess = X.T @ (X * (p * (1 - p))[:, None]) + P0
    np.testing.assert_allclose(eng.cov, np.linalg.inv(hess), rtol=1e-8)
    assert eng.fresh(seed=1).n_obs == 0


def test_tuned_ts_runs_in_simulate():
    env = vr.envs.prior_bandit("banana", n_arms=20, seed=0)
    samples = env.prior_samples(2000, rng=0)
    for engine in (vr.TunedTS(samples, sigma=2.0),
                   vr.MixTS.from_samples(samples, n_components=2, sigma=2.0)):
        pol = vr.ThompsonSampling(engine)
        a = vr.simulate(pol, env, n_rounds=40, n_runs=2, seed=1, new_instance_per_run=True)
        b = vr.simulate(pol, env, n_rounds=40, n_runs=2, seed=1, new_instance_per_run=True)
        assert a.policy == engine.name and not a.fused
        np.testing.assert_array_equal(a.regret, b.regret)
        assert np.all(a.regret >= 0)
    env = vr.envs.prior_bandit("ring", n_arms=20, reward="logistic", seed=0)
    pol = vr.ThompsonSampling(vr.TunedTS(samples, model="logistic"))
    res = vr.simulate(pol, env, n_rounds=30, n_runs=2, seed=1, new_instance_per_run=True)
    assert np.all(np.isfinite(res.regret))


@pytest.mark.parametrize("call, exc, text", [
    (lambda: vr.TunedTS(np.zeros((2, 3))), ValueError, "n >= d \\+ 1"),
    (lambda: vr.TunedTS(np.zeros((10, 2))), ValueError, "singular"),
    (lambda: vr.TunedTS(prior_samples(), model="logistic", sigma=2.0), ValueError, "sigma"),
    (lambda: vr.TunedTS(prior_samples(), model="mlp"), ValueError, "model"),
    (lambda: vr.TunedTS(prior_samples(), sigma=-1.0), ValueError, "sigma"),
    (lambda: vr.TunedTS(prior_samples(), tol=1e-6), TypeError, "unexpected"),
    (lambda: vr.TunedTS.standard(0), ValueError, "dim"),
    (lambda: TunedLinTS(np.zeros(2), np.eye(2), label=3), TypeError, "label"),
])
def test_tuned_ts_validation(call, exc, text):
    with pytest.raises(exc, match=text):
        call()
