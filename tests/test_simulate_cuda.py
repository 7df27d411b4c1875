"""``simulate(..., device="cuda")`` equals ``device="cpu"`` on the same seeds.

Under Numba's CUDA simulator (a subprocess: ``NUMBA_ENABLE_CUDASIM=1`` must be set before
Numba is imported) at tiny sizes for every fused policy, with ``kl_rounds``, ``first_run``,
batches of one run and a diverging run; the CPU side runs in this process. On a machine
with a GPU the gated tests repeat the comparison at full size (d = 20, K = 50,
256 runs x 50 rounds).

What "equal" means (see :mod:`vits_ref.bandit._cuda_simulate`): arms and the divergence
(run, round, step) are equal, ``regret`` is bit-identical (a look-up of the pre-realised
means at the played arm), ``kl`` agrees to ``KL_TOL`` relative.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import requires_gpu

import vits_ref as vr
from vits_ref.bandit import _cuda_simulate
from vits_ref.bandit.simulate import POLICY_NAMES, has_kl, make_policy

# The KL is computed from the Gaussian state after t rounds of inner steps: on the CPU the
# products are BLAS calls, on CUDA (and the simulator) the loops of kernels/linalg.py, and
# the GPU compiler fuses multiply-adds. Each of the ~10 * 10 steps of a run adds a few
# ulps (d <= 4: ~1e-16 relative per product); measured 1.2e-15 at d = 3 over 8 rounds.
# 1e-10 leaves five orders of margin and still catches any algorithmic difference (a
# different draw or step changes the KL at the 1e-3 level or more).
KL_TOL = 1e-10

D, K, T, R = 3, 4, 10, 3
KL_ROUNDS = [2, 7, 10]
FIRST_RUN = 2
DIVERGE = {"policy": "vits-ii", "step_size": 0.0035, "schedule": "constant",
           "first_run": 3}  # run 5 (the third of the block) diverges at round 9 on the CPU


def _env(d=D, k=K):
    return vr.envs.pool(dim=d, n_arms=k, zeta=1.0, seed=1)


def _kl_rounds(name, kl_rounds):
    return kl_rounds if has_kl(name) else None


SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import vits_ref as vr
    from vits_ref.bandit import _cuda_simulate
    from vits_ref.bandit.simulate import POLICY_NAMES, has_kl, make_policy

    D, K, T, R, KL_ROUNDS, FIRST_RUN, DIVERGE, out = json.loads(sys.argv[1])
    env = vr.envs.pool(dim=D, n_arms=K, zeta=1.0, seed=1)
    res = {}
    for name in POLICY_NAMES:
        kl = KL_ROUNDS if has_kl(name) else None
        r = vr.simulate(name, env, T, R, seed=3, kl_rounds=kl, first_run=FIRST_RUN,
                        device="cuda")
        res[name + "/regret"], res[name + "/arms"] = r.regret, r.arms
        if r.kl is not None:
            res[name + "/kl"] = r.kl
    budget, min_chunk = _cuda_simulate.HOST_BUDGET, _cuda_simulate.MIN_CHUNK
    # every policy in batches of 2 runs (of 3) and chunks of 3 rounds (of 10: 3, 3, 3, 1):
    # a host budget of 2 chunks of 2 runs x 3 rounds (plan: 2 B n c <= HOST_BUDGET)
    _cuda_simulate.MIN_CHUNK = 3
    _cuda_simulate.DRAW_THREADS = 2  # a batch's runs after the first drawn on two threads
    for name in POLICY_NAMES:
        kl = KL_ROUNDS if has_kl(name) else None
        spec = make_policy(name, D).fused(kl=kl is not None)
        _cuda_simulate.HOST_BUDGET = 2 * 2 * 3 * _cuda_simulate.bytes_per_round(spec, D, K)
        res[name + "/plan"] = np.array(_cuda_simulate.plan(spec, T, D, K, R, len(kl or ())))
        calls = []
        r = vr.simulate(name, env, T, R, seed=3, kl_rounds=kl, first_run=FIRST_RUN,
                        device="cuda", progress=lambda done, n: calls.append((done, n)))
        res[name + "/chunked/regret"], res[name + "/chunked/arms"] = r.regret, r.arms
        res[name + "/chunked/progress"] = np.array(calls)
        if r.kl is not None:
            res[name + "/chunked/kl"] = r.kl
    # two runs of one batch diverge (runs 5 and 7 of 5..7, at rounds 9 and 7): in chunks
    # of 2 rounds run 7 diverges a chunk before run 5, which is the one to name
    pol = make_policy(DIVERGE["policy"], D, step_size=DIVERGE["step_size"],
                      schedule=DIVERGE["schedule"])
    _cuda_simulate.MIN_CHUNK = 2
    _cuda_simulate.HOST_BUDGET = 2 * 3 * 2 * _cuda_simulate.bytes_per_round(pol.fused(), D, K)
    res["diverge_many/plan"] = np.array(_cuda_simulate.plan(pol.fused(), T, D, K, 3))
    try:
        vr.simulate(pol, env, T, 3, seed=3, first_run=5, device="cuda")
        res["diverge_many"] = np.array([-1.0, -1.0, -1.0])
    except vr.errors.DivergenceError as err:
        res["diverge_many"] = np.array([err.run, err.round, err.step_size])
    # a chunk drawn by the helper thread fails the data check (the third chunk's contexts
    # scaled to 1e200): the ValueError reaches the caller
    class Boom(type(env)):
        def realise_chunks(self, n_rounds, rng=None, chunk=1024):
            for i, real in enumerate(super().realise_chunks(n_rounds, rng, chunk)):
                yield type(real)(real.contexts * (1e200 if i == 2 else 1.0), real.means,
                                 real.rewards)

    try:
        vr.simulate("lints", Boom(**env._params()), T, 3, seed=3, device="cuda")
        res["boom"] = np.array("")
    except ValueError as err:
        res["boom"] = np.array(str(err))
    _cuda_simulate.MIN_CHUNK = 3
    # the device's budget alone: 1 run of 3.5 rounds fits DEVICE_FRACTION of the free
    # memory, 2 runs of 3 rounds do not (plan: B (s + 2 n c) <= D): batches of 1 run,
    # chunks of 3 rounds
    _cuda_simulate.HOST_BUDGET = budget
    spec = make_policy("vits-ii", D).fused(kl=True)
    dev = (_cuda_simulate.resident_bytes_per_run(spec, T, D, K, len(KL_ROUNDS))
           + 7 * _cuda_simulate.bytes_per_round(spec, D, K))
    _cuda_simulate._free_device_bytes = lambda: int(dev / _cuda_simulate.DEVICE_FRACTION)
    res["device/plan"] = np.array(_cuda_simulate.plan(spec, T, D, K, R, len(KL_ROUNDS),
                                                      _cuda_simulate._free_device_bytes()))
    calls = []
    r = vr.simulate("vits-ii", env, T, R, seed=3, first_run=FIRST_RUN, kl_rounds=KL_ROUNDS,
                    device="cuda",
                    progress=lambda done, n: calls.append((done, n)))
    res["batched/regret"], res["batched/arms"], res["batched/kl"] = r.regret, r.arms, r.kl
    res["batched/progress"] = np.array(calls)
    _cuda_simulate.MIN_CHUNK = min_chunk
    pol = make_policy(DIVERGE["policy"], D, step_size=DIVERGE["step_size"],
                      schedule=DIVERGE["schedule"])
    try:
        vr.simulate(pol, env, T, R, seed=3, first_run=DIVERGE["first_run"], device="cuda")
        res["diverge"] = np.array([-1.0, -1.0, -1.0])
    except vr.errors.DivergenceError as err:
        res["diverge"] = np.array([err.run, err.round, err.step_size])
    np.savez(out, **res)
    print("DONE")
""")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The device='cuda' results computed under the simulator, in a subprocess."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    out = str(tmp_path_factory.mktemp("cudasim") / "res.npz")
    args = json.dumps([D, K, T, R, KL_ROUNDS, FIRST_RUN, DIVERGE, out])
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", SCRIPT, args], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0 and "DONE" in res.stdout, res.stderr[-3000:]
    with np.load(out) as f:
        return dict(f)


