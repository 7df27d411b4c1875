"""The VITS paper's environments: pool (appendix H) and hard instance (appendix G).

Statistical checks are moment tests at fixed seeds with 5-standard-error tolerances (a
false alarm per tested quantity of 5.7e-7 for Gaussian-like estimators) or KS tests with a
p-value threshold of 1e-4; each states the effect it can resolve.
"""

import math

import numpy as np
import pytest
from scipy import stats

import vits_ref as vr

# ---------------------------------------------------------------------------------------
# pool environment
# ---------------------------------------------------------------------------------------

def test_pool_zero_zeta_contexts_are_pool_rows():
    env = vr.envs.pool(dim=4, n_arms=7, zeta=0.0, pool_size=9, seed=0)
    real = env.realise(50, rng=1)
    assert real.contexts.shape == (50, 7, 4)
    rows = real.contexts.reshape(-1, 4)
    # every context is exactly one of the pool's vectors, and all of them get used
    match = (rows[:, None, :] == env.pool[None, :, :]).all(axis=2)
    assert np.all(match.sum(axis=1) >= 1)
    assert np.all(match.any(axis=0))


def test_pool_context_covariance():
    # contexts = pool[idx] + zeta * N(0, I): mean = pool mean, covariance = the pool's
    # (population, ddof = 0) covariance + zeta^2 I. 2000 rounds x 50 arms = 1e5 draws.
    d, zeta = 4, 0.5
    env = vr.envs.pool(dim=d, n_arms=50, zeta=zeta, seed=3)
    x = env.realise(2000, rng=4).contexts.reshape(-1, d)
    n = x.shape[0]
    mean = env.pool.mean(axis=0)
    cov = np.cov(env.pool, rowvar=False, ddof=0) + zeta ** 2 * np.eye(d)
    var = np.diag(cov)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 5 * np.sqrt(var / n))
    # the rows are a 50-atom mixture plus noise, not Gaussian: the standard error of each
    # covariance entry is estimated from the centred products themselves (their sample
    # standard deviation / sqrt(n)); 5 SE per entry
    xc = x - mean
    prods = xc[:, :, None] * xc[:, None, :]
    se = prods.std(axis=0, ddof=1) / math.sqrt(n)
    emp = prods.mean(axis=0)
    assert np.all(np.abs(emp - cov) < 5 * se)
    # power: zeta^2 = 0.25 is ~25 SE of the diagonal, so a missing (or doubled) noise term
    # fails
    assert np.all(zeta ** 2 > 20 * np.diag(se))


@pytest.mark.parametrize("zeta", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("d", [2, 20])
def test_pool_noise_scales(zeta, d):
    lin = vr.envs.pool(dim=d, zeta=zeta, reward="linear", seed=0)
    quad = vr.envs.pool(dim=d, zeta=zeta, reward="quadratic", seed=0)
    assert lin.noise_scale == pytest.approx(math.sqrt(1 + zeta ** 2), rel=1e-15)
    assert quad.noise_scale == pytest.approx((1 + zeta ** 2) * math.sqrt(3 + 6 / d), rel=1e-15)


@pytest.mark.parametrize("reward", ["linear", "quadratic"])
def test_pool_means_are_expected_rewards(reward):
    env = vr.envs.pool(dim=5, n_arms=6, zeta=0.3, reward=reward, seed=2)
    real = env.realise(20, rng=5)
    z = real.contexts @ env.theta_star
    want = z if reward == "linear" else z ** 2
    assert np.allclose(real.means, want, rtol=1e-14, atol=1e-15)
    assert np.array_equal(real.means, env.expected_reward(real.contexts))
    assert np.array_equal(real.optimal_means, real.means.max(axis=1))
    assert env.optimal_mean_reward(real.contexts[0]) == real.means[0].max()


@pytest.mark.parametrize("reward,zeta", [("linear", 0.1), ("linear", 1.0), ("quadratic", 1.0)])
def test_pool_reward_noise_distribution(reward, zeta):
    # realised - expected rewards ~ N(0, alpha^2). The environment draws one noise value per
    # round for all arms (only the played arm's is observed), so use one arm.
    env = vr.envs.pool(dim=5, n_arms=3, zeta=zeta, reward=reward, seed=1)
    real = env.realise(20_000, rng=2)
    noise = real.rewards - real.means
    assert np.allclose(noise, noise[:, :1])
    e = noise[:, 0]
    alpha, n = env.noise_scale, e.size
    assert abs(e.mean()) < 5 * alpha / math.sqrt(n)
    # SE of a Gaussian sample variance: alpha^2 sqrt(2/(n-1)) = 1% of alpha^2
    assert abs(e.var(ddof=1) - alpha ** 2) < 5 * alpha ** 2 * math.sqrt(2 / (n - 1))
    assert stats.kstest(e / alpha, "norm").pvalue > 1e-4


def test_pool_theta_star_distribution_over_seeds():
    # theta* ~ N(0, I/d): 2000 instances x d = 4 components, scaled by sqrt(d)
    d = 4
    z = np.concatenate([vr.envs.pool(dim=d, n_arms=2, pool_size=3, seed=s).theta_star
                        for s in range(2000)]) * math.sqrt(d)
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1.0) < 5 * math.sqrt(2 / n)  # 5 SE = 8%: catches I instead of I/d
    assert stats.kstest(z, "norm").pvalue > 1e-4


