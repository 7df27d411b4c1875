"""SGLD (Welling & Teh 2011): long-run moments against the exact grid posterior of the
Welling-Teh mixture, the step schedule, and the engine protocol."""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.errors import DivergenceError
from vits_ref.models import WellingTeh, posterior_grid, welling_teh_data
from vits_ref.models.welling_teh import grid_moments

N = 20
CHAINS = 500


@pytest.fixture(scope="module")
def target():
    x = welling_teh_data(N, seed=11)
    grid = (np.linspace(-8, 8, 401), np.linspace(-6, 6, 301))
    mean, cov = grid_moments(posterior_grid(x, grid), grid)
    return x, mean, np.sqrt(np.diag(cov))


def run(x, **kw):
    eng = vr.SGLD(2, model=WellingTeh(), n_particles=CHAINS, seed=1, **kw)
    eng.update(np.empty((N, 0)), x)
    return eng


def check_moments(eng, mean, sd, bias):
    """The chains are independent, so their final states' mean has standard error
    ``sd/sqrt(CHAINS)`` and their standard deviation ``sd/sqrt(2 CHAINS)``; 4 standard
    errors (a 6e-5 two-sided chance each under normality) plus ``bias`` times ``sd``."""
    P = eng.particles
    se_mean = sd / np.sqrt(CHAINS)
    se_sd = sd / np.sqrt(2 * CHAINS)
    assert np.all(np.abs(P.mean(axis=0) - mean) <= 4 * se_mean + bias * sd), (P.mean(0), mean)
    assert np.all(np.abs(P.std(axis=0) - sd) <= 4 * se_sd + bias * sd), (P.std(0), sd)


def test_full_batch_chains_reach_the_exact_posterior(target):
    x, mean, sd = target
    # B = N: unadjusted Langevin with step h/2. Its stationary variance along a direction of
    # curvature k is 1/(k (1 - h k/4)): a relative bias h k / 8 in the sd, < 1% for
    # h = 0.01 and k <= 1/0.35^2 (the posterior's narrowest direction here). Burn-in: the
    # slowest relaxation time is 2/(h k_min) ~ 300 steps; 2000 steps are > 6 of them.
    eng = run(x, step_size=0.01, batch_size=N, n_steps=2000)
    check_moments(eng, mean, sd, bias=0.01)
    assert eng.diagnostics["batch_size"] == N


def test_minibatch_chains_with_decaying_steps(target):
    x, mean, sd = target
    # B = 5 of 20 with Welling & Teh's h_t = a (b + t)^-0.55: sum h_t over 3000 steps is
    # ~7.5 time units (> 5 relaxation times 2/k_min ~ 1.4); at the last step h ~ 1.2e-3 the
    # mini-batch noise adds a variance ~ h N^2 s_g^2 / (4 B k) ~ 5e-3 (s_g^2 ~ 0.3 the
    # per-point gradients' variance), under 1% of the sd; 2% covers it and the
    # discretisation bias.
    eng = run(x, step_size=0.1, batch_size=5, n_steps=3000, schedule="polynomial",
              step_offset=10.0)
    check_moments(eng, mean, sd, bias=0.02)
    assert eng.diagnostics["step_size"] == pytest.approx(0.1 * (10 + 2999) ** -0.55)
    # the constant-step mini-batch chain is biased by its gradient noise: this instance's
    # theta1 mean sits > 2 standard errors off (what the decaying schedule removes)
    const = run(x, step_size=0.01, batch_size=5, n_steps=3000)
    assert abs(const.particles[:, 0].mean() - mean[0]) > 2 * sd[0] / np.sqrt(CHAINS)


def test_protocol_seeding_and_schedule():
    x = welling_teh_data(50, seed=0)
    a = vr.SGLD(2, model=WellingTeh(), step_size=1e-2, n_particles=4, n_steps=3, seed=7)
    b = vr.SGLD(2, model=WellingTeh(), step_size=1e-2, n_particles=4, n_steps=3, seed=7)
    for eng in (a, b):
        eng.update(np.empty((30, 0)), x[:30]).update(np.empty((20, 0)), x[30:])
    assert np.array_equal(a.particles, b.particles) and a.n_obs == 50 and a.t == 6
    s = a.sample(10)
    assert s.shape == (10, 2) and all(any(np.array_equal(r, p) for p in a.particles) for r in s)
    assert np.array_equal(a.particles, b.particles)  # sampling leaves the chains alone
    assert np.allclose(a.mean, a.particles.mean(0)) and a.cov.shape == (2, 2)
    f = a.fresh(seed=7)
    assert f.n_obs == 0 and f.t == 0 and f.n_particles == 4
    p = vr.SGLD(2, model=WellingTeh(), step_size=0.5, schedule="polynomial", step_offset=2.0,
                step_decay=0.6)
    assert p.step_size_at(3) == pytest.approx(0.5 * 5 ** -0.6)


def test_errors():
    with pytest.raises(TypeError, match="minibatch_data"):
        vr.SGLD(3, model="mlp")
    with pytest.raises(ValueError, match="schedule"):
        vr.SGLD(2, model=WellingTeh(), schedule="cosine")
    with pytest.raises(ValueError, match="step_size"):
        vr.SGLD(2, model=WellingTeh(), step_size=0.0)
    with pytest.raises(ValueError, match="init"):
        vr.SGLD(2, model=WellingTeh(), n_particles=3, init=np.zeros((2, 2)))
    eng = vr.SGLD(2, model=WellingTeh(), step_size=1e6, n_steps=50, seed=0)
    with pytest.raises(DivergenceError):
        eng.update(np.empty((5, 0)), 100.0 * np.arange(5.0))


def test_bnn_model_runs_and_improves_fit():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(200)
    model = vr.models.BNNRegression(3, hidden=10)
    eng = vr.SGLD(model.dim, model=model, step_size=1e-4, batch_size=20, n_particles=5,
                  n_steps=400, seed=0)
    before, _ = vr.models.regression_metrics(eng.model, eng.particles, X, y)
    eng.update(X, y)
    after, _ = vr.models.regression_metrics(eng.model, eng.particles, X, y)
    assert after < 0.5 * before