def _assert_same(name, got_regret, got_arms, got_kl, ref):
    np.testing.assert_array_equal(got_arms, ref.arms, err_msg=name)
    np.testing.assert_array_equal(got_regret, ref.regret, err_msg=name)
    if ref.kl is not None:
        assert got_kl is not None and got_kl.shape == ref.kl.shape, name
        rel = np.abs(got_kl - ref.kl) / (1.0 + np.abs(ref.kl))
        assert rel.max(initial=0.0) < KL_TOL, (name, rel.max())


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_cuda_equals_cpu_under_simulator(simulated, name):
    ref = vr.simulate(name, _env(), T, R, seed=3, kl_rounds=_kl_rounds(name, KL_ROUNDS),
                      first_run=FIRST_RUN)
    assert ref.fused
    if has_kl(name):
        # LinTS is the exact posterior (KL 0); the VITS states are not (KL > 0), so the
        # comparison of their KL is not a comparison of zeros
        assert ref.kl.shape == (R, len(KL_ROUNDS)) and np.all(ref.kl >= 0)
        assert name == "lints" or np.all(ref.kl > 0)
    _assert_same(name, simulated[name + "/regret"], simulated[name + "/arms"],
                 simulated.get(name + "/kl"), ref)
    # batches of 2 runs (of 3), chunks of 3 rounds (of 10): the same rows
    assert simulated[name + "/plan"].tolist() == [2, 3]
    _assert_same(name + " (chunked)", simulated[name + "/chunked/regret"],
                 simulated[name + "/chunked/arms"], simulated.get(name + "/chunked/kl"), ref)
    assert simulated[name + "/chunked/progress"].tolist() == [[2, R], [3, R]]


