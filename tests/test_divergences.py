"""The alpha-divergence family between Gaussians (vits_ref.gaussian.divergences, re-exported in
vits_ref.gaussian) against quadrature, Monte Carlo, a naive closed form and its own limits.

Tolerance policy. Quadrature: ``scipy.integrate.quad``/``dblquad`` are asked for
``epsrel = 1e-13``/``1e-12`` on smooth Gaussian integrands over boxes that cut off less
than ``exp(-60)`` of the mass, so they are good to ~1e-11; the brief's 1e-8 is then a
genuine requirement, not a tuned one. An algebra slip moves these numbers by 1e-3 or
more. Conversions between the four divergences are a few floating operations on one
number, so they hold to 1e-12. Two different closed-form evaluations (different
factorisations, well-conditioned matrices with cond <= ~1e2) agree to ~cond * d * eps ~
1e-13; they are compared at 1e-10.
"""

import inspect
import math

import numpy as np
import pytest
from scipy import integrate

import vits_ref as vr
from vits_ref import gaussian as g
from vits_ref.gaussian import divergences as dv

FUNCS = (dv.i_divergence, dv.log_i_divergence, dv.renyi, dv.tsallis, dv.amari)


def random_spd(rng, d, jitter=0.5):
    a = rng.normal(size=(d, d))
    return a @ a.T / d + jitter * np.eye(d)


def related_pair(rng, d, lo=0.6, hi=1.8):
    """Two Gaussians with the eigenvalues of inv(cov_q) cov_p in [lo, hi]: then S_a is
    positive definite for every a in (-lo/(1-lo), hi/(hi-1)) = (-1.5, 2.25) by default."""
    b = random_spd(rng, d)
    chol = np.linalg.cholesky(b)
    qmat, _ = np.linalg.qr(rng.normal(size=(d, d)))
    lam = rng.uniform(lo, hi, size=d)
    cov_p = chol @ qmat @ np.diag(lam) @ qmat.T @ chol.T
    return rng.normal(size=d), 0.5 * (cov_p + cov_p.T), rng.normal(size=d), b


def naive_log_i(mp, sp, mq, sq, a):
    """Section 1's formula with explicit solves and slogdet (no eigenbasis, no R_a)."""
    s = a * np.asarray(sq) + (1 - a) * np.asarray(sp)
    delta = np.asarray(mp) - np.asarray(mq)
    quad = delta @ np.linalg.solve(s, delta)
    return (-0.5 * a * (1 - a) * quad
            + 0.5 * ((1 - a) * np.linalg.slogdet(sp)[1] + a * np.linalg.slogdet(sq)[1]
                     - np.linalg.slogdet(s)[1]))


# ---------------------------------------------------------------------------------------
# against numerical integration
# ---------------------------------------------------------------------------------------

def quad_log_i_1d(mp, vp, mq, vq, a):
    """log int p^a q^(1-a) by adaptive quadrature on a box around the integrand's bulk."""
    def log_f(x):
        return (a * (-0.5 * (x - mp) ** 2 / vp - 0.5 * math.log(2 * math.pi * vp))
                + (1 - a) * (-0.5 * (x - mq) ** 2 / vq - 0.5 * math.log(2 * math.pi * vq)))
    # The box only has to contain the bulk: centre and width of p^a q^(1-a), whose
    # precision is a/vp + (1-a)/vq; 12 standard deviations leave < exp(-72) outside.
    prec = a / vp + (1 - a) / vq
    centre = (a * mp / vp + (1 - a) * mq / vq) / prec
    half = 12.0 / math.sqrt(prec)
    shift = log_f(centre)
    val, err = integrate.quad(lambda x: math.exp(log_f(x) - shift), centre - half,
                              centre + half, epsabs=0.0, epsrel=1e-13, limit=200)
    assert err < 1e-11 * val
    return math.log(val) + shift


