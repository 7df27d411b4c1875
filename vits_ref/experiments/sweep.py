"""Hyperparameter sweeps: ``python -m vits_ref sweep NAME``.

A sweep scores every point of a grid by the mean final cumulative regret over runs, on
the chunked, resumable machinery of the experiments (:mod:`vits_ref.experiments._chunks`:
same executors, same resume, same refusal to mix options). Its first user is the VITS
paper's appendix E grid (:mod:`vits_ref.experiments.vits.grid`) on the environments of
Figure 1: ``vits-grid``. The runs are those of ``vits-fig1 --tune``
(:func:`vits_ref.experiments._tuning.grid_search`: the seed plus
:data:`~vits_ref.experiments._tuning.TUNE_SEED_OFFSET`, a new instance per run), so a
sweep with the same seed, runs and rounds gives the scores that ``--tune`` chose from.

Each sweep writes ``sweep.csv`` (one line per panel, method and point: the point's
hyperparameters, the mean final regret and its standard error, or the divergence
message) and ``summary.json`` (every score, the best point per panel and method).
"""

import csv
import json
import os
import time

from ._common import environment_info, write_json
from ._outputs import text_output
from ._tuning import TUNE_RUNS, TUNE_SEED_OFFSET, grid_search


def vits_grid(runs=TUNE_RUNS, rounds=1000, seed=0, out="results/sweep-vits-grid",
              progress=None, methods=None):
    """The appendix E grid of every tunable method of ``vits-fig1``, both zetas.

    Parameters
    ----------
    runs, rounds, seed : int
        Runs per point (default 20, the tuning's), horizon, and the seed (the runs use
        ``seed + 10 000``, as ``vits-fig1 --tune``).
    out : str
        Output folder.
    progress : callable or None
    methods : sequence of str, optional
        Policy names of :data:`vits_ref.experiments.vits.fig1.METHODS` to sweep (default:
        all with a grid: 12 points for LinTS and LinUCB, 36 for the others).

    Returns
    -------
    dict
        The summary written to ``summary.json``.
    """
    from ..bandit.simulate import make_policy
    from ..envs import pool
    from .vits import fig1

    chosen = [m for m in fig1.METHODS if m[3] is not None
              and (methods is None or m[1] in methods)]
    if methods is not None:
        known = {m[1] for m in fig1.METHODS if m[3] is not None}
        unknown = sorted(set(methods) - known)
        if unknown:
            raise ValueError(f"methods: unknown {unknown}; sweepable: {sorted(known)}")
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    scores, best = [], []
    for zeta in fig1.ZETAS:
        env = pool(dim=fig1.DIM, n_arms=fig1.N_ARMS, zeta=zeta, reward="linear", seed=seed)
        panel = f"zeta = {zeta:g}"
        for label, name, overrides, _, _ in chosen:
            ranked, sc = grid_search(
                lambda n=name, o=overrides, **p: make_policy(n, fig1.DIM, **{**o, **p}),
                fig1.tuning_grid(name), env, rounds, runs, seed, progress=progress,
                label=f"{panel}: {label}", out=out)
            scores += [{"panel": panel, "method": label, "policy": name, **x} for x in sc]
            best.append({"panel": panel, "method": label,
                         "best_point": ranked[0] if ranked else None,
                         "diverged_points": sum("diverged" in x for x in sc),
                         "points": len(sc)})
    files = [os.path.join(out, f) for f in ("sweep.csv", "summary.json")]
    with text_output(files[0]) as fh:
        w = csv.writer(fh)
        w.writerow(["panel", "method", "point", "final_regret_mean", "final_regret_stderr",
                    "diverged"])
        for x in scores:
            se = x.get("final_regret_stderr")
            w.writerow([x["panel"], x["method"], json.dumps(x["point"], sort_keys=True),
                        f"{x['final_regret_mean']:.6g}" if "final_regret_mean" in x else "",
                        "" if se is None else f"{se:.6g}", x.get("diverged", "")])
    result = {"sweep": "vits-grid", "runs": runs, "rounds": rounds, "seed": seed,
              "run_seed": seed + TUNE_SEED_OFFSET, "scores": scores, "best": best,
              "files": files, "total_wall_time_s": time.perf_counter() - t0,
              "environment": environment_info()}
    write_json(files[1], result)
    return result


def table(result):
    """The best point per panel and method, with how many points diverged."""
    lines = [f"{'panel':12s} {'method':40s} {'best point':50s} diverged"]
    for b in result["best"]:
        point = json.dumps(b["best_point"], sort_keys=True) if b["best_point"] else "none"
        lines.append(f"{b['panel']:12s} {b['method']:40s} {point:50s} "
                     f"{b['diverged_points']}/{b['points']}")
    return "\n".join(lines)


#: The sweeps of ``python -m vits_ref sweep``: name -> (function, description).
SWEEPS = {"vits-grid": (vits_grid, "VITS paper appendix E grid on the Figure 1 "
                                   "environments (every tunable method, both zetas)")}