def test_cuda_batches_and_progress_under_simulator(simulated):
    ref = vr.simulate("vits-ii", _env(), T, R, seed=3, first_run=FIRST_RUN,
                      kl_rounds=KL_ROUNDS)
    _assert_same("batched", simulated["batched/regret"], simulated["batched/arms"],
                 simulated["batched/kl"], ref)
    # the device's budget: one run per batch, chunks of 3 rounds, progress after each batch
    assert simulated["device/plan"].tolist() == [1, 3]
    assert simulated["batched/progress"].tolist() == [[r + 1, R] for r in range(R)]


def test_cuda_divergence_matches_cpu_under_simulator(simulated):
    pol = make_policy(DIVERGE["policy"], D, step_size=DIVERGE["step_size"],
                      schedule=DIVERGE["schedule"])
    with pytest.raises(vr.errors.DivergenceError) as info:
        vr.simulate(pol, _env(), T, R, seed=3, first_run=DIVERGE["first_run"])
    err = info.value
    # a run after the first of the block, late in the run: the indices are not trivial
    assert err.run > DIVERGE["first_run"] and err.round > 1
    assert simulated["diverge"].tolist() == [err.run, err.round, err.step_size]


def test_cuda_chunk_draw_error_under_simulator(simulated):
    msg = str(simulated["boom"])
    assert "drew contexts must have entries of magnitude <= 1e+150" in msg, msg
    assert "too large for the sufficient statistics" in msg


def test_cuda_divergence_of_two_runs_under_simulator(simulated, monkeypatch):
    """Runs 5 and 7 of runs 5..7 diverge, at rounds 9 and 7: the CPU names the lower run at
    its first diverging round, with its default plan and with chunks of one round; the
    device, one batch of the 3 runs in chunks of 2 rounds (run 7 diverges in the fourth
    chunk, run 5 only in the fifth), names the same, found after the batch's last chunk."""
    sim = sys.modules["vits_ref.bandit.simulate"]
    pol = make_policy(DIVERGE["policy"], D, step_size=DIVERGE["step_size"],
                      schedule=DIVERGE["schedule"])
    with pytest.raises(vr.errors.DivergenceError) as whole:
        vr.simulate(pol, _env(), T, 3, seed=3, first_run=5)
    monkeypatch.setattr(sim, "_MEMORY_BUDGET", 1)  # CPU plan: chunks of 1 round
    with pytest.raises(vr.errors.DivergenceError) as chunked:
        vr.simulate(pol, _env(), T, 3, seed=3, first_run=5, n_threads=2)
    got = [[e.value.run, e.value.round, e.value.step_size] for e in (whole, chunked)]
    assert got[0] == got[1] and got[0][:2] == [5, 9]
    assert simulated["diverge_many/plan"].tolist() == [3, 2]
    assert simulated["diverge_many"].tolist() == got[0]


