"""The streamed loop (``stream="philox"``) one block of threads per run.

The environments' round bodies (kernels/bandit_streams.py) store only through primitives
with cooperative twins (kernels/coop_philox.py), so the streamed loop is block-safe
(``cuda_coop.block_safe_streams``) and ``simulate(..., stream="philox", device="cuda")``
runs the VITS rounds one block per run (``cuda_coop.BlockStreams``), as
``_cuda_simulate.layout_for_streams`` chooses. Under Numba's CUDA simulator (a subprocess:
``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba is imported), at tiny sizes:

* each new cooperative primitive equals its serial body bit for bit on blocks of 1, 3 and
  5 threads (two blocks at once, each on its own problem; more threads than arms at
  K = 2). Tolerance 0: every entry is computed by one thread with the serial loop's
  arithmetic in its order, so a difference is a synchronisation or indexing bug. An
  independent NumPy expression checks the serial bodies themselves (1e-12 relative for
  the sums of ``linear_means``, d <= 4: rounding ~1e-16; exact for the element-wise
  ones, the same IEEE operations);
* ``stream="philox", device="cuda"`` in the block layout with 3 threads per block equals
  ``device="cpu"`` for VITS-II, VITS-HF and LinTS (forced: ``LAYOUT = "block"``) on the
  pool (linear and quadratic rewards) and the hard instance (linear; LinTS on the
  logistic one too), with the rules of ``tests/test_streams.py``: arms equal, regret bit
  for bit (the simulator runs the bodies in Python with the C library's ``log``/``cos``/
  ``sin``, as Numba's CPU code), KL to ``KL_TOL`` relative (the CPU's compiled loops
  against the simulator's Python arithmetic: ~1e-15 at d = 3; an algorithmic difference,
  another draw or step, moves the KL by 1e-3 or more);
* chunks of 2 rounds a launch and the state in global memory (``SHARED_BUDGET = 0``) give
  the same rows; the layout by size and its record (``_cuda_simulate.last_layout``).

In process: ``block_safe_streams`` holds for every fused piece on both environments.
"""

import json
import textwrap

import numpy as np
import pytest
from conftest import result_under_cuda_simulator

import vits_ref as vr
from vits_ref.bandit import _cuda_simulate
from vits_ref.bandit.simulate import POLICY_NAMES, has_kl, make_policy

KL_TOL = 1e-10
D, K, T, R = 3, 4, 6, 3
KL_ROUNDS = [2, 6]
FIRST_RUN = 1
THREADS = (1, 3, 5)
BLOCK_N = 3
CASES = [[name, env] for name in ("vits-ii", "vits-hf", "lints")
         for env in ("pool", "pool-quadratic", "hard")] + [["lints", "hard-logistic"]]


def _env(name):
    if name.startswith("pool"):
        reward = "quadratic" if name.endswith("quadratic") else "linear"
        return vr.envs.pool(dim=D, n_arms=K, zeta=0.7, reward=reward, seed=2)
    reward = "logistic" if name.endswith("logistic") else "linear"
    return vr.envs.hard_instance(dim=D, n_arms=K, reward=reward, seed=2)


