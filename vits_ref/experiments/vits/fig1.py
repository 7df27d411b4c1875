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
symmetrised ``A`` (Hessian-free), 0.02 (LMC-TS). One line is not in the paper: the
Hessian-free variant with the control variate ``grad U(mu)`` (``"vits-hf-cv"``). All
methods see the same contexts and noise in each run (common random numbers), so their
differences are not sampling noise of the environment.
"""

import itertools
import math

from ...envs import pool
from ...errors import DivergenceError
from ...simulate import POLICY_DEFAULTS, make_policy, simulate
from .._common import regret_table, run_panels

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
    ("VITS-II HF + control variate", "vits-hf-cv", {}),
    ("LMC-TS (10 steps)", "lmc", {"n_steps": 10}),
    ("LMC-TS (50 steps)", "lmc", {"n_steps": 50}),
)


#: Offset of the tuning runs' seed: tuning never sees the evaluation runs' draws.
TUNE_SEED_OFFSET = 10_000


def tuning_grid(name):
    """The small grid (a subset of appendix E's) searched by ``--tune`` for a policy name.

    LinTS: ``eta`` in {1, 10, 100}; LinUCB: ``alpha`` in {0.1, 0.5, 1}; VITS and LMC-TS:
    ``eta`` in {1, 10, 100} times the step-size scale in {0.5, 1, 2} (applied to ``h0``,
    and to the square root's ``h0`` where it has its own). The decayed step
    ``h0 / (eta t)`` keeps ``h_t eta lmax(V_t)`` independent of ``eta``, so stability does
    not depend on the ``eta`` of the grid.
    """
    if name == "linucb":
        return [{"alpha": a} for a in (0.1, 0.5, 1.0)]
    if name == "lints":
        return [{"eta": e} for e in (1.0, 10.0, 100.0)]
    base = POLICY_DEFAULTS[name]
    grid = []
    for eta, scale in itertools.product((1.0, 10.0, 100.0), (0.5, 1.0, 2.0)):
        over = {"eta": eta, "step_size": scale * base["step_size"]}
        if "cov_step_size" in base:
            over["cov_step_size"] = scale * base["cov_step_size"]
        grid.append(over)
    return grid


def tune_method(name, overrides, env, rounds, seed, tune_runs, n_jobs=1):
    """Grid points ranked by mean final regret on ``tune_runs`` separate runs.

    Returns ``(ranked_overrides, [{"overrides": ..., "final_regret": ...}, ...])``: the
    overrides of the points that never diverged, best first (the evaluation falls back to
    the next one if the best diverges on the evaluation runs), and every point's score
    (``inf`` for a point that diverged).
    """
    scored = []
    for point in tuning_grid(name):
        params = {**overrides, **point}
        try:
            res = simulate(make_policy(name, DIM, **params), env, n_rounds=rounds,
                           n_runs=tune_runs, seed=seed + TUNE_SEED_OFFSET,
                           new_instance_per_run=True, n_jobs=n_jobs)
            score = float(res.cumulative_regret[:, -1].mean())
        except DivergenceError:
            score = math.inf
        scored.append({"overrides": point, "final_regret": score})
    ranked = sorted((s for s in scored if math.isfinite(s["final_regret"])),
                    key=lambda s: s["final_regret"])
    return [{**overrides, **s["overrides"]} for s in ranked] or [overrides], scored


def run(runs=50, rounds=1000, seed=0, out="results/vits-fig1", progress=None, methods=None,
        n_jobs=1, tune=False, tune_runs=10):
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
    n_jobs : int
        Worker processes for policies without a fused loop (none here; kept for the CLI).
    tune : bool, default False
        Choose each method's hyperparameters per zeta on :func:`tuning_grid` (``tune_runs``
        runs of ``rounds`` rounds with seed ``seed + TUNE_SEED_OFFSET``) instead of the
        stated defaults; the JSON records the grid's scores and the choice.

    Returns
    -------
    dict
        The JSON summary.
    """
    chosen = [m for m in METHODS if methods is None or m[0] in methods]
    kl_rounds = sorted({r for r in (10, 100, rounds // 2, rounds) if 1 <= r <= rounds})
    panels, hyper, tuning = [], {}, {}
    for zeta in ZETAS:
        env = pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="linear", seed=seed)
        panel = f"zeta = {zeta:g}"
        methods_ = []
        for label, name, overrides in chosen:
            ranked = [overrides]
            if tune:
                if progress:
                    progress(f"{panel}: tuning {label} ({len(tuning_grid(name))} points x "
                             f"{tune_runs} runs)")
                ranked, scored = tune_method(name, overrides, env, rounds, seed, tune_runs,
                                             n_jobs)
                tuning.setdefault(panel, {})[label] = scored
            hyper.setdefault(panel, {})[label] = {**POLICY_DEFAULTS[name], **ranked[0]}
            methods_.append((label, [(make_policy(name, DIM, **o),
                                      {"hyperparameters": {**POLICY_DEFAULTS[name], **o}})
                                     for o in ranked]))
        panels.append((panel, env, methods_, {"zeta": zeta}))
    # "hyperparameters": the first choice per panel and method; each result entry holds
    # the ones actually used (a tuned choice that diverged is listed under
    # "diverged_candidates" and the next grid point was run)
    extra = {"dim": DIM, "n_arms": N_ARMS, "hyperparameters": hyper, "tuned": tune}
    if tune:
        extra.update(tuning=tuning, tune_runs=tune_runs,
                     tune_seed=seed + TUNE_SEED_OFFSET)
    return run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                      title=f"Linear pool bandit (d={DIM}, K={N_ARMS}, {runs} runs"
                            f"{', tuned' if tune else ''})",
                      extra=extra, kl_rounds=kl_rounds, n_jobs=n_jobs)


table = regret_table
