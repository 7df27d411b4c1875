"""The cooperative-kernel design of docs/cuda.md, as tests.

1. A body can be rebuilt with the block-cooperative primitives without duplicating its
   source (:func:`vits_ref.drivers.cuda_coop.rebind`), and the original is untouched.
2. A body whose array stores all happen inside primitives ("block-safe") then runs on a
   block of several threads, all running the body's scalar flow on the same (shared)
   state, and equals the serial body bit for bit (under the simulator, which runs each
   thread's stretch between barriers to the end before the next thread starts: one legal
   schedule of a real GPU, and the one that exposes a store made outside a primitive,
   which every thread would apply once more).
3. The fused bandit pieces are block-safe: the rebuilt VITS ``update`` (the statistics and
   a round's steps, every variant) and every piece's whole rounds body on blocks of 3 and 5
   threads equal the serial bodies bit for bit, and
   :func:`~vits_ref.drivers.cuda_coop.serial_shared_writes` finds no store outside the
   primitives but the loop's outputs (``regret``, ``arms``, ``kl_out``: written with the
   same value by every thread and never read back). A new store outside a primitive fails
   that test.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import requires_gpu

SCRIPT = r'''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from numba import cuda
# the library's decorator: on a GPU it registers the inlined kernel bodies for numba-cuda
# (vits_ref.config.cuda_jit); a bare cuda.jit types them with numba's own IR and fails
from vits_ref.config import cuda_jit
from vits_ref.drivers.cuda_coop import rebind
from vits_ref.kernels import bandit
from vits_ref.kernels import langevin as klangevin
from vits_ref.kernels import lints as klints
from vits_ref.kernels import linucb as klinucb
from vits_ref.kernels import vits as kv
from vits_ref.kernels.linalg import gemm_nn, gemm_tn, gram


def primitive_only(etaV, B, C, W1, CtC, W2):
    """VITS-II's three products, no store outside a primitive."""
    gemm_nn(etaV, B, W1)
    gram(C, CtC)
    gemm_nn(C, CtC, W2)
    gemm_tn(W1, W2, CtC)


coop = rebind(primitive_only, modules=("__main__",))


@cuda_jit
def k_prim(etaV, B, C, W1, CtC, W2):
    r = cuda.blockIdx.x
    coop(etaV[r], B[r], C[r], W1[r], CtC[r], W2[r])


upd_coop = rebind(kv.update)


@cuda_jit
def k_update(params, buf, x, r, n_obs, noise, status):
    state, _ = kv.views(buf, 3, 4, noise.shape[1], 1)
    ok = upd_coop(params, state, x, r, n_obs, noise)
    status[cuda.threadIdx.x] = 1 if ok else 0


# VITS's update (statistics and S = 2 steps of M = 2 draws, d = 3), every variant
UPDATE_PARAMS = [kv.VITSParams(variant=v, symmetrize=sym, schedule=bandit.SCHEDULE_CONSTANT,
                                eta=0.5, lam=2.0, h0_mu=0.05, h0=0.02, max_abs_B=1e6)
                 for v, sym in ((kv.VARIANT_I, False), (kv.VARIANT_II, False),
                                (kv.VARIANT_HF, True), (kv.VARIANT_HF_CV, False))]


def run_update(nt):
    """``(buf, status)`` after N_UPDATES updates per variant; ``nt = 0``: the serial body."""
    rng = np.random.default_rng(1)
    d, K, M = 3, 4, 2
    bufs, stats = [], []
    for params in UPDATE_PARAMS:
        buf = np.zeros(kv.state_size(d, K, M, 1))
        state, _ = kv.views(buf, d, K, M, 1)
        kv.init(params, state, rng.standard_normal(d))
        status = np.zeros(max(nt, 1))
        for t in range(N_UPDATES):
            x, r, noise = rng.standard_normal(d), float(rng.standard_normal()), \
                rng.standard_normal((2, M, d))
            if nt == 0:
                status[0] = kv.update(params, state, x, r, t + 1, noise)
            else:
                k_update[1, nt](params, buf, x, r, t + 1, noise, status)
        bufs.append(buf)
        stats.append(status[:1] if nt == 0 else status)
    return np.concatenate(bufs), np.concatenate([[s.min(), s.max()] for s in stats])


