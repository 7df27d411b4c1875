"""EM for Gaussian mixtures (vits_ref.inference.gmm): exact cases, scikit-learn cross-check, API."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.stats import multivariate_normal

from vits_ref.inference.gmm import GMMResult, fit_gmm


def three_clusters(n=(400, 300, 300), seed=1):
    rng = np.random.default_rng(seed)
    params = [([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]]),
              ([3.0, 1.0], [[0.5, 0.0], [0.0, 0.2]]),
              ([0.0, 4.0], [[0.3, 0.1], [0.1, 0.8]])]
    parts = [rng.multivariate_normal(m, S, size=k) for (m, S), k in zip(params, n, strict=True)]
    return np.vstack(parts), params


def match(means_a, means_b):
    """Permutation ``p`` with ``means_b[p[k]]`` the component matching ``means_a[k]``."""
    cost = np.sum((means_a[:, None, :] - means_b[None, :, :]) ** 2, axis=2)
    rows, cols = linear_sum_assignment(cost)
    return cols[np.argsort(rows)]


def test_one_component_is_the_mle_gaussian():
    x = np.random.default_rng(0).normal(size=(500, 3)) @ np.array([[1, 0, 0], [.5, 1, 0],
                                                                   [0, .3, 2.0]])
    fit = fit_gmm(x, 1, reg_covar=0.0)
    centred = x - x.mean(axis=0)
    # one component: the M step from any responsibilities is the closed-form MLE
    np.testing.assert_allclose(fit.weights, [1.0])
    np.testing.assert_allclose(fit.means[0], x.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(fit.covs[0], centred.T @ centred / 500, rtol=1e-12, atol=1e-12)
    ref = multivariate_normal(fit.means[0], fit.covs[0]).logpdf(x)
    np.testing.assert_allclose(fit.logpdf(x), ref, rtol=1e-12)
    assert fit.log_likelihood == pytest.approx(ref.mean(), rel=1e-12)
    assert fit.converged and fit.n_iter <= 2


def test_well_separated_components_are_the_cluster_statistics():
    """Clusters 40 standard deviations apart: responsibilities are 0/1 to machine precision,
    so EM's fixed point is each cluster's sample weight, mean and MLE covariance (plus
    reg_covar on the diagonal) exactly; and the true means lie within Monte Carlo error."""
    rng = np.random.default_rng(3)
    true_means = np.array([[-20.0, 0.0], [20.0, 0.0], [0.0, 30.0]])
    sizes = (600, 900, 1500)
    x = np.vstack([rng.normal(m, 1.0, size=(k, 2)) for m, k in zip(true_means, sizes,
                                                                  strict=True)])
    reg = 1e-6
    fit = fit_gmm(x, 3, seed=0, reg_covar=reg)
    assert fit.converged
    p = match(true_means, fit.means)
    start = 0
    for k, size in enumerate(sizes):
        part = x[start:start + size]
        start += size
        c = part - part.mean(axis=0)
        j = p[k]
        np.testing.assert_allclose(fit.weights[j], size / x.shape[0], rtol=1e-10)
        np.testing.assert_allclose(fit.means[j], part.mean(axis=0), rtol=0, atol=1e-9)
        np.testing.assert_allclose(fit.covs[j], c.T @ c / size + reg * np.eye(2), rtol=0,
                                   atol=1e-9)
        # the sample mean of `size` unit-variance draws has standard error 1/sqrt(size);
        # 4 standard errors per coordinate: a false failure has probability 6e-5 each
        assert np.all(np.abs(fit.means[j] - true_means[k]) < 4.0 / np.sqrt(size))


def test_trace_is_monotone_without_regularisation():
    x, _ = three_clusters()
    for init in ("kmeans++", "random"):
        fit = fit_gmm(x, 3, seed=2, reg_covar=0.0, tol=1e-10, init=init, n_init=2)
        # EM never decreases the likelihood; 1e-12 allows the rounding of a mean of 1000
        # log densities of size ~3
        assert np.all(np.diff(fit.log_likelihood_trace) > -1e-12)
        assert fit.log_likelihood == fit.log_likelihood_trace[-1]
        assert fit.n_iter == fit.log_likelihood_trace.size - 1
        np.testing.assert_allclose(fit.logpdf(x).mean(), fit.log_likelihood, rtol=1e-13)


def test_against_scikit_learn():
    sklearn_mixture = pytest.importorskip("sklearn.mixture")
    x, _ = three_clusters()
    tol, reg = 1e-12, 1e-6
    fit = fit_gmm(x, 3, seed=0, n_init=5, max_iter=5000, tol=tol, reg_covar=reg)
    gm = sklearn_mixture.GaussianMixture(3, covariance_type="full", tol=tol, reg_covar=reg,
                                         max_iter=5000, n_init=5, random_state=0).fit(x)
    assert fit.converged and gm.converged_
    # both stop when the mean log-likelihood moves by < 1e-12 per iteration; EM converges
    # linearly (here at a rate of about 0.6 per iteration, measured), so each is within
    # 1e-12 / (1 - 0.6) < 1e-11 of the same maximum
    assert fit.log_likelihood == pytest.approx(gm.score(x), abs=1e-10)
    # the parameters: at a maximum the log-likelihood is quadratic in them, so a gap of
    # 1e-11 allows parameter differences of order sqrt(1e-11 / curvature); with the
    # curvature per sample >= 0.1 here, 1e-5; measured: at most 6.4e-6 (covariances)
    p = match(fit.means, gm.means_)
    np.testing.assert_allclose(gm.weights_[p], fit.weights, atol=2e-5)
    np.testing.assert_allclose(gm.means_[p], fit.means, atol=2e-5)
    np.testing.assert_allclose(gm.covariances_[p], fit.covs, atol=2e-5)
    # an exact check of the E step's density: scikit-learn scoring OUR parameters
    gm.weights_, gm.means_, gm.covariances_ = fit.weights, fit.means, fit.covs
    gm.precisions_cholesky_ = np.stack([np.linalg.inv(np.linalg.cholesky(S)).T
                                        for S in fit.covs])
    np.testing.assert_allclose(gm.score_samples(x), fit.logpdf(x), rtol=1e-12)


def test_restarts_are_seeded_and_keep_the_best():
    x, _ = three_clusters()
    a = fit_gmm(x, 3, seed=5, n_init=3)
    b = fit_gmm(x, 3, seed=5, n_init=3)
    np.testing.assert_array_equal(a.means, b.means)
    assert a.best_init == b.best_init
    singles = [fit_gmm(x, 3, seed=np.random.default_rng(i), n_init=1).log_likelihood
               for i in range(3)]
    # n_init restarts can only be as good as or better than the first of them
    assert a.log_likelihood >= fit_gmm(x, 3, seed=5, n_init=1).log_likelihood - 1e-12
    assert max(singles) <= a.log_likelihood + 1e-3  # all restarts reach the same optimum


def test_sample_reproduces_the_mixture():
    fit = GMMResult(np.array([0.3, 0.7]), np.array([[0.0, 0.0], [5.0, -1.0]]),
                    np.array([np.eye(2), [[2.0, 0.5], [0.5, 1.0]]]), 0.0, np.zeros(1), True,
                    0, 0)
    n = 20_000
    s = fit.sample(n, rng=0)
    mean = 0.3 * fit.means[0] + 0.7 * fit.means[1]
    cov = sum(w * (S + np.outer(m - mean, m - mean))
              for w, m, S in zip(fit.weights, fit.means, fit.covs, strict=True))
    # 5 standard errors of the sample mean per coordinate
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(s.mean(axis=0) - mean) < 5 * se)
    np.testing.assert_array_equal(s, fit.sample(n, rng=0))


@pytest.mark.parametrize("kwargs, exc, match_text", [
    ({"samples": np.zeros(5)}, ValueError, "samples must be 2-D"),
    ({"samples": [[0.0, np.nan]] * 5}, ValueError, "NaN"),
    ({"samples": [["a"]]}, TypeError, "numeric"),
    ({"samples": np.zeros((2, 2)), "n_components": 3}, ValueError, "at least one sample"),
    ({"n_components": 0}, ValueError, "n_components"),
    ({"reg_covar": -1.0}, ValueError, "reg_covar"),
    ({"tol": 0.0}, ValueError, "tol"),
    ({"init": "kmeans"}, ValueError, "init"),
    ({"n_init": 1.5}, TypeError, "n_init"),
])
def test_validation(kwargs, exc, match_text):
    args = {"samples": np.random.default_rng(0).normal(size=(20, 2)), "n_components": 2,
            **kwargs}
    with pytest.raises(exc, match=match_text):
        fit_gmm(**args)


def test_degenerate_component_needs_reg_covar():
    # 3 distinct points, 3 components: each collapses onto one point (zero covariance)
    x = np.repeat(np.array([[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]]), 10, axis=0)
    with pytest.raises(ValueError, match="reg_covar"):
        fit_gmm(x, 3, reg_covar=0.0)
    fit = fit_gmm(x, 3, reg_covar=1e-3)
    np.testing.assert_allclose(np.sort(fit.weights), [1 / 3] * 3, rtol=1e-12)
    assert np.all(np.isfinite(fit.log_likelihood_trace))
