"""Repeated, interleaved timings of warm rounds, for the report's timing claims.

A timing claim ("faster", "the same running time") is judged on a ratio of two methods'
times with an interval (:class:`vits_ref.experiments.claims.measures.RepeatedTimeRatio`):
each method is timed several times, the methods' calls interleaved so that the shared
machine's drift hits all alike and repeat ``r`` of every method forms a pair.
"""

from .._bench.timing import interleaved_times
from .._threads import numba_threads

#: Interleaved repeats of :func:`warm_round_repeats` (the timing claims' spread).
REPEATS = 10
#: Rounds per timed call (at most the experiment's rounds).
ROUNDS = 100


def warm_round_repeats(methods, env, rounds=ROUNDS, repeats=REPEATS, seed=0):
    """Warm seconds per round of each policy on ``env``, one thread, ``repeats`` times.

    Each timed call is :func:`vits_ref.bandit.simulate` of one run of ``rounds`` rounds on
    the same seed (the same instance, contexts and noise for every policy); one call of
    each compiles and warms before the timing, and the calls are interleaved
    (:func:`vits_ref._bench.timing.interleaved_times`). The runs' own wall times include
    the first call's compilation and the other lines' processes: these do not.

    Parameters
    ----------
    methods : sequence of (label, policy)
        Policy objects (specifications: every call starts from the prior).
    env : Environment
    rounds, repeats : int
        Rounds per call (>= 1) and calls per policy (>= 1).
    seed : int

    Returns
    -------
    dict
        ``{label: [seconds per round of each repeat]}``.
    """
    from ..bandit.simulate import simulate

    for name, v in (("rounds", rounds), ("repeats", repeats)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    fns = [lambda p=policy: simulate(p, env, rounds, 1, seed=seed, new_instance_per_run=True)
           for _, policy in methods]
    with numba_threads(1):
        for fn in fns:
            fn()
        times = interleaved_times(fns, repeats)
    return {label: [t / rounds for t in ts]
            for (label, _), ts in zip(methods, times, strict=True)}
