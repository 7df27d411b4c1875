"""Figure 1 of the VITS paper: linear pool bandit, zeta = 0.1 (ill-conditioned) and 1.

Setup (section 4.1, appendix H): d = 20, K = 50 arms from a pool of 50 vectors plus
``zeta N(0, I)``, ``theta* ~ N(0, I/d)``, reward noise ``sqrt(1 + zeta^2)``; 50 runs of
1000 rounds, each run on a new instance; mean and standard error of the cumulative regret,
and the paired difference of every method against LinTS (the exact posterior, the
paper's reference) on the same runs, with 95% intervals.

The paper's lines: LinTS, VITS-II (10 steps), VITS-II Hessian-free (Algorithm 3: 20 draws,
unsymmetrised ``A``, one step size), LMC-TS with 10 and 50 steps. Labelled extras, not in
the figure: VITS-I (the paper says it "performs identically to VITS-II", which the extra
tests), the library's symmetrised Hessian-free and its control-variate version,
LinUCB at the samplers' temperature (``alpha = 1/sqrt(eta)``), and VITS-II at the
Hessian-free line's step ``h0 = 0.001`` (never tuned: it separates the cost of the
Hessian-free estimator from the cost of its smaller stable step).

Hyperparameters (appendix E gives only grids, :mod:`vits_ref.experiments.vits.grid`):
by default every method runs at the grid point ``eta = 10``, ``lam = 10`` with the
decayed step ``h_t = h0/(eta t)``, ``h0 = 0.01`` (VITS-I/II, LMC-TS, the two extras)
and ``h0 = 0.001`` for the paper's Hessian-free variant, the only grid step at which it
does not diverge (:data:`vits_ref.bandit.simulate.POLICY_DEFAULTS` says why each). With
``tune=True`` (``--tune``) each method's point is chosen per panel on the whole grid
(12 points for LinTS/LinUCB, 36 for the others) on ``tune_runs`` (default 20) runs with
the seed ``seed + 10 000``, separate from the evaluation runs; points that diverge are
left out and listed in the JSON with the round and step of the divergence. A default or
tuned point that diverges on the evaluation runs is replaced by the next candidate (the
next smaller grid step, or the next best tuned point), recorded in the JSON. All methods see
the same contexts and noise in each run (common random numbers).

VTS (section 4.1: "in the ill-conditioned setting, it exhibited a linear and notably high
cumulative regret", left out of the figure): :func:`add_vts` runs VTS (Urteaga & Wiggins, at
its authors' defaults, as in vits-figG) at ``zeta = 0.1`` on the same runs and keeps it in
the summary's ``vts_ill_conditioned`` (per run: the final regret, LinTS's, and the
cumulative regret at ``T/4, T/2, 3T/4, T``), not in the figure, the curves or the table.
Its cost: 0.6 s a run of 1000 rounds once compiled (2 runs in 1.3 s), 45 s to compile, on
the loaded 2-core machine.

The speed claim compares warm rounds, timed apart from the runs in 15 interleaved repeats
(:func:`round_costs`; ``us_per_round_warm_repeats``).

Particle extras (not in the paper): ``"extra: SVGD-TS"`` and
``"extra: OPVI-TS"``, Thompson sampling over :class:`vits_ref.SVGD` and
:class:`vits_ref.OPVI` (:data:`PARTICLE_METHODS`): one Thompson draw is one particle of the
set, and the particles (and AdaGrad's history) persist across rounds, warm-started, from
``n`` prior draws at the start of each run. Tempering as the other lines: ``eta = 10``,
``lam = 10``; median bandwidth; OPVI with the OPVI paper's Algorithm 1 (``B_t = t^0.55`` drawn
from all observations so far, summed batch likelihood, prior weight ``6/(pi^2 t^2)``,
repulsion 0.1). Their point (``n_particles = 50``, one AdaGrad step of 0.01 per round,
for both) comes from a short stated tuning, :func:`tune_particles`: the 12 points of
:data:`PARTICLE_GRID` (``n`` in {30, 50}, 1 or 5 steps per round, AdaGrad step in
{0.001, 0.01, 0.05}) on 10 runs of 1000 rounds with the seed 10 000 (the evaluation runs'
seed plus :data:`~vits_ref.experiments._tuning.TUNE_SEED_OFFSET`). Mean final regret +-
standard error there (LinTS on the same runs: 111.2 +- 13.4 at zeta 0.1, 172.3 +- 12.0 at
zeta 1): SVGD-TS at the chosen point 112.6 +- 20.2 and 164.0 +- 12.6; the per-panel bests,
50 particles x 5 steps of 0.001 (102.9 +- 8.9 at zeta 0.1, 197.4 +- 11.0 at zeta 1) and 30 x
5 of 0.01 (130.3 +- 38.1, 146.6 +- 9.4), are within about a standard error and cost five
steps a round; the chosen point has the best sum over the two panels among the one-step
points and ties the best overall. OPVI-TS's chosen point is its best in both panels:
124.0 +- 19.7 and 209.0 +- 13.3. A step of 0.001 with one step a round is too slow to follow
the posterior (regret 2-4x). With ``n = 50 > d = 20`` the particles' covariance is
nonsingular, so ``kl_rounds`` records ``KL(q || p)`` of the Gaussian with the particles'
mean and covariance against the exact posterior (:meth:`vits_ref.SVGD.kl_to_posterior`);
SVGD's variance underestimation with few particles in 20 dimensions makes it large. They
have no fused loop and run in :func:`vits_ref.bandit.simulate`'s Python loop (``n_jobs``
processes). Measured at the default size (50 runs x 1000 rounds, both panels, ``n_jobs =
1``, 2 cores shared with other jobs): SVGD-TS 0.7-1.4 ms a round, OPVI-TS 0.7-0.9 ms (the
one SVGD step of 50 particles in 20 dimensions, the Python loop's select/update and the
model's rank-one update; LinTS's fused loop takes 0.07 ms), 182 s for the four particle runs
against 377 s for the rest of the command in the same run (+48% wall); CPU time (user +
sys) of the whole command 158 s without them and 219 s with them (+38%). Five steps a
round, which the tuning did not favour, would cost about four times as much.
"""