CASES_1D = [  # (a, mp, vp, mq, vq); every S_a = a vq + (1 - a) vp > 0
    (-0.7, 0.3, 1.2, -0.4, 1.0),
    (0.25, 0.0, 1.0, 2.0, 0.3),
    (0.5, 1.0, 0.5, -1.0, 2.0),
    (0.9, -2.0, 3.0, 0.5, 1.0),
    (1.3, 0.3, 1.2, -0.4, 1.0),
    (2.0, 0.0, 1.0, 1.5, 0.8),
    (3.0, 0.3, 1.2, -0.4, 1.0),
    (-2.0, 0.0, 0.5, 0.4, 0.7),
]


@pytest.mark.parametrize("a, mp, vp, mq, vq", CASES_1D)
def test_one_dimensional_against_quadrature(a, mp, vp, mq, vq):
    log_i = quad_log_i_1d(mp, vp, mq, vq, a)
    args = ([mp], [[vp]], [mq], [[vq]], a)
    assert dv.log_i_divergence(*args) == pytest.approx(log_i, rel=1e-8)
    assert dv.i_divergence(*args) == pytest.approx(math.exp(log_i), rel=1e-8)
    assert dv.renyi(*args) == pytest.approx(log_i / (a - 1), rel=1e-8)
    assert dv.tsallis(*args) == pytest.approx(math.expm1(log_i) / (a - 1), rel=1e-8)
    # Amari at order a needs the integral at b = (1 + a)/2, which lies inside the domain
    # whenever a and 1 do (S_b is a convex combination of S_a and S_1).
    b = 0.5 * (1 + a)
    log_i_b = quad_log_i_1d(mp, vp, mq, vq, b)
    want = 4.0 / (1 - a * a) * -math.expm1(log_i_b)
    assert dv.amari(*args) == pytest.approx(want, rel=1e-8)


def quad_log_i_2d(mp, sp, mq, sq, a):
    pp, pq = np.linalg.inv(sp), np.linalg.inv(sq)
    cp = -0.5 * np.linalg.slogdet(2 * np.pi * sp)[1]
    cq = -0.5 * np.linalg.slogdet(2 * np.pi * sq)[1]
    # box from the integrand's precision (bulk only, as in 1-D): 12 sd along each axis
    lam = a * pp + (1 - a) * pq
    cov = np.linalg.inv(lam)
    centre = cov @ (a * pp @ mp + (1 - a) * pq @ mq)
    half = 12.0 * np.sqrt(np.diag(cov))

    def log_f(y, x):
        v = np.array([x, y])
        dp, dq = v - mp, v - mq
        return a * (cp - 0.5 * dp @ pp @ dp) + (1 - a) * (cq - 0.5 * dq @ pq @ dq)

    shift = log_f(centre[1], centre[0])
    val, err = integrate.dblquad(lambda y, x: math.exp(log_f(y, x) - shift),
                                 centre[0] - half[0], centre[0] + half[0],
                                 centre[1] - half[1], centre[1] + half[1],
                                 epsabs=0.0, epsrel=1e-12)
    assert err < 1e-10 * val
    return math.log(val) + shift


P2 = (np.array([0.4, -0.3]), np.array([[1.0, 0.3], [0.3, 0.6]]),
      np.array([-0.2, 0.5]), np.array([[0.8, -0.2], [-0.2, 1.1]]))


@pytest.mark.parametrize("a", [-0.3, 0.5, 1.7])
def test_two_dimensional_against_quadrature(a):
    mp, sp, mq, sq = P2
    log_i = quad_log_i_2d(mp, sp, mq, sq, a)
    assert dv.log_i_divergence(mp, sp, mq, sq, a) == pytest.approx(log_i, rel=1e-8)
    assert dv.renyi(mp, sp, mq, sq, a) == pytest.approx(log_i / (a - 1), rel=1e-8)


