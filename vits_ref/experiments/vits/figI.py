"""Appendix I of the VITS paper: KL to a Gaussian target against computing time.

Setting: one target ``p* = N(m*, Sigma*)`` in ``d = 10`` with condition number 10, on the
scale of :mod:`vits_ref.experiments.vits.figF` (``Sigma*`` eigenvalues log-spaced in
``[1, 10]``, ``lmax(P) = 1``), step ``h = 0.1`` (absolute; equal to ``0.1 / lmax(P)``).
LMC (running moments after 1000 burn-in steps), VI-I, VI-II and VI-II Hessian-free (20
draws) run for ``--rounds`` steps (10 000 in the paper) on ``--runs`` seeds (1000, the
paper's number, by default); the KL is recorded after every step (no early stop, so that
every seed has a value at every step) and its median and quartiles over the seeds (order
statistics, no interpolation) are the curves plotted against time. Appendix I mentions
no burn-in for LMC; the 1000 steps of appendix F are kept. Without them LMC's median curve
still reaches KL 1 / 0.2 only after about 1300 / 6600 steps (0.2 / 1.05 ms, 200 seeds),
against 0.02 / 0.06 ms for VI-II, so the claims' verdicts do not depend on it.

Time axis: the KL computations are not part of the methods, so each method's cost per
step is timed separately (its compiled steps alone on pre-drawn noise, one thread, minimum
of repeats) and step ``k`` is placed at ``k x cost`` ("the total time required to run all
updating steps"). VI-I pays a d x d inverse per step; LMC's cost includes nothing for the
averaging of its moments (d^2 per step, small against its d^2 gradient).

The timing claims read ``us_per_step_repeats``: the costs per step timed again, 15 times,
the methods' calls interleaved (:func:`step_cost_repeats`), so that their ratio has an
interval; ``us_per_step`` still places the curves.

Summary: per method the cost per step, the median KL with its quartiles at three fixed
times, and the quartile curves at about 300 log-spaced steps (what :func:`claims` reads).
The fixed times are 1%, 10% and 100% of ``T = rounds x`` the smallest cost per step, the
fastest method's whole budget: the longest time at which every method has a recorded
value, so no curve is extrapolated or read after its method stopped. A method that has
done no step by a time, or whose KL is still undefined (LMC's burn-in), shows none.
``kl_vs_time.csv`` and ``summary.json`` write such an undefined KL alike: an empty CSV field,
a JSON null (:data:`UNDEFINED_KL`, also the summary's ``kl_nulls``), never ``inf``.

Cost (this 2-core machine, numba 0.68, d = 10): 0.16 (LMC), 2.4 (VI-I), 1.1 (VI-II) and
2.4 (Hessian-free) us per step without the KL. With the KL traced after every step the
paper-size default (1000 seeds x 10 000 steps x 4 methods) measured 180 CPU-seconds (4
minutes of wall time on the machine shared with other jobs, 0.74 of a core on average),
so about 1.5 minutes on two idle cores, well under the 10 minutes that would have called
for fewer seeds: the default is the paper's 1000. Peak memory 330 MB: one method's KL
records (80 MB) and their sort for the quartiles at a time.

Execution: each method's seeds run in resumable chunks of seeds
(:func:`vits_ref.experiments._chunks.map_runs`, ``out/chunks/kl-<method>`` and
``out/manifest.json``; :func:`trace_block`), each chunk storing its KL records (8 bytes
per seed and step: 80 MB per method at the paper size): rerunning the same command reuses
the finished chunks, and the KL records are bit-identical whatever the chunking or the
executor (``--jobs``, Dask). The costs per step are measured again on every call.
"""

import csv
import functools
import os
import time

import numpy as np

from ..._threads import numba_threads
from ...drivers import cpu
from ...drivers.cpu import trace_many
from ...kernels.linear import POTENTIAL as LINEAR
from ...kernels.target import METHOD_LMC
from .. import _chunks, plotting
from .._chunks import check_progress
from .._common import environment_info, write_json
from .._outputs import text_output
from ..claims.measures import first_step_at_or_below
from ..plotting import paper_title, plotted
from .target import METHODS, SCALE_COVARIANCE, SCALE_DESCRIPTIONS, gaussian_target, run_seeds

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"kl_vs_time.png": paper_title("vits", "appendix I: KL to a Gaussian target against time")}

