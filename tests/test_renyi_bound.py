"""The linear-Gaussian model of the Rényi appendix B: evidence, ELBO (B.1) and Rényi
bound (B.2) against Monte Carlo, quadrature, the evidence identity, an explicit
completing-the-square formula and the appendix's own eqs. (98)-(101).

Model: s ~ N(0, Sp) in R^d, o | s ~ N(X s, Sl) in R^n, q(s) = N(mu, Sq);
L_a(q) = 1/(1-a) log int q^a p(o, s)^(1-a) ds (Li and Turner; the appendix's eq. 68).

Tolerances: quadrature as in tests/test_divergences.py (integrals to ~1e-11, compared at
the brief's 1e-8 relative); Monte Carlo within 4 standard errors at fixed seeds, each
with a stated power; two closed forms of the same number on well-conditioned matrices
at 1e-10 (rounding ~cond * d * eps ~ 1e-13).
"""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import gamma as gamma_dist
from scipy.stats import multivariate_normal

import vits_ref as vr
from vits_ref import gaussian as g
from vits_ref.gaussian import divergences as dv

LOG_2PI = math.log(2 * math.pi)


def random_spd(rng, d, jitter=0.5):
    a = rng.normal(size=(d, d))
    return a @ a.T / d + jitter * np.eye(d)


def model(rng, d, n):
    X = rng.normal(size=(n, d))
    return rng.normal(size=n) + X @ rng.normal(size=d), X, random_spd(rng, d), random_spd(rng, n)


def posterior(o, X, sp, sl):
    """Exact posterior with explicit inverses (independent of the library's Cholesky path)."""
    prec = np.linalg.inv(sp) + X.T @ np.linalg.inv(sl) @ X
    cov = np.linalg.inv(prec)
    return cov @ X.T @ np.linalg.inv(sl) @ o, 0.5 * (cov + cov.T)


def log_gauss_rows(x, cov):
    """log N(x_i; 0, cov) at the rows of x, with an explicit inverse."""
    quad = np.sum((x @ np.linalg.inv(cov)) * x, axis=1)
    return -0.5 * (x.shape[1] * LOG_2PI + np.linalg.slogdet(cov)[1] + quad)


def log_joint(s, o, X, sp, sl):
    """log p(o, s) at the rows of s (n_draws, d)."""
    return log_gauss_rows(s, sp) + log_gauss_rows(o[None, :] - s @ X.T, sl)


def draw(rng, mean, cov, size):
    return mean + rng.standard_normal((size, len(mean))) @ np.linalg.cholesky(cov).T


def explicit_bound(o, X, sp, sl, mu, sq, a):
    """Completing the square in q^a p(o, s)^(1-a), for vector s (docs/algorithms.md §6):

    quadratic s^T A s - 2 b^T s + c with A = a inv(Sq) + (1-a) P, P = inv(Sp) + X^T inv(Sl) X,
    b = a inv(Sq) mu + (1-a) X^T inv(Sl) o, c = a mu^T inv(Sq) mu + (1-a) o^T inv(Sl) o;
    L_a = 1/2 log(det Sq / ((2 pi)^n det Sp det Sl))
          - 1/(2(1-a)) log det(I + (1-a)(Sq P - I)) - (c - b^T inv(A) b) / (2(1-a)).
    """
    n, d = X.shape
    isl, isq = np.linalg.inv(sl), np.linalg.inv(sq)
    P = np.linalg.inv(sp) + X.T @ isl @ X
    A = a * isq + (1 - a) * P
    b = a * isq @ mu + (1 - a) * X.T @ isl @ o
    c = a * mu @ isq @ mu + (1 - a) * o @ isl @ o
    logdet = np.linalg.slogdet
    return (0.5 * (logdet(sq)[1] - n * LOG_2PI - logdet(sp)[1] - logdet(sl)[1])
            - logdet(np.eye(d) + (1 - a) * (sq @ P - np.eye(d)))[1] / (2 * (1 - a))
            - (c - b @ np.linalg.solve(A, b)) / (2 * (1 - a)))


