"""Every door to a policy plays one compiled state (:mod:`vits_ref.bandit._core`).

The policy objects (``ThompsonSampling`` over LinTS, VITS, LMC-TS; ``LinUCB``), ``Bandit``
and ``Online`` run the fused loop's bodies: fed the rounds of a run's realisation, each
plays the arms of :func:`vits_ref.simulate`'s compiled run with the same seed, bit for
bit; the engine object holds the state after every call (its arrays are the state's
views); and the engines' own NumPy methods (the simulations' Python loop, ``compiled``
False) agree with it to rounding, an independent check of the bodies.
"""

import copy

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import policy_seed, run_seed
from vits_ref.bandit._fused_draws import realise

D, K, T = 4, 6, 40
#: the policies whose state a compiled core holds (make_policy's names)
CORE = ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "lmc")


def _env():
    return vr.envs.pool(dim=D, n_arms=K, zeta=1.0, seed=3)


def _play(pol, real, n):
    arms = []
    for t in range(n):
        X = real.contexts[t]
        a = pol.select(X)
        pol.update(X, a, real.rewards[t, a])
        arms.append(a)
    return np.array(arms)


@pytest.fixture(scope="module")
def runs():
    """``{name: (simulate's result, its realisations)}``: two runs of the fused loop."""
    out = {}
    env = _env()
    root = np.random.SeedSequence(11)
    for name in CORE:
        res = vr.simulate(vr.make_policy(name, D), env, T, 2, seed=11)
        assert res.fused
        out[name] = res, [(run_seed(root, r), realise(env, run_seed(root, r), T))
                          for r in range(2)]
    return out


@pytest.mark.parametrize("name", CORE)
def test_the_policy_object_plays_the_compiled_runs_arms(name, runs):
    res, reals = runs[name]
    for r, (rs, real) in enumerate(reals):
        pol = vr.make_policy(name, D).fresh(policy_seed(rs))
        np.testing.assert_array_equal(_play(pol, real, T), res.arms[r])
        assert pol._core is not None  # played by the compiled state, not the engine's path
        assert (pol.engine if hasattr(pol, "engine") else pol).n_obs == T
    assert len(np.unique(res.arms)) > 1  # the arms vary: not a trivial comparison


@pytest.mark.parametrize("name", CORE)
def test_bandit_plays_the_compiled_runs_arms(name, runs):
    """``predict`` of one round then ``partial_fit`` of it: the same arms, whether the
    round is fed back as ``predict`` takes it (``(K, d)``, the arm, the reward) or as
    rows of arrays (``(1, K, d)``, ``(1,)``, ``(1,)``)."""
    res, reals = runs[name]
    rs, real = reals[0]
    bandits = [vr.Bandit(vr.make_policy(name, D).fresh(policy_seed(rs)), n_arms=K)
               for _ in range(2)]
    arms = [[], []]
    for t in range(T):
        X = real.contexts[t]
        a = bandits[0].predict(X)
        bandits[0].partial_fit(X, a, real.rewards[t, a])
        arms[0].append(a)
        a = bandits[1].predict(X)
        bandits[1].partial_fit(X[None], np.array([a]), real.rewards[t, a:a + 1])
        arms[1].append(a)
    np.testing.assert_array_equal(arms[0], res.arms[0])
    np.testing.assert_array_equal(arms[1], res.arms[0])


@pytest.mark.parametrize("name", CORE)
def test_the_engines_own_path_agrees_to_rounding(name, runs):
    """The engines' NumPy methods (``compiled = False``, the Python loop) on the same
    rounds: the same arms here, and the same posterior to rounding (VITS and LMC-TS sum
    ``eta V`` in another order; LinTS and LinUCB update the same arrays alike)."""
    _, reals = runs[name]
    rs, real = reals[0]
    fast = vr.make_policy(name, D).fresh(policy_seed(rs))
    slow = vr.make_policy(name, D).fresh(policy_seed(rs))
    slow.compiled = False
    np.testing.assert_array_equal(_play(fast, real, T), _play(slow, real, T))
    assert slow._core is None
    if name == "linucb":
        np.testing.assert_allclose(fast.Vinv, slow.Vinv, rtol=1e-12, atol=1e-15)
        return
    a, b = fast.engine, slow.engine
    assert a.n_obs == b.n_obs == T and a.model.sum_r2 == b.model.sum_r2
    np.testing.assert_allclose(a.model.V, b.model.V, rtol=1e-14)
    np.testing.assert_array_equal(a.model.b, b.model.b)
    if name == "lmc":
        np.testing.assert_allclose(a.theta, b.theta, rtol=1e-9)
    else:
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a.cov, b.cov, rtol=1e-9, atol=1e-12)
    assert a.diagnostics == b.diagnostics
    # the streams stand where the engine's own methods leave them
    assert (a._rng_sample.bit_generator.state == b._rng_sample.bit_generator.state
            and a._rng_update.bit_generator.state == b._rng_update.bit_generator.state)