import numpy as np

from ...bandit.simulate import POLICY_DEFAULTS, make_policy
from ...envs import pool
from .._chunks import check_progress
from .._common import regret_table, run_panels
from .._tuning import TUNE_RUNS, TUNE_SEED_OFFSET, diverged_points, grid_search
from ..plotting import paper_title
from . import grid

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("vits", "Figure 1: linear pool bandit")}

NAME = "vits-fig1"
DESCRIPTION = "VITS paper Figure 1: linear pool bandit, zeta 0.1 and 1 (d=20, K=50)"
DEFAULTS = {"runs": 50, "rounds": 1000, "seed": 0}
ZETAS = (0.1, 1.0)
DIM, N_ARMS = 20, 50
REFERENCE = "LinTS"
HF = "VITS-II HF (Alg. 3, 20 draws)"
SAME_STEP = "extra: VITS-II at the HF step (h0 = 0.001)"
#: (label, policy name, overrides, grid kind of :func:`grid.points` or None for a fixed
#: diagnostic point that is never tuned, in the paper's figure)
METHODS = (
    ("LinTS", "lints", {}, "lints", True),
    ("VITS-II", "vits-ii", {}, "vits", True),
    (HF, "vits-hf", {}, "vits-hf", True),
    ("LMC-TS (10 steps)", "lmc", {"n_steps": 10}, "lmc", True),
    ("LMC-TS (50 steps)", "lmc", {"n_steps": 50}, "lmc", True),
    ("extra: VITS-I", "vits-i", {}, "vits", False),
    ("extra: VITS-II HF symmetrised", "vits-hf-sym", {}, "vits-hf-half", False),
    ("extra: VITS-II HF + control variate", "vits-hf-cv", {}, "vits-hf-half", False),
    ("extra: LinUCB (alpha = 1/sqrt(eta))", "linucb", {}, "linucb", False),
    (SAME_STEP, "vits-ii", {"step_size": 0.001}, None, False),
)
SVGD_TS, OPVI_TS = "extra: SVGD-TS", "extra: OPVI-TS"
#: The particle Thompson samplers (not in the paper): ``(label, engine,
#: hyperparameters)``, engine ``"svgd"`` (:class:`vits_ref.SVGD`) or ``"opvi"``
#: (:class:`vits_ref.OPVI`, Algorithm 1 of the OPVI paper with its defaults: ``B_t = t^0.55``,
#: prior weight ``6/(pi^2 t^2)``, repulsion 0.1). The point of :data:`PARTICLE_GRID`
#: chosen by :func:`tune_particles` (module docstring); not searched by ``--tune``.
PARTICLE_METHODS = (
    (SVGD_TS, "svgd", {"eta": 10.0, "lam": 10.0, "n_particles": 50, "n_steps": 1,
                       "step_size": 0.01, "bandwidth": "median", "repulsion": 1.0,
                       "optimizer": "adagrad"}),
    (OPVI_TS, "opvi", {"eta": 10.0, "lam": 10.0, "n_particles": 50, "n_steps": 1,
                       "step_size": 0.01, "bandwidth": "median", "repulsion": 0.1,
                       "optimizer": "adagrad", "batch": "power", "batch_power": 0.55,
                       "prior_weight": "6/(pi^2 t^2)"}),
)
#: The points searched by :func:`tune_particles`: particles more than ``DIM`` (the
#: particles' covariance, used by the KL diagnostic, is singular otherwise), one step per
#: round (OPVI's Algorithm 1) or five, AdaGrad steps around the SVGD code's 1e-3.
PARTICLE_GRID = tuple({"n_particles": n, "n_steps": s, "step_size": h}
                      for n in (30, 50) for s in (1, 5) for h in (0.001, 0.01, 0.05))