# every fused piece's rounds body: (piece, params, S, M, selection noise length)
PIECES = {
    "lints": (klints.PIECE, klints.LinTSParams(eta=0.5, lam=2.0, track=True), 1, 1, 3),
    "linucb": (klinucb.PIECE, klinucb.LinUCBParams(alpha=0.7, lam=2.0), 1, 1, 1),
    "vits-ii": (kv.PIECE, kv.VITSParams(variant=kv.VARIANT_II, symmetrize=False,
                                        schedule=bandit.SCHEDULE_DECAYED, eta=0.5, lam=2.0,
                                        h0_mu=0.5, h0=0.2, max_abs_B=1e6), 2, 1, 3),
    "vits-hf-cv": (kv.PIECE, kv.VITSParams(variant=kv.VARIANT_HF_CV, symmetrize=True,
                                           schedule=bandit.SCHEDULE_CONSTANT, eta=0.5,
                                           lam=2.0, h0_mu=0.05, h0=0.02, max_abs_B=1e6),
                   2, 2, 3),
    "lmc": (klangevin.PIECE, klangevin.LangevinParams(schedule=bandit.SCHEDULE_CONSTANT,
                                                      eta=0.5, lam=2.0, h0=0.05), 2, 1, 0),
    "random": (bandit.RANDOM, bandit.RandomParams(unused=0.0), 0, 1, 1),
}
ROUNDS = {name: rebind(bandit.make_bandit_rounds(p[0])) for name, p in PIECES.items()}
SERIAL = {name: bandit.make_bandit_rounds(p[0]) for name, p in PIECES.items()}


def _rounds_kernel(rounds):
    @cuda_jit
    def k(params, buf, contexts, means, rewards, init_noise, sel, step, kl_rounds, regret,
          arms, kl_out, status):
        status[cuda.threadIdx.x] = rounds(params, buf, 0, contexts, means, rewards,
                                          init_noise, sel, step, kl_rounds, regret, arms,
                                          kl_out)
    return k


KERNELS = {name: _rounds_kernel(r) for name, r in ROUNDS.items()}


def run_rounds(name, nt):
    """The outputs of N_ROUNDS rounds (d = 3, K = 4) of piece ``name``; ``nt = 0``: serial."""
    piece, params, S, M, n_sel = PIECES[name]
    rng = np.random.default_rng(2)
    T, K, d = N_ROUNDS, 4, 3
    contexts = rng.standard_normal((T, K, d))
    means = contexts @ rng.standard_normal(d)
    rewards = means + rng.standard_normal((T, K))
    init_noise = rng.standard_normal(d)
    sel = rng.random((T, max(n_sel, 1))) if name == "random" else \
        rng.standard_normal((T, max(n_sel, 1)))
    step = rng.standard_normal((T, S, M, d))
    kl_rounds = np.array([1, 3, 4])  # the rounds after T are never reached
    buf = np.zeros(piece.state_size(d, K, M, 1))
    regret, arms, kl_out = np.zeros(T), np.zeros(T, dtype=np.int64), np.zeros(3)
    args = (params, buf, contexts, means, rewards, init_noise, sel, step, kl_rounds,
            regret, arms, kl_out)
    if nt == 0:
        status = np.array([SERIAL[name](params, buf, 0, *args[2:])], dtype=np.float64)
    else:
        status = np.zeros(nt)
        KERNELS[name][1, nt](*args, status)
    return [buf, regret, arms.astype(float), kl_out, np.array([status.min(), status.max()])]


rng = np.random.default_rng(0)
d = 4
out = {"rebuilt": coop is not primitive_only, "prim": {}, "update": {}, "rounds": {}}
args = [rng.standard_normal((2, d, d)) for _ in range(3)] + [np.zeros((2, d, d))] * 3
ref = [a.copy() for a in args]
for r in range(2):
    primitive_only(*[a[r] for a in ref])
for nt in (1, 3, 4):
    got = [a.copy() for a in args]
    k_prim[2, nt](*got)
    out["prim"][nt] = max(float(np.abs(g - e).max()) for g, e in zip(got, ref))
THREADS, N_UPDATES, N_ROUNDS = json.loads(sys.argv[1])
ref = run_update(0)
for nt in THREADS:
    got = run_update(nt)
    out["update"][nt] = max(float(np.abs(g - e).max()) for g, e in zip(got, ref))
for name in PIECES:
    ref = run_rounds(name, 0)
    for nt in THREADS:
        got = run_rounds(name, nt)
        out["rounds"].setdefault(name, {})[nt] = [
            float(np.nanmax(np.abs(g - e))) if g.size else 0.0 for g, e in zip(got, ref)]
