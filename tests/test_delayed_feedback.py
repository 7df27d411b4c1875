"""Late and batched feedback in :func:`vits_ref.simulate` (``delay=``, ``batch=``).

Checked against select/update loops written here from the documented rule: round ``t``'s
reward is due after round ``t + delay_t`` and learnt, in round order, at the end of every
``batch``-th round. Exact engines end at the same posterior whatever the order of their
observations (to rounding).
"""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import child, delay_rng


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
    assert not res.fused  # only the Python loop plays late feedback
    want = _hand(pol, env, 30, 3, 5, lambda t, rng: delay, batch)
    np.testing.assert_array_equal(res.arms, want)
    now = vr.simulate(pol, env, 30, 3, seed=5)
    assert not np.array_equal(res.arms, now.arms)  # the delay changed the play


def test_random_delays_come_from_the_runs_own_stream():
    pol, env = vr.make_policy("lints", 3), _pool()

    def poisson(rng):
        return int(rng.poisson(4))

    res = vr.simulate(pol, env, 40, 3, seed=1, delay=poisson, batch=2)
    want = _hand(pol, env, 40, 3, 1, lambda t, rng: int(rng.poisson(4)), 2)
    np.testing.assert_array_equal(res.arms, want)
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
    # the reason, not "no fused loop": LinTS has one, which learns each reward at once
    with pytest.raises(ValueError, match="fused loop learns each round's reward at once: "
                                         "delay=2 and batch=1 run in the Python loop"):
        vr.simulate(pol, env, 5, delay=2, fused=True)
    with pytest.raises(ValueError, match="learns each round's reward at once"):
        vr.simulate(pol, env, 5, delay=2, backend="fused-cpu")


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