def test_realise_reproducible():
    env = vr.envs.pool(dim=3, n_arms=4, seed=0)
    a, b = env.realise(10, rng=42), env.realise(10, rng=42)
    for f in ("contexts", "means", "rewards"):
        assert np.array_equal(getattr(a, f), getattr(b, f))
    c = env.realise(10, rng=np.random.default_rng(42))
    assert np.array_equal(a.contexts, c.contexts)
    d = env.realise(10, rng=np.random.SeedSequence(42))
    assert np.array_equal(a.contexts, d.contexts)
    e = env.realise(10, rng=43)
    assert not np.array_equal(a.contexts, e.contexts)
    # the instance is fixed by the environment's seed
    assert np.array_equal(vr.envs.pool(dim=3, n_arms=4, seed=0).pool, env.pool)
    assert not np.array_equal(vr.envs.pool(dim=3, n_arms=4, seed=1).pool, env.pool)
    inst = env.new_instance(5)
    assert inst.zeta == env.zeta and inst.dim == env.dim
    assert np.array_equal(inst.pool, vr.envs.pool(dim=3, n_arms=4, seed=5).pool)


# ---------------------------------------------------------------------------------------
# hard instance
# ---------------------------------------------------------------------------------------

def test_hard_instance_arms():
    env = vr.envs.hard_instance(dim=10, n_arms=10, reward="linear", seed=0)
    assert env.arms.shape == (10, 10)
    assert np.allclose(np.linalg.norm(env.arms, axis=1), 1.0, rtol=0, atol=1e-14)
    assert np.array_equal(env.arms[0], env.theta_star)
    assert env.expected_reward(env.arms)[0] == pytest.approx(1.0, abs=1e-14)
    assert env.optimal_mean_reward(env.arms) == pytest.approx(1.0, abs=1e-14)
    real = env.realise(5, rng=0)
    assert np.all(real.contexts == env.arms)  # the same arms every round
    assert np.all(real.means.argmax(axis=1) == 0)


def test_hard_instance_second_arm_is_close():
    # theta*_eps = (theta* + eps)/|.|, eps ~ N(0, 0.01 I), d = 10: cos = 1/sqrt(1 + |eps|^2)
    # to first order, E|eps|^2 = 0.1, so cos ~ 0.95; cos < 0.9 needs |eps|^2 > 0.23, i.e. a
    # chi2_10 above 23 (probability ~1%, 1.8% measured over 1000 seeds). Over 400 seeds we
    # require >= 90% above 0.9 (expected 98%, binomial SE 0.7%: 11 SE of margin) and every
    # one above 0.7 (|eps|^2 > 1: chi2_10 > 100, probability < 1e-15).
    cos = np.array([(lambda e: e.arms[1] @ e.theta_star)(vr.envs.hard_instance(seed=s))
                    for s in range(400)])
    assert np.mean(cos > 0.9) >= 0.9
    assert cos.min() > 0.7
    assert cos.max() < 1.0  # never the best arm itself


def test_hard_instance_logistic_rewards():
    env = vr.envs.hard_instance(dim=5, n_arms=4, reward="logistic", seed=3)
    real = env.realise(20_000, rng=1)
    assert set(np.unique(real.rewards)) <= {0.0, 1.0}
    p = 1.0 / (1.0 + np.exp(-(env.arms @ env.theta_star)))
    assert np.allclose(real.means, p[None, :], rtol=1e-14)
    freq = real.rewards.mean(axis=0)
    se = np.sqrt(p * (1 - p) / real.rewards.shape[0])  # ~0.0035
    assert np.all(np.abs(freq - p) < 5 * se)


def test_hard_instance_linear_noise():
    env = vr.envs.hard_instance(dim=5, n_arms=4, seed=3)
    real = env.realise(20_000, rng=1)
    e = (real.rewards - real.means)[:, 0]
    assert env.noise_scale == 1.0
    assert abs(e.mean()) < 5 / math.sqrt(e.size)
    assert abs(e.var(ddof=1) - 1.0) < 5 * math.sqrt(2 / (e.size - 1))


# ---------------------------------------------------------------------------------------
# bad arguments
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,exc,name", [
    ({"dim": 0}, ValueError, "dim"),
    ({"dim": 2.5}, TypeError, "dim"),
    ({"n_arms": 0}, ValueError, "n_arms"),
    ({"reward": "foo"}, ValueError, "reward"),
    ({"zeta": -0.1}, ValueError, "zeta"),
    ({"zeta": float("nan")}, ValueError, "zeta"),
    ({"reward": "logistic"}, ValueError, "reward"),
    ({"pool_size": 0}, ValueError, "pool_size"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": "abc"}, TypeError, "seed"),
])
def test_pool_bad_arguments(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        vr.envs.pool(**kwargs)


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"dim": 0}, ValueError, "dim"),
    ({"n_arms": 0}, ValueError, "n_arms"),
    ({"n_arms": 1}, ValueError, "n_arms"),
    ({"reward": "foo"}, ValueError, "reward"),
    ({"reward": "quadratic"}, ValueError, "reward"),
])
def test_hard_instance_bad_arguments(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        vr.envs.hard_instance(**kwargs)


def test_realise_bad_arguments():
    env = vr.envs.pool(dim=3, n_arms=4, seed=0)
    with pytest.raises(ValueError, match="n_rounds"):
        env.realise(0)
    with pytest.raises(TypeError, match="rng"):
        env.realise(5, rng="x")


@pytest.mark.parametrize("factory,reward", [(vr.envs.pool, "Logistic"),
                                            (vr.envs.hard_instance, "QUADRATIC")])
def test_unsupported_reward_rejected_case_insensitively(factory, reward):
    with pytest.raises(ValueError, match="reward"):
        factory(reward=reward)
