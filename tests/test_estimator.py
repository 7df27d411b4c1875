"""The scikit-learn-style front door, vits_ref.Bandit (vits_ref/bandit/estimator.py).

It is a thin layer: every test drives the same policy directly (make_policy, update,
select) and asks for the same numbers, bit for bit; the expectations are checked against
the closed-form linear posterior (vits_ref.gaussian, itself tested against explicit
inverses in tests/test_gaussian.py).
"""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.gaussian import linear_posterior

D, K = 3, 4
THETA = np.array([1.0, -1.0, 0.5])


def logged(n, seed=0):
    """``n`` logged rounds: contexts (n, K, D), uniformly random arms, linear rewards."""
    rng = np.random.default_rng(seed)
    contexts = rng.standard_normal((n, K, D))
    arms = rng.integers(0, K, size=n)
    rewards = contexts[np.arange(n), arms] @ THETA + 0.1 * rng.standard_normal(n)
    return contexts, arms, rewards


@pytest.mark.parametrize("name", ["lints", "linucb", "vits-ii", "lmc", "random"])
def test_fit_and_predict_are_the_policys_update_and_select(name):
    contexts, arms, rewards = logged(30)
    new = logged(8, seed=1)[0]
    bandit = vr.Bandit(name, n_arms=K, dim=D, seed=5).fit(contexts, arms, rewards)
    pol = vr.make_policy(name, D, seed=5)
    for x, a, r in zip(contexts, arms, rewards, strict=True):
        pol.update(x, a, r)
    assert np.array_equal(bandit.predict(new), [pol.select(x) for x in new])
    assert bandit.predict(new[0]) == pol.select(new[0])  # one (K, d) round: an int


@pytest.mark.parametrize("name", ["lints", "random"])
def test_one_round_fed_back_as_predict_takes_it_is_its_row(name):
    """``partial_fit(x, arm, reward)`` of one ``(K, d)`` round learns what the row of
    arrays ``(x[None], [arm], [reward])`` learns: the compiled door (LinTS) and the
    policy's own path (the random policy) alike, with NumPy and Python scalars."""
    contexts, _, _ = logged(12)
    rewards = np.random.default_rng(2).standard_normal((12, K))
    one, rows = (vr.Bandit(name, n_arms=K, dim=D, seed=7) for _ in range(2))
    for t, x in enumerate(contexts):
        a = one.predict(x)
        assert rows.predict(x) == a
        arm, reward = (np.int64(a), rewards[t, a]) if t % 2 else (a, float(rewards[t, a]))
        one.partial_fit(x, arm, reward)
        rows.partial_fit(x[None], np.array([a]), rewards[t, a:a + 1])
    if name == "lints":
        eng, want = one.policy.engine, rows.policy.engine
        assert eng.n_obs == want.n_obs == 12 and eng.model.sum_r2 == want.model.sum_r2
        np.testing.assert_array_equal(eng.mean, want.mean)
        np.testing.assert_array_equal(eng.cov, want.cov)
    np.testing.assert_array_equal(one.predict(contexts), rows.predict(contexts))


@pytest.mark.parametrize("arm, reward, exc, match", [
    (True, 1.0, TypeError, "arm must be an integer"),
    (1.0, 1.0, TypeError, "arm must be an integer"),
    (K, 1.0, ValueError, r"arm must be in \[0, 4\)"),
    (np.array([1]), 1.0, TypeError, "arm must be an integer"),
    (1, np.array([1.0]), TypeError, "reward must be a real number"),
    (1, "1", TypeError, "reward must be a real number"),
    (1, np.nan, ValueError, "reward"),
    (1, 1e300, ValueError, "reward"),
    (1, None, TypeError, "reward must be a real number"),
])
def test_one_round_errors_name_the_arm_or_the_reward(arm, reward, exc, match):
    contexts, _, _ = logged(2)
    bandit = vr.Bandit("lints", n_arms=K, dim=D, seed=0)
    bandit.partial_fit(contexts[0], 0, 0.5)  # the compiled door attached
    before = bandit.predict_expectations(contexts[1])
    with pytest.raises(exc, match=match):
        bandit.partial_fit(contexts[1], arm, reward)
    assert bandit.policy.engine.n_obs == 1
    np.testing.assert_array_equal(bandit.predict_expectations(contexts[1]), before)


