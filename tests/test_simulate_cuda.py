"""``simulate(..., device="cuda")`` equals ``device="cpu"`` on the same seeds.

Under Numba's CUDA simulator (a subprocess: ``NUMBA_ENABLE_CUDASIM=1`` must be set before
Numba is imported) at tiny sizes for every fused policy, with ``kl_rounds``, ``first_run``,
batches of one run and a diverging run; the CPU side runs in this process. On a machine
with a GPU the gated tests repeat the comparison at full size (d = 20, K = 50,
256 runs x 50 rounds).

What "equal" means (see :mod:`vits_ref._cuda_simulate`): arms and the divergence
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

import vits_ref as vr
from vits_ref import _cuda_simulate
from vits_ref.simulate import POLICY_NAMES, has_kl, make_policy

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
    from vits_ref import _cuda_simulate
    from vits_ref.simulate import POLICY_NAMES, has_kl, make_policy

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
    # batches of one run: the same rows, and progress after each batch
    _cuda_simulate.HOST_BUDGET = 1
    calls = []
    r = vr.simulate("vits-ii", env, T, R, seed=3, first_run=FIRST_RUN, kl_rounds=KL_ROUNDS,
                    device="cuda",
                    progress=lambda done, n: calls.append((done, n)))
    res["batched/regret"], res["batched/arms"], res["batched/kl"] = r.regret, r.arms, r.kl
    res["batched/progress"] = np.array(calls)
    _cuda_simulate.HOST_BUDGET = 8 * 2 ** 30
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


def test_cuda_batches_and_progress_under_simulator(simulated):
    ref = vr.simulate("vits-ii", _env(), T, R, seed=3, first_run=FIRST_RUN,
                      kl_rounds=KL_ROUNDS)
    _assert_same("batched", simulated["batched/regret"], simulated["batched/arms"],
                 simulated["batched/kl"], ref)
    # HOST_BUDGET = 1 byte: one run per batch, progress after each
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
    pol = vr.policies.ThompsonSampling(vr.inference.LinTS(D, seed=0))
    with pytest.raises(ValueError, match="device='cuda' needs a fused loop"):
        vr.simulate(pol, _env(), 5, 2, seed=0, device="cuda", fused=False)


def test_batch_size_budgets():
    spec = make_policy("vits-ii", 20).fused()
    per_run = _cuda_simulate.bytes_per_run(spec, 50, 20, 50)
    # contexts alone: 50 rounds x 50 arms x 20 dims x 8 bytes
    assert per_run > 50 * 50 * 20 * 8
    assert _cuda_simulate.batch_size(spec, 50, 20, 50, 10 ** 6) == \
        _cuda_simulate.HOST_BUDGET // per_run
    assert _cuda_simulate.batch_size(spec, 50, 20, 50, 10 ** 6,
                                     free_device_bytes=100 * per_run) == 50
    assert _cuda_simulate.batch_size(spec, 50, 20, 50, 7, free_device_bytes=1) == 1
    assert _cuda_simulate.batch_size(spec, 50, 20, 50, 7) == 7


# --------------------------------------------------------------------------- real GPU


def _real_gpu():
    try:
        import numba
        from numba import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available()) and not numba.config.ENABLE_CUDASIM
    except Exception:
        return False


@pytest.mark.skipif(not _real_gpu(), reason="no CUDA GPU (numba.cuda.is_available() is False)")
@pytest.mark.parametrize("name", POLICY_NAMES)
def test_cuda_equals_cpu_on_gpu_full_size(name):
    env = _env(20, 50)
    kl = _kl_rounds(name, [1, 25, 50])
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
    # issue's 0.5 MFLOP per round)
    assert bc.flops_per_round("vits-ii", 20, 10) == 480_000
    assert bc.flops_per_round("lints", 20, 0) is None


def test_bench_says_no_gpu(monkeypatch, capsys):
    pytest.importorskip("numba_cuda")
    from numba import cuda

    from vits_ref._bench import cuda as bc

    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert bc.main(quick=True) is None
    assert "no CUDA GPU here" in capsys.readouterr().out


def test_bench_under_simulator():
    """The benchmark runs end to end on the simulator (tiny sizes, labelled), its CUDA arms
    equal the CPU prange's and the JAX peer's (when JAX is installed)."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    script = ("import warnings; warnings.simplefilter('ignore')\n"
              "from vits_ref._bench import cuda\ncuda.main()\n")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    rows = [line for line in out.splitlines() if line.split()[:1] and
            line.split()[0] in POLICY_NAMES]
    assert len(rows) == len(POLICY_NAMES)
    assert all(line.endswith("[simulator: not a timing]") for line in rows)
    equal = out.split("CUDA vs CPU prange, fraction of equal arms: ")[1].splitlines()[0]
    assert equal.count("1.000") == len(POLICY_NAMES), equal
    from vits_ref._bench import jax_peer

    if jax_peer.available():
        peer = out.split("fraction of arms equal to the library's: ")[1].splitlines()[0]
        assert peer == "lints 1.000, vits-ii 1.000"


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
