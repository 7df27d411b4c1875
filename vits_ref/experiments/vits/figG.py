"""Appendix G of the VITS paper: the hard non-contextual instance, linear and logistic.

Setup (appendix G.1): ``d = K = 10``; arms ``{theta*, theta*_eps, x_2..x_9}`` (unit norm;
``theta*_eps = (theta* + eps)/|theta* + eps|``, ``eps ~ N(0, 0.1^2 I)``, a near-optimal
arm), the same every round; rewards ``x theta* + N(0, 1)`` (linear) or
``Bernoulli(sigmoid(x theta*))`` (logistic). 20 runs, each on a new instance; the mean
and standard error of the cumulative regret, the paired difference of every method
against LinTS on the same runs (95% intervals), and the histogram of the arms pulled.
The paper does not state the number of rounds: 1000 by default.

Methods: LinTS, LMC-TS (10 Langevin steps), VITS-I and VITS-II (10 steps), the last
three on the model matching the rewards (``"linear"`` or ``"logistic"``), and VTS
(:class:`vits_ref.VTS`, Urteaga & Wiggins), also in the paper's Figures 5 and 6: per arm a
mixture of linear-Gaussian experts on the arm's feature vector, fitted by CAVI. The VITS
paper gives no hyperparameters for VTS (its appendix E grids are for the other methods) and
VTS has no ``eta``/``lam``/step to put on them: it runs at :data:`VTS_PARAMS`, the VTS
authors' defaults (``K = 2`` experts, ``gamma0 = 1``, ``u0_k = k 1_d``, ``V0 = I``,
``alpha0 = beta0 = 1``, sampled proportions, eq. 16) with CAVI to a relative ELBO
tolerance of 1e-5 (at most 100 iterations, warm-started), the same in both panels (in
the logistic one the Gaussian mixture is misspecified for Bernoulli rewards, as LinTS's
model is). The claims that name "the other TS algorithms" include it. VTS has no fused
loop (per-arm histories), so it runs in :func:`vits_ref.bandit.simulate`'s Python loop: 2.0-2.5 s
per panel of 20 x 1000 rounds when it was added, two thirds of it CAVI on the played arm's
history (d = 10, up to 1000 rows, 3.3-3.7 iterations per round on average); measured on 2
cores, the default run then went from 12 s without VTS to 16.5-17 s with it (2.0-3.9 s per
panel in the less loaded runs of the re-measurement under "Cost").

Loops: every other method of the figure runs in the fused compiled loop, in both panels.
The logistic LMC-TS, VITS-I and VITS-II lines use the logistic model's pieces
(:mod:`vits_ref.kernels.logistic_bandit`, which keep each run's history in the loop's
state); before them (up to commit a78cbac) those three ran in the Python loop. The fused
loop plays the Python loop's arms, so the results did not change: the default run's
``summary.json`` (regrets, paired differences, arm pulls) and ``curves.csv`` are the same
to the last bit before and after (checked 2026-11-23 on 6 runs of each).

Reference of the paired differences: LinTS. In the linear panel it samples the exact
posterior, the paper's reference. In the logistic panel LinTS is misspecified (a
linear-Gaussian model fitted to Bernoulli rewards) and no method samples an exact
posterior: the differences against it measure what modelling the likelihood gains, not
the distance to exact Thompson sampling.

Hyperparameters on the appendix E grid (:mod:`vits_ref.experiments.vits.grid`: ``eta`` in
{10, 100, 500, 1000}, ``lam`` in {0.1, 1, 10}, decayed steps ``h_t = h0/(eta t)`` with
``h0`` in {0.001, 0.01, 0.1}), chosen per method and reward kind by one grid search on 20
tuning runs of 1000 rounds with the seed 10 000, apart from the evaluation runs
(:data:`DEFAULT_POINTS`; what ``run(tune=True)`` at ``seed = 0`` would choose). Mean final
regret +- standard error on the tuning runs of the chosen point, with the runner-up:

=========  ======================================  ======================================
method     linear rewards                          logistic rewards
=========  ======================================  ======================================
LinTS      eta 10, lam 1: 28.4 +- 5.4              eta 10, lam 0.1: 36.9 +- 6.3
           (lam 0.1: 37.4 +- 7.2)                  (lam 1: 72.4 +- 20.0)
LMC-TS     eta 10, lam 10, h0 0.1: 50.8 +- 14.2    eta 10, lam 10, h0 0.1: 23.0 +- 7.6
           (lam 1, h0 0.1: 89.1 +- 34.8)           (eta 500, lam 0.1, h0 0.1: 50.1 +- 15.2)
VITS-I     eta 100, lam 0.1, h0 0.1: 21.0 +- 4.1   eta 10, lam 10, h0 0.01: 17.3 +- 3.1
           (eta 10, lam 0.1, h0 0.1: 36.3 +- 6.3)  (lam 0.1, h0 0.1: 22.7 +- 3.3)
VITS-II    the same point and score as VITS-I      the same point and score as VITS-I
=========  ======================================  ======================================

No grid point diverged in either panel. Every point's score is noisy (standard errors of 3
to 80 on 20 runs: the gap between the two best arms varies a lot from instance to
instance), so the choice is the best mean, not a significantly best point; the evaluation
runs use other seeds, so the choice does not favour a method on them. VITS-I and VITS-II
scored the same to the last digit at 31 of the 36 points (linear) and 34 of 36
(logistic), within 0.3 at the others: on this instance they pick the same arms almost
always. Every approximate method's worst point has ``h0 = 0.001`` (too slow to follow
the posterior; for LMC-TS all 12 such points are its 12 worst in the linear panel), and
for LinTS a large ``eta`` (a posterior 10-100 times narrower than the one at
``eta = 10``) under-explores: the hard instance punishes it. LMC-TS chose the largest
step, ``h0 = 0.1``, in both panels.

Spread: the final regret is heavy-tailed. In a few runs out of 20 a method stays on a
wrong arm for most of the 1000 rounds (final regret 400 to 730 against a median of
about 40 in the linear panel of the default run), so at the paper's 20 runs the paired
intervals are wide (about +-100 in the linear panel) and most differences are not
detected.

Cost (2 cores). Grid search per panel on the 20 tuning runs: the linear panel runs in the
fused compiled loop, about 45 s in all (LinTS 1 s, LMC-TS 3 s, VITS-I 28 s, VITS-II 11 s).
The logistic panel was measured when its LMC-TS and VITS lines ran in the Python loop
(about 0.2 s per run of 1000 rounds per method): about 15 minutes with ``n_jobs = 2``
(LinTS 1 s, LMC-TS 196 s, VITS-I 375 s, VITS-II 325 s). They now run fused, about twice
as fast per run (below); the grid search has not been re-timed. A default run (20 x 1000,
both panels, ``n_jobs = 1``) took about 12 s without VTS, 17 s with it on idle cores, before
the particle extras and the fused logistic lines.

Re-measured 2026-11-23, ``time python -m vits_ref run vits-figG`` (the default size, VTS
and the particle extras included, warm Numba cache), on the 2 cores shared with three other
sessions (load average 3 to 7, so absolute times are rough), alternating runs of the code
before the fused logistic lines (a78cbac) and after: before, 47.5-50.6 s wall (4 runs, load
3.2-6.1; 123 s in a fifth at load 6.7); after, 39.1-42.9 s (2 runs, load 3.3-5.2; 62.8 s
in a third at load 6.1). The logistic lines' own run times (``wall_time_s`` in the JSON,
compilation apart) went from 2.9-4.0 s to 1.3-2.0 s for LMC-TS, 5.3-6.8 s to 2.7-4.2 s for
VITS-I and 6.1-7.2 s to 2.4-3.9 s for VITS-II. Both loops run the same compiled step
bodies, whose sums over the history grow with the round; the fused loop spreads the runs
over the 2 threads and drops the Python loop's per-round overhead, so the process's CPU
time fell less than its wall time (user time 31.1-31.4 s before, 26.6-26.8 s
after).

Arm histogram: :class:`vits_ref.envs.HardInstance` does not shuffle its arms, so arm 0
is ``theta*`` (the optimal arm, expected reward 1 in the linear case) and arm 1 is
``theta*_eps`` (near-optimal); the summary also checks, per run, that arm 0 has the
largest mean and counts the runs in which arm 1 has the second largest. The arms played
are taken from each method's simulation as it runs (``run_panels(on_result=...)``).

Particle extras (not in the paper), in the logistic panel only: ``"extra:
SVGD-TS"`` and ``"extra: OPVI-TS"``, Thompson sampling over :class:`vits_ref.SVGD` and
:class:`vits_ref.OPVI` on the logistic model (:data:`PARTICLE_METHODS`; the policies of
:func:`vits_ref.experiments.vits.fig1.particle_policy`): one Thompson draw is one particle,
the particles and AdaGrad's history persist across rounds (warm start) from prior draws at
the start of each run; ``eta = lam = 10`` (the VITS lines' logistic point), median
bandwidth, OPVI with the OPVI paper's Algorithm 1 (``B_t = t^0.55`` from all observations so far,
summed batch likelihood, prior weight ``6/(pi^2 t^2)``, repulsion 0.1). Their points come
from a short stated tuning, :func:`tune_particles`: the 12 points of
:data:`~vits_ref.experiments.vits.fig1.PARTICLE_GRID` (``n`` in {30, 50}, 1 or 5 steps a
round, AdaGrad step in {0.001, 0.01, 0.05}) on 10 runs of 1000 rounds with the seed 10 000
(427 s for both on 2 loaded cores). Best mean final regret +- standard error (LinTS at its
logistic point on the same runs: 36.5 +- 5.6): SVGD-TS 50 particles, one step of 0.05 a
round, 19.5 +- 10.9 (runner-up 30 particles, the same step, 31.2 +- 14.6); OPVI-TS 30
particles, one step of 0.01, 19.6 +- 4.0 (runner-up 50 particles x 5 steps of 0.01, 27.2 +-
3.8). As for the grid methods, the scores are noisy (standard errors 4 to 22) and the choice
is the best mean, not a significantly best point. The paper's claims are judged on its
methods only (the extras are neither "VITS" nor among "the other TS algorithms" of the
figure); their pull fractions are under ``arm_pulls_particles``. Cost (Python loop, 2 cores,
warm caches): SVGD-TS 0.45 ms a round (the logistic potential's gradient over all
observations so far for 50 particles), OPVI-TS 0.15 ms (its mini-batch of ``t^0.55``); a
default run took 16.5 s without them and 32 s with them (9 s and 3 s of it theirs), on the
2 cores before the fused logistic lines; in the less loaded runs of the re-measurement
above they took 6.2-12.9 s and 2.6-4.5 s.
"""