def test_the_engine_object_is_the_state():
    """An engine played by a policy is current after every call, and learning through
    its own ``update`` in between is taken up by the next compiled call."""
    real = realise(_env(), run_seed(np.random.SeedSequence(2), 0), 30)
    eng = vr.VITS(D, variant="II", eta=1.0, lam=1.0, step_size=0.01, n_steps=5, seed=1)
    ref = vr.VITS(D, variant="II", eta=1.0, lam=1.0, step_size=0.01, n_steps=5, seed=1)
    pol, slow = vr.ThompsonSampling(eng), vr.ThompsonSampling(ref)
    slow.compiled = False
    for t in range(30):
        X = real.contexts[t]
        a, b = pol.select(X), slow.select(X)
        assert a == b
        pol.update(X, a, real.rewards[t, a])
        slow.update(X, b, real.rewards[t, b])
        np.testing.assert_allclose(eng.mu, ref.mu, rtol=1e-9, atol=1e-12)
        assert eng.n_obs == ref.n_obs == t + 1 + (2 if t > 10 else 0)
        if t == 10:
            eng.update(X[:2], np.ones(2))
            ref.update(X[:2], np.ones(2))
    assert np.shares_memory(eng.mu, pol._core.buf)  # a view of the compiled state


def test_a_refused_call_changes_nothing_and_keeps_no_core():
    pol = vr.ThompsonSampling(vr.LinTS(D, seed=0))
    X = np.ones((K, D))
    before = pol.engine._rng_sample.bit_generator.state
    for bad in (X.astype(complex), np.full((K, D), np.nan), np.ones((K, D + 1))):
        with pytest.raises((ValueError, TypeError), match="contexts"):
            pol.select(bad)
    assert pol._core is None
    a = pol.select(X)  # now a core holds the state
    mid = pol.engine._rng_sample.bit_generator.state
    with pytest.raises(ValueError, match="contexts"):
        pol.select(np.full((K, D), np.inf))  # refused by the compiled call: no draw used
    with pytest.raises(ValueError, match="arm"):
        pol.update(X, K, 1.0)
    assert pol.engine._rng_sample.bit_generator.state == mid != before
    pol.update(X, a, 1.0)
    assert pol.engine.n_obs == 1


@pytest.mark.parametrize("name", ["lints", "vits-ii", "lmc"])
def test_draws_held_ahead_leave_the_streams_where_call_by_call_draws_would(name, tmp_path):
    """The policy objects take their Thompson and step noise from blocks drawn ahead
    (``vits_ref.bandit._core.HeldDraws``). Whatever reads the engine's streams in between
    (its own ``sample``, a refused call, a deep copy, ``save``) finds them where the
    engine's own methods, drawing call by call, leave them: the same arms, and the same
    generator states at every read, against the engines' NumPy path."""
    real = realise(_env(), run_seed(np.random.SeedSequence(5), 0), T)
    fast = vr.make_policy(name, D, seed=4)
    slow = vr.make_policy(name, D, seed=4)
    slow.compiled = False
    twin = None
    for t in range(T):
        X = real.contexts[t]
        a, b = fast.select(X), slow.select(X)
        assert a == b, t
        fast.update(X, a, real.rewards[t, a])
        slow.update(X, b, real.rewards[t, b])
        if t % 7 == 3:  # mid-block: the engine's own draw reads the sampling stream
            np.testing.assert_allclose(fast.engine.sample(2), slow.engine.sample(2),
                                       rtol=1e-9, atol=1e-12)
        if t % 11 == 5:  # refused by the compiled call: takes no row
            with pytest.raises(ValueError, match="contexts"):
                fast.select(np.full((K, D), np.nan))
            with pytest.raises(ValueError, match="arm"):
                fast.update(X, K, 1.0)
        if t == 17:  # mid-block: a copy and a saved file continue as the engine's path
            twin, slow_twin = copy.deepcopy(fast), copy.deepcopy(slow)
            fast.save(tmp_path / "mid.vits")
        for which in ("_rng_sample", "_rng_update"):
            assert (getattr(fast.engine, which).bit_generator.state
                    == getattr(slow.engine, which).bit_generator.state), (t, which)
    rest = _shifted(real, 18)
    want = _play(slow_twin, rest, T - 18)
    for other in (twin, vr.load(tmp_path / "mid.vits")):
        np.testing.assert_array_equal(_play(other, rest, T - 18), want)
        assert other._core is not None


