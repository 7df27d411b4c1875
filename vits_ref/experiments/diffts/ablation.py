r"""Appendix C.3 of Kveton et al. (Figure 6): DiffTS on "cross" against the number of stages T
and the number of training samples.

Setup: the "cross" problem of :mod:`~vits_ref.experiments.diffts.synthetic` (linear
bandit, K = 100 arms in the unit ball, ``sigma = 2``, ``theta_*`` drawn from the prior in
every run, 100 rounds: see that module for the horizon). Two panels, every method on the
same runs (paired differences):

- **stages** (Figures 6b and 6c): DiffTS with priors of ``T`` in :data:`STAGES` = 1, 2, 5,
  10, 25, 50, 100, 200, 300 stages, each trained on the same 10 000 samples
  (``alpha_t = 0.97`` whatever ``T``, as the paper keeps it: with ``T = 1`` the chain
  starts at ``abar_1 = 0.97``, so the ``N(0, I)`` start is far from the diffused prior and
  the one stage must undo it); the reference is ``T = 100``;
- **training samples** (Figure 6a): DiffTS with ``T = 100`` priors trained on
  :data:`TRAIN_SIZES` = 100, 300, 1000, 3000, 10 000 samples; the reference is 10 000.

Sampling time (Figure 6c): for every ``T``, the median wall time per posterior draw of
DiffTS (LaplaceDPS, linear model) after ``N = 50`` observations, over
:data:`TIME_REPEATS` calls of ``sample(32)`` on one Numba thread after a warm-up
(compilation excluded; :func:`draw_time`), and the bandit loop's microseconds per round
(``us_per_round``, the compiled driver over runs); a least-squares line through the
draw times gives the cost per stage and ``R^2`` (``scipy.stats.linregress``).

Claims (:func:`claims`, the claim table's entries for this experiment): the regret drops
from ``T = 1`` to ``T = 25`` and is similar to ``T = 100``'s at 200 and 300 stages; it is
higher with 100 training samples than with 10 000 and similar at 3 000; the draw time
rises with ``T`` and is linear in it (the parabola through the repeated timings,
``draw_times_s``, within a margin of its chord). The paper's "about 85 at ``T = 1``, 50 at
``T = 25``" are absolute values on its own "cross", which is drawn but not specified; the
table prints them beside ours.

Execution: the bandit runs go in resumable chunks of runs, as in every experiment of
:mod:`vits_ref.experiments.diffts` (its docstring says what a rerun reuses).
"""

import os
import time

import numpy as np

from .._chunks import check_progress
from .._common import regret_table, write_json
from .._paired import panel_entries
from ..plotting import paper_title, plotted, regret_panels
from . import _shared
from .synthetic import ALPHA, SIGMA, environment, true_samples

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("diffts", "appendix C.3: DiffTS's regret against the "
                                                "stages and the training samples"),
          "ablation.png": paper_title("diffts", "Figure 6: ablation")}

NAME = "diffts-ablation"
DESCRIPTION = ("Diffusion-prior paper appendix C.3 (Figure 6): DiffTS on 'cross' against "
               "the number of stages T and of training samples")
DEFAULTS = {"runs": 100, "rounds": 100, "seed": 0}
SHAPE = "cross"
STAGES = (1, 2, 5, 10, 25, 50, 100, 200, 300)
TRAIN_SIZES = (100, 300, 1000, 3000, 10_000)
REF_STAGES, REF_TRAIN = 100, 10_000
TIME_OBS, TIME_REPEATS, TIME_BATCH = 50, 20, 32
#: What does not shrink with a smaller request (``run --help`` and stderr say it).
FIXED_COST = ("the grid: 13 priors (9 stage counts up to T = 300, 4 more training sizes) "
              "trained (their epochs scale with the request) and 20 timed draws per T")
PANEL_STAGES, PANEL_TRAIN = "stages T", "training samples"
#: The paper's values (appendix C.3 and section 6.2).
PAPER = {"T=1": 85.0, "T=25": 50.0}


def stage_label(T):
    """The method label of a number of stages."""
    return f"T = {T}"


def train_label(n):
    """The method label of a training size."""
    return f"n = {n}"


def draw_time(prior, n_obs=TIME_OBS, repeats=TIME_REPEATS, seed=0, batch=TIME_BATCH):
    """Median seconds per DiffTS posterior draw (linear model) after ``n_obs``
    observations: the median of :func:`draw_times`."""
    return float(np.median(draw_times(prior, n_obs, repeats, seed, batch)))


