"""The block-per-run CUDA driver (``vits_ref.drivers.cuda_coop.BlockRounds``) and the launch
configuration by size (``vits_ref.bandit._cuda_simulate.layout_for``).

Under Numba's CUDA simulator (a subprocess: ``NUMBA_ENABLE_CUDASIM=1`` must be set before
Numba is imported), ``simulate(..., device="cuda")`` in the block layout equals
``device="cpu"`` on the same seeds at tiny sizes (d = 3, K = 4, 2 runs x 6 rounds):

* every block-safe piece (``cuda_coop.block_safe``) with blocks of 1, 3 and 5 threads,
  so that the barriers and the split of every primitive are exercised (more threads than
  a vector's entries at d = 3), the other policies of the same piece (the VITS variants,
  which call other primitives) with 3 threads; a piece that is not block-safe with blocks
  of 1 thread (the serial loop: the machinery, whatever the piece);
* in batches of 1 run and chunks of 2 rounds; with the state in shared memory (the
  default at these sizes) and in global memory (a shared-memory budget of 0 bytes);
* two diverging runs of one batch name the CPU's run, round and step size.

"Equal" as in ``tests/test_simulate_cuda.py``: arms and the divergence equal, ``regret``
bit-identical (a look-up of the pre-realised means at the played arm), ``kl`` to ``KL_TOL``
relative. The simulator runs each primitive's entries in the serial loops' order, so the
block layout equals the thread layout bit for bit; the tolerance is for the CPU side,
whose products are BLAS calls.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import requires_gpu, result_under_cuda_simulator

import vits_ref as vr
from vits_ref.bandit import _cuda_simulate
from vits_ref.bandit.simulate import POLICY_NAMES, has_kl, make_policy

# The CPU's products are BLAS calls, the simulator's the loops of kernels/linalg.py (and
# their cooperative twins, which sum each entry in the same order): a few ulps per product,
# ~1e-15 relative over these runs (tests/test_simulate_cuda.py measured 1.2e-15 at d = 3);
# 1e-10 still catches any algorithmic difference (a different draw or step moves the KL by
# 1e-3 or more).
KL_TOL = 1e-10

D, K, T, R = 3, 4, 6, 2
KL_ROUNDS = [2, 5]
FIRST_RUN = 1
THREADS = (1, 3, 5)
DIVERGE = {"policy": "vits-ii", "step_size": 0.0035, "schedule": "constant"}

SCRIPT = textwrap.dedent("""
    import json, sys, time, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import vits_ref as vr
    from vits_ref.bandit import _cuda_simulate as cs
    from vits_ref.drivers import cuda_coop
    from vits_ref.bandit.simulate import POLICY_NAMES, has_kl, make_policy

    D, K, T, R, KL_ROUNDS, FIRST_RUN, THREADS, DIVERGE, out = json.loads(sys.argv[1])
    env = vr.envs.pool(dim=D, n_arms=K, zeta=1.0, seed=1)
    res, ran, times = {}, {}, {}

    def run(name, key, **kw):
        kl = KL_ROUNDS if has_kl(name) else None
        t = time.perf_counter()
        r = vr.simulate(name, env, T, R, seed=3, kl_rounds=kl, first_run=FIRST_RUN,
                        device="cuda", **kw)
        times[key] = time.perf_counter() - t
        res[key + "/regret"], res[key + "/arms"] = r.regret, r.arms
        if r.kl is not None:
            res[key + "/kl"] = r.kl
        return dict(cs.last_layout)

    cs.LAYOUT = "block"
    safe, pieces = {}, set()
    for name in POLICY_NAMES:
        piece = make_policy(name, D).fused().piece
        safe[name] = cuda_coop.block_safe(piece)[0]
        ran[name] = []
        # every thread count for a piece's first policy, 3 threads for its other policies
        # (the VITS variants: other primitives of the same piece)
        threads = (THREADS if piece not in pieces else (3,)) if safe[name] else (1,)
        pieces.add(piece)
        for n in threads:
            cs.BLOCK_THREADS = n
            lay = run(name, f"{name}/{n}")
            assert lay["layout"] == "block" and lay["threads_per_block"] == n, lay
            ran[name].append([n, lay["shared"]])

    # the block layout's own choice (BLOCK_THREADS unset): a block-safe piece gets
    # SIMULATOR_BLOCK_THREADS threads here, one that is not 1 thread
    cs.BLOCK_THREADS = None
    default = {name: run(name, name + "/default") for name in ("vits-ii", "random")}
    cs.LAYOUT = None
    bysize = {name: run(name, name + "/bysize") for name in ("vits-ii", "lints")}

    # the largest thread count that is correct for VITS-II now
    vits_n = max(THREADS) if safe["vits-ii"] else 1
    cs.LAYOUT, cs.BLOCK_THREADS = "block", vits_n
    # batches of 1 run, chunks of 2 rounds (plan: 2 B n c <= HOST_BUDGET)
    budget, min_chunk = cs.HOST_BUDGET, cs.MIN_CHUNK
    cs.MIN_CHUNK = 2
    spec = make_policy("vits-ii", D).fused(kl=True)
    cs.HOST_BUDGET = 2 * 1 * 2 * cs.bytes_per_round(spec, D, K)
    plan = cs.plan(spec, T, D, K, R, len(KL_ROUNDS))
    calls = []
    run("vits-ii", "chunked", progress=lambda done, n: calls.append([done, n]))
    cs.HOST_BUDGET, cs.MIN_CHUNK = budget, min_chunk
    # the state in global memory
    cs.SHARED_BUDGET = 0
    glob = run("vits-ii", "global")
    cs.SHARED_BUDGET = None
    # two runs of one batch diverge (runs 5 and 7 of 5..7, at rounds 9 and 7 on the CPU):
    # one batch of 3 runs in chunks of 2 rounds, so run 7 diverges a chunk before run 5
    pol = make_policy(DIVERGE["policy"], D, step_size=DIVERGE["step_size"],
                      schedule=DIVERGE["schedule"])
    cs.MIN_CHUNK = 2
    cs.HOST_BUDGET = 2 * 3 * 2 * cs.bytes_per_round(pol.fused(), D, K)
    try:
        vr.simulate(pol, env, 10, 3, seed=3, first_run=5, device="cuda")
        res["diverge"] = np.array([-1.0, -1.0, -1.0])
    except vr.errors.DivergenceError as err:
        res["diverge"] = np.array([err.run, err.round, err.step_size])
    # the benchmark's block rows (vits_ref._bench.cuda.measure_block) on its inputs: the
    # arms of the thread layout's call on the same inputs
    from vits_ref._bench import cuda as bench
    from vits_ref.drivers import cuda as dcuda
    spec = make_policy("vits-ii", D).fused()
    inputs = bench._inputs(env, spec, R, T, D, np.random.SeedSequence(0))
    thread_arms = dcuda.bandit_runs(spec.piece, spec.params, *inputs,
                                    np.zeros(0, np.int64))[1]
    brow = bench.measure_block(spec, inputs, {"repeats": 1}, "simulator", 0.0, thread_arms)
    # the streamed loop (stream="philox") one block per run against one run per thread:
    # 1 thread per block (no environment's round body is block-safe yet), chunks of 2
    # rounds, the state in shared and in global memory
    from vits_ref.bandit import _streams
    streams = {}
    cs.LAYOUT, cs.BLOCK_THREADS = "block", None
    for name in ("vits-ii", "lints", "random"):
        spec = make_policy(name, D).fused(kl=has_kl(name))
        env_round, env_params, dims = _streams.check(spec, name, env, False)
        keys = _streams.run_keys(np.random.SeedSequence(3), 0, R)
        kl = KL_ROUNDS if has_kl(name) else []
        sizes = (_streams.state_size(spec, dims, T), _streams.scratch_size(*dims))
        outs = []
        for cls, kw in ((dcuda.BanditStreams, {}), (cuda_coop.BlockStreams, {}),
                        (cuda_coop.BlockStreams, {"shared_budget": 0})):
            runs = cls(spec.piece, spec.params, env_round, env_params, keys, dims, T, kl,
                       *sizes, **kw)
            for _ in range(T // 2):
                runs.advance(2)
            outs.append(runs.results())
        streams[name] = {
            "equal": all(np.array_equal(a, b) for o in outs[1:] for a, b in zip(o, outs[0])),
            "safe": cuda_coop.block_safe_streams(spec.piece, env_round)[0],
            "layout": cs.layout_for_streams(spec, env_round, D)}
        try:
            cuda_coop.BlockStreams(spec.piece, spec.params, env_round, env_params, keys, dims,
                                   T, kl, *sizes, threads_per_block=3)
            streams[name]["refused"] = ""
        except ValueError as err:
            streams[name]["refused"] = str(err)
    np.savez(out, **res)
    print("RESULT" + json.dumps({"bench": brow, "streams": streams, "safe": safe, "ran": ran,
                                 "default": default,
                                 "bysize": bysize, "plan": list(plan), "progress": calls,
                                 "vits_n": vits_n, "global": glob,
                                 "diverge_threads": vits_n, "times": times}))
""")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The block layout's results under the simulator, in a subprocess."""
    out = str(tmp_path_factory.mktemp("coopsim") / "res.npz")
    args = json.dumps([D, K, T, R, KL_ROUNDS, FIRST_RUN, THREADS, DIVERGE, out])
    info = result_under_cuda_simulator(SCRIPT, args)
    with np.load(out) as f:
        info["arrays"] = dict(f)
    return info


def _ref(name, **kw):
    kl = KL_ROUNDS if has_kl(name) else None
    return vr.simulate(name, vr.envs.pool(dim=D, n_arms=K, zeta=1.0, seed=1), T, R, seed=3,
                       kl_rounds=kl, first_run=FIRST_RUN, **kw)


def _assert_same(key, arrays, ref):
    np.testing.assert_array_equal(arrays[key + "/arms"], ref.arms, err_msg=key)
    np.testing.assert_array_equal(arrays[key + "/regret"], ref.regret, err_msg=key)
    if ref.kl is not None:
        got = arrays[key + "/kl"]
        rel = np.abs(got - ref.kl) / (1.0 + np.abs(ref.kl))
        assert rel.max(initial=0.0) < KL_TOL, (key, rel.max())


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_block_layout_equals_cpu(simulated, name):
    ref = _ref(name)
    assert ref.regret.sum() > 0 and np.unique(ref.arms).size > 1  # not a trivial comparison
    ran = simulated["ran"][name]
    first = [n for n in POLICY_NAMES
             if make_policy(n, D).fused().piece is make_policy(name, D).fused().piece][0]
    want = (list(THREADS) if name == first else [3]) if simulated["safe"][name] else [1]
    assert [n for n, _ in ran] == want
    for n, shared in ran:
        # the state in dynamic shared memory at these sizes (a piece without state: none)
        assert shared == (make_policy(name, D).fused().piece.state_size(D, K, 1, 1) > 0)
        _assert_same(f"{name}/{n}", simulated["arrays"], ref)


def test_random_piece_is_block_safe(simulated):
    """The random policy stores nothing outside the loop's outputs: it runs with several
    threads whatever the state of the other pieces, so the multi-thread path is always
    exercised."""
    assert simulated["safe"]["random"]
    assert [n for n, _ in simulated["ran"]["random"]] == list(THREADS)


def test_layout_choice_under_simulator(simulated):
    sim_n = _cuda_simulate.SIMULATOR_BLOCK_THREADS
    d = simulated["default"]
    assert d["random"]["threads_per_block"] == sim_n
    want = sim_n if simulated["safe"]["vits-ii"] else 1
    assert d["vits-ii"]["layout"] == "block" and d["vits-ii"]["threads_per_block"] == want
    b = simulated["bysize"]
    assert b["lints"]["layout"] == "thread" and "not in BLOCK_PIECES" in b["lints"]["reason"]
    if simulated["safe"]["vits-ii"]:
        assert b["vits-ii"]["layout"] == "block"
        assert b["vits-ii"]["threads_per_block"] == sim_n
    else:  # not block-safe: one run per thread, and the report says why
        assert b["vits-ii"]["layout"] == "thread" and "not block-safe" in b["vits-ii"]["reason"]
    arrays = simulated["arrays"]
    for key in ("vits-ii/default", "vits-ii/bysize", "random/default", "lints/bysize"):
        _assert_same(key, arrays, _ref(key.split("/")[0]))


def test_chunks_batches_and_global_memory(simulated):
    ref = _ref("vits-ii")
    assert simulated["plan"] == [1, 2]  # batches of 1 run, chunks of 2 rounds
    _assert_same("chunked", simulated["arrays"], ref)
    assert simulated["progress"] == [[1, R], [2, R]]
    g = simulated["global"]
    assert g["shared"] is False and g["threads_per_block"] == simulated["vits_n"]
    _assert_same("global", simulated["arrays"], ref)


def test_bench_block_rows(simulated):
    """The benchmark's block-layout measurement runs on the simulator and its arms equal
    the thread layout's on the same inputs."""
    b = simulated["bench"]
    want = _cuda_simulate.SIMULATOR_BLOCK_THREADS if simulated["safe"]["vits-ii"] else 1
    assert b["threads"] == want and b["shared"] is True
    assert b["cpu_arms"] == 1.0 and b["diverged"] == 0 and b["cuda"] > 0


def test_streamed_loop_block_layout(simulated):
    """The streamed loop one block per run (``cuda_coop.BlockStreams``, 1 thread per block:
    its environment round bodies are not block-safe) equals one run per thread
    (``drivers.cuda.BanditStreams``) bit for bit, with the state in shared and in global
    memory; more threads are refused while it is not block-safe, and the layout by size
    (with ``LAYOUT = "block"`` forced here) gives it 1 thread per block."""
    for name, got in simulated["streams"].items():
        assert got["equal"], name
        if got["safe"]:  # the day the environments' rounds are block-safe
            assert got["refused"] == ""
        else:
            assert "is not block-safe" in got["refused"] and got["layout"] == ["block", 1]


def test_divergence_matches_cpu(simulated):
    """Runs 5 and 7 of runs 5..7 diverge on the CPU (rounds 9 and 7); the block layout, one
    batch in chunks of 2 rounds, names the CPU's run, round and step size."""
    pol = make_policy(DIVERGE["policy"], D, step_size=DIVERGE["step_size"],
                      schedule=DIVERGE["schedule"])
    with pytest.raises(vr.errors.DivergenceError) as info:
        vr.simulate(pol, vr.envs.pool(dim=D, n_arms=K, zeta=1.0, seed=1), 10, 3, seed=3,
                    first_run=5)
    err = info.value
    assert [err.run, err.round] == [5, 9]
    assert simulated["arrays"]["diverge"].tolist() == [err.run, err.round, err.step_size]


# --------------------------------------------------------------------------- in process


def test_block_threads_by_size():
    bt = _cuda_simulate.block_threads
    assert bt(20) == 96  # d^2 / 4 = 100: 3 warps
    assert [bt(d) for d in (1, 3, 10, 13)] == [32] * 4 and bt(14) == 64  # at least a warp
    assert bt(32) == 256 and bt(60) == _cuda_simulate.MAX_BLOCK_THREADS
    assert all(bt(d) % 32 == 0 and bt(d) <= bt(d + 1) for d in range(1, 80))


def test_layout_for(monkeypatch):
    pytest.importorskip("numba_cuda")
    from vits_ref.drivers import cuda_coop

    cs = _cuda_simulate
    lints, vits, rnd = (make_policy(n, 20).fused() for n in ("lints", "vits-ii", "random"))
    assert cs.layout_for(lints, 20) == ("thread", cs.THREADS_PER_BLOCK)
    vits_safe = cuda_coop.block_safe(vits.piece)[0]
    n = min(96, cs.SIMULATOR_BLOCK_THREADS) if cs.simulator_enabled() else 96
    assert cs.layout_for(vits, 20) == (("block", n) if vits_safe
                                       else ("thread", cs.THREADS_PER_BLOCK))
    monkeypatch.setattr(cs, "LAYOUT", "thread")
    assert cs.layout_for(vits, 20) == ("thread", cs.THREADS_PER_BLOCK)
    monkeypatch.setattr(cs, "LAYOUT", "block")
    assert cs.layout_for(rnd, 20)[0] == "block"
    assert cs.layout_for(lints, 20) == ("block", 1 if not cuda_coop.block_safe(
        lints.piece)[0] else cs.layout_for(rnd, 20)[1])
    monkeypatch.setattr(cs, "BLOCK_THREADS", 7)
    assert cs.layout_for(lints, 20) == ("block", 7)
    monkeypatch.setattr(cs, "LAYOUT", "blocks")
    with pytest.raises(ValueError, match="LAYOUT must be None, 'thread' or 'block'"):
        cs.layout_for(lints, 20)


def test_block_safe_names_the_racing_stores():
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels import bandit

    from vits_ref.drivers import cuda_coop

    # the loop's own outputs are benign: the random piece has no other store
    assert cuda_coop.block_safe(bandit.RANDOM) == (True, [])
    assert cuda_coop.serial_shared_writes(bandit.make_bandit_rounds(bandit.RANDOM))

    def racing(params, state, X, noise):  # an in-place update outside a primitive
        state[0][0] += 1.0
        return 0

    racing.__module__ = "vits_ref.kernels.fake"
    piece = bandit.BanditPiece("fake", bandit.RANDOM.state_size, bandit.RANDOM.views,
                               bandit.RANDOM.init, racing, bandit.RANDOM.update,
                               bandit.RANDOM.kl)
    safe, stores = cuda_coop.block_safe(piece)
    assert not safe and [s[2] for s in stores] == ["state[0][0] += 1.0"]
    with pytest.raises(ValueError, match="'fake' piece is not block-safe"):
        cuda_coop.BlockRounds(piece, (), 2, 3, 3, 4, 1, [], threads_per_block=3)


# --------------------------------------------------------------------------- PTX

PTX_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    # no GPU here: the device's compute capability, sm_90 (H100)
    import numba.cuda.dispatcher as disp

    class Device:
        compute_capability = (9, 0)

    disp.get_current_device = lambda: Device()
    import numpy as np
    from numba import cuda, typeof
    from vits_ref.drivers import cuda_coop
    from vits_ref.bandit.simulate import make_policy

    d, K, R, n = 20, 50, 4, 2
    spec = make_policy(sys.argv[1], d).fused(kl=True)
    init, sel, st = spec.draw(np.random.SeedSequence(0), n, d)
    n_state = spec.piece.state_size(d, K, st.shape[2], n)
    args = (spec.params, np.zeros((R, n_state)), True, 0, np.zeros((R, n, K, d)),
            np.zeros((R, n, K)), np.zeros((R, n, K)), np.zeros((R,) + init.shape),
            np.zeros((R,) + sel.shape), np.zeros((R,) + st.shape), np.zeros(2, np.int64),
            np.zeros((R, n)), np.zeros((R, n), np.int64), np.zeros((R, 2)),
            np.zeros(R, np.int64))
    kern = cuda_coop._block_rounds_kernel(spec.piece)
    ptx, _ = cuda.compile_ptx(kern.py_func, tuple(typeof(a) for a in args), cc=(9, 0))
    print("RESULT" + json.dumps({"chars": len(ptx), "bar": ptx.count("bar.sync"),
                                 "extern_shared": ".extern .shared" in ptx}))
""")


@pytest.mark.slow
def test_block_kernel_compiles_to_ptx():
    """The rebuilt VITS-II loop in the block kernel compiles for an H100 (sm_90 PTX, no GPU
    needed): barriers and the dynamic shared array are in the code. About 25 s."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    res = subprocess.run([sys.executable, "-c", PTX_SCRIPT, "vits-ii"], capture_output=True,
                         text=True, env=env, timeout=900)
    if "NVVM" in res.stderr and "not" in res.stderr and res.returncode:
        pytest.skip("no NVVM (libnvvm) here to compile PTX")
    assert res.returncode == 0 and "RESULT" in res.stdout, res.stderr[-3000:]
    out = json.loads(res.stdout.split("RESULT")[1])
    assert out["extern_shared"] and out["bar"] > 50 and out["chars"] > 10_000, out


