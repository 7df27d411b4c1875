"""The online API (:class:`vits_ref.Online`): the fused loop's bodies one decision at a time.

Its contract: fed the rounds of a run's realisation, it plays the arms of
:func:`vits_ref.simulate`'s run with the same seed, bit for bit (the same bodies, the same
streams), whatever its block of pre-drawn randomness; bad data are refused before the
state changes; a diverging update raises the fused loop's DivergenceError.
"""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import run_seed
from vits_ref.bandit._fused_draws import realise
from vits_ref.drivers import cpu


def _pool(d=4, K=6):
    return vr.envs.pool(dim=d, n_arms=K, zeta=1.0, seed=3)


def _play(online, real, T, delay=0):
    """Select every round; apply round ``t``'s feedback after round ``t + delay``'s
    select (the last ``delay`` rounds' feedback at the end). Returns the arms."""
    arms, pending = [], []
    for t in range(T):
        X = real.contexts[t]
        a = online.select(X)
        arms.append(a)
        pending.append((X, a, real.rewards[t, a]))
        if len(pending) > delay:
            online.update(*pending.pop(0))
    for p in pending:
        online.update(*p)
    return np.array(arms)


def _logistic():
    return vr.ThompsonSampling(vr.VITS(3, model="logistic", eta=2.0, lam=0.5, variant="II",
                                       step_size=0.5, n_steps=3))


POLICIES = {
    "lints": lambda: (vr.make_policy("lints", 4), _pool(), {}),
    "linucb": lambda: (vr.make_policy("linucb", 4), _pool(), {}),
    "vits-ii": lambda: (vr.make_policy("vits-ii", 4), _pool(), {}),
    "lmc": lambda: (vr.make_policy("lmc", 4), _pool(), {}),
    "random": lambda: (vr.make_policy("random", 4), _pool(), {}),
    "vits-ii-logistic": lambda: (_logistic(), vr.envs.hard_instance(3, 4, reward="logistic",
                                                                   seed=0), {"horizon": 40}),
}


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("block", [1, 7, 256])
def test_plays_the_simulation_loops_arms(name, block):
    pol, env, kw = POLICIES[name]()
    T, seed = 40, 11
    res = vr.simulate(pol, env, T, 2, seed=seed)
    assert res.fused
    root = np.random.SeedSequence(seed)
    for r in range(2):
        rs = run_seed(root, r)
        online = vr.Online.for_run(pol, env.n_arms, rs, block=block, **kw)
        np.testing.assert_array_equal(_play(online, realise(env, rs, T), T), res.arms[r])
    # not a trivial comparison: the arms vary
    assert len(np.unique(res.arms)) > 1


def test_late_feedback_leaves_the_selection_draws_in_place():
    """The t-th select uses the t-th selection draw whatever the updates so far: with no
    feedback at all, LinTS's selects are the prior's draws, the same with any block; the
    feedback applied late ends in the same posterior as applied at once (LinTS is exact)."""
    pol, env, _ = POLICIES["lints"]()
    rs = run_seed(np.random.SeedSequence(2), 0)
    real = realise(env, rs, 30)
    a = vr.Online.for_run(pol, env.n_arms, rs, block=4)
    b = vr.Online.for_run(pol, env.n_arms, rs, block=256)
    np.testing.assert_array_equal([a.select(real.contexts[t]) for t in range(30)],
                                  [b.select(real.contexts[t]) for t in range(30)])
    late = vr.Online.for_run(pol, env.n_arms, rs, block=5)
    now = vr.Online.for_run(pol, env.n_arms, rs, block=5)
    _play(late, real, 30, delay=3)
    _play(now, real, 30, delay=0)
    assert late.n_updates == now.n_updates == 30
    X = real.contexts[0]
    # the exact posterior does not depend on when its observations came: the same next
    # draw, to the rounding of the rank-one updates' order (here the same order: equal)
    assert late.select(X) == now.select(X)