import os
import time

import numpy as np

from ..._seeding import instance_seed, run_seed
from ..._validate import as_seed_sequence
from ...bandit.simulate import POLICY_DEFAULTS, make_policy
from ...envs import hard_instance
from .._chunks import check_progress
from .._common import regret_table, run_panels, write_json
from .._tuning import TUNE_RUNS, TUNE_SEED_OFFSET, diverged_points, grid_search
from ..plotting import arm_fractions, paper_title, plotted
from . import grid, vts_defaults
from .fig1 import OPVI_TS, PARTICLE_GRID, PARTICLE_TUNE_RUNS, SVGD_TS, particle_policy

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("vits", "appendix G: hard instance"),
          "arms.png": paper_title("vits", "appendix G: arms pulled on the hard instance")}

NAME = "vits-figG"
DESCRIPTION = "VITS paper appendix G: hard non-contextual instance, linear and logistic"
DEFAULTS = {"runs": 20, "rounds": 1000, "seed": 0}
DIM = N_ARMS = 10
REWARDS = ("linear", "logistic")
REFERENCE = "LinTS"
#: (label, policy name of :func:`vits_ref.bandit.simulate.make_policy`, grid kind of
#: :func:`grid.points`)
METHODS = (
    ("LinTS", "lints", "lints"),
    ("LMC-TS", "lmc", "lmc"),
    ("VITS-I", "vits-i", "vits"),
    ("VITS-II", "vits-ii", "vits"),
)
#: The grid point of each method per reward kind (module docstring: how and why).
DEFAULT_POINTS = {
    "linear": {
        "LinTS": {"eta": 10.0, "lam": 1.0},
        "LMC-TS": {"eta": 10.0, "lam": 10.0, "step_size": 0.1},
        "VITS-I": {"eta": 100.0, "lam": 0.1, "step_size": 0.1},
        "VITS-II": {"eta": 100.0, "lam": 0.1, "step_size": 0.1},
    },
    "logistic": {
        "LinTS": {"eta": 10.0, "lam": 0.1},
        "LMC-TS": {"eta": 10.0, "lam": 10.0, "step_size": 0.1},
        "VITS-I": {"eta": 10.0, "lam": 10.0, "step_size": 0.01},
        "VITS-II": {"eta": 10.0, "lam": 10.0, "step_size": 0.01},
    },
}
#: Index of ``theta*`` and of ``theta*_eps`` among the arms of a hard instance.
OPTIMAL_ARM, NEAR_OPTIMAL_ARM = 0, 1
#: VTS's label, and its hyperparameters (the VTS authors' defaults; module docstring).
VTS_LABEL = "VTS"
VTS_PARAMS = vts_defaults.VTS_PARAMS
VTS_NOTE = ("VTS (Urteaga & Wiggins; the paper's Figures 5 and 6 also show it) runs at the VTS "
            "authors' defaults, K = 2 experts per arm (hyperparameters['...']['VTS']); the "
            "claims naming the other TS algorithms include it. Its arm-pull fractions are "
            "under arm_pulls_vts.")


