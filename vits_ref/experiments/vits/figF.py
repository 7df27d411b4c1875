"""Appendix F of the VITS paper: steps until ``KL(q_k || p*) <= eps`` against conditioning.

Setting (the paper's): target ``p* = N(m*, Sigma*)`` in dimension ``d = 10``, threshold
``eps = 0.1`` (eq. 52), step cap 50 000 (``--rounds``), absolute step sizes 0.001, 0.01
and 0.1, 100 seeds (``--runs``; a new target and new noise each), condition numbers
``kappa`` in 2.5, 5, ..., 20. Methods: LMC (mean and covariance by averaging the chain
after 1000 burn-in steps), VI-I, VI-II (one draw per step) and VI-II Hessian-free (20
draws; not in the paper's figure), from ``N(0, I)`` (VI) or 0 (LMC).

Target scale: the paper gives the condition number of ``Sigma*`` but not its scale. Here
``Sigma*`` has eigenvalues log-spaced in ``[1, kappa]`` (random eigenvectors,
``m* ~ N(0, I)``), so the precision ``P`` has them in ``[1/kappa, 1]`` and
``lmax(P) = 1`` at every ``kappa`` (:func:`~vits_ref.experiments.vits.target.gaussian_target`):
the paper's absolute steps are all stable (the square-root recursion needs
``h lmax(P) < 1``) and comparable across ``kappa``; the slowest direction contracts like
``1 - 2h/kappa`` per step.

Counts and censoring: a run stops the first time its KL is ``<= eps`` (a first-passage
time: one-draw VI keeps a Monte Carlo noise floor that grows with ``h``, and a noisy trace
can dip below ``eps`` early) or at the cap, where it is censored: it counts as ``cap``
steps and ``reached`` is False. ``median_censored`` says when the median involves a
censored run (at least half the runs censored): the median is then only a lower bound.
At ``h = 0.001`` averaged LMC never reaches ``eps`` within 50 000 steps, at ``h = 0.01``
about 2% of its runs do (its chain decorrelates in about ``kappa / h`` steps): its medians
there are censored.

Cost (this 2-core machine, numba 0.68, d = 10): about 2-3 us per traced step for LMC and
VI-II, 4 us for VI-I and 9 us for the Hessian-free variant, the KL after each step
included. The paper-size default (100 seeds x 8 kappas x 3 steps x 4 methods, cap
50 000) is dominated by the censored LMC runs (2 x 8 x 100 x 50 000 steps): 10 seeds take
22 s on the two idle cores, so the default takes about 3.5 minutes (measured: 315
CPU-seconds, 8 minutes of wall time while other jobs shared the machine). The seeds run in
parallel over ``numba.get_num_threads()`` threads (the compiled traces release the GIL);
the result does not depend on the number of threads.

Execution: each ``kappa``'s seeds run in resumable chunks of seeds (every step size and
method of those seeds in one chunk: :func:`steps_block`, through
:func:`vits_ref.experiments._chunks.map_runs`; ``out/chunks/kappa<i>-<kappa>`` and
``out/manifest.json``): rerunning the same command reuses the finished chunks, and the
results are bit-identical whatever the chunking or the executor (``--jobs``, Dask).
"""

import csv
import functools
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ... import _seeding
from ...drivers.cpu import trace_one
from .. import _chunks
from .._chunks import check_progress
from .._common import environment_info, write_json
from .._outputs import text_output
from ..plotting import drawn, paper_title
from .target import (
    METHODS,
    SCALE_COVARIANCE,
    SCALE_DESCRIPTIONS,
    SCALE_PRECISION,
    gaussian_target,
    run_seeds,
)

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"steps.png": paper_title("vits", "appendix F: steps to a KL threshold against "
                                          "the condition number")}

NAME = "vits-figF"
DESCRIPTION = "VITS paper appendix F: steps to KL <= eps vs condition number (LMC vs VI)"
DEFAULTS = {"runs": 100, "rounds": 50000, "seed": 0}
DIM = 10
KAPPAS = (2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5, 20.0)
STEP_SIZES = (0.001, 0.01, 0.1)
EPS = 0.1
BURN_IN = 1000
#: the paper's size
PAPER_RUNS, PAPER_CAP = 100, 50000


