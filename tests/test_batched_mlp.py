"""The batched, lockstep MLP path (vits_ref.bandit._batched_mlp) against the Python loop.

Every test compares with :func:`vits_ref.bandit.simulate` (its Python loop, one run at a time) or
with the same per-run loop (``simulate._run_python`` on the run's realisation and
``policy.fresh(child(run_seed, 1))``, what ``simulate`` runs), which also exposes the
final states.

Tolerance of the states. The batched path sums the products in other orders (BLAS over
stacked matrices against the kernels' chunked loops), so the states agree to rounding,
not bit for bit. A d x d product entry is a sum of d terms, exact to ``d eps`` relative
(the worst case; sqrt(d) eps typically); each of ``S`` steps adds that error to ``B``,
``C`` and ``mu`` through updates scaled by ``h`` (contractive here), so after ``S`` steps
the relative difference is bounded by about ``S d eps``: :func:`_tol`. Measured
(2026-11-22, this machine): at most 1.8e-16 (VITS-II, fig2's MLP, 2 runs x 3 rounds),
3.5e-16 (Hessian-free), 1.1e-16 (LMC-TS); 8e-19 to 1.8e-16 on the tiny MLP; the bound
is 5.7e-12 and 4.7e-13 there, far above, so a wrong formula (an error of order ``h``) fails.
"""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import child
from vits_ref.bandit import _batched_mlp as bm
from vits_ref.bandit._fused_draws import realise
from vits_ref.bandit.simulate import _run_env, _run_python
from vits_ref.errors import DivergenceError
from vits_ref.models import MLP

EPS = np.finfo(float).eps
SEED = 3


def _policies(p, hidden, lam=10.0, step=1e-3, hf_step=1e-4, schedule="decayed"):
    """fig2's three MLP methods (:func:`vits_ref.experiments.vits.fig2.policies`) on an
    MLP ``p -> hidden -> 1``."""
    net = MLP(p, hidden=hidden)
    common = {"model": net, "eta": 1.0, "lam": lam, "step_size": step, "n_steps": 10,
              "schedule": schedule}
    return [("VITS-II", vr.ThompsonSampling(vr.VITS(net.dim, variant="II", **common))),
            ("HF", vr.ThompsonSampling(vr.VITS(net.dim, variant="hessian_free", n_mc=20,
                                                symmetrize=True, cov_step_size=hf_step,
                                                **common))),
            ("LMC-TS", vr.ThompsonSampling(vr.Langevin(net.dim, **common)))]


def _env(p, K, zeta=0.1):
    return vr.envs.pool(dim=p, n_arms=K, zeta=zeta, reward="quadratic", seed=0)


def _python(policy, env, T, R, seed=SEED, first_run=0):
    """The per-run Python loop of ``simulate(new_instance_per_run=True)``, with the final
    states: ``[(regret, arms, states)]``."""
    root = np.random.SeedSequence(seed)
    out = []
    for r in range(first_run, first_run + R):
        rs = child(root, r)
        real = realise(_run_env(env, True, rs), rs, T)
        pol = policy.fresh(child(rs, 1))
        reg, arms = np.empty(T), np.empty(T, dtype=np.int64)
        _run_python(pol, [real], np.zeros(0, dtype=np.int64), reg, arms, np.zeros(0), r, False)
        e = pol.engine
        states = ({"mu": e.mu, "B": e.B, "C": e.C} if isinstance(e, vr.VITS)
                  else {"theta": e.theta})
        out.append((reg, arms, states))
    return out


def _batched(policy, env, T, R, xp=np, seed=SEED, first_run=0, new_instance=True, **kw):
    root = np.random.SeedSequence(seed)
    seeds = [child(root, first_run + r) for r in range(R)]
    envs = [_run_env(env, new_instance, s) for s in seeds]
    return bm.run_block(policy, envs, seeds, T, xp=xp, first_index=first_run,
                        return_states=True, **kw)


def _tol(policy, T):
    """``S d eps``, S = the steps run (see the module docstring)."""
    eng = policy.engine
    return T * eng.n_steps * eng.dim * EPS