#: The particle Thompson samplers (not in the paper): labelled extras of the
#: logistic panel, ``(label, engine, hyperparameters)`` (module docstring: how chosen).
PARTICLE_METHODS = (
    (SVGD_TS, "svgd", {"model": "logistic", "eta": 10.0, "lam": 10.0, "n_particles": 50,
                       "n_steps": 1, "step_size": 0.05, "bandwidth": "median",
                       "repulsion": 1.0, "optimizer": "adagrad"}),
    (OPVI_TS, "opvi", {"model": "logistic", "eta": 10.0, "lam": 10.0, "n_particles": 30,
                       "n_steps": 1, "step_size": 0.01, "bandwidth": "median",
                       "repulsion": 0.1, "optimizer": "adagrad", "batch": "power",
                       "batch_power": 0.55, "prior_weight": "6/(pi^2 t^2)"}),
)
#: The panels that get the particle lines.
PARTICLE_REWARDS = ("logistic",)
PARTICLE_LABELS = tuple(m[0] for m in PARTICLE_METHODS)


def tune_particles(runs=PARTICLE_TUNE_RUNS, rounds=1000, seed=0, progress=None, n_jobs=1,
                   grid=PARTICLE_GRID):
    """The stated tuning of :data:`PARTICLE_METHODS` on the logistic panel.

    Every point of ``grid`` (:data:`vits_ref.experiments.vits.fig1.PARTICLE_GRID`) over
    the method's other hyperparameters, scored by the mean final regret of ``runs`` runs of
    ``rounds`` rounds with the seed ``seed + TUNE_SEED_OFFSET``
    (:func:`vits_ref.experiments._tuning.grid_search`), LinTS (its default logistic point)
    on the same runs for scale. Returns ``{label: {"ranked", "scores"}, "LinTS": score}``.
    """
    env = hard_instance(dim=DIM, n_arms=N_ARMS, reward="logistic", seed=seed)
    _, lints = grid_search(lambda **p: policy("lints", "logistic", p),
                           [DEFAULT_POINTS["logistic"][REFERENCE]], env, rounds, runs, seed,
                           n_jobs)
    out = {REFERENCE: lints[0]}
    for label, engine, params in PARTICLE_METHODS:
        ranked, scores = grid_search(
            lambda e=engine, b=params, **p: particle_policy(e, DIM, **{**b, **p}), list(grid),
            env, rounds, runs, seed, n_jobs, progress=progress, label=label)
        out[label] = {"ranked": ranked, "scores": scores}
    return out