def test_bad_data_are_refused_before_the_state_changes():
    pol, env, _ = POLICIES["vits-ii"]()
    rs = run_seed(np.random.SeedSequence(0), 0)
    real = realise(env, rs, 10)
    a = vr.Online.for_run(pol, env.n_arms, rs)
    b = vr.Online.for_run(pol, env.n_arms, rs)
    X = real.contexts[0]
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="contexts must be finite"):
        a.select(bad)
    bad[2, 1] = 1e151
    with pytest.raises(ValueError, match="contexts must be finite"):
        a.select(bad)
    with pytest.raises(ValueError, match=r"contexts must have shape \(6, 4\)"):
        a.select(X[:, :3])
    arm = a.select(X)
    assert arm == b.select(X)
    with pytest.raises(ValueError, match="reward must be finite"):
        a.update(X, arm, np.inf)
    with pytest.raises(ValueError, match="arm must be in"):
        a.update(X, 6, 1.0)
    with pytest.raises(ValueError, match="contexts must be finite"):
        a.update(np.full(4, np.nan), arm, 1.0)
    assert a.n_selects == 1 and a.n_updates == 0
    a.update(X, arm, real.rewards[0, arm])
    b.update(X[arm], arm, real.rewards[0, arm])  # the arm's features alone: the same
    # a list converts (once), with the same result; the refusals left no trace: both play
    # on alike
    assert a.select(real.contexts[1].tolist()) == b.select(real.contexts[1])
    for t in range(1, 10):
        X = real.contexts[t]
        if t > 1:
            assert a.select(X) == b.select(X)
        arm = int(np.argmax(real.rewards[t]))  # any arm: both learn the same
        a.update(X, arm, real.rewards[t, arm])
        b.update(X, arm, real.rewards[t, arm])


def test_what_has_no_compiled_round_or_needs_a_horizon_is_refused():
    with pytest.raises(TypeError, match="no compiled round"):
        vr.Online(vr.ThompsonSampling(vr.VITS(3, schedule="theoretical", horizon=10)), 4)
    with pytest.raises(ValueError, match="horizon is needed"):
        vr.Online(_logistic(), 4)
    with pytest.raises(ValueError, match="dim is needed"):
        vr.Online("lints", 4)
    online = vr.Online(_logistic(), 4, horizon=1)
    X = np.eye(4, 3)
    with pytest.raises(ValueError, match="reward must be 0 or 1"):
        online.update(X, 0, 0.5)
    online.update(X, 0, 1.0)
    with pytest.raises(ValueError, match="horizon=1"):
        online.update(X, 0, 1.0)


def test_divergence_is_the_simulation_loops_error():
    """LMC-TS with a constant step too large for run 4 of the pool at seed 3 (the case of
    tests/test_runner_conformance.py): the same engine, round and step size."""
    pol = vr.make_policy("lmc", 3, step_size=0.02, schedule="constant")
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    with pytest.raises(vr.DivergenceError) as want:
        vr.simulate(pol, env, 30, 1, seed=3, first_run=4)
    rs = run_seed(np.random.SeedSequence(3), 4)
    online = vr.Online.for_run(pol, env.n_arms, rs)
    with pytest.raises(vr.DivergenceError) as got:
        _play(online, realise(env, rs, 30), 30)
    w, g = want.value, got.value
    assert (g.engine, g.round, g.step_size) == (w.engine, w.round, w.step_size)


@pytest.mark.parametrize("name", ["lints", "vits-ii"])
def test_a_batch_of_requests_is_decided_as_one_by_one(name):
    """``select_many`` over 20 requests, across blocks of 7 draws, with the feedback of
    each batch learnt between batches: the arms of the same selects one at a time."""
    pol, env, _ = POLICIES[name]()
    rs = run_seed(np.random.SeedSequence(4), 0)
    real = realise(env, rs, 60)
    a = vr.Online.for_run(pol, env.n_arms, rs, block=7)
    b = vr.Online.for_run(pol, env.n_arms, rs, block=7)
    for t0 in (0, 20, 40):
        many = a.select_many(real.contexts[t0:t0 + 20])
        one = [b.select(real.contexts[t]) for t in range(t0, t0 + 20)]
        np.testing.assert_array_equal(many, one)
        for t in range(t0, t0 + 20):
            for o in (a, b):
                o.update(real.contexts[t], one[t - t0], real.rewards[t, one[t - t0]])
    bad = real.contexts[:5].copy()
    bad[3, 0, 0] = np.nan
    with pytest.raises(ValueError, match="contexts of request 3 must be finite"):
        a.select_many(bad)
    assert a.n_selects == 63  # the three requests before the bad one were decided
    with pytest.raises(ValueError, match=r"contexts must have shape \(n, 6, 4\)"):
        a.select_many(real.contexts[0])