def _compare(policy, env, T, R, xp=np):
    ref = _python(policy, env, T, R)
    reg, arms, states = _batched(policy, env, T, R, xp=xp)
    worst = 0.0
    for r in range(R):
        np.testing.assert_array_equal(arms[r], ref[r][1])
        np.testing.assert_array_equal(reg[r], ref[r][0])
        for k, v in ref[r][2].items():
            rel = float(np.abs(states[k][r] - v).max() / np.abs(v).max())
            assert rel <= _tol(policy, T), (k, rel)
            worst = max(worst, rel)
    return reg, arms, worst


@pytest.mark.parametrize("i", [0, 1, 2], ids=["VITS-II", "HF", "LMC-TS"])
def test_tiny_mlp_equals_python_loop_and_simulate(i):
    """p = 3, hidden (4, 3) (35 parameters), K = 4, 2 runs x 6 rounds: arms and regret
    equal, states to S d eps; and the module's ``simulate`` equals ``vr.simulate``."""
    env = _env(3, 4)
    policy = _policies(3, (4, 3))[i][1]
    _compare(policy, env, 6, 2)
    res = vr.simulate(policy, env, 6, n_runs=2, seed=SEED, new_instance_per_run=True)
    got = bm.simulate(policy, env, 6, n_runs=2, seed=SEED, new_instance_per_run=True)
    np.testing.assert_array_equal(got.arms, res.arms)
    np.testing.assert_array_equal(got.regret, res.regret)
    assert got.policy == res.policy and got.environment == res.environment


def test_tiny_mlp_without_new_instances_and_constant_schedule():
    """The shared instance (``new_instance_per_run=False``) and the constant schedule."""
    env = _env(3, 4, zeta=1.0)
    for _, policy in _policies(3, (5,), schedule="constant", step=1e-3):
        res = vr.simulate(policy, env, 4, n_runs=3, seed=1)
        got = bm.simulate(policy, env, 4, n_runs=3, seed=1)
        np.testing.assert_array_equal(got.arms, res.arms)
        np.testing.assert_array_equal(got.regret, res.regret)


@pytest.mark.parametrize("i", [0, 1, 2], ids=["VITS-II", "HF", "LMC-TS"])
def test_prefetch_and_draw_threads_change_nothing(i):
    """The GPU path's host side (next round drawn in a background thread, the runs' rows
    filled by a thread pool), run here with NumPy: bit-identical results."""
    env = _env(3, 4)
    policy = _policies(3, (4, 3))[i][1]
    a = _batched(policy, env, 5, 3)
    b = _batched(policy, env, 5, 3, prefetch=True, draw_threads=2)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    for k in a[2]:
        np.testing.assert_array_equal(a[2][k], b[2][k])


@pytest.mark.parametrize("sym,cv", [(False, False), (True, True)],
                         ids=["unsymmetrised", "control-variate"])
def test_hessian_free_variants_equal_python_loop(sym, cv):
    """Algorithm 3's unsymmetrised A, and the control variate grad U(mu) (VARIANT_HF_CV),
    4 draws, 2 runs x 5 rounds on the tiny MLP."""
    net = MLP(3, hidden=(4, 3))
    policy = vr.ThompsonSampling(vr.VITS(net.dim, model=net, variant="hessian_free", n_mc=4,
                                         symmetrize=sym, control_variate=cv, lam=10.0,
                                         step_size=1e-3, cov_step_size=1e-4))
    _, arms, worst = _compare(policy, _env(3, 4), 5, 2)
    assert worst <= _tol(policy, 5) and arms.shape == (2, 5)


def test_first_run_block_equals_rows_of_the_whole():
    """Runs 1..2 of a block starting at ``first_run = 1`` are rows 1..2 of runs 0..2."""
    env = _env(3, 4)
    policy = _policies(3, (4, 3))[0][1]
    whole = bm.simulate(policy, env, 4, n_runs=3, seed=SEED, new_instance_per_run=True)
    part = bm.simulate(policy, env, 4, n_runs=2, seed=SEED, new_instance_per_run=True,
                       first_run=1)
    np.testing.assert_array_equal(part.arms, whole.arms[1:])
    np.testing.assert_array_equal(part.regret, whole.regret[1:])


@pytest.mark.parametrize("i,step,seed,want", [(0, 0.01, 2, (0, 18)), (1, 0.01, 0, (0, 7)),
                                                (2, 0.1, 4, (1, 40))],
                         ids=["VITS-II", "HF", "LMC-TS"])
