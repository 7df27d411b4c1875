"""The wheel bandit of Riquelme, Tucker and Snoek (2018) (vits_ref.envs.wheel).

The reward structure is checked against a line-by-line transcription of the paper's
definition (section 4, and the authors' sampler: a loop with the same if/else per context);
the distribution of the contexts by KS tests (p-value threshold 1e-4) and the noise by a
moment test with a 5-standard-error tolerance (false alarm 5.7e-7).
"""

import numpy as np
import pytest
from scipy import stats

import vits_ref as vr
from vits_ref._seeding import env_rng, run_seed
from vits_ref.envs.disjoint import decode


def paper_means(x, delta, mu1=1.2, mu2=1.0, mu3=50.0):
    """The wheel's expected rewards, transcribed from the authors' sampler: every action
    has its ``mean_v`` (1.0 for the four quadrant actions, 1.2 for the last); if
    ``|x| >= delta`` the action of x's quadrant gets ``mu_large``."""
    out = []
    for x1, x2 in x:
        r = [mu2, mu2, mu2, mu2, mu1]
        if np.linalg.norm([x1, x2]) >= delta:
            if x1 > 0:
                r[0 if x2 > 0 else 1] = mu3
            else:
                r[2 if x2 > 0 else 3] = mu3
        out.append(r)
    return np.array(out)


@pytest.mark.parametrize("delta", [0.5, 0.95])
def test_means_follow_the_papers_definition(delta):
    env = vr.envs.wheel(delta=delta)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (4000, 2))
    x = x[np.hypot(x[:, 0], x[:, 1]) <= 1]
    # the boundary cases: the axes, and the circle of radius delta itself (|x| >= delta is
    # the high region, as in the authors' sampler)
    edge = np.array([[0.0, 0.99], [0.99, 0.0], [0.0, -0.99], [-0.99, 0.0], [0.0, 0.0],
                     [delta, 0.0], [0.0, delta], [-delta, 0.0], [0.0, -delta]])
    pts = np.vstack([x, edge])
    np.testing.assert_array_equal(env.wheel_means(pts), paper_means(pts, delta))
    # the optimal arm: the constant arm 4 inside radius delta, the quadrant's arm outside
    best = paper_means(x, delta).argmax(axis=1)
    inside = np.hypot(x[:, 0], x[:, 1]) < delta
    assert (best[inside] == 4).all() and (best[~inside] < 4).all()


def test_realisation_means_are_the_wheel_means_of_its_contexts():
    env = vr.envs.wheel(delta=0.7)
    real = env.realise(500, rng=3)
    assert real.contexts.shape == (500, 5, 15)
    x = decode(real.contexts, 3)
    np.testing.assert_array_equal(x[:, 2], 1.0)  # the intercept
    np.testing.assert_array_equal(real.means, paper_means(x[:, :2], 0.7))
    np.testing.assert_array_equal(env.expected_reward(real.contexts), real.means)
    no_bias = vr.envs.wheel(delta=0.7, intercept=False)
    assert no_bias.dim == 10
    np.testing.assert_array_equal(decode(no_bias.realise(500, rng=3).contexts, 2), x[:, :2])


def test_contexts_are_uniform_in_the_disc():
    # uniform in the unit disc: |x|^2 ~ U(0, 1) and the angle ~ U(-pi, pi), independent.
    # 20 000 points: a KS test detects a CDF error of about 0.03 (at p = 1e-4)
    x = decode(vr.envs.wheel().realise(20_000, rng=5).contexts, 3)[:, :2]
    r2 = (x ** 2).sum(axis=1)
    assert r2.max() <= 1.0
    assert stats.kstest(r2, "uniform").pvalue > 1e-4
    assert stats.kstest(np.arctan2(x[:, 1], x[:, 0]), "uniform",
                        args=(-np.pi, 2 * np.pi)).pvalue > 1e-4


def test_reward_noise_is_gaussian_with_sd_001():
    real = vr.envs.wheel().realise(4000, rng=6)
    eps = (real.rewards - real.means).ravel()  # 20 000 draws of N(0, 0.01^2)
    n = eps.size
    assert abs(eps.mean()) < 5 * 0.01 / np.sqrt(n)
    # the sample variance's standard error is sigma^2 sqrt(2/n)
    assert abs(eps.var() - 1e-4) < 5 * 1e-4 * np.sqrt(2 / n)


def test_same_seed_same_run_and_chunks_equal_the_whole():
    env = vr.envs.wheel()
    a, b = env.realise(40, rng=1), env.realise(40, rng=1)
    np.testing.assert_array_equal(a.contexts, b.contexts)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert not np.array_equal(a.rewards, env.realise(40, rng=2).rewards)
    assert env.chunk_safe
    chunks = list(env.realise_chunks(40, np.random.default_rng(1), 6))
    np.testing.assert_array_equal(np.concatenate([c.rewards for c in chunks]), a.rewards)


def test_regret_of_the_constant_arm_is_exact():
    env = vr.envs.wheel(delta=0.8)

    class Constant:
        name, dim = "constant arm", None

        def select(self, contexts):
            return 4

        def update(self, contexts, arm, reward):
            return self

        def fresh(self, seed=None):
            return self

    res = vr.simulate(Constant(), env, n_rounds=80, n_runs=2, seed=9)
    for r in range(2):
        real = env.realise(80, env_rng(run_seed(np.random.SeedSequence(9), r)))
        x = decode(real.contexts, 3)
        far = np.hypot(x[:, 0], x[:, 1]) >= 0.8
        # the constant arm loses mu_large - mu_constant where the quadrant's arm pays 50
        np.testing.assert_array_equal(res.regret[r], np.where(far, 50.0 - 1.2, 0.0))


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"delta": 1.0}, ValueError, "delta"),
    ({"delta": 0.0}, ValueError, "delta"),
    ({"mu_constant": 0.5}, ValueError, "mu_small < mu_constant"),
    ({"noise_sd": -1.0}, ValueError, "noise_sd"),
    ({"intercept": "no"}, TypeError, "intercept"),
])
def test_bad_arguments_name_themselves(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        vr.envs.wheel(**kwargs)
