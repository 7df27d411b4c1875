"""OPVI (Algorithm 1 of the OPVI paper) and the models' mini-batch hook."""

import math

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import engine_streams
from vits_ref.drivers import cpu
from vits_ref.inference.particles import batch_size
from vits_ref.reference import svgd as ref


def test_batch_schedules():
    assert [batch_size(t) for t in (1, 2, 10, 500)] == [1, 2, math.ceil(10 ** 0.55),
                                                         math.ceil(500 ** 0.55)]
    assert batch_size(500) == 31  # 500^0.55 = 30.5: the paper's 500 rounds end near 30
    N, rho = 1000.0, 0.55
    for t in (1, 7, 10_000):
        tr = t ** rho
        assert batch_size(t, "saturating", N=N, rho=rho) == math.ceil(N * tr / (N + tr))
    assert batch_size(10 ** 12, "saturating", N=N, rho=rho) == N  # tends to N


def test_one_round_is_algorithm_1():
    """Round t: the mini-batch drawn from the history by the update stream, the summed
    log-likelihood, the prior weighted by 6/(pi^2 t^2), repulsion 0.1; plain ascent."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    r = X @ np.array([1.0, -0.5]) + rng.standard_normal(40)
    n, step, eta, lam = 9, 0.01, 2.0, 0.5
    eng = vr.OPVI(2, eta=eta, lam=lam, n_particles=n, step_size=step, optimizer="sgd",
                  seed=3)
    _, stream = engine_streams(3)
    start = stream.standard_normal((n, 2)) / math.sqrt(lam * eta)
    np.testing.assert_array_equal(eng.particles, start)
    for t in (1, 2, 3):
        before = eng.particles.copy()
        eng.update(X[10 * (t - 1):10 * t], r[10 * (t - 1):10 * t])
        B = math.ceil(t ** 0.55)
        idx = np.sort(stream.choice(10 * t, size=B, replace=False))
        w0 = 6 / (math.pi ** 2 * t ** 2)
        XB, rB = X[idx], r[idx]

        def grad_log_p(T, XB=XB, rB=rB, w0=w0):
            return -eta * ((T @ XB.T - rB) @ XB) - w0 * eta * lam * T

        want = before + step * ref.phi_naive(before, grad_log_p(before), None, 0.1)
        np.testing.assert_allclose(eng.particles, want, rtol=0, atol=1e-12)
        assert eng.diagnostics["batch_size"] == B
        assert eng.diagnostics["prior_weight"] == pytest.approx(w0, rel=1e-15)


def test_tracks_a_linear_target():
    """500 rounds of one observation (the paper's length), 50 particles, AdaGrad.

    At round T the target is the posterior on B_T = ceil(500^0.55) = 31 observations with a
    vanishing prior: its standard deviation per coordinate is about 1/sqrt(31) = 0.18 for
    standard normal features. Tolerance 4 x 0.18 on the distance of the particles' mean
    to theta* (the mini-batch's own estimate errs by ~0.18 per coordinate, the AdaGrad
    jitter of step 0.01 adds ~0.01).
    """
    theta = np.array([1.0, -0.5])
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 2))
    r = X @ theta + rng.standard_normal(500)
    eng = vr.OPVI(2, n_particles=50, step_size=0.05, seed=0)
    for t in range(500):
        eng.update(X[t:t + 1], r[t:t + 1])
    assert eng.diagnostics["batch_size"] == 31 and eng.round == 500
    assert np.linalg.norm(eng.mean - theta) < 4 * math.sqrt(2 / 31)
    assert np.all(np.diag(eng.cov) > 0)


def test_logistic_minibatch_hook():
    rng = np.random.default_rng(2)
    m = vr.models.Logistic(3, eta=1.5, lam=0.7)
    m.add(rng.standard_normal((25, 3)), (rng.random(25) < 0.4).astype(float))
    thetas = rng.standard_normal((4, 3))
    grads = cpu.grads_hessian(m.potential)
    H = np.empty((1, 1))

    def grad(data):
        G = np.empty((4, 3))
        grads(data, thetas, False, G, H, m.kernel_scratch(4))
        return G

    full = grad(m.kernel_data())
    np.testing.assert_allclose(grad(m.minibatch_data(np.arange(25))), full, rtol=1e-14,
                               atol=1e-13)
    # weights: U = lw * like(index) + pw * prior, each term checked against its closed form
    idx = np.array([0, 3, 7, 11])
    Xb, yb = m.X[idx], m.y[idx]
    sig = 1 / (1 + np.exp(-(thetas @ Xb.T)))
    like = 1.5 * (sig - yb) @ Xb
    prior = 1.5 * 0.7 * thetas
    got = grad(m.minibatch_data(idx, like_weight=2.0, prior_weight=0.25))
    np.testing.assert_allclose(got, 2.0 * like + 0.25 * prior, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(grad(m.minibatch_data(idx, 1.0, 0.0)), like, rtol=1e-13,
                               atol=1e-13)
    with pytest.raises(ValueError, match="index must be in"):
        m.minibatch_data(np.array([25]))
    with pytest.raises(TypeError, match="index must be a 1-D integer array"):
        m.minibatch_data(np.array([0.5]))


def test_opvi_on_logistic_and_in_simulate():
    rng = np.random.default_rng(0)
    eng = vr.OPVI(3, model="logistic", n_particles=16, seed=0)
    for _ in range(5):
        eng.update(rng.standard_normal((2, 3)), (rng.random(2) < 0.5).astype(float))
    assert eng.round == 5 and np.all(np.isfinite(eng.particles))
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    res = vr.simulate(vr.ThompsonSampling(vr.OPVI(3, n_particles=16)), env, n_rounds=12,
                      n_runs=2, seed=1, kl_rounds=[12])
    assert res.regret.shape == (2, 12) and np.all(np.isfinite(res.kl))


def test_opvi_validation():
    with pytest.raises(ValueError, match="needs N"):
        vr.OPVI(2, batch="saturating")
    with pytest.raises(ValueError, match="batch must be one of"):
        vr.OPVI(2, batch="linear")
    with pytest.raises(ValueError, match="prior_weight must be"):
        vr.OPVI(2, prior_weight="1/t")
    with pytest.raises(ValueError, match="prior_weight must be >= 0"):
        vr.OPVI(2, prior_weight=-1.0)
    with pytest.raises(TypeError, match="minibatch_data"):
        vr.OPVI(2, model="mlp")
    eng = vr.OPVI(2, prior_weight=1.0, batch="saturating", N=50, rho=0.5, seed=0)
    eng.update(np.eye(2), np.ones(2))
    assert eng.diagnostics["prior_weight"] == 1.0
    assert eng.fresh(1).round == 0
