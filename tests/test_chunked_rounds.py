"""Bounded memory over the horizon: the fused loop by chunks of rounds.

Every check here is exact (``assert_array_equal``): drawing a run's realisation and its
policy randomness a chunk of rounds at a time, and running the rounds chunk by chunk with
the state carried in the run's buffer, must give the same bits as one whole draw and one
whole-horizon run of each run (``vits_ref.drivers.cpu.bandit_run``, the path used before
chunking). Chunk sizes 1 and 7 (a prime that divides none of the horizons, so the last
chunk is short and every boundary falls mid-way) and the whole horizon.
"""

import importlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import child
from vits_ref.bandit import _fused_draws
from vits_ref.drivers import cpu
from vits_ref.drivers.fused import draw_chunks
from vits_ref.envs.renyi_mab import renyi_mab

sim = importlib.import_module("vits_ref.bandit.simulate")

T, R = 23, 3
CHUNKS = (1, 7, T)
FUSED = ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-sym", "vits-hf-cv", "lmc",
         "random")

_SMALL_MOVIELENS = {"n_users": 50, "n_movies": 30, "n_ratings": 500}
ENVS = {
    "pool": lambda: vr.envs.pool(dim=4, n_arms=3, zeta=0.5, seed=0),  # n K odd: 32-bit ints
    "pool-quadratic": lambda: vr.envs.pool(dim=4, n_arms=5, reward="quadratic", seed=1),
    "hard": lambda: vr.envs.hard_instance(dim=4, n_arms=5, seed=0),
    "hard-logistic": lambda: vr.envs.hard_instance(dim=4, n_arms=5, reward="logistic", seed=0),
    "mixture": lambda: vr.envs.vts_scenario("B"),
    "renyi-mab": lambda: renyi_mab(seed=0),
    "prior-ball": lambda: vr.envs.prior_bandit("cross", n_arms=7, seed=0),
    "prior-fixed": lambda: vr.envs.prior_bandit("cross", n_arms=7, seed=0, fixed_arms=True),
    "prior-pool-logistic": lambda: vr.envs.prior_bandit(
        "cross", n_arms=3, reward="logistic", seed=0,
        arms=np.random.default_rng(0).standard_normal((11, 2))),
    "movielens": lambda: vr.envs.movielens(n_movies=7, seed=0, reward="linear",
                                           synthetic_kwargs=_SMALL_MOVIELENS),
    "movielens-logistic": lambda: vr.envs.movielens(n_movies=7, seed=0,
                                                    synthetic_kwargs=_SMALL_MOVIELENS),
    "wheel": lambda: vr.envs.wheel(delta=0.5),
    "classification": lambda: vr.envs.ClassificationBandit(
        np.random.default_rng(0).standard_normal((13, 3)), np.arange(13) % 3),
}


def _concat(chunks, field):
    return np.concatenate([getattr(c, field) for c in chunks])


# --------------------------------------------------------------------------- environments


@pytest.mark.parametrize("name", sorted(ENVS))
def test_every_library_environment_is_chunk_safe(name):
    env = ENVS[name]()
    assert env.chunk_safe
    whole = env.realise(T, np.random.default_rng(5))
    after = np.random.default_rng(5)
    env.realise(T, after)
    for chunk in CHUNKS + (T + 10,):
        rng = np.random.default_rng(5)
        chunks = list(env.realise_chunks(T, rng, chunk))
        assert [c.contexts.shape[0] for c in chunks] == [min(chunk, T - t0)
                                                         for t0 in range(0, T, chunk)]
        for field in ("contexts", "means", "rewards"):
            np.testing.assert_array_equal(_concat(chunks, field), getattr(whole, field))
        # the generator is left where the whole draw leaves it
        assert rng.bit_generator.state == after.bit_generator.state


class _OwnContexts(vr.envs.PoolEnvironment):
    """A subclass drawing its contexts its own way, without declaring its draws."""

    def _contexts(self, T, rng):
        return rng.standard_normal((T, self.n_arms, self.dim))


def test_a_subclass_with_undeclared_draws_is_sliced_not_chunked():
    env = _OwnContexts(dim=3, n_arms=4, seed=0)
    assert not env.chunk_safe
    whole = env.realise(T, np.random.default_rng(2))
    chunks = list(env.realise_chunks(T, np.random.default_rng(2), 7))
    for field in ("contexts", "means", "rewards"):
        np.testing.assert_array_equal(_concat(chunks, field), getattr(whole, field))


def test_realise_chunks_validates_eagerly():
    env = ENVS["pool"]()
    with pytest.raises(ValueError, match="chunk"):
        env.realise_chunks(10, 0, 0)
    with pytest.raises(TypeError, match="n_rounds"):
        env.realise_chunks(1.5, 0, 3)