def test_other_layouts_and_types_are_converted_and_bad_ones_refused():
    """The compiled calls take one signature (C-ordered float64 arrays): other layouts,
    dtypes and read-only arrays are converted once and give the same arms; an arm that is
    not an integer, or negative, and a select or update past the horizon are refused
    with errors naming them."""
    pol, env, _ = POLICIES["lints"]()
    rs = run_seed(np.random.SeedSequence(5), 0)
    real = realise(env, rs, 12)
    a = vr.Online.for_run(pol, env.n_arms, rs, horizon=12, block=5)
    b = vr.Online.for_run(pol, env.n_arms, rs, horizon=12, block=5)
    for t in range(12):
        X = real.contexts[t]
        fortran, ro = np.asfortranarray(X), X.copy()
        ro.flags.writeable = False
        other = (fortran, ro, X.tolist())[t % 3]
        arm = a.select(X)
        assert b.select(other) == arm
        r = real.rewards[t, arm]
        a.update(X, arm, r)
        b.update(other, np.int32(arm), float(r))
    with pytest.raises(ValueError, match="horizon=12"):
        a.select(real.contexts[0])
    with pytest.raises(ValueError, match="horizon=12"):
        a.update(real.contexts[0], 0, 1.0)
    c = vr.Online.for_run(pol, env.n_arms, rs)
    X = real.contexts[0]
    with pytest.raises(TypeError, match="arm must be an integer"):
        c.update(X, 1.0, 1.0)
    with pytest.raises(ValueError, match="arm must be in"):
        c.update(X, -1, 1.0)
    with pytest.raises(TypeError, match="reward must be a real number"):
        c.update(X, 0, "one")
    with pytest.raises(ValueError, match=r"contexts must have shape \(6, 4\)"):
        c.update(X[:, :3].copy(), 0, 1.0)
    with pytest.raises(ValueError, match=r"contexts must have shape \(6, 4\) or \(4,\)"):
        c.update(X[0, :3], 0, 1.0)
    assert c.n_updates == 0


def test_hyperparameters_by_keyword_are_the_named_policys_and_shown():
    """``Online(name, **options)`` is ``Online(make_policy(name, dim, **options))``: the
    same arms; its repr shows the values in force ("lints" means eta = lam = 10 unless
    given)."""
    env = _pool()
    rs = run_seed(np.random.SeedSequence(6), 0)
    real = realise(env, rs, 25)
    by_name = vr.Online("lints", env.n_arms, seed=7, dim=4, eta=1.0, lam=2.0)
    built = vr.Online(vr.make_policy("lints", 4, eta=1.0, lam=2.0), env.n_arms, seed=7)
    np.testing.assert_array_equal(_play(by_name, real, 25), _play(built, real, 25))
    assert repr(by_name).startswith("Online('LinTS', eta=1.0, lam=2.0, n_arms=6, dim=4")
    assert "eta=10.0, lam=10.0" in repr(vr.Online("lints", 6, dim=4))
    with pytest.raises(TypeError, match="apply to a policy name only"):
        vr.Online(vr.make_policy("lints", 4), 6, eta=1.0)
    with pytest.raises(TypeError, match="step_sise"):
        vr.Online("vits-ii", 6, dim=4, step_sise=0.1)


def test_a_trained_policy_with_a_history_is_refused_not_restarted():
    """A trained policy is taken over (tests/test_doors.py) where its state fits the
    buffer; one whose state keeps a history (the logistic pieces) is refused with a word,
    not silently played from zero, and so is a seed for a trained policy."""
    pol = _logistic()
    pol.update(np.eye(4, 3), 1, 1.0)
    with pytest.raises(ValueError, match="has learnt 1 observations.*history"):
        vr.Online(pol, 4, horizon=10)
    lin = vr.LinUCB(4)
    lin.update(np.eye(6, 4), 0, 1.0)
    with pytest.raises(ValueError, match="seed must be None"):
        vr.Online(lin, 6, seed=0)
    assert vr.Online(lin, 6)._n0 == 1