# --------------------------------------------------------------------------- error paths


def test_error_without_numba_cuda(monkeypatch):
    monkeypatch.setattr(_cuda_simulate, "_numba_cuda_installed", lambda: False)
    with pytest.raises(RuntimeError, match=r"numba-cuda.*pip install 'vits_ref\[cuda\]'"):
        vr.simulate("lints", _env(), 5, 2, seed=0, device="cuda")


def test_error_with_broken_cuda_stack(monkeypatch):
    pytest.importorskip("numba_cuda")
    import vits_ref.config

    def broken():
        raise ImportError("numba-cuda 0.30.4 does not work with numpy 2.5.0")

    monkeypatch.setattr(vits_ref.config, "check_cuda_stack", broken)
    with pytest.raises(RuntimeError, match="does not work with numpy"):
        vr.simulate("lints", _env(), 5, 2, seed=0, device="cuda")


def test_error_without_gpu(monkeypatch):
    pytest.importorskip("numba_cuda")
    from numba import cuda

    monkeypatch.setattr(cuda, "is_available", lambda: False)
    called = []

    class Spy(type(_env())):
        def realise(self, *a, **k):  # no work before the error
            called.append(1)
            return super().realise(*a, **k)

    env = Spy(**_env()._params())
    with pytest.raises(RuntimeError, match="no usable CUDA GPU.*NUMBA_ENABLE_CUDASIM=1"):
        vr.simulate("vits-ii", env, 5, 2, seed=0, device="cuda")
    assert not called


def test_cuda_needs_a_fused_loop():
    pol = vr.bandit.policies.ThompsonSampling(vr.inference.LinTS(D, seed=0))
    with pytest.raises(ValueError, match="device='cuda' needs a fused loop"):
        vr.simulate(pol, _env(), 5, 2, seed=0, device="cuda", fused=False)