# --------------------------------------------------------------------------- policy noise


@pytest.mark.parametrize("name", FUSED)
def test_policy_noise_chunks_equal_the_whole_draw(name):
    d = 3
    spec = sim.fused_spec(sim.make_policy(name, d), kl=sim.has_kl(name))
    assert spec.draw_chunks is not None  # every library policy draws by chunks
    seed = np.random.SeedSequence(11)
    whole = spec.draw(seed, T, d)
    for chunk in CHUNKS:
        parts = list(draw_chunks(spec, seed, T, d, chunk))
        assert len(parts) == -(-T // chunk)
        for init, _, _ in parts:
            np.testing.assert_array_equal(init, whole[0])
        for i in (1, 2):
            np.testing.assert_array_equal(np.concatenate([p[i] for p in parts]), whole[i])


def test_a_spec_without_draw_chunks_is_sliced():
    spec = sim.fused_spec(sim.make_policy("vits-ii", 3))
    spec = type(spec)(spec.piece, spec.params, spec.draw)
    whole = spec.draw(4, T, 3)
    parts = list(draw_chunks(spec, 4, T, 3, 7))
    np.testing.assert_array_equal(np.concatenate([p[2] for p in parts]), whole[2])
    with pytest.raises(ValueError, match="chunk"):
        next(draw_chunks(spec, 4, T, 3, 0))


# --------------------------------------------------------------------------- fused rounds


def _whole_horizon(spec, env, root, kl_rounds):
    """The pre-chunking path: whole draws, and each run by ``cpu.bandit_run`` (one run a
    call, the whole horizon in one chunk, its state allocated by the call; not the runs'
    buffers that ``simulate`` carries from chunk to chunk)."""
    regret, arms = np.empty((R, T)), np.empty((R, T), dtype=np.int64)
    kl = np.full((R, kl_rounds.size), np.nan)
    run = cpu.bandit_run(spec.piece)
    for r in range(R):
        rs = child(root, r)
        real = _fused_draws.realise(env, rs, T)
        init, sel, steps = spec.draw(child(rs, 1), T, env.dim)
        status = run(spec.params, real.contexts, real.means, real.rewards, init, sel, steps,
                     kl_rounds, regret[r], arms[r], kl[r])
        assert status == 0
    return regret, arms, kl


@pytest.mark.parametrize("name", FUSED)
def test_chunked_rounds_equal_the_whole_horizon_run(name):
    env = ENVS["pool"]()
    kl_rounds = (np.array([1, 7, 8, 15, 23], dtype=np.int64) if sim.has_kl(name)
                 else np.zeros(0, dtype=np.int64))
    spec = sim.fused_spec(sim.make_policy(name, env.dim), kl=bool(kl_rounds.size))
    root = np.random.SeedSequence(3)
    regret0, arms0, kl0 = _whole_horizon(spec, env, root, kl_rounds)
    seeds = [child(root, r) for r in range(R)]
    for chunk in CHUNKS:
        regret, arms = np.empty((R, T)), np.empty((R, T), dtype=np.int64)
        kl = np.full((R, kl_rounds.size), np.nan)  # NaN until recorded
        seen = []

        def on_chunk(t1, bufs, ctx, seen=seen):
            seen.append((t1, ctx.shape[1]))

        sim._fused_batch(spec, name, [env] * R, seeds, T, chunk, kl_rounds, regret, arms, kl,
                         0, on_chunk=on_chunk)
        assert seen == [(min(t0 + chunk, T), min(chunk, T - t0)) for t0 in range(0, T, chunk)]
        np.testing.assert_array_equal(regret, regret0)
        np.testing.assert_array_equal(arms, arms0)
        np.testing.assert_array_equal(kl, kl0)
        assert np.all(np.isfinite(kl)) and np.all(kl >= 0)  # every KL round recorded


@pytest.mark.parametrize("env_name", ["hard", "hard-logistic", "mixture", "prior-ball",
                                      "movielens", "renyi-mab"])
@pytest.mark.parametrize("policy", ["lints", "vits-ii"])
def test_simulate_with_a_tiny_memory_budget_chunks_bit_identically(monkeypatch, fused_plans,
                                                                   env_name, policy):
    env = ENVS[env_name]()
    kl_rounds = [3, 9, T] if sim.has_kl(policy) else None
    whole = vr.simulate(policy, env, T, R, seed=4, kl_rounds=kl_rounds)
    planned = fused_plans
    for budget, chunk in ((1, 1), (7 * sim._bytes_per_round(
            sim.fused_spec(sim.make_policy(policy, env.dim)), env.dim, env.n_arms), 7)):
        monkeypatch.setattr(sim, "_MEMORY_BUDGET", budget)
        res = vr.simulate(policy, env, T, R, seed=4, kl_rounds=kl_rounds, n_threads=1)
        assert planned[-1] == (1, chunk)
        np.testing.assert_array_equal(res.regret, whole.regret)
        np.testing.assert_array_equal(res.arms, whole.arms)
        if kl_rounds:
            np.testing.assert_array_equal(res.kl, whole.kl)
        # a block of runs (first_run) equals the same rows, chunked too
        block = vr.simulate(policy, env, T, 2, seed=4, kl_rounds=kl_rounds, first_run=1)
        np.testing.assert_array_equal(block.regret, whole.regret[1:])
        np.testing.assert_array_equal(block.arms, whole.arms[1:])


def test_new_instance_per_run_chunked(monkeypatch):
    env = ENVS["pool"]()
    whole = vr.simulate("vits-ii", env, T, R, seed=6, new_instance_per_run=True)
    monkeypatch.setattr(sim, "_MEMORY_BUDGET", 1)
    res = vr.simulate("vits-ii", env, T, R, seed=6, new_instance_per_run=True)
    np.testing.assert_array_equal(res.regret, whole.regret)


def test_plan_stays_within_the_budget(monkeypatch):
    monkeypatch.setattr(sim, "_MEMORY_BUDGET", 1000)
    assert sim._fused_plan(5, 10, 10, 2) == (5, 10)     # everything fits: one batch
    assert sim._fused_plan(50, 10, 10, 2) == (10, 10)   # whole runs, 10 at a time
    assert sim._fused_plan(5, 1000, 10, 2) == (2, 50)   # a thread's worth of runs, chunked
    assert sim._fused_plan(1, 1000, 10, 4) == (1, 100)
    assert sim._fused_plan(3, 1000, 2000, 2) == (2, 1)  # one round over budget: 1 at a time
    for n_runs, T_, per_round, threads in ((7, 10 ** 6, 10 ** 4, 2), (1, 10 ** 6, 18_000, 1)):
        monkeypatch.setattr(sim, "_MEMORY_BUDGET", 256 * 2 ** 20)
        batch, chunk = sim._fused_plan(n_runs, T_, per_round, threads)
        assert batch * chunk * per_round <= sim._MEMORY_BUDGET


def test_divergence_in_a_later_chunk_names_the_global_round(monkeypatch):
    # LMC-TS at h0 = 1 diverges at round 80 of run 1 here (measured); run by chunks of one
    # round it must report the same round, run and step size as the whole-horizon run
    env = ENVS["pool"]()
    pol = sim.make_policy("lmc", env.dim, step_size=1.0)
    with pytest.raises(vr.errors.DivergenceError) as whole:
        vr.simulate(pol, env, 200, 2, seed=0)
    monkeypatch.setattr(sim, "_MEMORY_BUDGET", 1)
    with pytest.raises(vr.errors.DivergenceError) as chunked:
        vr.simulate(pol, env, 200, 2, seed=0)
    assert str(chunked.value) == str(whole.value)
    assert chunked.value.round > 1 and chunked.value.run == 1  # a later chunk, a later run


# --------------------------------------------------------------------------- CUDA body

_CUDA_SCRIPT = textwrap.dedent("""
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import vits_ref as vr
    from vits_ref.drivers import cuda
    from vits_ref.drivers.fused import draw_chunks
    from vits_ref.bandit.simulate import make_policy
    R, T, d, K, chunk = 2, 8, 3, 4, 3
    env = vr.envs.pool(dim=d, n_arms=K, zeta=1.0, seed=1)
    kl_rounds = np.array([2, 3, 8])
    worst = 0.0
    for name in ("lints", "linucb", "vits-ii", "lmc", "random"):
        spec = make_policy(name, d).fused(kl=True)
        seeds = np.random.SeedSequence(6).spawn(R)
        reals = [env.realise(T, rng=np.random.default_rng(s)) for s in range(R)]
        noises = [spec.draw(s, T, d) for s in seeds]
        whole = cuda.run_fused(spec, reals, noises, kl_rounds)
        M = noises[0][2].shape[2]
        runs = cuda.BanditRounds(spec.piece, spec.params, R, T, d, K, M, kl_rounds)
        rc = [env.realise_chunks(T, np.random.default_rng(s), chunk) for s in range(R)]
        nc = [draw_chunks(spec, s, T, d, chunk) for s in seeds]
        for t0 in range(0, T, chunk):
            parts = [next(g) for g in rc]
            ns = [next(g) for g in nc]
            status = runs.advance(*[np.stack([getattr(p, f) for p in parts])
                                    for f in ("contexts", "means", "rewards")],
                                  *[np.stack([n[i] for n in ns]) for i in range(3)])
            assert not status.any(), name
        regret, arms, kl = runs.results()
        assert (arms == whole[1]).all(), name
        worst = max(worst, float(np.abs(regret - whole[0]).max()),
                    float(np.abs(kl - whole[2]).max()))
    print("MAXDIFF", worst)
""")


def test_cuda_body_by_chunks_under_simulator():
    # the CUDA driver by chunks of 3 rounds (drivers.cuda.BanditRounds) equals its whole-
    # horizon launch exactly (same bodies, same loops: the simulator runs both in Python);
    # the whole-horizon launch against the CPU driver is tests/test_cuda_drivers.py's
    from conftest import max_diff_under_cuda_simulator

    assert max_diff_under_cuda_simulator(_CUDA_SCRIPT) == 0.0


# --------------------------------------------------------------------------- memory

_MEMORY_SCRIPT = textwrap.dedent("""
    import importlib, json, resource, sys
    import vits_ref as vr
    sim = importlib.import_module("vits_ref.bandit.simulate")
    T, budget = int(sys.argv[1]), int(sys.argv[2])
    if budget:
        sim._MEMORY_BUDGET = budget
    env = vr.envs.pool(dim=20, n_arms=50, zeta=0.1, seed=0)
    vr.simulate("lints", env, 200, 1, seed=0)  # compile or load the cache, then measure
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = vr.simulate("lints", env, T, 1, seed=0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"base_kb": base, "peak_kb": peak, "regret": float(res.regret.sum()),
                      "budget": sim._MEMORY_BUDGET}))
""")


def _memory_run(n_rounds, budget):
    if sys.platform != "linux":
        pytest.skip("ru_maxrss is in KB on Linux only")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, str(n_rounds), str(budget)],
                         capture_output=True, text=True, env=env, timeout=900, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{n_rounds} rounds: peak {got['peak_kb'] / 1024:.0f} MB, after the warm-up "
          f"{got['base_kb'] / 1024:.0f} MB")  # shown by pytest -s
    return got