def test_divergence_is_the_python_loops_error(i, step, seed, want):
    """Steps too large (constant schedule, lam = 1): the same DivergenceError (engine,
    run, round, step size, message) as the Python loop of ``vr.simulate``: that of the
    lowest-numbered diverging run, although higher runs diverge earlier (runs 0..3
    diverge alone at rounds VITS-II (18, 1, 3, 2), HF (7, 1, 1, 1), LMC-TS (-, 40, 28, -):
    the Python loop meets run 0, resp. run 1, first)."""
    env = _env(3, 4, zeta=1.0)
    policy = _policies(3, (4, 3), lam=1.0, step=step, hf_step=step,
                       schedule="constant")[i][1]
    with pytest.raises(DivergenceError) as ref:
        vr.simulate(policy, env, 40, n_runs=4, seed=seed)
    with pytest.raises(DivergenceError) as got:
        bm.simulate(policy, env, 40, n_runs=4, seed=seed)
    w, g = ref.value, got.value
    assert (w.run, w.round) == want
    assert (g.engine, g.run, g.round, g.step_size) == (w.engine, w.run, w.round, w.step_size)
    assert str(g) == str(w)
    with pytest.raises(DivergenceError) as pre:  # the GPU path's host side: the same
        _batched(policy, env, 40, 4, seed=seed, new_instance=False, prefetch=True,
                 draw_threads=2)
    assert str(pre.value) == str(w)


def test_vits_range_check_of_B_is_the_engines():
    """VITS's second rule (``max |B|`` beyond 1e6 prior standard deviations) gives the
    engine's error and detail: forced by lowering the engines' threshold (the same
    threshold for both paths: each reads it from a fresh engine)."""
    env = _env(3, 4)
    policy = _policies(3, (4, 3))[0][1]
    orig = vr.VITS.__init__

    def low_threshold(self, *a, **k):
        orig(self, *a, **k)
        self._max_abs_B = 0.3  # the prior's B is I/sqrt(10) = 0.316 on the diagonal

    pytest.MonkeyPatch.setattr(mp := pytest.MonkeyPatch(), vr.VITS, "__init__", low_threshold)
    try:
        with pytest.raises(DivergenceError) as want:
            vr.simulate(policy, env, 3, n_runs=2, seed=SEED)
        with pytest.raises(DivergenceError) as got:
            bm.simulate(policy, env, 3, n_runs=2, seed=SEED)
    finally:
        mp.undo()
    assert "left its stable range" in str(want.value)
    assert str(got.value) == str(want.value)


@pytest.mark.slow
def test_fig2_mlp_two_runs_three_rounds_equals_python_loop():
    """fig2's own MLP (20 -> 20 -> 20 -> 1, 861 parameters, K = 50), its three MLP
    methods with fig2's hyperparameters, 2 runs x 3 rounds: arms and regret equal, states
    within S d eps (5.7e-12; measured at most 3.5e-16)."""
    from vits_ref.experiments.vits import fig2

    env = vr.envs.pool(dim=fig2.DIM, n_arms=fig2.N_ARMS, zeta=0.1, reward="quadratic",
                       seed=0)
    for label, policy in fig2.policies():
        if label == "LinTS":
            assert not bm.supports(policy)
            continue
        assert bm.supports(policy)
        _, _, worst = _compare(policy, env, 3, 2)
        assert worst < 1e-13, (label, worst)


def test_unsupported_policies_and_array_modules():
    env = _env(3, 4)
    with pytest.raises(ValueError, match=r"cannot run this block \(VITS-II\): .*linear"):
        bm.simulate(vr.ThompsonSampling(vr.VITS(3)), env, 2)
    with pytest.raises(ValueError, match="VITS-I"):
        bm.simulate(vr.ThompsonSampling(vr.VITS(35, model=MLP(3, hidden=(4, 3)),
                                                variant="I")), env, 2)
    with pytest.raises(ValueError, match="not Thompson sampling"):
        bm.simulate(vr.LinUCB(3), env, 2)
    with pytest.raises(ValueError, match="general prior"):
        net = MLP(3, hidden=(4, 3), prior_cov=np.ones(35))
        bm.simulate(vr.ThompsonSampling(vr.VITS(35, model=net)), env, 2)
    with pytest.raises(ValueError, match="kl_rounds"):
        bm.simulate(_policies(3, (4, 3))[0][1], env, 2, kl_rounds=[1])
    with pytest.raises(ValueError, match="'numpy' or 'cupy'"):
        bm.array_module("torch")
    assert bm.array_module("numpy") is np


