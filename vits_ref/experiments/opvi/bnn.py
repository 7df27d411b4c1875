r"""The OPVI paper, section 5.2 and Table 1: Bayesian neural network regression.

Setup, as the paper states it: "a single hidden layer BNN with 50 hidden units", a
"Gamma(1, 0.1)" prior (on the noise and weight precisions, as in the SVGD paper, carried
in log space: :class:`vits_ref.models.bnn.BNNRegression`), "Kin8nm as the dataset", a
random 90% / 10% train / test split, 20 particles, 500 rounds; fixed batch ``B = 20`` and
the growing ``B_t = t^0.55`` (the FITDS policy: about the same data per method), full batch
for the full-batch method; averaged over 20 tries (:data:`DEFAULTS`: 20 runs, each a new
random split). Inputs and targets are standardised with the training split's statistics
(the SVGD code's convention); RMSE and test log-likelihood are in the target's original
units (:func:`vits_ref.models.bnn.regression_metrics`, ``convention="exact"``).

**Data.** Kin8nm cannot be downloaded here. By default the experiment uses scikit-learn's
``load_diabetes`` (442 patients, 10 inputs, a real regression data set that ships with
scikit-learn), and says so in its summary; ``path`` (``--data kin8nm.csv``) reads a user's
Kin8nm CSV (8 input columns, the target last; a header row is skipped). On diabetes the
training split has 398 rows, so the ~10 000 data points of 500 rounds are about 25
shuffled passes over it (the stream reshuffles when a pass is used up), where on Kin8nm
(8 192 rows) they are about 1.4 passes.

Methods (:func:`vits_ref.experiments.opvi.mixture.particle_run`, the loop of the three
experiments): OPVI (growing batch, summed batch likelihood, prior weight
``6/(pi^2 t^2)``, repulsion 0.1), OPVI at ``B = 20``, SVGD at ``B = 20`` (likelihood
scaled by ``N/B``) and full-batch SVGD; AdaGrad with the SVGD code's master step 1e-3 for
all ("All ParVI methods use the same stepsize"); particles start as the SVGD code's
(:meth:`~vits_ref.models.bnn.BNNRegression.init_particles`), the same start for every
method of a run. **LD (B = 20)**, Table 1's mini-batch Langevin dynamics (Welling & Teh:
``theta += h/2 grad + N(0, h)`` with the ``N / B`` mini-batch gradient and the full prior,
the same start), at the constant step :data:`LD_STEP`; full-batch LD (Table 1's ``B = 10k``
row) is not run. The paper gives LD "a smaller but best possible stepsize" and no value, so
the library's is chosen by one stated tuning of LD alone (:func:`ld_step_tuning`): the grid
1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, fixed before any run, on 3 runs of seed 100 (not the
evaluation seeds) at the default size on the default data, the step with the lowest mean
final test RMSE of LD. It never looks at OPVI or at the paper's numbers. The tuning gave
(mean final RMSE on diabetes, in the target's units; ``diverged`` where the particles
became non-finite): 1e-3: 61.3, 3e-4: 58.8, 1e-4: 56.9, **3e-5: 54.8**, 1e-5: 56.3,
3e-6: 62.3 (``python -c "from vits_ref.experiments.opvi import bnn;
print(bnn.ld_step_tuning())"``, 26 s).

Paper's Table 1 (Kin8nm, 20 tries; RMSE, LL): OPVI ``B_t = t^0.55`` .127 +- .008, .653 +-
.060; OPVI ``B = 20`` .145, .516; SVGD ``B = 20`` .144, .525; SVGD ``B = 10k`` .112, .783;
LD ``B = 20`` .159, .425; LD ``B = 10k`` .143, .527 (:data:`PAPER_TABLE1`). The numbers are
comparable only on Kin8nm; on diabetes (the stand-in) the claims are judged as sentences on
substitute data, kind (b) of docs/reproduction/judging.md.

Execution: the runs (random splits, every method of a split together) go in resumable
chunks of runs (:func:`run_supervised`; ``out/chunks/runs`` and ``out/manifest.json``),
run ``r`` seeded as before (child ``r`` of the seed): rerunning the same command reuses
the finished chunks, and the results are bit-identical whatever the chunking or the
executor (``--jobs``, Dask).
"""

import csv
import math
import os
import time

import numpy as np

