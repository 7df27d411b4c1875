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
- :class:`PairedOver`: the paired t interval of ``a - b`` (optionally relative to ``b``'s
  mean in each cell) pooled over the cells of a study (e.g. the condition numbers of a
  sweep), whose runs are independent from cell to cell;
- :class:`Trend`: how a per-run count grows along a sweep (the rise of its least-squares
  line, the sag of a parabola), with a bootstrap interval that resamples the runs of each
  cell independently;
- :class:`MeanOf`: a one-sample t interval of per-run values;
- :class:`Computed`: a deterministic computed value (no sampling spread: the interval is
  the point), or an interval the experiment computed itself (a Monte Carlo mean's);
- :class:`CostCount`: a ratio of cost counts (flops) of the papers' algorithms as written
  (:mod:`vits_ref.experiments.claims.costs`), exact: its interval is the point;
- :class:`TimeToLevel`: the ratio of two methods' computing times to bring a curve to a level
  (steps times cost per step), with the interval of the cost ratio (as :class:`TimeRatio`);
- :class:`TimeRatio`: a ratio of two methods' timings. Repeated timings (a list per method)
  get Welch's t interval of the difference of mean log-times, exponentiated (a ratio of
  geometric means); a single timing has no interval and is never conclusive;
- :class:`RepeatedRatio`: the same ratio and interval for any positive repeated values (a
  two-sample statistic against its noise floor);
- :class:`TrendAt`: :class:`Trend` of repeated values kept as ``{x: [repeats]}`` (repeated
  timings against a size);
- :class:`EntryTimeRatioPer`: :class:`EntryTimeRatio` divided by a number of the summary;
- :class:`RepeatedTimeRatio`: a ratio of two timings repeated and interleaved (repeat ``r``
  of both sides back to back, paired): the geometric mean of the per-repeat ratios, the
  paired t interval of their logarithms exponentiated, and the repeats' range
  (:func:`paired_time_ratio`); any two timings of a summary (two methods, or one method at
  two sizes with a ``factor``);
- :class:`LateSlope`: a method's mean regret increment over the last quarter of the rounds
  over that of the second quarter (1 for a linear regret), paired BCa bootstrap.
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
    """Per-run values ``key`` (a key or a path of keys) of ``method`` in ``panel`` (None: in
    whichever panel it ran, for a summary of one panel), or the reason they are missing."""
    entries = [e for e in result.get("results", ())
               if (panel is None or e.get("panel") == panel) and e.get("method") == method]
    if not entries:
        return f"{method} did not run in {panel}"
    got = _lookup(entries[0], key if isinstance(key, tuple) else (key,))
    if got is None:
        return f"{method} has no per-run values in {panel} (diverged or not recorded)"
    return np.asarray(got, dtype=float)


def _paired_values(result, panel, a, b, key):
    """Methods ``a`` and ``b``'s per-run values (``key``) in ``panel``, as ``(x, y)`` of one
    shape (the same runs), or why not (a str)."""
    x = _entry_values(result, panel, a, key)
    y = _entry_values(result, panel, b, key)
    for v in (x, y):
        if isinstance(v, str):
            return v
    if x.shape != y.shape:
        return f"{a} and {b} ran on different runs ({x.size} and {y.size})"
    return x, y


@dataclasses.dataclass(frozen=True)
class PairedMean:
    """Mean over runs of ``a - b`` (method ``a`` minus method ``b`` in ``panel``; None for a
    summary of one panel, whatever its name), paired t interval; ``scale`` is
    ``|mean(b)|``."""

    panel: str | None
    a: str
    b: str
    key: object = "final_regrets"

    @property
    def comparison(self):
        return f"{self.a} - {self.b}" + (f" ({self.panel})" if self.panel else "")

    def measure(self, result):
        pair = _paired_values(result, self.panel, self.a, self.b, self.key)
        if isinstance(pair, str):
            return pair
        x, y = pair
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

        pair = _paired_values(result, self.panel, self.a, self.b, self.key)
        if isinstance(pair, str):
            return pair
        x, y = pair
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


