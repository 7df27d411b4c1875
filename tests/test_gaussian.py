"""Tests for vits_ref.gaussian: every closed form against something independent.

Tolerance policy: comparisons between two exact formulas evaluated in float64 on
well-conditioned matrices (condition number <= ~1e3) use rtol ~1e-9..1e-10: the rounding
error of an LU/Cholesky solve is ~cond * eps ~ 1e-13, so this leaves a wide margin while
still catching any algebra slip (which shows up at the 1e-2 level). Statistical and
quadrature comparisons state their own tolerances where they are made.
"""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import integrate
from scipy.stats import multivariate_normal, norm

from vits_ref import gaussian as g
from vits_ref.reference.naive import (
    kl_gaussian_naive,
    linear_posterior_naive,
    product_gaussian_naive,
    w2_squared_gaussian_naive,
)


def random_spd(rng, d, jitter=0.5):
    """A well-conditioned random SPD matrix A A^T / d + jitter I."""
    a = rng.normal(size=(d, d))
    return a @ a.T / d + jitter * np.eye(d)


def random_gaussian(rng, d):
    return rng.normal(size=d), random_spd(rng, d)


def random_orthogonal(rng, d):
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


# ---------------------------------------------------------------------------------------
# KL
# ---------------------------------------------------------------------------------------

def test_kl_matches_monte_carlo():
    # KL(p||q) = E_p[log p - log q]; 200k draws at a fixed seed. The estimator is a mean
    # of i.i.d. terms, so its standard error is std/sqrt(N); 5 standard errors is a
    # false-alarm probability ~6e-7, and the power check below shows that the test
    # resolves a 2% error in the closed form.
    rng = np.random.default_rng(20240101)
    d = 3
    mp, sp = random_gaussian(rng, d)
    mq, sq = random_gaussian(rng, d)
    p = multivariate_normal(mean=mp, cov=sp)
    q = multivariate_normal(mean=mq, cov=sq)
    x = p.rvs(size=200_000, random_state=rng)
    terms = p.logpdf(x) - q.logpdf(x)
    mc = terms.mean()
    se = terms.std(ddof=1) / np.sqrt(len(terms))
    value = g.kl(mp, sp, mq, sq)
    assert abs(value - mc) < 5 * se
    assert 5 * se < 0.02 * value  # power: a 2% error in the closed form would be caught


@pytest.mark.parametrize("m1,s1,m2,s2", [(0.0, 1.0, 0.0, 2.0), (0.3, 0.7, -1.1, 1.3),
                                         (5.0, 3.0, 4.0, 0.2), (-2.0, 1e-3, -2.0, 1e3)])
def test_kl_one_dimensional_closed_form(m1, s1, m2, s2):
    # KL(N(m1, s1^2) || N(m2, s2^2)) = log(s2/s1) + (s1^2 + (m1-m2)^2)/(2 s2^2) - 1/2;
    # scalars, so agreement is to a few ulps of the largest term (rtol 1e-12).
    expected = np.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    value = g.kl([m1], [[s1**2]], [m2], [[s2**2]])
    assert isinstance(value, float)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("d", [1, 2, 5, 8])
def test_kl_matches_naive_formula(d):
    # Independent evaluation with explicit inverse/determinants (tests/reference.py).
    rng = np.random.default_rng(d)
    mp, sp = random_gaussian(rng, d)
    mq, sq = random_gaussian(rng, d)
    assert g.kl(mp, sp, mq, sq) == pytest.approx(kl_gaussian_naive(mp, sp, mq, sq), rel=1e-10)


@pytest.mark.parametrize("d", [1, 3, 6])
def test_kl_from_scale_matches_naive_formula_and_checks_its_factor(d):
    # p by a lower factor with a positive diagonal (any, not only a Cholesky of its
    # product): the same value as the naive formula on L L^T, to the rtol of the module
    rng = np.random.default_rng(10 + d)
    L = np.tril(rng.normal(size=(d, d)), -1) + np.diag(rng.uniform(0.5, 1.5, d))
    mp, (mq, sq) = rng.normal(size=d), random_gaussian(rng, d)
    assert g.kl_from_scale(mp, L, mq, sq) == pytest.approx(
        kl_gaussian_naive(mp, L @ L.T, mq, sq), rel=1e-10)
    for bad, why in ((L.T if d > 1 else -L, "lower triangular" if d > 1 else "positive"),
                     (L - 2 * np.diag(np.diag(L)), "positive diagonal"),
                     (np.full((d, d), np.nan), "NaN or inf"), (np.eye(d + 1), "shape")):
        with pytest.raises(ValueError, match=f"scale_tril_p.*{why}"):
            g.kl_from_scale(mp, bad, mq, sq)