from ..._seeding import child, run_seed
from ..._validate import as_seed_sequence
from ...errors import DivergenceError
from .._chunks import check_progress
from .._common import environment_info, write_json
from .._outputs import text_output
from .._paired import format_difference, paired_difference
from ..plotting import drawn, paper_title
from .mixture import check_arguments, model_gradient, particle_run, record_rounds, se_text

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"curves.png": paper_title("opvi", "section 5.2: BNN regression")}

NAME = "opvi-bnn"
DESCRIPTION = ("OPVI paper section 5.2: BNN regression (50 hidden, 20 particles), "
               "test RMSE and log-likelihood over rounds; diabetes by default, --data "
               "kin8nm.csv for the paper's data")
DEFAULTS = {"runs": 20, "rounds": 500, "seed": 0}
#: What the experiment imports from an extra: ``(module, distribution, extra, needed
#: with --data)`` (checked by the command line before any work; a Kin8nm CSV given
#: with ``--data`` needs no scikit-learn).
NEEDS = (("sklearn", "scikit-learn", "data", False),)
N_PARTICLES, HIDDEN, BATCH = 20, 50, 20
STEP_SIZE = 1e-3
TEST_FRACTION = 0.1
OPVI, OPVI_STATIC = "OPVI (B_t = t^0.55)", "OPVI (B = 20)"
SVGD_B, SVGD_FULL = "SVGD (B = 20)", "SVGD (full batch)"
LD_B = "LD (B = 20)"
#: LD's constant step (the module docstring gives the rule; :func:`ld_step_tuning`).
LD_STEP = 3e-5
#: The grid the LD step was chosen from, fixed before the tuning ran.
LD_GRID = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6)
#: label -> (kind, batch) of :func:`vits_ref.experiments.opvi.mixture.particle_run`, and
#: for LD its step
METHODS = {OPVI: ("opvi", "growing"), OPVI_STATIC: ("opvi", BATCH),
           SVGD_B: ("svgd", BATCH), SVGD_FULL: ("svgd", "full"),
           LD_B: ("sgld", BATCH, LD_STEP)}
#: Table 1 of the OPVI paper (Kin8nm, 20 tries): method -> (RMSE, +-, LL, +-, time)
PAPER_TABLE1 = {OPVI: (0.127, 0.008, 0.653, 0.060, 2.4),
                OPVI_STATIC: (0.145, 0.003, 0.516, 0.021, 2.4),
                SVGD_B: (0.144, 0.003, 0.525, 0.019, 2.4),
                SVGD_FULL: (0.112, 0.002, 0.783, 0.017, 5.8),
                "LD (B = 20)": (0.159, 0.004, 0.425, 0.024, 1.7),
                "LD (B = 10k)": (0.143, 0.002, 0.527, 0.015, 5.2)}


# -- data -------------------------------------------------------------------------------


def load(path=None, dataset="diabetes"):
    """``(X, y, name)``: a user CSV (``path``: inputs then the target in the last column,
    a non-numeric first row skipped) or a scikit-learn data set (``"diabetes"``)."""
    if path is not None:
        if not os.path.isfile(path):
            raise ValueError(f"path must be an existing CSV file, got {path!r}")
        raw = np.genfromtxt(path, delimiter=",", dtype=float)
        if raw.ndim != 2 or raw.shape[1] < 2:
            raise ValueError(f"{path}: expected rows of inputs and a target, got shape "
                             f"{raw.shape}")
        if np.isnan(raw[0]).all():
            raw = raw[1:]  # header
        if not np.isfinite(raw).all():
            raise ValueError(f"{path}: non-numeric or missing values")
        return raw[:, :-1], raw[:, -1], os.path.basename(path)
    if dataset != "diabetes":
        raise ValueError(f"dataset must be 'diabetes' (or give a path), got {dataset!r}")
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    return d.data.astype(float), d.target.astype(float), "diabetes (scikit-learn)"


def split(X, y, rng, test_fraction=TEST_FRACTION):
    """A random train / test split and the training statistics: ``(Xtr, ytr, Xte, yte,
    stats)``, inputs standardised, ``ytr`` standardised, ``yte`` in original units."""
    n = X.shape[0]
    perm = rng.permutation(n)
    n_test = max(1, int(round(test_fraction * n)))
    te, tr = perm[:n_test], perm[n_test:]
    mx, sx = X[tr].mean(axis=0), X[tr].std(axis=0)
    sx[sx == 0] = 1.0
    my, sy = float(y[tr].mean()), float(y[tr].std())
    return ((X[tr] - mx) / sx, (y[tr] - my) / sy, (X[te] - mx) / sx, y[te],
            {"y_mean": my, "y_std": sy})