SCRIPT = textwrap.dedent("""
    import json, sys, time, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    from numba import cuda
    import vits_ref as vr
    from vits_ref.bandit import _cuda_simulate as cs, _streams
    from vits_ref.kernels import bandit_streams as bs, coop_philox as cp
    from vits_ref.bandit.simulate import has_kl, make_policy

    D, K, T, R, KL_ROUNDS, FIRST_RUN, THREADS, BLOCK_N, CASES, out = json.loads(sys.argv[1])
    times, info, res = {}, {"prim": []}, {}

    # ------------------------------------------------------------- the primitives
    @cuda.jit
    def k_pool(pool, zeta, idx, X):
        r = cuda.blockIdx.x
        cp.pool_contexts(pool, zeta, idx[r], X[r])

    @cuda.jit
    def k_means(X, theta, code, means):
        r = cuda.blockIdx.x
        cp.linear_means(X[r], theta, code, means[r])

    @cuda.jit
    def k_bern(means, rewards):
        r = cuda.blockIdx.x
        cp.bernoulli_rewards(means[r], rewards[r])

    @cuda.jit
    def k_noisy(means, s, eps, rewards):
        r = cuda.blockIdx.x
        cp.noisy_means(means[r], s, eps[r], rewards[r])

    def rel(a, b):
        return float(np.max(np.abs(a - b) / (1.0 + np.abs(b))))

    rng = np.random.default_rng(5)
    t = time.perf_counter()
    for nt in THREADS:
        for k, d in ((2, 3), (5, 4), (4, 1)):
            P = 6
            pool = rng.standard_normal((P, d))
            idx = rng.integers(0, P, size=(2, k)).astype(np.float64)
            X = rng.standard_normal((2, k, d))
            got = X.copy()
            k_pool[2, nt](pool, 0.7, idx, got)
            loop = X.copy()
            for r in range(2):
                bs.pool_contexts(pool, 0.7, idx[r], loop[r])
            npref = 0.7 * X + pool[idx.astype(np.int64)]
            info["prim"].append(["pool_contexts", nt, k, d, bool(np.array_equal(got, loop)),
                                 bool(np.array_equal(loop, npref))])
            theta = rng.standard_normal(d)
            for code in (bs.REWARD_LINEAR, bs.REWARD_QUADRATIC, bs.REWARD_LOGISTIC):
                got = np.full((2, k), np.nan)
                k_means[2, nt](X, theta, code, got)
                loop = np.full((2, k), np.nan)
                for r in range(2):
                    bs.linear_means(X[r], theta, code, loop[r])
                z = X @ theta
                npref = [z, z * z, 1.0 / (1.0 + np.exp(-z))][code]
                info["prim"].append([f"linear_means/{code}", nt, k, d,
                                     bool(np.array_equal(got, loop)), rel(loop, npref)])
            means = rng.random((2, k))
            u = rng.random((2, k))
            u[0, 0] = means[0, 0]  # a tie: u < m is False, reward 0
            got = u.copy()
            k_bern[2, nt](means, got)
            loop = u.copy()
            for r in range(2):
                bs.bernoulli_rewards(means[r], loop[r])
            npref = (u < means).astype(np.float64)
            info["prim"].append(["bernoulli_rewards", nt, k, d,
                                 bool(np.array_equal(got, loop)),
                                 bool(np.array_equal(loop, npref))])
            eps = rng.standard_normal(2)
            got = np.full((2, k), np.nan)
            k_noisy[2, nt](means, 1.3, eps, got)
            loop = np.full((2, k), np.nan)
            for r in range(2):
                bs.noisy_means(means[r], 1.3, eps[r], loop[r])
            npref = means + 1.3 * eps[:, None]
            info["prim"].append(["noisy_means", nt, k, d, bool(np.array_equal(got, loop)),
                                 bool(np.array_equal(loop, npref))])
    times["primitives"] = time.perf_counter() - t

    # ------------------------------------------------------------- the whole loop
    def env_of(name):
        if name.startswith("pool"):
            reward = "quadratic" if name.endswith("quadratic") else "linear"
            return vr.envs.pool(dim=D, n_arms=K, zeta=0.7, reward=reward, seed=2)
        reward = "logistic" if name.endswith("logistic") else "linear"
        return vr.envs.hard_instance(dim=D, n_arms=K, reward=reward, seed=2)

    def run(name, env_name, key):
        t = time.perf_counter()
        r = vr.simulate(name, env_of(env_name), T, R, seed=11, first_run=FIRST_RUN,
                        kl_rounds=KL_ROUNDS if has_kl(name) else None, stream="philox",
                        device="cuda")
        times[key] = time.perf_counter() - t
        res[key + "/regret"], res[key + "/arms"] = r.regret, r.arms
        if r.kl is not None:
            res[key + "/kl"] = r.kl
        return dict(cs.last_layout)

    layouts = {}
    cs.LAYOUT, cs.BLOCK_THREADS = "block", BLOCK_N
    for name, env_name in CASES:
        layouts[f"{name}/{env_name}"] = run(name, env_name, f"{name}/{env_name}")
    # launches of 2 rounds (the state carried between them), and the state in global memory
    _streams.CHUNK_ROUNDS = 2
    layouts["chunked"] = run("vits-ii", "pool", "chunked")
    _streams.CHUNK_ROUNDS = 64
    cs.SHARED_BUDGET = 0
    layouts["global"] = run("vits-ii", "hard", "global")
    cs.SHARED_BUDGET = None
    # the layout by size: VITS one block per run (SIMULATOR_BLOCK_THREADS threads here),
    # LinTS one run per thread
    cs.LAYOUT, cs.BLOCK_THREADS = None, None
    for name in ("vits-ii", "lints"):
        layouts[name + "/bysize"] = run(name, "pool", name + "/bysize")
        spec = make_policy(name, D).fused(kl=has_kl(name))
        env_round, _ = env_of("pool").counter_piece()
        layouts[name + "/bysize"]["layout_for_streams"] = list(
            cs.layout_for_streams(spec, env_round, D))
    info["layouts"], info["times"] = layouts, times
    np.savez(out, **res)
    print("RESULT" + json.dumps(info))
""")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The streamed block layout's results under the simulator, in a subprocess."""
    out = str(tmp_path_factory.mktemp("sblock") / "res.npz")
    args = json.dumps([D, K, T, R, KL_ROUNDS, FIRST_RUN, THREADS, BLOCK_N, CASES, out])
    info = result_under_cuda_simulator(SCRIPT, args)
    with np.load(out) as f:
        info["arrays"] = dict(f)
    return info