@pytest.mark.parametrize("name", ["lints", "linucb", "vits-hf", "lmc", "random"])
def test_batch_chunks_are_the_whole_draws(name):
    """The device's host draws (vits_ref.bandit._fused_draws.batch_chunks) are the rows of each
    run's whole realisation and policy noise, bit for bit, for any chunk and number of
    drawing threads (7 runs x 11 rounds; chunks of 1, 4, 11 and 20 rounds; 1, 3 and 10
    threads)."""
    from vits_ref._seeding import child
    from vits_ref.bandit._fused_draws import batch_chunks, realise

    env = _env(4, 5)
    spec = make_policy(name, 4).fused()
    seeds = [child(np.random.SeedSequence(0), r) for r in range(7)]
    whole = [realise(env, s, 11) for s in seeds]
    noise = [spec.draw(child(s, 1), 11, 4) for s in seeds]
    ref = [np.stack([getattr(w, f) for w in whole]) for f in ("contexts", "means", "rewards")]
    ref += [np.stack([x[i] for x in noise]) for i in range(3)]
    for n_threads in (1, 3, 10):
        for chunk in (1, 4, 11, 20):
            got = list(batch_chunks(spec, [env] * 7, seeds, 11, chunk, n_threads=n_threads))
            assert len(got) == -(-11 // chunk)
            for k in (0, 1, 2, 4, 5):  # rounds on axis 1
                np.testing.assert_array_equal(np.concatenate([g[k] for g in got], axis=1),
                                              ref[k], err_msg=f"{n_threads} {chunk} {k}")
            for g in got:  # the initial noise in every chunk
                np.testing.assert_array_equal(g[3], ref[3])


def test_plan_budgets(monkeypatch):
    """plan() keeps the host (2 B n c) and device (B (s + 2 n c)) bytes within their
    budgets, takes as many runs as fit with a chunk of MIN_CHUNK rounds, and gives the
    16 384 x 1000 plan of its docstring and docs/cuda.md."""
    cs = _cuda_simulate
    spec = make_policy("vits-ii", 20).fused()
    s = cs.resident_bytes_per_run(spec, 1000, 20, 50)
    c = cs.bytes_per_round(spec, 20, 50)
    assert c > 50 * 20 * 8 and s > 2 * 1000 * 8  # the contexts; regret and arms
    assert cs.plan(spec, 1000, 20, 50, 16384, 0, 79 * 10 ** 9) == (16384, 24)
    assert cs.plan(spec, 50, 20, 50, 7) == (7, 50)  # small: whole runs, one batch
    assert cs.plan(spec, 50, 20, 50, 7, free_device_bytes=1) == (1, 1)  # at least 1 and 1
    rng = np.random.default_rng(0)
    for _ in range(200):
        T, n_runs = int(rng.integers(1, 3000)), int(rng.integers(1, 40000))
        monkeypatch.setattr(cs, "HOST_BUDGET", int(rng.integers(1, 2 ** 34)))
        free = None if rng.random() < 0.3 else int(rng.integers(1, 2 ** 37))
        B, n = cs.plan(spec, T, 20, 50, n_runs, 0, free)
        s = cs.resident_bytes_per_run(spec, T, 20, 50)
        assert 1 <= B <= n_runs and 1 <= n <= T
        n0 = min(T, cs.MIN_CHUNK)
        host_ok = 2 * n0 * c <= cs.HOST_BUDGET
        dev_ok = free is None or s + 2 * n0 * c <= cs.DEVICE_FRACTION * free
        if host_ok and dev_ok:  # a run of n0 rounds fits: the budgets hold
            assert 2 * B * n * c <= cs.HOST_BUDGET
            assert free is None or B * (s + 2 * n * c) <= cs.DEVICE_FRACTION * free
            assert n >= n0
            # one more run per batch would not fit with n0 rounds, or the batches are even
            n_batches = -(-n_runs // B)
            if n_batches > 1:
                assert 2 * (B + 1) * n0 * c > cs.HOST_BUDGET or (
                    free is not None and (B + 1) * (s + 2 * n0 * c) > cs.DEVICE_FRACTION * free
                ) or -(-n_runs // (B + 1)) == n_batches


# --------------------------------------------------------------------------- real GPU


@requires_gpu
@pytest.mark.parametrize("name", POLICY_NAMES)
def test_cuda_equals_cpu_on_gpu_full_size(name):
    """Arms and regrets equal to the CPU's at full size; a policy whose CPU run diverges
    there (the symmetrised Hessian-free VITS at its default step: run 68, round 1) must
    diverge on the GPU at the same run, round and step size."""
    env = _env(20, 50)
    kl = _kl_rounds(name, [1, 25, 50])
    try:
        ref = vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl)
    except vr.errors.DivergenceError as cpu:
        with pytest.raises(vr.errors.DivergenceError) as gpu:
            vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl, device="cuda")
        assert ((gpu.value.engine, gpu.value.run, gpu.value.round, gpu.value.step_size)
                == (cpu.engine, cpu.run, cpu.round, cpu.step_size))
        return
    got = vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl, device="cuda")
    _assert_same(name, got.regret, got.arms, got.kl, ref)
    assert got.regret.shape == (256, 50) and np.isfinite(got.regret).all()


