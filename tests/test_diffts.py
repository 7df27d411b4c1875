"""The DiffTS (LaplaceDPS) and DPS engines (vits_ref.inference.diffts) on exact Gaussian
diffusion priors: Theorem 3's consistency, the KL to the exact posterior, logistic
LaplaceDPS against the Laplace engine, DPS's divergence, the engine protocol, and the
compiled bandit driver against the Python loop of ThompsonSampling(DiffTS).

Exact moment propagation (vits_ref.reference.diffusion.laplace_linear_moments) gives the
linear LaplaceDPS output law in closed form for a Gaussian prior; Monte Carlo checks use
the bounds of tests/test_diffusion_chain.py's ``assert_moments`` (computed from n).
"""

import numpy as np
import pytest
from test_diffusion_chain import assert_moments

import vits_ref as vr
from vits_ref.diffusion import GaussianDiffusionPrior
from vits_ref.diffusion import chain as dchain
from vits_ref.reference import diffusion as ref

M0 = np.array([0.5, -0.5])
S0 = np.array([[1.0, 0.4], [0.4, 0.8]])
THETA = np.array([1.0, 0.5])
SIGMA = 1.0


@pytest.fixture(scope="module")
def prior():
    return GaussianDiffusionPrior(M0, S0)


def linear_data(N, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (N, 2))
    return X, X @ THETA + SIGMA * rng.standard_normal(N)


# --------------------------------------------------------------------------- Theorem 3


NS = (10, 100, 1000, 10000, 100000)


def test_laplace_dps_concentrates_at_least_squares(prior):
    """Theorem 3 of Kveton et al. (with the clipped btilde_1), by exact moment propagation:
    the LaplaceDPS law centres on the least-squares estimate and its spread shrinks like
    1/sqrt(N); its KL to the exact posterior falls as N grows."""
    spread, offset, kls = [], [], []
    for N in NS:
        X, y = linear_data(N)
        mL, CL = ref.laplace_linear_moments(prior, X.T @ X, X.T @ y, 1 / SIGMA ** 2)
        ls = np.linalg.solve(X.T @ X, X.T @ y)
        mp, Cp = vr.gaussian.linear_posterior_general(X, y, M0, S0, SIGMA ** 2)
        spread.append(np.sqrt(np.trace(CL)))
        offset.append(np.linalg.norm(mL - ls) / np.sqrt(np.trace(CL)))
        kls.append(vr.gaussian.kl(mL, CL, mp, Cp))
    # spread 0.53, 0.20, 0.075, 0.024, 0.0077 (exact posterior: 0.72, 0.25, 0.078, 0.024,
    # 0.0078): LaplaceDPS is narrower at small N and joins the posterior, so the slope of
    # log spread against log N is -0.474 over N = 100..1e5 and -0.492 over 1000..1e5
    slope = np.polyfit(np.log(NS[2:]), np.log(spread[2:]), 1)[0]
    assert -0.52 < slope < -0.47, slope
    # distance to the LS estimate in units of the spread: the prior's pull, O(1/sqrt(N))
    assert offset[-1] < 0.02 and offset[-1] < offset[1] / 10, offset
    # measured KL: 0.147, 0.076, 3.3e-3, 4.5e-5, 4.7e-7 (N = 10 .. 1e5)
    assert all(a > b for a, b in zip(kls, kls[1:], strict=False)), kls
    assert kls[-1] < 1e-5, kls


def test_unclipped_btilde1_breaks_consistency(prior):
    """With btilde_1 -> 0 the last stage ignores the evidence and the
    draws do not converge to the least-squares estimate. Relative error of the LaplaceDPS
    mean, N = 1e3, 1e4, 1e5: clipped 2.9e-3, 3.3e-4, 3.3e-5; btilde_1 = 1e-14: 0.033 at
    every N (the second coordinate converges to 0.926 times its estimate), 5 spreads off
    at N = 1e5."""
    bad = GaussianDiffusionPrior(M0, S0)
    rp = bad.reverse_prec.copy()
    rp[1] = np.eye(2) / 1e-14  # btilde_1 ~ 0 (exactly 0 is an infinite precision)
    bad.reverse_prec = rp
    for N in (1000, 10000, 100000):
        X, y = linear_data(N)
        ls = np.linalg.solve(X.T @ X, X.T @ y)
        mb, Cb = ref.laplace_linear_moments(bad, X.T @ X, X.T @ y, 1.0)
        mg, _ = ref.laplace_linear_moments(prior, X.T @ X, X.T @ y, 1.0)
        assert np.linalg.norm(mb - ls) / np.linalg.norm(ls) > 0.02
        assert np.linalg.norm(mg - ls) / np.linalg.norm(ls) < 0.15 / np.sqrt(N)
    assert np.linalg.norm(mb - ls) / np.sqrt(np.trace(Cb)) > 3


