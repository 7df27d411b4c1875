"""simulate(): fused compiled loop vs Python loop vs NumPy reference, seeding, diagnostics.

The fused loop (kernels/bandit.py), the Python select/update loop over the engines, and
the plain NumPy reference (vits_ref.reference) consume the same pre-drawn numbers, so they
must choose the same arms; the regret is then identical (it is computed from the
environment's exact means). Comparisons that involve floating-point state (KL) use 1e-10
relative: the three implementations differ only in summation order (BLAS vs loops vs
NumPy), ~1e-15 per operation over at most 60 rounds of d = 5.
"""

import contextlib
import importlib
import os

import numba
import numpy as np
import pytest

import vits_ref as vr
from vits_ref import reference
from vits_ref._bench import linear as bench
from vits_ref._seeding import child
from vits_ref.bandit.simulate import draw_policy_noise, fused_spec, has_kl, make_policy
from vits_ref.drivers import cpu

T = 60


@pytest.fixture(scope="module")
def pool_env():
    return vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)


@pytest.fixture(scope="module")
def hard_env():
    return vr.envs.hard_instance(dim=5, n_arms=6, seed=1)


def _gen(ss):
    return np.random.Generator(np.random.PCG64(ss))


# ---------------------------------------------------------------------------------------
# fused == Python loop == NumPy reference
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("env_name", ["pool", "hard"])
@pytest.mark.parametrize("name", vr.POLICY_NAMES)
def test_fused_equals_python_loop(pool_env, hard_env, name, env_name):
    env = pool_env if env_name == "pool" else hard_env
    kl_rounds = [1, 7, 30, T]
    # kl_rounds only where there is a KL (the others raise a ValueError)
    kw = dict(n_rounds=T, n_runs=2, seed=123,
              kl_rounds=kl_rounds if has_kl(name) else None)
    fused = vr.simulate(name, env, fused=True, **kw)
    python = vr.simulate(name, env, fused=False, **kw)
    assert fused.fused and not python.fused
    assert np.array_equal(fused.arms, python.arms)
    assert np.array_equal(fused.regret, python.regret)
    assert np.array_equal(fused.cumulative_regret, python.cumulative_regret)
    if name in ("lints", "vits-i", "vits-ii", "vits-hf", "vits-hf-sym", "vits-hf-cv"):
        assert fused.kl.shape == python.kl.shape == (2, len(kl_rounds))
        np.testing.assert_allclose(fused.kl, python.kl, rtol=1e-10, atol=1e-10)
        assert np.array_equal(fused.kl_rounds, kl_rounds)
    else:
        assert fused.kl is None and python.kl is None
    # the runs are not trivially identical (policies that learn pick different arms)
    if name != "linucb" or env_name == "pool":
        assert not np.array_equal(fused.arms[0], fused.arms[1])


def _hard_problem(name, n_rounds=T):
    env = vr.envs.hard_instance(dim=5, n_arms=6, seed=2)
    spec = fused_spec(make_policy(name, 5))
    rs = child(np.random.SeedSequence(8), 0)
    real = env.realise(n_rounds, _gen(child(rs, 0)))
    run = (real.contexts, real.means, real.rewards) + draw_policy_noise(spec, child(rs, 1),
                                                                       n_rounds, 5)
    return spec, run


@pytest.mark.parametrize("env_name", ["pool", "hard"])
@pytest.mark.parametrize("name", vr.POLICY_NAMES)
def test_fused_equals_numpy_reference(name, env_name):
    if env_name == "pool":
        spec, (run,) = bench.problem(name, n_rounds=T, dim=5, n_arms=10, zeta=1.0, seed=4)
    else:
        spec, run = _hard_problem(name)
    regret_ref, arms_ref = reference.linear_bandit_run(spec, *run)
    regret = bench.run_compiled(spec, run)
    np.testing.assert_allclose(regret, regret_ref, rtol=0, atol=1e-10)
    # and the same arms through the driver that returns them
    arms = np.empty(T, np.int64)
    status = cpu.bandit_run(spec.piece)(spec.params, *run, np.zeros(0, np.int64), np.empty(T),
                                        arms, np.zeros(0))
    assert status == 0
    assert np.array_equal(arms, arms_ref)