def _two_values_at(result, a, b):
    """``(x, y)``: the values at the summary paths ``a`` and ``b``, or the string saying
    which is missing."""
    x, y = _values_at(result, a), _values_at(result, b)
    return next((v for v in (x, y) if isinstance(v, str)), (x, y))


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
        got = _two_values_at(result, self.a, self.b)
        if isinstance(got, str):
            return got
        x, y = got
        if x.shape != y.shape or x.ndim != 1:
            return f"the two sides ran on different runs ({x.shape} and {y.shape})"
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            return "a run has no finite value (diverged)"
        scale = abs(float(y.mean())) if y.size else 1.0
        return t_interval(x - y, scale=scale or 1.0)


def _cells(result, method, fixed, over, key, uncensored=None):
    """``{over value: per-run values}`` of ``method``'s entries matching ``fixed`` (pairs of
    field and value); with ``uncensored`` (a field of per-run booleans), cells with a
    censored run are left out."""
    out = {}
    for e in result.get("results", ()):
        if e.get("method") != method or any(e.get(f) != v for f, v in fixed):
            continue
        if key not in e or over not in e:
            continue
        if uncensored is not None and not all(e.get(uncensored, ())):
            continue
        out[e[over]] = np.asarray(e[key], dtype=float)
    return out


def _fixed_text(fixed):
    return ", ".join(f"{f} = {v:g}" if isinstance(v, float) else f"{f} = {v}"
                     for f, v in fixed)


@dataclasses.dataclass(frozen=True)
class PairedOver:
    """Mean of the per-run ``a - b`` of ``key`` pooled over the cells ``over`` (e.g. every
    condition number) of the entries matching ``fixed``; with ``relative``, each cell's
    differences are divided by ``b``'s mean in that cell first (cells on different scales
    weigh alike), and the interval is in units of ``b``'s mean. Paired t interval over all
    the runs of all the cells (independent from cell to cell); ``scale`` 1."""

    a: str
    b: str
    fixed: tuple
    over: str = "kappa"
    key: str = "steps"
    relative: bool = True

    @property
    def comparison(self):
        rel = ", relative to " + self.b + "'s mean per cell" if self.relative else ""
        return (f"{self.a} - {self.b} ({_fixed_text(self.fixed)}, pooled over every "
                f"{self.over}{rel})")

    def measure(self, result):
        x = _cells(result, self.a, self.fixed, self.over, self.key)
        y = _cells(result, self.b, self.fixed, self.over, self.key)
        both = [k for k in x if k in y]
        if not both:
            return f"{self.a} or {self.b} not run at {_fixed_text(self.fixed)}"
        d = []
        for k in both:
            if x[k].shape != y[k].shape:
                return f"{self.a} and {self.b} ran on different runs at {self.over} {k}"
            ref = float(y[k].mean())
            if self.relative and not ref > 0:
                return f"{self.b}'s mean is not positive at {self.over} {k}"
            d.append((x[k] - y[k]) / ref if self.relative else x[k] - y[k])
        return t_interval(np.concatenate(d))


def _trend(kind, xs, *cells, axis=-1):
    """The trend of the cells' means against ``xs``, relative to their mean: ``"rise"``, the
    least-squares line's rise over the range of ``xs``; ``"sag"``, the height of the
    least-squares parabola's arc above (or below) its chord, ``b2 (x_max - x_min)^2 / 4``
    (0 for a line)."""
    m = np.stack([np.mean(c, axis=axis) for c in cells], axis=-1)  # (..., n_cells)
    x = np.asarray(xs, dtype=float)
    span = x.max() - x.min()
    deg = 1 if kind == "rise" else 2
    V = np.vander(x, deg + 1)  # columns x^deg, ..., 1
    coef = np.linalg.lstsq(V, m.reshape(-1, x.size).T, rcond=None)[0]  # (deg + 1, M)
    lead = coef[0].reshape(m.shape[:-1])
    mean = m.mean(axis=-1)
    return lead * span / mean if kind == "rise" else -lead * span ** 2 / 4 / mean