# -- the shared supervised runner (also used by opvi-classifier) ------------------------


def run_supervised(name, task, metric_names, runs, rounds, seed, n_particles, methods,
                   method_kinds, step_size, progress, out=None, description=None):
    """Run every method on ``runs`` random splits; record ``task.evaluate`` at log-spaced
    rounds; in resumable chunks of runs (:func:`supervised_block` through
    :func:`vits_ref.experiments._chunks.map_runs`, stage ``runs`` of the output folder
    ``out``, None: in memory), bit-identical whatever the chunking or the executor.

    ``task`` (picklable, for the process and Dask executors): ``task.data(rng)`` ->
    ``(Xtr, ytr, Xte, yte, stats, baseline)`` (``baseline``: a number per split, e.g. the
    constant predictor's RMSE), ``task.make_model(Xtr, ytr)`` -> model with
    ``minibatch_data``, ``task.init(model, n, rng, Xtr, ytr)`` -> starting particles,
    ``task.evaluate(model, X, stats, Xte, yte)`` -> tuple of metrics named
    ``metric_names``. ``description``: what the results depend on beyond the arguments
    (JSON-able; the manifest's fingerprint).

    Returns ``(per-method dict, record rounds, data sizes, baselines per run)``.
    """
    import functools

    from .. import _chunks

    rec = record_rounds(rounds, n=20)
    if progress:
        for m in methods:
            progress(f"{name}: {m}, {runs} runs x {rounds} rounds")
    blocks = _chunks.map_runs(
        functools.partial(supervised_block, task, metric_names, rounds, seed, n_particles,
                          methods, method_kinds, step_size), runs, out, name, "runs",
        {"task": description, "metrics": list(metric_names), "runs": runs, "rounds": rounds,
         "seed": seed, "n_particles": n_particles, "methods": list(methods),
         "kinds": {m: list(method_kinds[m]) for m in methods}, "step_size": step_size},
        progress, work_per_run=rounds * len(methods))
    res = {}
    for i, m in enumerate(methods):
        # per run, the methods ran one after another on the same split: interleaved
        # repeats of each method's time, paired by run (the timing claims' spread)
        e = {"metrics": blocks["metrics"][:, i].copy(),
             "wall_time_s": float(blocks["wall_time"][:, i].sum()),
             "wall_time_per_run_s": blocks["wall_time"][:, i].tolist()}
        errors = [str(x) for x in blocks["error"][:, i]]
        bad = next((r for r, x in enumerate(errors) if x), None)
        last = runs if bad is None else bad  # runs done before the first divergence
        if last > 0:
            e["data_used_per_run"] = int(blocks["used"][last - 1, i])
        if bad is not None:
            e["diverged"] = errors[bad]
            e["metrics"][bad + 1:] = np.nan  # the loop stopped at the diverged run
            if progress:
                progress(f"{m} diverged: {errors[bad]}")
        res[m] = e
    sizes = {k: int(blocks[k]) for k in ("n_train", "n_test", "n_inputs")}
    return res, rec, sizes, blocks["baseline"].tolist()


