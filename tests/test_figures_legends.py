"""The figures the experiments draw themselves and one run's standard error.

Every figure: each legend's box (display pixels, after the PNG is written) overlaps no axes'
data area and lies inside the figure, so it never covers a curve; where bands or error bars
are drawn a legend entry says what they are (+-1 standard error over runs, or the 25%-75%
quantiles where the code draws quantiles). With one run the standard error is undefined:
NaN in memory, null with a ``_nulls`` note in the JSON, "n/a" in the tables, and no band is
drawn or explained. The plotting functions get synthetic data; the one-run checks run the
experiments at tiny sizes (a few seconds with a warm Numba cache).
"""

import json
import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from vits_ref.experiments import plotting  # noqa: E402
from vits_ref.experiments.diffts import _shared, ablation  # noqa: E402
from vits_ref.experiments.opvi import bnn, classifier, mixture  # noqa: E402
from vits_ref.experiments.vits import figF, figI  # noqa: E402
from vits_ref.experiments.vts import scenarios  # noqa: E402

SE_WORDS = "standard error"


def _overlap(a, b):
    """Area of the intersection of two matplotlib Bboxes (display pixels)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def _check_legends(fig, n_legends):
    """Every legend outside every axes' data area, inside the figure, not over another
    legend; returns each legend's entries (a list of lists of strings)."""
    renderer = fig.canvas.get_renderer()
    legends = [lg for ax in fig.axes for lg in [ax.get_legend()] if lg is not None]
    legends += list(fig.legends)
    assert len(legends) == n_legends
    boxes = [lg.get_window_extent(renderer) for lg in legends]
    for box in boxes:
        assert box.width > 0 and box.height > 0
        for ax in fig.axes:  # the data area: the axes' patch, inside the spines
            assert _overlap(box, ax.get_window_extent(renderer)) == 0.0, ax.get_title()
        assert _overlap(box, fig.bbox) == pytest.approx(box.width * box.height)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert _overlap(a, b) == 0.0
    return [[t.get_text() for t in lg.get_texts()] for lg in legends]


def _one_legend(fig):
    (texts,) = _check_legends(fig, 1)
    return texts


# -- figures with synthetic data ------------------------------------------------------------

def test_figF_quartile_bands_legend_outside(tmp_path):
    rng = np.random.default_rng(0)
    results = []
    for h in (0.01, 0.1):
        for m in ("VITS-II", "LMC-TS", "extra: VITS-I"):
            for k in (1.0, 10.0, 100.0):
                med = 10 * k * (1 + rng.random())
                results.append({"method": m, "step_size": h, "kappa": k, "median_steps": med,
                                "q25": 0.7 * med, "q75": 1.4 * med})
    result = {"results": results, "cap": 5000, "eps": 0.1, "dim": 5, "runs": 4,
              "target": "synthetic"}
    fig = figF._plot(result, str(tmp_path / "steps.png"))
    assert (tmp_path / "steps.png").stat().st_size > 0
    texts = _one_legend(fig)
    assert texts[:3] == ["VITS-II", "LMC-TS", "extra: VITS-I"]
    assert any(t.startswith("cap") for t in texts)
    # the bands are quantiles over seeds: said so, and not called a standard error
    assert plotting.quartile_note("seeds") in texts
    assert not any(SE_WORDS in t for t in texts)


def test_figI_quartile_bands_legend_outside(tmp_path):
    n = 50
    kl = np.exp(-np.linspace(0, 5, n))
    curves = {"VITS-II": np.stack([0.5 * kl, kl, 2 * kl]),
              "LMC-TS": np.stack([kl ** 0.5 * 0.5, kl ** 0.5, 2 * kl ** 0.5])}
    curves["LMC-TS"][:, :10] = np.nan  # burn-in: not drawn
    result = {"dim": 5, "kappa": 10.0, "step_size": 0.01, "runs": 4, "target": "synthetic"}
    fig = figI._plot(curves, {"VITS-II": 1e-4, "LMC-TS": 2e-5}, result,
                     str(tmp_path / "kl.png"))
    texts = _one_legend(fig)
    assert texts == ["VITS-II", "LMC-TS", plotting.quartile_note("seeds")]


def test_vts_mse_panels_legend_outside(tmp_path):
    t = np.arange(1, 41)[:, None]
    mse = {p: {f"K = {k}": np.hstack([1.0 / (k * t), 2.0 / (k * t)]) for k in (1, 2, 3)}
           for p in ("scenario A", "scenario B")}
    fig = scenarios.mse_panels(mse, str(tmp_path / "mse.png"), title="test")
    assert len(fig.axes) == 4  # 2 scenarios x 2 arms
    assert _one_legend(fig) == ["K = 1", "K = 2", "K = 3"]  # lines only: no band note