def test_kl_self_is_zero_and_asymmetric():
    rng = np.random.default_rng(1)
    m, s = random_gaussian(rng, 4)
    # Exactly zero in exact arithmetic; the Cholesky evaluation leaves ~d*eps.
    assert 0.0 <= g.kl(m, s, m, s) <= 1e-13
    # N(0,1) vs N(0,4): log 2 + 1/8 - 1/2 one way, -log 2 + 2 - 1/2 the other.
    assert g.kl([0.0], [[1.0]], [0.0], [[4.0]]) == pytest.approx(np.log(2) - 0.375, rel=1e-13)
    assert g.kl([0.0], [[4.0]], [0.0], [[1.0]]) == pytest.approx(1.5 - np.log(2), rel=1e-13)
    mq, sq = random_gaussian(rng, 4)
    assert abs(g.kl(m, s, mq, sq) - g.kl(mq, sq, m, s)) > 1e-3


def test_kl_ill_conditioned_self_is_clipped_not_negative():
    # cond(S) = 1e8: KL(p||p) rounding is ~d*eps*sqrt(cond) ~ 1e-12 in either direction;
    # the documented clip turns a tiny negative into 0, never a negative KL.
    rng = np.random.default_rng(2)
    q = random_orthogonal(rng, 4)
    s = q @ np.diag([1e-4, 1e-1, 1e2, 1e4]) @ q.T
    s = 0.5 * (s + s.T)
    value = g.kl(np.zeros(4), s, np.zeros(4), s)
    assert 0.0 <= value < 1e-9


def test_kl_invariant_under_common_affine_map():
    # KL is invariant under any invertible map applied to both; x -> A x + c.
    # cond(A) is ~10 here, so rtol 1e-9 covers the extra rounding.
    rng = np.random.default_rng(3)
    d = 3
    mp, sp = random_gaussian(rng, d)
    mq, sq = random_gaussian(rng, d)
    a = rng.normal(size=(d, d)) + 2 * np.eye(d)
    c = rng.normal(size=d)
    base = g.kl(mp, sp, mq, sq)
    mapped = g.kl(a @ mp + c, a @ sp @ a.T, a @ mq + c, a @ sq @ a.T)
    assert mapped == pytest.approx(base, rel=1e-9)


@st.composite
def gaussian_pairs(draw):
    d = draw(st.integers(1, 4))
    elems = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)
    out = []
    for _ in range(2):
        a = draw(arrays(np.float64, (d, d), elements=elems))
        m = draw(arrays(np.float64, (d,), elements=elems))
        out.append((m, a @ a.T + 0.1 * np.eye(d)))
    return out


@settings(max_examples=50, deadline=None)
@given(gaussian_pairs())
def test_kl_and_w2_properties(pair):
    # cond(A A^T + 0.1 I) <= (16 d + 0.1)/0.1 < 700, so rounding is ~1e-13 relative:
    # KL(p||p) and W2(p,p)^2 below 1e-10 and agreement with the naive formulas at
    # rtol 1e-8 (atol 1e-10 for values near 0) have a wide margin.
    (mp, sp), (mq, sq) = pair
    value = g.kl(mp, sp, mq, sq)
    assert value >= 0.0
    assert value == pytest.approx(kl_gaussian_naive(mp, sp, mq, sq), rel=1e-8, abs=1e-10)
    assert 0.0 <= g.kl(mp, sp, mp, sp) < 1e-10
    assert 0.0 <= g.w2_squared(mp, sp, mp, sp) < 1e-10 * (1 + np.trace(sp))
    assert g.w2(mp, sp, mq, sq) == pytest.approx(g.w2(mq, sq, mp, sp), rel=1e-10, abs=1e-12)


# ---------------------------------------------------------------------------------------
# W2
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("m1,s1,m2,s2", [(0.0, 1.0, 3.0, 2.0), (0.3, 0.7, -1.1, 1.3),
                                         (1.0, 1e-3, 1.0, 1e3), (2.0, 1.5, 2.0, 1.5)])