def supervised_block(task, metric_names, rounds, seed, n_particles, methods, method_kinds,
                     step_size, lo, hi):
    """Runs (random splits) ``lo, ..., hi - 1`` of :func:`run_supervised` (a chunk of
    :func:`vits_ref.experiments._chunks.map_runs`): run ``r`` splits with child 0 of child
    ``r`` of ``seed``, starts the particles with its child 1 and streams with child 2, as
    the experiments always seeded it, so the blocks equal one loop over all runs. A method
    that diverges is not run on the block's later runs.

    Returns, with the runs on the leading axis: ``metrics`` (runs, methods, records,
    metrics), ``used`` (runs, methods; -1 if not run), ``error`` (runs, methods; the
    divergence's message or ``""``), ``wall_time`` (runs, methods) and ``baseline``
    (runs,); and the data sizes ``n_train``, ``n_test``, ``n_inputs``.
    """
    root = as_seed_sequence(seed)
    rec = record_rounds(rounds, n=20)
    pos = {t: k for k, t in enumerate(rec)}
    n, M = hi - lo, len(methods)
    metrics = np.full((n, M, len(rec), len(metric_names)), np.nan)
    used = np.full((n, M), -1, dtype=np.int64)
    errors = np.full((n, M), "", dtype=object)
    wall = np.zeros((n, M))
    baseline = np.empty(n)
    diverged = set()
    for i, r in enumerate(range(lo, hi)):
        rs = run_seed(root, r)
        Xtr, ytr, Xte, yte, stats, baseline[i] = task.data(np.random.default_rng(child(rs, 0)))
        model = task.make_model(Xtr, ytr)
        grad = model_gradient(model)
        x0 = task.init(model, n_particles, np.random.default_rng(child(rs, 1)), Xtr, ytr)
        for j, m in enumerate(methods):
            if m in diverged:
                continue

            def record(t, X, i=i, j=j, model=model, stats=stats, Xte=Xte, yte=yte):
                metrics[i, j, pos[t]] = task.evaluate(model, X, stats, Xte, yte)

            # (kind, batch) or, for Langevin dynamics, (kind, batch, its own step)
            kind, batch, *ld_step = method_kinds[m]
            start = time.perf_counter()
            try:
                _, used[i, j] = particle_run(
                    kind, batch, grad, x0, Xtr.shape[0], rounds,
                    np.random.default_rng(child(rs, 2)), step_size,
                    sgld_step=ld_step[0] if ld_step else None, record=record,
                    record_rounds=rec, name=m)
            except DivergenceError as err:
                errors[i, j] = str(err)
                diverged.add(m)
            wall[i, j] = time.perf_counter() - start
    return {"metrics": metrics, "used": used, "error": errors.astype(str), "wall_time": wall,
            "baseline": baseline, "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]),
            "n_inputs": int(Xtr.shape[1])}


def data_digest(X, y):
    """A short digest of a data set (the chunks' fingerprint: another file, other chunks)."""
    import hashlib

    h = hashlib.sha1(np.ascontiguousarray(X, dtype=float).tobytes())
    h.update(np.ascontiguousarray(y).tobytes())
    return h.hexdigest()[:16]


class RegressionTask:
    """The BNN regression runs of :func:`run` for :func:`run_supervised` (picklable): a
    random split (baseline: the constant predictor's test RMSE), the model, its starting
    particles and the test RMSE and log-likelihood."""

    def __init__(self, X, y, hidden):
        self.X, self.y, self.hidden = X, y, hidden

    def data(self, rng):
        Xtr, ytr, Xte, yte, stats = split(self.X, self.y, rng)
        const = float(np.sqrt(np.mean((yte - stats["y_mean"]) ** 2)))
        return Xtr, ytr, Xte, yte, stats, const

    def make_model(self, Xtr, ytr):
        from ...models.bnn import BNNRegression

        m = BNNRegression(Xtr.shape[1], hidden=self.hidden, capacity=max(1, Xtr.shape[0]))
        m.add(Xtr, ytr)
        return m

    def init(self, model, n, rng, Xtr, ytr):
        return model.init_particles(n, seed=rng, X=Xtr, y=ytr)

    def evaluate(self, model, thetas, stats, Xte, yte):
        from ...models.bnn import regression_metrics

        return regression_metrics(model, thetas, Xte, yte, stats["y_mean"], stats["y_std"])


def summarise(out, metric_names, runs, reference=OPVI):
    """Per method: final metrics per run, mean and se, curves and their standard errors;
    paired differences of the final metrics, the reference (OPVI) minus each other method."""
    results = []
    for m, e in out.items():
        entry = {"method": m, "wall_time_s": e["wall_time_s"],
                 "wall_time_per_run_s": e["wall_time_per_run_s"]}
        if "diverged" in e:
            entry["diverged"] = e["diverged"]
            results.append(entry)
            continue
        M = e["metrics"]
        entry["data_used_per_run"] = int(e["data_used_per_run"])
        for k, name in enumerate(metric_names):
            final = M[:, -1, k]
            entry[f"final_{name}"] = final.tolist()
            entry[f"final_{name}_mean"] = float(final.mean())
            # undefined for one run: NaN (null with a note in the JSON, "n/a" in tables)
            entry[f"final_{name}_stderr"] = (float(final.std(ddof=1) / math.sqrt(runs))
                                             if runs > 1 else float("nan"))
            entry[f"{name}_mean_curve"] = M[:, :, k].mean(axis=0).tolist()
        results.append(entry)
    by = {e["method"]: e for e in results if "diverged" not in e}
    if reference in by and runs > 1:
        for m, e in by.items():
            if m != reference:
                e["paired_opvi_minus_this"] = {
                    name: paired_difference(by[reference][f"final_{name}"],
                                            e[f"final_{name}"]) for name in metric_names}
    _curve_stderr(out, results, metric_names, runs)
    return results


