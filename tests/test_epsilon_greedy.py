"""Epsilon-greedy on the ridge estimate (:class:`vits_ref.EpsilonGreedy`) against a plain
NumPy loop: the ridge solve written out, the same two uniforms per round."""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import engine_streams


def _reference_arms(seed, epsilon, lam, X, rewards):
    """The rule written out: ``theta_hat = solve(lam I + sum x x^T, sum r x)``; two
    uniforms ``(u, v)`` per round from the policy's sampling stream; ``floor(v K)`` if
    ``u < epsilon``, else the first argmax of ``X theta_hat``. Also says which rounds
    explored."""
    rng, _ = engine_streams(seed)
    n, K, d = X.shape
    V, b = lam * np.eye(d), np.zeros(d)
    arms, explored = [], []
    for t in range(n):
        theta = np.linalg.solve(V, b)
        u, v = rng.random(2)
        arm = int(v * K) if u < epsilon else int(np.argmax(X[t] @ theta))
        arms.append(arm)
        explored.append(u < epsilon)
        V += np.outer(X[t, arm], X[t, arm])
        b += rewards[t] * X[t, arm]
    return arms, explored, np.linalg.solve(V, b)


def _rounds(rng, n=300, K=6, d=3):
    X = rng.standard_normal((n, K, d))
    theta = np.array([1.0, -0.5, 0.25])[:d]
    rewards = X[np.arange(n), 0] @ theta + rng.standard_normal(n)  # rewards of arm 0's row
    return X, rewards


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_arms_match_a_plain_numpy_loop(epsilon):
    X, rewards = _rounds(np.random.default_rng(1))
    want, explored, theta = _reference_arms(7, epsilon, 0.7, X, rewards)
    pol = vr.EpsilonGreedy(3, epsilon=epsilon, lam=0.7, seed=7)
    got = []
    for t in range(X.shape[0]):
        got.append(pol.select(X[t]))
        pol.update(X[t], got[-1], rewards[t])
    assert got == want
    # both branches ran (0 < epsilon < 1), none or all explored at the ends
    n_explored = sum(explored)
    assert {0.0: n_explored == 0, 1.0: n_explored == len(explored)}.get(
        epsilon, 0 < n_explored < len(explored))
    assert pol.n_obs == X.shape[0]
    np.testing.assert_allclose(pol.theta_hat, theta, rtol=1e-9, atol=1e-12)


def test_epsilon_zero_is_greedy_and_one_is_uniform():
    rng = np.random.default_rng(3)
    X, rewards = _rounds(rng, n=50)
    greedy = vr.EpsilonGreedy(3, epsilon=0.0, lam=1.0, seed=0)
    played = []
    for t in range(50):
        # the greedy arm of the ridge estimate, whatever the draws: argmax of the rows'
        # least-squares fit with the ridge rows sqrt(lam) I appended
        A = np.vstack([np.array(played).reshape(-1, 3), np.eye(3)])
        y = np.concatenate([rewards[:t], np.zeros(3)])
        theta = np.linalg.lstsq(A, y, rcond=None)[0]
        arm = greedy.select(X[t])
        assert arm == int(np.argmax(X[t] @ theta))
        played.append(X[t, arm])
        greedy.update(X[t], arm, rewards[t])
    # epsilon = 1: floor(v K) for the second uniform of each round, whatever is learnt
    K, n = 4, 4000
    uniform = vr.EpsilonGreedy(2, epsilon=1.0, seed=5)
    stream, _ = engine_streams(5)
    Xu = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [-1.0, 2.0]])
    counts = np.zeros(K, dtype=int)
    for _ in range(n):
        arm = uniform.select(Xu)
        assert arm == int(stream.random(2)[1] * K)
        counts[arm] += 1
        uniform.update(Xu, arm, 10.0 if arm == 2 else 0.0)  # arm 2 pays: greedy would stick
    # uniform: each arm's count within 5 binomial standard deviations of n/K
    assert np.all(np.abs(counts - n / K) < 5 * np.sqrt(n * (1 / K) * (1 - 1 / K)))


def test_ties_go_to_the_lowest_index():
    pol = vr.EpsilonGreedy(2, epsilon=0.0, seed=0)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    assert pol.select(X) == 0  # all scores 0 at the prior
    pol.update(X, 0, 1.0)
    assert pol.select(X) == 0  # rows 0 and 2 tie at the top


def test_fresh_restarts_at_the_prior_with_its_seed():
    X, rewards = _rounds(np.random.default_rng(2), n=40)
    pol = vr.EpsilonGreedy(3, epsilon=0.5, lam=2.0, seed=1)
    for t in range(40):
        pol.update(X[t], pol.select(X[t]), rewards[t])
    a, b = pol.fresh(9), vr.EpsilonGreedy(3, epsilon=0.5, lam=2.0, seed=9)
    assert a.n_obs == 0 and np.array_equal(a.b, np.zeros(3))
    assert [a.select(X[t]) for t in range(40)] == [b.select(X[t]) for t in range(40)]
    assert repr(a) == "EpsilonGreedy(dim=3, epsilon=0.5, lam=2.0)"


@pytest.mark.parametrize("kwargs, exc, name", [
    ({"epsilon": -0.1}, ValueError, "epsilon"), ({"epsilon": 1.5}, ValueError, "epsilon"),
    ({"epsilon": float("nan")}, ValueError, "epsilon"), ({"epsilon": "0.1"}, TypeError, "epsilon"),
    ({"lam": 0.0}, ValueError, "lam"), ({"lam": -1.0}, ValueError, "lam"),
    ({"lam": float("inf")}, ValueError, "lam"), ({"dim": 0}, ValueError, "dim"),
])
def test_bad_arguments_name_themselves(kwargs, exc, name):
    args = {"dim": 2, **kwargs}
    with pytest.raises(exc, match=name):
        vr.EpsilonGreedy(**args)


def test_bad_contexts_leave_the_draws_alone():
    """A refused select uses up no draw: the next valid round plays as if it never came."""
    a, b = vr.EpsilonGreedy(2, epsilon=0.5, seed=4), vr.EpsilonGreedy(2, epsilon=0.5, seed=4)
    with pytest.raises(ValueError, match="contexts"):
        a.select(np.ones((3, 5)))
    X = np.random.default_rng(0).standard_normal((20, 3, 2))
    assert [a.select(x) for x in X] == [b.select(x) for x in X]