def vts_policy():
    """VTS at :data:`VTS_PARAMS` (per-arm contexts: arm ``a`` at its feature vector)."""
    from ...inference.vts import VTS

    p = {k: v for k, v in VTS_PARAMS.items() if k not in ("u0", "V0")}
    return VTS(DIM, N_ARMS, **p)  # u0 and V0 at VTS's defaults, as VTS_PARAMS says


def panel_title(reward):
    """The panel's title for a reward kind (``"linear rewards"``)."""
    return f"{reward} rewards"


def _base(name, reward):
    """The overrides every point of a method shares: the model matching the rewards (LinTS
    keeps its linear-Gaussian model, misspecified for Bernoulli rewards)."""
    return {} if name == "lints" else {"model": "logistic" if reward == "logistic"
                                       else "linear"}


def hyperparameters(name, reward, point):
    """The full hyperparameters of a method at a grid point (for the JSON)."""
    return {**POLICY_DEFAULTS[name], **_base(name, reward), **point}


def policy(name, reward, point):
    """The policy of a method (policy name of :data:`METHODS`) at a grid point."""
    return make_policy(name, DIM, **_base(name, reward), **point)


def policies(reward):
    """``(label, policy)`` pairs of the methods at their default points for a reward kind."""
    return [(label, policy(name, reward, DEFAULT_POINTS[reward][label]))
            for label, name, _ in METHODS]


