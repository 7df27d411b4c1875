"""The VTS policy and its one-component baseline NIG-TS (vits_ref.inference.vts).

- K = 1 is the exact NIG posterior after any sequence of updates (an independent closed
  form by explicit inverses, 1e-10);
- the Thompson scores follow their laws (Student t for one component, the means of
  eqs. 15-17 for mixtures);
- the compiled multi-run driver reproduces ``vr.simulate``'s Python loop number for number;
- the public API: shapes, contexts (shared or per arm), growing histories, seeds, errors.
"""

import numpy as np
import pytest
from scipy import stats

import vits_ref as vr
from vits_ref.bandit.vts import simulate_vts
from vits_ref.reference import cavi as ref


def _nig_closed_form(X, y, u0, V0, a0, b0):
    P0 = np.linalg.inv(V0)
    V = np.linalg.inv(P0 + X.T @ X)
    u = V @ (P0 @ u0 + X.T @ y)
    beta = b0 + 0.5 * (y @ y + u0 @ P0 @ u0 - u @ np.linalg.inv(V) @ u)
    return u, V, a0 + 0.5 * len(y), beta


@pytest.mark.parametrize("cls", ["VTS", "NIGTS"])
def test_one_component_is_the_exact_nig_posterior(cls):
    """After 300 updates spread over 3 arms in a random order (per-arm contexts, rewards
    with a changing noise level), every arm's factors equal the NIG closed form of its
    own data to 1e-10 relative (measured: ~1e-13)."""
    rng = np.random.default_rng(2)
    d, A = 3, 3
    u0, V0, a0, b0 = np.array([0.3, -0.2, 0.1]), np.diag([1.5, 0.7, 2.0]), 1.7, 0.8
    if cls == "VTS":
        pol = vr.VTS(d, A, n_components=1, u0=u0, V0=V0, alpha0=a0, beta0=b0, seed=0)
    else:
        pol = vr.NIGTS(d, A, u0=u0, V0=V0, alpha0=a0, beta0=b0, seed=0)
    data = {a: ([], []) for a in range(A)}
    for t in range(300):
        X = rng.standard_normal((A, d))
        arm = int(rng.integers(A)) if t % 3 else pol.select(X)
        r = float(X[arm] @ [1.0, -2.0, 0.5] + (0.1 + t / 100) * rng.standard_normal())
        pol.update(X, arm, r)
        data[arm][0].append(X[arm])
        data[arm][1].append(r)
    for a in range(A):
        Xa, ya = np.array(data[a][0]), np.array(data[a][1])
        u, V, alpha, beta = _nig_closed_form(Xa, ya, u0, V0, a0, b0)
        post = pol.posterior(a)
        np.testing.assert_allclose(post["u"][0], u, rtol=1e-10)
        np.testing.assert_allclose(post["V"][0], V, rtol=1e-10, atol=1e-14)
        assert post["alpha"][0] == pytest.approx(alpha, rel=1e-12)
        assert post["beta"][0] == pytest.approx(beta, rel=1e-10)
        assert post["gamma"][0] == pytest.approx(1.0 + len(ya), rel=1e-12)
        # the same as the reference module's closed form (a second, separate writing)
        np.testing.assert_allclose(ref.nig_posterior(Xa, ya, u0, V0, a0, b0)[0], u,
                                   rtol=1e-10)
        np.testing.assert_allclose(pol.history(a)[1], ya)
        assert np.all(pol.responsibilities(a) == 1.0)
    assert pol.n_obs == 300


def test_one_component_scores_are_student_t():
    """With one component the Thompson score ``x w`` (``s2 ~ IG(alpha, beta)``,
    ``w ~ N(u, s2 V)``) is Student t with ``2 alpha`` degrees of freedom, location ``x u``
    and scale ``sqrt(beta/alpha x V x)``. KS test on 4000 scores from a fixed seed
    (p > 1e-3; a scale 5% off gives p ~ 1e-4 at this size)."""
    rng = np.random.default_rng(4)
    pol = vr.NIGTS(2, 1, seed=3)
    for _ in range(6):
        x = rng.random(2)
        pol.update(x[None], 0, float(x @ [1.0, 2.0] + rng.standard_normal()))
    x = np.array([[0.7, 0.4]])
    post = pol.posterior(0)
    loc = float(x[0] @ post["u"][0])
    scale = float(np.sqrt(post["beta"][0] / post["alpha"][0] * x[0] @ post["V"][0] @ x[0]))
    scores = []
    for _ in range(4000):
        pol.select(x)
        scores.append(pol._scores[0])
    law = stats.t(df=2 * post["alpha"][0], loc=loc, scale=scale)
    assert stats.kstest(scores, law.cdf).pvalue > 1e-3


