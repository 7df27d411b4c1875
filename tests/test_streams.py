"""``simulate(..., stream="philox")``: the counter-based streams in the fused loop.

* The key test: the streamed loop on the CPU equals the pre-drawn fused loop
  (``drivers.cpu.bandit_rounds``) fed with the NumPy reference's arrays
  (:mod:`vits_ref.reference.streams`): arms equal, regret and KL bit-identical. Both sides
  compute the normals with the C library's ``log``, ``cos`` and ``sin`` (the reference
  through :mod:`math`, Numba's CPU code through the same library), so the tolerance is 0;
  with NumPy's own SIMD ``log`` the normals would differ by up to 2 ulps on 0.16% of
  values (``test_philox.py`` measures it) and the regret by rounding.
* Invariance: blocks of runs (``first_run``), batches, threads and, on the simulator,
  chunks of rounds give the same rows.
* ``device="cuda"`` under the simulator equals ``device="cpu"``: the same rules as
  ``tests/test_simulate_cuda.py`` (arms equal, regret bit-identical, KL to 1e-10
  relative; the simulator runs the bodies in Python with the same C library, so here the
  regret is bit-identical too, while a real GPU's libdevice ``log``/``cos``/``sin`` and
  fused multiply-adds change the contexts by ulps: on a GPU the regret agrees to 1e-12).
* Statistics: the streamed LinTS regret has the distribution of the NumPy stream's.
* The divergence rule and the errors.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import child
from vits_ref.bandit import _streams
from vits_ref.bandit.simulate import POLICY_NAMES, has_kl, make_policy
from vits_ref.drivers import cpu
from vits_ref.reference import streams as ref

D, K, T = 3, 5, 12


def _pool(reward="linear"):
    return vr.envs.pool(dim=D, n_arms=K, zeta=0.7, reward=reward, seed=2)


def _hard(reward="linear"):
    return vr.envs.hard_instance(dim=D, n_arms=K, reward=reward, seed=2)


ENVS = {"pool": _pool, "pool-quadratic": lambda: _pool("quadratic"), "hard": _hard,
        "hard-logistic": lambda: _hard("logistic")}


def _predrawn(name, env, seed, n_runs, kl_rounds, first_run=0):
    """The pre-drawn fused loop fed with the reference's arrays of the same runs."""
    spec = make_policy(name, env.dim).fused(kl=bool(kl_rounds))
    dims = _streams.noise_dims(spec, env.dim, env.n_arms)
    root = np.random.SeedSequence(seed)
    arrays = [ref.run_arrays(env, ref.run_key(child(root, first_run + r)), T, dims,
                             spec.piece.select_noise) for r in range(n_runs)]
    stacked = [np.stack([a[i] for a in arrays]) for i in range(6)]
    kl_arr = np.asarray(kl_rounds or [], dtype=np.int64)
    regret, arms = np.empty((n_runs, T)), np.empty((n_runs, T), dtype=np.int64)
    kl = np.zeros((n_runs, kl_arr.size))
    status = np.zeros(n_runs, dtype=np.int64)
    bufs = np.empty((n_runs, spec.piece.state_size(env.dim, env.n_arms, dims[5], T)))
    cpu.bandit_rounds(spec.piece)(spec.params, bufs, 0, *stacked, kl_arr, regret, arms, kl,
                                  status)
    assert not status.any()
    return regret, arms, kl


CASES = [("lints", "pool"), ("random", "hard-logistic")]
SLOW_CASES = [(name, env) for name in POLICY_NAMES for env in ENVS
              if (name, env) not in CASES and not (name == "vits-hf" and env != "pool")]


def _check_against_reference(name, env_name):
    env = ENVS[env_name]()
    kl_rounds = [3, 12] if has_kl(name) else None
    res = vr.simulate(name, env, T, 3, seed=11, kl_rounds=kl_rounds, first_run=1,
                      stream="philox")
    regret, arms, kl = _predrawn(name, env, 11, 3, kl_rounds, first_run=1)
    np.testing.assert_array_equal(res.arms, arms)
    np.testing.assert_array_equal(res.regret, regret)  # bit-identical (see the docstring)
    if kl_rounds:
        np.testing.assert_array_equal(res.kl, kl)
    return len(np.unique(res.arms))


@pytest.mark.parametrize(("name", "env_name"), CASES)
def test_streamed_equals_predrawn_loop_fed_the_reference(name, env_name):
    # the policy did play: not every run played the same arm throughout
    assert _check_against_reference(name, env_name) > 1