def test_w2_one_dimensional_closed_form(m1, s1, m2, s2):
    # W2^2 = (m1-m2)^2 + (s1-s2)^2 for standard deviations s1, s2; scalar arithmetic,
    # so rtol 1e-12 (abs 1e-12 for the zero case, where sqrt(s^2) rounding remains).
    expected = (m1 - m2) ** 2 + (s1 - s2) ** 2
    value = g.w2_squared([m1], [[s1**2]], [m2], [[s2**2]])
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert g.w2([m1], [[s1**2]], [m2], [[s2**2]]) == pytest.approx(np.sqrt(expected),
                                                                   rel=1e-12, abs=1e-6)


@pytest.mark.parametrize("rotate", [False, True])
def test_w2_commuting_covariances_closed_form(rotate):
    # For commuting covariances Q diag(a) Q^T and Q diag(b) Q^T,
    # W2^2 = |m1-m2|^2 + sum_i (sqrt(a_i) - sqrt(b_i))^2.  Q = I is the diagonal case.
    rng = np.random.default_rng(4)
    d = 5
    a = rng.uniform(0.1, 4.0, size=d)
    b = rng.uniform(0.1, 4.0, size=d)
    q = random_orthogonal(rng, d) if rotate else np.eye(d)
    m1, m2 = rng.normal(size=d), rng.normal(size=d)
    s1 = q @ np.diag(a) @ q.T
    s2 = q @ np.diag(b) @ q.T
    s1, s2 = 0.5 * (s1 + s1.T), 0.5 * (s2 + s2.T)
    expected = np.sum((m1 - m2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    assert g.w2_squared(m1, s1, m2, s2) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("d", [1, 2, 5, 8])
def test_w2_matches_sqrtm_formula(d):
    # Library: nuclear norm of L2^T L1. Reference: scipy.linalg.sqrtm of S1^½ S2 S1^½.
    # sqrtm (Schur based) is accurate to ~1e-12 on these well-conditioned matrices.
    rng = np.random.default_rng(10 + d)
    mp, sp = random_gaussian(rng, d)
    mq, sq = random_gaussian(rng, d)
    expected = w2_squared_gaussian_naive(mp, sp, mq, sq)
    assert g.w2_squared(mp, sp, mq, sq) == pytest.approx(expected, rel=1e-9)


def test_w2_symmetry_and_triangle_inequality_random_triples():
    # Metric axioms on 60 random triples (d in 1..6); slack 1e-10 for rounding.
    rng = np.random.default_rng(5)
    for _ in range(60):
        d = int(rng.integers(1, 7))
        p, q, r = (random_gaussian(rng, d) for _ in range(3))
        pq, qr, pr = g.w2(*p, *q), g.w2(*q, *r), g.w2(*p, *r)
        assert pq == pytest.approx(g.w2(*q, *p), rel=1e-10)
        assert pr <= pq + qr + 1e-10


def test_w2_along_the_geodesic_is_additive():
    # Triangle equality on the W2 geodesic (McCann interpolation, computed with sqrtm):
    # T = S1^-½ (S1^½ S2 S1^½)^½ S1^-½, S_t = M S1 M with M = (1-t) I + t T, m_t linear.
    # Then W2(p0, pt) = t W2(p0, p1) and W2(pt, p1) = (1-t) W2(p0, p1).
    # This is the sharp case of the triangle inequality; rtol 1e-8 covers sqrtm's error.
    rng = np.random.default_rng(6)
    d, t = 4, 0.3
    m1, s1 = random_gaussian(rng, d)
    m2, s2 = random_gaussian(rng, d)
    r = np.real(scipy.linalg.sqrtm(s1))
    rinv = np.linalg.inv(r)
    tmap = rinv @ np.real(scipy.linalg.sqrtm(r @ s2 @ r)) @ rinv
    tmap = 0.5 * (tmap + tmap.T)
    mid = (1 - t) * np.eye(d) + t * tmap
    st_ = mid @ s1 @ mid
    st_ = 0.5 * (st_ + st_.T)
    mt = (1 - t) * m1 + t * m2
    total = g.w2(m1, s1, m2, s2)
    assert g.w2(m1, s1, mt, st_) == pytest.approx(t * total, rel=1e-8)
    assert g.w2(mt, st_, m2, s2) == pytest.approx((1 - t) * total, rel=1e-8)


def test_w2_invariant_under_rotation_and_translation():
    # W2 is invariant under a common isometry x -> Q x + c.
    rng = np.random.default_rng(7)
    d = 3
    mp, sp = random_gaussian(rng, d)
    mq, sq = random_gaussian(rng, d)
    q = random_orthogonal(rng, d)
    c = rng.normal(size=d)
    base = g.w2(mp, sp, mq, sq)
    moved = g.w2(q @ mp + c, q @ sp @ q.T, q @ mq + c, q @ sq @ q.T)
    assert moved == pytest.approx(base, rel=1e-10)


# ---------------------------------------------------------------------------------------
# linear-Gaussian posteriors
# ---------------------------------------------------------------------------------------

def make_data(rng, n, d, eta):
    theta = rng.normal(size=d)
    phi = rng.normal(size=(n, d))
    r = phi @ theta + rng.normal(size=n) / np.sqrt(eta)
    return phi, r


@pytest.mark.parametrize("d,n,eta,lam", [(1, 4, 1.0, 1.0), (3, 10, 2.5, 0.3),
                                         (6, 2, 0.7, 4.0), (4, 50, 10.0, 1.0)])
def test_linear_posterior_matches_general_form_with_explicit_inverses(d, n, eta, lam):
    # Diffusion paper eq. 3 with prior N(0, I/(lam eta)) and noise 1/eta, evaluated with
    # np.linalg.inv (reference.py); rtol 1e-10 (cond(V) < 1e3 here).
    rng = np.random.default_rng(100 + d + n)
    phi, r = make_data(rng, n, d, eta)
    mean, cov = g.linear_posterior(phi, r, eta=eta, lam=lam)
    ref_mean, ref_cov = linear_posterior_naive(phi, r, np.zeros(d), np.eye(d) / (lam * eta),
                                               1.0 / eta)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-10, atol=1e-14)
    assert mean.shape == (d,) and cov.shape == (d, d)
    assert np.array_equal(cov, cov.T)
    # ... and the two parameterisations of the library agree with each other.
    gmean, gcov = g.linear_posterior_general(phi, r, np.zeros(d), np.eye(d) / (lam * eta),
                                             1.0 / eta)
    np.testing.assert_allclose(gmean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gcov, cov, rtol=1e-10, atol=1e-14)


def test_linear_posterior_one_dimensional_closed_form():
    # d = 1: precision eta (lam + sum phi^2), mean sum(phi r) / (lam + sum phi^2).
    phi = np.array([[0.5], [-1.0], [2.0]])
    r = np.array([1.0, 0.2, -0.7])
    eta, lam = 3.0, 0.5
    v = lam + np.sum(phi**2)
    mean, cov = g.linear_posterior(phi, r, eta=eta, lam=lam)
    np.testing.assert_allclose(mean, [np.sum(phi[:, 0] * r) / v], rtol=1e-14)
    np.testing.assert_allclose(cov, [[1.0 / (eta * v)]], rtol=1e-14)


def test_linear_posterior_general_matches_explicit_inverses():
    # Non-zero prior mean and correlated prior covariance: eq. 3 via np.linalg.inv.
    rng = np.random.default_rng(8)
    d, n = 4, 7
    m0, s0 = random_gaussian(rng, d)
    phi, r = make_data(rng, n, d, 1.0)
    mean, cov = g.linear_posterior_general(phi, r, m0, s0, 0.4)
    ref_mean, ref_cov = linear_posterior_naive(phi, r, m0, s0, 0.4)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-10, atol=1e-14)


