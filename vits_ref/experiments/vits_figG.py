"""Appendix G of the VITS paper: the hard non-contextual instance, linear and logistic.

``d = K = 10``; arms ``{theta*, theta*_eps, x_2..x_9}`` (unit norm; ``theta*_eps`` a
small perturbation of ``theta*``), the same every round; rewards ``x theta* + N(0, 1)``
(linear) or ``Bernoulli(sigmoid(x theta*))`` (logistic). 20 runs on new instances.
Methods: LinTS (the linear-Gaussian model, misspecified for Bernoulli rewards), LMC-TS,
VITS-I and VITS-II, the last three on the model matching the rewards (``"linear"`` or
``"logistic"``). VTS comes with the mixture engine of a later issue.

Hyperparameters: ``eta = lam = 1``; decayed steps ``h_t = h0 / (eta t)`` with
``h0 = 0.2`` for VITS and LMC-TS (10 inner steps), chosen from {0.01, 0.1, 0.3} on 20
linear runs with another seed (0.1 and 0.3 gave the same regret within a standard error;
0.01 was too slow to follow the posterior). The rounds are not stated in the paper:
1000 by default.
"""

import os
import time

from ..envs import hard_instance
from ..inference import VITS, Langevin, LinTS
from ..policies import ThompsonSampling
from ..simulate import simulate
from ._common import environment_info, write_curves_csv, write_json

NAME = "vits-figG"
DESCRIPTION = "VITS paper appendix G: hard non-contextual instance, linear and logistic"
DEFAULTS = {"runs": 20, "rounds": 1000, "seed": 0}
DIM = N_ARMS = 10
STEP = 0.2


def policies(reward):
    """``(label, policy)`` pairs for a reward kind."""
    model = "logistic" if reward == "logistic" else "linear"
    common = {"eta": 1.0, "lam": 1.0, "model": model, "step_size": STEP, "n_steps": 10}
    return [("LinTS", ThompsonSampling(LinTS(DIM, eta=1.0, lam=1.0))),
            ("LMC-TS", ThompsonSampling(Langevin(DIM, **common))),
            ("VITS-I", ThompsonSampling(VITS(DIM, variant="I", **common))),
            ("VITS-II", ThompsonSampling(VITS(DIM, variant="II", **common)))]


def run(runs=20, rounds=1000, seed=0, out="results/vits-figG", progress=None,
        rewards=("linear", "logistic")):
    """Run both panels; writes ``curves.csv``, ``summary.json``, ``regret.png``."""
    os.makedirs(out, exist_ok=True)
    rows, summary, panels = [], [], {}
    t0 = time.perf_counter()
    for reward in rewards:
        env = hard_instance(dim=DIM, n_arms=N_ARMS, reward=reward, seed=seed)
        panel = f"{reward} rewards"
        panels[panel] = {}
        for label, policy in policies(reward):
            if progress:
                progress(f"{panel}: {label} ({runs} runs x {rounds} rounds)")
            res = simulate(policy, env, n_rounds=rounds, n_runs=runs, seed=seed,
                           new_instance_per_run=True)
            mean, se = res.mean_and_stderr()
            rows.append({"panel": panel, "method": label, "mean": mean, "stderr": se})
            panels[panel][label] = (mean, se)
            summary.append({"reward": reward, "method": label,
                            "final_regret_mean": float(mean[-1]),
                            "final_regret_stderr": float(se[-1]), "wall_time_s": res.wall_time,
                            "fused": res.fused,
                            "us_per_round": 1e6 * res.wall_time / (runs * rounds)})
    files = [os.path.join(out, f) for f in ("curves.csv", "summary.json", "regret.png")]
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "rounds": rounds,
              "seed": seed, "step_size": STEP, "results": summary, "files": files,
              "total_wall_time_s": time.perf_counter() - t0, "environment": environment_info()}
    write_curves_csv(files[0], rows)
    write_json(files[1], result)
    try:
        from ..plotting import regret_panels

        regret_panels(panels, files[2], title=f"Hard instance (d=K={DIM}, {runs} runs)")
    except ImportError as exc:
        if progress:
            progress(f"no plot written: {exc}")
    return result


def table(result):
    """Final regrets."""
    lines = [f"{'reward':9s} {'method':8s} {'regret(T)':>10} {'+-se':>7} {'us/round':>9}"]
    for e in result["results"]:
        lines.append(f"{e['reward']:9s} {e['method']:8s} {e['final_regret_mean']:10.2f} "
                     f"{e['final_regret_stderr']:7.2f} {e['us_per_round']:9.1f}")
    return "\n".join(lines)