@pytest.mark.slow
@pytest.mark.parametrize(("name", "env_name"), SLOW_CASES)
def test_streamed_equals_reference_every_policy(name, env_name):
    assert _check_against_reference(name, env_name) > 1


def test_reference_environment_matches_its_model():
    """The streams' contexts are the environments' models: pool rows are a pool vector plus
    ``zeta`` noise, means are ``expected_reward`` (to rounding: BLAS sums in another
    order), the hard instance's arms are its arms."""
    key = np.array([5, 6], dtype=np.uint64)
    for env in (_pool(), _pool("quadratic"), _hard(), _hard("logistic")):
        X, means, rewards, _, _, _ = ref.run_arrays(env, key, 40, (D, K, 0, 0, 0, 1))
        np.testing.assert_allclose(means, env.expected_reward(X), rtol=1e-13, atol=1e-14)
        if env.name == "pool":
            g = (X[..., None, :] - env.pool[None, None]) / env.zeta  # (T, K, P, d)
            closest = np.abs(g).max(axis=-1).min(axis=-1)
            assert closest.max() < 6.0  # some pool vector within 6 sd in every coordinate
            noise = rewards - means  # one noise draw per round, shared by the arms
            np.testing.assert_allclose(noise, noise[:, :1] * np.ones((1, K)), atol=1e-12)
        else:
            np.testing.assert_array_equal(X, np.broadcast_to(env.arms, X.shape))
            if env.reward == "logistic":
                assert set(np.unique(rewards)) <= {0.0, 1.0}


def test_blocks_batches_threads_give_the_same_rows(monkeypatch):
    env = _pool()
    whole = vr.simulate("lints", env, T, 6, seed=4, stream="philox", kl_rounds=[T])
    block = vr.simulate("lints", env, T, 3, seed=4, stream="philox", kl_rounds=[T],
                        first_run=2)
    np.testing.assert_array_equal(block.regret, whole.regret[2:5])
    np.testing.assert_array_equal(block.kl, whole.kl[2:5])
    one = vr.simulate("lints", env, T, 6, seed=4, stream="philox", kl_rounds=[T],
                      n_threads=1)
    np.testing.assert_array_equal(one.regret, whole.regret)
    monkeypatch.setattr(_streams, "CPU_BATCH", 4)
    calls = []
    batched = vr.simulate("lints", env, T, 6, seed=4, stream="philox", kl_rounds=[T],
                          progress=lambda done, n: calls.append((done, n)))
    np.testing.assert_array_equal(batched.regret, whole.regret)
    np.testing.assert_array_equal(batched.arms, whole.arms)
    assert calls == [(4, 6), (6, 6)]
    # other seeds, other numbers; the numpy stream is another stream
    other = vr.simulate("lints", env, T, 6, seed=5, stream="philox")
    assert not np.array_equal(other.regret, whole.regret)
    numpy_stream = vr.simulate("lints", env, T, 6, seed=4)
    assert not np.array_equal(numpy_stream.regret, whole.regret)


def test_streamed_regret_has_the_numpy_streams_distribution():
    """LinTS on a small pool: the cumulative regret at ``T`` over 300 runs of each stream.
    Different numbers, the same distribution: Welch's statistic within 4.9 standard errors
    (a false alarm of 1e-6 under the normal approximation, good at 300 runs), and the
    two-sample Kolmogorov-Smirnov test of the runs' regrets above p = 1e-6."""
    from scipy import stats

    env = vr.envs.pool(dim=3, n_arms=5, zeta=0.5, seed=0)
    a = vr.simulate("lints", env, 60, 300, seed=1, stream="philox").cumulative_regret[:, -1]
    b = vr.simulate("lints", env, 60, 300, seed=2).cumulative_regret[:, -1]
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4.9 * se
    assert stats.ks_2samp(a, b).pvalue > 1e-6
    # and the test has power: LinTS against the random policy is far outside the bound
    c = vr.simulate("random", env, 60, 300, seed=1, stream="philox").cumulative_regret[:, -1]
    assert abs(c.mean() - a.mean()) > 4.9 * math.sqrt(a.var(ddof=1) / a.size
                                                      + c.var(ddof=1) / c.size)