def test_linear_posterior_by_quadrature_on_a_grid():
    # Brute force, d = 2: evaluate prior x likelihood from the model's definition
    # (noise variance 1/eta, prior N(0, I/(lam eta))) on a 1001 x 1001 grid over
    # [-5, 5]^2, normalise numerically and take moments by Riemann sums. The posterior
    # standard deviations are ~0.2, i.e. ~20 grid steps, and the Riemann sum of a smooth
    # rapidly decaying function converges spectrally (error ~exp(-2 pi^2 sd^2 / h^2)),
    # so the only error is the summation rounding (~1e-12): tolerance 1e-8.
    rng = np.random.default_rng(9)
    eta, lam, n = 2.0, 0.5, 6
    phi, r = make_data(rng, n, 2, eta)
    axis = np.linspace(-5.0, 5.0, 1001)
    t1, t2 = np.meshgrid(axis, axis, indexing="ij")
    logdens = -0.5 * lam * eta * (t1**2 + t2**2)
    for s in range(n):
        logdens -= 0.5 * eta * (phi[s, 0] * t1 + phi[s, 1] * t2 - r[s]) ** 2
    w = np.exp(logdens - logdens.max())
    w /= w.sum()
    grid_mean = np.array([np.sum(w * t1), np.sum(w * t2)])
    c1, c2 = t1 - grid_mean[0], t2 - grid_mean[1]
    grid_cov = np.array([[np.sum(w * c1 * c1), np.sum(w * c1 * c2)],
                         [np.sum(w * c1 * c2), np.sum(w * c2 * c2)]])
    mean, cov = g.linear_posterior(phi, r, eta=eta, lam=lam)
    assert np.all(np.sqrt(np.diag(cov)) > 10 * (axis[1] - axis[0]))  # grid resolves it
    assert np.all(np.abs(mean) + 8 * np.sqrt(np.diag(cov)) < 5.0)  # grid covers it
    np.testing.assert_allclose(mean, grid_mean, atol=1e-8)
    np.testing.assert_allclose(cov, grid_cov, atol=1e-8)