# ---------------------------------------------------------------------------------------
# reproducibility
# ---------------------------------------------------------------------------------------

def test_same_seed_bit_identical(pool_env):
    for name in ("vits-ii", "lmc", "random"):
        a = vr.simulate(name, pool_env, n_rounds=40, n_runs=3, seed=7)
        b = vr.simulate(name, pool_env, n_rounds=40, n_runs=3, seed=7)
        assert np.array_equal(a.cumulative_regret, b.cumulative_regret)
        assert np.array_equal(a.arms, b.arms)
        c = vr.simulate(name, pool_env, n_rounds=40, n_runs=3, seed=8)
        assert not np.array_equal(a.arms, c.arms)
    # seed given as a SeedSequence is the same as the int
    s = vr.simulate("vits-ii", pool_env, n_rounds=40, n_runs=3, seed=np.random.SeedSequence(7))
    i = vr.simulate("vits-ii", pool_env, n_rounds=40, n_runs=3, seed=7)
    assert np.array_equal(s.arms, i.arms)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs >= 2 Numba threads")
@pytest.mark.parametrize("name", ["vits-i", "vits-ii", "vits-hf", "lints", "lmc"])
def test_thread_count_does_not_change_results(pool_env, name):
    before = numba.get_num_threads()
    kw = dict(n_rounds=50, n_runs=5, seed=3, kl_rounds=[10, 50] if has_kl(name) else None)
    one = vr.simulate(name, pool_env, n_threads=1, **kw)
    two = vr.simulate(name, pool_env, n_threads=2, **kw)
    assert one.fused and two.fused
    assert np.array_equal(one.cumulative_regret, two.cumulative_regret)
    assert np.array_equal(one.arms, two.arms)
    if one.kl is not None:
        assert np.array_equal(one.kl, two.kl)
    assert numba.get_num_threads() == before  # restored


# ---------------------------------------------------------------------------------------
# which loop runs
# ---------------------------------------------------------------------------------------

def test_object_policies_choose_the_loop(pool_env):
    decayed = vr.ThompsonSampling(vr.VITS(5, schedule="decayed", step_size=0.01, seed=0))
    assert vr.simulate(decayed, pool_env, n_rounds=10, seed=0).fused is True
    theo = vr.ThompsonSampling(vr.VITS(5, schedule="theoretical", horizon=10, max_steps=20,
                                       seed=0))
    res = vr.simulate(theo, pool_env, n_rounds=10, seed=0)
    assert res.fused is False
    assert res.cumulative_regret.shape == (1, 10)
    with pytest.raises(ValueError, match="fused"):
        vr.simulate(theo, pool_env, n_rounds=10, seed=0, fused=True)


def test_object_policy_equals_named_policy(pool_env):
    # a policy object is a specification: simulate starts every run from policy.fresh(...)
    pol = make_policy("vits-ii", 5, seed=999)
    pol.update(pool_env.pool[:10], 0, 1.0)  # its current state must not matter
    a = vr.simulate(pol, pool_env, n_rounds=30, n_runs=2, seed=5)
    b = vr.simulate("vits-ii", pool_env, n_rounds=30, n_runs=2, seed=5)
    assert np.array_equal(a.arms, b.arms)


