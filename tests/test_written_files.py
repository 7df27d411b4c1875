"""What the outputs say was written was written, and figI's undefined KL is written one
way: without matplotlib no PNG is listed in ``summary.json``'s ``files`` (nor in the
``wrote`` line that prints it), in every experiment that draws its own figures; and figI
writes an undefined KL as an empty CSV field and a JSON null (it wrote ``inf`` into the
CSV). The experiments' compiled work is replaced by stand-ins: only the writing is under
test. With matplotlib, each figure's title names its paper
(:data:`vits_ref.experiments.plotting.PAPER_NAMES`)."""

import csv
import json
import os
import sys

import numpy as np
import pytest
from fake_runs import Policy as _Policy
from fake_runs import fake_simulate as _fake_simulate

from vits_ref.bandit.simulate import SimulationResult
from vits_ref.experiments import EXPERIMENTS, _chunks, _common, plotting
from vits_ref.experiments._common import run_panels
from vits_ref.experiments.opvi import bnn, classifier, mixture
from vits_ref.experiments.renyi import mab
from vits_ref.experiments.vits import figF, figG, figI
from vits_ref.experiments.vts import scenarios


def _hide_matplotlib(monkeypatch):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


@pytest.mark.parametrize("matplotlib", [True, False])
def test_run_panels_lists_the_png_only_when_written(tmp_path, monkeypatch, matplotlib):
    if matplotlib:
        pytest.importorskip("matplotlib")
    else:
        _hide_matplotlib(monkeypatch)
    said = []
    panels = [("B", "B", [("N", [(_Policy(0.5), {})])], {})]
    with _chunks.session(quiet=False):
        res = run_panels("fake", "fake", panels, runs=2, rounds=5, seed=0, out=str(tmp_path),
                         progress=said.append, simulate_fn=_fake_simulate)
    png = tmp_path / "regret.png"
    assert png.exists() is matplotlib
    assert (str(png) in res["files"]) is matplotlib
    written = json.loads((tmp_path / "summary.json").read_text())["files"]
    assert written == res["files"]
    assert all((tmp_path / f).exists() for f in written)
    assert any("no plot written" in s for s in said) is not matplotlib


def _fake_figI(monkeypatch, rounds):
    """figI with its KL traces and step costs made up: LMC's first two steps undefined
    (burn-in), finite after."""
    def map_runs(fn, runs, out, name, stage, description, progress, work_per_run):
        kl = np.tile(np.linspace(1.0, 0.1, rounds), (runs, 1))
        if description["method"].startswith("LMC"):
            kl[:, :2] = np.inf
        return {"kl": kl, "counts": np.full(runs, rounds)}

    monkeypatch.setattr(figI._chunks, "map_runs", map_runs)
    monkeypatch.setattr(figI, "cost_per_step", lambda *a, **k: 1e-6)