def test_against_monte_carlo_in_three_dimensions():
    # I_a = E_q[(p/q)^a]; at a = 1/2 the terms have variance I_1 - I_a^2 <= 1, so the
    # mean of 200k draws has standard error < 2.3e-3; 4 standard errors is a false-alarm
    # probability ~6e-5 for this fixed seed, and the last line shows that a 5% error in
    # the closed form would be caught.
    rng = np.random.default_rng(404)
    mp, sp, mq, sq = related_pair(rng, 3)
    x = rng.multivariate_normal(mq, sq, size=200_000)
    log_ratio = (g.logpdf(x, mp, sp) - g.logpdf(x, mq, sq))
    terms = np.exp(0.5 * log_ratio)
    mc, se = terms.mean(), terms.std(ddof=1) / np.sqrt(terms.size)
    value = dv.i_divergence(mp, sp, mq, sq, 0.5)
    assert abs(value - mc) < 4 * se
    assert 4 * se < 0.05 * (1 - value)


@pytest.mark.parametrize("d", [1, 3, 6])
@pytest.mark.parametrize("a", [-0.9, -0.3, 0.2, 0.5, 0.8, 1.4, 1.9])
def test_matches_naive_section_one_formula(d, a):
    rng = np.random.default_rng(10 * d + int(10 * a) + 100)
    mp, sp, mq, sq = related_pair(rng, d)
    want = naive_log_i(mp, sp, mq, sq, a)
    assert dv.log_i_divergence(mp, sp, mq, sq, a) == pytest.approx(want, rel=1e-10)
    assert dv.renyi(mp, sp, mq, sq, a) == pytest.approx(want / (a - 1), rel=1e-10)


# ---------------------------------------------------------------------------------------
# limits a -> 1 and a -> 0
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", [1, 2, 5])
def test_order_one_is_kl_and_continuous(d):
    rng = np.random.default_rng(7 + d)
    mp, sp, mq, sq = related_pair(rng, d)
    kl_pq = g.kl(mp, sp, mq, sq)
    kl_qp = g.kl(mq, sq, mp, sp)
    # two formulas for the same number (trace form in kl, eigen form here): 1e-11
    assert dv.renyi(mp, sp, mq, sq, 1.0) == pytest.approx(kl_pq, rel=1e-11)
    assert dv.tsallis(mp, sp, mq, sq, 1.0) == pytest.approx(kl_pq, rel=1e-11)
    assert dv.amari(mp, sp, mq, sq, 1.0) == pytest.approx(kl_pq, rel=1e-11)
    assert dv.amari(mp, sp, mq, sq, -1.0) == pytest.approx(kl_qp, rel=1e-11)
    assert dv.log_i_divergence(mp, sp, mq, sq, 1.0) == 0.0
    assert dv.i_divergence(mp, sp, mq, sq, 1.0) == 1.0
    # 1e-9 away from the limit the exact value moves by ~1e-9 * dD/da, with dD/da of the
    # order of D itself here; 1e-8 relative leaves a factor 10 for that and rounding.
    for eps in (1e-9, -1e-9):
        assert dv.renyi(mp, sp, mq, sq, 1 + eps) == pytest.approx(kl_pq, rel=1e-8)
        assert dv.tsallis(mp, sp, mq, sq, 1 + eps) == pytest.approx(kl_pq, rel=1e-8)
        assert dv.amari(mp, sp, mq, sq, 1 + eps) == pytest.approx(kl_pq, rel=1e-8)
        assert dv.amari(mp, sp, mq, sq, -1 + eps) == pytest.approx(kl_qp, rel=1e-8)


@pytest.mark.parametrize("d", [1, 4])
def test_order_zero(d):
    # D_0 = -log int_{supp q} p = 0 for Gaussians; near 0, D_a / a -> KL(q || p)
    # (skew symmetry: D_a(p||q) = a/(1-a) D_{1-a}(q||p)).
    rng = np.random.default_rng(20 + d)
    mp, sp, mq, sq = related_pair(rng, d)
    assert dv.renyi(mp, sp, mq, sq, 0.0) == 0.0
    assert dv.tsallis(mp, sp, mq, sq, 0.0) == 0.0
    assert dv.log_i_divergence(mp, sp, mq, sq, 0.0) == 0.0
    assert dv.i_divergence(mp, sp, mq, sq, 0.0) == 1.0
    kl_qp = g.kl(mq, sq, mp, sp)
    for a in (1e-9, -1e-9):
        assert dv.renyi(mp, sp, mq, sq, a) / a == pytest.approx(kl_qp, rel=1e-8)
        assert dv.tsallis(mp, sp, mq, sq, a) / a == pytest.approx(kl_qp, rel=1e-8)
        assert dv.log_i_divergence(mp, sp, mq, sq, a) / (-a) == pytest.approx(kl_qp, rel=1e-8)


