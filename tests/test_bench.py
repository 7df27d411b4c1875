"""The benchmark machinery (vits_ref._bench) and ``python -m vits_ref bench``.

What the benchmarks compare against is checked in test_reference.py (the NumPy
references compute the library's numbers); here: the figures come out finite and positive
at tiny sizes, the floor of the VITS-II round is reported, BLAS threads can be pinned, and
every asv module imports and runs its ``setup`` and one benchmark.
"""

import contextlib
import importlib
import inspect
import io
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from vits_ref import _bench
from vits_ref._bench import env_rounds as benv
from vits_ref._bench import linear as bl
from vits_ref._bench import logistic_loop as blog
from vits_ref._bench import nonlinear as bn
from vits_ref._bench import timing

ASV = pathlib.Path(__file__).resolve().parents[1] / "asv_benchmarks"
FLOOR_LINE = "compiled / floor"


def test_logistic_round_stats_smoke():
    s = bn.logistic_round_stats(dim=5, n_obs=50, repeats=1)
    for key in ("numpy", "compiled", "ratio", "step_grads_hessian", "step_update"):
        assert np.isfinite(s[key]) and s[key] > 0, key


def test_renyi_logistic_stats_smoke():
    from vits_ref._bench import renyi as br

    s = br.logistic_stats(repeats=1, dim=4, n_obs=50)
    for key in ("compiled", "numpy", "ratio", "floor", "over_floor"):
        assert np.isfinite(s[key]) and s[key] > 0, key


def test_irls_stats_smoke():
    s = bn.irls_stats(dim=5, n_obs=200, repeats=1)
    assert s["compiled"] > 0 and s["numpy"] > 0 and s["iterations"] >= 1
    if s["statsmodels"] is not None:
        assert s["max_abs_diff_statsmodels"] < 1e-6


def test_round_stats_with_floor_smoke():
    s = bl.round_stats("vits-ii", n_rounds_ref=5, n_rounds=20, repeats=1, floor=True)
    for key in ("numpy", "compiled", "ratio", "floor", "floor_ratio"):
        assert np.isfinite(s[key]) and s[key] > 0, key
    assert s["n_steps"] == 10
    us_jit, us_floor, ratio = bl.floor_ratio(n_rounds=20, repeats=1)
    assert us_jit > 0 and us_floor > 0 and ratio == pytest.approx(us_jit / us_floor)


def test_floor_does_the_products():
    # the floor's buffers receive the three d x d products and the arms' scores
    rng = np.random.default_rng(0)
    A, B, C = (rng.standard_normal((4, 4)) for _ in range(3))
    contexts, theta = rng.standard_normal((2, 3, 4)), rng.standard_normal(4)
    P, scores = np.empty((3, 4, 4)), np.empty(3)
    bl.floor_rounds(A, B, C, P, contexts, theta, scores, 2)
    np.testing.assert_allclose(P[0], C @ C, rtol=1e-14)
    np.testing.assert_allclose(P[1], A @ B, rtol=1e-14)
    np.testing.assert_allclose(P[2], C @ (C @ C), rtol=1e-13)
    np.testing.assert_allclose(scores, contexts[1] @ theta, rtol=1e-14)


def test_bench_prints_the_floor_line():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bl.main(quick=True, policies=("vits-ii", "lints"), n_rounds=30, n_rounds_ref=10,
                extras=False)
    text = out.getvalue()
    vits_line = next(line for line in text.splitlines() if line.startswith("vits-ii"))
    assert "ratio" in vits_line and FLOOR_LINE in vits_line
    assert "floor of the VITS-II round: 10 steps x 3 products of 20x20" in text
    assert "lints    round: NumPy reference" in text