def run(runs=100, rounds=50000, seed=0, out="results/vits-figF", progress=None,
        kappas=KAPPAS, step_sizes=STEP_SIZES, methods=None, eps=EPS, scale=None,
        step_factors=None):
    """Run the study; writes ``steps.csv``, ``summary.json``, ``steps.png``.

    Parameters
    ----------
    runs : int, default 100
        Seeds; each draws a new target (per ``kappa``) and new noise. Every method and
        step size meets the same targets and noise seeds (paired comparisons).
    rounds : int, default 50000
        The step cap.
    seed : int, default 0
    out : str
        Output folder.
    progress : callable, optional
        Called with a progress message.
    kappas : sequence of float
        Condition numbers of ``Sigma*``.
    step_sizes : sequence of float, default (0.001, 0.01, 0.1)
        Absolute step sizes ``h``.
    methods : sequence of str, optional
        Labels of :data:`~vits_ref.experiments.vits.target.METHODS` (default all).
    eps : float, default 0.1
        The KL threshold of eq. (52).
    scale : {"covariance", "precision"}, optional
        The targets' scale (:func:`~vits_ref.experiments.vits.target.gaussian_target`);
        default ``"covariance"`` (``lmax(P) = 1``), or ``"precision"`` with
        ``step_factors``.
    step_factors : sequence of float, optional
        The study's earlier convention (notebook 02 runs it): steps relative to the target,
        ``h = c / lmax(P)``, instead of ``step_sizes``, on ``"precision"``-scaled targets
        unless ``scale`` says otherwise. Entries then carry ``step_factor``.

    Returns
    -------
    dict
        The JSON summary: one entry per (method, step, kappa) with the median and
        quartiles of the steps, ``fraction_reached``, ``median_censored`` and the per-seed
        ``steps`` and ``reached`` (what :func:`claims` needs).

    Runs in resumable chunks of seeds (``out/chunks``; see the module docstring).
    """
    check_progress(progress)
    os.makedirs(out, exist_ok=True)
    relative = step_factors is not None
    steps_key = "step_factor" if relative else "step_size"
    step_values = tuple(step_factors if relative else step_sizes)
    if scale is None:
        scale = SCALE_PRECISION if relative else SCALE_COVARIANCE
    methods = [m for m in METHODS if methods is None or m in methods]
    rows, summary = [], []
    t0 = time.perf_counter()
    for ki, kappa in enumerate(kappas):
        if progress:
            progress(f"kappa={kappa:g}: {len(step_values)} {steps_key}s x {len(methods)} "
                     f"methods ({runs} seeds)")
        done = _chunks.map_runs(
            functools.partial(steps_block, seed, ki, kappa, scale, relative, step_values,
                              methods, rounds, eps, runs), runs, out, NAME,
            f"kappa{ki}-{_chunks.slug(f'{kappa:g}')}",
            {"seed": seed, "kappa_index": ki, "kappa": kappa, "scale": scale,
             "relative": relative, "step_values": list(step_values), "methods": methods,
             "rounds": rounds, "eps": eps, "runs": runs, "burn_in": BURN_IN}, progress,
            work_per_run=len(step_values) * len(methods) * rounds)
        for vi, value in enumerate(step_values):
            for mi, label in enumerate(methods):
                reached = done["reached"][:, vi, mi]
                steps = done["steps"][:, vi, mi]
                rows.extend((label, value, kappa, r, int(steps[r]), bool(reached[r]))
                            for r in range(runs))
                summary.append({"method": label, steps_key: value, "kappa": kappa,
                                "median_steps": float(np.median(steps)),
                                "q25": float(np.quantile(steps, 0.25)),
                                "q75": float(np.quantile(steps, 0.75)),
                                "fraction_reached": float(reached.mean()),
                                "median_censored": bool(2 * (~reached).sum() >= runs),
                                "steps": steps.tolist(), "reached": reached.tolist()})
    with text_output(os.path.join(out, "steps.csv")) as fh:
        w = csv.writer(fh)
        w.writerow(["method", steps_key, "kappa", "seed_index", "steps", "reached"])
        w.writerows(rows)
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "cap": rounds,
              "seed": seed, "dim": DIM, "eps": eps, "burn_in": BURN_IN,
              "target": SCALE_DESCRIPTIONS[scale], "target_scale": scale,
              "step_key": steps_key, "step_values": list(step_values), "results": summary,
              "total_wall_time_s": time.perf_counter() - t0, "environment": environment_info()}
    png = os.path.join(out, "steps.png")
    # the figure first: the summary lists it only if it was written (not without matplotlib)
    result["files"] = [os.path.join(out, f) for f in ("steps.csv", "summary.json")] + drawn(
        {png: lambda: _plot(result, png)}, progress)
    write_json(os.path.join(out, "summary.json"), result)
    return result


