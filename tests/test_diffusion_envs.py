"""The diffusion paper's environments: prior shapes, PriorBandit, MovieLens and digits."""

import sys

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.data import digits as digits_mod
from vits_ref.envs import PRIOR_SHAPES, PriorBandit, prior_bandit

N = 20_000


def within(value, expected, se, k=5.0):
    """``|value - expected| <= k se`` elementwise (k = 5: a false failure has probability
    below 6e-7 per entry for a Gaussian estimate)."""
    return np.all(np.abs(np.asarray(value) - expected) <= k * np.asarray(se))


def test_six_shapes_with_descriptions():
    assert list(PRIOR_SHAPES) == ["mixture", "ring", "cross", "banana", "spiral",
                                  "checkerboard"]
    for name, shape in PRIOR_SHAPES.items():
        s = shape.sample(N, rng=0)
        assert s.shape == (N, 2) and np.all(np.isfinite(s)), name
        np.testing.assert_array_equal(s, shape.sample(N, rng=0))
        assert not np.array_equal(s, shape.sample(N, rng=1))
        norms = np.linalg.norm(s, axis=1)
        assert 0.3 < norms.mean() < 2.0 and norms.max() < 5.0, name  # |theta| is O(1)
        assert len(shape.description) > 40 and shape.name == name


def test_mixture_shape_is_its_mixture():
    weights, means, covs = PRIOR_SHAPES["mixture"].mixture
    s = PRIOR_SHAPES["mixture"].sample(N, rng=2)
    mean = weights @ means
    cov = sum(w * (S + np.outer(m - mean, m - mean))
              for w, m, S in zip(weights, means, covs, strict=True))
    assert within(s.mean(axis=0), mean, np.sqrt(np.diag(cov) / N))
    # sample variance: standard error about var sqrt(2/N) (an upper bound for these tails)
    assert within(np.var(s, axis=0), np.diag(cov), 2 * np.diag(cov) * np.sqrt(2 / N))
    # the component of each draw is the side of the line theta_1 + theta_2 = 0 (the modes
    # are 0.8 sqrt(2) / sqrt(0.05) = 5 standard deviations from it)
    frac = np.mean(s.sum(axis=1) > 0)
    assert within(frac, 0.5, np.sqrt(0.25 / N))


def test_ring_cross_banana_spiral_checkerboard_geometry():
    rng = 3
    ring = PRIOR_SHAPES["ring"].sample(N, rng=rng)
    r = np.linalg.norm(ring, axis=1)
    assert within(r.mean(), 1.0, 0.1 / np.sqrt(N))
    assert within(r.std(), 0.1, 0.1 * np.sqrt(2 / N) * 2)
    assert within(ring.mean(axis=0), 0.0, np.sqrt(0.5 / N))  # uniform angle

    cross = PRIOR_SHAPES["cross"].sample(N, rng=rng)
    # one coordinate is N(0, 0.1^2): min |theta_i| < 0.5 = 5 thicknesses for all draws
    assert np.abs(cross).min(axis=1).max() < 0.5
    # var of each coordinate: 1/2 (1) + 1/2 (0.01); along-bar draws are bounded by sqrt 3
    assert within(np.var(cross, axis=0), 0.505, 1.5 * np.sqrt(2 / N))
    assert np.abs(cross).max() <= np.sqrt(3.0) + 0.5

    banana = PRIOR_SHAPES["banana"].sample(N, rng=rng)
    resid = banana[:, 1] - 0.6 * (banana[:, 0] ** 2 - 1.0)
    assert within(resid.std(), 0.15, 0.15 * np.sqrt(2 / N) * 2)
    assert within(banana.mean(axis=0), 0.0, np.sqrt(np.var(banana, axis=0) / N))

    spiral = PRIOR_SHAPES["spiral"].sample(N, rng=rng)
    # radius 0.25 + 1.25 t with t ~ U(0, 1), plus noise of 0.05 per coordinate:
    # E r = 0.875 up to the noise's O(0.05^2 / r) bias (< 0.01)
    assert abs(np.linalg.norm(spiral, axis=1).mean() - 0.875) < 0.01 + 5 * 0.36 / np.sqrt(N)

    board = PRIOR_SHAPES["checkerboard"].sample(N, rng=rng)
    assert np.all(np.abs(board) <= 1.5)
    cells = np.floor((board + 1.5) / 0.75).astype(int)
    assert np.all(cells.sum(axis=1) % 2 == 0)
    counts = np.bincount(cells[:, 0] * 4 + cells[:, 1], minlength=16)
    black = counts[[i * 4 + j for i in range(4) for j in range(4) if (i + j) % 2 == 0]]
    assert within(black / N, 1 / 8, np.sqrt(1 / 8 * 7 / 8 / N))