@dataclasses.dataclass(frozen=True)
class Trend:
    """How ``method``'s mean per-run ``key`` grows along ``over`` (entries matching
    ``fixed``), relative to its mean over the cells: ``"rise"`` (the least-squares line's
    rise over the range, > 0 for a count that grows) or ``"sag"`` (the arc of the
    least-squares parabola above its chord, 0 for a line, > 0 for a concave law). Cells with
    a run censored (``uncensored`` False) are left out: a censored count is only a lower
    bound. Bootstrap interval (BCa), the runs of each cell resampled on their own (the cells
    are independent); ``sd`` is the standard error times ``sqrt(runs per cell)``."""

    method: str
    fixed: tuple
    kind: str
    over: str = "kappa"
    key: str = "steps"
    uncensored: str | None = "reached"
    min_cells: int = 3

    def __post_init__(self):
        if self.kind not in ("rise", "sag"):
            raise ValueError(f"kind must be 'rise' or 'sag', got {self.kind!r}")

    @property
    def comparison(self):
        return (f"{self.kind} of {self.method}'s mean {self.key} along {self.over} "
                f"({_fixed_text(self.fixed)}), relative to its mean")

    def measure(self, result):
        cells = _cells(result, self.method, self.fixed, self.over, self.key, self.uncensored)
        if len(cells) < self.min_cells:
            return (f"{len(cells)} {self.over} value(s) of {self.method} without a censored "
                    f"run at {_fixed_text(self.fixed)}: a trend needs {self.min_cells}")
        return trend_interval(self.kind, cells)


#: How :func:`trend_interval` centres a cell: its mean, or its geometric mean (positive
#: values such as timings, whose rare slow repeats move a mean far more than their share).
CENTRES = ("mean", "geometric")


def trend_interval(kind, cells, centre="mean"):
    """The trend (:func:`_trend`, ``kind`` ``"rise"`` or ``"sag"``) of the cells' means (or
    geometric means, ``centre``) against their keys, ``cells`` a dict ``{x: per-run
    values}``, with a stratified BCa bootstrap interval (each cell's runs resampled on their
    own: the cells are independent); ``sd`` is the standard error times ``sqrt(runs per
    cell)``. A string says why not, when a cell has fewer than 3 runs (or, for the
    geometric mean, a value is not positive)."""
    from scipy import stats

    if centre not in CENTRES:
        raise ValueError(f"centre must be one of {CENTRES}, got {centre!r}")
    xs = sorted(cells)
    data = tuple(np.asarray(cells[k], dtype=float) for k in xs)
    if min(c.size for c in data) < 3:
        return "fewer than 3 runs per cell: a bootstrap interval needs 3 at least"
    if centre == "geometric" and not all((c > 0).all() for c in data):
        return "a value is not positive: no geometric mean"

    def stat(*c, axis=-1):
        if centre == "geometric":
            # a cell's geometric mean as a cell of one value, whose mean _trend takes
            c = [np.exp(np.mean(np.log(v), axis=axis, keepdims=True)) for v in c]
        return _trend(kind, xs, *c, axis=axis)

    est = float(stat(*data))
    if all(np.ptp(c) == 0 for c in data):
        return Interval(est, est, est, int(min(c.size for c in data)), 0.0, 1.0,
                        "constant runs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = stats.bootstrap(data, stat, vectorized=True, confidence_level=CONFIDENCE,
                               n_resamples=N_RESAMPLES, method="BCa",
                               **_bootstrap_rng(stats, BOOTSTRAP_SEED))
    lo, hi = boot.confidence_interval
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "the bootstrap interval of the trend is undefined"
    n = int(min(c.size for c in data))
    return Interval(est, float(lo), float(hi), n, float(boot.standard_error) * math.sqrt(n),
                    1.0, "stratified BCa bootstrap")


