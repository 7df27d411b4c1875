"""Late or batched feedback: when each round's reward is learnt, and what it costs a policy.

:func:`vits_ref.bandit.delivery.delivery_schedule` says, for a run, in which order and by
which round the rewards are learnt (re-exported here); the fused loop plays it
(:func:`vits_ref.kernels.bandit.make_bandit_rounds_late`) and the Python loop of
:func:`vits_ref.simulate` decides the same round by round.

:func:`cost_of_late_feedback` runs :func:`vits_ref.simulate` once per feedback setting with
the same seed, so every setting meets the same realisations and the same policy seeds
(common random numbers), and reports, per setting, the mean over runs of the difference
of the cumulative regret at the horizon against immediate feedback, with a paired
Student-t interval (SciPy's ``ttest_1samp(...).confidence_interval``).
"""

import numpy as np

from .. import _validate as val
from .delivery import Schedule, delivery_schedule, drawn_lag

__all__ = ["cost_of_late_feedback", "delivery_schedule", "drawn_lag", "Schedule"]


def cost_of_late_feedback(policy, env, settings, n_rounds, n_runs, seed=0, level=0.95,
                          **options):
    """Cumulative regret at the horizon under each ``(delay, batch)`` of ``settings``,
    paired against immediate feedback.

    Parameters
    ----------
    policy : str or policy object
    env : Environment
    settings : sequence of (delay, batch)
        ``delay`` and ``batch`` as :func:`vits_ref.simulate` takes them.
    n_rounds, n_runs : int
        ``n_runs >= 2`` (an interval needs two).
    seed : int or SeedSequence
    level : float, default 0.95
        Confidence level of the intervals.
    **options
        More arguments of :func:`vits_ref.simulate` (``n_jobs``, ``new_instance_per_run``).

    Returns
    -------
    list of dict
        One per setting, in order, after the immediate feedback's row (``delay=0,
        batch=1``): ``delay``, ``batch``, ``regret`` (mean cumulative regret at the
        horizon), ``diff`` (mean paired difference against immediate feedback, 0 for its
        own row), ``ci`` (the ``level`` interval of ``diff``), ``runs``.

    Examples
    --------
    >>> import vits_ref as vr
    >>> from vits_ref.bandit.feedback import cost_of_late_feedback
    >>> rows = cost_of_late_feedback("lints", vr.envs.pool(3, 4, seed=0), [(5, 1)], 30, 4)
    >>> [(r["delay"], r["batch"]) for r in rows]
    [(0, 1), (5, 1)]
    """
    from scipy import stats

    from .simulate import simulate

    n_runs = val.positive_int(n_runs, "n_runs", minimum=2)
    level = val.positive_float(level, "level")
    if not level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    settings = [(d, b) for d, b in settings]
    base = simulate(policy, env, n_rounds, n_runs, seed=seed, **options)
    ref = base.cumulative_regret[:, -1]
    rows = [{"delay": 0, "batch": 1, "regret": float(ref.mean()), "diff": 0.0,
             "ci": (0.0, 0.0), "runs": n_runs}]
    for delay, batch in settings:
        res = simulate(policy, env, n_rounds, n_runs, seed=seed, delay=delay, batch=batch,
                       **options)
        diff = res.cumulative_regret[:, -1] - ref
        if np.ptp(diff) == 0:  # no spread: the interval is the point
            ci = (float(diff[0]), float(diff[0]))
        else:
            lo, hi = stats.ttest_1samp(diff, 0.0).confidence_interval(level)
            ci = (float(lo), float(hi))
        rows.append({"delay": delay, "batch": batch,
                     "regret": float(res.cumulative_regret[:, -1].mean()),
                     "diff": float(diff.mean()), "ci": ci, "runs": n_runs})
    return rows