NAME = "vits-figI"
DESCRIPTION = "VITS paper appendix I: KL to a Gaussian target against wall-clock time"
DEFAULTS = {"runs": 1000, "rounds": 10000, "seed": 0}
DIM, KAPPA, STEP_SIZE, BURN_IN = 10, 10.0, 0.1, 1000
#: the summary's fixed times, as fractions of the fastest method's budget
TIME_FRACTIONS = (0.01, 0.1, 1.0)
#: KL levels of the claims: above the one-draw VI noise floor (median KL about 0.1 at
#: h = 0.1), where a first crossing measures convergence and not a lucky dip
KL_LEVELS = (1.0, 0.5, 0.2)
QUARTILES = ("q25", "median", "q75")
PAPER_RUNS, PAPER_STEPS = 1000, 10000
HF = "VI-II HF (20 draws)"


def _steps_call(code, n_mc, P, Pm, h, n):
    """A function that runs ``n`` compiled steps of a method (no KL) from a fresh start, on
    pre-drawn noise: what :func:`cost_per_step` and :func:`step_cost_repeats` time."""
    d = P.shape[0]
    eps = np.random.default_rng(0).standard_normal((n, n_mc, d))
    vits_steps, langevin_steps = cpu.vits_steps(LINEAR), cpu.langevin_steps(LINEAR)
    scr, g, H = cpu.vits_scratch(d, n_mc), np.empty(d), np.empty((1, 1))

    def call():
        mu, B, C = np.zeros(d), np.eye(d), np.eye(d)
        if code == METHOD_LMC:
            langevin_steps(mu, (P, Pm), eps[:, 0, :], h, g, H, 0)
        else:
            vits_steps(code, True, mu, B, C, (P, Pm), eps, h, h, scr, 0)

    return call


def cost_per_step(code, n_mc, P, Pm, h, n=2000, repeats=7):
    """Seconds per step of a method's compiled steps (no KL), single-threaded.

    The minimum over ``repeats`` timed calls of ``n`` steps: other processes on the
    machine can only add time, so the minimum is the least disturbed measurement.
    """
    call = _steps_call(code, n_mc, P, Pm, h, n)
    times = []
    for _ in range(repeats + 1):  # the first call compiles
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.min(times[1:])) / n


#: Interleaved repeats of :func:`step_cost_repeats` (the timing claims' spread).
TIMING_REPEATS = 15


def step_cost_repeats(methods, P, Pm, h, n=2000, repeats=TIMING_REPEATS):
    """Seconds per step of each method, ``repeats`` times, the methods' calls interleaved
    (:func:`vits_ref._bench.timing.interleaved_times`: repeat ``r`` of every method back to
    back, so the machine's drift hits all alike and the repeats are paired), after one
    call each that compiles. ``methods``: ``{label: (code, n_mc)}``. Returns ``{label:
    [seconds per step of each repeat]}`` (the summary's ``us_per_step_repeats``, which the
    timing claims read; ``us_per_step``, the least disturbed of :func:`cost_per_step`,
    places the curves on the time axis)."""
    from ..._bench.timing import interleaved_times

    calls = [_steps_call(code, n_mc, P, Pm, h, n) for code, n_mc in methods.values()]
    for call in calls:
        call()
    times = interleaved_times(calls, repeats)
    return {label: [t / n for t in ts] for label, ts in zip(methods, times, strict=True)}