def test_near_equal_covariances_keep_relative_accuracy():
    # cov_p = (1 + e) cov_q, equal means: KL = d/2 (e - log1p(e)) ~ d e^2/4. The trace
    # formula cancels to ~d eps absolute, i.e. ~1e-4 relative at e = 1e-6; whitening
    # the difference keeps it at the 1e-10 level. Reference: the series of e - log1p(e).
    e, d = 1e-6, 2
    sq = np.array([[2.0, 0.5], [0.5, 1.0]])
    sp = (1 + e) * sq
    m = np.zeros(d)
    want = d / 2 * (e**2 / 2 - e**3 / 3 + e**4 / 4)
    assert dv.renyi(m, sp, m, sq, 1.0) == pytest.approx(want, rel=1e-8)
    # D_a at a = 1/2 for proportional covariances: d/(2(a-1)) log((1 + (1-a) e)/(1+e)^(1-a))
    want_half = -d * (math.log1p(0.5 * e) - 0.5 * math.log1p(e))
    assert dv.renyi(m, sp, m, sq, 0.5) == pytest.approx(want_half, rel=1e-6)


# ---------------------------------------------------------------------------------------
# conversions (eqs. 43-46) and symmetries
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("a", [-0.8, -0.3, 0.2, 0.5, 0.7, 1.5, 1.9])
def test_conversions_eqs_43_to_46(a):
    rng = np.random.default_rng(31)
    args = related_pair(rng, 3)
    i_a = dv.i_divergence(*args, a)
    ren, ts = dv.renyi(*args, a), dv.tsallis(*args, a)
    b = 0.5 * (1 + a)
    # eq. (43), (46), their composition, and (44)-(45): a few operations on one number
    assert ts == pytest.approx((i_a - 1) / (a - 1), rel=1e-12)
    assert ren == pytest.approx(math.log(i_a) / (a - 1), rel=1e-12)
    assert ren == pytest.approx(math.log1p((a - 1) * ts) / (a - 1), rel=1e-12)
    assert dv.amari(*args, a) == pytest.approx(dv.tsallis(*args, b) / b, rel=1e-12)
    assert dv.amari(*args, a) == pytest.approx(
        4 / (1 - a * a) * (1 - dv.i_divergence(*args, b)), rel=1e-12)


@pytest.mark.parametrize("a", [-0.9, -0.2, 0.3, 0.5, 0.8, 1.6])
def test_skew_symmetry(a):
    # (1 - a) D_a(p || q) = a D_{1-a}(q || p): the two sides whiten by different
    # Cholesky factors, hence 1e-10 (see the module docstring).
    rng = np.random.default_rng(55)
    mp, sp, mq, sq = related_pair(rng, 4)
    assert (1 - a) * dv.renyi(mp, sp, mq, sq, a) == pytest.approx(
        a * dv.renyi(mq, sq, mp, sp, 1 - a), rel=1e-10)
    # I_a(p || q) = I_{1-a}(q || p) and Amari_a(p || q) = Amari_{-a}(q || p)
    assert dv.log_i_divergence(mp, sp, mq, sq, a) == pytest.approx(
        dv.log_i_divergence(mq, sq, mp, sp, 1 - a), rel=1e-10)
    assert dv.amari(mp, sp, mq, sq, a) == pytest.approx(
        dv.amari(mq, sq, mp, sp, -a), rel=1e-10)


