"""Every method against the best one of its environment, paired over runs.

All methods of an environment meet the same runs (the runner seeds run ``r`` identically
for every policy: the same instance, contexts and reward noise), so the per-run
difference of a method's final regret and the best method's removes the environment's
share of the variance (:mod:`vits_ref.experiments._paired`). The best is the method with
the lowest mean final regret on these runs; it is chosen on the same runs that measure the
differences, so the comparison is conditional on that choice: an interval above 0 says
that the method is detectably worse than the best on these runs, an interval containing
0 that it is not (the methods tied with the best). Each interval is at its own 95%
level, without a correction for the number of methods.
"""

import numpy as np

from .._paired import compare

__all__ = ["best_method", "versus_best"]


def best_method(entries, key="final_regrets"):
    """The label of the entry with the lowest mean of ``key`` (the first on a tie), or None
    if no entry has values.

    Examples
    --------
    >>> best_method([{"method": "a", "final_regrets": [3.0, 5.0]},
    ...              {"method": "b", "final_regrets": [2.0, 4.0]}])
    'b'
    """
    ran = [e for e in entries if e.get(key) is not None and len(e[key])]
    if not ran:
        return None
    means = [float(np.mean(e[key])) for e in ran]
    return ran[int(np.argmin(means))]["method"]


def versus_best(entries, key="final_regrets", confidence=0.95):
    """``(best, {method: paired difference method - best})`` for one environment's entries.

    ``entries``: dicts with ``method`` and the per-run values ``key`` (the same runs, in
    the same order, for every entry). The differences are those of
    :func:`vits_ref.experiments._paired.paired_difference` (mean, paired t interval, BCa
    bootstrap interval, p-value, verdict ``"higher"``: detectably worse than the best, or
    ``"no difference detected"``); the best itself is left out.

    Examples
    --------
    >>> best, diffs = versus_best([{"method": "a", "final_regrets": [3.0, 5.0, 4.0]},
    ...                            {"method": "b", "final_regrets": [2.0, 4.0, 3.5]}])
    >>> best, round(diffs["a"]["mean"], 3)
    ('b', 0.833)
    """
    best = best_method(entries, key)
    if best is None:
        return None, {}
    return best, compare([e for e in entries if e.get(key) is not None], best, key,
                         confidence)