def test_a_diverged_update_leaves_the_state_as_it_was():
    """LMC-TS's diverging update of run 4 (the case above) and LinTS fed valid data at the
    bound, whose statistics overflow: the DivergenceError leaves the state bit for bit as
    before the call, and the object plays on as one that never got the update."""
    pol = vr.make_policy("lmc", 3, step_size=0.02, schedule="constant")
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    rs = run_seed(np.random.SeedSequence(3), 4)
    real = realise(env, rs, 30)
    a, b = vr.Online.for_run(pol, 4, rs), vr.Online.for_run(pol, 4, rs)
    arms = np.zeros(30, dtype=np.int64)
    for t in range(30):
        X = real.contexts[t]
        arm = arms[t] = a.select(X)
        assert b.select(X) == arm
        before = a._buf.copy()
        try:
            a.update(X, arm, real.rewards[t, arm])
        except vr.DivergenceError:
            break
        b.update(X, arm, real.rewards[t, arm])
    else:
        pytest.fail("the case no longer diverges")
    keep = len(before) // 2
    np.testing.assert_array_equal(a._buf[:keep], before[:keep])
    assert a.n_updates == b.n_updates == t
    # the same rounds as one batch: the state is copied once, put back at the diverging
    # round, and the rounds before it are learnt again, ending where b is, bit for bit
    many = vr.Online.for_run(pol, 4, rs)
    with pytest.raises(vr.DivergenceError, match=f"round {t + 1}"):
        m = min(t + 3, 30)  # rounds after the diverging one: never reached
        many.update_many(real.contexts[:m], arms[:m], real.rewards[np.arange(m), arms[:m]])
    assert many.n_updates == t
    # the learnt state; not the last view, select's scratch scores (b selected, many not)
    for got, want in zip(many._views()[:-1], b._views()[:-1], strict=True):
        np.testing.assert_array_equal(got, want)
    X = real.contexts[t + 1]
    assert a.select(X) == b.select(X)
    # LinTS's Cholesky factor planted with a pivot of 1e300 (the layout of
    # vits_ref.kernels.lints.views: F first): its rank-one update squares it and
    # overflows, which the fused piece reported as a success before
    d = 2
    lin = vr.Online("lints", 2, dim=d, seed=0)
    lin._buf[0] = 1e300
    state = lin._buf.copy()
    with pytest.raises(vr.DivergenceError, match="LinTS"):
        lin.update(np.full((2, d), 1e150), 0, 1e150)
    keep = len(state) // 2
    np.testing.assert_array_equal(lin._buf[:keep], state[:keep])
    assert lin.n_updates == 0


def test_a_state_with_a_history_refuses_every_call_after_a_divergence():
    """The logistic pieces' state keeps a history, not copied before an update: after a
    divergence the object says it cannot be used, rather than play on a broken state."""
    pol = vr.ThompsonSampling(vr.VITS(3, model="logistic", eta=2.0, lam=0.5, variant="II",
                                      step_size=1e6, n_steps=3))
    online = vr.Online(pol, 4, seed=0, horizon=50)
    rng = np.random.default_rng(0)
    with pytest.raises(vr.DivergenceError):
        for _ in range(50):
            X = 1e3 * rng.standard_normal((4, 3))
            online.update(X, online.select(X), 1.0)
    with pytest.raises(ValueError, match="cannot be used: its state diverged"):
        online.select(np.eye(4, 3))
    with pytest.raises(ValueError, match="cannot be used"):
        online.update(np.eye(4, 3), 0, 1.0)


def test_bad_inputs_the_policy_objects_refuse_are_refused():
    """What the policy objects refuse, Online refuses, with the same kind of error and
    before the state changes (each was accepted or raised a raw error before)."""
    online = vr.Online("lints", 6, dim=4, seed=0)
    pol = vr.make_policy("lints", 4, seed=0)
    X = np.random.default_rng(1).standard_normal((6, 4))
    nan_row = X.copy()
    nan_row[5, 2] = np.nan  # an arm not played
    cases = [
        ("arm 2**63", (X, 2 ** 63, 1.0), ValueError),
        ("arm True", (X, True, 1.0), TypeError),
        ("arm 7 with one row", (X[0], 7, 1.0), ValueError),
        ("complex contexts", (X.astype(complex), 0, 1.0), TypeError),
        ("string reward", (X, 0, "1.0"), TypeError),
        ("bool reward", (X, 0, True), TypeError),
        ("NaN in an unplayed arm", (nan_row, 0, 1.0), ValueError),
    ]
    # and Bandit's partial_fit of one round, as predict takes it (its compiled state
    # attached by the predict)
    bandit = vr.Bandit(vr.make_policy("lints", 4, seed=0), n_arms=6)
    bandit.predict(X)
    for what, args, kind in cases:
        for learn in (pol.update, online.update, bandit.partial_fit):
            before = online._buf.copy()
            with pytest.raises(kind):
                learn(*args)
            np.testing.assert_array_equal(online._buf, before, err_msg=what)
    with pytest.raises(TypeError, match="contexts must be real"):
        online.select(X.astype(complex))
    assert online.n_updates == pol.engine.n_obs == bandit.policy.engine.n_obs == 0
    # lists Numba cannot type reached the compiled calls, whose ValueError ("cannot
    # compute fingerprint of empty list") named nothing (found by the fuzz suite)
    pol.select(X)  # a compiled core now holds the policy's state
    bandit = vr.Bandit(pol, n_arms=6)
    for bad in ([], [[]]):
        for call in (online.select, pol.select, bandit.predict,
                     lambda c: online.update(c, 0, 1.0), lambda c: pol.update(c, 0, 1.0)):
            with pytest.raises(ValueError, match="contexts"):
                call(bad)


