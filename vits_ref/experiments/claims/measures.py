"""How a claim's quantity is read from an experiment's JSON summary, as an
:class:`~vits_ref.experiments.claims.judging.Interval`.

Each measure is a small frozen record (declarative: the claim table lists them) with a
``comparison`` text and ``measure(result)``, which returns the interval or, when the summary
does not hold the quantity (a method that did not run or diverged, a panel left out), a
string saying why. The intervals are SciPy's:

- :class:`PairedMean`: the paired t interval of the mean of ``a - b`` over runs that share
  their random numbers (``scipy.stats.ttest_1samp`` on the differences, which is
  ``scipy.stats.ttest_rel``);
- :class:`PairedStatistic`: a paired BCa bootstrap interval (``scipy.stats.bootstrap(...,
  paired=True)``) of a statistic of the two methods' runs that is not a mean difference
  (the relative reduction ``1 - mean(a)/mean(b)``, the ratio of standard deviations);
- :class:`MeanOf`: a one-sample t interval of per-run values;
- :class:`TimeRatio`: a ratio of two point timings, which has no interval (never
  conclusive; recorded so that the claim is listed with what was measured).
"""

import dataclasses
import math
import warnings

import numpy as np

from .._paired import _bootstrap_rng
from .judging import CONFIDENCE, Interval

#: Bootstrap resamples and seed (the intervals are reproducible).
N_RESAMPLES, BOOTSTRAP_SEED = 9999, 0


def t_interval(values, scale=1.0, method="paired t", confidence=CONFIDENCE):
    """Mean of ``values`` with its t interval (``scipy.stats.ttest_1samp``).

    Parameters
    ----------
    values : (n,) array_like
        Finite per-run values (e.g. paired differences).
    scale : float
        Stored as the interval's ``scale`` (what a relative margin is a fraction of).

    Returns
    -------
    Interval or str
        A string (why not) with fewer than 2 runs. Identical values give the degenerate
        interval ``[v, v]``.
    """
    from scipy import stats

    d = np.asarray(values, dtype=float)
    if d.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {d.shape}")
    if not np.isfinite(d).all():
        raise ValueError("values must be finite")
    if d.size < 2:
        return f"{d.size} run(s): an interval needs 2 at least"
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return Interval(float(d[0]), float(d[0]), float(d[0]), int(d.size), 0.0, scale, method)
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence)
    return Interval(float(d.mean()), float(ci.low), float(ci.high), int(d.size), sd, scale,
                    method)


def _lookup(result, path):
    obj = result
    for key in path:
        try:
            obj = obj[key]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def _entry_values(result, panel, method, key):
    """Per-run values ``key`` (a key or a path of keys) of ``method`` in ``panel``, or the
    reason they are missing."""
    entries = [e for e in result.get("results", ())
               if e.get("panel") == panel and e.get("method") == method]
    if not entries:
        return f"{method} did not run in {panel}"
    got = _lookup(entries[0], key if isinstance(key, tuple) else (key,))
    if got is None:
        return f"{method} has no per-run values in {panel} (diverged or not recorded)"
    return np.asarray(got, dtype=float)


@dataclasses.dataclass(frozen=True)
class PairedMean:
    """Mean over runs of ``a - b`` (method ``a`` minus method ``b`` in ``panel``), paired
    t interval; ``scale`` is ``|mean(b)|``."""

    panel: str
    a: str
    b: str
    key: object = "final_regrets"

    @property
    def comparison(self):
        return f"{self.a} - {self.b} ({self.panel})"

    def measure(self, result):
        x = _entry_values(result, self.panel, self.a, self.key)
        y = _entry_values(result, self.panel, self.b, self.key)
        for v in (x, y):
            if isinstance(v, str):
                return v
        if x.shape != y.shape:
            return f"{self.a} and {self.b} ran on different runs ({x.size} and {y.size})"
        scale = abs(float(y.mean())) if y.size else 1.0
        return t_interval(x - y, scale=scale or 1.0)