def test_engine_samples_follow_the_propagated_law(prior):
    X, y = linear_data(1000)
    eng = vr.DiffTS(prior, sigma=SIGMA, seed=3)
    eng.update(X[:400], y[:400]).update(X[400:], y[400:])
    mL, CL = ref.laplace_linear_moments(prior, X.T @ X, X.T @ y, 1 / SIGMA ** 2)
    x = eng.sample(4000)
    assert_moments(x, mL, CL)
    G, h, syy = eng.stats
    np.testing.assert_allclose(G, X.T @ X, rtol=1e-12)
    np.testing.assert_allclose(h, X.T @ y, rtol=1e-12)
    assert abs(syy - y @ y) < 1e-9 * (y @ y)
    # sample KL to the exact posterior (4000 draws; the exact propagated value is 3.3e-3)
    mp, Cp = vr.gaussian.linear_posterior_general(X, y, M0, S0, SIGMA ** 2)
    assert vr.gaussian.kl(x.mean(0), np.cov(x, rowvar=False), mp, Cp) < 0.01


# --------------------------------------------------------------------------- logistic


def test_logistic_laplace_dps_matches_laplace_engine():
    """A flat prior N(0, 100 I): the LaplaceDPS draws centre on the Laplace engine's MAP,
    and their covariance is the Laplace covariance shrunk by LaplaceDPS's own factor, the
    one its linear version gives for the Laplace (quadratic) approximation of the
    likelihood (0.79-0.82 at N = 600; 0.93 at N = 3000: it tends to 1 as N grows)."""
    rng = np.random.default_rng(3)
    N, T, n, lam = 600, 10, 1500, 0.01
    X = rng.standard_normal((N, 2))
    y = (rng.random(N) < 1 / (1 + np.exp(-X @ np.array([1.0, -0.5])))).astype(float)
    lap = vr.Laplace(2, model="logistic", lam=lam).update(X, y)
    p = GaussianDiffusionPrior(np.zeros(2), np.eye(2) / lam, n_stages=T)
    eng = vr.DiffTS(p, model="logistic", seed=1).update(X, y)
    x = eng.sample(n)
    assert eng.diagnostics["stages_not_converged"] == 0
    assert eng.diagnostics["newton_iterations"] > 0
    H = lap.precision
    mq, Cq = ref.laplace_linear_moments(p, H - lam * np.eye(2), H @ lap.mean, 1.0)
    np.testing.assert_allclose(mq, lap.mean, atol=1e-6)  # the quadratic approximation's mean
    # the logistic likelihood is not exactly quadratic: 6 standard errors on the covariance
    assert_moments(x, lap.mean, Cq, z_cov=6.0)
    ratio = np.diag(np.cov(x, rowvar=False)) / np.diag(lap.cov)
    assert np.all((0.7 < ratio) & (ratio < 0.9)), ratio


# --------------------------------------------------------------------------- DPS


def test_dps_error_grows_with_n_where_diffts_does_not(prior):
    """Kveton et al., section 6.2: 'DPS diverges as the number of rounds increases'. Error of
    the sample mean in units of the exact posterior's standard deviation (2000 draws; the
    Monte Carlo error is about 0.03 of those units for DiffTS). Measured, DPS:
    0.69, 0.22, 39, 2600 for N = 10, 100, 1000, 10 000; DiffTS below 0.07 at every N."""
    err_dps, err_diffts = [], []
    for N in (10, 100, 1000, 10000):
        X, y = linear_data(N)
        mp, Cp = vr.gaussian.linear_posterior_general(X, y, M0, S0, SIGMA ** 2)
        sd = np.sqrt(np.diag(Cp))
        xd = vr.DPS(prior, sigma=SIGMA, seed=2).update(X, y).sample(2000)
        xl = vr.DiffTS(prior, sigma=SIGMA, seed=2).update(X, y).sample(2000)
        err_dps.append(np.max(np.abs(xd.mean(0) - mp) / sd))
        err_diffts.append(np.max(np.abs(xl.mean(0) - mp) / sd))
    assert max(err_diffts) < 0.15, err_diffts
    assert err_dps[-1] > 100 and err_dps[-1] > 100 * err_dps[1], err_dps
    assert err_dps[2] > 10