def test_divergence_names_the_lowest_diverging_run(monkeypatch):
    """LMC with a constant step too large for some runs: the error names the lowest
    diverging run at its first diverging round, what the runs alone give, whatever the
    batches."""
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    pol = make_policy("lmc", 3, step_size=0.02, schedule="constant")
    alone = {}
    for r in range(8):
        try:
            vr.simulate(pol, env, 30, 1, seed=3, first_run=r, stream="philox")
        except vr.DivergenceError as err:
            assert err.run == r
            alone[r] = err.round
    # the step makes some runs diverge and not others (else the test shows nothing)
    assert 0 < len(alone) < 8 and min(alone) > 0, alone
    first = min(alone)
    for batch in (1024, 2, 3):
        monkeypatch.setattr(_streams, "CPU_BATCH", batch)
        with pytest.raises(vr.DivergenceError) as info:
            vr.simulate(pol, env, 30, 8, seed=3, stream="philox")
        assert (info.value.run, info.value.round) == (first, alone[first])
        assert info.value.step_size == 0.02


def test_errors():
    env = _pool()
    with pytest.raises(ValueError, match="stream"):
        vr.simulate("lints", env, 5, stream="mt19937")
    with pytest.raises(ValueError, match="fused loop"):
        vr.simulate("lints", env, 5, stream="philox", fused=False)
    laplace = vr.ThompsonSampling(vr.inference.Laplace(D))  # linear Laplace: no fused loop
    with pytest.raises(ValueError, match="fused loop"):
        vr.simulate(laplace, env, 5, stream="philox")
    with pytest.raises(ValueError, match="new_instance_per_run"):
        vr.simulate("lints", env, 5, stream="philox", new_instance_per_run=True)

    class Redrawn(vr.envs.PoolEnvironment):
        def _contexts(self, T, rng):
            return super()._contexts(T, rng) * 2.0

    with pytest.raises(ValueError, match=r"counter-based stream.*Redrawn"):
        vr.simulate("lints", Redrawn(dim=D, n_arms=K, seed=0), 5, stream="philox")
    mixture = vr.envs.MixtureEnvironment(weights=np.ones((K, 1)), coefs=np.ones((K, 1, D)))
    with pytest.raises(ValueError, match=r"not available for the environment Mixture"):
        vr.simulate("lints", mixture, 5, stream="philox", device="cuda")
    with pytest.raises(ValueError, match="not available"):
        mixture.counter_piece()


SIM_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import vits_ref as vr
    from vits_ref.bandit import _streams

    cases, T, out = json.loads(sys.argv[1])
    res = {}
    for name, env_name, reward, kl in cases:
        if env_name == "pool":
            env = vr.envs.pool(dim=3, n_arms=5, zeta=0.7, reward=reward, seed=2)
        else:
            env = vr.envs.hard_instance(dim=3, n_arms=5, reward=reward, seed=2)
        for chunk in (64, 5):  # one launch, and launches of 5 rounds (5, 5, 2)
            _streams.CHUNK_ROUNDS = chunk
            calls = []
            r = vr.simulate(name, env, T, 3, seed=11, kl_rounds=kl or None, first_run=1,
                            stream="philox", device="cuda",
                            progress=lambda done, n: calls.append((done, n)))
            key = f"{name}/{env_name}/{reward}/{chunk}"
            res[key + "/regret"], res[key + "/arms"] = r.regret, r.arms
            res[key + "/progress"] = np.array(calls)
            if r.kl is not None:
                res[key + "/kl"] = r.kl
    np.savez(out, **res)
    print("DONE")