def test_partial_fit_continues_and_fit_restarts():
    contexts, arms, rewards = logged(30)
    new = logged(8, seed=1)[0]
    whole = vr.Bandit("vits-ii", dim=D, seed=3).fit(contexts, arms, rewards)
    pieces = vr.Bandit("vits-ii", dim=D, seed=3)
    pieces.partial_fit(contexts[:10], arms[:10], rewards[:10])
    pieces.partial_fit(contexts[10:], arms[10:], rewards[10:])
    # fit twice: the second starts from the prior again (policy.fresh(seed))
    twice = vr.Bandit("vits-ii", dim=D, seed=3).fit(contexts[:5], arms[:5], rewards[:5])
    twice.fit(contexts, arms, rewards)
    expected = whole.predict_expectations(new)
    for other in (pieces, twice):
        assert np.array_equal(other.predict_expectations(new), expected)
        assert np.array_equal(other.predict(new), whole.predict(new))


@pytest.mark.parametrize("name", ["lints", "linucb"])
def test_expectations_are_the_posterior_mean(name):
    contexts, arms, rewards = logged(40)
    bandit = vr.Bandit(name, dim=D, seed=0, lam=2.0).fit(contexts, arms, rewards)
    X = contexts[np.arange(40), arms]
    mean, _ = linear_posterior(X, rewards, eta=1.0, lam=2.0)
    new = logged(5, seed=2)[0]
    got = bandit.predict_expectations(new)
    assert got.shape == (5, K)
    # two factorisations of one 3 x 3 system with cond < 10: rounding well below 1e-12
    np.testing.assert_allclose(got, new @ mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bandit.predict_expectations(new[0]), new[0] @ mean,
                               rtol=1e-10, atol=1e-12)


def test_expectations_per_arm_and_vts():
    contexts, arms, rewards = logged(40)
    per_arm = vr.Bandit(vr.PerArm(vr.LinTS(D), n_arms=K, seed=0)).fit(contexts, arms, rewards)
    new = logged(3, seed=2)[0]
    got = per_arm.predict_expectations(new)
    for a in range(K):  # each arm's own posterior, from its own rounds
        rows = arms == a
        mean, _ = linear_posterior(contexts[rows, a], rewards[rows], eta=1.0, lam=1.0)
        np.testing.assert_allclose(got[:, a], new[:, a] @ mean, rtol=1e-10, atol=1e-12)
    vts = vr.Bandit(vr.VTS(D, n_arms=K, seed=0)).fit(contexts, arms, rewards)
    direct = vr.VTS(D, n_arms=K, seed=0)
    for x, a, r in zip(contexts, arms, rewards, strict=True):
        direct.update(x, a, r)
    assert np.array_equal(vts.predict_expectations(new),
                          [direct.expected_rewards(x) for x in new])


def test_no_posterior_mean_is_a_type_error():
    bandit = vr.Bandit("lmc", dim=D, seed=0)
    with pytest.raises(TypeError, match="posterior mean.*predict"):
        bandit.predict_expectations(np.ones((K, D)))


def test_an_engine_or_a_policy_object_is_played_as_it_is():
    eng = vr.LinTS(D, seed=4).update(np.eye(D), np.ones(D))
    bandit = vr.Bandit(eng)
    assert bandit.dim == D and bandit.policy.engine is eng
    assert vr.Bandit(vr.VTS(D, n_arms=K)).n_arms == K


def test_save_and_load(tmp_path):
    contexts, arms, rewards = logged(20)
    bandit = vr.Bandit("vits-ii", n_arms=K, dim=D, seed=1).fit(contexts, arms, rewards)
    copy = vr.load(bandit.save(tmp_path / "bandit.npz"))
    assert isinstance(copy, vr.Bandit) and (copy.n_arms, copy.dim, copy.seed) == (K, D, 1)
    new = logged(6, seed=3)
    assert np.array_equal(copy.predict(new[0]), bandit.predict(new[0]))
    copy.partial_fit(*new)
    bandit.partial_fit(*new)
    assert np.array_equal(copy.predict_expectations(new[0]),
                          bandit.predict_expectations(new[0]))


