"""The cooperative-kernel design experiment of docs/cuda.md, as tests.

1. A body can be rebuilt with the block-cooperative primitives without duplicating its
   source (:func:`vits_ref.drivers.cuda_coop.rebind`), and the original is untouched.
2. A body whose array stores all happen inside primitives ("primitive-only") then runs
   on a block of several threads, all running the body's scalar flow, and equals the
   serial body bit for bit (under the simulator).
3. Today's VITS body is not primitive-only: run by every thread of a block on shared state
   its in-place loops (``mu[i] -= h_mu g[i]``, ...) are applied once per thread. The
   simulator runs each thread's stretch between barriers to the end before the next
   thread, one legal schedule of a real GPU, and shows it: with 1 thread the rebuilt body
   equals the serial one, with 3 it does not. :func:`serial_shared_writes` lists the
   stores that cause it.
"""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r'''
import json, warnings
warnings.simplefilter("ignore")
import numpy as np
from numba import cuda
from vits_ref.drivers.cuda_coop import rebind
from vits_ref.kernels import vits as kv
from vits_ref.kernels.linalg import gemm_nn, gemm_tn, gram
from vits_ref.kernels.potential import VARIANT_II


def primitive_only(etaV, B, C, W1, CtC, W2):
    """VITS-II's three products, no store outside a primitive."""
    gemm_nn(etaV, B, W1)
    gram(C, CtC)
    gemm_nn(C, CtC, W2)
    gemm_tn(W1, W2, CtC)


coop = rebind(primitive_only, modules=("__main__",))
apply_coop = rebind(kv.vits_apply)


@cuda.jit
def k_prim(etaV, B, C, W1, CtC, W2):
    r = cuda.blockIdx.x
    coop(etaV[r], B[r], C[r], W1[r], CtC[r], W2[r])


@cuda.jit
def k_apply(mu, B, C, g, A, AB, CtC, W2, work):
    apply_coop(VARIANT_II, mu, B, C, g, A, AB, CtC, 0.1, 0.05, W2, work)


rng = np.random.default_rng(0)
d = 4
out = {"rebuilt": coop is not primitive_only, "prim": {}, "apply": {}}
args = [rng.standard_normal((2, d, d)) for _ in range(3)] + [np.zeros((2, d, d))] * 3
ref = [a.copy() for a in args]
for r in range(2):
    primitive_only(*[a[r] for a in ref])
for nt in (1, 3, 4):
    got = [a.copy() for a in args]
    k_prim[2, nt](*got)
    out["prim"][nt] = max(float(np.abs(g - e).max()) for g, e in zip(got, ref))
state = [rng.standard_normal(d), rng.standard_normal((d, d)), rng.standard_normal((d, d)),
         rng.standard_normal(d), rng.standard_normal((d, d)), rng.standard_normal((d, d)),
         rng.standard_normal((d, d)), np.zeros((d, d)), np.zeros((d, 2 * d))]
ref = [a.copy() for a in state]
kv.vits_apply(VARIANT_II, *ref[:7], 0.1, 0.05, *ref[7:])
for nt in (1, 3):
    got = [a.copy() for a in state]
    k_apply[1, nt](*got)
    out["apply"][nt] = max(float(np.abs(g - e).max()) for g, e in zip(got[:3], ref[:3]))
print("RESULT" + json.dumps(out))
'''


@pytest.fixture(scope="module")
def simulated():
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.split("RESULT")[1])


def test_primitive_only_body_runs_cooperatively(simulated):
    assert simulated["rebuilt"]
    # bit for bit: each output entry is summed by one thread in the loops' order
    assert simulated["prim"] == {"1": 0.0, "3": 0.0, "4": 0.0}


def test_vits_body_races_when_run_by_a_block(simulated):
    assert simulated["apply"]["1"] == 0.0  # the rebuilt body itself is right
    # three threads apply mu -= h_mu g (and B's, C's in-place updates) three times: the
    # state moves by O(h) = O(0.05) more, far above rounding
    assert simulated["apply"]["3"] > 1e-3


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


def test_serial_shared_writes_names_the_racing_stores():
    pytest.importorskip("numba_cuda")
    from vits_ref.kernels import vits as kv

    from vits_ref.drivers import cuda_coop

    found = cuda_coop.serial_shared_writes(kv.PIECE.update)
    where = {(name.rsplit(".", 1)[-1], src) for name, _, src in found}
    assert ("vits_apply", "mu[i] -= h_mu * g[i]") in where
    assert ("stats_add", "b[i] += r * x[i]") in where
    # the primitives themselves are not listed
    assert not any(name.startswith("vits_ref.kernels.linalg.gemm") for name, _, _ in found)


def _real_gpu():
    try:
        import numba
        from numba import cuda

        return bool(cuda.is_available()) and not numba.config.ENABLE_CUDASIM
    except Exception:
        return False


@pytest.mark.skipif(not _real_gpu(), reason="no CUDA GPU (numba.cuda.is_available() is False)")
def test_primitive_only_body_on_gpu():
    """The rebuilt body compiled for a real GPU (FMA contraction: rounding, not bits)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.split("RESULT")[1])
    assert max(out["prim"].values()) < 1e-12