@pytest.mark.parametrize("name", ["lints", "lmc"])
def test_a_batch_of_feedback_is_learnt_as_one_by_one(name):
    """``update_many`` over 30 rounds across blocks of 7 draws, as the rounds' contexts or
    the played arms' features: the state of 30 ``update`` calls, bit for bit; a bad round
    in a batch is named, the rounds before it learnt and it leaves no trace."""
    pol, env, _ = POLICIES[name]()
    rs = run_seed(np.random.SeedSequence(8), 0)
    real = realise(env, rs, 30)
    chooser, one, many, rows = (vr.Online.for_run(pol, env.n_arms, rs, block=7)
                                for _ in range(4))
    # the arms of another object: the three compared learn only (select's scratch aside)
    arms = np.array([chooser.select(real.contexts[t]) for t in range(30)])
    rewards = real.rewards[np.arange(30), arms]
    for t in range(30):
        one.update(real.contexts[t], int(arms[t]), rewards[t])
    many.update_many(real.contexts[:11], arms[:11], rewards[:11])
    many.update_many(real.contexts[11:], arms[11:], rewards[11:])
    rows.update_many(real.contexts[np.arange(30), arms], arms, rewards)
    # the state; not the buffer's second half, where an update copies the state before
    # it runs: a batch copies it once a block instead (vits_ref.bandit._core.batch_meta)
    keep = int(one._meta[cpu.bandit._KEEP])
    np.testing.assert_array_equal(many._buf[:keep], one._buf[:keep])
    np.testing.assert_array_equal(rows._buf[:keep], one._buf[:keep])
    assert many.n_updates == rows.n_updates == 30
    fresh = vr.Online.for_run(pol, env.n_arms, rs, block=7)
    bad = rewards[:5].copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match="round 3: reward must be finite"):
        fresh.update_many(real.contexts[:5], arms[:5], bad)
    assert fresh.n_updates == 3
    fresh.update_many(real.contexts[3:30], arms[3:30], rewards[3:30])
    np.testing.assert_array_equal(fresh._buf[:keep], one._buf[:keep])
    with pytest.raises(ValueError, match=r"arms must be in \[0, 6\)"):
        fresh.update_many(real.contexts[:2], np.array([0, 6]), rewards[:2])
    with pytest.raises(TypeError, match="arms must be integers"):
        fresh.update_many(real.contexts[:2], np.array([0.0, 1.0]), rewards[:2])


@pytest.mark.parametrize("name", ["lints", "vits-ii-logistic"])
def test_save_and_load_continue_bit_for_bit(name, tmp_path):
    """Saved with selects 12 rounds ahead of the feedback (blocks of 5 draws held), loaded
    in place: the next 20 decisions and the state are the saved object's, bit for bit."""
    pol, env, kw = POLICIES[name]()
    rs = run_seed(np.random.SeedSequence(9), 0)
    real = realise(env, rs, 40)
    a = vr.Online.for_run(pol, env.n_arms, rs, block=5, **kw)
    pending = []
    for t in range(18):
        X = real.contexts[t]
        arm = a.select(X)
        pending.append((X, arm, real.rewards[t, arm]))
        if t >= 12:
            a.update(*pending.pop(0))
    path = a.save(tmp_path / "online.npz")
    b = vr.load(path)
    assert type(b) is vr.Online and repr(b) == repr(a)
    np.testing.assert_array_equal(b._buf, a._buf)
    for t in range(18, 38):
        X = real.contexts[t]
        arm = a.select(X)
        assert b.select(X) == arm
        pending.append((X, arm, real.rewards[t, arm]))
        fb = pending.pop(0)
        a.update(*fb)
        b.update(*fb)
    np.testing.assert_array_equal(b._buf, a._buf)