def _shifted(real, t0):
    """A realisation's rounds from ``t0`` on (contexts and rewards only)."""
    class Rounds:
        contexts, rewards = real.contexts[t0:], real.rewards[t0:]
    return Rounds


def test_a_policy_given_another_engine_learns_into_it():
    """``policy.engine = other`` between calls: the next call attaches the new engine
    (before, the compiled state of the old one kept learning while the new one counted
    the observations)."""
    X = np.random.default_rng(0).standard_normal((K, D))
    pol = vr.ThompsonSampling(vr.LinTS(D, seed=0))
    for _ in range(3):
        pol.update(X, pol.select(X), 1.0)
    pol.engine = new = vr.LinTS(D, seed=1)
    pol.update(X, 2, 2.0)
    ref = vr.LinTS(D, seed=1).update(X[2:3], [2.0])
    assert new.n_obs == ref.n_obs == 1
    np.testing.assert_allclose(new.model.V, ref.model.V, rtol=1e-14)
    np.testing.assert_allclose(new.mean, ref.mean, rtol=1e-12, atol=1e-15)


def test_an_engine_given_another_model_learns_into_it():
    """``engine.model = other`` between calls (a model restored from elsewhere, a
    copy): the next call attaches the new model's statistics. Before, the compiled state
    stayed bound to the old model's arrays, its bindings still in place, and learnt
    into them while the new model counted the observation."""
    X = np.random.default_rng(0).standard_normal((K, D))
    pol = vr.ThompsonSampling(vr.LinTS(D, seed=0))
    for _ in range(3):
        pol.update(X, pol.select(X), 1.0)
    ref = copy.deepcopy(pol.engine)
    pol.engine.model = new = copy.deepcopy(pol.engine.model)
    pol.update(X, 2, 2.0)
    ref.update(X[2:3], [2.0])  # the engine's own NumPy update, from the same state
    assert new.n_obs == ref.model.n_obs == 4
    np.testing.assert_allclose(new.V, ref.model.V, rtol=1e-14)
    np.testing.assert_allclose(pol.engine.mean, ref.mean, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["lints", "linucb"])
def test_an_array_assigned_between_calls_is_learnt_into(name):
    """An array of the state assigned between calls (``model.b = new``, LinUCB's ``b``):
    the next call attaches the new array, as the engine's own path learns into it (the
    compiled calls check their bindings by reading the attributes themselves)."""
    X = np.random.default_rng(0).standard_normal((K, D))
    fast, slow = vr.make_policy(name, D, seed=0), vr.make_policy(name, D, seed=0)
    slow.compiled = False
    holders = []
    for pol in (fast, slow):
        pol.update(X, pol.select(X), 1.0)
        holder = pol if name == "linucb" else pol.engine.model
        holder.b = holder.b + 0.5
        pol.update(X, 2, 2.0)
        holders.append(holder)
    # the compiled path against the NumPy one: to rounding, as in
    # test_the_engines_own_path_agrees_to_rounding
    np.testing.assert_allclose(holders[0].b, holders[1].b, rtol=1e-14)
    if name == "lints":
        np.testing.assert_allclose(fast.engine.mean, slow.engine.mean, rtol=1e-12,
                                   atol=1e-15)


