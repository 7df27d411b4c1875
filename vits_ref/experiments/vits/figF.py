"""Appendix F of the VITS paper: steps until ``KL(q_k || p*) <= eps`` against conditioning.

Target ``p* = N(m*, Sigma*)`` in dimension ``d = 10`` whose precision has eigenvalues
log-spaced in ``[1, kappa]`` (condition number ``kappa`` in 2.5..20), random eigenvectors
and ``m* ~ N(0, I)``. Methods: LMC (mean and covariance by averaging the chain after 1000
burn-in steps), VI-I, VI-II (one draw per step) and VI-II Hessian-free (20 draws), from
``N(0, I)`` (VI) or 0 (LMC). Three step sizes. A run stops when the KL reaches ``eps``
or at the cap (50 000 steps in the paper; ``--rounds``).

Step sizes: the paper quotes 0.001-0.1 without the target's scale; here
``h = c / lmax(P)`` with ``c`` in {0.05, 0.1, 0.2}, so a step is comparable across
``kappa`` and all methods are stable (the square-root recursion needs ``h lmax < 1``).
With one draw per step the VI mean keeps a Monte Carlo noise floor growing with ``h``
(notebook 01 derives it); ``eps = 0.1`` lies above it for VI-I/II at these ``c``. The
Hessian-free estimator adds noise to the covariance too: at ``c = 0.2`` and small
``kappa`` (the largest absolute step) its floor sits near 0.2 and most runs hit the cap;
``summary.json`` reports the fraction of runs that reached ``eps``. The count is a
first-passage time: a noisy method can dip below ``eps`` by chance before settling at a
higher KL (notebook 02 shows it).
"""

import csv
import os
import time

import numpy as np

from ...drivers.cpu import trace_many
from .._common import environment_info, write_json
from .target import METHODS, gaussian_target, run_seeds

NAME = "vits-figF"
DESCRIPTION = "VITS paper appendix F: steps to KL <= eps vs condition number (LMC vs VI)"
DEFAULTS = {"runs": 20, "rounds": 50000, "seed": 0}
DIM = 10
KAPPAS = (2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5, 20.0)
STEP_FACTORS = (0.05, 0.1, 0.2)
EPS = 0.1
BURN_IN = 1000


def run(runs=20, rounds=50000, seed=0, out="results/vits-figF", progress=None,
        kappas=KAPPAS, step_factors=STEP_FACTORS, methods=None, eps=EPS):
    """Run the study; writes ``steps.csv``, ``summary.json``, ``steps.png``.

    ``runs`` seeds (a new target and new noise each), ``rounds`` is the step cap.
    Returns the JSON summary.
    """
    os.makedirs(out, exist_ok=True)
    root = np.random.SeedSequence(seed)
    methods = [m for m in METHODS if methods is None or m in methods]
    rows, summary = [], []
    t0 = time.perf_counter()
    for ki, kappa in enumerate(kappas):
        kroot = np.random.SeedSequence(entropy=root.entropy, spawn_key=(ki,))
        targets = [gaussian_target(DIM, kappa, np.random.default_rng(s))
                   for s in kroot.spawn(runs)]
        noise_seeds = run_seeds(np.random.SeedSequence(entropy=root.entropy,
                                                       spawn_key=(ki, 1)), runs)
        for c in step_factors:
            for label in methods:
                code, n_mc = METHODS[label]
                if progress:
                    progress(f"kappa={kappa:g} c={c:g} {label} ({runs} seeds)")
                steps = np.empty(runs, dtype=np.int64)
                reached = np.empty(runs, dtype=bool)
                for r, (P, Pm, _) in enumerate(targets):
                    h = c / np.linalg.eigvalsh(P)[-1]
                    rec = np.full((1, rounds), np.inf)
                    cnt = np.zeros(1, dtype=np.int64)
                    trace_many(code, True, P, Pm, h, n_mc, rounds, BURN_IN, eps,
                               noise_seeds[r:r + 1], rec, cnt)
                    n = int(cnt[0])
                    reached[r] = n > 0 and rec[0, n - 1] <= eps
                    steps[r] = n if reached[r] else rounds
                    rows.append((label, c, kappa, r, steps[r], bool(reached[r])))
                summary.append({"method": label, "step_factor": c, "kappa": kappa,
                                "median_steps": float(np.median(steps)),
                                "q25": float(np.quantile(steps, 0.25)),
                                "q75": float(np.quantile(steps, 0.75)),
                                "fraction_reached": float(reached.mean())})
    with open(os.path.join(out, "steps.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "step_factor", "kappa", "seed_index", "steps", "reached"])
        w.writerows(rows)
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "cap": rounds,
              "seed": seed, "dim": DIM, "eps": eps, "burn_in": BURN_IN, "results": summary,
              "total_wall_time_s": time.perf_counter() - t0, "environment": environment_info()}
    result["files"] = [os.path.join(out, f) for f in ("steps.csv", "summary.json", "steps.png")]
    write_json(os.path.join(out, "summary.json"), result)
    try:
        _plot(result, os.path.join(out, "steps.png"))
    except ImportError as exc:
        if progress:
            progress(f"no plot written: {exc}")
    return result


def _plot(result, path):
    from ...plotting import band, figure, save

    factors = sorted({e["step_factor"] for e in result["results"]})
    fig, axes = figure(len(factors), width=5.0)
    for ax, c in zip(axes, factors, strict=True):
        for label in dict.fromkeys(e["method"] for e in result["results"]):
            es = [e for e in result["results"] if e["method"] == label and e["step_factor"] == c]
            band(ax, [e["kappa"] for e in es], [e["median_steps"] for e in es],
                 [e["q25"] for e in es], [e["q75"] for e in es], label)
        ax.axhline(result["cap"], color="red", ls="--", lw=1, label="cap")
        ax.set_yscale("log")
        ax.set_title(f"step size {c:g} / lmax")
        ax.set_xlabel("condition number")
        ax.set_ylabel(f"steps until KL <= {result['eps']:g}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path)


def table(result):
    """Median steps per method and condition number, for the largest step factor."""
    c = max(e["step_factor"] for e in result["results"])
    kappas = sorted({e["kappa"] for e in result["results"]})
    lines = [f"median steps to KL <= {result['eps']:g} (step {c:g}/lmax)",
             f"{'method':22s}" + "".join(f"{k:>9g}" for k in kappas)]
    for label in dict.fromkeys(e["method"] for e in result["results"]):
        med = {e["kappa"]: e["median_steps"] for e in result["results"]
               if e["method"] == label and e["step_factor"] == c}
        lines.append(f"{label:22s}" + "".join(f"{med[k]:9.0f}" for k in kappas))
    return "\n".join(lines)