@pytest.mark.parametrize("d", [1, 3])
def test_linear_posterior_without_data_is_the_prior(d):
    eta, lam = 2.0, 0.25
    mean, cov = g.linear_posterior(np.empty((0, d)), np.empty(0), eta=eta, lam=lam)
    np.testing.assert_array_equal(mean, np.zeros(d))
    np.testing.assert_allclose(cov, np.eye(d) / (lam * eta), rtol=1e-15)
    rng = np.random.default_rng(d)
    m0, s0 = random_gaussian(rng, d)
    gmean, gcov = g.linear_posterior_general(np.empty((0, d)), np.empty(0), m0, s0, 1.0)
    np.testing.assert_allclose(gmean, m0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gcov, s0, rtol=1e-12, atol=1e-14)


def test_sequential_updates_equal_the_batch_posterior():
    # Bayes' rule: the posterior after batch k is the prior for batch k + 1 (includes
    # an empty batch). Each step is a well-conditioned solve: rtol 1e-9 over 4 steps.
    rng = np.random.default_rng(11)
    d, eta, lam = 3, 1.5, 0.8
    phi, r = make_data(rng, 12, d, eta)
    mean, cov = np.zeros(d), np.eye(d) / (lam * eta)
    for lo, hi in [(0, 3), (3, 3), (3, 8), (8, 12)]:
        mean, cov = g.linear_posterior_general(phi[lo:hi], r[lo:hi], mean, cov, 1.0 / eta)
    batch_mean, batch_cov = g.linear_posterior(phi, r, eta=eta, lam=lam)
    np.testing.assert_allclose(mean, batch_mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov, batch_cov, rtol=1e-9, atol=1e-14)