@pytest.mark.parametrize("name", ["lints", "linucb"])
def test_inputs_the_compiled_calls_cannot_take_are_checked_not_misread(name):
    """Found by the fuzz suite: with one arm the compiled update read arm -1 as Online's
    "row of features" and learnt it; an arm beyond int64 raised a raw OverflowError; and a
    read-only contexts array (another Numba type) made select raise a RuntimeError."""
    one = vr.make_policy(name, D, seed=0)
    X1 = np.ones((1, D))
    one.select(X1)  # a core of one arm
    with pytest.raises(ValueError, match="arm"):
        one.update(X1, -1, 1.0)
    with pytest.raises(ValueError, match="arm"):
        one.update(X1, 2 ** 100, 1.0)
    assert (one if isinstance(one, vr.LinUCB) else one.engine).n_obs == 0
    bandit = vr.Bandit(name, n_arms=1, dim=D, seed=0)
    bandit.predict(X1)
    with pytest.raises(ValueError, match="arm"):
        bandit.partial_fit(X1[None], np.array([-1]), np.array([1.0]))
    with pytest.raises(ValueError, match="arm"):
        bandit.partial_fit(X1, -1, 1.0)
    with pytest.raises(ValueError, match="arm"):
        bandit.partial_fit(X1, np.int64(1), 1.0)
    pol, want = vr.make_policy(name, D, seed=0), vr.make_policy(name, D, seed=0)
    X = np.random.default_rng(0).standard_normal((K, D))
    frozen = X.copy()
    frozen.flags.writeable = False
    for _ in range(2):  # the first call attaches a core, the second plays it
        a = pol.select(frozen)
        assert a == want.select(X)
        pol.update(frozen, a, 0.5)
        want.update(X, a, 0.5)
    b = vr.Bandit(name, n_arms=K, dim=D, seed=0)
    rounds = np.stack([frozen] * 3)
    rounds.flags.writeable = False
    arms = b.predict(rounds)
    b.fit(rounds, arms, np.ones(3))
    np.testing.assert_array_equal(arms, vr.Bandit(name, n_arms=K, dim=D, seed=0).predict(
        np.stack([X] * 3)))


def test_a_diverging_update_is_rolled_back_through_every_door():
    """VITS at a step that blows up: the DivergenceError names the engine and round, and
    the engine, its streams and the Bandit are as before the call."""
    eng = vr.VITS(D, variant="II", schedule="constant", step_size=5.0, n_steps=20, seed=0)
    pol = vr.ThompsonSampling(eng)
    X = np.random.default_rng(0).standard_normal((K, D)) * 30
    pol.select(X)
    mu, B, state = eng.mu.copy(), eng.B.copy(), eng._rng_update.bit_generator.state
    with pytest.raises(vr.DivergenceError, match="VITS-II diverged .* round 1"):
        pol.update(X, 0, 100.0)
    assert eng.n_obs == 0 and eng.model.sum_r2 == 0.0
    np.testing.assert_array_equal(eng.mu, mu)
    np.testing.assert_array_equal(eng.B, B)
    assert eng._rng_update.bit_generator.state == state
    bandit = vr.Bandit(pol, n_arms=K)
    with pytest.raises(vr.DivergenceError, match="VITS-II diverged"):
        bandit.partial_fit(X[None], np.array([0]), np.array([100.0]))
    with pytest.raises(vr.DivergenceError, match="VITS-II diverged"):
        bandit.partial_fit(np.stack([X, X]), np.array([0, 0]), np.array([1.0, 100.0]))
    assert eng.n_obs == 0
    np.testing.assert_array_equal(eng.mu, mu)
    assert eng._rng_update.bit_generator.state == state


@pytest.mark.parametrize("name", ["lints", "vits-ii", "linucb"])
def test_online_takes_over_a_trained_policy(name, runs):
    """``Online(policy)`` of a policy that has learnt continues it: its next arms and its
    state are the policy's, bit for bit (its streams copied, its sums of ``eta V``)."""
    _, reals = runs[name]
    rs, real = reals[0]
    pol = vr.make_policy(name, D).fresh(policy_seed(rs))
    _play(pol, real, 25)
    online = vr.Online(pol, K)
    assert online.n_updates == 0 and online._n0 == 25
    with pytest.raises(ValueError, match="seed must be None"):
        vr.Online(pol, K, seed=1)
    for t in range(25, T):
        X = real.contexts[t]
        a = pol.select(X)
        assert online.select(X) == a
        pol.update(X, a, real.rewards[t, a])
        online.update(X, a, real.rewards[t, a])
    if name == "linucb":
        np.testing.assert_array_equal(online.mean, pol.Vinv @ pol.b)
    else:
        np.testing.assert_array_equal(online.mean, pol.engine.mean)
        np.testing.assert_array_equal(online.cov, pol.engine.cov)
    Xs = real.contexts[:3]
    np.testing.assert_allclose(online.predict_expectations(Xs), Xs @ online.mean)


