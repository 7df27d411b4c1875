"""What the outputs say was written was written, and figI's undefined KL is written one
way: without matplotlib no PNG is listed in ``summary.json``'s ``files`` (nor in the
``wrote`` line that prints it), and figI writes an undefined KL as an empty CSV field and
a JSON null (it wrote ``inf`` into the CSV). The experiments' compiled work is replaced
by stand-ins: only the writing is under test."""

import csv
import json
import sys

import numpy as np
import pytest
from fake_runs import Policy as _Policy
from fake_runs import fake_simulate as _fake_simulate

from vits_ref.experiments import _chunks
from vits_ref.experiments._common import run_panels
from vits_ref.experiments.vits import figI


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