def steps_block(seed, ki, kappa, scale, relative, step_values, methods, rounds, eps, runs,
                lo, hi):
    """Seeds ``lo, ..., hi - 1`` of condition number ``kappas[ki] = kappa``: for every step
    value and method, the steps to ``KL <= eps`` (the cap ``rounds`` if not reached) and
    whether it was reached; a chunk of :func:`vits_ref.experiments._chunks.map_runs`.

    Seed ``r`` draws its target from child ``r`` of ``SeedSequence(seed)``'s spawn key
    ``(ki,)`` and its noise from :func:`~vits_ref.experiments.vits.target.run_seeds` of
    spawn key ``(ki, 1)`` (entry ``r``), so a block equals the same seeds of a single call.
    The seeds run in parallel over ``numba.get_num_threads()`` threads.

    Returns ``{"steps", "reached"}`` of shape ``(hi - lo, len(step_values),
    len(methods))``.
    """
    root = np.random.SeedSequence(seed)
    kroot = np.random.SeedSequence(entropy=root.entropy, spawn_key=(ki,))
    targets = [gaussian_target(DIM, kappa, np.random.default_rng(s), scale=scale)
               for s in _seeding.run_seeds(kroot, lo, hi - lo)]
    lmax = [np.linalg.eigvalsh(P)[-1] for P, _, _ in targets]
    noise_seeds = run_seeds(np.random.SeedSequence(entropy=root.entropy, spawn_key=(ki, 1)),
                            runs)[lo:hi]
    shape = (hi - lo, len(step_values), len(methods))
    steps, reached = np.empty(shape, dtype=np.int64), np.empty(shape, dtype=bool)
    with ThreadPoolExecutor(max_workers=max(1, numba.get_num_threads())) as pool:
        for vi, value in enumerate(step_values):
            hs = [value / lm if relative else value for lm in lmax]
            for mi, label in enumerate(methods):
                code, n_mc = METHODS[label]

                def one(r, code=code, n_mc=n_mc, hs=hs):
                    P, Pm, _ = targets[r]
                    rec = np.full(rounds, np.inf)
                    n = trace_one(code, True, P, Pm, hs[r], n_mc, rounds, BURN_IN, eps,
                                  noise_seeds[r], rec)
                    return n, n > 0 and rec[n - 1] <= eps

                done = list(pool.map(one, range(hi - lo)))
                ok = np.array([x for _, x in done], dtype=bool)
                reached[:, vi, mi] = ok
                steps[:, vi, mi] = np.where(ok, [n for n, _ in done], rounds)
    return {"steps": steps, "reached": reached}


def _step_key(result):
    return result.get("step_key", "step_size")


def _step_text(result, value):
    return f"{value:g} / lmax" if _step_key(result) == "step_factor" else f"{value:g}"


def _plot(result, path):
    from ..plotting import band, figure, outside_legend, quartile_note, save

    key = _step_key(result)
    values = sorted({e[key] for e in result["results"]})
    fig, axes = figure(len(values), width=5.0)
    for ax, value in zip(axes, values, strict=True):
        for label in dict.fromkeys(e["method"] for e in result["results"]):
            es = [e for e in result["results"] if e["method"] == label and e[key] == value]
            band(ax, [e["kappa"] for e in es], [e["median_steps"] for e in es],
                 [e["q25"] for e in es], [e["q75"] for e in es], label)
        ax.axhline(result["cap"], color="red", ls="--", lw=1,
                   label="cap (a seed not reaching eps counts as the cap)")
        ax.set_yscale("log")
        ax.set_title(f"step size {_step_text(result, value)}", fontsize=10)
        ax.set_xlabel("condition number of Sigma*")
        ax.set_ylabel(f"steps until KL <= {result['eps']:g} (median, quartiles)")
        ax.grid(alpha=0.3)
    # one legend right of the last panel; the bands are the seeds' quartiles, not a
    # standard error
    outside_legend(axes, band_note=quartile_note("seeds"))
    fig.suptitle(f"{TITLES['steps.png']}\nd = {result['dim']}, eps = {result['eps']:g}, "
                 f"{result['runs']} seeds; {result.get('target', '')}", fontsize=9)
    save(fig, path)
    return fig


def table(result):
    """Median steps per method and condition number, one block per step size.

    A ``>`` marks a median that involves runs censored at the cap (a lower bound).
    """
    key = _step_key(result)
    kappas = sorted({e["kappa"] for e in result["results"]})
    lines = [f"median steps to KL <= {result['eps']:g} (d = {result['dim']}, "
             f"{result['runs']} seeds, cap {result['cap']}; {result.get('target', '')})"]
    for value in sorted({e[key] for e in result["results"]}):
        lines.append(f"step size {_step_text(result, value)}")
        lines.append(f"  {'method':22s}" + "".join(f"{k:>9g}" for k in kappas))
        for label in dict.fromkeys(e["method"] for e in result["results"]):
            cells = {e["kappa"]: e for e in result["results"]
                     if e["method"] == label and e[key] == value}
            lines.append(f"  {label:22s}" + "".join(f"{_median_text(cells[k]):>9}"
                                                    for k in kappas))
    return "\n".join(lines)


def _median_text(entry):
    return ("> " if entry["median_censored"] else "") + f"{entry['median_steps']:.0f}"
