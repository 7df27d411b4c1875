"""The diffusion prior's schedule, the exact Gaussian diffusion prior and the compiled
reverse chains (vits_ref.diffusion, kernels/diffusion_chain.py).

Ground truths: hand computation (schedule); the closed form ``N(m, S)`` and exact moment
propagation through the linear-Gaussian chain (vits_ref.reference.diffusion.chain_moments);
the plain-NumPy reference chains fed the same normals; finite differences (the vjp).
Monte Carlo tolerances are computed from the sample size (see ``assert_moments``).
"""

import numpy as np
import pytest
from scipy import stats
from vits_ref.kernels.logistic import POTENTIAL as LOGISTIC

import vits_ref as vr
from vits_ref.diffusion import GaussianDiffusionPrior, Schedule, chain
from vits_ref.models.logistic import potential_scratch
from vits_ref.reference import diffusion as ref

# Every prior below is moment-tested at a fixed seed; a Gaussian fails the bounds of
# assert_moments with probability about 1e-5 per test (so never, at these seeds).
N_MC = 20000


def assert_moments(x, mean, cov, z_cov=5.0, p_mean=1e-6):
    """Sample mean and covariance of ``x`` (n, d) against ``N(mean, cov)`` within Monte
    Carlo bounds: Hotelling's ``n (xbar - m)^T cov^-1 (xbar - m) ~ chi2_d`` below its
    ``1 - p_mean`` quantile, and each covariance entry within ``z_cov`` standard errors,
    ``sd(S_ij) = sqrt((C_ii C_jj + C_ij^2) / n)`` (Gaussian fourth moments)."""
    n, d = x.shape
    dm = x.mean(0) - mean
    t2 = n * dm @ np.linalg.solve(cov, dm)
    assert t2 < stats.chi2.ppf(1 - p_mean, d), (t2, x.mean(0), mean)
    C = np.cov(x, rowvar=False)
    sd = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    worst = np.max(np.abs(C - cov) / sd)
    assert worst < z_cov, (worst, C, cov)


def spd(rng, d, cond=5.0):
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * np.logspace(0, np.log10(cond), d)) @ q.T


# --------------------------------------------------------------------------- schedule