def test_linear_posterior_from_stats_matches_history_form():
    rng = np.random.default_rng(12)
    d, eta, lam = 4, 3.0, 2.0
    phi, r = make_data(rng, 9, d, eta)
    v = lam * np.eye(d) + phi.T @ phi
    b = phi.T @ r
    mean, cov = g.linear_posterior_from_stats(v, b, eta=eta)
    np.testing.assert_allclose(mean, np.linalg.solve(v, b), rtol=1e-11)
    np.testing.assert_allclose(cov, np.linalg.inv(eta * v), rtol=1e-11, atol=1e-15)
    hmean, hcov = g.linear_posterior(phi, r, eta=eta, lam=lam)
    np.testing.assert_allclose(hmean, mean, rtol=1e-12)
    np.testing.assert_allclose(hcov, cov, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# product, entropy, logpdf
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("m1,s1,m2,s2", [(0.3, 0.7, -1.1, 1.3), (0.0, 1.0, 2.0, 1.0),
                                         (4.0, 0.1, -3.0, 5.0)])
def test_product_one_dimensional_by_quadrature(m1, s1, m2, s2):
    # Integrating N(x; m1, s1^2) N(x; m2, s2^2) over x gives Z; its normalised first two
    # moments give m and S. scipy.integrate.quad (epsrel 1e-12, epsabs 1e-14) on a smooth
    # integrand over a window of +-40 widest sds (breakpoints at the centres) is accurate
    # to ~1e-12 (Z is O(0.1)): tolerance rtol 1e-9, abs 1e-11 for a mean near 0.
    def f(x):
        return norm.pdf(x, m1, s1) * norm.pdf(x, m2, s2)

    lo = min(m1, m2) - 40 * max(s1, s2)
    hi = max(m1, m2) + 40 * max(s1, s2)
    kw = {"epsabs": 1e-14, "epsrel": 1e-12, "limit": 200, "points": sorted({m1, m2})}
    z = integrate.quad(f, lo, hi, **kw)[0]
    mean_q = integrate.quad(lambda x: x * f(x), lo, hi, **kw)[0] / z
    var_q = integrate.quad(lambda x: (x - mean_q) ** 2 * f(x), lo, hi, **kw)[0] / z
    mean, cov, log_z = g.product([m1], [[s1**2]], [m2], [[s2**2]])
    assert np.exp(log_z) == pytest.approx(z, rel=1e-9)
    assert mean[0] == pytest.approx(mean_q, rel=1e-9, abs=1e-11)
    assert cov[0, 0] == pytest.approx(var_q, rel=1e-9)


@pytest.mark.parametrize("d", [1, 2, 5])
def test_product_matches_explicit_inverses_and_pointwise_identity(d):
    # Lemma 6 with np.linalg.inv and log Z from scipy (reference.py): rtol 1e-10.
    rng = np.random.default_rng(20 + d)
    m1, s1 = random_gaussian(rng, d)
    m2, s2 = random_gaussian(rng, d)
    mean, cov, log_z = g.product(m1, s1, m2, s2)
    ref_mean, ref_cov, ref_log_z = product_gaussian_naive(m1, s1, m2, s2)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-10, atol=1e-14)
    assert log_z == pytest.approx(ref_log_z, rel=1e-10)
    # The identity itself, pointwise, with scipy's densities at random points.
    x = rng.normal(size=(5, d)) * 2
    lhs = (multivariate_normal(m1, s1).logpdf(x) + multivariate_normal(m2, s2).logpdf(x))
    rhs = log_z + multivariate_normal(mean, cov).logpdf(x)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


@pytest.mark.parametrize("d", [1, 3, 6])
def test_entropy_and_logpdf_match_scipy(d):
    rng = np.random.default_rng(30 + d)
    m, s = random_gaussian(rng, d)
    ref = multivariate_normal(mean=m, cov=s)
    assert g.entropy(s) == pytest.approx(ref.entropy(), rel=1e-12)
    x = rng.normal(size=(7, d))
    out = g.logpdf(x, m, s)
    assert out.shape == (7,)
    np.testing.assert_allclose(out, ref.logpdf(x), rtol=1e-12)
    one = g.logpdf(x[0], m, s)
    assert isinstance(one, float)
    assert one == pytest.approx(out[0], rel=1e-14)


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------

M2, S2 = np.zeros(2), np.eye(2)
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])
NOT_SYM = np.array([[1.0, 0.5], [0.0, 1.0]])
PHI, R = np.ones((3, 2)), np.ones(3)


