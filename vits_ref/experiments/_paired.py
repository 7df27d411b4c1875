"""Paired comparisons of two methods run on the same seeds (common random numbers).

Every method of a panel meets the same contexts, reward noise and problem instances run
by run (:func:`vits_ref.bandit.simulate` seeds run ``r`` identically for every policy), so the
per-run difference of two methods' final regrets removes the environment's share of the
variance: its interval is far narrower than the two marginal standard errors suggest.
The statistics are SciPy's: the paired t interval (``scipy.stats.ttest_1samp`` on the
differences, which is ``scipy.stats.ttest_rel``) and a BCa bootstrap interval
(``scipy.stats.bootstrap(..., paired=True)``), the second as a check that does not assume
normal differences.
"""

import math
import warnings

import numpy as np

#: Verdict words of :func:`compare`.
LOWER, HIGHER, NO_DIFFERENCE = "lower", "higher", "no difference detected"


def paired_difference(x, y, confidence=0.95, n_resamples=9999, seed=0):
    """Mean of ``x - y`` over paired runs with a t and a bootstrap interval.

    Parameters
    ----------
    x, y : (n,) array_like
        The same runs' values (e.g. final cumulative regrets) of two methods.
    confidence : float, default 0.95
    n_resamples : int, default 9999
        Bootstrap resamples.
    seed : int, default 0
        Seed of the bootstrap (the intervals are reproducible).

    Returns
    -------
    dict
        ``n``, ``mean`` (of ``x - y``), ``stderr``, ``ci`` (t interval ``[low, high]``),
        ``ci_bootstrap`` (BCa), ``p_value`` (two-sided paired t-test), ``relative``
        (``mean / mean(y)``), ``confidence``, ``verdict`` (:data:`LOWER` if the t interval
        lies below 0, :data:`HIGHER` above, :data:`NO_DIFFERENCE` if it contains 0).
        With fewer than 2 runs the intervals are None and the verdict is None.

    Examples
    --------
    >>> d = paired_difference([3.0, 4.0, 5.5, 6.0], [2.0, 3.5, 4.0, 5.0])
    >>> round(d["mean"], 3), d["verdict"]
    (1.0, 'higher')
    """
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of the same length, got {x.shape} and "
                         f"{y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite")
    d = x - y
    n = d.size
    ref = float(y.mean()) if n else math.nan
    out = {"n": int(n), "mean": float(d.mean()) if n else None, "stderr": None, "ci": None,
           "ci_bootstrap": None, "p_value": None, "confidence": confidence,
           "relative": float(d.mean()) / abs(ref) if n and ref != 0 else None,
           "verdict": None}
    if n < 2:
        return out
    out["stderr"] = float(d.std(ddof=1) / math.sqrt(n))
    if np.ptp(d) == 0.0:  # identical differences: a degenerate, exact interval
        out.update(ci=[float(d[0])] * 2, ci_bootstrap=[float(d[0])] * 2,
                   p_value=1.0 if d[0] == 0 else 0.0)
    else:
        test = stats.ttest_1samp(d, 0.0)
        ci = test.confidence_interval(confidence)
        with warnings.catch_warnings():
            # BCa warns when a resample is degenerate; the interval is still returned
            warnings.simplefilter("ignore")
            boot = stats.bootstrap((x, y), _mean_difference, paired=True,
                                   vectorized=True, confidence_level=confidence,
                                   n_resamples=n_resamples, method="BCa",
                                   **_bootstrap_rng(stats, seed))
        out.update(ci=[float(ci.low), float(ci.high)], p_value=float(test.pvalue),
                   ci_bootstrap=[float(boot.confidence_interval.low),
                                 float(boot.confidence_interval.high)])
    lo, hi = out["ci"]
    out["verdict"] = LOWER if hi < 0 else HIGHER if lo > 0 else NO_DIFFERENCE
    return out


def _bootstrap_rng(stats, seed):
    # SciPy 1.15 renamed ``random_state`` to ``rng``; the generator is the same
    import inspect

    params = inspect.signature(stats.bootstrap).parameters
    key = "rng" if "rng" in params else "random_state"
    return {key: np.random.default_rng(seed)}


def _mean_difference(a, b, axis=-1):
    return np.mean(a - b, axis=axis)


def format_difference(diff, digits=1):
    """``"+3.2 [-1.0, 7.4]"``: the mean difference and its t interval, for tables."""
    if diff is None or diff.get("mean") is None:
        return "n/a"
    if diff["ci"] is None:
        return f"{diff['mean']:+.{digits}f}"
    lo, hi = diff["ci"]
    return f"{diff['mean']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def panel_entries(result, panel):
    """``{method: entry}`` of an experiment summary's panel, for the entries that ran."""
    return {e["method"]: e for e in result["results"]
            if e["panel"] == panel and "final_regrets" in e}


def pair(entries, a, b):
    """Paired difference ``a - b`` of final regrets in :func:`panel_entries`' output
    (None if either did not run)."""
    if a not in entries or b not in entries:
        return None
    return paired_difference(entries[a]["final_regrets"], entries[b]["final_regrets"])


def compare(entries, reference, key="final_regrets", confidence=0.95):
    """Paired differences of every entry against the entry labelled ``reference``.

    ``entries``: result dicts of one panel, each with ``method`` and ``key`` (per-run
    values). Returns ``{method: paired_difference(entry, reference)}`` for every other
    entry that has values; ``{}`` if the reference did not run.
    """
    by_label = {e["method"]: e for e in entries if key in e}
    if reference not in by_label:
        return {}
    ref = by_label[reference][key]
    return {label: paired_difference(e[key], ref, confidence)
            for label, e in by_label.items() if label != reference}
