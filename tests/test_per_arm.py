"""PerArm: one independent posterior per arm."""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.bandit.policies import PerArm


def test_only_the_played_arm_learns_and_posteriors_are_exact():
    pol = PerArm(vr.LinTS(2, eta=1.0, lam=1.0), n_arms=3, seed=0)
    rng = np.random.default_rng(1)
    played = {0: [], 1: [], 2: []}
    for _ in range(60):
        X = rng.standard_normal((3, 2))
        arm = pol.select(X)
        r = float(X[arm] @ [1.0, -1.0] + rng.standard_normal())
        pol.update(X, arm, r)
        played[arm].append((X[arm], r))
    assert pol.n_obs == 60
    for a, obs in played.items():
        assert pol.engines[a].n_obs == len(obs)
        if obs:  # each arm's posterior is the closed form of its own data only
            F = np.array([o[0] for o in obs])
            y = np.array([o[1] for o in obs])
            mean, cov = vr.gaussian.linear_posterior(F, y, eta=1.0, lam=1.0)
            np.testing.assert_allclose(pol.engines[a].mean, mean, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(pol.engines[a].cov, cov, rtol=1e-10, atol=1e-12)


def test_arms_are_seeded_independently_and_reproducibly():
    a = PerArm(vr.VITS(2, step_size=0.01), n_arms=2, seed=5)
    b = PerArm(vr.VITS(2, step_size=0.01), n_arms=2, seed=5)
    assert not np.array_equal(a.engines[0].mean, a.engines[1].mean)
    np.testing.assert_array_equal(a.engines[1].mean, b.engines[1].mean)
    c = a.fresh(5)
    np.testing.assert_array_equal(c.engines[0].mean, a.engines[0].mean)


def test_simulate_with_per_arm_policy():
    env = vr.envs.hard_instance(dim=4, n_arms=4, seed=0)
    res = vr.simulate(PerArm(vr.LinTS(4), n_arms=4), env, n_rounds=30, n_runs=2, seed=0)
    assert res.cumulative_regret.shape == (2, 30) and not res.fused
    again = vr.simulate(PerArm(vr.LinTS(4), n_arms=4), env, n_rounds=30, n_runs=2, seed=0)
    np.testing.assert_array_equal(res.cumulative_regret, again.cumulative_regret)


def test_bad_input():
    pol = PerArm(vr.LinTS(2), n_arms=3)
    with pytest.raises(ValueError, match="one row per arm"):
        pol.select(np.ones((2, 2)))
    with pytest.raises(ValueError, match="n_arms"):
        PerArm(vr.LinTS(2), n_arms=0)
    with pytest.raises(TypeError, match="engine"):
        PerArm("lints", n_arms=2)