#: Runs of the stated tuning (on the seed ``seed + TUNE_SEED_OFFSET``).
PARTICLE_TUNE_RUNS = 10


def particle_policy(engine, dim=DIM, **params):
    """Thompson sampling over a particle engine (``"svgd"`` or ``"opvi"``) with ``params``;
    the particles persist across rounds (warm start), re-drawn from the prior per run."""
    from ...bandit.policies import ThompsonSampling
    from ...inference import OPVI, SVGD

    cls = {"svgd": SVGD, "opvi": OPVI}[engine]
    return ThompsonSampling(cls(dim, **params))


def tune_particles(runs=PARTICLE_TUNE_RUNS, rounds=1000, seed=0, progress=None, n_jobs=1,
                   grid=PARTICLE_GRID):
    """The stated tuning of :data:`PARTICLE_METHODS`: every point of ``grid`` per zeta.

    Each point (over the method's other hyperparameters) is scored by the mean final
    regret of ``runs`` runs of ``rounds`` rounds with the seed ``seed + TUNE_SEED_OFFSET``
    (:func:`vits_ref.experiments._tuning.grid_search`; the evaluation runs never meet these
    instances), LinTS scored on the same runs for scale. Returns ``{panel: {label:
    {"ranked", "scores"}, "LinTS": score}}``.
    """
    out = {}
    for zeta in ZETAS:
        env = pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="linear", seed=seed)
        panel = f"zeta = {zeta:g}"
        _, lints = grid_search(lambda **p: make_policy("lints", DIM, **p), [{}], env, rounds,
                               runs, seed, n_jobs)
        out[panel] = {REFERENCE: lints[0]}
        for label, engine, params in PARTICLE_METHODS:
            ranked, scores = grid_search(
                lambda e=engine, b=params, **p: particle_policy(e, **{**b, **p}), list(grid),
                env, rounds, runs, seed, n_jobs, progress=progress, label=f"{panel}: {label}")
            out[panel][label] = {"ranked": ranked, "scores": scores}
    return out


def tuning_grid(name):
    """The appendix E grid searched by ``--tune`` for a policy name of :data:`METHODS`."""
    kind = next(m[3] for m in METHODS if m[1] == name)
    return grid.points(kind)


def smaller_steps(name, overrides):
    """The fallbacks of a default point: the same point at each smaller grid step.

    A default that diverges on the evaluation runs (the symmetrised Hessian-free extra
    does at ``h0 = 0.01`` in some runs) is then run at the next grid step down instead of
    leaving a hole in the figure; the JSON lists the diverged candidate.
    """
    params = {**POLICY_DEFAULTS[name], **overrides}
    if "step_size" not in params:
        return []
    out = []
    for h in sorted((h for h in grid.STEPS if h < params["step_size"]), reverse=True):
        ratio = h / params["step_size"]
        point = {**overrides, "step_size": h}
        if "cov_step_size" in params:
            point["cov_step_size"] = params["cov_step_size"] * ratio
        out.append(point)
    return out