def test_dps_without_observations_is_the_prior_chain(prior):
    z = dchain.normals(prior, 5, seed=1)
    a, ok = dchain.dps_linear(prior, np.zeros((2, 2)), np.zeros(2), 0.0, z)
    assert ok.all()
    np.testing.assert_allclose(a, dchain.reverse_chain(GaussianDiffusionPrior(
        M0, S0, reverse_variance="ddpm"), z), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- protocol


@pytest.fixture(scope="module")
def small_prior():
    return GaussianDiffusionPrior(M0, S0, n_stages=12)


@pytest.mark.parametrize("cls", [vr.DiffTS, vr.DPS])
def test_seeding_and_fresh(cls, small_prior):
    X, y = linear_data(20)
    a = cls(small_prior, sigma=0.5, seed=7).update(X, y)
    b = cls(small_prior, sigma=0.5, seed=7).update(X, y)
    np.testing.assert_array_equal(a.sample(4), b.sample(4))
    f = a.fresh(seed=7)
    assert f.n_obs == 0 and f.sigma == 0.5 and f.prior is small_prior
    np.testing.assert_array_equal(f.update(X, y).sample(4),
                                  cls(small_prior, sigma=0.5, seed=7).update(X, y).sample(4))
    assert not np.array_equal(a.fresh(seed=8).update(X, y).sample(4), a.sample(4))
    assert repr(a).startswith(cls.__name__)


def test_validation(small_prior):
    with pytest.raises(TypeError, match="prior"):
        vr.DiffTS(np.zeros(2))
    with pytest.raises(ValueError, match="sigma"):
        vr.DiffTS(small_prior, sigma=0.0)
    with pytest.raises(ValueError, match="sigma"):
        vr.DPS(small_prior, sigma=-1.0)
    with pytest.raises(ValueError, match="model"):
        vr.DiffTS(small_prior, model="mlp")
    with pytest.raises(ValueError, match="model"):
        vr.DPS(small_prior, model="logistic")
    eng = vr.DiffTS(small_prior, seed=0)
    with pytest.raises(ValueError, match="features"):
        eng.update(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="rewards"):
        eng.update(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="n must be"):
        eng.sample(0)


@pytest.mark.parametrize("model, bad", [("linear", np.nan), ("logistic", 0.5)])
def test_rejected_input_leaves_engine_untouched(small_prior, model, bad):
    eng = vr.DiffTS(small_prior, model=model, seed=0)
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    eng.update(X, np.array([1.0, 0.0]))
    state = eng.stats, eng.n_obs
    with pytest.raises(ValueError):
        eng.update(X, np.array([1.0, bad]))
    assert eng.n_obs == state[1] == 2
    for a, b in zip(eng.stats, state[0], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(eng.sample(3), vr.DiffTS(small_prior, model=model, seed=0)
                                  .update(X, np.array([1.0, 0.0])).sample(3))


def test_logistic_newton_failure_names_engine_round_and_stage(small_prior):
    eng = vr.DiffTS(small_prior, model="logistic", seed=0)
    # 1e150: the largest magnitude update accepts (larger is a ValueError); the stage's
    # Newton solve still overflows
    eng.update(np.array([[1e150, 1e150]]), np.array([1.0]))
    with pytest.raises(vr.DivergenceError, match=r"DiffTS.*round 1.*stage"):
        eng.sample(2)


def test_thompson_sampling_and_simulate_with_diffusion_engines(small_prior):
    env = vr.envs.pool(dim=2, n_arms=5, zeta=1.0, seed=1)
    for eng in (vr.DiffTS(small_prior, sigma=0.5, seed=0), vr.DPS(small_prior, seed=0)):
        res = vr.simulate(vr.ThompsonSampling(eng), env, n_rounds=8, n_runs=2, seed=3)
        assert res.regret.shape == (2, 8) and np.all(np.isfinite(res.regret))
        assert np.all(res.regret >= 0)


def test_compiled_bandit_driver_equals_python_loop_bit_for_bit(small_prior):
    env = vr.envs.pool(dim=2, n_arms=6, zeta=1.0, seed=2)
    pol = vr.ThompsonSampling(vr.DiffTS(small_prior, sigma=0.7, seed=0))
    res = vr.simulate(pol, env, n_rounds=25, n_runs=3, seed=11, fused=False)
    fast = vr.simulate(pol, env, n_rounds=25, n_runs=3, seed=11)
    assert fast.fused and not res.fused  # the runner chose the compiled chains unasked
    np.testing.assert_array_equal(fast.arms, res.arms)
    np.testing.assert_array_equal(fast.regret, res.regret)
    with pytest.raises(ValueError, match="contexts"):
        dchain.run_linear_bandit(small_prior, np.zeros((1, 2, 3, 3)), np.zeros((1, 2, 3)),
                                 np.zeros((1, 2, 3)), seeds=[0])
    with pytest.raises(ValueError, match="seed"):
        dchain.run_linear_bandit(small_prior, np.zeros((1, 2, 3, 2)), np.zeros((1, 2, 3)),
                                 np.zeros((1, 2, 3)))