@pytest.mark.parametrize("scoring", ["sample_z", "sample_pi", "expected_pi"])
def test_mixture_scores_have_the_posterior_mean(scoring):
    """Eqs. (15)-(17) all have mean ``sum_k E[pi_k] x u_k`` (the factors are independent):
    the mean of 6000 scores is within 4.5 standard errors of it."""
    rng = np.random.default_rng(8)
    pol = vr.VTS(2, 1, n_components=3, scoring=scoring, seed=1)
    for _ in range(40):
        x = rng.random(2)
        pol.update(x, 0, float(x @ [1.0, 1.0] * rng.choice([0.0, 3.0]) + rng.standard_normal()))
    x = np.array([0.3, 0.9])
    want = pol.expected_rewards(x)[0]
    scores = np.empty(6000)
    for i in range(scores.size):
        pol.select(x)
        scores[i] = pol._scores[0]
    se = scores.std() / np.sqrt(scores.size)
    assert abs(scores.mean() - want) < 4.5 * se
    assert pol.diagnostics["expected_rewards"][0] == pytest.approx(want, rel=1e-12)


def test_means_only_scoring_is_greedy():
    """``sample_params=False`` with ``"expected_pi"``: the score is the posterior mean, so the
    choice is deterministic and equals ``argmax expected_rewards``."""
    pol = vr.VTS(2, 3, n_components=2, scoring="expected_pi", sample_params=False, seed=0)
    rng = np.random.default_rng(0)
    for t in range(30):
        X = rng.random((3, 2))
        pol.update(X, t % 3, float(rng.standard_normal() + t % 3))
    X = rng.random((3, 2))
    assert pol.select(X) == int(np.argmax(pol.expected_rewards(X)))
    np.testing.assert_allclose(pol._scores, pol.expected_rewards(X), rtol=1e-12)


@pytest.mark.parametrize("K,scoring", [(1, "sample_pi"), (2, "sample_pi"), (3, "sample_z"),
                                       (2, "expected_pi")])
def test_compiled_runs_equal_the_python_loop(K, scoring):
    """``simulate_vts`` (one compiled prange driver) and ``vr.simulate`` (the Python loop
    over ``select``/``update``) consume the same numbers: identical arms and regret."""
    env = vr.envs.vts_scenario("B")
    pol = vr.VTS(2, 2, n_components=K, scoring=scoring, seed=0)
    a = vr.simulate(pol, env, 120, n_runs=3, seed=4, fused=False)
    b = simulate_vts(pol, env, 120, 3, seed=4)
    assert not a.fused and b.fused
    np.testing.assert_array_equal(a.arms, b.arms)
    np.testing.assert_array_equal(a.regret, b.regret)
    assert b.cavi_iterations.shape == (3, 120) and b.reward_sq_error.shape == (3, 120, 2)
    assert (b.cavi_iterations == 0).all() == (K == 1)
    assert b.mse().shape == (120, 2)


def test_per_arm_contexts_on_the_hard_instance():
    """The hard instance gives every arm its own context row (new instance per run): the
    driver and the Python loop still agree, and the thread count changes nothing."""
    env = vr.envs.hard_instance(dim=4, n_arms=5, seed=0)
    pol = vr.VTS(4, 5, n_components=2, seed=0)
    a = vr.simulate(pol, env, 60, n_runs=2, seed=1, new_instance_per_run=True,
                    fused=False)
    b = simulate_vts(pol, env, 60, 2, seed=1, new_instance_per_run=True, n_threads=1)
    c = simulate_vts(pol, env, 60, 2, seed=1, new_instance_per_run=True, n_threads=2)
    np.testing.assert_array_equal(a.arms, b.arms)
    np.testing.assert_array_equal(b.regret, c.regret)