@dataclasses.dataclass(frozen=True)
class GapChange:
    """How the paired gap ``a - b`` changes from ``panel`` to ``other``: the mean over runs of
    ``(a - b in panel) - (a - b in other)``, paired t interval, for panels whose run ``r``
    shares its seed (the same instance and draws but for the panel's parameter); ``scale``
    is ``|mean(b in panel)|``."""

    a: str
    b: str
    panel: str
    other: str
    key: object = "final_regrets"

    @property
    def comparison(self):
        return f"({self.a} - {self.b}) at {self.panel} minus at {self.other}"

    def measure(self, result):
        got = [_entry_values(result, p, m, self.key)
               for p in (self.panel, self.other) for m in (self.a, self.b)]
        for v in got:
            if isinstance(v, str):
                return v
        if len({v.shape for v in got}) != 1:
            return "the panels ran on different runs"
        a1, b1, a2, b2 = got
        return t_interval((a1 - b1) - (a2 - b2), scale=abs(float(b1.mean())) or 1.0)


@dataclasses.dataclass(frozen=True)
class EntryTimeRatio:
    """Time per round of method ``a`` over method ``b`` in ``panel`` (None: the summary's
    one panel), read from their entries' ``key`` (one timing, or a list of repeats:
    :func:`timing_ratio`)."""

    a: str
    b: str
    panel: str | None = None
    key: str = "us_per_round"

    @property
    def comparison(self):
        return f"time per round, {self.a} / {self.b}" + (f" ({self.panel})" if self.panel
                                                           else "")

    def measure(self, result):
        got = {}
        for m in (self.a, self.b):
            e = [e for e in result.get("results", ()) if e.get("method") == m
                 and (self.panel is None or e.get("panel") == self.panel)]
            if not e or self.key not in e[0]:
                return f"no timing of {m}"
            got[m] = e[0][self.key]
        return timing_ratio(got[self.a], got[self.b], self.a, self.b)


@dataclasses.dataclass(frozen=True)
class MeanOf:
    """Mean of the per-run values at ``path`` in the summary (a tuple of keys, or a method's
    entry ``(method, key)`` when ``entry``), one-sample t interval; with ``reduce="min"``,
    each run's value is the minimum of its row (e.g. the smaller of two shares)."""

    path: tuple
    what: str
    reduce: str | None = None
    entry: bool = False

    def __post_init__(self):
        if self.reduce not in (None, "min"):
            raise ValueError(f"reduce must be None or 'min', got {self.reduce!r}")

    @property
    def comparison(self):
        return self.what

    def measure(self, result):
        if self.entry:
            got = _entry_values(result, None, self.path[0], self.path[1:])
            if isinstance(got, str):
                return got
        else:
            got = _lookup(result, self.path)
            if got is None:
                return f"not in the summary: {' / '.join(map(str, self.path))}"
        v = np.asarray(got, dtype=float)
        if self.reduce == "min":
            v = v.min(axis=-1)
        return t_interval(v, method="t")


@dataclasses.dataclass(frozen=True)
class Computed:
    """A value at ``path`` of the summary: a number, computed without sampling (the largest
    relative difference of two closed forms over the cases: its interval is the point,
    ``n`` the ``runs`` of the summary), or a dict ``{estimate, low, high, n, sd}`` of an
    interval the experiment made (a Monte Carlo mean's t interval)."""

    path: tuple
    what: str

    @property
    def comparison(self):
        return self.what

    def measure(self, result):
        got = _lookup(result, self.path)
        if got is None:
            return f"not in the summary: {' / '.join(map(str, self.path))}"
        if isinstance(got, dict):
            return Interval(float(got["estimate"]), float(got["low"]), float(got["high"]),
                            int(got["n"]), got.get("sd"), method="t")
        v = float(got)
        return Interval(v, v, v, int(result.get("runs", 1)), None,
                        method="computed, no sampling")


@dataclasses.dataclass(frozen=True)
class CostCount:
    """A ratio of two cost counts of the papers' algorithms as written
    (:mod:`vits_ref.experiments.claims.costs`): exact, no sampling, so its interval is the
    point. ``count(inputs)`` gives the ratio from the numbers of ``inputs`` (``{name: path
    of keys in the summary}``); with no inputs the count needs no run (``needs_run`` is
    False: it is the paper's setting, judged anew when a page is re-judged)."""

    count: object
    what: str
    inputs: tuple = ()

    @property
    def comparison(self):
        return self.what

    @property
    def needs_run(self):
        return bool(self.inputs)

    def measure(self, result):
        got = {}
        for name, path in self.inputs:
            v = _lookup(result, path)
            if v is None:
                return f"not in the summary: {' / '.join(map(str, path))}"
            got[name] = float(v)
        v = float(self.count(**got))
        return Interval(v, v, v, 1, None, method="cost count, exact")


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
        ta, tb = _lookup(result, (self.key, self.a)), _lookup(result, (self.key, self.b))
        if ta is None or tb is None:
            return f"no timing of {self.a} or {self.b}"
        return timing_ratio(ta, tb, self.a, self.b)


