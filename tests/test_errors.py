"""Bad input raises ValueError/TypeError naming the argument; divergence raises DivergenceError.

docs/architecture.md, "Conventions": "Bad input raises ValueError or TypeError with a
message that names the argument and the fix. A run that diverges (non-finite state) stops
with a dedicated error naming the round, the engine and the step size, never a silent NaN
regret curve."
"""

import re

import numpy as np
import pytest

import vits_ref as vr

NAN = float("nan")


# ---------------------------------------------------------------------------------------
# engines
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs,exc,name", [
    ((0,), {}, ValueError, "dim"),
    ((-2,), {}, ValueError, "dim"),
    ((2.0,), {}, TypeError, "dim"),
    ((True,), {}, TypeError, "dim"),
    ((3,), {"step_size": 0}, ValueError, "step_size"),
    ((3,), {"step_size": -1}, ValueError, "step_size"),
    ((3,), {"step_size": float("inf")}, ValueError, "step_size"),
    ((3,), {"step_size": "0.1"}, TypeError, "step_size"),
    ((3,), {"cov_step_size": 0.0}, ValueError, "cov_step_size"),
    ((3,), {"n_steps": 0}, ValueError, "n_steps"),
    ((3,), {"n_steps": 1.5}, TypeError, "n_steps"),
    ((3,), {"n_mc": 0}, ValueError, "n_mc"),
    ((3,), {"variant": "III"}, ValueError, "variant"),
    ((3,), {"schedule": "cosine"}, ValueError, "schedule"),
    ((3,), {"eta": NAN}, ValueError, "eta"),
    ((3,), {"eta": 0.0}, ValueError, "eta"),
    ((3,), {"lam": -1}, ValueError, "lam"),
    ((3,), {"model": "poisson"}, ValueError, "model"),
    ((3,), {"symmetrize": "yes"}, TypeError, "symmetrize"),
    ((3,), {"R": 0.0}, ValueError, "R"),
    ((3,), {"max_steps": 0}, ValueError, "max_steps"),
    ((3,), {"horizon": 0}, ValueError, "horizon"),
    ((3,), {"seed": -1}, ValueError, "seed"),
    ((3,), {"seed": 1.5}, TypeError, "seed"),
])
def test_vits_bad_arguments(args, kwargs, exc, name):
    with pytest.raises(exc, match=rf"\b{name}\b"):
        vr.VITS(*args, **kwargs)


@pytest.mark.parametrize("engine", [vr.LinTS, vr.Langevin])
@pytest.mark.parametrize("kwargs,exc,name", [
    ({"dim": 0}, ValueError, "dim"),
    ({"dim": 3, "eta": -1.0}, ValueError, "eta"),
    ({"dim": 3, "lam": 0.0}, ValueError, "lam"),
    ({"dim": 3, "lam": NAN}, ValueError, "lam"),
])
def test_other_engines_bad_arguments(engine, kwargs, exc, name):
    with pytest.raises(exc, match=rf"\b{name}\b"):
        engine(**kwargs)


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"step_size": 0.0}, ValueError, "step_size"),
    ({"n_steps": 0}, ValueError, "n_steps"),
    ({"schedule": "theoretical"}, ValueError, "schedule"),
])
def test_langevin_bad_arguments(kwargs, exc, name):
    with pytest.raises(exc, match=rf"\b{name}\b"):
        vr.Langevin(3, **kwargs)


@pytest.mark.parametrize("engine", [lambda: vr.VITS(3, seed=0), lambda: vr.LinTS(3, seed=0),
                                    lambda: vr.Langevin(3, seed=0)],
                         ids=["VITS", "LinTS", "Langevin"])