@pytest.mark.parametrize("fn,args,kwargs,exc,match", [
    (g.kl, ([np.nan, 0.0], S2, M2, S2), {}, ValueError, "^mean_p contains NaN"),
    (g.kl, (M2, S2, np.zeros(3), S2), {}, ValueError, "^mean_q must have shape"),
    (g.kl, (M2, S2, M2, np.eye(3)), {}, ValueError, "^cov_q must be 2 x 2"),
    (g.kl, (M2, NOT_PD, M2, S2), {}, ValueError, "^cov_p must be positive definite"),
    (g.kl, (M2, NOT_SYM, M2, S2), {}, ValueError, "^cov_p must be symmetric"),
    (g.kl, (np.zeros((2, 1)), S2, M2, S2), {}, ValueError, "^mean_p must be 1-D"),
    (g.kl, (np.zeros(0), np.zeros((0, 0)), M2, S2), {}, ValueError, "^mean_p"),
    (g.kl, (["a", "b"], S2, M2, S2), {}, TypeError, "^mean_p"),
    (g.kl, (M2, S2, M2, [[np.inf, 0], [0, 1]]), {}, ValueError, "^cov_q contains NaN"),
    (g.w2, (M2, S2, [1.0], S2), {}, ValueError, "^mean_q must have shape"),
    (g.w2, (M2, NOT_PD, M2, S2), {}, ValueError, "^cov_p must be positive definite"),
    (g.w2_squared, (M2, S2, M2, np.ones((2, 3))), {}, ValueError, "^cov_q must be square"),
    (g.linear_posterior, (PHI, R), {"eta": 0.0}, ValueError, "^eta must be > 0"),
    (g.linear_posterior, (PHI, R), {"eta": -1.0}, ValueError, "^eta must be > 0"),
    (g.linear_posterior, (PHI, R), {"eta": np.nan}, ValueError, "^eta must be finite"),
    (g.linear_posterior, (PHI, R), {"eta": "1"}, TypeError, "^eta must be a real number"),
    (g.linear_posterior, (PHI, R), {"lam": 0.0}, ValueError, "^lam must be > 0"),
    (g.linear_posterior, (np.ones(3), R), {}, ValueError, "^features must be 2-D"),
    (g.linear_posterior, (PHI, np.ones(4)), {}, ValueError, "^rewards has 4 entries"),
    (g.linear_posterior, (PHI, [1.0, np.nan, 0.0]), {}, ValueError, "^rewards contains NaN"),
    (g.linear_posterior, (np.full((3, 2), np.inf), R), {}, ValueError, "^features contains"),
    (g.linear_posterior, (np.ones((3, 0)), R), {}, ValueError, "^features must have at least"),
    (g.linear_posterior_general, (PHI, R, np.zeros(3), S2, 1.0), {}, ValueError,
     "^prior_mean must have shape"),
    (g.linear_posterior_general, (PHI, R, M2, np.eye(3), 1.0), {}, ValueError,
     "^prior_cov must be 2 x 2"),
    (g.linear_posterior_general, (PHI, R, M2, NOT_PD, 1.0), {}, ValueError,
     "^prior_cov must be positive definite"),
    (g.linear_posterior_general, (PHI, R, M2, S2, 0.0), {}, ValueError, "^noise_var must be"),
    (g.linear_posterior_from_stats, (NOT_PD, M2), {}, ValueError, "^V must be positive"),
    (g.linear_posterior_from_stats, (S2, np.zeros(3)), {}, ValueError, "^b must have shape"),
    (g.linear_posterior_from_stats, (S2, M2, -2.0), {}, ValueError, "^eta must be > 0"),
    (g.product, (M2, S2, [0.0], S2), {}, ValueError, "^mean2 must have shape"),
    (g.product, (M2, NOT_PD, M2, S2), {}, ValueError, "^cov1 must be positive definite"),
    (g.product, (M2, S2, M2, NOT_SYM), {}, ValueError, "^cov2 must be symmetric"),
    (g.entropy, (np.ones((2, 3)),), {}, ValueError, "^cov must be square"),
    (g.entropy, (NOT_PD,), {}, ValueError, "^cov must be positive definite"),
    (g.logpdf, (np.zeros(3), M2, S2), {}, ValueError, "^x must have shape"),
    (g.logpdf, (np.zeros((4, 3)), M2, S2), {}, ValueError, "^x must have shape"),
    (g.logpdf, ([np.nan, 0.0], M2, S2), {}, ValueError, "^x contains NaN"),
    (g.logpdf, (M2, M2, np.eye(3)), {}, ValueError, "^cov must be 2 x 2"),
])
def test_bad_input_names_the_argument(fn, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


def test_shared_docstring_sections_are_filled_in():
    """The closed forms' shared Parameters/Raises sections (vits_ref/gaussian/_docstrings.py)
    are in every public docstring that names them, and no ``{name}`` slot is left."""
    import re

    from vits_ref.gaussian import divergences
    from vits_ref.gaussian._docstrings import SECTIONS, fill

    for mod in (g, divergences):
        for name in mod.__all__:
            doc = getattr(mod, name).__doc__
            assert not re.search(r"(?m)^\s*\{\w+\}$", doc), name
    pair = "    mean_p : array_like, shape (d,)\n        Mean of ``p``."
    for fn in (g.kl, g.w2, g.w2_squared, g.renyi, g.amari, g.i_divergence):
        assert "    Parameters\n    ----------\n" + pair in fn.__doc__, fn.__name__
    assert "    alpha : float\n        The order ``a``" in g.linear_gaussian_renyi_bound.__doc__

    def planted():
        r"""Top.

        {alpha}

        .. math:: S_2^{-1}
        """

    doc = fill(planted).__doc__
    assert "        alpha : float\n            The order" in doc  # indented as the slot
    assert "S_2^{-1}" in doc  # LaTeX braces are not slots
    assert SECTIONS["alpha"].split("\n")[0] in doc

    def unknown():
        """{no_such_section}"""

    with pytest.raises(KeyError):
        fill(unknown)