def _curves(runs_se, methods=("DiffTS", "TS", "MixTS"), n=30):
    rng = np.random.default_rng(1)
    return {m: (np.cumsum(rng.random(n)) * (i + 1),
                np.full(n, 0.5 if runs_se else np.nan))
            for i, m in enumerate(methods)}


@pytest.mark.parametrize("with_se", [True, False])
@pytest.mark.parametrize("n_panels", [1, 3])
def test_diffts_prior_and_regret_figure(tmp_path, with_se, n_panels):
    rng = np.random.default_rng(2)
    panels = [f"shape {i}" for i in range(n_panels)]
    scatter = {p: (rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 0.3)
               for p in panels}
    curves = {p: _curves(with_se) for p in panels}
    fig = _shared.prior_and_regret_figure(scatter, curves, str(tmp_path / "r.png"),
                                          title="test")
    top, bottom = _check_legends(fig, 2)  # one per row
    assert top == ["true prior", "diffusion prior"]
    assert bottom[:3] == ["DiffTS", "TS", "MixTS"]
    # the band note exactly when there is a band (one run: none)
    assert (plotting.BAND_NOTE in bottom) == with_se
    assert len(bottom) == 3 + with_se


@pytest.mark.parametrize("runs", [1, 3])
def test_diffts_ablation_figure(tmp_path, runs):
    se = 2.0 if runs > 1 else float("nan")
    results = []
    for T in (1, 10, 100):
        results.append({"panel": ablation.PANEL_STAGES, "method": ablation.stage_label(T),
                        "final_regret_mean": 50.0 + 30.0 / T, "final_regret_stderr": se,
                        "final_regrets": [50.0 + 30.0 / T] * runs})
    for n in (100, 1000):
        results.append({"panel": ablation.PANEL_TRAIN, "method": ablation.train_label(n),
                        # as read back from the JSON: null for one run
                        "final_regret_mean": 50.0 + 1e3 / n,
                        "final_regret_stderr": None if runs == 1 else se,
                        "final_regrets": [50.0 + 1e3 / n] * runs})
    result = {"results": results, "stages": [1, 10, 100], "train_sizes": [100, 1000],
              "rounds": 50, "runs": runs,
              "draw_time_s": {"1": 1e-5, "10": 5e-5, "100": 4e-4},
              "time_fit": {"slope_s_per_stage": 4e-6, "intercept_s": 1e-5, "r2": 0.99}}
    fig = ablation._figure(result, str(tmp_path / "ablation.png"))
    texts = _one_legend(fig)
    bars = plotting.CI95_BARS if runs > 1 else "mean final regret"
    assert texts == [bars, "one posterior draw", "fit, R^2 = 0.990"]
    # the means are drawn (3 stages, 2 training sizes); the bars only with a standard error
    a, b, _ = fig.axes
    assert [len(ax.lines[0].get_xdata()) for ax in (a, b)] == [2, 3]
    bars_drawn = sum(len(seg) > 0 for ax in (a, b) for c in ax.collections
                     for seg in c.get_segments())
    assert bars_drawn == (5 if runs > 1 else 0)
    # the error bars are said to be +-1.96 standard errors, a 95% interval
    assert "\u00b11.96 standard errors" in plotting.CI95_BARS and "95%" in plotting.CI95_BARS


def test_opvi_energy_quartile_bands(tmp_path):
    rec = [1, 2, 5, 10, 20, 50]
    rng = np.random.default_rng(3)
    results = [{"method": m, "energy_per_run": (rng.random((4, len(rec))) + 0.1).tolist()}
               for m in ("OPVI", "SVGD (B = 20)", "SGLD")]
    result = {"record_rounds": rec, "results": results, "n_data": 100, "n_particles": 5,
              "runs": 4}
    fig = mixture._plot_energy(result, str(tmp_path / "energy.png"))
    texts = _one_legend(fig)
    assert texts == ["OPVI", "SVGD (B = 20)", "SGLD", plotting.quartile_note("runs")]


@pytest.mark.parametrize("runs", [1, 3])
def test_opvi_curves_bands(tmp_path, runs):
    rec = [1, 2, 5, 10]
    results = []
    for m in ("OPVI", "SVGD"):
        e = {"method": m, "rmse_mean_curve": [1.0, 0.8, 0.7, 0.6],
             "ll_mean_curve": [-2.0, -1.5, -1.2, -1.1]}
        # runs > 1: standard errors; one run: NaN in memory, null from the JSON
        e["curve_stderr"] = ({"rmse": [0.1] * 4, "ll": [0.2] * 4} if runs > 1
                             else {"rmse": [math.nan] * 4, "ll": None})
        results.append(e)
    result = {"record_rounds": rec, "runs": runs, "results": results}
    fig = bnn.plot_curves(result, ["rmse", "ll"], ["test RMSE", "test LL"],
                          str(tmp_path / "curves.png"), "test")
    texts = _one_legend(fig)
    assert texts == ["OPVI", "SVGD"] + ([plotting.BAND_NOTE] if runs > 1 else [])
    # one run: no band drawn at all (fill_between of NaN has no vertices)
    for ax in fig.axes:
        verts = [len(p.vertices) for c in ax.collections for p in c.get_paths()]
        assert (sum(verts) > 0) == (runs > 1)


