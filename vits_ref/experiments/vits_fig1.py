"""Figure 1 of the VITS paper: linear pool bandit, zeta = 0.1 (ill-conditioned) and 1.

Setup (section 4.1, appendix H): d = 20, K = 50 arms from a pool of 50 vectors plus
``zeta N(0, I)``, ``theta* ~ N(0, I/d)``, reward noise ``sqrt(1 + zeta^2)``; 50 runs of
1000 rounds, each run on a new instance; mean and standard error of the cumulative regret.

Methods and hyperparameters (appendix E gives only grids; these are this library's
stated defaults, :data:`vits_ref.simulate.POLICY_DEFAULTS`): every method uses
``eta = 1`` (the true noise precision up to ``1 + zeta^2``) and ``lam = 1``. LinTS,
LinUCB (``alpha = 1``), VITS-II (10 steps), VITS-II Hessian-free (10 steps, 20 draws), and
LMC-TS with 10 and 50 steps; VITS and LMC use the decayed step ``h_t = h0/(eta t)``
with ``h0 = 0.01`` (VITS-II), 0.005 for the mean, 0.0025 for the square root and a
symmetrised ``A`` (Hessian-free), 0.02 (LMC-TS). All methods see the same contexts and
noise in each run (common random numbers), so their differences are not sampling noise of
the environment.
"""

import os
import time

from ..envs import pool
from ..simulate import POLICY_DEFAULTS, make_policy, simulate
from ._common import environment_info, write_curves_csv, write_json

NAME = "vits-fig1"
DESCRIPTION = "VITS paper Figure 1: linear pool bandit, zeta 0.1 and 1 (d=20, K=50)"
DEFAULTS = {"runs": 50, "rounds": 1000, "seed": 0}
ZETAS = (0.1, 1.0)
DIM, N_ARMS = 20, 50
#: (label, policy name, overrides)
METHODS = (
    ("LinTS", "lints", {}),
    ("LinUCB", "linucb", {}),
    ("VITS-II", "vits-ii", {}),
    ("VITS-II HF (20 draws)", "vits-hf", {}),
    ("LMC-TS (10 steps)", "lmc", {"n_steps": 10}),
    ("LMC-TS (50 steps)", "lmc", {"n_steps": 50}),
)


def run(runs=50, rounds=1000, seed=0, out="results/vits-fig1", progress=None, methods=None):
    """Run the experiment and write ``curves.csv``, ``summary.json``, ``regret.png``.

    Parameters
    ----------
    runs, rounds, seed : int
    out : str
        Output folder (created).
    progress : callable or None
        ``progress(message)`` for status lines.
    methods : sequence of labels, optional
        Subset of :data:`METHODS` to run.

    Returns
    -------
    dict
        The JSON summary.
    """
    os.makedirs(out, exist_ok=True)
    chosen = [m for m in METHODS if methods is None or m[0] in methods]
    kl_rounds = sorted({r for r in (10, 100, rounds // 2, rounds) if 1 <= r <= rounds})
    rows, summary, panels = [], [], {}
    t_all = time.perf_counter()
    for zeta in ZETAS:
        env = pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="linear", seed=seed)
        panel = f"zeta = {zeta:g}"
        panels[panel] = {}
        for label, name, overrides in chosen:
            policy = make_policy(name, DIM, **overrides)
            if progress:
                progress(f"{panel}: {label} ({runs} runs x {rounds} rounds)")
            res = simulate(policy, env, n_rounds=rounds, n_runs=runs, seed=seed,
                           kl_rounds=kl_rounds, new_instance_per_run=True)
            mean, se = res.mean_and_stderr()
            rows.append({"panel": panel, "method": label, "mean": mean, "stderr": se})
            panels[panel][label] = (mean, se)
            entry = {"zeta": zeta, "method": label, "policy": name,
                     "hyperparameters": {**POLICY_DEFAULTS[name], **overrides},
                     "final_regret_mean": float(mean[-1]), "final_regret_stderr": float(se[-1]),
                     "wall_time_s": res.wall_time, "fused": res.fused,
                     "us_per_round": 1e6 * res.wall_time / (runs * rounds)}
            if res.kl is not None:
                entry["kl_rounds"] = res.kl_rounds
                entry["kl_mean"] = res.kl.mean(axis=0)
            summary.append(entry)
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "rounds": rounds,
              "seed": seed, "dim": DIM, "n_arms": N_ARMS, "results": summary,
              "total_wall_time_s": time.perf_counter() - t_all, "environment": environment_info()}
    result["files"] = [os.path.join(out, f) for f in ("curves.csv", "summary.json", "regret.png")]
    write_curves_csv(os.path.join(out, "curves.csv"), rows)
    write_json(os.path.join(out, "summary.json"), result)
    try:
        from ..plotting import regret_panels

        regret_panels(panels, os.path.join(out, "regret.png"),
                      title=f"Linear pool bandit (d={DIM}, K={N_ARMS}, {runs} runs)")
    except ImportError as exc:
        if progress:
            progress(f"no plot written: {exc}")
    return result


def table(result):
    """A plain-text table of final regrets."""
    lines = [f"{'zeta':>5}  {'method':24s} {'regret(T)':>10} {'+-se':>7} {'us/round':>9}"]
    for e in result["results"]:
        lines.append(f"{e['zeta']:5g}  {e['method']:24s} {e['final_regret_mean']:10.2f} "
                     f"{e['final_regret_stderr']:7.2f} {e['us_per_round']:9.1f}")
    return "\n".join(lines)