def test_memory_does_not_grow_with_the_horizon():
    # 100 000 rounds at d = 20, K = 50 hold 100 000 x 50 x 22 x 8 B = 880 MB of realisation
    # drawn whole (twice that with the transient copies), so the bound below (about 100 MB)
    # fails unless the run is chunked. Budget 32 MB: the chunks' arrays and the transient
    # copies are counted in it (_bytes_per_round); above the loaded library's peak (base,
    # after a 200-round warm-up) the run may add the budget, the outputs regret, arms and
    # the cumulative regret (24 B a round: 2.4 MB) and 64 MB of allocator slack (glibc
    # arenas, NumPy temporaries of a chunk's bookkeeping). About 5 s of CPU.
    T_, budget = 100_000, 32 * 2 ** 20
    got = _memory_run(T_, budget)
    extra = (got["peak_kb"] - got["base_kb"]) * 1024
    assert extra < budget + 24 * T_ + 64 * 2 ** 20, got


@pytest.mark.slow
def test_a_million_rounds_under_a_gigabyte():
    # the goal: 1 000 000 fused LinTS rounds at d = 20, K = 50 with the default
    # budget (256 MB) peak under 1 GB of resident memory, library and Numba included
    got = _memory_run(1_000_000, 0)
    assert got["budget"] == 256 * 2 ** 20
    assert got["peak_kb"] * 1024 < 2 ** 30, got


