"""Late or batched feedback: when each round's reward is learnt, and what it costs a policy.

:func:`delivery_schedule` says, for a run, in which order and by which round the rewards
are learnt; the fused loop plays it (:func:`vits_ref.kernels.bandit.make_bandit_rounds_late`)
and the Python loop of :func:`vits_ref.simulate` decides the same round by round.

:func:`cost_of_late_feedback` runs :func:`vits_ref.simulate` once per feedback setting with
the same seed, so every setting meets the same realisations and the same policy seeds
(common random numbers), and reports, per setting, the mean over runs of the difference
of the cumulative regret at the horizon against immediate feedback, with a paired
Student-t interval (SciPy's ``ttest_1samp(...).confidence_interval``).
"""

from typing import NamedTuple

import numpy as np

from .. import _validate as val

__all__ = ["cost_of_late_feedback", "delivery_schedule", "drawn_lag", "Schedule"]


class Schedule(NamedTuple):
    """When a run's rewards are learnt (:func:`delivery_schedule`)."""

    #: (n_learnt,) int64: the rounds (0-based) in the order their rewards are learnt
    order: np.ndarray
    #: (T,) int64: the number of rewards learnt by the end of each round
    learnt: np.ndarray
    #: the most rounds between a round and the end of the round its reward is learnt in,
    #: plus one (at least 1): the slots a queue of pending rewards needs
    span: int


def drawn_lag(delay, rng, t):
    """``delay(rng)``, the lag of round ``t`` (0-based), checked: an integer >= 0, or a
    ValueError naming the 1-based round (``True`` is refused, as ``delay=True`` is, not
    taken as 1)."""
    lag = delay(rng)
    if isinstance(lag, (bool, np.bool_)) or not isinstance(lag, (int, np.integer)) or lag < 0:
        raise ValueError(f"delay must draw integers >= 0, got {lag!r} in round {t + 1}")
    return int(lag)


def delivery_schedule(n_rounds, delay=0, batch=1, rng=None):
    """The order in which a run's rewards are learnt, and how many by each round.

    Round ``t``'s reward is due after round ``t + delay_t`` (``delay`` an int >= 0, or
    ``delay(rng)`` drawn for rounds ``0, 1, ...`` in order), and what is due is learnt at
    the end of every ``batch``-th round, in the order of its rounds: round ``t`` is learnt
    at the end of round ``b(t) = batch * ceil((t + delay_t + 1) / batch) - 1``, never if
    ``b(t) >= n_rounds``, and the rewards are learnt in the order of ``(b(t), t)``. This is
    what :func:`vits_ref.simulate`'s Python loop does round by round.

    Parameters
    ----------
    n_rounds : int
    delay : int or callable, default 0
        As :func:`vits_ref.simulate` takes it.
    batch : int, default 1
    rng : numpy.random.Generator or None
        The Generator a callable ``delay`` draws from
        (:func:`vits_ref._seeding.delay_rng` of the run's seed).

    Returns
    -------
    Schedule

    Raises
    ------
    ValueError
        A ``delay`` that draws anything but an integer >= 0 (``True`` included), naming
        the 1-based round, as the Python loop does.

    Examples
    --------
    >>> s = delivery_schedule(6, delay=1, batch=2)
    >>> s.order.tolist(), s.learnt.tolist(), s.span
    ([0, 1, 2, 3, 4], [0, 1, 1, 3, 3, 5], 3)
    """
    T = val.positive_int(n_rounds, "n_rounds")
    batch = val.positive_int(batch, "batch")
    if callable(delay):
        # any lag of T or more is never learnt
        lags = np.array([min(drawn_lag(delay, rng, t), T) for t in range(T)], dtype=np.int64)
    else:
        lags = np.full(T, min(val.positive_int(delay, "delay", minimum=0), T),
                       dtype=np.int64)
    rounds = np.arange(T, dtype=np.int64)
    learnt_at = -(-(rounds + lags + 1) // batch) * batch - 1
    order = np.argsort(learnt_at, kind="stable")  # by (learnt_at, round): stable
    order = order[learnt_at[order] < T].astype(np.int64)
    learnt = np.searchsorted(learnt_at[order], rounds, side="right").astype(np.int64)
    span = int((learnt_at[order] - order).max()) + 1 if order.size else 1
    return Schedule(order, learnt, span)


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