@pytest.mark.parametrize("call, exc, match", [
    # (K, d): read as the played arms' features, one row a round, refused by the arms
    (lambda b, c, a, r: b.fit(c[0], a, r), ValueError, r"arms must have shape \(4,\)"),
    (lambda b, c, a, r: b.fit(c[0, 0], a, r), ValueError, r"\(n, K, d\)"),
    (lambda b, c, a, r: b.fit(c[..., :2], a, r), ValueError, "d = 3"),
    (lambda b, c, a, r: b.fit(c[:, :2], a, r), ValueError, "K = 4"),
    (lambda b, c, a, r: b.fit(c, a[:-1], r), ValueError, r"arms must have shape \(10,\)"),
    (lambda b, c, a, r: b.fit(c, a.astype(float), r), TypeError, "integers"),
    (lambda b, c, a, r: b.fit(c, a + K, r), ValueError, r"arms must be in \[0, 4\)"),
    (lambda b, c, a, r: b.fit(c, a, r[:-1]), ValueError, r"rewards must have shape \(10,\)"),
    (lambda b, c, a, r: b.fit(c, a, r * np.nan), ValueError, "rewards"),
    (lambda b, c, a, r: b.predict(c[:, :, :, None]), ValueError, "contexts must have shape"),
    (lambda b, c, a, r: b.predict_expectations(c[0, :, :2]), ValueError, "d = 3"),
])
def test_shape_errors(call, exc, match):
    contexts, arms, rewards = logged(10)
    bandit = vr.Bandit("lints", n_arms=K, dim=D, seed=0)
    before = bandit.predict_expectations(contexts[0])
    with pytest.raises(exc, match=match):
        call(bandit, contexts, arms, rewards)
    # checked before the first update: nothing learnt
    assert np.array_equal(bandit.predict_expectations(contexts[0]), before)


def test_construction_errors():
    with pytest.raises(TypeError, match="dim"):
        vr.Bandit("lints")
    with pytest.raises(ValueError, match="policy must be one of"):
        vr.Bandit("nope", dim=D)
    with pytest.raises(TypeError, match="options"):
        vr.Bandit(vr.LinUCB(D), eta=2.0)
    with pytest.raises(ValueError, match="dim"):
        vr.Bandit(vr.LinUCB(D), dim=D + 1)
    with pytest.raises(ValueError, match="n_arms"):
        vr.Bandit(vr.VTS(D, n_arms=K), n_arms=K + 1)
    with pytest.raises(TypeError, match="policy must be"):
        vr.Bandit(object())


@pytest.mark.parametrize("name", ["lints", "linucb", "vits-ii"])
def test_a_batch_of_logged_rounds_is_the_rounds_one_by_one(name):
    """``update_many`` (and so ``Bandit.fit``) ends where the rounds' ``update`` calls
    end: bit for bit for an iterative engine (the same calls), to rounding for LinTS and
    LinUCB, whose batch adds ``b += X^T r`` in one product (200 rows of d = 3: relative
    differences of a few 1e-16 times the sums' condition; 1e-12 leaves a margin of 100)."""
    contexts, arms, rewards = logged(200)
    one = vr.make_policy(name, D, seed=4)
    for x, a, r in zip(contexts, arms, rewards, strict=True):
        one.update(x, a, r)
    many = vr.make_policy(name, D, seed=4).update_many(contexts, arms, rewards)
    if name == "linucb":
        got, want = (many.Vinv, many.b), (one.Vinv, one.b)
        assert many.n_obs == one.n_obs == 200
    else:
        got, want = (many.engine.mean, many.engine.cov), (one.engine.mean, one.engine.cov)
        assert many.engine.n_obs == one.engine.n_obs == 200
    for g, w in zip(got, want, strict=True):
        if name == "vits-ii":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_a_diverging_batch_leaves_the_policy_as_it_was():
    """LMC-TS with a step far too large diverges within the batch: the policy is as it
    was before the call (its chain and observations), as for one update."""
    contexts, arms, rewards = logged(50)
    pol = vr.make_policy("lmc", D, seed=0, step_size=5.0, schedule="constant")
    pol.update_many(contexts[:1], arms[:1], rewards[:1])
    before = pol.engine.theta.copy()  # the chain's state
    with pytest.raises(vr.DivergenceError):
        pol.update_many(100.0 * contexts, arms, rewards)
    assert pol.engine.n_obs == 1
    np.testing.assert_array_equal(pol.engine.theta, before)