def test_cupy_missing_is_one_clear_error():
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match=r"pip install 'vits_ref\[cupy\]'"):
            bm.array_module("cupy")
    else:
        pytest.skip("CuPy is installed")


def test_benchmark_methods_are_fig2s():
    """The benchmark restates fig2's MLP methods (it cannot import the experiments): the
    same labels, policies (their reprs list every hyperparameter) and environment."""
    from vits_ref._bench import mlp_gpu
    from vits_ref.experiments.vits import fig2

    want = {label: repr(p) for label, p in fig2.policies() if bm.supports(p)}
    assert {label: repr(p) for label, p in mlp_gpu.methods().items()} == want
    assert (mlp_gpu.DIM, mlp_gpu.N_ARMS) == (fig2.DIM, fig2.N_ARMS)


def test_flops_model_closed_form():
    """Three 2 d^3 products per step, J^T J at 2 t d^2 per draw (VITS-II), 4 d^2 M for
    the Hessian-free A; fig2's numbers: 3.83 GFLOP per VITS step of products."""
    d, t = 861, 1000
    assert bm.flops_per_round(d, t, 1) == 10 * (6 * d ** 3 + 2 * t * d * d)
    assert bm.flops_per_round(d, t, 20, hessian=False) == 10 * (6 * d ** 3 + 80 * d * d)
    assert bm.flops_per_round(d, t, 0) == 0
    assert 6 * 861 ** 3 == pytest.approx(3.83e9, rel=1e-3)


def _cupy_or_skip():
    try:
        xp = bm.array_module("cupy")
    except RuntimeError as exc:
        pytest.skip(str(exc))
    return xp


@pytest.mark.parametrize("i", [0, 1, 2], ids=["VITS-II", "HF", "LMC-TS"])
def test_cupy_equals_python_loop(i):
    """The same comparison on a GPU through CuPy (skipped without CuPy or a GPU)."""
    xp = _cupy_or_skip()
    env = _env(3, 4)
    policy = _policies(3, (4, 3))[i][1]
    _, arms, worst = _compare(policy, env, 6, 2, xp=xp)
    assert worst <= _tol(policy, 6) and arms.shape == (2, 6)


def test_cupy_fig2_mlp_equals_python_loop():
    """fig2's MLP on a GPU, 2 runs x 3 rounds (skipped without CuPy or a GPU)."""
    xp = _cupy_or_skip()
    from vits_ref.experiments.vits import fig2

    env = vr.envs.pool(dim=fig2.DIM, n_arms=fig2.N_ARMS, zeta=1.0, reward="quadratic",
                       seed=0)
    for _label, policy in fig2.policies()[1:]:
        _, arms, worst = _compare(policy, env, 3, 2, xp=xp)
        assert worst <= _tol(policy, 3) and arms.shape == (2, 3)


# --------------------------------------------------------------------------- vits-fig2


def _fig2_entries(tmp_path, name, methods, rounds=3, **kw):
    from vits_ref.experiments import _chunks
    from vits_ref.experiments.vits import fig2

    with _chunks.session(quiet=True):
        res = fig2.run(runs=2, rounds=rounds, seed=0, out=str(tmp_path / name),
                       methods=methods, **kw)
    return {(e["panel"], e["method"]): e["final_regrets"] for e in res["results"]}


def test_fig2_batched_numpy_equals_default(tmp_path):
    """``fig2.run(batched=True)`` (the batched NumPy path through ``run_panels``'
    ``simulate_fn``) gives the default's final regrets (LinTS and LMC-TS here: the VITS
    methods cost seconds a round at d = 861; the slow test below runs them)."""
    methods = ["LinTS", "LMC-TS"]
    want = _fig2_entries(tmp_path, "cpu", methods)
    got = _fig2_entries(tmp_path, "batched", methods, batched=True)
    assert got == want and len(got) == 4