def appendix_terms(o, x, sp, sl, mu, sq, a):
    """Eqs. (98)-(101) as printed, for the appendix's scalar s (x, o vectors of length n),
    read as the bound L_a (their label says D_a; the value is -D_a, see eq. 68). X, c, oo
    are the appendix's x^T inv(Sl) x, x^T inv(Sl) o and O = o^T inv(Sl) o."""
    isl = np.linalg.inv(sl)
    X, c, oo = x @ isl @ x, x @ isl @ o, o @ isl @ o
    P = 1 / sp + X
    A = a / sq + (1 - a) * P
    n = len(o)
    value = (0.5 * math.log(sq / ((2 * math.pi) ** n * sp * np.linalg.det(sl)))  # (98)
             - a / (2 * sq * A) * (oo + mu**2 / sp + mu**2 * X - 2 * mu * c)       # (99)
             - math.log(1 + (1 - a) * (sq * X + sq / sp - 1)) / (2 * (1 - a))     # (100)
             - (1 - a) * oo / (2 * A * sp))                                        # (101)
    missing = -(1 - a) / (2 * A) * (oo * X - c**2)   # dropped between eqs. (93) and (94)
    return value, missing


# ---------------------------------------------------------------------------------------
# the evidence identity and the closed forms against each other
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d, n", [(1, 1), (1, 4), (3, 5)])
def test_evidence_and_bound_at_the_exact_posterior(d, n):
    rng = np.random.default_rng(100 * d + n)
    o, X, sp, sl = model(rng, d, n)
    want = multivariate_normal(np.zeros(n), sl + X @ sp @ X.T).logpdf(o)
    assert dv.linear_gaussian_log_evidence(o, X, sp, sl) == pytest.approx(want, rel=1e-12)
    m, C = posterior(o, X, sp, sl)
    # q = p(s | o): p(o, s)/q(s) = p(o) for every s, so L_a = log p(o) for every a; the
    # posterior is computed here with explicit inverses, so D_a(q || pi) ~ 1e-15, not 0.
    for a in (-2.0, -0.5, 0.0, 0.3, 0.5, 1.0 - 1e-9, 1.0, 1.5, 3.0, 10.0):
        assert dv.linear_gaussian_renyi_bound(o, X, sp, sl, m, C, a) == \
            pytest.approx(want, rel=1e-10)
    assert dv.linear_gaussian_elbo(o, X, sp, sl, m, C) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("d, n", [(1, 3), (2, 2), (3, 5)])
@pytest.mark.parametrize("a", [-0.4, 0.2, 0.5, 0.8, 1.3])
def test_bound_matches_explicit_completing_the_square(d, n, a):
    rng = np.random.default_rng(7 * d + n)
    o, X, sp, sl = model(rng, d, n)
    m, C = posterior(o, X, sp, sl)
    mu, sq = m + 0.3 * rng.normal(size=d), C @ np.diag(rng.uniform(0.8, 1.2, d)) @ C / np.mean(
        np.diag(C))
    sq = 0.5 * (sq + sq.T) + 0.05 * np.eye(d)
    got = dv.linear_gaussian_renyi_bound(o, X, sp, sl, mu, sq, a)
    assert got == pytest.approx(explicit_bound(o, X, sp, sl, mu, sq, a), rel=1e-10)
    # and the route through the divergence family: log p(o) - D_a(q || posterior)
    via_renyi = dv.linear_gaussian_log_evidence(o, X, sp, sl) - g.renyi(mu, sq, m, C, a)
    assert got == pytest.approx(via_renyi, rel=1e-10)


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("a", [-0.5, 0.3, 0.5, 0.9, 1.5, 2.0])
def test_appendix_eqs_98_to_101(n, a):
    # Scalar s (d = 1). As printed, eqs. (98)-(101) are the bound (not D_a) for n = 1,
    # and for n > 1 they lack -(1-a)/(2A) (O X - c^2), where O X - c^2 >= 0 by
    # Cauchy-Schwarz in the inv(Sl) inner product, = 0 iff o is parallel to x.
    rng = np.random.default_rng(40 + n)
    x = rng.normal(size=n)
    o = 1.3 * x + rng.normal(size=n)
    sp, sl, mu, sq = 0.8, random_spd(rng, n), 0.4, 0.3
    got = dv.linear_gaussian_renyi_bound(o, x[:, None], [[sp]], sl, [mu], [[sq]], a)
    printed, missing = appendix_terms(o, x, sp, sl, mu, sq, a)
    assert got == pytest.approx(printed + missing, rel=1e-10)
    if n == 1:
        assert missing == pytest.approx(0.0, abs=1e-14)
    else:
        assert abs(missing) > 1e-3 * abs(got)


# ---------------------------------------------------------------------------------------
# against numerical integration
# ---------------------------------------------------------------------------------------