# ---------------------------------------------------------------------------------------
# the KL diagnostic
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vits-i", "vits-ii", "vits-hf"])
def test_kl_recomputed_with_the_engine_api(pool_env, name):
    seed, n_runs, kl_rounds = 11, 2, [1, 5, 20, 40]
    res = vr.simulate(name, pool_env, n_rounds=40, n_runs=n_runs, seed=seed,
                      kl_rounds=kl_rounds)
    assert res.fused
    policy = make_policy(name, 5)
    assert policy.engine.eta == 10.0  # the named defaults: a tempered posterior
    root = np.random.SeedSequence(seed)
    for r in range(n_runs):
        run_seed = child(root, r)
        real = pool_env.realise(40, _gen(child(run_seed, 0)))
        pol = policy.fresh(child(run_seed, 1))
        kls = []
        for t in range(40):
            arm = pol.select(real.contexts[t])
            assert arm == res.arms[r, t]
            pol.update(real.contexts[t], arm, real.rewards[t, arm])
            if t + 1 in kl_rounds:
                mean, cov = vr.gaussian.linear_posterior(
                    real.contexts[np.arange(t + 1), res.arms[r, :t + 1]],
                    real.rewards[np.arange(t + 1), res.arms[r, :t + 1]],
                    eta=pol.engine.eta, lam=pol.engine.lam)
                kls.append(vr.gaussian.kl(pol.engine.mean, pol.engine.cov, mean, cov))
        # KL values are O(0.1-10); both sides are exact formulas (1e-10 relative)
        np.testing.assert_allclose(res.kl[r], kls, rtol=1e-10)
        assert np.all(np.asarray(kls) > 1e-6)  # the VI posterior is not exact here


def test_kl_lints_is_zero_and_others_none(pool_env):
    res = vr.simulate("lints", pool_env, n_rounds=T, n_runs=3, seed=1, kl_rounds=[1, 30, T])
    # LinTS's Gaussian is the exact posterior: only rounding of the rank-one updates
    assert np.all(np.abs(res.kl) < 1e-10)
    for name in ("linucb", "lmc", "random"):
        for fused in (True, False):
            # a KL asked of a policy without one is an error naming it
            with pytest.raises(ValueError, match="kl_rounds"):
                vr.simulate(name, pool_env, n_rounds=10, seed=1, kl_rounds=[5], fused=fused)
            assert vr.simulate(name, pool_env, n_rounds=10, seed=1, fused=fused).kl is None
    # no kl_rounds: an empty (n_runs, 0) array for Gaussian engines
    res = vr.simulate("vits-ii", pool_env, n_rounds=10, n_runs=2, seed=1)
    assert res.kl.shape == (2, 0) and res.kl_rounds.shape == (0,)


def test_kl_rounds_are_sorted_and_deduplicated(pool_env):
    res = vr.simulate("vits-ii", pool_env, n_rounds=20, seed=1, kl_rounds=[20, 3, 3, 10])
    assert np.array_equal(res.kl_rounds, [3, 10, 20])
    ref = vr.simulate("vits-ii", pool_env, n_rounds=20, seed=1, kl_rounds=[3, 10, 20])
    assert np.array_equal(res.kl, ref.kl)


# ---------------------------------------------------------------------------------------
# new instance per run
# ---------------------------------------------------------------------------------------

def _regret_from_arms(real, arms):
    return real.means.max(axis=1) - real.means[np.arange(len(arms)), arms]


@pytest.mark.parametrize("fused", [True, False])
def test_new_instance_per_run(pool_env, fused):
    seed, n_runs = 21, 3
    res = vr.simulate("random", pool_env, n_rounds=30, n_runs=n_runs, seed=seed,
                      new_instance_per_run=True, fused=fused)
    again = vr.simulate("random", pool_env, n_rounds=30, n_runs=n_runs, seed=seed,
                        new_instance_per_run=True, fused=fused)
    assert np.array_equal(res.regret, again.regret)  # reproducible
    root = np.random.SeedSequence(seed)
    thetas = []
    for r in range(n_runs):
        run_seed = child(root, r)
        inst = pool_env.new_instance(child(run_seed, 2))
        thetas.append(inst.theta_star)
        real = inst.realise(30, _gen(child(run_seed, 0)))
        # the regret is that of the played arms under run r's own instance ...
        assert np.array_equal(res.regret[r], _regret_from_arms(real, res.arms[r]))
        # ... not under the shared instance
        shared = pool_env.realise(30, _gen(child(run_seed, 0)))
        assert not np.allclose(res.regret[r], _regret_from_arms(shared, res.arms[r]))
    assert len({tuple(t) for t in thetas}) == n_runs
    assert not any(np.array_equal(t, pool_env.theta_star) for t in thetas)