@pytest.mark.parametrize("a", [-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0])
def test_divergence_to_itself_is_zero(a):
    rng = np.random.default_rng(3)
    m, s = rng.normal(size=3), random_spd(rng, 3)
    # exactly: u = 0 and z = 0, so every log1p term is log1p(0) = 0
    assert dv.renyi(m, s, m, s, a) == 0.0
    assert dv.tsallis(m, s, m, s, a) == 0.0
    assert dv.amari(m, s, m, s, a) == 0.0
    assert dv.i_divergence(m, s, m, s, a) == 1.0


def test_renyi_non_decreasing_in_order_and_signs():
    rng = np.random.default_rng(8)
    args = related_pair(rng, 3)
    orders = np.linspace(-1.0, 2.0, 61)
    values = np.array([dv.renyi(*args, a) for a in orders])
    assert np.all(np.diff(values) >= -1e-13)
    assert np.all(values[orders < 0] <= 0) and np.all(values[orders > 0] > 0)
    assert all(dv.amari(*args, a) > 0 for a in (-3.0, -1.0, 0.0, 0.5, 1.0, 2.5))


def test_invariant_under_a_common_affine_map():
    # Rényi divergences are invariant under invertible maps applied to both arguments;
    # cond(A) ~ 10 adds rounding, hence 1e-9.
    rng = np.random.default_rng(12)
    mp, sp, mq, sq = related_pair(rng, 3)
    amat = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    c = rng.normal(size=3)
    mapped = (amat @ mp + c, amat @ sp @ amat.T, amat @ mq + c, amat @ sq @ amat.T)
    for a in (-0.5, 0.5, 1.0, 1.5):
        assert dv.renyi(*mapped, a) == pytest.approx(dv.renyi(mp, sp, mq, sq, a), rel=1e-9)


# ---------------------------------------------------------------------------------------
# where the integral diverges (documented: +-inf, no error)
# ---------------------------------------------------------------------------------------

def test_order_above_one_with_p_too_wide_is_infinite():
    # S_2 = 2 vq - vp = 2 - 4 < 0: int p^2 / q diverges.
    args = ([0.0], [[4.0]], [0.0], [[1.0]])
    assert dv.renyi(*args, 2.0) == math.inf
    assert dv.tsallis(*args, 2.0) == math.inf
    assert dv.log_i_divergence(*args, 2.0) == math.inf
    assert dv.i_divergence(*args, 2.0) == math.inf
    assert dv.amari(*args, 3.0) == math.inf  # b = 2
    # on the boundary S_a = 0 exactly (vp = 2): still divergent
    assert dv.renyi([0.0], [[2.0]], [0.0], [[1.0]], 2.0) == math.inf
    # just inside, a = 2 - e: finite; the log det term grows like log(1/e)/2
    e = 1e-6
    want = -math.log(e / 2 ** (e - 1)) / (2 * (1 - e))
    assert dv.renyi([0.0], [[2.0]], [0.0], [[1.0]], 2.0 - e) == pytest.approx(want, rel=1e-9)
    # below the threshold a = vp/(vp - vq) = 4/3 it is finite and matches the integral
    a = 1.3
    want = quad_log_i_1d(0.0, 4.0, 0.0, 1.0, a) / (a - 1)
    assert dv.renyi(*args, a) == pytest.approx(want, rel=1e-8)


def test_divergence_along_one_direction_only():
    # 2-D: S_2 = 2 I - diag(1, 4) is indefinite (one direction diverges)
    args = (np.zeros(2), np.diag([1.0, 4.0]), np.ones(2), np.eye(2))
    assert dv.renyi(*args, 2.0) == math.inf
    assert math.isfinite(dv.renyi(*args, 1.2))
    # the correlated pair of the 2-D quadrature test: S_a = -0.6 cov_q + 1.6 cov_p has
    # determinant 1.12 * 0.3 - 0.6^2 < 0
    assert dv.renyi(*P2, -0.6) == -math.inf


