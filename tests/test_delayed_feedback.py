"""Late and batched feedback in :func:`vits_ref.simulate` (``delay=``, ``batch=``).

Checked against select/update loops written here from the documented rule: round ``t``'s
reward is due after round ``t + delay_t`` and learnt, in round order, at the end of every
``batch``-th round. The fused loop (a queue of pending feedback in the state buffer,
:func:`vits_ref.bandit.delivery.delivery_schedule`) gives the Python loop's numbers bit
for bit, whatever its chunks of rounds and batches of runs. Exact engines end at the same
posterior whatever the order of their observations (to rounding).
"""

import numpy as np
import pytest

import vits_ref as vr
import vits_ref.bandit.simulate as sim
from vits_ref._seeding import child, delay_rng
from vits_ref.bandit.delivery import delivery_schedule


def _pool():
    return vr.envs.pool(dim=3, n_arms=5, zeta=1.0, seed=2)


def _hand(policy, env, T, R, seed, lag, batch):
    """``lag(t, rng) -> delay of round t``; returns the arms."""
    root = np.random.SeedSequence(seed)
    arms = np.empty((R, T), dtype=np.int64)
    for r in range(R):
        rs = child(root, r)
        real = env.realise(T, np.random.Generator(np.random.PCG64(child(rs, 0))))
        pol = policy.fresh(child(rs, 1))
        rng = delay_rng(rs)
        pending = []
        for t in range(T):
            arms[r, t] = pol.select(real.contexts[t])
            pending.append((t + lag(t, rng), t))
            if (t + 1) % batch == 0:
                for due, s in sorted(pending, key=lambda p: p[1]):
                    if due <= t:
                        pol.update(real.contexts[s], arms[r, s], real.rewards[s, arms[r, s]])
                pending = [p for p in pending if p[0] > t]
    return arms


@pytest.mark.parametrize("name", ["lints", "vits-ii"])
@pytest.mark.parametrize("delay, batch", [(3, 1), (0, 4), (2, 5)])
def test_fixed_delays_and_batches_are_the_hand_loops(name, delay, batch):
    pol, env = vr.make_policy(name, 3), _pool()
    res = vr.simulate(pol, env, 30, 3, seed=5, delay=delay, batch=batch)
    assert res.fused  # the fused loop plays late feedback
    want = _hand(pol, env, 30, 3, 5, lambda t, rng: delay, batch)
    np.testing.assert_array_equal(res.arms, want)
    loop = vr.simulate(pol, env, 30, 3, seed=5, delay=delay, batch=batch, fused=False)
    np.testing.assert_array_equal(loop.arms, want)
    np.testing.assert_array_equal(loop.regret, res.regret)
    now = vr.simulate(pol, env, 30, 3, seed=5)
    assert not np.array_equal(res.arms, now.arms)  # the delay changed the play


def test_random_delays_come_from_the_runs_own_stream():
    pol, env = vr.make_policy("lints", 3), _pool()

    def poisson(rng):
        return int(rng.poisson(4))

    res = vr.simulate(pol, env, 40, 3, seed=1, delay=poisson, batch=2)
    want = _hand(pol, env, 40, 3, 1, lambda t, rng: int(rng.poisson(4)), 2)
    np.testing.assert_array_equal(res.arms, want)
    loop = vr.simulate(pol, env, 40, 3, seed=1, delay=poisson, batch=2, fused=False)
    np.testing.assert_array_equal(loop.arms, want)
    # a block of runs: the same rows
    tail = vr.simulate(pol, env, 40, 2, seed=1, delay=poisson, batch=2, first_run=1)
    np.testing.assert_array_equal(tail.arms, res.arms[1:])
    # a delay of zero drawn from the stream is no delay at all: the policy's and the
    # environment's streams are untouched by the delays' own
    zero = vr.simulate(pol, env, 40, 3, seed=1, delay=lambda rng: int(rng.integers(0, 1)))
    np.testing.assert_array_equal(zero.arms, vr.simulate(pol, env, 40, 3, seed=1).arms)


def test_bad_delays_and_batches_fail_clearly():
    pol, env = vr.make_policy("lints", 3), _pool()
    with pytest.raises(ValueError, match="delay"):
        vr.simulate(pol, env, 5, delay=-1)
    with pytest.raises(TypeError, match="delay"):
        vr.simulate(pol, env, 5, delay=1.5)
    with pytest.raises(ValueError, match="batch"):
        vr.simulate(pol, env, 5, batch=0)
    with pytest.raises(ValueError, match="delay must draw integers >= 0, got -1 in round 1"):
        vr.simulate(pol, env, 5, delay=lambda rng: -1)
    with pytest.raises(ValueError, match="delay must draw integers >= 0, got True"):
        vr.simulate(pol, env, 5, delay=lambda rng: True)  # as delay=True: not taken as 1
    # the option named, not "no fused loop": LinTS has one, on the CPU's NumPy streams
    with pytest.raises(ValueError, match="delay=2 and batch=1 are played by the CPU's fused "
                                         "loop and the Python loop only"):
        vr.simulate(pol, env, 5, delay=2, stream="philox")
    with pytest.raises(ValueError, match="'philox-cpu' cannot run .*delay=2 and batch=3 are "
                                         "played by the CPU's fused loop"):
        vr.simulate(pol, env, 5, delay=2, batch=3, backend="philox-cpu", stream="philox")