def test_ball_arms_are_uniform_and_redrawn():
    env = prior_bandit("cross", n_arms=100, sigma=2.0, seed=0)
    run = env.realise(200, rng=1)
    X = run.contexts
    assert X.shape == (200, 100, 2)
    norms = np.linalg.norm(X, axis=2)
    assert norms.max() <= 1.0
    # uniform in the disc: P(|x| <= 1/2) = 1/4
    assert within(np.mean(norms <= 0.5), 0.25, np.sqrt(0.25 * 0.75 / norms.size))
    assert within(X.reshape(-1, 2).mean(axis=0), 0.0, np.sqrt(0.25 / norms.size))
    assert not np.array_equal(X[0], X[1])  # new arms every round
    np.testing.assert_allclose(run.means, X @ env.theta_star, rtol=0, atol=1e-15)
    noise = run.rewards - run.means
    np.testing.assert_allclose(noise, noise[:, :1] * np.ones((1, 100)))  # one draw a round
    assert within(noise[:, 0].std(), 2.0, 2.0 * np.sqrt(2 / 200) * 1.2)
    fixed = prior_bandit("cross", n_arms=10, fixed_arms=True, seed=0).realise(5, rng=1)
    np.testing.assert_array_equal(fixed.contexts[0], fixed.contexts[4])


def test_each_instance_draws_theta_from_the_prior():
    env = prior_bandit("mixture", seed=0)
    thetas = np.array([env.new_instance(s).theta_star for s in range(2000)])
    weights, means, covs = PRIOR_SHAPES["mixture"].mixture
    cov = 0.05 + 0.64
    assert within(thetas.mean(axis=0), 0.0, np.sqrt(cov / 2000))
    assert within(np.mean(thetas.sum(axis=1) > 0), 0.5, np.sqrt(0.25 / 2000))
    np.testing.assert_array_equal(env.theta_star, prior_bandit("mixture", seed=0).theta_star)
    # simulate with new_instance_per_run (the Python loop: the fused one compiles for
    # half a minute cold and is tested in test_simulate.py)
    res = vr.simulate("lints", env, n_rounds=30, n_runs=3, seed=0, new_instance_per_run=True,
                      fused=False)
    assert np.all(res.regret >= -1e-12)
    assert res.environment.startswith("PriorBandit(prior='mixture'")


def test_logistic_rewards():
    env = prior_bandit("ring", n_arms=5, reward="logistic", seed=1)
    run = env.realise(2000, rng=0)
    np.testing.assert_allclose(run.means, 1 / (1 + np.exp(-run.contexts @ env.theta_star)))
    assert set(np.unique(run.rewards)) <= {0.0, 1.0}
    # Bernoulli: the mean of reward - probability is 0 within 5 s.e. (variance <= 1/4)
    assert within(np.mean(run.rewards - run.means), 0.0, np.sqrt(0.25 / run.means.size))


def test_pool_arms_and_empirical_prior():
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(30, 3))
    samples = rng.normal(size=(50, 3))
    samples_copy = samples.copy()
    env = PriorBandit(samples, n_arms=10, sigma=0.5, arms=pool, seed=4)
    assert samples.flags.writeable  # the caller's arrays are not frozen
    assert any(np.array_equal(env.theta_star, row) for row in samples)
    run = env.realise(600, rng=2)
    idx = np.array([[np.flatnonzero((pool == x).all(axis=1))[0] for x in c]
                    for c in run.contexts])
    assert all(len(set(r)) == 10 for r in idx)  # K distinct pool rows per round
    counts = np.bincount(idx.ravel(), minlength=30)
    # each row is in a round's draw with probability 10/30
    assert within(counts / 600, 1 / 3, np.sqrt(1 / 3 * 2 / 3 / 600))
    np.testing.assert_array_equal(samples, samples_copy)
    draws = env.prior_samples(5000, rng=0)
    assert all(any(np.array_equal(d, row) for row in samples) for d in draws[:50])
    assert "array (50, 3)" in repr(env)