# ---------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------

def test_lints_beats_random_and_result_shapes():
    env = vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)
    lints = vr.simulate("lints", env, n_rounds=300, n_runs=10, seed=0)
    rand = vr.simulate("random", env, n_rounds=300, n_runs=10, seed=0)
    m_l, se_l = lints.mean_and_stderr()
    m_r, se_r = rand.mean_and_stderr()
    assert m_l.shape == se_l.shape == m_r.shape == (300,)
    # stderr = sample std (ddof=1) / sqrt(n_runs)
    cr = lints.cumulative_regret
    assert np.allclose(se_l, cr.std(axis=0, ddof=1) / np.sqrt(10), rtol=1e-12, atol=0)
    assert np.allclose(m_l, cr.mean(axis=0), rtol=1e-12, atol=0)
    # sanity with a wide margin: at seed 0 LinTS ends near 38 +- 3, random near 478 +- 4;
    # require LinTS's upper 5-SE bound below a quarter of random's lower 5-SE bound
    assert m_l[-1] + 5 * se_l[-1] < 0.25 * (m_r[-1] - 5 * se_r[-1])
    # LinTS learns: its second half costs less than its first
    assert m_l[-1] - m_l[149] < m_l[149]
    for res in (lints, rand):
        assert res.regret.shape == res.arms.shape == res.cumulative_regret.shape == (10, 300)
        assert res.n_runs == 10 and res.n_rounds == 300
        assert np.all(res.regret >= 0.0)  # exact regret from expected rewards
        assert res.arms.min() >= 0 and res.arms.max() < 10
        assert np.allclose(res.cumulative_regret, np.cumsum(res.regret, axis=1))
        assert res.wall_time > 0.0
    one = vr.simulate("lints", env, n_rounds=5, n_runs=1, seed=0)
    m, se = one.mean_and_stderr()
    assert m.shape == se.shape == (5,) and np.all(se == 0.0)


def test_progress_callback(pool_env):
    for fused in (True, False):
        calls = []
        vr.simulate("lints", pool_env, n_rounds=5, n_runs=3, seed=0, fused=fused,
                    progress=lambda done, total, calls=calls: calls.append((done, total)))
        assert calls and calls[-1] == (3, 3)
        assert all(total == 3 for _, total in calls)


def test_worker_processes_give_identical_results():
    """n_jobs only distributes the Python loop's runs: every run keeps its own seeds."""
    env = vr.envs.hard_instance(dim=4, n_arms=5, reward="logistic", seed=0)
    pol = vr.ThompsonSampling(vr.VITS(4, model="logistic", step_size=0.2, n_steps=3))
    one = vr.simulate(pol, env, n_rounds=25, n_runs=3, seed=7, new_instance_per_run=True,
                      fused=False)
    two = vr.simulate(pol, env, n_rounds=25, n_runs=3, seed=7, new_instance_per_run=True,
                      fused=False, n_jobs=2)
    assert not one.fused
    np.testing.assert_array_equal(one.regret, two.regret)
    np.testing.assert_array_equal(one.arms, two.arms)
    with pytest.raises(ValueError, match="n_jobs"):
        vr.simulate(pol, env, n_rounds=5, n_jobs=0)