@pytest.mark.slow
def test_fig2_batched_numpy_equals_default_all_methods(tmp_path):
    """All four methods, 2 runs x 2 rounds (about 3 minutes here: VITS rounds at d = 861
    in the Python loop, plus warm-ups and probes)."""
    want = _fig2_entries(tmp_path, "cpu", None, rounds=2)
    got = _fig2_entries(tmp_path, "batched", None, rounds=2, batched=True)
    assert got == want and len(got) == 8


def test_fig2_device_cuda_without_cupy_fails_before_any_work(tmp_path):
    """``--device cuda`` without CuPy (or a GPU): one line, before any chunk is written. On
    a machine without a GPU the CLI's device check (numba-cuda's) speaks first; with a GPU
    but no CuPy, fig2's own check names CuPy."""
    import subprocess
    import sys

    try:
        bm.array_module("cupy")
    except RuntimeError:
        pass
    else:
        pytest.skip("CuPy and a GPU are present")
    out = tmp_path / "f2"
    res = subprocess.run([sys.executable, "-m", "vits_ref", "run", "vits-fig2", "--device",
                          "cuda", "--out", str(out)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "needs CuPy" in lines[0] or "found no usable CUDA GPU" in lines[0], res.stderr
    assert not (out / "chunks").exists() and not (out / "summary.json").exists()


def _fake_cupy():
    """A stand-in ``cupy`` module over NumPy (``asnumpy``, ``cuda.runtime``,
    ``cuda.Device``): not NumPy itself, so the batched path takes its GPU branch
    (prefetched, threaded draws; device-side index arrays; host copies)."""
    import types

    fake = types.ModuleType("cupy")
    fake.__getattr__ = lambda name: getattr(np, name)
    fake.asnumpy = np.asarray
    fake.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        Device=lambda: types.SimpleNamespace(synchronize=lambda: None))
    return fake


def test_fig2_device_cuda_route_with_a_stand_in_cupy(tmp_path, monkeypatch):
    """``--device cuda`` end to end on the CPU: fig2 under a ``device="cuda"`` session
    with a stand-in CuPy over NumPy routes LMC-TS through :func:`fig2.simulate_cuda` (the
    batched path's GPU branch) and LinTS to the CPU, and gives the default's final
    regrets."""
    import sys

    from vits_ref.experiments import _chunks
    from vits_ref.experiments.vits import fig2

    want = _fig2_entries(tmp_path, "cpu", ["LinTS", "LMC-TS"])
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    assert bm.array_module("cupy") is sys.modules["cupy"]
    calls = []
    orig = bm.simulate

    def spy(*a, **k):
        calls.append(k["array"])
        return orig(*a, **k)

    monkeypatch.setattr(bm, "simulate", spy)
    with _chunks.session(quiet=True, device="cuda"):
        res = fig2.run(runs=2, rounds=3, seed=0, out=str(tmp_path / "cuda"),
                       methods=["LinTS", "LMC-TS"])
    got = {(e["panel"], e["method"]): e["final_regrets"] for e in res["results"]}
    assert got == want
    assert calls and set(calls) == {"cupy"}  # LMC-TS (warm-ups, probes, chunks); not LinTS
    assert res["execution"]["device"] == "cuda"
    # each method's entry says where it ran: LMC-TS on the GPU path, LinTS (no "device":
    # the CPU) on the CPU
    where = {e["method"]: e.get("device", "cpu") for e in res["results"]}
    assert where == {"LinTS": "cpu", "LMC-TS": "cuda"}


def test_stand_in_cupy_equals_python_loop(monkeypatch):
    """The GPU branch of ``simulate`` (array="cupy") on the stand-in: the Python loop's
    arms and regret (VITS-II and Hessian-free on the tiny MLP)."""
    import sys

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    env = _env(3, 4)
    for _, policy in _policies(3, (4, 3))[:2]:
        res = vr.simulate(policy, env, 5, n_runs=3, seed=SEED)
        got = bm.simulate(policy, env, 5, n_runs=3, seed=SEED, array="cupy")
        np.testing.assert_array_equal(got.arms, res.arms)
        np.testing.assert_array_equal(got.regret, res.regret)