@requires_gpu
@pytest.mark.parametrize("name", ["lints", "vits-ii", "vits-hf"])
def test_cuda_chunked_equals_cpu_on_gpu_full_size(name, monkeypatch):
    """Batches of 86 runs (100 fit the host budget with 7 rounds; evened out over the 3
    batches of 256 runs) in chunks of 8 rounds (of 50) on the device."""
    env = _env(20, 50)
    kl = _kl_rounds(name, [1, 25, 50])
    spec = make_policy(name, 20).fused(kl=kl is not None)
    monkeypatch.setattr(_cuda_simulate, "MIN_CHUNK", 7)
    monkeypatch.setattr(_cuda_simulate, "HOST_BUDGET",
                        2 * 100 * 7 * _cuda_simulate.bytes_per_round(spec, 20, 50))
    assert _cuda_simulate.plan(spec, 50, 20, 50, 256, len(kl or ())) == (86, 8)
    got = vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl, device="cuda")
    ref = vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl)
    _assert_same(name, got.regret, got.arms, got.kl, ref)


# --------------------------------------------------------------------------- the benchmark


def test_bench_peak_table():
    from vits_ref._bench import cuda as bc

    assert bc.peak_fp64("NVIDIA H100 80GB HBM3")[:2] == (34.0, 67.0)  # SXM5
    assert bc.peak_fp64("NVIDIA H100 PCIe")[:2] == (26.0, 51.0)
    assert bc.peak_fp64("NVIDIA H200")[0] == 34.0
    assert bc.peak_fp64("NVIDIA A100-SXM4-80GB")[0] == 9.7
    assert bc.peak_fp64("NVIDIA GeForce RTX 4090") is None
    # VITS-II at d = 20, 10 steps: 3 products of 2 d^3 per step = 480 000 flops (the
    # 0.5 MFLOP per round of docs/performance.md)
    assert bc.flops_per_round("vits-ii", 20, 10) == 480_000
    assert bc.flops_per_round("lints", 20, 0) is None


def test_bench_says_no_gpu(monkeypatch, capsys):
    pytest.importorskip("numba_cuda")
    from numba import cuda

    from vits_ref._bench import cuda as bc

    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert bc.main(quick=True) is None
    assert "no CUDA GPU here" in capsys.readouterr().out


#: The GPU benchmark under the simulator: its printout, then after ``RESULT`` the rows it
#: returns for the logistic model (the last ones; their JSON-able fields) and the mode.
BENCH_SCRIPT = """
import json, warnings
warnings.simplefilter("ignore")
from vits_ref._bench import cuda as bc
rows = bc.main()
keys = ("policy", "label", "runs", "rounds", "cpu", "cuda", "device", "cuda_vs_cpu_arms",
        "diverged", "block", "sizes")
logistic = rows[len(rows) - len(bc.LOGISTIC_POLICIES):]
print("RESULT" + json.dumps({"mode": bc.device_mode()[0],
                             "logistic": [{k: r[k] for k in keys} for r in logistic]}))
"""


@pytest.fixture(scope="module")
def bench_run():
    """``(printout, result)`` of one run of the GPU benchmark under the simulator (a
    subprocess), shared by the tests of its linear and its logistic rows: each start of the
    simulated benchmark costs about a minute on the 2-core machine."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", BENCH_SCRIPT], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0 and "RESULT" in res.stdout, res.stderr[-3000:]
    out, result = res.stdout.split("RESULT")
    return out, json.loads(result)


def test_bench_under_simulator(bench_run):
    """The benchmark runs end to end on the simulator (tiny sizes, labelled), its CUDA arms
    equal the CPU prange's and the JAX peer's (when JAX is installed)."""
    out = bench_run[0]
    rows = [line for line in out.splitlines() if line.split()[:1] and
            line.split()[0] in POLICY_NAMES]
    assert len(rows) == len(POLICY_NAMES)
    assert all(line.endswith("[simulator: not a timing]") for line in rows)
    equal = out.split("CUDA vs CPU prange, fraction of equal arms: ")[1].splitlines()[0]
    assert equal.count("1.000") == len(POLICY_NAMES), equal
    philox = {line.split()[0]: line for line in out.splitlines()
              if line.strip().split("/")[-1:] and "/philox" in line}
    assert sorted(philox) == sorted(f"{n}/philox" for n in POLICY_NAMES), out
    assert all(line.endswith("[simulator: not a timing]") for line in philox.values())
    assert "[block layout" in philox["vits-ii/philox"], philox["vits-ii/philox"]
    assert "[thread layout" in philox["lints/philox"], philox["lints/philox"]
    from vits_ref._bench import jax_peer

    if jax_peer.available():
        peer = out.split("fraction of arms equal to the library's: ")[1].splitlines()[0]
        assert peer == "lints 1.000, vits-ii 1.000"


def test_bench_logistic_rows_under_simulator(bench_run):
    """The GPU benchmark's logistic rows (thread layout) run on the simulator at d = 3,
    K = 4: the three pieces, no block row, finite rates, and numba-cuda's arms equal the
    CPU prange's (the same bodies on the same inputs)."""
    from vits_ref._bench import cuda as bc

    got = bench_run[1]
    assert got["mode"] == "simulator"
    rows = got["logistic"]
    assert [r["policy"] for r in rows] == [name for _, name in bc.LOGISTIC_POLICIES]
    for r in rows:
        assert r["sizes"]["d"] == 3 and r["sizes"]["K"] == 4 and r["runs"] == 2, r
        assert r["block"] is None and r["diverged"] == 0, r
        assert all(np.isfinite(r[k]) and r[k] > 0 for k in ("cpu", "cuda", "device")), r
        assert r["cuda_vs_cpu_arms"] == 1.0, r
    assert bc.logistic_sizes(bc.FULL, "gpu")["d"] == bc.LOGISTIC_DIM == 10