def test_movielens_helper():
    small = {"n_users": 60, "n_movies": 40, "n_ratings": 600}
    env = vr.envs.movielens_prior_bandit(synthetic_kwargs=small, seed=0)
    users, movies, _ = vr.data.factorization(synthetic_kwargs=small)
    assert env.n_arms == 10 and env.dim == 5 and env.noise_scale == 0.75
    np.testing.assert_array_equal(env.prior_pool, movies)
    np.testing.assert_array_equal(env.pool, users)
    assert any(np.array_equal(env.theta_star, m) for m in movies)
    swapped = vr.envs.movielens_prior_bandit(synthetic_kwargs=small, theta="users",
                                             reward="logistic", seed=0)
    np.testing.assert_array_equal(swapped.prior_pool, users)
    assert swapped.reward == "logistic"


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"prior": "square"}, ValueError, "prior must be one of"),
    ({"prior": "ring", "dim": 3}, ValueError, "dim"),
    ({"prior": np.zeros((0, 2))}, ValueError, "m, d >= 1"),
    ({"prior": "ring", "reward": "quadratic"}, ValueError, "linear' or 'logistic"),
    ({"prior": "ring", "arms": "sphere"}, ValueError, "arms"),
    ({"prior": "ring", "arms": np.zeros((5, 2))}, ValueError, "pool has 5 rows"),
    ({"prior": "ring", "arms": np.zeros((500, 3))}, ValueError, "arms must have shape"),
    ({"prior": "ring", "arms": np.zeros((500, 2)), "fixed_arms": True}, ValueError, "ball"),
    ({"prior": "ring", "sigma": 0.0}, ValueError, "sigma"),
    ({"prior": "ring", "fixed_arms": 1}, TypeError, "fixed_arms"),
])
def test_validation(kwargs, exc, text):
    with pytest.raises(exc, match=text):
        PriorBandit(**kwargs)


def test_sampler_objects():
    class Box:
        def sample(self, n, rng):
            return rng.uniform(-1, 1, size=(n, 4))

    with pytest.raises(ValueError, match="dim is needed"):
        PriorBandit(Box())
    env = PriorBandit(Box(), dim=4, n_arms=3)
    assert env.theta_star.shape == (4,) and env.realise(2, rng=0).contexts.shape == (2, 3, 4)


def test_digits_need_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    monkeypatch.setattr(digits_mod, "_CACHE", {})
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        digits_mod.digit_embeddings(n_thetas=5)


def test_digits_protocol():
    pytest.importorskip("sklearn")
    emb, thetas, info = digits_mod.digit_embeddings(n_thetas=500, max_iter=200,
                                                    return_info=True)
    assert emb.shape == (1797, 8) and thetas.shape == (500, 8)
    assert np.linalg.norm(emb, axis=1).max() == pytest.approx(1.0)
    assert info["test_accuracy"] > 0.9  # the classifier learnt the digits
    assert not emb.flags.writeable and not thetas.flags.writeable
    # each theta separates its positive label: the mean score x^T theta of the positive
    # label's digits exceeds that of the other digits, for nearly every theta (a fit to
    # 10 + 10 points that fails to rank its own label first on average is rare)
    scores = emb @ thetas.T  # (1797, 500)
    labels, positive = info["labels"], info["positive"]
    pos = np.array([scores[labels == c, i].mean() for i, c in enumerate(positive)])
    neg = np.array([scores[labels != c, i].mean() for i, c in enumerate(positive)])
    assert np.mean(pos > neg) > 0.95
    # +1 is fitted on the positives; -1 on 10 negatives of 9 labels generalises less
    assert np.mean(pos) > 0.5 and np.mean(neg) < 0.0
    again = digits_mod.digit_embeddings(n_thetas=500, max_iter=200)
    assert again[0] is emb and again[1] is thetas  # cached
    env = vr.envs.digits_prior_bandit(n_thetas=500, max_iter=200, seed=0)
    assert env.n_arms == 10 and env.dim == 8 and env.noise_scale == 1.0
    assert env.pool.shape == (1797, 8) and env.prior_pool.shape == (500, 8)
    with pytest.raises(ValueError, match="even"):
        digits_mod.digit_embeddings(subset_size=5)
