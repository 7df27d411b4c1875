"""Classification data sets as bandits (vits_ref.envs.classification) and the disjoint
encoding (vits_ref.envs.disjoint).

Exactness checks are equalities on planted data; the one statistical check (rewards of a
row whose samples disagree) is a binomial moment test with a 5-standard-error tolerance
(false alarm 5.7e-7).
"""

import sys

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import env_rng, run_seed
from vits_ref.envs.disjoint import decode, encode

#: Planted data: 5 distinct samples, 3 classes with labels that are not 0..K-1.
X_PLANTED = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, -1.0], [-1.0, 3.0]])
Y_PLANTED = np.array([7, 3, 7, 5, 3])


def _planted(**kw):
    return vr.envs.ClassificationBandit(X_PLANTED, Y_PLANTED, **kw)


def _sample_of(env, contexts):
    """The index of the (unique) sample whose features each round shows."""
    x = decode(contexts, env.n_features)
    match = (x[:, None, :] == env.X[None, :, :]).all(axis=2)
    assert (match.sum(axis=1) == 1).all()
    return match.argmax(axis=1)


def test_disjoint_encoding_places_the_context_in_each_arms_block():
    x = np.arange(6.0).reshape(2, 3)
    c = encode(x, 4)
    assert c.shape == (2, 4, 12)
    for a in range(4):
        np.testing.assert_array_equal(c[:, a, 3 * a:3 * a + 3], x)
        others = np.delete(c[:, a], np.s_[3 * a:3 * a + 3], axis=1)
        assert not others.any()
    np.testing.assert_array_equal(decode(c, 3), x)


def test_planted_instance_arms_features_and_means():
    env = _planted(standardize=False)
    assert env.n_arms == 3 and list(env.classes) == [3, 5, 7]
    assert env.n_features == 3 and env.dim == 9  # 2 features + intercept, 3 blocks
    np.testing.assert_array_equal(env.X[:, :2], X_PLANTED)
    np.testing.assert_array_equal(env.X[:, 2], 1.0)
    real = env.realise(200, rng=4)
    idx = _sample_of(env, real.contexts)
    # the expected reward is the indicator of the sample's class; rewards equal it
    np.testing.assert_array_equal(real.means, np.eye(3)[env.y[idx]])
    np.testing.assert_array_equal(real.rewards, real.means)
    assert set(idx) == set(range(5))  # every sample is drawn (200 uniform draws of 5)


def test_regret_of_a_run_counts_the_wrong_classes_exactly():
    env = _planted(standardize=False)

    class Fixed:
        name, dim = "fixed arm 1", None

        def select(self, contexts):
            return 1

        def update(self, contexts, arm, reward):
            return self

        def fresh(self, seed=None):
            return self

    res = vr.simulate(Fixed(), env, n_rounds=60, n_runs=3, seed=11)
    root = np.random.SeedSequence(11)
    for r in range(3):
        # the runner's realisation of run r (child 0 of the run's seed draws the environment)
        real = env.realise(60, env_rng(run_seed(root, r)))
        wrong = (env.y[_sample_of(env, real.contexts)] != 1).astype(float)
        np.testing.assert_array_equal(res.regret[r], wrong)


def test_same_seed_same_runs_and_chunks_equal_the_whole():
    env = _planted()
    a, b = env.realise(50, rng=2), env.realise(50, rng=2)
    np.testing.assert_array_equal(a.contexts, b.contexts)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert not np.array_equal(a.contexts, env.realise(50, rng=3).contexts)
    assert env.chunk_safe
    chunks = list(env.realise_chunks(50, np.random.default_rng(2), 7))
    np.testing.assert_array_equal(np.concatenate([c.contexts for c in chunks]), a.contexts)
    np.testing.assert_array_equal(np.concatenate([c.means for c in chunks]), a.means)
    # the instance is the data: a new instance is the same bandit
    other = env.new_instance(5)
    np.testing.assert_array_equal(other.X, env.X)
    assert repr(other) == repr(env)