def log_integrand(o, X, sp, sl, mu, sq, a):
    """s -> a log q(s) + (1 - a) log p(o, s), written out with explicit inverses."""
    n, d = X.shape
    isp, isl, isq = np.linalg.inv(sp), np.linalg.inv(sl), np.linalg.inv(sq)
    logdet = np.linalg.slogdet
    cq = -0.5 * (d * LOG_2PI + logdet(sq)[1])
    cp = -0.5 * ((n + d) * LOG_2PI + logdet(sp)[1] + logdet(sl)[1])

    def f(s):
        dq, r = s - mu, o - X @ s
        return (a * (cq - 0.5 * dq @ isq @ dq)
                + (1 - a) * (cp - 0.5 * (s @ isp @ s + r @ isl @ r)))

    # where the integrand lives (used only to place the integration box): its precision
    # A = a inv(Sq) + (1 - a) P and its centre inv(A) b
    A = a * isq + (1 - a) * (isp + X.T @ isl @ X)
    assert np.all(np.linalg.eigvalsh(A) > 0), "this case's integral diverges"
    cov = np.linalg.inv(A)
    centre = cov @ (a * isq @ mu + (1 - a) * X.T @ isl @ o)
    return f, centre, np.sqrt(np.diag(cov))


def quad_bound_1d(o, x, sp, sl, mu, sq, a):
    f, centre, sd = log_integrand(o, x[:, None], np.array([[sp]]), sl, np.array([mu]),
                                  np.array([[sq]]), a)
    c, half = float(centre[0]), 14 * float(sd[0])   # 14 sd: < exp(-98) outside
    shift = f(np.array([c]))
    val, err = integrate.quad(lambda s: math.exp(f(np.array([s])) - shift), c - half,
                              c + half, epsabs=0.0, epsrel=1e-13, limit=200)
    assert err < 1e-11 * val
    return (math.log(val) + shift) / (1 - a)


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("a, sq", [(-0.5, 0.8), (0.3, 0.8), (0.5, 0.25), (0.9, 0.25),
                                   (1.5, 0.25), (2.0, 0.25)])
def test_one_dimensional_against_quadrature(n, a, sq):
    # a < 0 needs q wide enough and a > 1 narrow enough (A > 0, checked in the helper)
    rng = np.random.default_rng(60 + n)
    x = rng.normal(size=n)
    o = 0.7 * x + rng.normal(size=n)
    sp, sl, mu = 1.5, random_spd(rng, n), -0.2
    want = quad_bound_1d(o, x, sp, sl, mu, sq, a)
    got = dv.linear_gaussian_renyi_bound(o, x[:, None], [[sp]], sl, [mu], [[sq]], a)
    assert got == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("a", [-0.3, 0.5, 1.7])
def test_two_dimensional_against_quadrature(a):
    rng = np.random.default_rng(77)
    o, X, sp, sl = model(rng, 2, 3)
    m, C = posterior(o, X, sp, sl)
    mu, sq = m + np.array([0.3, -0.2]), 0.7 * C + 0.02 * np.eye(2)
    f, centre, sd = log_integrand(o, X, sp, sl, mu, sq, a)
    half = 12 * sd   # 12 sd per axis: < exp(-72) outside

    def h(s2, s1):
        return math.exp(f(np.array([s1, s2])) - shift)

    shift = f(centre)
    val, err = integrate.dblquad(h, centre[0] - half[0], centre[0] + half[0],
                                 centre[1] - half[1], centre[1] + half[1],
                                 epsabs=0.0, epsrel=1e-11)
    assert err < 1e-9 * val
    want = (math.log(val) + shift) / (1 - a)
    got = dv.linear_gaussian_renyi_bound(o, X, sp, sl, mu, sq, a)
    assert got == pytest.approx(want, rel=1e-8)


