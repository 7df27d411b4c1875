"""Appendix I of the VITS paper: KL to a Gaussian target against computing time.

Target as in :mod:`vits_ref.experiments.vits.figF` (``d = 10``, condition number 10).
LMC (running moments after 1000 burn-in steps), VI-I, VI-II and VI-II Hessian-free (20
draws) run for ``--rounds`` steps (10 000 in the paper) with ``h = 0.1 / lmax``; the KL
is recorded after every step and its median and quartiles (order statistics, no
interpolation) over ``--runs`` seeds (1000 in the paper) are plotted against time.

Time axis: the KL trace is computed step by step, but the KL computations are not part
of the methods, so each method's cost per step is timed separately (its compiled steps
alone on pre-drawn noise, one thread, median of repeats) and step ``k`` is placed at
``k x cost``. VI-I pays a d x d inverse per step; LMC's cost includes nothing for the
averaging of its moments (d^2 per step, small against its d^2 gradient).
"""

import csv
import os
import time

import numba
import numpy as np

from ...drivers import cpu
from ...drivers.cpu import trace_many
from ...kernels.linear import POTENTIAL as LINEAR
from ...kernels.target import METHOD_LMC
from .._common import environment_info, write_json
from .target import METHODS, gaussian_target, run_seeds

NAME = "vits-figI"
DESCRIPTION = "VITS paper appendix I: KL to a Gaussian target against wall-clock time"
DEFAULTS = {"runs": 20, "rounds": 10000, "seed": 0}
DIM, KAPPA, STEP_FACTOR, BURN_IN = 10, 10.0, 0.1, 1000


def cost_per_step(code, n_mc, P, Pm, h, n=2000, repeats=5):
    """Seconds per step of a method's compiled steps (no KL), single-threaded."""
    d = P.shape[0]
    eps = np.random.default_rng(0).standard_normal((n, n_mc, d))
    vits_steps, langevin_steps = cpu.vits_steps(LINEAR), cpu.langevin_steps(LINEAR)
    scr, g, H = cpu.vits_scratch(d, n_mc), np.empty(d), np.empty((1, 1))
    times = []
    for _ in range(repeats + 1):  # the first call compiles
        mu, B, C = np.zeros(d), np.eye(d), np.eye(d)
        t = time.perf_counter()
        if code == METHOD_LMC:
            langevin_steps(mu, (P, Pm), eps[:, 0, :], h, g, H, 0)
        else:
            vits_steps(code, True, mu, B, C, (P, Pm), eps, h, h, scr, 0)
        times.append(time.perf_counter() - t)
    return float(np.median(times[1:])) / n


def run(runs=20, rounds=10000, seed=0, out="results/vits-figI", progress=None, methods=None):
    """Run the study; writes ``kl_vs_time.csv``, ``summary.json``, ``kl_vs_time.png``."""
    os.makedirs(out, exist_ok=True)
    root = np.random.SeedSequence(seed)
    P, Pm, _ = gaussian_target(DIM, KAPPA, np.random.default_rng(root.spawn(1)[0]))
    h = STEP_FACTOR / np.linalg.eigvalsh(P)[-1]
    seeds = run_seeds(np.random.SeedSequence(entropy=root.entropy, spawn_key=(1,)), runs)
    t0 = time.perf_counter()
    threads = numba.get_num_threads()
    curves, summary = {}, []
    for label in (m for m in METHODS if methods is None or m in methods):
        code, n_mc = METHODS[label]
        if progress:
            progress(f"{label}: {runs} seeds x {rounds} steps")
        rec = np.full((runs, rounds), np.inf)
        counts = np.zeros(runs, dtype=np.int64)
        trace_many(code, True, P, Pm, h, n_mc, rounds, BURN_IN, 0.0, seeds, rec, counts)
        numba.set_num_threads(1)
        try:
            cost = cost_per_step(code, n_mc, P, Pm, h)
        finally:
            numba.set_num_threads(threads)
        # "lower": no interpolation between an inf (LMC burn-in) and a finite KL
        q = np.quantile(rec, [0.25, 0.5, 0.75], axis=0, method="lower")
        curves[label] = (cost * np.arange(1, rounds + 1), q)
        finite = np.isfinite(q[1])
        summary.append({"method": label, "us_per_step": 1e6 * cost,
                        "median_kl_final": float(q[1, -1]),
                        "diverged_runs": int((counts < rounds).sum()),
                        "time_to_kl_0.1_s": _first_time(curves[label][0], q[1], 0.1),
                        "time_to_kl_0.01_s": _first_time(curves[label][0], q[1], 0.01),
                        "steps_recorded_finite": int(finite.sum())})
    path_csv = os.path.join(out, "kl_vs_time.csv")
    with open(path_csv, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "step", "time_s", "kl_q25", "kl_median", "kl_q75"])
        stride = max(1, rounds // 1000)
        for label, (tt, q) in curves.items():
            for k in range(stride - 1, rounds, stride):
                w.writerow([label, k + 1, f"{tt[k]:.6g}", f"{q[0, k]:.6g}", f"{q[1, k]:.6g}",
                            f"{q[2, k]:.6g}"])
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "steps": rounds,
              "seed": seed, "dim": DIM, "kappa": KAPPA, "step_size": h, "burn_in": BURN_IN,
              "results": summary, "total_wall_time_s": time.perf_counter() - t0,
              "environment": environment_info(),
              "files": [path_csv, os.path.join(out, "summary.json"),
                        os.path.join(out, "kl_vs_time.png")]}
    write_json(os.path.join(out, "summary.json"), result)
    try:
        _plot(curves, os.path.join(out, "kl_vs_time.png"))
    except ImportError as exc:
        if progress:
            progress(f"no plot written: {exc}")
    return result


def _first_time(times, kl, level):
    hit = np.flatnonzero(kl <= level)
    return float(times[hit[0]]) if hit.size else None


def _plot(curves, path):
    from ...plotting import band, figure, save

    fig, (ax,) = figure(1, width=6.0)
    for label, (tt, q) in curves.items():
        ok = np.isfinite(q[1])
        band(ax, tt[ok], q[1][ok], q[0][ok], q[2][ok], label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("computing time (s)")
    ax.set_ylabel("KL(q || p*)")
    ax.set_title(f"Gaussian target, d={DIM}, condition number {KAPPA:g}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path)


def table(result):
    """Cost per step and time to reach KL 0.1 and 0.01 (median over seeds)."""
    lines = [f"{'method':22s} {'us/step':>8} {'t(KL<=0.1)':>11} {'t(KL<=0.01)':>12} "
             f"{'KL final':>9}"]

    def fmt(x):
        return f"{x:.2e}" if x is not None else "never"

    for e in result["results"]:
        lines.append(f"{e['method']:22s} {e['us_per_step']:8.2f} "
                     f"{fmt(e['time_to_kl_0.1_s']):>11} {fmt(e['time_to_kl_0.01_s']):>12} "
                     f"{e['median_kl_final']:9.3g}")
    return "\n".join(lines)