def test_standardised_features_have_unit_mean_squared_norm():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6)) * [1.0, 2.0, 5.0, 0.1, 3.0, 1.0] + 7.0
    X[:, 5] = 4.0  # a constant feature keeps scale 1 (its centred values are 0)
    env = vr.envs.ClassificationBandit(X, rng.integers(2, size=40), intercept=False)
    Z = env.X
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-14)
    # each non-constant feature has variance 1/p, so the mean squared norm is (p - 1)/p
    np.testing.assert_allclose(Z[:, :5].var(axis=0), 1.0 / 6.0, rtol=1e-12)
    np.testing.assert_allclose((Z ** 2).sum(axis=1).mean(), 5.0 / 6.0, rtol=1e-12)


def test_principal_components_match_scikit_learn_up_to_sign():
    decomposition = pytest.importorskip("sklearn.decomposition")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 5)) @ rng.standard_normal((5, 5))
    env = vr.envs.ClassificationBandit(X, rng.integers(3, size=60), n_components=3,
                                       intercept=False)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    ref = decomposition.PCA(n_components=3, svd_solver="full").fit_transform(Z)
    # our scores are divided by sqrt(p) with p = 3 components; signs are conventions
    np.testing.assert_allclose(np.abs(env.X * np.sqrt(3.0)), np.abs(ref), atol=1e-10)


def test_rows_whose_samples_disagree_pay_their_class_frequencies():
    # two samples share the features 0 (classes 0, 0, 1): P(class 0 | x = 0) = 2/3
    X = np.array([[0.0], [0.0], [0.0], [1.0]])
    env = vr.envs.ClassificationBandit(X, [0, 0, 1, 1], standardize=False, intercept=False)
    real = env.realise(6000, rng=0)
    at0 = decode(real.contexts, 1)[:, 0] == 0.0
    np.testing.assert_allclose(real.means[at0], np.tile([2 / 3, 1 / 3], (at0.sum(), 1)))
    np.testing.assert_array_equal(real.means[~at0], np.tile([0.0, 1.0], ((~at0).sum(), 1)))
    np.testing.assert_array_equal(real.rewards.sum(axis=1), 1.0)  # one class per round
    n = at0.sum()  # about 4500 rounds: the frequency's standard error is about 0.007
    freq = real.rewards[at0, 0].mean()
    assert abs(freq - 2 / 3) < 5 * np.sqrt(2 / 9 / n)
    np.testing.assert_array_equal(real.rewards[~at0, 1], 1.0)


def test_expected_reward_rejects_contexts_that_are_not_samples():
    env = _planted()
    with pytest.raises(ValueError, match="samples"):
        env.expected_reward(encode(np.array([[9.0, 9.0, 1.0]]), 3))


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"labels": [1, 1, 1, 1, 1]}, ValueError, "two classes"),
    ({"labels": [0, 1, 0]}, ValueError, "labels must have shape"),
    ({"features": [[0.0, np.nan]] * 5}, ValueError, "features"),
    ({"n_components": 3}, ValueError, "n_components"),
    ({"standardize": "yes"}, TypeError, "standardize"),
    ({"intercept": 1}, TypeError, "intercept"),
])
def test_bad_arguments_name_themselves(kwargs, exc, match):
    args = {"features": X_PLANTED, "labels": Y_PLANTED, **kwargs}
    with pytest.raises(exc, match=match):
        vr.envs.ClassificationBandit(**args)


@pytest.mark.parametrize("name, n, p, K", [("wine", 178, 13, 3),
                                           ("breast_cancer", 569, 30, 2),
                                           ("digits", 1797, 64, 10)])
def test_scikit_learn_data_sets(name, n, p, K):
    datasets = pytest.importorskip("sklearn.datasets")
    env = vr.envs.sklearn_bandit(name)
    assert (env.n_samples, env.n_features, env.n_arms, env.dim) == (n, p + 1, K, K * (p + 1))
    _, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    np.testing.assert_array_equal(env.classes[env.y], y)
    real = env.realise(300, rng=1)
    np.testing.assert_array_equal(real.means, np.eye(K)[env.y[_sample_of(env, real.contexts)]])


def test_missing_scikit_learn_names_the_data_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now fails
    with pytest.raises(ImportError, match=r"pip install 'vits_ref\[data\]'"):
        vr.envs.sklearn_bandit("wine")
    with pytest.raises(ValueError, match="name"):
        vr.envs.sklearn_bandit("iris")