def timing_ratio(ta, tb, a="a", b="b", factor=1.0):
    """``factor`` times the time ratio of timings ``ta`` over ``tb`` (each a number or a list
    of repeats), as :class:`TimeRatio` describes: an interval only when both are repeated."""
    from scipy import stats

    ta, tb = np.atleast_1d(np.asarray(ta, float)), np.atleast_1d(np.asarray(tb, float))
    if not ((ta > 0).all() and (tb > 0).all() and np.isfinite(ta).all()
            and np.isfinite(tb).all()):
        return f"a timing of {a} or {b} is not a positive number"
    la, lb = np.log(ta), np.log(tb)
    ratio = factor * (float(ta[0] / tb[0]) if ta.size == tb.size == 1
                      else float(np.exp(la.mean() - lb.mean())))
    n = int(min(ta.size, tb.size))
    if n < 2:
        return Interval(ratio, None, None, n, None, 1.0, "one timing per method, no spread")
    method = "repeated timings, Welch t on log-times"
    if la.std() == 0.0 and lb.std() == 0.0:
        return Interval(ratio, ratio, ratio, n, 0.0, 1.0, method)
    ci = stats.ttest_ind(la, lb, equal_var=False).confidence_interval(CONFIDENCE)
    se = math.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
    # the interval is on the log scale; runs_needed scales a spread in the ratio's units, so
    # the log-ratio's is carried to the estimate (delta method: d exp(x) = exp(x) dx)
    return Interval(ratio, factor * float(np.exp(ci.low)), factor * float(np.exp(ci.high)), n,
                    ratio * se * math.sqrt(n), 1.0, method)


def first_step_at_or_below(steps, values, level):
    """The first of ``steps`` whose value (None: undefined) is ``<= level``; None if none."""
    return next((k for k, v in zip(steps, values, strict=True)
                 if v is not None and v <= level), None)


@dataclasses.dataclass(frozen=True)
class TimeToLevel:
    """Computing time for method ``a``'s ``quartile`` curve of a quantity (a KL, over seeds)
    to get ``<= level``, over method ``b``'s: the ratio of the first steps at or below the
    level times the ratio of the costs per step (``us_per_step``: one timing, or a list of
    repeats, :func:`timing_ratio`). A curve that never gets there counts with its last step,
    a lower bound of its time: ``b`` never there makes the ratio an upper bound, which a
    claim that ``a`` is faster can use; ``a`` never there is not measured. With ``paired``,
    the costs are interleaved repeats, paired on the repeats (:func:`paired_time_ratio`)."""

    a: str
    b: str
    level: float
    quartile: str = "median"
    cost: str = "us_per_step"
    paired: bool = False

    @property
    def comparison(self):
        return (f"time for the {self.quartile} curve to reach KL <= {self.level:g}, "
                f"{self.a} / {self.b}")

    def measure(self, result):
        by = {e.get("method"): e for e in result.get("results", ())}
        for m in (self.a, self.b):
            if m not in by or self.cost not in by[m] or "curve" not in by[m]:
                return f"{m} did not run"
        got = {}
        for m in (self.a, self.b):
            c = by[m]["curve"]
            got[m] = first_step_at_or_below(c["steps"], c[self.quartile], self.level)
        if got[self.a] is None:
            return f"{self.a}'s {self.quartile} curve never reaches {self.level:g}"
        nb = got[self.b] if got[self.b] is not None else by[self.b]["curve"]["steps"][-1]
        ratio = paired_time_ratio if self.paired else timing_ratio
        return ratio(by[self.a][self.cost], by[self.b][self.cost], self.a, self.b,
                     factor=got[self.a] / nb)