# --------------------------------------------------------------------------- real GPU


@requires_gpu
@pytest.mark.parametrize("name", ["vits-i", "vits-ii", "vits-hf", "lints"])
def test_block_layout_on_gpu_full_size(name, monkeypatch):
    """d = 20, K = 50, 256 runs x 50 rounds: the block layout (the default for VITS, forced
    for LinTS) equals the CPU, the VITS state in shared memory through the opt-in above
    48 KiB (cuda_coop.OPT_IN), and in global memory (SHARED_BUDGET = 0)."""
    env = vr.envs.pool(dim=20, n_arms=50, zeta=1.0, seed=1)
    kl = [1, 25, 50]
    ref = vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl)
    monkeypatch.setattr(_cuda_simulate, "LAYOUT", "block")
    for budget in (None, 0):
        monkeypatch.setattr(_cuda_simulate, "SHARED_BUDGET", budget)
        got = vr.simulate(name, env, 50, 256, seed=11, kl_rounds=kl, device="cuda")
        lay = _cuda_simulate.last_layout
        assert lay["layout"] == "block" and lay["threads_per_block"] == 96, lay
        assert lay["shared"] is (budget is None), lay
        np.testing.assert_array_equal(got.arms, ref.arms, err_msg=name)
        np.testing.assert_array_equal(got.regret, ref.regret, err_msg=name)
        rel = np.abs(got.kl - ref.kl) / (1.0 + np.abs(ref.kl))
        assert rel.max() < KL_TOL, (name, rel.max())