def test_negative_order_with_q_too_wide_is_minus_infinite():
    # S_a = 4 a + (1 - a) = 1 + 3a <= 0 for a <= -1/3: int p^a q^(1-a) diverges, so
    # log I = +inf and D_a = log I / (a - 1) = -inf (Rényi and Tsallis are <= 0 for a < 0).
    args = ([0.0], [[1.0]], [0.0], [[4.0]])
    assert dv.log_i_divergence(*args, -0.5) == math.inf
    assert dv.i_divergence(*args, -0.5) == math.inf
    assert dv.renyi(*args, -0.5) == -math.inf
    assert dv.tsallis(*args, -0.5) == -math.inf
    assert dv.amari(*args, -2.0) == math.inf  # b = -1/2; Amari is >= 0 for every order
    a = -0.3
    want = quad_log_i_1d(0.0, 1.0, 0.0, 4.0, a) / (a - 1)
    assert dv.renyi(*args, a) == pytest.approx(want, rel=1e-8)


def test_overflowing_integral_is_inf_not_an_error():
    # log I_a = 4.5e4 (finite) but I_a overflows a float
    args = ([0.0], [[1.0]], [300.0], [[1.0]], 2.0)
    assert dv.log_i_divergence(*args) == pytest.approx(2 * 300.0**2 / 2, rel=1e-12)
    assert dv.i_divergence(*args) == math.inf
    assert dv.tsallis(*args) == math.inf
    assert dv.renyi(*args) == pytest.approx(2 * 300.0**2 / 2, rel=1e-12)


# ---------------------------------------------------------------------------------------
# API: re-export, signature, errors
# ---------------------------------------------------------------------------------------

def test_reexported_in_gaussian_with_the_shared_signature():
    for fn in FUNCS:
        assert getattr(vr.gaussian, fn.__name__) is fn
        assert fn.__name__ in vr.gaussian.__all__
        assert list(inspect.signature(fn).parameters) == \
            ["mean_p", "cov_p", "mean_q", "cov_q", "alpha"]
    assert isinstance(vr.gaussian.renyi([0.0], [[1.0]], [1.0], [[2.0]], 0.5), float)


GOOD = (np.zeros(2), np.eye(2), np.ones(2), 2 * np.eye(2))


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("alpha, exc, match", [
    ("0.5", TypeError, "alpha must be a real number"),
    (True, TypeError, "alpha must be a real number"),
    (None, TypeError, "alpha must be a real number"),
    (0.5 + 0j, TypeError, "alpha must be a real number"),
    (np.array([0.5]), TypeError, "alpha must be a real number"),
    (float("nan"), ValueError, "alpha must be finite"),
    (float("inf"), ValueError, "alpha must be finite"),
])
def test_bad_alpha(fn, alpha, exc, match):
    with pytest.raises(exc, match=match):
        fn(*GOOD, alpha)


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("index, value, exc, match", [
    (0, np.zeros((2, 1)), ValueError, "mean_p must be 1-D"),
    (0, np.zeros(0), ValueError, "mean_p must have at least one entry"),
    (0, [0.0, np.nan], ValueError, "mean_p contains NaN"),
    (1, np.eye(3), ValueError, "cov_p must be 2 x 2"),
    (1, np.array([[1.0, 2.0], [2.0, 1.0]]), ValueError, "cov_p must be positive definite"),
    (1, np.array([[1.0, 0.1], [0.0, 1.0]]), ValueError, "cov_p must be symmetric"),
    (2, np.ones(3), ValueError, r"mean_q must have shape \(2,\)"),
    (2, ["a", "b"], TypeError, "mean_q must be a numeric array"),
    (3, np.full((2, 2), np.inf), ValueError, "cov_q contains NaN or inf"),
    (3, -np.eye(2), ValueError, "cov_q must be positive definite"),
])
def test_bad_gaussians_name_the_argument(fn, index, value, exc, match):
    args = list(GOOD)
    args[index] = value
    with pytest.raises(exc, match=match):
        fn(*args, 0.5)
