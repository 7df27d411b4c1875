"""The command line and the vits-fig1 experiment (small sizes; paper size is `slow`)."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.experiments import EXPERIMENTS, get
from vits_ref.experiments.claims import judged_claims
from vits_ref.experiments.vits import fig1


def _cli(*args, check=True):
    return subprocess.run([sys.executable, "-m", "vits_ref", *args], capture_output=True,
                          text=True, check=check, timeout=900)


def test_list_names_every_experiment():
    out = _cli("list").stdout
    for name in EXPERIMENTS:
        assert name in out


def test_run_writes_csv_json_png(tmp_path):
    out = tmp_path / "fig1"
    res = _cli("run", "vits-fig1", "--runs", "2", "--rounds", "25", "--seed", "3",
               "--out", str(out))
    assert "LinTS" in res.stdout
    # progress on stderr: the planned work, the estimate, chunks done
    assert "planned: 24 panel-methods x 2 runs x 25 rounds" in res.stderr
    assert "estimate: about" in res.stderr and "24/24 chunks done" in res.stderr
    with open(out / "curves.csv") as fh:
        rows = list(csv.DictReader(fh))
    # 2 panels x (the fused methods and the particle extras) x 25 rounds
    labels = [m[0] for m in fig1.METHODS] + [m[0] for m in fig1.PARTICLE_METHODS]
    assert len(rows) == 2 * len(labels) * 25
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 2 and summary["rounds"] == 25 and summary["seed"] == 3
    assert {e["method"] for e in summary["results"]} == set(labels)
    # every line of the paper and the VITS extras runs fused; the particle extras have no
    # fused loop (Python select/update loop)
    particle = {m[0] for m in fig1.PARTICLE_METHODS}
    assert all(e["fused"] == (e["method"] not in particle) for e in summary["results"])
    assert (out / "regret.png").stat().st_size > 1000
    # the CSV's last round equals the JSON's final regret
    last = {(r["panel"], r["method"]): float(r["mean_cumulative_regret"])
            for r in rows if r["round"] == "25"}
    for e in summary["results"]:
        got = last[(f"zeta = {e['zeta']:g}", e["method"])]
        assert got == pytest.approx(e["final_regret_mean"], rel=1e-5)


def test_run_is_reproducible(tmp_path):
    a = fig1.run(runs=2, rounds=20, seed=5, out=str(tmp_path / "a"), methods=["VITS-II"])
    b = fig1.run(runs=2, rounds=20, seed=5, out=str(tmp_path / "b"), methods=["VITS-II"])
    assert [e["final_regret_mean"] for e in a["results"]] == \
        [e["final_regret_mean"] for e in b["results"]]


def test_bad_arguments():
    assert _cli("run", "no-such-experiment", check=False).returncode == 2
    res = _cli("run", "vits-fig1", "--runs", "0", check=False)
    assert res.returncode == 2 and "--runs" in res.stderr
    with pytest.raises(ValueError, match="unknown experiment"):
        get("nope")


@pytest.mark.slow
def test_fig1_paper_size(tmp_path):
    """Figure 1 at the defaults, 50 runs x 1000 rounds: every method of the figure stays
    finite, every non-reference line has its paired difference against LinTS, and every
    claim of the table gets one of the three verdicts with its interval, runs and size in
    claims.json. What the verdicts are is the report's finding, not a test's: a claim that
    does not reproduce is a result."""
    from vits_ref.experiments.claims import VERDICTS, claims_of, write_claims_json

    result = fig1.run(runs=50, rounds=1000, seed=0, out=str(tmp_path))
    for e in result["results"]:
        assert np.isfinite(e["final_regret_mean"]), e["method"]
        if e["method"] != fig1.REFERENCE:
            d = e["paired_vs_reference"]
            assert d["n"] == 50 and d["ci"][0] <= d["mean"] <= d["ci"][1]
    found = judged_claims(fig1.NAME, result)
    assert [c["id"] for c in found] == [c.id for c in claims_of(fig1.NAME)]
    path = write_claims_json(tmp_path / "claims.json", found, paper="vits")
    back = json.loads(path.read_text())["claims"]
    for c in back:
        assert c["verdict"] in VERDICTS
        assert c["sizes"] == ["50 runs x 1000 rounds"]
        (s,) = c["seeds"]
        assert s["seed"] == 0 and s["verdict"] == c["verdict"]
        if c["id"] == "fig1-hf-faster":  # interleaved repeats of the warm rounds: a spread
            assert c["runs"] == s["n"] == fig1.TIMING_REPEATS
            lo, hi = s["ci"]
            assert lo <= s["estimate"] <= hi
            assert s["spread"]["min"] <= s["spread"]["median"] <= s["spread"]["max"]
            continue
        assert c["runs"] == 50
        lo, hi = s["ci"]
        assert lo <= s["estimate"] <= hi and s["n"] == 50
        # an inconclusive verdict comes with the runs that would decide it, beyond 50
        if c["verdict"] == "inconclusive":
            assert c["runs_needed"] is None or c["runs_needed"] > 50


def _check_written(res, out, name):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == name and summary["results"]
    for f in summary["files"]:
        assert (out / f.split("/")[-1]).exists(), f
    assert "wrote" in res.stdout


# vits-figG runs from the command line in test_jobs_option (checked there as these are)
@pytest.mark.parametrize("name,args", [
    ("vits-figF", ["--runs", "1", "--rounds", "2000"]),
    ("vits-figI", ["--runs", "1", "--rounds", "1200"]),
])
def test_other_experiments_run_from_the_command_line(tmp_path, name, args):
    _check_written(_cli("run", name, *args, "--out", str(tmp_path)), tmp_path, name)


def test_data_option_of_the_command_line():
    # the small vits-movielens run itself (every method on the synthetic stand-in, regret
    # within its bounds) is checked on tests/test_fig2_movielens_claims.py's run
    assert "--data" in _cli("run", "--help").stdout
    bad = _cli("run", "vits-fig1", "--data", "x", check=False)
    assert bad.returncode == 2 and "takes no --data" in bad.stderr


def test_jobs_option(tmp_path):
    res = _cli("run", "vits-figG", "--runs", "2", "--rounds", "15", "--out", str(tmp_path / "a"))
    _check_written(res, tmp_path / "a", "vits-figG")
    _cli("run", "vits-figG", "--runs", "2", "--rounds", "15", "--jobs", "2", "--out",
         str(tmp_path / "b"))
    regrets = [[(e["method"], e["final_regret_mean"]) for e in
                json.loads((tmp_path / x / "summary.json").read_text())["results"]]
               for x in ("a", "b")]
    assert regrets[0] == regrets[1]  # the logistic panel ran in 2 worker processes
    bad = _cli("run", "vits-figF", "--jobs", "0", "--out", str(tmp_path / "c"), check=False)
    assert bad.returncode == 2 and "--jobs must be in [1," in bad.stderr


def test_fig1_tuning_records_the_grid_and_the_choice(tmp_path):
    labels = ["extra: LinUCB (alpha = 1/sqrt(eta))", "VITS-II"]
    res = fig1.run(runs=2, rounds=30, seed=1, out=str(tmp_path), methods=labels,
                   tune=True, tune_runs=2)
    assert res["tuned"] and res["tune_seed"] == 1 + fig1.TUNE_SEED_OFFSET
    names = {m[0]: m[1] for m in fig1.METHODS}
    for panel, by_method in res["tuning"].items():
        assert set(by_method) == {"LinTS", *labels}  # the reference always runs
        for label, rec in by_method.items():
            scores = rec["scores"]
            assert len(scores) == len(fig1.tuning_grid(names[label]))
            # the whole appendix E grid: 12 points (eta x lam) or 36 (x step)
            assert len(scores) in (12, 36)
            assert rec["diverged_points"] == [s["point"] for s in scores if "diverged" in s]
            best = min((s for s in scores if "diverged" not in s),
                       key=lambda s: s["final_regret_mean"])
            chosen = res["hyperparameters"][panel][label]
            assert all(chosen[k] == v for k, v in best["point"].items())
    # h0 = 0.1 diverges at round 1 for VITS on this environment: reported, not chosen
    assert res["tuning"]["zeta = 1"]["VITS-II"]["diverged_points"]
    assert "--tune" in _cli("run", "--help").stdout


def test_a_diverging_method_is_reported_and_the_next_candidate_runs(tmp_path):
    from vits_ref.experiments._common import regret_table, run_panels

    env = vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)
    bad = vr.ThompsonSampling(vr.VITS(5, schedule="constant", step_size=1.0))
    good = vr.ThompsonSampling(vr.VITS(5, step_size=0.01))
    res = run_panels("t", "test", [("p", env, [("fallback", [(bad, {"h": 1.0}),
                                                             (good, {"h": 0.01})]),
                                               ("broken", bad)], {})],
                     runs=2, rounds=40, seed=0, out=str(tmp_path))
    fallback, broken = res["results"]
    assert fallback["h"] == 0.01 and "diverged" in fallback["diverged_candidates"][0]
    assert "final_regret_mean" not in broken and broken["diverged_candidates"]
    assert "diverged" in regret_table(res)


def test_run_panels_warmup_is_timed_apart_and_changes_nothing(tmp_path):
    """run_panels warms each method up (1 run x 2 rounds, thrown away)
    before the timed call. The warm-up's time is in ``warmup_s``; ``us_per_round`` is the
    timed call's ``wall_time_s`` per run-round; and the results are exactly those of a
    plain simulate call with the same seed (every run starts from ``policy.fresh``)."""
    from vits_ref.experiments._common import run_panels

    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    methods = [("LinTS", vr.ThompsonSampling(vr.LinTS(3))),
               ("VITS-II", vr.ThompsonSampling(vr.VITS(3, variant="II")))]
    res = run_panels("t", "t", [("p", env, methods, {})], 2, 7, 5, str(tmp_path),
                     kl_rounds=[7])
    for (label, policy), e in zip(methods, res["results"], strict=True):
        assert e["method"] == label
        assert np.isfinite(e["warmup_s"]) and e["warmup_s"] >= 0
        assert e["us_per_round"] == pytest.approx(1e6 * e["wall_time_s"] / (2 * 7))
        plain = vr.simulate(policy, env, n_rounds=7, n_runs=2, seed=5,
                            new_instance_per_run=True, kl_rounds=[7])
        assert e["final_regrets"] == plain.cumulative_regret[:, -1].tolist()
        assert np.array_equal(e["kl_mean"], plain.kl.mean(axis=0))
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert all("warmup_s" in e for e in saved["results"])


def test_fig2_default_is_small_and_paper_size_is_explicit(monkeypatch):
    """The default of vits-fig2 is the small one (its cost, measured, in
    the module docstring); ``paper=True`` asks for the paper's 50 runs x 1000 rounds, and
    explicit sizes win. run_panels is replaced so nothing runs."""
    from vits_ref.experiments.vits import fig2

    seen = []
    monkeypatch.setattr(fig2, "run_panels", lambda name, d, panels, runs, rounds, *a, **k:
                        seen.append((runs, rounds)))
    fig2.run(out="unused")
    fig2.run(out="unused", paper=True)
    fig2.run(runs=3, rounds=4, out="unused", paper=True)
    assert seen == [(fig2.DEFAULT_RUNS, fig2.DEFAULT_ROUNDS),
                    (fig2.PAPER_RUNS, fig2.PAPER_ROUNDS), (3, 4)]
    assert fig2.DEFAULTS["runs"] * fig2.DEFAULTS["rounds"] <= 12  # about 2 s per MLP round
    assert "MEASURED" not in fig2.__doc__