""")

SIM_CASES = [["lints", "pool", "linear", [3, 12]], ["random", "hard", "logistic", []]]
SLOW_SIM_CASES = [[name, "pool", "quadratic", [3, 12] if has_kl(name) else []]
                  for name in POLICY_NAMES] + [["lmc", "hard", "linear", []]]


def _simulated(cases, tmp_path):
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    out = str(tmp_path / "res.npz")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", SIM_SCRIPT, json.dumps([cases, T, out])],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and "DONE" in res.stdout, res.stderr[-3000:]
    with np.load(out) as f:
        got = dict(f)
    compared = 0
    for name, env_name, reward, kl in cases:
        env = ENVS[env_name if reward == "linear" else f"{env_name}-{reward}"]()
        cpu_res = vr.simulate(name, env, T, 3, seed=11, kl_rounds=kl or None, first_run=1,
                              stream="philox")
        for chunk in (64, 5):
            key = f"{name}/{env_name}/{reward}/{chunk}"
            np.testing.assert_array_equal(got[key + "/arms"], cpu_res.arms, err_msg=key)
            np.testing.assert_array_equal(got[key + "/regret"], cpu_res.regret, err_msg=key)
            if kl:
                rel = np.abs(got[key + "/kl"] - cpu_res.kl) / (1.0 + np.abs(cpu_res.kl))
                assert rel.max() < 1e-10, key  # BLAS against loops (test_simulate_cuda.py)
            assert got[key + "/progress"].tolist() == [[3, 3]]
            compared += 1
    return compared


def test_cuda_equals_cpu_under_simulator(tmp_path):
    assert _simulated(SIM_CASES, tmp_path) == 2 * len(SIM_CASES)  # two chunkings each


@pytest.mark.slow
def test_cuda_equals_cpu_under_simulator_every_policy(tmp_path):
    assert _simulated(SLOW_SIM_CASES, tmp_path) == 2 * len(SLOW_SIM_CASES)


def test_plan_and_memory_of_issue_11():
    """16 384 runs x 1000 rounds of VITS-II at d = 20, K = 50 hold the states and outputs
    only: 76.6 KB a run (docs/streams.md), 1.25 GB in all: one batch on an 80 GB GPU."""
    spec = make_policy("vits-ii", 20).fused()
    dims = _streams.noise_dims(spec, 20, 50)
    assert dims == (20, 50, 20, 20, 10, 1)
    per_run = _streams.bytes_per_run(spec, dims, 1000)
    assert per_run == 8 * (6230 + 1340 + 2 + 2000 + 1)
    assert 16_384 * per_run < 1.3e9
    assert _streams.plan(spec, dims, 1000, 16_384, free_device_bytes=79 * 2 ** 30) == (16_384,
                                                                                       64)
    # a device whose DEVICE_FRACTION holds 6000 runs: three batches, evened out
    free = int(6000 * per_run / _streams_fraction())
    assert _streams.plan(spec, dims, 1000, 16_384, free_device_bytes=free) == (5462, 64)


def _streams_fraction():
    from vits_ref.bandit._cuda_simulate import DEVICE_FRACTION

    return DEVICE_FRACTION


PTX_SCRIPT = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    # no GPU here: an sm_90 device (H100) stubbed; the inlined bodies are registered for
    # the CUDA target by the library itself (vits_ref.config.cuda_jit)
    import numba.cuda.dispatcher as disp

    class Device:
        compute_capability = (9, 0)

    disp.get_current_device = lambda: Device()
    import numpy as np
    from numba import cuda, typeof
    import vits_ref as vr
    from vits_ref.bandit import _streams
    from vits_ref.drivers import cuda as dcuda
    from vits_ref.kernels.bandit_streams import scratch_size
    from vits_ref.bandit.simulate import make_policy

    d, K, R, T = 20, 50, 4, 3
    for name, env in (("lints", vr.envs.pool(dim=d, n_arms=K, seed=0)),
                      ("random", vr.envs.hard_instance(dim=d, n_arms=K, reward="logistic",
                                                       seed=0))):
        spec = make_policy(name, d).fused(kl=True)
        env_round, env_params = env.counter_piece()
        dims = _streams.noise_dims(spec, d, K)
        args = (spec.params, env_params, np.zeros((R, 2), np.uint64), dims,
                np.zeros((R, _streams.state_size(spec, dims, T))),
                np.zeros((R, scratch_size(*dims))), 0, T, np.zeros(2, np.int64),
                np.zeros((R, T)), np.zeros((R, T), np.int64), np.zeros((R, 2)),
                np.zeros(R, np.int64))
        kern = dcuda._bandit_streams_kernel(spec.piece, env_round)
        ptx, _ = cuda.compile_ptx(kern.py_func, tuple(typeof(a) for a in args), cc=(9, 0))
        assert ".entry" in ptx and len(ptx) > 10_000, name
    print("DONE")
""")


@pytest.mark.slow
def test_streamed_kernel_compiles_to_ptx():
    """The streamed loop's one-run-per-thread kernel (LinTS on the pool, random on the
    logistic hard instance) compiles to sm_90 PTX without a GPU, given the CUDA
    registration of the inlined bodies that the whole CUDA path needs (docs/cuda.md).
    About 50 s."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    res = subprocess.run([sys.executable, "-c", PTX_SCRIPT], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0 and "DONE" in res.stdout, res.stderr[-3000:]