def test_env_round_section_smoke():
    # the drawing, the random policy's and LinTS's simulate rounds side by side; their
    # ratios are reported, not asserted (timings on a shared machine)
    c = benv.round_costs(n_runs=2, n_rounds=20, repeats=1, dim=3, n_arms=4)
    for key in ("draw", "random", "lints"):
        assert np.isfinite(c[key]) and c[key] > 0, key
    for policy in benv.POLICIES:
        assert c[f"{policy}/draw"] == pytest.approx(c[policy] / c["draw"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        benv.main(quick=True, n_runs=2, n_rounds=20, dim=3, n_arms=4)
    text = out.getvalue()
    assert "environment round (pool env, d=3, K=4" in text
    assert "NumPy drawing the round's numbers" in text and "x the drawing" in text


def test_least_cpu_times_count_this_threads_cpu_only():
    """A call that waits (a sleep, as when the thread is descheduled on a loaded machine)
    costs no CPU time; a call that computes costs its work, the least of the repeats."""
    import time

    def busy():
        end = time.thread_time() + 0.004
        while time.thread_time() < end:
            pass

    waiting, working = timing.least_cpu_times([lambda: time.sleep(0.02), busy], 3)
    assert waiting < 0.002 and 0.004 <= working < 0.02


def test_ratio_text_is_neutral_below_one():
    assert timing.ratio_text(12.345) == "12.35x"
    assert timing.ratio_text(0.8) == " 0.80x (NumPy faster here)"
    assert timing.ratio_text(0.5, "4.1f", other="statsmodels") == " 0.5x (statsmodels faster here)"
    assert "faster" not in timing.ratio_text(1.0)
    # the explanation printed once at the top says what a ratio is and how to read it
    assert "NumPy time / compiled time" in timing.RATIO_MEANING
    assert "floor" in timing.RATIO_MEANING


INTERNAL_TEXT = ("goal", "issue", "(issue")


def test_bench_sections_print_no_internal_text():
    # every section's print statements: no goals or issue numbers left in the output text
    import ast

    for path in pathlib.Path(_bench.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"):
                text = ast.unparse(node).lower()
                for needle in INTERNAL_TEXT:
                    assert needle not in text, (path.name, needle, text)
    assert all(n not in timing.RATIO_MEANING.lower() for n in INTERNAL_TEXT)


class _FakeRun:
    """``subprocess.run`` for :func:`~vits_ref._bench.linear.import_and_compile_times`:
    records each fresh interpreter's ``VITS_REF_CACHE``, answers made-up seconds."""

    def __init__(self):
        self.caches = []

    def __call__(self, cmd, env, **kwargs):
        self.caches.append(env["VITS_REF_CACHE"])
        return subprocess.CompletedProcess(cmd, 0, stdout="0.5\n0.25\n", stderr="")


@pytest.mark.parametrize("quick", [True, False])
def test_quick_bench_skips_only_the_cold_compile(monkeypatch, quick):
    # the cold first call compiles the whole VITS-II loop in a fresh interpreter (80 to 130
    # s of the quick bench's 130 s on 2 loaded cores): --quick times the warm call only
    # and says so; the full bench times both
    fake = _FakeRun()
    monkeypatch.setattr(bl.subprocess, "run", fake)
    monkeypatch.setattr(bl, "parallel_speedup", lambda repeats: (2.0, 1.0, 2.0, 2))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bl.main(quick=quick, policies=())
    text = out.getvalue()
    assert fake.caches == (["1"] if quick else ["1", "0"])
    assert "first fused call (warm cache) 0.25 s" in text
    assert ("first fused call (cold, no cache) 0.25 s" in text) is not quick
    assert (bl.COLD_SKIPPED in text) is quick


@pytest.mark.parametrize("quick", [True, False])
def test_logistic_loop_rounds(quick):
    # the header names the rounds: half of them with --quick (no policy is run here)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        blog.main(quick=quick, labels=(), width=0)
    rounds = blog.QUICK_ROUNDS if quick else blog.ROUNDS
    assert f"logistic rewards, {rounds} rounds," in out.getvalue()
    assert blog.QUICK_ROUNDS < blog.ROUNDS


def test_main_signature():
    assert list(inspect.signature(_bench.main).parameters) == ["quick"]


@pytest.mark.slow
def test_cli_bench_quick():
    """The whole ``python -m vits_ref bench --quick`` (under a minute with a warm kernel
    cache on 2 loaded cores)."""
    res = subprocess.run([sys.executable, "-m", "vits_ref", "bench", "--quick"],
                         capture_output=True, text=True, check=True, timeout=1800)
    for needle in (FLOOR_LINE, "prange over 8 VITS-II runs", "first fused call",
                   "NumPy drawing the round's numbers",
                   "logistic model, fused loop against the Python loop", "of a late round",
                   "logistic VITS-II round", "IRLS to convergence",
                   "one CAVI round", "RenyiVI update", "NumPy time / compiled time"):
        assert needle in res.stdout, needle
    assert res.stdout.count("How to read these figures") == 1
    for needle in ("goal", "issue"):
        assert needle not in res.stdout.lower(), needle


def test_pin_blas_threads():
    before = timing.blas_threads()
    try:
        after = timing.pin_blas_threads(1)
        assert set(after) == set(before)
        assert all(v == 1 for v in after.values())
    finally:
        if before:
            timing.pin_blas_threads(max(before.values()))


def test_median_times_interleaves():
    calls = []
    times = timing.median_times([lambda: calls.append("a"), lambda: calls.append("b")], 3)
    assert calls == ["a", "b"] * 3 and len(times) == 2 and min(times) >= 0


# --------------------------------------------------------------------------- asv modules

def _asv_module(name):
    sys.path.insert(0, str(ASV))
    try:
        return importlib.import_module(f"benchmarks.{name}")
    finally:
        sys.path.remove(str(ASV))


ASV_MODULES = sorted(p.stem for p in (ASV / "benchmarks").glob("bench_*.py"))


@pytest.mark.parametrize("name", ASV_MODULES)
def test_asv_module_imports(name):
    mod = _asv_module(name)
    classes = [c for n, c in vars(mod).items() if inspect.isclass(c)
               and c.__module__ == mod.__name__ and not n.startswith("_")]
    assert classes, name
    for cls in classes:
        assert any(m.startswith(("time_", "track_", "peakmem_")) for m in dir(cls)), cls


def test_asv_nonlinear_classes():
    mod = _asv_module("bench_nonlinear")
    assert hasattr(mod, "TrackLogisticRound") and hasattr(mod, "TrackIRLSStatsmodels")


def test_asv_floor_track_runs():
    mod = _asv_module("bench_rounds")
    bench = mod.TrackFloorRatio()
    bench.setup()
    ratio = bench.track_ratio_vits_ii_round_to_floor()
    assert np.isfinite(ratio) and ratio > 0


# --------------------------------------------------------------------------- logistic loop


def test_logistic_loop_policies_are_figGs():
    """The section restates figG's logistic points (it cannot import the experiments)."""
    from vits_ref.experiments.vits import figG

    assert blog.DIM == figG.DIM and blog.N_ARMS == figG.N_ARMS
    for label, name in (("VITS-II", "vits-ii"), ("LMC-TS", "lmc")):
        assert blog.POINTS[label] == figG.DEFAULT_POINTS["logistic"][label]
        assert repr(blog.policy(label)) == repr(
            figG.policy(name, "logistic", figG.DEFAULT_POINTS["logistic"][label]))
    lap = blog.policy("Laplace").engine
    assert (lap.model.name, lap.eta, lap.lam) == ("logistic", 10.0, 10.0)


def test_logistic_loop_stats_smoke():
    # Laplace on 2 runs x 20 rounds: the fused and Python loops play the same arms (the
    # pieces run the engines' own step bodies on the same draws: exact equality)
    s = blog.loop_stats("Laplace", n_rounds=20, n_runs=2, repeats=1)
    assert s["fused"] > 0 and s["python"] > 0
    assert s["ratio"] == pytest.approx(s["python"] / s["fused"])
    assert s["arms_equal"] == 1.0 and s["max_regret_diff"] == 0.0
    early, late = blog.phase_times("Laplace", n_rounds=20, width=10, n_runs=1, repeats=1)
    assert early > 0 and late > 0
    with pytest.raises(ValueError, match="multiple of width"):
        blog.phase_times("Laplace", n_rounds=25, width=10)


def test_history_fraction_closed_form():
    # rounds costing a + b n exactly: the fractions are b n / (a + b n) at the late
    # window's mean n (949.5) and at the mean n over 1000 rounds (499.5)
    a, b = 10.0, 0.5
    early, late = a + b * 49.5, a + b * 949.5
    f_late, f_mean = blog.history_fraction(early, late, 1000, 100)
    assert f_late == pytest.approx(b * 949.5 / (a + b * 949.5), rel=1e-12)
    assert f_mean == pytest.approx(b * 499.5 / (a + b * 499.5), rel=1e-12)
    assert blog.history_fraction(5.0, 4.0) == (0.0, 0.0)  # noise: late cheaper, b = 0


@pytest.mark.slow
def test_logistic_loop_main_prints_every_policy():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        blog.main(quick=True, n_rounds=40, width=20)
    text = out.getvalue()
    for label in blog.LABELS:
        line = next(x for x in text.splitlines() if x.strip().startswith(label + " "))
        assert "arms equal 1.000" in line, line
    assert text.count("of a late round") == len(blog.LABELS)


ONLINE_ROWS = ["lints", "linucb", "vits-ii", "vits-i", "vits-hf", "lmc", "laplace"]


def _online_rows(names):
    """The online bench's rows of ``names`` at tiny sizes, one repeat."""
    from vits_ref._bench import online

    cases = [(n, 4, g) for n, _, g in online.CASES if n in names]
    return online.measure(d=3, K=4, repeats=1, cases=cases)


def _row_played(row):
    # the floor's parts are timed (draws can be none: LinUCB draws nothing), and each
    # denominator adds a part to the one before: fused <= fused + draws <= the floor
    return (row["fused_us"] > 0 and row["online_us"] > 0 and np.isfinite(row["ratio"])
            and row["draws_us"] >= 0 and row["calls_us"] > 0
            and 0 < row["floor_ratio"] <= row["drawn_ratio"] <= row["ratio"])


def test_online_bench_has_a_row_per_engine_with_a_fused_loop():
    """``python -m vits_ref bench`` and asv time the online API for LinTS, LinUCB and every
    iterative engine with a fused loop; an exact and an iterative case play here (tiny
    sizes, one repeat), every case in the slow twin (each compiles its own loops)."""
    from vits_ref._bench import online

    assert [name for name, _, _ in online.CASES] == ONLINE_ROWS
    out = _online_rows(["lints", "laplace"])
    assert sorted(out) == ["laplace", "lints"] and all(map(_row_played, out.values()))


@pytest.mark.slow
def test_online_bench_every_row_plays():
    out = _online_rows(ONLINE_ROWS)
    assert sorted(out) == sorted(ONLINE_ROWS) and all(map(_row_played, out.values()))


def test_doors_bench_times_every_door_against_the_floor():
    """The doors' tables at tiny sizes, one repeat: a row per door, each timed (and the
    peers' where installed); ``python -m vits_ref bench`` prints them at d = 20, K = 50."""
    from vits_ref._bench import doors

    out = doors.measure(repeats=1, cases=(("lints", 3),), fit_cases=("lints", "linucb"),
                        d=3, K=4, n_fit=30, n_predict=5, batch_cases=("lints",))
    assert set(out["decision"]["lints"]) == {"online", "policy", "bandit", "bandit-rows",
                                             "simulate"}
    assert {"Bandit.fit", "Online.update_many", "floor: LinTS.update"} <= set(
        out["fit"]["lints"])
    assert "floor: update_many" in out["fit"]["linucb"]
    assert {"Bandit.predict", "Online.select_many"} <= set(out["predict"]["linucb"])
    assert set(out["batch"]["lints"]) == {"Bandit.partial_fit", "policy.update_many",
                                          "Online.update_many"}
    for group in out.values():
        for row in group.values():
            assert all(np.isfinite(v) and v > 0 for v in row.values()), row