def test_selects_far_ahead_of_the_feedback_hold_one_block_of_each_stream(tmp_path):
    """A service that selects without feedback keeps one block of each stream's draws,
    not one per block of selects (each stream drawn as its own counter reaches it); the
    arms, fed back late, and the next decisions are the policy object's, which draws each
    call's noise from the same two streams; saved with either counter ahead, or both at
    a block's end, it loads and continues bit for bit."""
    from vits_ref._seeding import policy_seed

    pol, env, _ = POLICIES["lmc"]()  # its updates draw: both streams are used
    rs = run_seed(np.random.SeedSequence(9), 0)
    real = realise(env, rs, 120)
    online = vr.Online.for_run(pol, env.n_arms, rs, block=5)
    ref = pol.fresh(policy_seed(rs))
    arms = [online.select(real.contexts[t]) for t in range(60)]
    assert arms == [ref.select(real.contexts[t]) for t in range(60)]
    # 12 blocks of each stream when both were drawn at the selects' pace
    assert len(online._sel) == len(online._steps) == 1
    saved = [vr.load(online.save(tmp_path / "selects-ahead.npz"))]
    for t in range(60):
        fb = (real.contexts[t], arms[t], real.rewards[t, arms[t]])
        for o in (online, ref, saved[0]):
            o.update(*fb)
    assert len(online._sel) == len(online._steps) == 1
    saved.append(vr.load(online.save(tmp_path / "at-a-block-end.npz")))  # 60 = 12 x 5
    for t in range(60, 75):  # logged feedback: the updates ahead of the selects
        fb = (real.contexts[t], 0, real.rewards[t, 0])
        for o in (online, ref, *saved):
            o.update(*fb)
    saved.append(vr.load(online.save(tmp_path / "updates-ahead.npz")))
    for t in range(75, 120):
        X = real.contexts[t]
        a = online.select(X)
        assert [o.select(X) for o in (ref, *saved)] == [a] * 4
        for o in (online, ref, *saved):
            o.update(X, a, real.rewards[t, a])
    for o in saved:
        np.testing.assert_array_equal(o._buf, online._buf)


@pytest.mark.parametrize("name", ["lints", "lmc"])
def test_any_interleaving_of_calls_and_saves_is_the_plain_calls(name, tmp_path):
    """Random interleavings of select, select_many, update, update_many (feedback in
    order, late by a random amount) and save + load, at small blocks, give the arms and
    the state of one Online making the single calls, bit for bit; between loads each
    stream holds at most the blocks between the two counters, plus two."""
    pol, env, _ = POLICIES[name]()
    for trial in range(4):
        g = np.random.default_rng(trial)
        rs = run_seed(np.random.SeedSequence(trial), 0)
        real = realise(env, rs, 200)
        block = int(g.choice([1, 3, 5]))
        a = vr.Online.for_run(pol, env.n_arms, rs, block=block)
        ref = vr.Online.for_run(pol, env.n_arms, rs)
        keep = len(ref._buf) // 2 if ref._meta[cpu.bandit._KEEP] else len(ref._buf)
        t, pending = 0, []
        for step in range(40):
            op = int(g.integers(0, 5))
            if op < 2 and t < 180:
                n = int(g.integers(1, 10)) if op == 0 else 1
                X = real.contexts[t:t + n]
                arms = list(a.select_many(X)) if op == 0 else [a.select(X[0])]
                assert arms == [ref.select(x) for x in X]
                pending += [(X[i], int(arms[i]), real.rewards[t + i, arms[i]])
                            for i in range(n)]
                t += n
            elif op < 4 and pending:
                n = int(g.integers(1, len(pending) + 1)) if op == 2 else 1
                fb, pending = pending[:n], pending[n:]
                a.update_many(*(np.array(col) for col in zip(*fb, strict=True)))
                for f in fb:
                    ref.update(*f)
            elif op == 4:
                a = vr.load(a.save(tmp_path / f"{trial}-{step}.npz"))
            # the state (the buffer's copy half is scratch: batches skip it)
            np.testing.assert_array_equal(a._buf[:keep], ref._buf[:keep])
            if op != 4:
                ahead = abs(a.n_selects - a.n_updates) // block + 2
                assert min(len(a._sel), len(a._steps)) <= 2
                assert max(len(a._sel), len(a._steps)) <= ahead