@pytest.mark.parametrize("name", ["vits-ii", "lints"])
def test_jax_peer_is_the_same_algorithm(name):
    """The peer reproduces simulate's arms and regret on simulate's draws (d = 5, K = 8,
    16 runs x 30 rounds): any difference in the algorithm would change arms within a few
    rounds; the rounding differences (other summation orders) flip no argmax here."""
    from vits_ref._bench import jax_peer

    if not jax_peer.available():
        pytest.skip("JAX is not installed")
    from vits_ref._bench.cuda import _inputs

    d, k, t, r = 5, 8, 30, 16
    env = _env(d, k)
    spec = make_policy(name, d).fused()
    root = np.random.SeedSequence(0)
    C, M, W, i0, sel, st = _inputs(env, spec, r, t, d, root)
    p = spec.params
    if name == "vits-ii":
        reg, arms = jax_peer.vits_ii_runs(p[3], p[4], p[5], p[6])(C, M, W, i0, sel, st)
    else:
        reg, arms = jax_peer.lints_runs(p[0], p[1])(C, M, W, sel)
    ref = vr.simulate(name, env, t, r, seed=root)
    np.testing.assert_array_equal(np.asarray(arms), ref.arms)
    np.testing.assert_array_equal(np.asarray(reg), ref.regret)
    assert ref.regret.sum() > 0  # not a trivial comparison


def test_bench_options_and_the_shared_gpu_lock(tmp_path):
    """``check_options`` names the argument it refuses; the lock of ``--share-gpu`` lets one
    holder at a time in (a second open of the file blocks until the first releases, as
    between processes: ``flock`` belongs to the open file), and ``_wait_for`` returns once
    its file exists."""
    import threading
    import time

    from vits_ref._bench import cuda as bc

    assert bc.check_options(None, None) == (POLICY_NAMES, None)
    assert bc.check_options(["lints"], [1024, 16384]) == (("lints",), (1024, 16384))
    for policies, runs, word in ((["lints", "nope"], None, "policies"), ([], None, "policies"),
                                 (None, [0], "runs"), (None, [], "runs"),
                                 (None, [True], "runs"), (None, [2.0], "runs")):
        with pytest.raises(ValueError, match=word):
            bc.check_options(policies, runs)

    lock = str(tmp_path / "gpu.lock")
    order = []

    def second():
        bc._wait_for(lock + ".go", poll_s=0.01)
        with bc._exclusive(lock):
            order.append("second in")

    t = threading.Thread(target=second)
    with bc._exclusive(lock):
        t.start()
        open(lock + ".go", "w").close()
        time.sleep(0.3)  # the other thread has seen the go file and waits on the lock
        order.append("first out")
    t.join(10)
    assert order == ["first out", "second in"]