def test_reproducible_and_fresh():
    """Same seed, same choices; ``fresh(seed)`` is the policy at its prior with that seed."""
    X = np.array([[0.2, 0.9], [0.8, 0.1]])

    def play(pol):
        seq = []
        for t in range(25):
            arm = pol.select(X)
            pol.update(X, arm, float(t % 2))
            seq.append(arm)
        return seq

    pol = vr.VTS(2, 2, seed=7)
    first = play(pol)
    assert play(vr.VTS(2, 2, seed=7)) == first
    fresh = pol.fresh(7)
    assert fresh.n_obs == 0 and fresh.counts.tolist() == [0, 0]
    assert play(fresh) == first
    assert repr(fresh).startswith("VTS(dim=2")
    assert vr.NIGTS(2, 2).fresh(1).n_components == 1
    assert isinstance(vr.NIGTS(2, 2).fresh(1), vr.NIGTS)


def test_shared_context_and_growing_history():
    """A (d,) context is every arm's; the histories double past their first 16 rows and keep
    every observation; the posterior has the documented keys and shapes."""
    pol = vr.VTS(2, 2, n_components=3, seed=0)
    rng = np.random.default_rng(1)
    xs, ys = [], []
    for _ in range(40):
        x = rng.random(2)
        r = float(rng.standard_normal())
        pol.update(x, 1, r)
        xs.append(x)
        ys.append(r)
    X1, y1 = pol.history(1)
    np.testing.assert_array_equal(X1, np.array(xs))
    np.testing.assert_array_equal(y1, np.array(ys))
    assert pol.history(0)[0].shape == (0, 2)
    R = pol.responsibilities(1)
    assert R.shape == (40, 3)
    np.testing.assert_allclose(R.sum(axis=1), 1.0)
    post = pol.posterior(1)
    shapes = {k: v.shape for k, v in post.items()}
    assert shapes == {"gamma": (3,), "u": (3, 2), "V": (3, 2, 2), "alpha": (3,), "beta": (3,)}
    assert post["gamma"].sum() == pytest.approx(3.0 + 40)
    assert post["alpha"].sum() == pytest.approx(3.0 + 20)
    assert np.all(np.linalg.eigvalsh(post["V"]) > 0)
    d = pol.diagnostics
    assert d["arm"] == 1 and 1 <= d["iterations"] <= pol.max_iter
    assert len(d["elbo_trace"]) == d["iterations"]


def test_default_prior_breaks_the_symmetry():
    """The default ``u0_k = k 1_d`` (the authors' code); ``NIGTS`` centres at 0."""
    np.testing.assert_array_equal(vr.VTS(2, 1, n_components=3)._prior.u0,
                                  [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(vr.NIGTS(2, 1)._prior.u0, [[0, 0]])
    assert vr.VTS(2, 1).scoring == "sample_pi" and vr.VTS(2, 1).n_components == 2


def test_errors_name_the_argument():
    pol = vr.VTS(2, 3, seed=0)
    with pytest.raises(ValueError, match=r"contexts must have shape \(2,\)"):
        pol.select(np.ones((2, 2)))
    with pytest.raises(ValueError, match="arm must be in"):
        pol.update(np.ones(2), 3, 1.0)
    with pytest.raises(TypeError, match="arm must be an integer"):
        pol.update(np.ones(2), 1.0, 1.0)
    with pytest.raises(ValueError, match="contexts contains NaN"):
        pol.select(np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="reward must be finite"):
        pol.update(np.ones(2), 0, np.nan)
    with pytest.raises(ValueError, match="scoring must be one of"):
        vr.VTS(2, 2, scoring="thompson")
    with pytest.raises(ValueError, match="beta0 must be > 0"):
        vr.VTS(2, 2, beta0=-1.0)
    with pytest.raises(ValueError, match="n_components must be >= 1"):
        vr.VTS(2, 2, n_components=0)
    with pytest.raises(ValueError, match="tol must be >= 0"):
        vr.VTS(2, 2, tol=-1.0)
    with pytest.raises(TypeError, match="sample_params"):
        vr.VTS(2, 2, sample_params="yes")
    with pytest.raises(ValueError, match="V0 must have shape"):
        vr.VTS(2, 2, V0=np.ones((3, 3)))
    with pytest.raises(TypeError, match="policy must be a vits_ref.VTS"):
        simulate_vts(vr.LinUCB(2), vr.envs.vts_scenario("A"), 5)
    with pytest.raises(ValueError, match="does not match env"):
        simulate_vts(vr.VTS(3, 2), vr.envs.vts_scenario("A"), 5)