def run(runs=20, rounds=1000, seed=0, out="results/vits-figG", progress=None,
        rewards=REWARDS, n_jobs=1, tune=False, tune_runs=TUNE_RUNS, methods=None):
    """Run the panels; writes ``curves.csv``, ``summary.json``, ``regret.png``, ``arms.png``.

    Parameters
    ----------
    runs, rounds, seed, out, progress
        As every experiment's ``run`` (:class:`~vits_ref.experiments.Experiment`); ``out``
        is created, ``progress(message)`` (or None) takes the status lines.
    rewards : sequence of {"linear", "logistic"}
        The panels.
    n_jobs : int
        Worker processes for the methods without a fused loop (VTS and the particle
        extras); the others run in the fused loop (results do not depend on it).
    tune : bool, default False
        Choose each method's point per panel on the whole appendix E grid (12 points for
        LinTS, 36 for the others) on ``tune_runs`` runs of ``rounds`` rounds with the seed
        ``seed + 10 000`` instead of :data:`DEFAULT_POINTS`. The JSON records every point's
        score, the points left out because they diverged, and the choice; if the chosen
        point diverges on the evaluation runs the next best runs (recorded too).
    tune_runs : int, default 20
    methods : sequence of labels, optional
        Subset of :data:`METHODS`, ``"VTS"`` and :data:`PARTICLE_METHODS` (LinTS, the
        reference, always runs).

    Returns
    -------
    dict
        The JSON summary (:func:`vits_ref.experiments._common.run_panels`) plus
        ``arm_pulls`` (:func:`arm_pulls`; VTS's in ``arm_pulls_vts``, the particle extras'
        in ``arm_pulls_particles``), ``hyperparameters``,
        ``vts_note``; with ``tune``, ``tuning`` (VTS is not tuned: it has no grid).
        ``claims`` evaluates the paper's claims on it.
    """
    check_progress(progress)
    chosen = [m for m in METHODS if methods is None or m[0] in methods or m[0] == REFERENCE]
    panels, hyper, tuning = [], {}, {}
    for reward in rewards:
        env = hard_instance(dim=DIM, n_arms=N_ARMS, reward=reward, seed=seed)
        panel = panel_title(reward)
        methods_ = []
        for label, name, kind in chosen:
            ranked = [DEFAULT_POINTS[reward][label]]
            if tune:
                start = time.perf_counter()
                ranked, scores = grid_search(
                    lambda n=name, r=reward, **p: policy(n, r, p), grid.points(kind), env,
                    rounds, tune_runs, seed, n_jobs, progress=progress,
                    label=f"{panel}: {label}", out=out)
                ranked = ranked or [DEFAULT_POINTS[reward][label]]
                tuning.setdefault(panel, {})[label] = {
                    "scores": scores, "diverged_points": diverged_points(scores),
                    "chosen": ranked[0], "wall_time_s": time.perf_counter() - start}
            hyper.setdefault(panel, {})[label] = hyperparameters(name, reward, ranked[0])
            methods_.append((label, [(policy(name, reward, p),
                                      {"hyperparameters": hyperparameters(name, reward, p)})
                                     for p in ranked]))
        if methods is None or VTS_LABEL in methods:
            hyper[panel][VTS_LABEL] = dict(VTS_PARAMS)
            methods_.append((VTS_LABEL, [(vts_policy(),
                                          {"hyperparameters": dict(VTS_PARAMS)})]))
        # the particle extras come last: the lines above are computed exactly as before
        for label, engine, params in PARTICLE_METHODS:
            if reward in PARTICLE_REWARDS and (methods is None or label in methods):
                hyper[panel][label] = {"engine": engine, **params}
                methods_.append((label, [(particle_policy(engine, DIM, **params),
                                          {"hyperparameters": {"engine": engine, **params}})]))
        panels.append((panel, env, methods_, {"reward": reward}))
    extra = {"dim": DIM, "n_arms": N_ARMS, "hyperparameters": hyper, "tuned": tune,
             "vts_note": VTS_NOTE,
             "reference_note": "Paired differences are against LinTS: the exact posterior "
                               "in the linear panel; in the logistic panel a misspecified "
                               "linear-Gaussian model (no method there samples an exact "
                               "posterior)."}
    if tune:
        extra.update(tuning=tuning, tune_runs=tune_runs, tune_seed=seed + TUNE_SEED_OFFSET)
    arms = {}
    result = run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                        title=f"{TITLES['regret.png']} (d=K={DIM}, {runs} runs"
                              f"{', tuned' if tune else ''})",
                        extra=extra, n_jobs=n_jobs, reference=REFERENCE,
                        on_result=lambda panel, label, res: arms.__setitem__(
                            (panel, label), res.arms))
    start = time.perf_counter()
    pulls, pulls_vts, pulls_particles = {}, {}, {}
    for e in result["results"]:
        if "final_regrets" not in e:
            continue  # every candidate diverged: nothing to count
        reward = e["reward"]
        env = hard_instance(dim=DIM, n_arms=N_ARMS, reward=reward, seed=seed)
        # arm_pulls keeps the grid-tuned methods of METHODS; VTS's and the particle
        # extras' are kept apart
        into = (pulls_vts if e["method"] == VTS_LABEL else
                pulls_particles if e["method"] in PARTICLE_LABELS else pulls)
        into.setdefault(e["panel"], {})[e["method"]] = arm_pulls(
            arms[(e["panel"], e["method"])], env, seed)
    result["arm_pulls"] = pulls
    result["arm_pulls_vts"] = pulls_vts
    result["arm_pulls_particles"] = pulls_particles
    result["arm_pulls_wall_time_s"] = time.perf_counter() - start
    result["total_wall_time_s"] += result["arm_pulls_wall_time_s"]
    path = os.path.join(os.path.dirname(result["files"][0]), "arms.png")
    bars = {p: {**m, **pulls_vts.get(p, {}), **pulls_particles.get(p, {})}
            for p, m in pulls.items()}
    if plotted(lambda: arm_fractions(
            bars, path, title=f"{TITLES['arms.png']} ({runs} runs x {rounds} rounds)"),
            progress, "arm plot"):
        result["files"].append(path)
    write_json(result["files"][1], result)  # again, with the pull fractions
    return result