# -- measures of the DiffTS claims (Kveton et al.); general: repeated values, repeated timings

@dataclasses.dataclass(frozen=True)
class RepeatedRatio:
    """``mean(a) / mean(b)`` as a ratio of geometric means of two sets of independent,
    positive repeated values at the summary paths ``a`` and ``b`` (tuples of keys), e.g. a
    two-sample statistic against its own noise floor. The interval is Welch's t interval of
    the difference of mean logs, exponentiated (:func:`timing_ratio`, which it shares with
    the timings); ``scale`` 1. ``what`` names the comparison."""

    a: tuple
    b: tuple
    what: str

    @property
    def comparison(self):
        return self.what

    def measure(self, result):
        got = _two_values_at(result, self.a, self.b)
        if isinstance(got, str):
            return got
        x, y = got
        got = timing_ratio(x, y, self.a[-1], self.b[-1])
        if isinstance(got, str) or not got.has_interval:
            return got
        return dataclasses.replace(got, method="repeats, Welch t on logs")


@dataclasses.dataclass(frozen=True)
class TrendAt:
    """:class:`Trend` of repeated values kept at a summary path: ``result[path]`` is
    ``{x: [repeat, ...]}`` (keys numbers or their strings, e.g. repeated timings per number
    of stages), the trend (``"rise"`` or ``"sag"``, relative to the mean over the cells) of
    the cells' means (``centre="geometric"``: geometric means, for timings) against ``x``,
    with the stratified bootstrap interval of :func:`trend_interval`. ``what`` names the
    values."""

    path: tuple
    kind: str
    what: str
    min_cells: int = 3
    centre: str = "mean"

    def __post_init__(self):
        if self.kind not in ("rise", "sag"):
            raise ValueError(f"kind must be 'rise' or 'sag', got {self.kind!r}")
        if self.centre not in CENTRES:
            raise ValueError(f"centre must be one of {CENTRES}, got {self.centre!r}")

    @property
    def comparison(self):
        m = "mean" if self.centre == "mean" else "geometric mean"
        return f"{self.kind} of the {m} {self.what}, relative to its mean"

    def measure(self, result):
        got = _lookup(result, self.path)
        if not isinstance(got, dict):
            return f"not in the summary: {' / '.join(map(str, self.path))}"
        if len(got) < self.min_cells:
            return f"{len(got)} cell(s): a trend needs {self.min_cells}"
        return trend_interval(self.kind, {float(k): v for k, v in got.items()}, self.centre)


@dataclasses.dataclass(frozen=True)
class EntryTimeRatioPer:
    """:class:`EntryTimeRatio` (time per round or wall time of ``a`` over ``b``) divided by
    the summary's ``result[per]`` (e.g. the number of diffusion stages ``T``, for a claim
    that a method is ``T`` times as costly)."""

    a: str
    b: str
    per: str
    panel: str | None = None
    key: str = "wall_time_s"

    @property
    def comparison(self):
        where = f" ({self.panel})" if self.panel else ""
        return f"{self.key}, {self.a} / {self.b}, divided by {self.per}{where}"

    def measure(self, result):
        per = result.get(self.per)
        if not isinstance(per, int | float) or not per > 0:
            return f"no positive {self.per} in the summary"
        got = {}
        for m in (self.a, self.b):
            e = [e for e in result.get("results", ()) if e.get("method") == m
                 and (self.panel is None or e.get("panel") == self.panel)]
            if not e or self.key not in e[0]:
                return f"no timing of {m}"
            got[m] = e[0][self.key]
        return timing_ratio(got[self.a], got[self.b], self.a, self.b, factor=1.0 / per)


# -- repeated, interleaved timings -----------------------------------------------------------


