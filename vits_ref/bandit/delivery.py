"""When late or batched feedback is learnt: a run's delivery schedule.

:func:`vits_ref.simulate` with ``delay=`` or ``batch=`` learns round ``t``'s reward after
round ``t + delay_t``, at the end of every ``batch``-th round. :func:`delivery_schedule`
computes, before a run, the order in which its rewards are learnt and how many by each
round, which the fused loop plays (:func:`vits_ref.kernels.bandit.make_bandit_rounds_late`);
the Python loop decides the same round by round, with :func:`drawn_lag` checking each drawn
delay. What the delays cost a policy: :mod:`vits_ref.bandit.feedback`.
"""

from typing import NamedTuple

import numpy as np

from .. import _validate as val

__all__ = ["delivery_schedule", "drawn_lag", "Schedule"]


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