def run(runs=1000, rounds=10000, seed=0, out="results/vits-figI", progress=None, methods=None,
        kappa=KAPPA, step_size=STEP_SIZE, scale=SCALE_COVARIANCE):
    """Run the study; writes ``kl_vs_time.csv``, ``summary.json``, ``kl_vs_time.png``.

    Parameters
    ----------
    runs : int, default 1000
        Seeds (one target, new noise per seed).
    rounds : int, default 10000
        Steps per run.
    seed : int, default 0
    out : str
        Output folder.
    progress : callable, optional
        Called with a progress message.
    methods : sequence of str, optional
        Labels of :data:`~vits_ref.experiments.vits.target.METHODS` (default all).
    kappa : float, default 10
        Condition number of ``Sigma*``.
    step_size : float, default 0.1
        Absolute step ``h``.
    scale : {"covariance", "precision"}, default "covariance"
        The target's scale (:func:`~vits_ref.experiments.vits.target.gaussian_target`).

    Returns
    -------
    dict
        The JSON summary (see the module docstring).

    Runs in resumable chunks of seeds (``out/chunks``; see the module docstring).
    """
    check_progress(progress)
    os.makedirs(out, exist_ok=True)
    root = np.random.SeedSequence(seed)
    P, Pm, _ = gaussian_target(DIM, kappa, np.random.default_rng(root.spawn(1)[0]),
                               scale=scale)
    h = float(step_size)
    seeds = run_seeds(np.random.SeedSequence(entropy=root.entropy, spawn_key=(1,)), runs)
    t0 = time.perf_counter()
    curves, costs, summary = {}, {}, []
    sample = _sample_steps(rounds)
    for label in (m for m in METHODS if methods is None or m in methods):
        code, n_mc = METHODS[label]
        if progress:
            progress(f"{label}: {runs} seeds x {rounds} steps")
        traced = _chunks.map_runs(
            functools.partial(trace_block, code, n_mc, P, Pm, h, rounds, seeds), runs, out,
            NAME, f"kl-{_chunks.slug(label)}",
            {"method": label, "runs": runs, "rounds": rounds, "seed": seed, "kappa": kappa,
             "step_size": h, "scale": scale, "burn_in": BURN_IN}, progress,
            work_per_run=rounds)
        rec, counts = traced["kl"], traced["counts"]
        del traced
        with numba_threads(1):
            cost = cost_per_step(code, n_mc, P, Pm, h)
        # "lower": no interpolation between an inf (LMC burn-in) and a finite KL
        q = np.quantile(rec, [0.25, 0.5, 0.75], axis=0, method="lower")
        diverged = int((counts < rounds).sum())
        del rec  # freed before the next method's: one 8 x runs x rounds bytes array at a time
        curves[label], costs[label] = q, cost
        summary.append({"method": label, "us_per_step": 1e6 * cost,
                        "median_kl_final": _finite(q[1, -1]), "q25_kl_final": _finite(q[0, -1]),
                        "q75_kl_final": _finite(q[2, -1]), "diverged_runs": diverged,
                        "steps_recorded_finite": int(np.isfinite(q[1]).sum()),
                        "curve": {"steps": (sample + 1).tolist(),
                                  **{name: [_finite(v) for v in q[i, sample]]
                                     for i, name in enumerate(QUARTILES)}}})
    with numba_threads(1):
        repeats = step_cost_repeats({label: METHODS[label] for label in costs}, P, Pm, h)
    for e in summary:
        e["us_per_step_repeats"] = [1e6 * t for t in repeats[e["method"]]]
    budget = rounds * min(costs.values())
    times = [f * budget for f in TIME_FRACTIONS]
    for e in summary:
        e["kl_at_times"] = [_at_time(curves[e["method"]], costs[e["method"]], t) for t in times]
    path_csv = os.path.join(out, "kl_vs_time.csv")
    with text_output(path_csv) as fh:
        w = csv.writer(fh)
        w.writerow(["method", "step", "time_s", "kl_q25", "kl_median", "kl_q75"])
        stride = max(1, rounds // 1000)
        for label, q in curves.items():
            for k in range(stride - 1, rounds, stride):
                w.writerow([label, k + 1, f"{costs[label] * (k + 1):.6g}",
                            *(_csv_value(q[i, k]) for i in range(3))])
    png = os.path.join(out, "kl_vs_time.png")
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "steps": rounds,
              "seed": seed, "dim": DIM, "kappa": kappa, "step_size": h,
              "target": SCALE_DESCRIPTIONS[scale], "target_scale": scale, "burn_in": BURN_IN,
              "times_s": times, "time_fractions": list(TIME_FRACTIONS),
              "time_reference": "fractions of the fastest method's budget (steps x its cost "
                                "per step): every method has a value at these times",
              "results": summary, "total_wall_time_s": time.perf_counter() - t0,
              "environment": environment_info(), "kl_nulls": UNDEFINED_KL,
              "files": [path_csv, os.path.join(out, "summary.json")]
              + ([png] if plotting.available() else [])}
    write_json(os.path.join(out, "summary.json"), result)
    plotted(lambda: _plot(curves, costs, result, png), progress)
    return result


#: What an empty field of ``kl_vs_time.csv`` and a null KL in ``summary.json`` mean (the
#: same: neither file holds ``inf``).
UNDEFINED_KL = ("an empty CSV field or a null KL: the quartile is not defined at that "
                "step (LMC's burn-in, before its running moments start, or more than the "
                "quartile's share of seeds diverged)")


def _csv_value(x):
    """A quartile for the CSV: empty where it is not finite (:data:`UNDEFINED_KL`)."""
    return f"{x:.6g}" if np.isfinite(x) else ""