def test_band_helpers():
    assert plotting.has_band({"a": ([1.0], [0.5])})
    assert not plotting.has_band({"a": ([1.0], [math.nan]), "b": ([2.0], [math.nan])})
    assert not plotting.has_band({})
    assert plotting.quartile_note("seeds").endswith("25%-75% quantiles over seeds")
    assert SE_WORDS not in plotting.quartile_note()


# -- one run: no standard error -------------------------------------------------------------

def _strict_json(path):
    return json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(t))


def test_vts_scenarios_one_run_has_no_stderr(tmp_path):
    res = scenarios.run(runs=1, rounds=5, seed=0, out=str(tmp_path), components=(2,),
                        other_scorings=False)
    for e in res["results"]:
        assert math.isnan(e["final_regret_stderr"]) and math.isnan(e["final_regret_sd"])
    summary = _strict_json(tmp_path / "summary.json")
    for e in summary["results"]:
        assert e["final_regret_stderr"] is None and "NaN" in e["final_regret_stderr_nulls"]
        assert e["final_regret_sd"] is None and "NaN" in e["final_regret_sd_nulls"]
    # the CSV leaves the standard error empty; the table says n/a (also from the JSON)
    rows = (tmp_path / "curves.csv").read_text().splitlines()[1:]
    assert rows and all(r.endswith(",") for r in rows)
    for r in (res, summary):
        regret = scenarios.table(r).split("\n\n")[0].splitlines()[1:]  # the regret table
        assert len(regret) == 4  # 2 scenarios x (K = 1, K = 2)
        assert all(ln.split()[6] == "n/a" for ln in regret)  # panel(2) method(3) regret se


def test_diffts_run_panels_one_run_has_no_stderr(tmp_path):
    import vits_ref as vr

    # the Gaussian baselines (no compiled driver to build: a second or two); the code
    # under test is run_panels' reduction, the same for every method
    env = vr.envs.prior_bandit("cross", n_arms=5, sigma=2.0, seed=0)
    samples = np.random.default_rng(0).normal(size=(50, 2))
    methods = [("TS", vr.ThompsonSampling(vr.TunedTS.standard(2, sigma=2.0))),
               ("TunedTS", vr.ThompsonSampling(vr.TunedTS(samples, sigma=2.0)))]
    res = _shared.run_panels("t", "t", [("cross", env, methods, {})], 1, 6, 0,
                             str(tmp_path), reference="TS")
    curves = res.pop("curves")
    for mean, se in curves["cross"].values():
        assert np.isnan(se).all() and np.isfinite(mean).all()
    assert not plotting.has_band(curves["cross"])
    summary = _strict_json(tmp_path / "summary.json")
    for e in summary["results"]:
        assert e["final_regret_stderr"] is None and "NaN" in e["final_regret_stderr_nulls"]
    table = ablation.regret_table(summary)  # the table the diffts experiments print
    assert " n/a " in table and " 0.00 " not in table


def test_opvi_one_run_has_no_stderr(tmp_path):
    res = mixture.run(runs=1, rounds=3, n_data=100, n_particles=5, grid_n=21,
                      out=str(tmp_path / "m"))
    summary = _strict_json(tmp_path / "m" / "summary.json")
    for e in summary["results"]:
        if "final_energy" in e:
            assert e["final_energy_stderr"] is None
            assert "NaN" in e["final_energy_stderr_nulls"]
    for r in (res, summary):
        lines = mixture.table(r).splitlines()[2:]
        assert lines and all(" n/a " in ln for ln in lines if "diverged" not in ln)

    res = bnn.run(runs=1, rounds=3, n_particles=3, hidden=4, out=str(tmp_path / "b"))
    summary = _strict_json(tmp_path / "b" / "summary.json")
    for e in summary["results"]:
        if "diverged" not in e:
            assert e["final_rmse_stderr"] is None and "NaN" in e["final_rmse_stderr_nulls"]
            assert all(v is None for v in e["curve_stderr"]["rmse"])
    for r in (res, summary):
        lines = [ln for ln in bnn.table(r).splitlines()
                 if any(ln.startswith(e["method"]) for e in r["results"])]
        assert lines and all(ln.count(" n/a ") == 2 for ln in lines if "diverged" not in ln)

    res = classifier.run(runs=1, rounds=3, n_particles=3, hidden=4, out=str(tmp_path / "c"))
    summary = _strict_json(tmp_path / "c" / "summary.json")
    assert all(e["final_accuracy_stderr"] is None for e in summary["results"]
               if "diverged" not in e)
    assert " n/a " in classifier.table(summary)