# ---------------------------------------------------------------------------------------
# against Monte Carlo
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, scale", [(0.5, 1.3), (2.0, 0.5), (-0.5, 1.5)])
def test_bound_against_monte_carlo(a, scale):
    # L_a = 1/(1-a) log E_q[w^(1-a)], w = p(o, s)/q(s), s ~ q. The mean of e = w^(1-a)
    # has finite variance iff (2a - 1) inv(Sq) + (2 - 2a) P is positive definite; with
    # Sq = scale * C that is (2a - 1)/scale + 2 - 2a > 0, true for the three cases. The
    # delta method gives se(L) = se(mean e) / (|1 - a| mean e); 5e5 draws, 4 standard
    # errors (false alarm ~6e-5 per case); the power line: a 5% error in D_a(q || pi)
    # = log p(o) - L_a would be caught (4 se is 0.5% to 4% of it in these cases).
    rng = np.random.default_rng(2024)
    o, X, sp, sl = model(rng, 2, 3)
    m, C = posterior(o, X, sp, sl)
    mu, sq = m + np.array([0.4, -0.3]) * np.sqrt(np.diag(C)), scale * C
    s = draw(rng, mu, sq, 500_000)
    log_w = log_joint(s, o, X, sp, sl) - log_gauss_rows(s - mu, sq)
    t = (1 - a) * log_w
    shift = t.max()
    e = np.exp(t - shift)
    mean, se_mean = e.mean(), e.std(ddof=1) / math.sqrt(e.size)
    mc = (math.log(mean) + shift) / (1 - a)
    se = se_mean / (abs(1 - a) * mean)
    got = dv.linear_gaussian_renyi_bound(o, X, sp, sl, mu, sq, a)
    assert abs(got - mc) < 4 * se
    gap = dv.linear_gaussian_log_evidence(o, X, sp, sl) - got
    assert 4 * se < 0.05 * abs(gap)


def test_elbo_against_monte_carlo():
    # ELBO = E_q[log p(o, s) - log q(s)]: a plain mean, se = std/sqrt(N), 4 se; power as above.
    rng = np.random.default_rng(99)
    o, X, sp, sl = model(rng, 3, 4)
    m, C = posterior(o, X, sp, sl)
    mu, sq = m + 0.3, 1.4 * C
    s = draw(rng, mu, sq, 400_000)
    log_w = log_joint(s, o, X, sp, sl) - log_gauss_rows(s - mu, sq)
    mc, se = log_w.mean(), log_w.std(ddof=1) / math.sqrt(log_w.size)
    got = dv.linear_gaussian_elbo(o, X, sp, sl, mu, sq)
    assert abs(got - mc) < 4 * se
    assert 4 * se < 0.05 * (dv.linear_gaussian_log_evidence(o, X, sp, sl) - got)


# ---------------------------------------------------------------------------------------
# limits and ordering
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d, n", [(1, 1), (1, 3), (3, 4)])
def test_order_one_is_the_elbo_and_order_zero_the_evidence(d, n):
    rng = np.random.default_rng(300 + d + n)
    o, X, sp, sl = model(rng, d, n)
    m, C = posterior(o, X, sp, sl)
    mu, sq = m - 0.2, 1.3 * C
    elbo = dv.linear_gaussian_elbo(o, X, sp, sl, mu, sq)
    evidence = dv.linear_gaussian_log_evidence(o, X, sp, sl)
    # ELBO = log p(o) - KL(q || posterior), with the library's kl (argument order q, pi)
    assert elbo == pytest.approx(evidence - g.kl(mu, sq, m, C), rel=1e-10)
    # the bound reaches its limit through the eigen form, the ELBO directly (B.1): two
    # routes, 1e-10; 1e-9 away from a = 1 the exact value moves by ~1e-9 |dL/da|.
    bound = dv.linear_gaussian_renyi_bound
    assert bound(o, X, sp, sl, mu, sq, 1.0) == pytest.approx(elbo, rel=1e-10)
    for eps in (1e-9, -1e-9):
        assert bound(o, X, sp, sl, mu, sq, 1.0 + eps) == pytest.approx(elbo, rel=1e-8)
    assert bound(o, X, sp, sl, mu, sq, 0.0) == evidence
    assert bound(o, X, sp, sl, mu, sq, 1e-9) == pytest.approx(evidence, rel=1e-8)
    # non-increasing in a; a lower bound for a > 0, an upper bound for a < 0
    orders = np.linspace(-1.0, 2.0, 31)
    values = np.array([bound(o, X, sp, sl, mu, sq, a) for a in orders])
    assert np.all(np.diff(values) <= 1e-12)
    assert np.all(values[orders > 0] < evidence) and np.all(values[orders < 0] > evidence)


def test_gamma_prior_adds_its_log_density_everywhere():
    # B.1 with lambda_p held fixed: the target is p(o, s, lambda_p) = p(o, s | lambda_p)
    # Gam(lambda_p), so the constant log Gam(lambda_p; alpha_p, beta_p) (eq. 64) is added
    # to the ELBO, to log p(o, lambda_p) and, since (Gam^(1-a))^(1/(1-a)) = Gam, to L_a.
    rng = np.random.default_rng(5)
    o, X, sp, sl = model(rng, 2, 3)
    mu, sq = np.array([0.1, 0.2]), np.diag([0.3, 0.4])
    shape, rate, lam = 2.5, 1.5, 0.7
    log_gam = gamma_dist(shape, scale=1 / rate).logpdf(lam)
    gp = (shape, rate, lam)
    for fn, extra in ((dv.linear_gaussian_elbo, (mu, sq)),
                      (dv.linear_gaussian_renyi_bound, (mu, sq, 0.4)),
                      (dv.linear_gaussian_log_evidence, ())):
        base = fn(o, X, sp, sl, *extra)
        assert fn(o, X, sp, sl, *extra, gamma_prior=gp) == pytest.approx(base + log_gam,
                                                                          rel=1e-13)