def run(runs=50, rounds=1000, seed=0, out="results/vits-fig1", progress=None, methods=None,
        n_jobs=1, tune=False, tune_runs=TUNE_RUNS):
    """Run the experiment and write ``curves.csv``, ``summary.json``, ``regret.png``.

    Parameters
    ----------
    runs, rounds, seed, out, progress
        As every experiment's ``run`` (:class:`~vits_ref.experiments.Experiment`); ``out``
        is created, ``progress(message)`` (or None) takes the status lines.
    methods : sequence of labels, optional
        Subset of :data:`METHODS` and :data:`PARTICLE_METHODS` to run (LinTS, the
        reference, is always run).
    n_jobs : int
        Worker processes for policies without a fused loop: the particle lines (SVGD-TS,
        OPVI-TS) run in :func:`vits_ref.bandit.simulate`'s Python loop; results do not depend on it.
    tune : bool, default False
        Choose each method's hyperparameters per zeta on the whole appendix E grid
        (:func:`tuning_grid`), on ``tune_runs`` runs of ``rounds`` rounds with the seed
        ``seed + 10 000``, instead of the stated defaults. The JSON records every point's
        score, the points left out because they diverged, and the choice; if the chosen
        point diverges on the evaluation runs the next best runs (recorded too).
    tune_runs : int, default 20

    Returns
    -------
    dict
        The JSON summary (:func:`vits_ref.experiments._common.run_panels`); ``claims``
        evaluates the paper's claims on it.
    """
    check_progress(progress)
    chosen = [m for m in METHODS if methods is None or m[0] in methods or m[0] == REFERENCE]
    particles = [m for m in PARTICLE_METHODS if methods is None or m[0] in methods]
    kl_rounds = sorted({r for r in (10, 100, rounds // 2, rounds) if 1 <= r <= rounds})
    panels, hyper, tuning = [], {}, {}
    for zeta in ZETAS:
        env = pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="linear", seed=seed)
        panel = f"zeta = {zeta:g}"
        methods_ = []
        for label, name, overrides, kind, _ in chosen:
            ranked = [overrides, *smaller_steps(name, overrides)]
            if tune and kind is not None:
                ranked, scores = grid_search(
                    lambda n=name, o=overrides, **p: make_policy(n, DIM, **{**o, **p}),
                    tuning_grid(name), env, rounds, tune_runs, seed, n_jobs,
                    progress=progress, label=f"{panel}: {label}", out=out)
                ranked = [{**overrides, **p} for p in ranked] or [overrides]
                tuning.setdefault(panel, {})[label] = {
                    "scores": scores, "diverged_points": diverged_points(scores)}
            hyper.setdefault(panel, {})[label] = {**POLICY_DEFAULTS[name], **ranked[0]}
            methods_.append((label, [(make_policy(name, DIM, **o),
                                      {"hyperparameters": {**POLICY_DEFAULTS[name], **o}})
                                     for o in ranked]))
        # the particle extras come last: the lines above are computed exactly as before
        for label, engine, params in particles:
            hyper.setdefault(panel, {})[label] = {"engine": engine, **params}
            methods_.append((label, [(particle_policy(engine, **params),
                                      {"hyperparameters": {"engine": engine, **params}})]))
        panels.append((panel, env, methods_, {"zeta": zeta}))
    # "hyperparameters": the first choice per panel and method; each result entry holds
    # the ones actually used (a tuned choice that diverged is listed under
    # "diverged_candidates" and the next grid point was run)
    extra = {"dim": DIM, "n_arms": N_ARMS, "hyperparameters": hyper, "tuned": tune,
             "paper_methods": [m[0] for m in METHODS if m[4]]}
    if tune:
        extra.update(tuning=tuning, tune_runs=tune_runs,
                     tune_seed=seed + TUNE_SEED_OFFSET)
    if progress:
        progress("timing warm rounds (one thread) for the speed claims")
    costs = {label: 1e6 * np.atleast_1d(np.asarray(c, float))
             for label, c in round_costs([m[:3] for m in chosen]).items()}
    extra["us_per_round_warm"] = {label: float(np.median(c)) for label, c in costs.items()}
    extra["us_per_round_warm_repeats"] = {label: c.tolist() for label, c in costs.items()}
    result = run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                        title=f"{TITLES['regret.png']} (d={DIM}, K={N_ARMS}, {runs} runs"
                              f"{', tuned' if tune else ''})",
                        extra=extra, kl_rounds=kl_rounds, n_jobs=n_jobs, reference=REFERENCE)
    if methods is None or VTS_EXTRA in methods:
        add_vts(result, runs, rounds, seed, out, progress, n_jobs)
    return result


#: The size of a warm-up unit (:func:`warmup`): the kernels' signatures do not depend on it.
WARMUP_SIZE = {"runs": 2, "rounds": 20}


#: The units that compile kernels of their own, the costliest first (compilations in a
#: cold ``compile vits-fig1`` on the loaded 2-core machine: VITS-II 77, LinTS 58, VTS 45,
#: SVGD-TS 30, LMC-TS 13, LinUCB 13, OPVI-TS 1). The other lines reuse their kernels
#: (VITS-I, the Hessian-free variants and VITS-II at the HF step use VITS-II's loop with
#: other arguments, LMC-TS 50 steps the 10-step one) and come last: started beside the
#: line that compiles their kernels they would only wait for its lock.
WARMUP_FIRST = ("VITS-II", REFERENCE, "extra: VTS", SVGD_TS, "LMC-TS (10 steps)",
                "extra: LinUCB (alpha = 1/sqrt(eta))", OPVI_TS)


#: Units one worker runs in this order (:func:`vits_ref.experiments._precompile.together`):
#: LinTS's and VITS-II's loops inline the same KL diagnostic, Cholesky factor, solves and
#: products, which only the process that compiles the loops compiles (the disk cache keeps
#: the loops, not those bodies); in two workers, both compiled them.
WARMUP_TOGETHER = ((REFERENCE, "VITS-II"),)


def warmup_units():
    """The independent units of this experiment for ``python -m vits_ref compile``
    (:mod:`vits_ref.experiments._precompile`): one per line of the figure, the labelled
    extras, the particle extras and the VTS extra, each ``(label, warmup, {"method":
    label})``, in the order of :data:`WARMUP_FIRST`. Every unit runs LinTS (the reference)
    before its method; the compile lock has one process compile it while the others wait
    and load it."""
    labels = [m[0] for m in METHODS] + [m[0] for m in PARTICLE_METHODS] + [VTS_EXTRA]
    labels = [*WARMUP_FIRST, *(x for x in labels if x not in WARMUP_FIRST)]
    return [(label, warmup, {"method": label}) for label in labels]


def warmup(method, out):
    """Run this experiment's own code for one method (:func:`run` with ``methods=[method]``)
    at :data:`WARMUP_SIZE` into ``out``: it compiles the kernels the method needs (its
    fused loop or Python loop, the warm-round timing, the KL diagnostics), which Numba
    keeps in its disk cache for the real run.

    The VTS extra runs its own part first (:func:`add_vts`, the same call as :func:`run`'s,
    into a folder of its own): every unit runs LinTS, the reference, before its method, and
    a unit that starts beside the one compiling LinTS's loop would first wait for it (12 s
    of CPU on this machine); VTS's kernels need nothing of LinTS's, so its worker compiles
    them meanwhile, and then loads LinTS's loop from the cache."""
    if method == VTS_EXTRA:
        import os

        add_vts({"results": []}, **WARMUP_SIZE, seed=0, out=os.path.join(out, "vts-first"))
    run(**WARMUP_SIZE, seed=0, out=out, methods=[method])


table = regret_table


#: Interleaved repeats of the warm-round timing (:func:`round_costs`): the speed claim's
#: interval is the paired t interval of the per-repeat log-ratios, whose width shrinks
#: with the repeats; 15 calls of 200 rounds of each line cost a few seconds.
TIMING_REPEATS = 15


def round_costs(methods, n_rounds=200, repeats=TIMING_REPEATS):
    """Warm seconds per round of policies' fused loops, one thread, one run, repeated.

    The experiment's ``us_per_round`` includes the first call's compilation and the
    drawing of the randomness; the paper's speed claims compare warm rounds, so they are
    timed here apart: the fused loop of each policy on the same pre-drawn ``n_rounds``
    rounds (d = 20, K = 50, zeta 0.1), calls interleaved
    (:func:`vits_ref._bench.timing.interleaved_times`: repeat ``r`` of every policy back to
    back, so the repeats are paired). ``methods``: ``(label, policy name, overrides)``
    triples. Returns ``{label: [seconds per round of each repeat]}`` (the summary keeps
    them in ``us_per_round_warm_repeats`` and their median in ``us_per_round_warm``).
    """
    from ..._bench.linear import problem, run_compiled
    from ..._bench.timing import interleaved_times
    from ..._threads import numba_threads

    probs = {label: problem(name, n_rounds=n_rounds, dim=DIM, n_arms=N_ARMS, **over)
             for label, name, over in methods}
    with numba_threads(1):
        fns = [lambda sp=spec, r=runs[0]: run_compiled(sp, r) for spec, runs in probs.values()]
        for fn in fns:  # compile outside the timing
            fn()
        times = interleaved_times(fns, repeats)
    return {n: [x / n_rounds for x in t] for n, t in zip(probs, times, strict=True)}


# -- VTS at the ill-conditioned panel (section 4.1 says it, the figure leaves it out) -------

VTS_EXTRA = "extra: VTS"
#: The panel where the paper reports VTS's regret ("in the ill-conditioned setting").
VTS_ZETA = 0.1


def quarter_rounds(rounds):
    """The rounds ``T/4, T/2, 3T/4, T`` (at least 1) at which the VTS extra keeps each run's
    cumulative regret: the increments of the second and the last quarter tell a linear
    regret (equal increments) from a sublinear one."""
    return [max(1, rounds * q // 4) for q in (1, 2, 3, 4)]




def add_vts(result, runs, rounds, seed, out, progress=None, n_jobs=1):
    """Run VTS on the ill-conditioned panel (``zeta = 0.1``), on the same runs as the other
    lines (same seed: the same instances, contexts and noise), in resumable chunks (stage
    ``vts``), and record it in ``result["vts_ill_conditioned"]`` (``summary.json`` is
    written again): per run, the final regret, LinTS's on the same run
    (``reference_final_regrets``) and the cumulative regret at :func:`quarter_rounds`
    (``regret_at_quarters``). It stays out of ``results``, ``curves.csv``, the table and the
    figure, which the paper left VTS out of "for the sake of clarity and visibility"; the
    other lines are untouched. Returns the record."""
    import os

    from ...bandit.simulate import SimulationResult
    from .._common import execute_panels, write_json
    from .vts_defaults import VTS_PARAMS, vts_policy

    panel = f"zeta = {VTS_ZETA:g}"
    env = pool(dim=DIM, n_arms=N_ARMS, zeta=VTS_ZETA, reward="linear", seed=seed)
    hyper = {"hyperparameters": dict(VTS_PARAMS)}
    plan, outcome, _ = execute_panels(
        NAME, [(panel, env, [(VTS_EXTRA, [(vts_policy(DIM, N_ARMS), hyper)])], {"zeta": VTS_ZETA})],
        runs, rounds, seed, out, progress, n_jobs=n_jobs, stage="vts")
    o = outcome[(plan[0]["p"], plan[0]["m"])]
    rec = {"panel": panel, "method": VTS_EXTRA, "reference": REFERENCE, **hyper}
    if "blocks" not in o:
        rec["diverged_candidates"] = o["diverged"]
    else:
        b = o["blocks"]
        res = SimulationResult("vts", repr(env), np.concatenate([x["regret"] for x in b]),
                               np.concatenate([x["arms"] for x in b]), np.zeros(0, np.int64),
                               None, float(sum(x["wall_time_s"] for x in b)),
                               bool(b[0]["fused"]), seed)
        cum = res.cumulative_regret
        q = quarter_rounds(rounds)
        rec.update({
            "final_regret_mean": float(cum[:, -1].mean()),
            "final_regrets": cum[:, -1].tolist(),
            "regret_at_quarters": {"rounds": q, "per_run": cum[:, np.subtract(q, 1)].tolist()},
            "wall_time_s": res.wall_time, "us_per_round": 1e6 * res.wall_time / (runs * rounds),
            "warmup_s": o["warmup_s"]})
        ref = next((e for e in result["results"]
                    if e["panel"] == panel and e["method"] == REFERENCE), None)
        if ref is not None and "final_regrets" in ref:
            rec["reference_final_regrets"] = list(ref["final_regrets"])
    result["vts_ill_conditioned"] = rec
    write_json(os.path.join(out, "summary.json"), result)
    return rec