def test_openblas_runs_on_one_thread_during_a_simulation():
    """OpenBLAS's threads change the bits of larger products (Rényi VI's draws times the
    history): a simulation runs it on one thread whatever the process had, and restores
    the process's count after."""
    from vits_ref import _threads

    start = _threads.blas_threads()
    if not start:
        pytest.skip("no OpenBLAS found in this process (Linux /proc/self/maps)")
    seen = []

    class Probe:
        name, dim = "records OpenBLAS's threads", None

        def select(self, contexts):
            seen.append(_threads.blas_threads())
            return 0

        def update(self, contexts, arm, reward):
            return self

        def fresh(self, seed=None):
            return self

    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    try:
        before = _threads.pin_blas_threads(2)
        vr.simulate(Probe(), env, n_rounds=3, n_runs=2, seed=0)
        after = _threads.blas_threads()
    finally:
        for path, setter, _ in _threads.openblas_controls():
            setter(start[os.path.basename(path)])
    assert len(seen) == 6 and all(set(b.values()) == {1} for b in seen), seen
    assert after == before


def test_engines_on_a_history_run_openblas_on_one_thread(monkeypatch):
    """The policy objects' door (``Engine.update`` and ``Engine.sample``) outside a
    simulation: an engine whose model keeps a history (the logistic model) refits and
    draws with OpenBLAS on one thread, as ``simulate`` runs it, and gives the process's
    count back; an engine on the linear model (sufficient statistics, d x d products) is
    left as it is, paying nothing."""
    from vits_ref import _threads

    start = _threads.blas_threads()
    if not start:
        pytest.skip("no OpenBLAS found in this process (Linux /proc/self/maps)")
    seen = []

    def probed(engine):
        refit, draw = engine._refit, engine._sample

        def _refit(*args):
            seen.append(("refit", set(_threads.blas_threads().values())))
            return refit(*args)

        def _sample(*args):
            seen.append(("sample", set(_threads.blas_threads().values())))
            return draw(*args)

        monkeypatch.setattr(engine, "_refit", _refit)
        monkeypatch.setattr(engine, "_sample", _sample)
        return engine

    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 3))
    try:
        _threads.pin_blas_threads(2)
        logistic = probed(vr.Laplace(3, model="logistic", seed=0))
        logistic.update(X, (X[:, 0] > 0).astype(float))
        logistic.sample(2)
        linear = probed(vr.LinTS(3, seed=0))
        linear.update(X, X[:, 0])
        linear.sample(2)
        after = _threads.blas_threads()
    finally:
        for path, setter, _ in _threads.openblas_controls():
            setter(start[os.path.basename(path)])
    assert seen == [("refit", {1}), ("sample", {1}), ("refit", {2}), ("sample", {2})], seen
    assert set(after.values()) == {2}


def test_renyi_door_gives_the_same_bits_whatever_openblas_threads():
    """Rényi VI's policy object on wine (the showdown's point), 40 rounds of select and
    update by hand, in a process whose OpenBLAS has one thread and then two: the same arms
    and the same posterior, bit for bit. Without the engines' pin, two threads gave other
    arms within the 40 rounds on the 2-core machine of CI (the draws-by-history product
    is split over threads)."""
    pytest.importorskip("sklearn")
    from vits_ref import _threads
    from vits_ref.experiments.showdown.catalogue import ENVIRONMENTS, METHODS

    start = _threads.blas_threads()
    if not start:
        pytest.skip("no OpenBLAS found in this process (Linux /proc/self/maps)")
    setting = ENVIRONMENTS["wine"]
    env = setting.make(0)
    make = next(m for m in METHODS if m.label == "Renyi-VI").make
    real = env.realise(40, np.random.default_rng(2))

    def door(n_threads):
        policy = make(setting, env)[0].fresh(seed=1)
        _threads.pin_blas_threads(n_threads)
        arms = []
        for X, rewards in zip(real.contexts, real.rewards, strict=True):
            arms.append(policy.select(X))
            policy.update(X, arms[-1], float(rewards[arms[-1]]))
        return arms, policy.engine.mean

    try:
        one, two = door(1), door(2)
    finally:
        for path, setter, _ in _threads.openblas_controls():
            setter(start[os.path.basename(path)])
    assert one[0] == two[0]
    np.testing.assert_array_equal(one[1], two[1])