@pytest.mark.parametrize("features,rewards,name", [
    (np.array([[1.0, NAN, 0.0]]), np.ones(1), "features"),
    (np.array([[1.0, np.inf, 0.0]]), np.ones(1), "features"),
    (np.ones((2, 4)), np.ones(2), "features"),          # wrong number of columns
    (np.ones(3), np.ones(1), "features"),               # 1-D features
    (np.ones((2, 3)), np.ones(3), "rewards"),           # mismatched length
    (np.ones((2, 3)), np.array([1.0, NAN]), "rewards"),
    (np.ones((2, 3)), np.ones((2, 1)), "rewards"),      # 2-D rewards
])
def test_update_bad_observations(engine, features, rewards, name):
    eng = engine()
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        eng.update(features, rewards)
    assert eng.n_obs == 0  # nothing was added


def test_update_non_numeric_features():
    with pytest.raises(TypeError, match="features"):
        vr.VITS(2).update([["a", "b"]], [1.0])


def test_sample_bad_n():
    eng = vr.VITS(2, seed=0)
    with pytest.raises(ValueError, match=r"\bn\b"):
        eng.sample(0)
    with pytest.raises(TypeError, match=r"\bn\b"):
        eng.sample(2.0)


# ---------------------------------------------------------------------------------------
# policies
# ---------------------------------------------------------------------------------------

def test_policy_bad_arguments():
    with pytest.raises(ValueError, match="alpha"):
        vr.LinUCB(3, alpha=-0.1)
    with pytest.raises(ValueError, match="lam"):
        vr.LinUCB(3, lam=0.0)
    with pytest.raises(TypeError, match="engine"):
        vr.ThompsonSampling("vits")
    pol = vr.ThompsonSampling(vr.LinTS(3, seed=0))
    with pytest.raises(ValueError, match="contexts"):
        pol.select(np.ones((4, 2)))
    with pytest.raises(ValueError, match="contexts"):
        pol.select(np.full((4, 3), NAN))
    with pytest.raises(ValueError, match="arm"):
        pol.update(np.ones((4, 3)), 4, 1.0)
    with pytest.raises(TypeError, match="arm"):
        pol.update(np.ones((4, 3)), 1.0, 1.0)
    with pytest.raises(ValueError, match="reward"):
        pol.update(np.ones((4, 3)), 1, NAN)


# ---------------------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def env():
    return vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"n_rounds": 0}, ValueError, "n_rounds"),
    ({"n_rounds": 2.5}, TypeError, "n_rounds"),
    ({"n_runs": 0}, ValueError, "n_runs"),
    ({"kl_rounds": [0]}, ValueError, "kl_rounds"),
    ({"kl_rounds": [11]}, ValueError, "kl_rounds"),
    ({"kl_rounds": [1.5]}, TypeError, "kl_rounds"),
    ({"kl_rounds": [[1, 2]]}, TypeError, "kl_rounds"),
    ({"seed": -3}, ValueError, "seed"),
    ({"seed": np.random.default_rng(0)}, TypeError, "seed"),
    ({"n_threads": 0}, ValueError, "n_threads"),
])
def test_simulate_bad_arguments(env, kwargs, exc, name):
    args = {"n_rounds": 10, **kwargs}
    with pytest.raises(exc, match=name):
        vr.simulate("lints", env, **args)


def test_simulate_bad_policy_and_env(env):
    with pytest.raises(ValueError, match="policy"):
        vr.simulate("thompson", env, n_rounds=5)
    with pytest.raises(TypeError, match="policy"):
        vr.simulate(object(), env, n_rounds=5)
    with pytest.raises(TypeError, match="env"):
        vr.simulate("lints", "pool", n_rounds=5)
    with pytest.raises(ValueError, match="dim"):
        vr.simulate(vr.ThompsonSampling(vr.LinTS(3)), env, n_rounds=5)
    with pytest.raises(ValueError, match="fused"):
        vr.simulate(vr.ThompsonSampling(vr.VITS(5, schedule="theoretical", horizon=5)), env,
                    n_rounds=5, fused=True)
    with pytest.raises(TypeError):
        vr.make_policy("lints", 5, alpha=1.0)  # LinTS has no alpha


# ---------------------------------------------------------------------------------------
# divergence
# ---------------------------------------------------------------------------------------