def paired_time_ratio(ta, tb, a="a", b="b", factor=1.0):
    """``factor`` times the time ratio of ``ta`` over ``tb``, from timings repeated and
    interleaved: repeat ``r`` of ``a`` and of ``b`` ran back to back, so the machine's drift
    (a shared machine drifts by about 1.5x from minute to minute) hits both alike and the
    repeats are paired.

    With the per-repeat log-ratios ``l_r = log ta_r - log tb_r``, the estimate is
    ``factor exp(mean l)`` (the geometric mean of the per-repeat ratios) and the interval
    the paired t interval of ``mean l`` (``scipy.stats.ttest_1samp``), exponentiated: timings
    are positive and skewed, and on the log scale the interval of ``a/b`` is that of ``b/a``
    inverted. ``sd`` is ``ratio sd(l)`` (the delta method, ``d exp(x) = exp(x) dx``: what
    :func:`~vits_ref.experiments.claims.judging.runs_needed` scales, here in repeats);
    ``spread`` is the per-repeat ratios' minimum, median and maximum (times ``factor``).

    Parameters
    ----------
    ta, tb : array_like
        Per-repeat timings of ``a`` and ``b``, the same number of repeats (or one number
        each: no spread, an estimate without an interval, never conclusive).
    a, b : str
        Names for the messages.
    factor : float, default 1
        Multiplies the ratio (e.g. a ratio of step counts, or ``1/2`` to compare a timing at
        ``2T`` with one at ``T`` when "time is linear in T" is the claim).

    Returns
    -------
    Interval or str
        A string (why not) when a timing is not a positive number or the two sides have
        different numbers of repeats.
    """
    from scipy import stats

    ta, tb = np.atleast_1d(np.asarray(ta, float)), np.atleast_1d(np.asarray(tb, float))
    if ta.ndim != 1 or tb.ndim != 1:
        return f"the timings of {a} and {b} must be numbers or lists of repeats"
    if not (np.isfinite(ta).all() and np.isfinite(tb).all() and (ta > 0).all()
            and (tb > 0).all()):
        return f"a timing of {a} or {b} is not a positive number"
    if ta.size != tb.size:
        return (f"{a} and {b} have {ta.size} and {tb.size} timings: interleaved repeats "
                "come in pairs")
    logs = np.log(ta) - np.log(tb)
    ratio = factor * float(np.exp(logs.mean()))
    if ta.size < 2:
        return Interval(ratio, None, None, 1, None, 1.0, "one timing per method, no spread")
    method = "interleaved repeated timings, paired t on log-ratios"
    per = np.sort(factor * np.exp(logs))
    spread = (float(per[0]), float(np.median(per)), float(per[-1]))
    sd = float(logs.std(ddof=1))
    if sd == 0.0:
        return Interval(ratio, ratio, ratio, int(ta.size), 0.0, 1.0, method, spread)
    ci = stats.ttest_1samp(logs, 0.0).confidence_interval(CONFIDENCE)
    return Interval(ratio, factor * float(np.exp(ci.low)), factor * float(np.exp(ci.high)),
                    int(ta.size), ratio * sd, 1.0, method, spread)


def _timings_at(result, path, entry, panel):
    if entry:
        return _entry_values(result, panel, path[0], tuple(path[1:]))
    got = _lookup(result, path)
    if got is None:
        return f"not in the summary: {' / '.join(map(str, path))}"
    return got