def draw_times(prior, n_obs=TIME_OBS, repeats=TIME_REPEATS, seed=0, batch=TIME_BATCH):
    """Seconds per DiffTS posterior draw (linear model) after ``n_obs`` observations, one
    per repeat: ``repeats`` calls of ``sample(batch)`` on one Numba thread, after a
    warm-up call (compilation excluded), each divided by ``batch``. One thread and a batch
    measure the chain's work, not the thread pool's start-up per call."""
    import vits_ref as vr

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, prior.dim)) / np.sqrt(prior.dim)
    y = X @ rng.standard_normal(prior.dim) + SIGMA * rng.standard_normal(n_obs)
    eng = vr.DiffTS(prior, model="linear", sigma=SIGMA, seed=seed)
    eng.update(X, y)
    times = np.empty(repeats)
    with _shared.one_thread():
        eng.sample(batch)
        for i in range(repeats):
            t0 = time.perf_counter()
            eng.sample(batch)
            times[i] = (time.perf_counter() - t0) / batch
    return times


def run(runs=100, rounds=100, seed=0, out="results/diffts-ablation", progress=None,
        stages=STAGES, train_sizes=TRAIN_SIZES, train_kwargs=None, time_repeats=TIME_REPEATS,
        ref_stages=REF_STAGES, ref_train=REF_TRAIN, n_jobs=1):
    """Run the ablation; writes ``curves.csv``, ``summary.json``, ``regret.png`` and
    ``ablation.png`` (regret and draw time against T, regret against the training size).

    The bandit runs go in resumable chunks (``out/chunks``; see the module docstring).

    Parameters
    ----------
    runs, rounds, seed : int
    out : str
        Output folder; trained priors are cached under ``out/priors``.
    progress : callable or None
    stages, train_sizes : sequences of int
        The grid (the paper's by default); ``ref_stages`` and ``ref_train`` are always run:
        they are the panels' references.
    train_kwargs : dict or None
        Training options of :class:`vits_ref.diffusion.DiffusionPrior` (tests use few
        epochs); without ``epochs``, the epochs are scaled to the request below the default
        size (:func:`~vits_ref.experiments.diffts._shared.scaled_training`). The grid of
        stages and training sizes does not shrink with the request.
    time_repeats : int
        Draws timed per T.
    ref_stages, ref_train : int
        The references of the paired differences and the stages of the training-size panel
        (the paper's T = 100 and 10 000 samples; the tests use smaller ones).
    n_jobs : int
        As :func:`vits_ref.experiments.diffts.synthetic.run`.
    """
    check_progress(progress)
    ref_stages, ref_train = int(ref_stages), int(ref_train)
    stages = sorted({int(T) for T in stages} | {ref_stages})
    train_sizes = sorted({int(n) for n in train_sizes} | {ref_train})
    train_kwargs, training = _shared.scaled_training(train_kwargs, runs, rounds, DEFAULTS,
                                                     progress)
    cache = os.path.join(out, "priors")
    s_data, s_env = _shared.seeds(seed, 2)
    samples = true_samples(SHAPE, max(train_sizes), s_data)
    env = environment(SHAPE, s_env)
    priors, timing, info, load = {}, {}, {}, {}
    for T in stages:
        prior, info[f"T={T}"] = _shared.trained_prior(
            samples[:ref_train], T, ALPHA, seed=seed, cache_dir=cache, name=SHAPE,
            train_kwargs=train_kwargs, progress=progress)
        priors[("T", T)] = prior
        if progress:
            progress(f"timing the draw at T = {T}")
        timing[T] = draw_times(prior, repeats=time_repeats, seed=seed)
        load[T] = _load_average()
    for n in train_sizes:
        if n == ref_train:
            priors[("n", n)] = priors[("T", ref_stages)]
            continue
        prior, info[f"n={n}"] = _shared.trained_prior(
            samples[:n], ref_stages, ALPHA, seed=seed, cache_dir=cache, name=SHAPE,
            train_kwargs=train_kwargs, progress=progress)
        priors[("n", n)] = prior
    import vits_ref as vr

    def policy(prior):
        return vr.ThompsonSampling(vr.DiffTS(prior, model="linear", sigma=SIGMA))

    panels = [(PANEL_STAGES, env, [(stage_label(T), policy(priors[("T", T)]))
                                   for T in stages], {}),
              (PANEL_TRAIN, env, [(train_label(n), policy(priors[("n", n)]))
                                  for n in train_sizes], {})]
    median = {T: float(np.median(timing[T])) for T in stages}
    fit = _linear_fit(stages, [median[T] for T in stages])
    extra = {"shape": SHAPE, "sigma": SIGMA, "alpha": ALPHA, "stages": stages,
             "train_sizes": train_sizes, "train_kwargs": train_kwargs,
             "prior_training": training, "priors": info,
             "draw_time_s": {str(T): median[T] for T in stages},
             "draw_times_s": {str(T): timing[T].tolist() for T in stages}, "time_fit": fit,
             "load_average_at_timing": {str(T): load[T] for T in stages},
             "time_obs": TIME_OBS, "time_repeats": time_repeats, "ref_stages": ref_stages,
             "ref_train": ref_train}
    reference = {PANEL_STAGES: stage_label(ref_stages), PANEL_TRAIN: train_label(ref_train)}
    result = _shared.run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                                extra=extra, n_jobs=n_jobs, reference=reference)
    curves = result.pop("curves")
    files = result["files"]
    path = os.path.join(out, "regret.png")
    title = f"{TITLES['regret.png']}, '{SHAPE}' ({runs} runs)"
    if plotted(lambda: regret_panels(curves, path, title=title), progress):
        files.append(path)
    path = os.path.join(out, "ablation.png")
    if plotted(lambda: _figure(result, path), progress):
        files.append(path)
    write_json(files[1], result)
    return result


