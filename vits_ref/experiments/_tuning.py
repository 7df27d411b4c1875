"""Grid search of a method's hyperparameters on tuning runs kept apart from the evaluation.

A grid point is scored by the mean final cumulative regret over ``runs`` runs whose seed
is the evaluation seed plus :data:`TUNE_SEED_OFFSET`: the tuning never sees the
evaluation runs' contexts, noise or instances, so the evaluation is not biased towards the
chosen point. A point at which the method diverges (:class:`vits_ref.errors.DivergenceError`)
is left out and reported with the engine's message (round and step size).
"""

import math

from ..errors import DivergenceError

#: Offset of the tuning runs' seed from the evaluation seed.
TUNE_SEED_OFFSET = 10_000
#: The issue's minimum number of tuning runs (20); the experiments default to it.
TUNE_RUNS = 20


def grid_search(make_policy, grid, env, rounds, runs, seed, n_jobs=1, progress=None,
                label="method"):
    """Score every grid point on separate tuning runs; best first.

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
        Worker processes for policies without a fused loop.
    progress : callable or None
        ``progress(message)`` once per point.
    label : str
        Name used in the progress messages.

    Returns
    -------
    ranked : list of dict
        The points that never diverged, by increasing mean final regret.
    scores : list of dict
        Every point in grid order: ``{"point", "final_regret_mean", "final_regret_stderr"}``
        or ``{"point", "diverged": message}``.
    """
    from ..simulate import simulate

    scores = []
    for i, point in enumerate(grid):
        if progress:
            progress(f"tuning {label}: point {i + 1}/{len(grid)} {point}")
        try:
            res = simulate(make_policy(**point), env, n_rounds=rounds, n_runs=runs,
                           seed=seed + TUNE_SEED_OFFSET, new_instance_per_run=True,
                           n_jobs=n_jobs)
        except DivergenceError as err:
            scores.append({"point": point, "diverged": str(err)})
            continue
        final = res.cumulative_regret[:, -1]
        se = float(final.std(ddof=1) / math.sqrt(runs)) if runs > 1 else None
        scores.append({"point": point, "final_regret_mean": float(final.mean()),
                       "final_regret_stderr": se})
    ranked = [s["point"] for s in sorted((s for s in scores if "diverged" not in s),
                                         key=lambda s: s["final_regret_mean"])]
    return ranked, scores


def diverged_points(scores):
    """The grid points left out because the method diverged on them."""
    return [s["point"] for s in scores if "diverged" in s]