@pytest.mark.parametrize("matplotlib", [True, False])
def test_figI_undefined_kl_is_empty_in_csv_and_null_in_json(tmp_path, monkeypatch,
                                                             matplotlib):
    if matplotlib:
        pytest.importorskip("matplotlib")
    else:
        _hide_matplotlib(monkeypatch)
    _fake_figI(monkeypatch, rounds=6)
    res = figI.run(runs=4, rounds=6, out=str(tmp_path))
    with open(tmp_path / "kl_vs_time.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert "inf" not in (tmp_path / "kl_vs_time.csv").read_text().lower()
    lmc = [r for r in rows if r["method"].startswith("LMC")]
    assert lmc and all(r["kl_median"] == "" for r in lmc if int(r["step"]) <= 2)
    assert all(float(r["kl_median"]) > 0 for r in rows
               if not r["method"].startswith("LMC") or int(r["step"]) > 2)
    summary = json.loads((tmp_path / "summary.json").read_text())
    entry = next(e for e in summary["results"] if e["method"].startswith("LMC"))
    assert entry["curve"]["median"][:2] == [None, None]
    assert summary["kl_nulls"] == figI.UNDEFINED_KL
    png = tmp_path / "kl_vs_time.png"
    assert png.exists() is matplotlib
    assert (str(png) in summary["files"]) is matplotlib
    assert summary["files"] == res["files"]


# -- the experiments that draw their own figures ---------------------------------------

def _fake_blocks(monkeypatch, make):
    """``_chunks.map_runs`` answered by ``make(description, runs)``: made-up blocks of the
    shapes the experiment reads, nothing computed."""
    def map_runs(fn, runs, out, experiment, stage, description, progress=None,
                 work_per_run=1, chunk_runs=None):
        return make(description, runs)

    monkeypatch.setattr(_chunks, "map_runs", map_runs)


def _any_policy(policy, env, n_rounds, n_runs, seed, new_instance_per_run=True,
                kl_rounds=None, first_run=0, device="cpu"):
    """A regret of 0.5 a round and arm 0 every round, whatever the policy."""
    return SimulationResult("fake", repr(env), np.full((n_runs, n_rounds), 0.5),
                            np.zeros((n_runs, n_rounds), np.int64), np.zeros(0, np.int64),
                            None, 0.0, False, seed)


def _fake_panels(monkeypatch, module):
    """``module.run_panels`` on :func:`_any_policy` instead of the compiled loops."""
    def fake(*args, **kwargs):
        return _common.run_panels(*args, **kwargs, simulate_fn=_any_policy)

    monkeypatch.setattr(module, "run_panels", fake)


def _figF(monkeypatch, out):
    _fake_blocks(monkeypatch, lambda d, runs: {
        "steps": np.full((runs, len(d["step_values"]), len(d["methods"])), 7),
        "reached": np.ones((runs, len(d["step_values"]), len(d["methods"])), bool)})
    return figF.run(runs=3, rounds=10, out=out, kappas=(1.0, 10.0), step_sizes=(0.01,))


def _figG(monkeypatch, out):
    _fake_panels(monkeypatch, figG)
    return figG.run(runs=2, rounds=4, out=out)


def _renyi(monkeypatch, out):
    _fake_panels(monkeypatch, mab)
    return mab.run(runs=2, rounds=4, out=out, alphas=(0.5,))


def _vts(monkeypatch, out):
    rng = np.random.default_rng(0)
    _fake_blocks(monkeypatch, lambda d, runs: {
        "regret": rng.random((runs, d["rounds"])),
        "arms": np.ones((runs, d["rounds"]), np.int64), "wall_time_s": 0.0,
        "reward_sq_error": rng.random((runs, d["rounds"], scenarios.N_ARMS)),
        "cavi_iterations": np.ones((runs, d["rounds"]), np.int64)})
    return scenarios.run(runs=3, rounds=5, out=out, components=(2,))


def _supervised(metrics):
    rng = np.random.default_rng(0)

    def make(d, runs):
        shape = (runs, len(d["methods"]))
        rec = mixture.record_rounds(d["rounds"], n=20)
        return {"metrics": rng.random(shape + (len(rec), len(metrics))),
                "used": np.full(shape, 5), "error": np.full(shape, ""),
                "wall_time": np.zeros(shape), "baseline": np.ones(runs), "n_train": 9,
                "n_test": 3, "n_inputs": 2}
    return make


def _bnn(monkeypatch, out):
    monkeypatch.setattr(bnn, "load", lambda path: (np.ones((12, 2)), np.ones(12), "fake"))
    _fake_blocks(monkeypatch, _supervised(bnn.METRICS))
    return bnn.run(runs=2, rounds=20, out=out)


def _classifier(monkeypatch, out):
    monkeypatch.setattr(classifier, "load", lambda dataset: (
        np.ones((12, 2)), np.arange(12) % 2, "fake"))
    _fake_blocks(monkeypatch, _supervised(classifier.METRICS))
    return classifier.run(runs=2, rounds=20, out=out)


def _mixture_blocks(snapshot):
    rng = np.random.default_rng(0)

    def make(d, runs):
        n_rec = len(mixture.record_rounds(d["rounds"]))
        snaps = [s for s in mixture.SNAPSHOTS if s <= d["rounds"]] or [d["rounds"]]
        return {"energy": rng.random((runs, n_rec)), "shares": np.full((runs, n_rec, 2), 0.5),
                "snapshots": np.full((runs, len(snaps), d["n_particles"], 2), snapshot),
                "used": np.full(runs, 10), "error": np.full(runs, ""), "wall_time_s": 0.0}
    return make


def _mixture(monkeypatch, out, snapshot=0.5):
    _fake_blocks(monkeypatch, _mixture_blocks(snapshot))
    return mixture.run(runs=2, rounds=20, out=out, n_data=40, n_particles=3, grid_n=11)


#: experiment -> (stand-in run, the PNGs it draws when matplotlib is there)
DRAWN = {"vits-figF": (_figF, ["steps.png"]),
         "vits-figG": (_figG, ["regret.png", "arms.png"]),
         "renyi-mab": (_renyi, ["regret.png", "arms.png"]),
         "vts-scenarios": (_vts, ["regret.png", "mse.png"]),
         "opvi-bnn": (_bnn, ["curves.png"]),
         "opvi-classifier": (_classifier, ["accuracy.png"]),
         "opvi-mixture": (_mixture, ["energy.png", "particles.png"])}


def _record_titles(monkeypatch):
    """``{file name: suptitle}`` of every figure saved from now on."""
    titles, save = {}, plotting.save

    def recording(fig, path):
        titles[os.path.basename(path)] = fig.get_suptitle()
        return save(fig, path)

    monkeypatch.setattr(plotting, "save", recording)
    return titles


def _check_files(out, res, pngs):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == res["files"]
    assert [os.path.basename(f) for f in res["files"] if f.endswith(".png")] == pngs
    assert all(os.path.exists(f) for f in res["files"])
    assert sorted(p.name for p in out.glob("*.png")) == sorted(pngs)


@pytest.mark.parametrize("name", sorted(DRAWN))
def test_png_listed_only_when_written_without_matplotlib(tmp_path, monkeypatch, name):
    _hide_matplotlib(monkeypatch)
    run, _ = DRAWN[name]
    res = run(monkeypatch, str(tmp_path))
    _check_files(tmp_path, res, [])


@pytest.mark.parametrize("name", sorted(DRAWN))
def test_png_listed_and_titled_with_matplotlib(tmp_path, monkeypatch, name):
    pytest.importorskip("matplotlib")
    titles = _record_titles(monkeypatch)
    run, pngs = DRAWN[name]
    res = run(monkeypatch, str(tmp_path))
    _check_files(tmp_path, res, pngs)
    paper = plotting.PAPER_NAMES[EXPERIMENTS[name].__name__.split(".")[-2]]
    assert sorted(titles) == sorted(pngs)
    assert all(t.startswith(paper + ", ") for t in titles.values()), titles


def test_mixture_without_snapshots_lists_no_particles_png(tmp_path, monkeypatch):
    # every run 0 snapshot non-finite (diverged): no particles to draw, so no particles.png
    pytest.importorskip("matplotlib")
    res = _mixture(monkeypatch, str(tmp_path), snapshot=np.nan)
    _check_files(tmp_path, res, ["energy.png"])