def arm_pulls(arms, env, seed):
    """Fractions of the pulls of the optimal, the near-optimal and the other arms.

    Parameters
    ----------
    arms : (n_runs, n_rounds) int array
        The arms played (:attr:`vits_ref.bandit.simulate.SimulationResult.arms`), each run on the
        new instance :func:`vits_ref.bandit.simulate` drew for it (``new_instance_per_run``).
    env : HardInstance
        The environment simulated.
    seed : int
        The simulation's seed: run ``r``'s instance is drawn from the run seed's child 2
        (:mod:`vits_ref.bandit.simulate`), so the instances are rebuilt here to check them.

    Returns
    -------
    dict
        ``optimal``, ``near_optimal``, ``others``: fractions of all rounds of all runs;
        ``per_run``: the same three per run (lists); ``last_half_optimal``: the fraction of
        optimal pulls over the second half of the rounds; ``optimal_is_best_runs`` (arm 0
        has the largest mean; all of them by construction) and
        ``near_optimal_second_best_runs`` (arm 1 has the second largest mean), counts of
        runs.
    """
    arms = np.asarray(arms)
    root = as_seed_sequence(seed)
    best = second = 0
    for r in range(arms.shape[0]):
        inst = env.new_instance(instance_seed(run_seed(root, r)))
        order = np.argsort(inst.expected_reward(inst.arms))[::-1]
        best += int(order[0] == OPTIMAL_ARM)
        second += int(order[1] == NEAR_OPTIMAL_ARM)
    opt = (arms == OPTIMAL_ARM).mean(axis=1)
    near = (arms == NEAR_OPTIMAL_ARM).mean(axis=1)
    half = arms.shape[1] // 2
    return {"optimal": float(opt.mean()), "near_optimal": float(near.mean()),
            "others": float(1.0 - opt.mean() - near.mean()),
            "last_half_optimal": float((arms[:, half:] == OPTIMAL_ARM).mean()),
            "per_run": {"optimal": opt.tolist(), "near_optimal": near.tolist(),
                        "others": (1.0 - opt - near).tolist()},
            "optimal_is_best_runs": best, "near_optimal_second_best_runs": second,
            "n_runs": int(arms.shape[0])}


def table(result):
    """The regret table (paired differences against LinTS), the pull fractions, the notes."""
    lines = [regret_table(result), "",
             "arms pulled (fraction of all rounds): optimal / near-optimal / others "
             "(optimal, second half of the rounds)"]
    both = {panel: {**methods, **result.get("arm_pulls_vts", {}).get(panel, {}),
                    **result.get("arm_pulls_particles", {}).get(panel, {})}
            for panel, methods in result.get("arm_pulls", {}).items()}
    for panel, methods in both.items():
        for method, p in methods.items():
            lines.append(f"{panel:18s} {method:8s} {p['optimal']:.3f} / {p['near_optimal']:.3f}"
                         f" / {p['others']:.3f}   ({p['last_half_optimal']:.3f})")
    lines += ["", result.get("reference_note", ""), result.get("vts_note", VTS_NOTE)]
    return "\n".join(lines)