def test_online_mean_is_the_closed_form_ridge_posterior():
    """LinTS through Online: its mean and covariance are ``inv(V) b`` and ``inv(eta V)``
    of the data it learnt (checked against a direct solve)."""
    rng = np.random.default_rng(5)
    online = vr.Online("lints", K, seed=0, dim=D, eta=2.0, lam=3.0)
    X = rng.standard_normal((50, K, D))
    arms = rng.integers(0, K, 50)
    r = rng.standard_normal(50)
    online.update_many(X, arms, r)
    P = X[np.arange(50), arms]
    V = 3.0 * np.eye(D) + P.T @ P
    np.testing.assert_allclose(online.mean, np.linalg.solve(V, P.T @ r), rtol=1e-12)
    np.testing.assert_allclose(online.cov, np.linalg.inv(2.0 * V), rtol=1e-12)
    with pytest.raises(TypeError, match="no posterior"):
        _ = vr.Online("lmc", K, seed=0, dim=D).cov


@pytest.mark.parametrize("name", ["lints", "linucb", "lmc", "laplace"])
def test_the_played_rows_learn_what_the_rounds_learn(name):
    """Logged rounds given as the played arms' features (n, d), all that a learning door
    reads of a round, give the state the rounds (n, K, d) give, bit for bit, through
    ``Bandit.fit``, ``Bandit.partial_fit`` and the policy's ``update_many``; a bad row is
    refused before anything is learnt, and a policy whose update has no form of rows (one
    posterior per arm) refuses them, saying so."""
    env = _env()
    real = realise(env, run_seed(np.random.SeedSequence(5), 0), T)
    arms = np.random.default_rng(2).integers(0, K, T)
    X, r = real.contexts, real.rewards[np.arange(T), arms]
    played = X[np.arange(T), arms]
    Xp = realise(env, run_seed(np.random.SeedSequence(6), 0), 10).contexts

    def policy():
        if name == "laplace":  # no name: Thompson sampling over the engine
            return vr.ThompsonSampling(vr.Laplace(D, eta=10.0, lam=10.0, seed=0))
        return vr.make_policy(name, D, seed=0)

    def state(bandit):
        holder = getattr(bandit.policy, "engine", bandit.policy)
        # the arrays of the state (not vars(): a copy, the holder's own dict kept fast)
        return {k: getattr(holder, k).copy() for k in dir(holder)
                if not k.startswith("__") and isinstance(getattr(holder, k, None), np.ndarray)}

    def learnt(door, contexts):
        bandit = vr.Bandit(policy(), n_arms=K, seed=0)
        if door == "fit":
            bandit.fit(contexts, arms, r)
        elif door == "partial_fit":  # in two calls
            bandit.partial_fit(contexts[:15], arms[:15], r[:15])
            bandit.partial_fit(contexts[15:], arms[15:], r[15:])
        else:
            bandit.policy.update_many(contexts, arms, r)
        return state(bandit), bandit.predict(Xp)

    for door in ("fit", "partial_fit", "update_many"):
        (rounds, arms_a), (rows, arms_b) = learnt(door, X), learnt(door, played)
        assert rounds.keys() == rows.keys() and rounds
        for k in rounds:
            np.testing.assert_array_equal(rows[k], rounds[k], err_msg=f"{door}: {k}")
        np.testing.assert_array_equal(arms_b, arms_a, err_msg=door)
    bandit = vr.Bandit(policy(), n_arms=K, seed=0)
    before = state(bandit)
    bad = played.copy()
    bad[7, 1] = np.nan
    for args, kind, match in (((bad, arms, r), ValueError, "contexts contains NaN"),
                              ((played, arms + K, r), ValueError, r"arms must be in \[0, 6\)"),
                              ((played, -arms - 1, r), ValueError, "arms must be in"),
                              ((played[:, :2], arms, r), ValueError, "d = 4 features")):
        for learn in (bandit.fit, bandit.partial_fit):
            with pytest.raises(kind, match=match):
                learn(*args)
    after = state(bandit)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    with pytest.raises(ValueError, match="arms must be at least 0"):
        policy().update_many(played, -arms - 1, r)
    per_arm = vr.Bandit(vr.PerArm(vr.LinTS(D), K, seed=0), n_arms=K)
    with pytest.raises(TypeError, match="learns from each round's contexts"):
        per_arm.fit(played, arms, r)
