"""The command line and the vits-fig1 experiment (small sizes; paper size is `slow`)."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.experiments import EXPERIMENTS, get
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
    assert "zeta = 0.1: VITS-II" in res.stderr  # progress on stderr
    with open(out / "curves.csv") as fh:
        rows = list(csv.DictReader(fh))
    # 2 panels x 6 methods x 25 rounds
    assert len(rows) == 2 * len(fig1.METHODS) * 25
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 2 and summary["rounds"] == 25 and summary["seed"] == 3
    assert {e["method"] for e in summary["results"]} == {m[0] for m in fig1.METHODS}
    assert all(e["fused"] for e in summary["results"])
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
    """Paper size (50 runs x 1000 rounds): VITS-II tracks LinTS, all methods beat random.

    Thresholds: at these sizes the standard errors are ~3-5 (see README); VITS-II within
    25% of exact LinTS at both zetas is the paper's claim ("performs similarly").
    """
    result = fig1.run(runs=50, rounds=1000, seed=0, out=str(tmp_path))
    final = {(e["zeta"], e["method"]): e["final_regret_mean"] for e in result["results"]}
    for zeta in fig1.ZETAS:
        assert final[(zeta, "VITS-II")] < 1.25 * final[(zeta, "LinTS")]
        assert np.isfinite(list(final.values())).all()


@pytest.mark.parametrize("name,args", [
    ("vits-figG", ["--runs", "2", "--rounds", "30"]),
    ("vits-figF", ["--runs", "1", "--rounds", "2000"]),
    ("vits-figI", ["--runs", "1", "--rounds", "1200"]),
])
def test_other_experiments_run_from_the_command_line(tmp_path, name, args):
    res = _cli("run", name, *args, "--out", str(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["experiment"] == name and summary["results"]
    for f in summary["files"]:
        assert (tmp_path / f.split("/")[-1]).exists(), f
    assert "wrote" in res.stdout


def test_movielens_experiment_small(tmp_path):
    from vits_ref.experiments.vits import movielens

    res = movielens.run(runs=2, rounds=40, seed=1, out=str(tmp_path), n_movies=8,
                        synthetic_kwargs={"n_users": 60, "n_movies": 40, "n_ratings": 800})
    assert res["data"] == "synthetic"
    assert {e["method"] for e in res["results"]} == {"LinTS", "LMC-TS", "VITS-II",
                                                      "VITS-II HF", "Laplace"}
    # regret per round is at most 1 (Bernoulli means)
    assert all(0 <= e["final_regret_mean"] <= 40 for e in res["results"])
    assert "--data" in _cli("run", "--help").stdout
    bad = _cli("run", "vits-fig1", "--data", "x", check=False)
    assert bad.returncode == 2 and "takes no --data" in bad.stderr


def test_fig2_tiny(tmp_path):
    """Two rounds of the MLP experiment: it runs, writes its files, and VITS on the
    861-parameter network stays finite (a diverging run would raise)."""
    from vits_ref.experiments.vits import fig2

    res = fig2.run(runs=1, rounds=2, seed=0, out=str(tmp_path))
    assert len(res["results"]) == 2 * 4
    assert all(np.isfinite(e["final_regret_mean"]) for e in res["results"])
    assert (tmp_path / "regret.png").exists()


def test_jobs_option(tmp_path):
    _cli("run", "vits-figG", "--runs", "2", "--rounds", "15", "--out", str(tmp_path / "a"))
    _cli("run", "vits-figG", "--runs", "2", "--rounds", "15", "--jobs", "2", "--out",
         str(tmp_path / "b"))
    regrets = [[(e["method"], e["final_regret_mean"]) for e in
                json.loads((tmp_path / x / "summary.json").read_text())["results"]]
               for x in ("a", "b")]
    assert regrets[0] == regrets[1]  # the logistic panel ran in 2 worker processes
    bad = _cli("run", "vits-figF", "--jobs", "2", check=False)
    assert bad.returncode == 2 and "takes no --jobs" in bad.stderr


def test_fig1_tuning_records_the_grid_and_the_choice(tmp_path):
    res = fig1.run(runs=2, rounds=30, seed=1, out=str(tmp_path), methods=["LinUCB", "VITS-II"],
                   tune=True, tune_runs=2)
    assert res["tuned"] and res["tune_seed"] == 1 + fig1.TUNE_SEED_OFFSET
    for panel, by_method in res["tuning"].items():
        for label, scored in by_method.items():
            name = dict((m[0], m[1]) for m in fig1.METHODS)[label]
            assert len(scored) == len(fig1.tuning_grid(name))
            best = min(scored, key=lambda s: s["final_regret"])
            chosen = res["hyperparameters"][panel][label]
            assert all(chosen[k] == v for k, v in best["overrides"].items())
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