def _load_average():
    """The machine's 1-minute load average (None where the OS has none): on a loaded
    machine a timed call longer than the scheduler's time slice (a few ms: 32 draws at
    T >= 100) is preempted, which inflates its time, so the timings carry it."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def _linear_fit(x, y):
    from scipy import stats

    if len(x) < 3:
        return None
    r = stats.linregress(np.asarray(x, float), np.asarray(y, float))
    return {"slope_s_per_stage": float(r.slope), "intercept_s": float(r.intercept),
            "r2": float(r.rvalue ** 2), "slope_stderr": float(r.stderr)}


def _figure(result, path):
    from ..plotting import CI95_BARS, figure, outside_legend, save

    fig, (a, b, c) = figure(3, width=4.5, height=3.6)
    eT = panel_entries(result, PANEL_STAGES)
    en = panel_entries(result, PANEL_TRAIN)
    for ax, entries, values, lab, xl in (
            (a, en, result["train_sizes"], train_label, "training samples"),
            (b, eT, result["stages"], stage_label, "stages T")):
        xs = [v for v in values if lab(v) in entries]
        m = np.array([entries[lab(v)]["final_regret_mean"] for v in xs])
        s = np.array([entries[lab(v)]["final_regret_stderr"] for v in xs], dtype=float)
        # +-1.96 standard errors: a normal 95% interval of the mean final regret (with
        # one run the standard error is NaN and no bar is drawn, so the label says "mean")
        ax.errorbar(xs, m, yerr=1.96 * s, marker="o", capsize=3, color="C0",
                    label=CI95_BARS if np.isfinite(s).any() else "mean final regret")
        ax.set_xscale("log")
        ax.set_xlabel(xl)
        ax.set_ylabel(f"regret at n = {result['rounds']}")
        ax.grid(alpha=0.3)
    T = result["stages"]
    ms = [1e3 * result["draw_time_s"][str(t)] for t in T]
    c.plot(T, ms, "o-", label="one posterior draw")
    fit = result.get("time_fit")
    if fit:
        xs = np.array([min(T), max(T)], float)
        c.plot(xs, 1e3 * (fit["intercept_s"] + fit["slope_s_per_stage"] * xs), "--",
               label=f"fit, R^2 = {fit['r2']:.3f}")
    c.set_xlabel("stages T")
    c.set_ylabel("ms per draw")
    c.grid(alpha=0.3)
    outside_legend([a, b, c])  # one legend right of the draw-time panel
    fig.suptitle(f"{TITLES['ablation.png']}, '{SHAPE}' ({result['runs']} runs)")
    save(fig, path)
    return fig


def table(result):
    """The regret tables of both panels and the draw times with their linear fit."""
    lines = []
    for panel in (PANEL_STAGES, PANEL_TRAIN):
        sub = {**result, "reference": result["reference"][panel],
               "results": [e for e in result["results"] if e["panel"] == panel]}
        lines += [regret_table(sub), ""]
    lines.append(f"(the paper, on its own 'cross': about {PAPER['T=1']:g} at T = 1, "
                 f"{PAPER['T=25']:g} at T = 25)")
    lines.append("")
    load = result.get("load_average_at_timing") or {}
    lines.append("T       ms per draw   load average (1 min) when timed")
    for T in result["stages"]:
        got = load.get(str(T))
        lines.append(f"{T:<7d} {1e3 * result['draw_time_s'][str(T)]:<13.3f} "
                     + (f"{got:.1f}" if got is not None else "n/a"))
    fit = result.get("time_fit")
    if fit:
        lines.append(f"fit: {1e6 * fit['slope_s_per_stage']:.2f} us per stage, intercept "
                     f"{1e6 * fit['intercept_s']:.1f} us, R^2 = {fit['r2']:.4f}")
    return "\n".join(lines)