def write_curves(path, out, rec, metric_names):
    with text_output(path) as fh:
        w = csv.writer(fh)
        w.writerow(["method", "round", *(f"{n}_mean" for n in metric_names)])
        for m, e in out.items():
            if "diverged" in e:
                continue
            mean = e["metrics"].mean(axis=0)
            for k, t in enumerate(rec):
                w.writerow([m, t, *(f"{v:.6g}" for v in mean[k])])


def write_outputs(result, out, rec, metric_names, labels, title, progress):
    """Write ``result["files"]``: the mean curves (CSV), the figure (:func:`plot_curves`)
    and ``result`` (JSON), last, so that it lists the figure only if it was written
    (without matplotlib the figure is dropped from ``files``)."""
    files = result["files"]
    write_curves(files[0], out, rec, metric_names)
    result["files"] = files[:2] + drawn(
        {files[2]: lambda: plot_curves(result, metric_names, labels, files[2], title)},
        progress)
    write_json(files[1], result)
    return result


def plot_curves(result, metric_names, labels, path, title):
    """The mean curves with bands of +-1 standard error over runs (none for one run),
    one panel per metric, one legend right of the last panel; returns the Figure."""
    from ..plotting import BAND_NOTE, band, figure, line_styles, outside_legend, save

    fig, axes = figure(len(metric_names), width=5.0)
    # one style per method in every panel, whichever metrics a method records
    styles = line_styles(e["method"] for e in result["results"])
    rec = np.asarray(result["record_rounds"])
    any_band = False
    for ax, name, lab in zip(axes, metric_names, labels, strict=True):
        for e in result["results"]:
            if f"{name}_mean_curve" not in e:
                continue
            mean = np.asarray(e[f"{name}_mean_curve"], dtype=float)
            se = (e.get("curve_stderr") or {}).get(name)
            # one run: NaN (None once read back from the JSON), and no band is drawn
            se = np.full_like(mean, np.nan) if se is None else np.asarray(se, dtype=float)
            any_band |= bool(np.isfinite(se).any())
            band(ax, rec, mean, mean - se, mean + se, e["method"], styles[e["method"]])
        ax.set_xscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel(lab)
        ax.grid(alpha=0.3)
    outside_legend(axes, fontsize=7, band_note=BAND_NOTE if any_band else None)
    fig.suptitle(title, fontsize=9)
    save(fig, path)
    return fig


def _curve_stderr(out, results, metric_names, runs):
    for e in results:
        if "diverged" in e:
            continue
        M = out[e["method"]]["metrics"]
        # one run: NaN curves (undefined), null with a note in the JSON
        e["curve_stderr"] = {name: (M[:, :, k].std(axis=0, ddof=1) / math.sqrt(runs)).tolist()
                             if runs > 1 else [math.nan] * M.shape[1]
                             for k, name in enumerate(metric_names)}


def _check(runs, rounds, n_particles, step_size, methods, known):
    return check_arguments(methods, known, (("runs", runs), ("rounds", rounds),
                                            ("n_particles", n_particles)),
                           (("step_size", step_size),))


# -- the experiment --------------------------------------------------------------------

METRICS = ("rmse", "ll")