@dataclasses.dataclass(frozen=True)
class RepeatedTimeRatio:
    """``factor`` times the ratio of two timings repeated and interleaved (repeat ``r`` of
    both sides back to back), paired on the repeats (:func:`paired_time_ratio`: geometric
    mean of the per-repeat ratios, paired t interval of the log-ratios, the repeats'
    spread).

    Where the repeats are: ``a`` and ``b`` are paths of summary keys (tuples, e.g.
    ``("us_per_round_warm_repeats", "VITS-II")``), or with ``entry`` a method's label and
    the key in its entry of ``panel`` (None: whichever panel, for a one-panel summary),
    e.g. ``("OPVI", "wall_time_per_run_s")``. ``skip`` drops the first repeats of both
    sides (a repeat that compiled). Any two timings of one summary fit: two methods'
    times per round, or one method's times at ``2T`` and ``T`` with ``factor = 1/2`` for a
    time claimed linear in ``T``. ``per`` names a number of the summary that divides the
    ratio (e.g. ``"n_stages"``, for a method claimed ``T`` times as costly). The repeats
    may also be the methods' timings per chunk of runs (``chunk_wall_times_s``: the same
    runs in each method's chunk ``r``), paired on the runs but not interleaved in time.
    ``what`` names the comparison.
    """

    a: tuple
    b: tuple
    what: str
    factor: float = 1.0
    entry: bool = False
    panel: str | None = None
    skip: int = 0
    per: str | None = None

    def __post_init__(self):
        for name in ("a", "b"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or not v:
                raise TypeError(f"{name} must be a non-empty tuple of keys, got {v!r}")
        if not (math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"factor must be finite and > 0, got {self.factor}")
        if not (isinstance(self.skip, int) and self.skip >= 0):
            raise ValueError(f"skip must be an int >= 0, got {self.skip!r}")

    @property
    def comparison(self):
        return self.what

    def measure(self, result):
        got = [_timings_at(result, p, self.entry, self.panel) for p in (self.a, self.b)]
        for v in got:
            if isinstance(v, str):
                return v
        factor = self.factor
        if self.per is not None:
            per = result.get(self.per)
            if not isinstance(per, int | float) or not per > 0:
                return f"no positive {self.per} in the summary"
            factor /= per
        ta, tb = (np.atleast_1d(np.asarray(v, float))[self.skip:] for v in got)
        if ta.size == 0 or tb.size == 0:
            return f"no repeat left after skipping {self.skip}"
        return paired_time_ratio(ta, tb, " / ".join(map(str, self.a)),
                                 " / ".join(map(str, self.b)), factor)


# -- how a regret grows late in a run ----------------------------------------------------------


def late_over_early(late, early, axis=-1):
    """``mean(late) / mean(early)``: the mean regret increment of a run's last quarter over
    that of its second quarter."""
    return np.mean(late, axis=axis) / np.mean(early, axis=axis)


@dataclasses.dataclass(frozen=True)
class LateSlope:
    """How a method's cumulative regret grows late in the run: the mean over runs of its
    increment over the last quarter, ``R(T) - R(3T/4)``, over the mean increment over the
    second quarter, ``R(T/2) - R(T/4)``, read at the summary ``path`` (a tuple of keys to
    ``[[R(T/4), R(T/2), R(3T/4), R(T)] per run]``). A linear regret (a constant regret per
    round) gives 1; a regret growing as ``sqrt(T)`` gives
    ``(1 - sqrt(3/4)) / (sqrt(1/2) - sqrt(1/4)) = 0.65``, and one that stops growing 0.
    Paired BCa bootstrap interval (each run's two increments resampled together); ``sd``
    is the bootstrap standard error times ``sqrt(n)``, ``scale`` 1. ``what`` names the
    method and the setting."""

    path: tuple
    what: str

    @property
    def comparison(self):
        return (f"{self.what}: regret increment over the last quarter of the rounds / over "
                "the second quarter")

    def measure(self, result):
        from scipy import stats

        got = _values_at(result, self.path)
        if isinstance(got, str):
            return got
        if got.ndim != 2 or got.shape[1] != 4:
            return f"{self.what}: not 4 regrets per run at {' / '.join(map(str, self.path))}"
        if not np.isfinite(got).all():
            return f"{self.what}: a run has no finite regret (diverged)"
        late, early = got[:, 3] - got[:, 2], got[:, 1] - got[:, 0]
        if got.shape[0] < 3:
            return f"{got.shape[0]} run(s): a bootstrap interval needs 3 at least"
        if not early.mean() > 0:
            return f"{self.what}: the regret does not grow over the second quarter"
        est = float(late_over_early(late, early))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as PairedStatistic: a degenerate resample
            boot = stats.bootstrap((late, early), late_over_early, paired=True,
                                   vectorized=True, confidence_level=CONFIDENCE,
                                   n_resamples=N_RESAMPLES, method="BCa",
                                   **_bootstrap_rng(stats, BOOTSTRAP_SEED))
        lo, hi = boot.confidence_interval
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "the bootstrap interval of the late slope is undefined"
        n = int(late.size)
        return Interval(est, float(lo), float(hi), n,
                        float(boot.standard_error) * math.sqrt(n), 1.0, "paired BCa bootstrap")