def test_blas_threads_benchmark_runs_each_count_and_restores_the_pin(monkeypatch):
    """``vits_ref.experiments.showdown.blas_threads`` (the committed source of docs/performance.md's
    OpenBLAS figures) runs each call at the count it names, seen by a probe inside, then
    puts the library's pin and the process's counts back; unknown names are refused."""
    from vits_ref import _threads
    from vits_ref.experiments.showdown import blas_threads

    start = _threads.blas_threads()
    if not start:
        pytest.skip("no OpenBLAS found in this process (Linux /proc/self/maps)")
    sim_module = importlib.import_module("vits_ref.bandit.simulate")
    pin = sim_module.blas_single_thread
    seen = []
    at = blas_threads._blas_at

    @contextlib.contextmanager
    def probing_at(n):
        with at(n):
            seen.append(set(_threads.blas_threads().values()))
            yield

    monkeypatch.setattr(blas_threads, "_blas_at", probing_at)
    rows = blas_threads.measure(environment="pool", method="Uniform", rounds=3, runs=1,
                                threads=(1, 2))
    assert [r["threads"] for r in rows] == [1, 2] and seen == [{1}, {2}], (rows, seen)
    assert rows[0]["sha256"] == rows[1]["sha256"]  # the uniform policy does no BLAS work
    assert sim_module.blas_single_thread is pin and _threads.blas_threads() == start
    with pytest.raises(ValueError, match="environment"):
        blas_threads.measure(environment="nope")
    with pytest.raises(ValueError, match="method"):
        blas_threads.measure(method="nope")


def test_divergence_in_a_worker_names_the_run():
    env = vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)
    pol = vr.ThompsonSampling(vr.VITS(5, variant="II", schedule="constant", step_size=1.0))
    with pytest.raises(vr.DivergenceError, match="in run 0"):
        vr.simulate(pol, env, n_rounds=50, n_runs=2, seed=4, fused=False, n_jobs=2)


@pytest.mark.parametrize("policy,fused", [("lints", None), ("vits-ii", None), ("lints", False)])
def test_first_run_gives_the_same_rows_as_one_call(policy, fused):
    # a block of runs (the resumable chunks) must equal the same rows of one call
    env = vr.envs.pool(dim=3, n_arms=5, zeta=1.0, seed=0)
    whole = vr.simulate(policy, env, 20, 5, seed=3, new_instance_per_run=True, fused=fused)
    block = vr.simulate(policy, env, 20, 3, seed=3, new_instance_per_run=True, fused=fused,
                        first_run=2)
    np.testing.assert_array_equal(block.regret, whole.regret[2:])
    np.testing.assert_array_equal(block.arms, whole.arms[2:])


def test_first_run_and_device_are_checked():
    env = vr.envs.pool(dim=3, n_arms=5, zeta=1.0, seed=0)
    with pytest.raises(ValueError, match="first_run"):
        vr.simulate("lints", env, 5, first_run=-1)
    with pytest.raises(TypeError, match="first_run"):
        vr.simulate("lints", env, 5, first_run=1.5)
    with pytest.raises(ValueError, match="device"):
        vr.simulate("lints", env, 5, device="tpu")


def test_divergence_names_the_lowest_diverging_run_whatever_the_plan(monkeypatch):
    # runs 0, 1, 5 and 7 diverge, at rounds 10, 8, 9 and 7 (docs/cuda.md): every plan of
    # batches and chunks of rounds must name run 0 at round 10 (the Python loop's engines
    # detect the divergence of this borderline run 0 differently: a known difference)
    import sys

    sim_mod = sys.modules["vits_ref.bandit.simulate"]
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    pol = make_policy("vits-ii", 3, step_size=0.0035, schedule="constant")
    seen = []
    for budget in (sim_mod._MEMORY_BUDGET, 1, 4000):
        monkeypatch.setattr(sim_mod, "_MEMORY_BUDGET", budget)
        with pytest.raises(vr.DivergenceError) as err:
            vr.simulate(pol, env, 10, 8, seed=3)
        seen.append((err.value.run, err.value.round))
    assert seen == [(0, 10)] * 3