def reduction(a, b, axis=-1):
    """``1 - mean(a) / mean(b)``: the relative cut of ``b``'s mean by ``a``."""
    return 1.0 - np.mean(a, axis=axis) / np.mean(b, axis=axis)


def sd_ratio(a, b, axis=-1):
    """``sd(a) / sd(b)`` (``ddof = 1``)."""
    return np.std(a, axis=axis, ddof=1) / np.std(b, axis=axis, ddof=1)


#: The statistics :class:`PairedStatistic` knows, by name.
STATISTICS = {"reduction": reduction, "sd ratio": sd_ratio}


@dataclasses.dataclass(frozen=True)
class PairedStatistic:
    """A statistic of two methods' paired runs (:data:`STATISTICS`: ``"reduction"`` is
    ``1 - mean(a)/mean(b)``, ``"sd ratio"`` is ``sd(a)/sd(b)``) with a paired BCa bootstrap
    interval (runs resampled together); ``sd`` is the bootstrap standard error times
    ``sqrt(n)``, ``scale`` 1."""

    panel: str
    a: str
    b: str
    statistic: str
    key: object = "final_regrets"

    def __post_init__(self):
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {tuple(STATISTICS)}, "
                             f"got {self.statistic!r}")

    @property
    def comparison(self):
        return f"{self.statistic} of {self.a} against {self.b} ({self.panel})"

    def measure(self, result):
        from scipy import stats

        x = _entry_values(result, self.panel, self.a, self.key)
        y = _entry_values(result, self.panel, self.b, self.key)
        for v in (x, y):
            if isinstance(v, str):
                return v
        if x.shape != y.shape:
            return f"{self.a} and {self.b} ran on different runs ({x.size} and {y.size})"
        if x.size < 3:
            return f"{x.size} run(s): a bootstrap interval needs 3 at least"
        fn = STATISTICS[self.statistic]
        est = float(fn(x, y))
        if not math.isfinite(est):
            return f"the {self.statistic} is undefined (a constant run)"
        with warnings.catch_warnings():
            # BCa warns when a resample is degenerate; the interval is still returned
            warnings.simplefilter("ignore")
            boot = stats.bootstrap((x, y), fn, paired=True, vectorized=True,
                                   confidence_level=CONFIDENCE, n_resamples=N_RESAMPLES,
                                   method="BCa", **_bootstrap_rng(stats, BOOTSTRAP_SEED))
        lo, hi = boot.confidence_interval
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return f"the bootstrap interval of the {self.statistic} is undefined"
        return Interval(est, float(lo), float(hi), int(x.size),
                        float(boot.standard_error) * math.sqrt(x.size), 1.0,
                        "paired BCa bootstrap")


@dataclasses.dataclass(frozen=True)
class MeanOf:
    """Mean of the per-run values at ``path`` in the summary (a tuple of keys), one-sample
    t interval."""

    path: tuple
    what: str

    @property
    def comparison(self):
        return self.what

    def measure(self, result):
        got = _lookup(result, self.path)
        if got is None:
            return f"not in the summary: {' / '.join(map(str, self.path))}"
        return t_interval(np.asarray(got, dtype=float), method="t")


@dataclasses.dataclass(frozen=True)
class TimeRatio:
    """``result[key][a] / result[key][b]``: two point timings (e.g. medians of warm
    rounds); no interval, so never conclusive."""

    a: str
    b: str
    key: str = "us_per_round_warm"

    @property
    def comparison(self):
        return f"time per round, {self.a} / {self.b}"

    def measure(self, result):
        ta, tb = _lookup(result, (self.key, self.a)), _lookup(result, (self.key, self.b))
        if ta is None or tb is None or not tb > 0:
            return f"no timing of {self.a} or {self.b}"
        return Interval(float(ta) / float(tb), None, None, 1, None, 1.0,
                        "one median timing each, no spread")