def test_python_loop_streams_its_realisation(monkeypatch):
    """``fused=False`` holds one chunk of the run's realisation, not the horizon: with the
    chunk budget at 64 kB and the environment's blocks of draws at 2**14 numbers (so the
    4000 rounds span many blocks), 4000 rounds of d = 20, K = 50 (a 35 MB realisation)
    peak below 4 MB of NumPy allocations (tracemalloc: a block and a chunk, regret and
    arms, the engine's small arrays), and the rows equal those of one chunk holding the
    whole horizon (with the same blocks: a run longer than a block draws block by block)."""
    import tracemalloc

    from vits_ref.envs import rounds

    env = vr.envs.pool(dim=20, n_arms=50, zeta=1.0, seed=0)
    pol = vr.make_policy("lints", 20)
    monkeypatch.setattr(rounds, "BLOCK_VALUES", 2 ** 14)
    monkeypatch.setattr(sim, "PYTHON_CHUNK_BYTES", 64 * 2 ** 10)
    vr.simulate(pol, env, 5, 1, seed=1, fused=False)  # warm: no compile inside the trace
    tracemalloc.start()
    try:
        small = vr.simulate(pol, env, 4000, 1, seed=1, fused=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2 ** 20, peak
    monkeypatch.setattr(sim, "PYTHON_CHUNK_BYTES", 2 ** 40)
    whole = vr.simulate(pol, env, 4000, 1, seed=1, fused=False)
    np.testing.assert_array_equal(small.arms, whole.arms)
    np.testing.assert_array_equal(small.regret, whole.regret)