print("RESULT" + json.dumps(out))
'''


def _run(*args, gpu=False):
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if not gpu:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    res = subprocess.run([sys.executable, "-c", SCRIPT, *map(json.dumps, args)],
                         capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.split("RESULT")[1])


#: default: blocks of 3 threads (the simulator runs every thread in Python: ~15 s), two
#: updates per VITS variant and three rounds per piece; the slow test: 1, 3 and 5 threads.
DEFAULT = [[3], 2, 3]
FULL = [[1, 3, 5], 3, 4]


@pytest.fixture(scope="module")
def simulated():
    return _run(DEFAULT)


def test_primitive_only_body_runs_cooperatively(simulated):
    assert simulated["rebuilt"]
    # bit for bit: each output entry is summed by one thread in the loops' order
    assert simulated["prim"] == {"1": 0.0, "3": 0.0, "4": 0.0}


def test_vits_update_runs_cooperatively(simulated):
    # the whole update (statistics, S = 2 steps, finiteness checks) of every variant on one
    # block of 1, 3 and 5 threads: the same bits as the serial body, and every thread
    # returns the same status (the min and max over the threads are compared too)
    assert simulated["update"] == {"3": 0.0}


@pytest.mark.parametrize("name", ["lints", "linucb", "vits-ii", "vits-hf-cv", "lmc", "random"])
def test_piece_rounds_run_cooperatively(simulated, name):
    # init, select, update and the KL of 4 rounds: state buffer, regret, arms, KL, status
    assert simulated["rounds"][name] == {"3": [0.0] * 5}


@pytest.mark.slow
def test_pieces_run_cooperatively_on_blocks_of_1_to_5_threads():
    out = _run(FULL)
    assert out["update"] == {"1": 0.0, "3": 0.0, "5": 0.0}
    for name, by_threads in out["rounds"].items():
        assert by_threads == {str(nt): [0.0] * 5 for nt in (1, 3, 5)}, name


def test_rebind_keeps_the_original():
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels import coop_linalg, linalg
    from vits_ref.kernels import vits as kv

    from vits_ref.drivers import cuda_coop

    new = cuda_coop.rebind(kv.PIECE.update)
    assert new is not kv.PIECE.update
    # the original body still calls the serial steps, the rebuilt one a rebuilt copy
    assert kv.PIECE.update.__globals__["_linear_steps"] is kv._linear_steps
    assert new.__globals__["_linear_steps"] is not kv._linear_steps
    assert kv.gaussian_draw.__globals__["gemv"] is linalg.gemv
    assert cuda_coop.rebind(kv.gaussian_draw).__globals__["gemv"] is coop_linalg.gemv
    # a body that reaches no primitive is returned as it is
    assert cuda_coop.rebind(linalg.all_finite_vec) is linalg.all_finite_vec
    assert cuda_coop.rebind(linalg.gemm_nn) is coop_linalg.gemm_nn


#: The stores outside primitives that a block may run in every thread: the loop's outputs,
#: written with the same value by every thread and never read back by the body.
BENIGN = {"regret[tg] = instant_regret(means, arm)", "arms[tg] = arm",
          "kl_out[nk] = kl(params, state)"}


@pytest.mark.parametrize("name", ["lints", "linucb", "vits", "lmc", "random"])
def test_fused_pieces_store_only_through_primitives(name):
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels import bandit, langevin, lints, linucb, vits

    from vits_ref.drivers import cuda_coop

    piece = {"lints": lints.PIECE, "linucb": linucb.PIECE, "vits": vits.PIECE,
             "lmc": langevin.PIECE, "random": bandit.RANDOM}[name]
    found = cuda_coop.serial_shared_writes(bandit.make_bandit_rounds(piece))
    unsafe = [(fn, line, src) for fn, line, src in found if src not in BENIGN]
    assert unsafe == []
    assert {src for _, _, src in found} == BENIGN  # the check still sees the loop's stores


def test_serial_shared_writes_names_a_racing_store():
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels.linalg import axpy_vec

    from vits_ref.drivers import cuda_coop

    def racy(mu, g, h):  # the pre-refactor VITS mean step
        for i in range(mu.shape[0]):
            mu[i] -= h * g[i]

    def safe(mu, g, h):
        axpy_vec(-h, g, mu)

    found = cuda_coop.serial_shared_writes(racy, modules=(__name__,))
    assert [src for _, _, src in found] == ["mu[i] -= h * g[i]"]
    assert cuda_coop.serial_shared_writes(safe, modules=(__name__,)) == []


@requires_gpu
def test_primitive_only_body_on_gpu():
    """The rebuilt bodies compiled for a real GPU (FMA contraction: rounding, not bits)."""
    out = _run([[1, 32], 2, 3], gpu=True)
    assert max(out["prim"].values()) < 1e-12
    assert max(out["update"].values()) < 1e-9