def _check_divergence(err, engine, step, run):
    assert err.engine == engine
    assert err.step_size == step
    assert err.run == run
    assert err.round >= 1
    msg = str(err)
    assert engine in msg
    assert f"round {err.round}" in msg
    assert re.search(rf"step size {step:.4g}\b", msg)
    assert isinstance(err, FloatingPointError)  # DivergenceError subclasses it


@pytest.mark.parametrize("fused", [None, False])
def test_vits_divergence_in_simulate(env, fused):
    # h eta lmax(V_1) ~ |x|^2 ~ d (1 + zeta^2) = 10 >> 2: diverges in the first rounds
    pol = vr.ThompsonSampling(vr.VITS(5, variant="II", schedule="constant", step_size=1.0))
    with pytest.raises(vr.DivergenceError) as info:
        vr.simulate(pol, env, n_rounds=50, n_runs=3, seed=0, fused=fused)
    _check_divergence(info.value, "VITS-II", 1.0, 0)
    assert "in run 0" in str(info.value)


def test_vits_divergence_same_round_fused_and_python(env):
    # constant h = 0.03: h lmax(V_t) passes 2 after ~17 rounds; the fused loop and the
    # Python loop consume the same numbers, so they must diverge at the same round
    found = []
    for fused in (True, False):
        pol = vr.ThompsonSampling(vr.VITS(5, variant="II", schedule="constant", step_size=0.03))
        with pytest.raises(vr.DivergenceError) as info:
            vr.simulate(pol, env, n_rounds=100, n_runs=3, seed=4, fused=fused)
        found.append((info.value.round, info.value.run, info.value.engine))
    assert found[0] == found[1]
    assert found[0][0] > 5  # not a first-round blow-up: the rounds are really compared


def test_divergence_names_the_run(env):
    # decayed h0 = 0.1 at seed 4: runs 0 and 1 survive the first rounds, run 2 does not
    for fused in (True, False):
        pol = vr.ThompsonSampling(vr.VITS(5, variant="II", schedule="decayed", step_size=0.1))
        with pytest.raises(vr.DivergenceError) as info:
            vr.simulate(pol, env, n_rounds=100, n_runs=6, seed=4, fused=fused)
        assert info.value.run == 2
        assert "in run 2" in str(info.value)


@pytest.mark.parametrize("fused", [True, False])
def test_vits_i_divergence_in_simulate(env, fused):
    pol = vr.ThompsonSampling(vr.VITS(5, variant="I", schedule="constant", step_size=1.0))
    with pytest.raises(vr.DivergenceError) as info:
        vr.simulate(pol, env, n_rounds=50, n_runs=2, seed=4, fused=fused)
    _check_divergence(info.value, "VITS-I", 1.0, 0)


@pytest.mark.parametrize("variant,name", [
    ("I", "VITS-I"), ("II", "VITS-II"), ("hessian_free", "VITS-II-HF")])
def test_vits_divergence_engine_api(env, variant, name):
    eng = vr.VITS(5, variant=variant, schedule="constant", step_size=1.0, seed=0)
    real = env.realise(50, rng=0)
    with pytest.raises(vr.DivergenceError) as info:
        for t in range(50):
            eng.update(real.contexts[t, :1], real.rewards[t, :1])
    _check_divergence(info.value, name, 1.0, None)
    # the failed update was rolled back: n_obs is that of the round before
    assert info.value.round == eng.n_obs + 1


@pytest.mark.parametrize("fused", [None, False])
def test_langevin_divergence(env, fused):
    pol = vr.ThompsonSampling(vr.Langevin(5, schedule="constant", step_size=10.0))
    with pytest.raises(vr.DivergenceError) as info:
        vr.simulate(pol, env, n_rounds=50, n_runs=2, seed=0, fused=fused)
    _check_divergence(info.value, "LMC-TS", 10.0, 0)