def _observations():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    return X, X @ np.array([1.0, -0.5, 0.2, 0.0]) + rng.standard_normal(60), rng


def test_exact_posteriors_do_not_depend_on_the_order_or_batching_of_the_feedback():
    """LinTS and LinUCB given the same observations in round order, shuffled, and (LinTS)
    as one batch: the same posterior mean and covariance to rounding (Cholesky rank-one
    updates or Sherman-Morrison in another order; relative 1e-10 is a few hundred ulps
    at this conditioning, V = lam I + 60 outer products of unit-scale features)."""
    X, y, rng = _observations()
    order = rng.permutation(60)
    one, shuffled, batch = (vr.LinTS(4, eta=2.0, lam=0.5) for _ in range(3))
    for i in range(60):
        one.update(X[i:i + 1], y[i:i + 1])
    for i in order:
        shuffled.update(X[i:i + 1], y[i:i + 1])
    batch.update(X, y)
    for other in (shuffled, batch):
        np.testing.assert_allclose(other.mean, one.mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(other.cov, one.cov, rtol=1e-10, atol=1e-14)
    u, v = vr.LinUCB(4, lam=0.5), vr.LinUCB(4, lam=0.5)
    for i in range(60):
        u.update(X[i:i + 1], 0, y[i])
    for i in order:
        v.update(X[i:i + 1], 0, y[i])
    np.testing.assert_allclose(v.Vinv @ v.b, u.Vinv @ u.b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(v.Vinv, u.Vinv, rtol=1e-10, atol=1e-14)


def test_cost_of_late_feedback_pairs_the_runs():
    from scipy import stats

    from vits_ref.bandit.feedback import cost_of_late_feedback

    pol, env = vr.make_policy("lints", 3), _pool()
    rows = cost_of_late_feedback(pol, env, [(0, 1), (6, 2)], 30, 5, seed=3)
    assert [(r["delay"], r["batch"]) for r in rows] == [(0, 1), (0, 1), (6, 2)]
    assert rows[1]["diff"] == 0.0 and rows[1]["ci"] == (0.0, 0.0)  # the same runs
    now = vr.simulate(pol, env, 30, 5, seed=3).cumulative_regret[:, -1]
    late = vr.simulate(pol, env, 30, 5, seed=3, delay=6, batch=2).cumulative_regret[:, -1]
    ci = stats.ttest_1samp(late - now, 0.0).confidence_interval(0.95)
    assert rows[2]["diff"] == pytest.approx((late - now).mean(), rel=1e-12)
    assert rows[2]["ci"] == pytest.approx((ci.low, ci.high), rel=1e-12)
    with pytest.raises(ValueError, match="n_runs"):
        cost_of_late_feedback(pol, env, [(1, 1)], 10, 1)


def _schedule_by_hand(T, lags, batch):
    """The Python loop's rule, round by round: ``(order, learnt)``."""
    order, learnt, pending = [], [], []
    for t in range(T):
        pending.append((t + lags[t], t))
        if (t + 1) % batch == 0:
            order += [s for due, s in pending if due <= t]
            pending = [p for p in pending if p[0] > t]
        learnt.append(len(order))
    return order, learnt


@pytest.mark.parametrize("delay, batch", [(0, 1), (0, 3), (4, 1), (3, 4), (50, 2), (2 ** 70, 1)])
def test_the_delivery_schedule_is_the_loops_rule(delay, batch):
    T = 23
    got = delivery_schedule(T, delay, batch)
    order, learnt = _schedule_by_hand(T, [delay] * T, batch)
    assert got.order.tolist() == order and got.learnt.tolist() == learnt
    # the queue's slots: a round is learnt within span - 1 rounds of its own, and one
    # round takes them all
    gaps = [min(t for t in range(T) if got.learnt[t] > k) - s for k, s in enumerate(order)]
    assert got.span == (max(gaps) + 1 if gaps else 1)


def test_a_random_delivery_schedule_is_the_loops_rule_and_draws_the_loops_lags():
    T, batch = 60, 3
    lags = delay_rng(np.random.SeedSequence(9)).poisson(5, T).tolist()
    got = delivery_schedule(T, lambda rng: int(rng.poisson(5)), batch,
                            delay_rng(np.random.SeedSequence(9)))
    order, learnt = _schedule_by_hand(T, lags, batch)
    assert got.order.tolist() == order and got.learnt.tolist() == learnt
    assert sorted(order) != order  # out of round order: the queue is read out of order
    with pytest.raises(ValueError, match="got 1.5 in round 1"):
        delivery_schedule(5, lambda rng: 1.5, 1, None)


# the pieces with a fused loop: every kind of state (sufficient statistics, a history of
# the rounds on the logistic model, scores), inner steps with and without noise
_PIECES = {
    "linucb": lambda: (vr.make_policy("linucb", 3), _pool()),
    "random": lambda: (vr.make_policy("random", 3), _pool()),
    "laplace-logistic": lambda: (
        vr.ThompsonSampling(vr.Laplace(3, model="logistic")),
        vr.envs.hard_instance(dim=3, n_arms=5, reward="logistic", seed=0)),
    "vits-logistic": lambda: (
        vr.ThompsonSampling(vr.VITS(3, model="logistic", step_size=0.2, n_steps=3)),
        vr.envs.hard_instance(dim=3, n_arms=5, reward="logistic", seed=0)),
    "vits-i": lambda: (vr.make_policy("vits-i", 3), _pool()),
    "vits-hf-cv": lambda: (vr.make_policy("vits-hf-cv", 3), _pool()),
    "lmc": lambda: (vr.make_policy("lmc", 3), _pool()),
}
_SLOW = {"vits-logistic", "vits-i", "vits-hf-cv", "lmc"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW
                                  else n for n in _PIECES])
def test_every_fused_piece_plays_late_feedback_as_the_python_loop(monkeypatch, name):
    pol, env = _PIECES[name]()
    T, R = 30, 3
    kl = [5, 17, T] if sim.has_kl(pol) else None

    def lag(rng):
        return int(rng.integers(0, 9))

    for delay, batch in ((lag, 4), (2, 1)):
        loop = vr.simulate(pol, env, T, R, seed=3, delay=delay, batch=batch, fused=False,
                           kl_rounds=kl)
        res = vr.simulate(pol, env, T, R, seed=3, delay=delay, batch=batch, kl_rounds=kl)
        assert res.fused and not loop.fused
        np.testing.assert_array_equal(res.arms, loop.arms)
        np.testing.assert_array_equal(res.regret, loop.regret)
        if kl:  # two formulas of the KL, the fused body's and the engine's: to rounding,
            # as without a delay (tests/test_simulate.py)
            np.testing.assert_allclose(res.kl, loop.kl, rtol=1e-10, atol=1e-10)
    # chunks of one round and batches of one run: the pending updates' step noise is
    # carried from chunk to chunk
    monkeypatch.setattr(sim, "_MEMORY_BUDGET", 1)
    tiny = vr.simulate(pol, env, T, R, seed=3, delay=2, batch=1, kl_rounds=kl, n_threads=1)
    np.testing.assert_array_equal(tiny.arms, res.arms)
    np.testing.assert_array_equal(tiny.regret, res.regret)


def test_late_feedback_chunked_and_in_blocks_of_runs_is_bit_identical(monkeypatch):
    pol, env = vr.make_policy("vits-ii", 3), _pool()

    def lag(rng):
        return int(rng.poisson(6))

    whole = vr.simulate(pol, env, 40, 4, seed=8, delay=lag, batch=3, kl_rounds=[10, 40])
    for budget in (1, 7 * sim._bytes_per_round(sim.fused_spec(pol), 3, 5)):
        monkeypatch.setattr(sim, "_MEMORY_BUDGET", budget)
        for threads in (1, 2):
            res = vr.simulate(pol, env, 40, 4, seed=8, delay=lag, batch=3, kl_rounds=[10, 40],
                              n_threads=threads)
            np.testing.assert_array_equal(res.arms, whole.arms)
            np.testing.assert_array_equal(res.kl, whole.kl)
    block = vr.simulate(pol, env, 40, 2, seed=8, delay=lag, batch=3, first_run=2)
    np.testing.assert_array_equal(block.arms, whole.arms[2:])


def test_a_divergence_under_late_feedback_is_the_python_loops_error():
    """Named at the number of observations of the failed update (the first, learnt at the
    end of the fourth round here), as the engine's own update names it."""
    env = vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)
    pol = vr.ThompsonSampling(vr.VITS(5, variant="II", schedule="constant", step_size=1.0))
    errors = []
    for fused in (True, False):
        with pytest.raises(vr.DivergenceError) as err:
            vr.simulate(pol, env, 60, 2, seed=0, delay=3, batch=2, fused=fused)
        errors.append(err.value)
    # the same update, run and step size (the fused loop's message adds its own range
    # check of the state, as without a delay)
    fused, loop = ((e.engine, e.round, e.run, e.step_size) for e in errors)
    assert fused == loop == ("VITS-II", 1, 0, 1.0)