def test_schedule_by_hand():
    s = Schedule(3, alpha=0.5)
    np.testing.assert_array_equal(s.alpha, [1.0, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(s.beta, [0.0, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(s.abar, [1.0, 0.5, 0.25, 0.125])
    # btilde_t = (1 - abar_{t-1}) / (1 - abar_t) beta_t
    np.testing.assert_allclose(s.btilde_raw, [0.0, 0.0, 0.5 / 0.75 * 0.5, 0.75 / 0.875 * 0.5],
                               rtol=1e-15)
    assert s.btilde[1] == s.beta[1] == 0.5  # clipped (else the last stage ignores the evidence)
    np.testing.assert_array_equal(s.btilde[2:], s.btilde_raw[2:])
    c = s.coefficients()
    np.testing.assert_allclose(c[2], [0.25, 0.5, np.sqrt(0.75), np.sqrt(0.5) * 0.5 / 0.75,
                                      np.sqrt(0.5) * 0.5 / 0.75, np.sqrt(1 / 3)], rtol=1e-15)


def test_schedule_array_and_paper_default():
    s = Schedule(3, alpha=[0.9, 0.8, 0.7])
    np.testing.assert_allclose(s.abar, [1.0, 0.9, 0.72, 0.504], rtol=1e-15)
    p = Schedule()
    assert p.n_stages == 100 and abs(p.abar[-1] - 0.97 ** 100) < 1e-15


@pytest.mark.parametrize("kwargs, err", [
    ({"n_stages": 0}, ValueError), ({"n_stages": 2.5}, TypeError),
    ({"alpha": 1.0}, ValueError), ({"alpha": 0.0}, ValueError),
    ({"n_stages": 2, "alpha": [0.5, 1.2]}, ValueError),
    ({"n_stages": 2, "alpha": [0.5]}, ValueError),
])
def test_schedule_validation(kwargs, err):
    with pytest.raises(err):
        Schedule(**kwargs)


# --------------------------------------------------------------------------- the prior


def test_gaussian_prior_eps_is_the_closed_form_and_vjp_its_transpose(rng):
    d = 3
    m, S = rng.standard_normal(d), spd(rng, d)
    p = GaussianDiffusionPrior(m, S, n_stages=10)
    eps, jac = ref.gaussian_eps(p)
    s = rng.standard_normal((4, d))
    for t in (1, 5, 10):
        np.testing.assert_allclose(p.eps(t, s), [eps(t, x) for x in s], rtol=1e-12, atol=1e-13)
        v = rng.standard_normal((4, d))
        np.testing.assert_allclose(chain.vjp_rows(p, t, s, v), v @ jac(t), rtol=1e-12,
                                   atol=1e-13)
        # the vjp against central differences of the compiled eps (affine: exact up to
        # rounding, 1e-7 relative for a step of 1e-4)
        h = 1e-4
        J = np.stack([(p.eps(t, s[0] + h * e) - p.eps(t, s[0] - h * e)) / (2 * h)
                      for e in np.eye(d)], axis=1)
        np.testing.assert_allclose(chain.vjp_rows(p, t, s[:1], v[:1])[0], J.T @ v[0],
                                   rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(p.reverse_mean(t, s[0]), ref.reverse_mean(p, t, s[0]),
                                   rtol=1e-12, atol=1e-13)


def test_gaussian_prior_exact_chain_moments_are_the_prior(rng):
    # exact reverse variance + exact start: the chain is exact (closed-form propagation)
    for d in (1, 2, 5):
        m, S = rng.standard_normal(d), spd(rng, d)
        mm, C = ref.chain_moments(GaussianDiffusionPrior(m, S))
        np.testing.assert_allclose(mm, m, atol=1e-12)
        np.testing.assert_allclose(C, S, atol=1e-11)


@pytest.mark.parametrize("d, seed", [(2, 1), (5, 2)])
def test_exact_prior_samples_reproduce_the_gaussian(d, seed):
    rng = np.random.default_rng(seed)
    m, S = rng.standard_normal(d), spd(rng, d)
    x = GaussianDiffusionPrior(m, S).sample(N_MC, seed=seed)
    assert x.shape == (N_MC, d)
    assert_moments(x, m, S)


def test_ddpm_chain_covariance_shortfall():
    """The paper's chain (btilde_t I, start N(0, I), T = 100,
    alpha = 0.97) is biased. Exact propagation gives the chain's own law; the samples
    match it (so the code is right), and it falls short of S by a stated amount."""
    m, S = np.array([0.5, -0.5]), np.array([[1.0, 0.4], [0.4, 0.8]])
    p = GaussianDiffusionPrior(m, S, reverse_variance="ddpm", start="standard")
    mc, Cc = ref.chain_moments(p)
    ratio = np.trace(Cc) / np.trace(S)
    # measured: 0.9326 (6.7% short in trace, 14% in determinant: 0.859); the start
    # N(0, I) moves the mean by 3% of m (0.4855, -0.4901)
    assert 0.925 < ratio < 0.940, ratio
    assert 0.85 < np.linalg.det(Cc) / np.linalg.det(S) < 0.87
    x = p.sample(N_MC, seed=7)
    assert_moments(x, mc, Cc)
    # the shortfall is visible in the samples: the sample trace is far below tr(S)
    # (sd of the sample trace: sqrt(2 tr(C^2) / n))
    sd_tr = np.sqrt(2 * np.trace(Cc @ Cc) / N_MC)
    assert (np.trace(S) - np.trace(np.cov(x, rowvar=False))) / sd_tr > 8
    # the DDPM variance with the exact start: the start is not the cause
    _, Ce = ref.chain_moments(GaussianDiffusionPrior(m, S, reverse_variance="ddpm"))
    assert abs(np.trace(Ce) / np.trace(S) - ratio) < 2e-3


def test_prior_validation(rng):
    with pytest.raises(ValueError, match="cov"):
        GaussianDiffusionPrior([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="cov"):
        GaussianDiffusionPrior([0.0, 0.0], np.eye(3))
    with pytest.raises(ValueError, match="reverse_variance"):
        GaussianDiffusionPrior([0.0], [1.0], reverse_variance="ddim")
    with pytest.raises(ValueError, match="start"):
        GaussianDiffusionPrior([0.0], [1.0], start="zero")
    with pytest.raises(ValueError, match="mean"):
        GaussianDiffusionPrior([np.nan], [1.0])
    p = GaussianDiffusionPrior([0.0, 1.0], [1.0, 2.0], n_stages=5)
    with pytest.raises(ValueError, match="t must be a stage"):
        p.reverse_mean(6, np.zeros(2))
    with pytest.raises(ValueError, match="s must have shape"):
        p.reverse_mean(1, np.zeros(3))
    with pytest.raises(ValueError, match="n must be"):
        p.sample(0)
    with pytest.raises(ValueError, match="z must have shape"):
        chain.reverse_chain(p, np.zeros((2, 5, 2)))


def test_sampling_is_seeded():
    p = GaussianDiffusionPrior([0.0, 1.0], [1.0, 2.0], n_stages=8)
    np.testing.assert_array_equal(p.sample(5, seed=3), p.sample(5, seed=3))
    assert not np.array_equal(p.sample(5, seed=3), p.sample(5, seed=4))


# --------------------------------------------------------------------------- kernels vs NumPy

# The compiled chains and the NumPy references compute the same operations on the same
# normals in different orders (triangular solves vs np.linalg.solve, BLAS vs loops): they
# agree to rounding amplified by the T = 25 stages' conditioning, well inside 1e-10
# (observed: 1e-15 to 1e-14).
TOL = 1e-10


@pytest.fixture(scope="module", params=[("exact", "exact"), ("ddpm", "standard")])
def prior3(request):
    rng = np.random.default_rng(11)
    return GaussianDiffusionPrior(rng.standard_normal(3), spd(rng, 3), n_stages=25,
                                  reverse_variance=request.param[0], start=request.param[1])


@pytest.fixture(scope="module")
def data3():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((30, 3))
    y = X @ np.array([1.0, -0.5, 0.25]) + 0.5 * rng.standard_normal(30)
    return X, y, rng.standard_normal((6, 26, 3))


def test_chain_equals_reference(prior3, data3):
    z = data3[2]
    np.testing.assert_allclose(chain.reverse_chain(prior3, z),
                               [ref.reverse_chain(prior3, zz) for zz in z], rtol=TOL, atol=TOL)


def test_laplace_linear_equals_reference(prior3, data3):
    X, y, z = data3
    out, ok = chain.laplace_linear(prior3, X.T @ X, X.T @ y, 4.0, z)
    assert ok.all()
    np.testing.assert_allclose(out, [ref.laplace_linear(prior3, X.T @ X, X.T @ y, 4.0, zz)
                                     for zz in z], rtol=TOL, atol=TOL)


def test_dps_equals_reference_from_the_history(prior3, data3):
    # the kernel uses sufficient statistics, the reference the history itself
    X, y, z = data3
    out, ok = chain.dps_linear(prior3, X.T @ X, X.T @ y, float(y @ y), z)
    assert ok.all()
    np.testing.assert_allclose(out, [ref.dps_linear(prior3, X, y, zz) for zz in z],
                               rtol=1e-9, atol=1e-9)


def test_laplace_logistic_equals_reference(prior3, data3):
    X, y, z = data3
    yb = (y > 0).astype(float)
    m = vr.models.Logistic(3)
    m.add(X, yb)
    out, info = chain.laplace_glm(prior3, LOGISTIC, m.kernel_data(prior=False),
                                  potential_scratch(30, 3), z)
    assert (info[:, 0] == 0).all() and (info[:, 1] == 0).all()
    refs = [ref.laplace_logistic(prior3, X, yb, zz) for zz in z]
    assert all(s == 1 for _, st in refs for s in st)  # every stage converged
    np.testing.assert_allclose(out, [r[0] for r in refs], rtol=1e-9, atol=1e-9)


def test_laplace_linear_without_evidence_is_the_prior():
    rng = np.random.default_rng(5)
    m, S = rng.standard_normal(2), spd(rng, 2)
    p = GaussianDiffusionPrior(m, S)
    mL, CL = ref.laplace_linear_moments(p, np.zeros((2, 2)), np.zeros(2), 1.0)
    np.testing.assert_allclose(mL, m, atol=1e-12)
    np.testing.assert_allclose(CL, S, atol=1e-11)
    x, ok = chain.laplace_linear(p, np.zeros((2, 2)), np.zeros(2), 1.0,
                                 chain.normals(p, N_MC, seed=9))
    assert ok.all()
    assert_moments(x, m, S)