def test_langevin_divergence_engine_api(env):
    eng = vr.Langevin(5, schedule="constant", step_size=10.0, seed=0)
    real = env.realise(50, rng=0)
    with pytest.raises(vr.DivergenceError) as info:
        for t in range(50):
            eng.update(real.contexts[t, :1], real.rewards[t, :1])
    _check_divergence(info.value, "LMC-TS", 10.0, None)


def test_decayed_divergence_reports_the_step_in_force(env):
    # decayed h_t = h0/(eta t): the error must report h at the diverging round, not h0
    pol = vr.ThompsonSampling(vr.VITS(5, variant="II", schedule="decayed", step_size=5.0))
    for fused in (None, False):
        with pytest.raises(vr.DivergenceError) as info:
            vr.simulate(pol, env, n_rounds=50, n_runs=1, seed=0, fused=fused)
        err = info.value
        assert err.step_size == pytest.approx(5.0 / err.round, rel=1e-15)


def test_divergence_error_pickles():
    import pickle

    err = vr.DivergenceError("VITS-II", 3, 0.1, run=2)
    back = pickle.loads(pickle.dumps(err))
    assert (back.engine, back.round, back.step_size, back.run) == ("VITS-II", 3, 0.1, 2)
    assert str(back) == str(err)


# ---------------------------------------------------------------------------------------
# policies and simulate: arguments at the edges
# ---------------------------------------------------------------------------------------


def test_per_arm_out_of_range_arm_or_rows():
    pol = vr.PerArm(vr.LinTS(2), 3, seed=0)
    with pytest.raises(ValueError, match=r"arm must be in \[0, 3\)"):
        pol.update(np.ones((3, 2)), 5, 1.0)
    with pytest.raises(ValueError, match="one row per arm"):
        pol.update(np.ones((1, 2)), 2, 1.0)  # was an IndexError
    assert pol.n_obs == 0


def test_random_policy_contexts():
    pol = vr.RandomPolicy(seed=0)
    with pytest.raises(ValueError, match="contexts must be 2-D"):
        pol.select(1.0)
    with pytest.raises(ValueError, match="at least one row"):
        pol.select(np.empty((0, 2)))
    assert 0 <= pol.select(np.ones((4, 2))) < 4


def test_thompson_select_on_zero_rows_uses_no_draw():
    pol = vr.ThompsonSampling(vr.LinTS(2, seed=0))
    with pytest.raises(ValueError, match="at least one row"):
        pol.select(np.empty((0, 2)))
    # the sampling stream is untouched: the next draw is the fresh engine's first
    assert np.array_equal(pol.engine.sample(1), vr.LinTS(2, seed=0).sample(1))
    with pytest.raises(ValueError, match="at least one row"):
        vr.LinUCB(2).select(np.empty((0, 2)))


def test_empty_kl_rounds_means_no_kl():
    env = vr.envs.pool(dim=2, n_arms=3, seed=0)
    a = vr.simulate("lints", env, 5, seed=0, kl_rounds=[])
    b = vr.simulate("lints", env, 5, seed=0)
    assert a.kl.shape == b.kl.shape == (1, 0) and np.array_equal(a.regret, b.regret)
    assert vr.simulate("linucb", env, 5, seed=0, kl_rounds=[]).kl is None


def test_n_jobs_is_checked_on_every_path():
    env = vr.envs.pool(dim=2, n_arms=3, seed=0)
    for fused in (True, False):
        for bad, exc in (("2", TypeError), (2.0, TypeError), (0, ValueError),
                         (-1, ValueError), (True, TypeError)):
            with pytest.raises(exc, match="n_jobs"):
                vr.simulate("lints", env, 5, seed=0, n_jobs=bad, fused=fused)


@pytest.mark.parametrize("name", ["linucb", "lmc", "random"])
def test_kl_rounds_without_a_kl_names_the_policy(name):
    env = vr.envs.pool(dim=2, n_arms=3, seed=0)
    with pytest.raises(ValueError, match="kl_rounds needs a Gaussian posterior.*policy"):
        vr.simulate(name, env, 5, seed=0, kl_rounds=[5])
