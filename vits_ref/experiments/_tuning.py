"""Grid search of a method's hyperparameters on tuning runs kept apart from the evaluation.

A grid point is scored by the mean final cumulative regret over ``runs`` runs whose seed
is the evaluation seed plus :data:`TUNE_SEED_OFFSET`: the tuning never sees the
evaluation runs' contexts, noise or instances, so the evaluation is not biased towards the
chosen point. A point at which the method diverges (:class:`vits_ref.errors.DivergenceError`)
is left out and reported with the engine's message (round and step size).
"""

import math

import numpy as np

#: Offset of the tuning runs' seed from the evaluation seed.
TUNE_SEED_OFFSET = 10_000
#: The minimum number of tuning runs (20); the experiments default to it.
TUNE_RUNS = 20


def grid_search(make_policy, grid, env, rounds, runs, seed, n_jobs=1, progress=None,
                label="method", out=None):
    """Score every grid point on separate tuning runs; best first.

    The points run as resumable chunks (:mod:`vits_ref.experiments._chunks`): with
    ``out``, each point's blocks of runs are stored in ``out/chunks/tune-LABEL/`` and
    reused when the same search is run again.

    Parameters
    ----------
    make_policy : callable
        ``make_policy(**point) -> policy``.
    grid : list of dict
        The points (keyword dicts).
    env : Environment
    rounds, runs : int
        Horizon and number of tuning runs (each on a new instance).
    seed : int
        The evaluation seed; the tuning runs use ``seed + TUNE_SEED_OFFSET``.
    n_jobs : int
        Worker processes for the chunks when the session has no executor.
    progress : callable or None
        ``progress(message)`` for status lines.
    label : str
        Name used in the progress messages and the chunk folder.
    out : str or None
        The experiment's output folder (None: nothing stored).

    Returns
    -------
    ranked : list of dict
        The points that never diverged, by increasing mean final regret.
    scores : list of dict
        Every point in grid order: ``{"point", "final_regret_mean", "final_regret_stderr"}``
        or ``{"point", "diverged": message}``.
    """
    from ._chunks import slug
    from ._common import execute_panels

    grid = list(grid)
    if progress:
        progress(f"tuning {label}: {len(grid)} points x {runs} runs x {rounds} rounds")
    methods = [(f"point {i}", [(make_policy(**point), {"point": point})])
               for i, point in enumerate(grid)]
    plan, outcome, _ = execute_panels(None, [(label, env, methods, {})], runs, rounds,
                                      seed + TUNE_SEED_OFFSET, out, progress, n_jobs=n_jobs,
                                      stage=f"tune-{slug(label)}")
    scores = []
    for e in plan:
        o, point = outcome[(e["p"], e["m"])], grid[e["m"]]
        if "blocks" not in o:
            scores.append({"point": point, "diverged": o["diverged"][0]["diverged"]})
            continue
        final = np.cumsum(np.concatenate([b["regret"] for b in o["blocks"]]), axis=1)[:, -1]
        se = float(final.std(ddof=1) / math.sqrt(runs)) if runs > 1 else None
        scores.append({"point": point, "final_regret_mean": float(final.mean()),
                       "final_regret_stderr": se})
    ranked = [s["point"] for s in sorted((s for s in scores if "diverged" not in s),
                                         key=lambda s: s["final_regret_mean"])]
    return ranked, scores


def diverged_points(scores):
    """The grid points left out because the method diverged on them."""
    return [s["point"] for s in scores if "diverged" in s]