# ---------------------------------------------------------------------------------------
# where the expectation diverges (documented: -inf for a > 1, +inf for a < 0)
# ---------------------------------------------------------------------------------------

def test_divergent_orders():
    # Sq = k C: A = a inv(Sq) + (1 - a) P = (a/k + 1 - a) P, positive definite iff
    # a (1/k - 1) + 1 > 0. k = 3 (q too wide): fails for a >= 1.5; k = 1/3 (q too
    # narrow): fails for a <= -0.5.
    rng = np.random.default_rng(11)
    o, X, sp, sl = model(rng, 2, 3)
    m, C = posterior(o, X, sp, sl)
    bound = dv.linear_gaussian_renyi_bound
    assert bound(o, X, sp, sl, m + 0.1, 3 * C, 2.0) == -math.inf
    assert bound(o, X, sp, sl, m + 0.1, 3 * C, 1.5) == -math.inf   # boundary: A = 0
    assert math.isfinite(bound(o, X, sp, sl, m + 0.1, 3 * C, 1.4))
    assert bound(o, X, sp, sl, m + 0.1, C / 3, -1.0) == math.inf
    assert math.isfinite(bound(o, X, sp, sl, m + 0.1, C / 3, -0.4))


# ---------------------------------------------------------------------------------------
# API and errors
# ---------------------------------------------------------------------------------------

def test_reexported_in_gaussian():
    for name in ("linear_gaussian_elbo", "linear_gaussian_log_evidence",
                 "linear_gaussian_renyi_bound"):
        assert getattr(vr.gaussian, name) is getattr(dv, name)


OBS, XX, SP, SL, MU, SQ = np.ones(3), np.ones((3, 2)), np.eye(2), np.eye(3), np.zeros(2), np.eye(2)


@pytest.mark.parametrize("index, value, exc, match", [
    (0, np.ones((3, 1)), ValueError, "o must be 1-D"),
    (0, np.zeros(0), ValueError, "o must have at least one entry"),
    (0, [1.0, np.nan, 1.0], ValueError, "o contains NaN"),
    (1, np.ones((2, 2)), ValueError, r"X must have shape \(n, d\) = \(3, d\)"),
    (1, np.ones(3), ValueError, "X must be 2-D"),
    (1, np.ones((3, 0)), ValueError, r"x\[:, None\]"),
    (2, np.eye(3), ValueError, "prior_cov must be 2 x 2"),
    (3, np.diag([1.0, -1.0, 1.0]), ValueError, "noise_cov must be positive definite"),
    (4, np.zeros(3), ValueError, r"mean_q must have shape \(2,\)"),
    (5, np.full((2, 2), np.nan), ValueError, "cov_q contains NaN"),
    (6, "1", TypeError, "alpha must be a real number"),
    (6, np.nan, ValueError, "alpha must be finite"),
])
def test_bad_input_names_the_argument(index, value, exc, match):
    args = [OBS, XX, SP, SL, MU, SQ, 0.5]
    args[index] = value
    with pytest.raises(exc, match=match):
        dv.linear_gaussian_renyi_bound(*args)
    if index < 6:
        with pytest.raises(exc, match=match):
            dv.linear_gaussian_elbo(*args[:6])
    if index < 4:
        with pytest.raises(exc, match=match):
            dv.linear_gaussian_log_evidence(*args[:4])


@pytest.mark.parametrize("gp, exc, match", [
    ((1.0, 2.0), TypeError, "gamma_prior must be None or a tuple"),
    ("abc", TypeError, "gamma_prior must be None or a tuple"),
    ((1.0, -2.0, 1.0), ValueError, r"gamma_prior\[1\] \(rate beta_p\) must be > 0"),
    ((1.0, 2.0, "x"), TypeError, r"gamma_prior\[2\] \(precision lambda_p\) must be a real"),
])
def test_bad_gamma_prior(gp, exc, match):
    with pytest.raises(exc, match=match):
        dv.linear_gaussian_elbo(OBS, XX, SP, SL, MU, SQ, gamma_prior=gp)