def trace_block(code, n_mc, P, Pm, h, rounds, seeds, lo, hi):
    """The KL after every step of seeds ``lo, ..., hi - 1`` of ``seeds`` (the compiled
    ``prange`` driver :func:`vits_ref.drivers.cpu.trace_many` on those seeds: each seed's
    trace depends on its seed alone, so the blocks equal one call over all seeds); a chunk
    of :func:`vits_ref.experiments._chunks.map_runs`.

    Returns ``{"kl": (hi - lo, rounds), "counts": (hi - lo,), "wall_time_s"}``.
    """
    rec = np.full((hi - lo, rounds), np.inf)
    counts = np.zeros(hi - lo, dtype=np.int64)
    t0 = time.perf_counter()
    trace_many(code, True, P, Pm, h, n_mc, rounds, BURN_IN, 0.0,
               np.ascontiguousarray(seeds[lo:hi]), rec, counts)
    return {"kl": rec, "counts": counts, "wall_time_s": time.perf_counter() - t0}


def _finite(x):
    """A float for the JSON summary, None for inf (burn-in) or nan."""
    x = float(x)
    return x if np.isfinite(x) else None


def _sample_steps(rounds, n=300):
    """0-based step indices kept in the summary: every step up to 100, then log-spaced."""
    dense = np.arange(min(rounds, 100))
    tail = np.geomspace(min(rounds, 100), rounds, n).round().astype(np.int64) - 1
    return np.unique(np.concatenate([dense, tail[tail >= 0]]))


def _at_time(q, cost, t):
    """The quartiles of the KL after the steps a method has done by time ``t``."""
    k = int(np.floor(t / cost * (1 + 1e-12)))  # t is k x cost up to rounding
    k = min(k, q.shape[1])
    row = {"time_s": t, "steps": k}
    for i, name in enumerate(QUARTILES):
        row[name] = _finite(q[i, k - 1]) if k > 0 else None
    return row


def _plot(curves, costs, result, path):
    from ..plotting import band, figure, outside_legend, quartile_note, save

    fig, (ax,) = figure(1, width=6.5)
    for label, q in curves.items():
        tt = costs[label] * np.arange(1, q.shape[1] + 1)
        ok = np.isfinite(q[1])
        band(ax, tt[ok], q[1][ok], q[0][ok], q[2][ok], label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("computing time of the steps (s)")
    ax.set_ylabel("KL(q || p*): median and quartiles")
    fig.suptitle(TITLES["kl_vs_time.png"], fontsize=9)
    ax.set_title(f"d = {result['dim']}, condition number {result['kappa']:g}, step size "
                 f"{result['step_size']:g}, {result['runs']} seeds\n{result['target']}",
                 fontsize=9)
    ax.grid(alpha=0.3)
    # the bands are the seeds' quartiles of the KL, not a standard error
    outside_legend([ax], band_note=quartile_note("seeds"))
    save(fig, path)
    return fig


def table(result):
    """Cost per step and the median KL [quartiles] at the summary's fixed times."""
    width = max(len(e["method"]) for e in result["results"])
    head = f"{'method':{width}s} {'us/step':>8}"
    for t in result["times_s"]:
        head += f" {'KL at ' + format(t * 1e3, '.3g') + ' ms':>26}"
    lines = [f"median KL [q25, q75] over {result['runs']} seeds at fixed computing times "
             f"(fractions {', '.join(f'{f:g}' for f in result['time_fractions'])} of the "
             "fastest method's budget)", head]

    def cell(row):
        if row["median"] is None:
            return "none (no step)" if row["steps"] == 0 else "none (burn-in)"
        lo = "-" if row["q25"] is None else f"{row['q25']:.3g}"
        hi = "-" if row["q75"] is None else f"{row['q75']:.3g}"
        return f"{row['median']:.3g} [{lo}, {hi}] @{row['steps']}"

    for e in result["results"]:
        lines.append(f"{e['method']:{width}s} {e['us_per_step']:8.2f}"
                     + "".join(f" {cell(row):>26}" for row in e["kl_at_times"]))
    lines.append("(@n: steps done by that time)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- claims


def crossing_times(entry, level):
    """``{quartile: seconds}``: when each quartile curve first gets ``<= level``.

    Read from the summary's sampled curve (every step up to 100, then about 3% apart), so
    a time is late by at most one sampling gap; None where the curve never gets there.
    """
    cost = entry["us_per_step"] * 1e-6
    out = {}
    for name in QUARTILES:
        hit = first_step_at_or_below(entry["curve"]["steps"], entry["curve"][name], level)
        out[name] = None if hit is None else hit * cost
    return out