def run(runs=20, rounds=500, seed=0, out="results/opvi-bnn", progress=None, path=None,
        n_particles=N_PARTICLES, hidden=HIDDEN, methods=None, step_size=STEP_SIZE):
    """Run the experiment; writes ``curves.csv``, ``summary.json`` and ``curves.png``.

    Parameters
    ----------
    runs, rounds, seed : int
        Paper: 20 tries, 500 rounds.
    out : str
    progress : callable or None
    path : str, optional
        A Kin8nm CSV (``--data``); default: scikit-learn's diabetes data.
    n_particles : int, default 20
    hidden : int, default 50
    methods : sequence of labels of :data:`METHODS`, optional
    step_size : float, default 1e-3
        AdaGrad master step (the SVGD code's).

    Returns
    -------
    dict
        The JSON summary: per method the final test RMSE and log-likelihood per run, their
        mean and se, the mean curves over the recorded rounds, the paired differences
        OPVI minus each method; the constant predictor's RMSE; the paper's Table 1.

    Runs in resumable chunks of runs (``out/chunks``; see the module docstring).
    """
    check_progress(progress)
    chosen = _check(runs, rounds, n_particles, step_size, methods, METHODS)
    X, y, data_name = load(path)
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    res, rec, sizes, const = run_supervised(
        NAME, RegressionTask(X, y, hidden), METRICS, runs, rounds, seed, n_particles, chosen,
        METHODS, step_size, progress, out,
        {"data": data_name, "data_digest": data_digest(X, y), "hidden": hidden})
    results = summarise(res, METRICS, runs)
    const_per_run = const[:runs]
    is_kin8nm = path is not None and "kin8nm" in os.path.basename(path).lower()
    files = [os.path.join(out, f) for f in ("curves.csv", "summary.json", "curves.png")]
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "rounds": rounds,
              "seed": seed, "data": data_name, "data_is_kin8nm": is_kin8nm,
              "data_note": ("Kin8nm (the paper's data), from the user's file" if is_kin8nm
                            else "not the paper's data (Kin8nm cannot be downloaded here): "
                                 "Table 1's numbers are not comparable"),
              **sizes, "n_particles": n_particles, "hidden": hidden, "step_size": step_size,
              "ld_step": LD_STEP,
              "batch": BATCH, "record_rounds": rec,
              "constant_predictor_rmse": const_per_run,
              "constant_predictor_rmse_mean": float(np.mean(const_per_run)),
              "paper_table1": {m: dict(zip(("rmse", "rmse_pm", "ll", "ll_pm", "time"), v,
                                           strict=True)) for m, v in PAPER_TABLE1.items()},
              "results": results, "files": files,
              "total_wall_time_s": time.perf_counter() - t0,
              "environment": environment_info()}
    return write_outputs(result, res, rec, METRICS,
                         ("test RMSE (mean +- se)", "test log-likelihood"),
                         f"{TITLES['curves.png']} on {data_name}, {n_particles} particles, "
                         f"{runs} runs",
                         progress)


def ld_step_tuning(grid=LD_GRID, runs=3, seed=100, rounds=500, n_particles=N_PARTICLES,
                   hidden=HIDDEN, path=None):
    """The stated tuning behind :data:`LD_STEP`: LD (B = 20) alone at each step of ``grid``
    on ``runs`` splits of ``seed`` (not the evaluation seeds), in memory.

    Returns ``{step: mean final test RMSE}`` (None for a step at which LD diverged); the
    chosen step is the one with the lowest value. Nothing else is run or compared.
    """
    X, y, data_name = load(path)
    task = RegressionTask(X, y, hidden)
    out = {}
    for h in grid:
        kinds = {LD_B: ("sgld", BATCH, float(h))}
        res, _, _, _ = run_supervised(NAME, task, METRICS, runs, rounds, seed, n_particles,
                                      [LD_B], kinds, STEP_SIZE, None, None,
                                      {"data": data_name, "tuning": "LD step"})
        e = res[LD_B]
        out[h] = None if "diverged" in e else float(e["metrics"][:, -1, 0].mean())
    return out


def table(result):
    """Final test RMSE and LL per method (mean +- se), beside the paper's Table 1."""
    lines = [f"BNN regression on {result['data']} ({result['n_train']} train / "
             f"{result['n_test']} test rows), {result['runs']} runs x {result['rounds']} "
             f"rounds; constant predictor RMSE {result['constant_predictor_rmse_mean']:.4g}",
             f"{'method':20s} {'RMSE':>9} {'+-se':>8} {'LL':>9} {'+-se':>7} {'s':>6}"
             f"   paper (Kin8nm) RMSE, LL   OPVI - method RMSE (paired 95% CI)"]
    for e in result["results"]:
        if "diverged" in e:
            lines.append(f"{e['method']:20s} diverged: {e['diverged']}")
            continue
        p = result["paper_table1"].get(e["method"])
        paper = f"{p['rmse']:.3f}, {p['ll']:.3f}" if p else "-"
        d = e.get("paired_opvi_minus_this", {}).get("rmse")
        se_r, se_l = e["final_rmse_stderr"], e["final_ll_stderr"]
        lines.append(f"{e['method']:20s} {e['final_rmse_mean']:9.4g} "
                     f"{se_text(se_r, '.3g'):>8} "
                     f"{e['final_ll_mean']:9.4g} {se_text(se_l, '.3g'):>7} "
                     f"{e['wall_time_s']:6.1f}   {paper:>22}   "
                     f"{format_difference(d, 4) if d else ''}")
    lines.append(result["data_note"])
    return "\n".join(lines)