def test_cooperative_primitives_equal_serial_bodies(simulated):
    rows = simulated["prim"]
    # 4 primitives (linear_means with 3 reward codes) x 3 shapes x 3 thread counts
    assert len(rows) == 6 * 3 * len(THREADS)
    assert sorted({r[1] for r in rows}) == list(THREADS)
    for name, nt, k, d, equal, ref in rows:
        assert equal, (name, nt, k, d)  # bit for bit against the serial body
        if name.startswith("linear_means"):
            assert ref < 1e-12, (name, nt, k, d, ref)
        else:
            assert ref is True, (name, nt, k, d)


def _cpu(name, env_name):
    kl = KL_ROUNDS if has_kl(name) else None
    return vr.simulate(name, _env(env_name), T, R, seed=11, first_run=FIRST_RUN,
                       kl_rounds=kl, stream="philox")


def _assert_same(arrays, key, ref):
    np.testing.assert_array_equal(arrays[key + "/arms"], ref.arms, err_msg=key)
    np.testing.assert_array_equal(arrays[key + "/regret"], ref.regret, err_msg=key)
    if ref.kl is not None:
        rel = np.abs(arrays[key + "/kl"] - ref.kl) / (1.0 + np.abs(ref.kl))
        assert rel.max() < KL_TOL, (key, rel.max())
    else:
        assert key + "/kl" not in arrays


@pytest.mark.parametrize(("name", "env_name"), [tuple(c) for c in CASES])
def test_block_layout_equals_cpu(simulated, name, env_name):
    ref = _cpu(name, env_name)
    # not a trivial comparison: the policy played several arms and had regret
    assert ref.regret.sum() > 0 and np.unique(ref.arms).size > 1
    key = f"{name}/{env_name}"
    lay = simulated["layouts"][key]
    assert lay["layout"] == "block" and lay["threads_per_block"] == BLOCK_N, lay
    assert lay["stream"] == "philox" and lay["shared"] is True, lay
    _assert_same(simulated["arrays"], key, ref)


def test_chunks_and_global_memory(simulated):
    lay = simulated["layouts"]
    assert lay["chunked"]["threads_per_block"] == BLOCK_N and lay["chunked"]["shared"]
    _assert_same(simulated["arrays"], "chunked", _cpu("vits-ii", "pool"))
    assert lay["global"]["layout"] == "block" and lay["global"]["shared"] is False
    _assert_same(simulated["arrays"], "global", _cpu("vits-ii", "hard"))


def test_layout_by_size(simulated):
    lay = simulated["layouts"]
    v, li = lay["vits-ii/bysize"], lay["lints/bysize"]
    n = _cuda_simulate.SIMULATOR_BLOCK_THREADS
    assert v["layout"] == "block" and v["threads_per_block"] == n, v
    assert "O(S d^3)" in v["reason"] and v["layout_for_streams"] == ["block", n]
    assert li["layout"] == "thread" and "not in BLOCK_PIECES" in li["reason"], li
    assert li["layout_for_streams"] == ["thread", _cuda_simulate.THREADS_PER_BLOCK]
    for name in ("vits-ii", "lints"):
        _assert_same(simulated["arrays"], name + "/bysize", _cpu(name, "pool"))


def test_every_fused_piece_is_block_safe_on_both_environments():
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels import bandit_streams

    from vits_ref.drivers import cuda_coop

    rounds = {_env(e).counter_piece()[0] for e in ("pool", "hard", "hard-logistic")}
    assert rounds == {bandit_streams.pool_round, bandit_streams.hard_round}
    pieces = {make_policy(name, D).fused().piece for name in POLICY_NAMES}
    assert len(pieces) >= 5  # lints, linucb, vits, lmc, random
    for piece in pieces:
        for env_round in rounds:
            assert cuda_coop.block_safe_streams(piece, env_round) == (True, []), (
                piece.name, env_round.__name__)
    # the check can fail: a round body storing outside the primitives is reported

    def racing_round(env, k0, k1, t, X, x_flat, means, rewards):
        for a in range(means.shape[0]):
            rewards[a] = means[a]

    racing_round.__module__ = "vits_ref.kernels.fake"
    piece = make_policy("vits-ii", D).fused().piece
    safe, stores = cuda_coop.block_safe_streams(piece, racing_round)
    assert not safe and [s[2] for s in stores] == ["rewards[a] = means[a]"]
