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
- :class:`PairedAt`: the paired t interval of ``a - b`` for per-run values kept anywhere in
  the summary (two paths of keys), e.g. per-run shares of pulls or per-run energies;
- :class:`MeanOf`: a one-sample t interval of per-run values;
- :class:`TimeRatio`: a ratio of two methods' timings. Repeated timings (a list per method)
  get Welch's t interval of the difference of mean log-times, exponentiated (a ratio of
  geometric means); a single timing has no interval and is never conclusive.
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


def _values_at(result, path):
    got = _lookup(result, path)
    if got is None:
        return f"not in the summary: {' / '.join(map(str, path))}"
    return np.asarray(got, dtype=float)


@dataclasses.dataclass(frozen=True)
class PairedAt:
    """Mean over runs of ``a - b``, the per-run values at the summary paths ``a`` and ``b``
    (tuples of keys) of two methods that shared their runs, paired t interval; ``scale`` is
    ``|mean(b)|``. ``what`` names the comparison (``"LMC-TS - VITS-I (linear rewards)"``)."""

    a: tuple
    b: tuple
    what: str

    @property
    def comparison(self):
        return self.what

    def measure(self, result):
        x, y = _values_at(result, self.a), _values_at(result, self.b)
        for v in (x, y):
            if isinstance(v, str):
                return v
        if x.shape != y.shape or x.ndim != 1:
            return f"the two sides ran on different runs ({x.shape} and {y.shape})"
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            return "a run has no finite value (diverged)"
        scale = abs(float(y.mean())) if y.size else 1.0
        return t_interval(x - y, scale=scale or 1.0)


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
    """Time of method ``a`` over time of method ``b``, read at ``result[key][a]`` and
    ``result[key][b]``.

    Each side is one timing (a number) or repeated timings (a list). Repeated timings on
    both sides give the ratio of geometric means, ``exp(mean log t_a - mean log t_b)``, with
    Welch's t interval of the difference of mean log-times exponentiated (timings are
    positive and skewed: a log scale makes the ratio's interval symmetric in ``a`` and ``b``);
    ``sd`` is the per-repeat spread of the log-time difference, ``sqrt(n) se``. A single
    timing on either side has no spread: the ratio is recorded without an interval, never
    conclusive.
    """

    a: str
    b: str
    key: str = "us_per_round_warm"

    @property
    def comparison(self):
        return f"time per round, {self.a} / {self.b}"

    def measure(self, result):
        from scipy import stats

        ta, tb = _lookup(result, (self.key, self.a)), _lookup(result, (self.key, self.b))
        if ta is None or tb is None:
            return f"no timing of {self.a} or {self.b}"
        ta, tb = np.atleast_1d(np.asarray(ta, float)), np.atleast_1d(np.asarray(tb, float))
        if not ((ta > 0).all() and (tb > 0).all() and np.isfinite(ta).all()
                and np.isfinite(tb).all()):
            return f"a timing of {self.a} or {self.b} is not a positive number"
        la, lb = np.log(ta), np.log(tb)
        ratio = (float(ta[0] / tb[0]) if ta.size == tb.size == 1
                 else float(np.exp(la.mean() - lb.mean())))
        if ta.size < 2 or tb.size < 2:
            return Interval(ratio, None, None, int(min(ta.size, tb.size)), None, 1.0,
                            "one timing per method, no spread")
        if la.std() == 0.0 and lb.std() == 0.0:
            return Interval(ratio, ratio, ratio, int(min(ta.size, tb.size)), 0.0, 1.0,
                            "repeated timings, Welch t on log-times")
        res = stats.ttest_ind(la, lb, equal_var=False)
        ci = res.confidence_interval(CONFIDENCE)
        n = int(min(ta.size, tb.size))
        se = math.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
        # the interval is on the log scale; runs_needed scales the spread of the log-ratio,
        # so it is given in ratio units at the estimate (delta method, d exp(x) = exp(x) dx)
        return Interval(ratio, float(np.exp(ci.low)), float(np.exp(ci.high)), n,
                        ratio * se * math.sqrt(n), 1.0,
                        "repeated timings, Welch t on log-times")
