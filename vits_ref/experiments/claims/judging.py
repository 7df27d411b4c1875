"""One rule of judging for every claim of the reproduction report.

A claim (:class:`Claim`) says where a measured quantity lies: inside an equivalence margin
around a value (an *equality* claim: "performs similarly", "is 28%"), or on one side of a
threshold (a *direction*: "underperforms", "reduces"). A measurement (:class:`Interval`) is
an estimate with a confidence interval, usually the paired t interval of a mean difference
over runs that share their random numbers. :func:`verdict` compares the two:

- **reproduced**: the interval lies inside the margin (equality), or excludes the threshold
  on the claimed side (direction);
- **contradicted**: the interval lies outside the margin, or excludes the threshold on the
  other side;
- **inconclusive**: anything else, reported with the number of runs that would decide it
  (:func:`runs_needed`, from the measured spread).

A direction with a **size word** (:attr:`Claim.size`) is judged on both sides: "A slightly
beats B" claims the direction *and* a small gap, "A much beats B" the direction *and* a
large one. The two parts are judged on the same interval, the direction against the
threshold and the size against the threshold moved by ``margin`` on the claimed side
(:data:`SMALL`: the interval must end before it; :data:`LARGE`: it must lie beyond it), and
combined: contradicted if either part is, reproduced only if both are, inconclusive
otherwise. A reversed sign is contradicted, whatever the size word.

An equality claim without a margin cannot be judged: :class:`Claim` refuses it. Verdicts
from several root seeds (:func:`judge`): each seed is judged on its own interval, and a
verdict that differs between seeds is inconclusive. The margins and why each has its size
are in ``docs/reproduction/judging.md``.
"""

import dataclasses
import math

REPRODUCED, CONTRADICTED, INCONCLUSIVE = "reproduced", "contradicted", "inconclusive"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE)
EQUAL, LOWER, HIGHER = "equal", "lower", "higher"
CLAIMED = (EQUAL, LOWER, HIGHER)
#: Size words of a direction: the gap is below ``margin`` ("slightly", "barely") or beyond it
#: ("much", "significantly", "notably").
SMALL, LARGE = "small", "large"
SIZES = (SMALL, LARGE)
#: ``Claim.where`` of a claim that the paper does not state in words: the library's reading
#: of a figure, table or algorithm, labelled as such on the report.
LIBRARY_READING = "library reading"
#: Confidence level of every interval the verdicts use.
CONFIDENCE = 0.95

# -- the named margins: every claim's margin or threshold has one of these bases, each
# justified in docs/reproduction/judging.md (a heading per name) -----------------------------

#: "similar", "on par", "comparable": within +-10% of the reference's mean.
SIMILAR = 0.10
#: "slightly", "barely": the gap below 15% of the better method's mean (size SMALL).
SLIGHTLY = 0.15
#: "much", "notably": the gap beyond a slight one, 15% (size LARGE).
MUCH = SLIGHTLY
#: "significantly": the gap beyond the margin of "similar", 10% (size LARGE).
SIGNIFICANTLY = SIMILAR
#: A bare direction: the threshold 0 of a difference, 1 of a ratio; no margin.
DIRECTION = "DIRECTION"
#: A paper's own percentage: within SIMILAR of the claimed value, and never tighter than
#: half a unit of the last digit the paper prints (:func:`percentage_margin`).
PERCENTAGE = "PERCENTAGE"
#: A quantity near its noise floor (the test RMSE of a regression whose noise dominates):
#: the margin is the paper's own reported spread, relative to its reference's mean.
PAPER_SPREAD = "PAPER_SPREAD"
#: The bases a claim may name (each a heading of docs/reproduction/judging.md); the table
#: adds its own (``register_basis``) for margins that are not words' (factors, shares).
BASES = {"SIMILAR", "SLIGHTLY", "MUCH", "SIGNIFICANTLY", DIRECTION, PERCENTAGE,
         PAPER_SPREAD}

#: The three kinds of judged sentence a page counts apart (docs/reproduction/judging.md):
#: (a) the paper's sentence on the paper's problem, (b) the paper's sentence on substitute
#: or reconstructed data, (c) the library's reading of a figure, table or algorithm.
PAPER, SUBSTITUTE, READING = "a", "b", "c"
#: The two judgements of a timing claim (docs/reproduction/judging.md, "Timings judged
#: twice"): the paper's algorithm as written (a cost count, or an implementation without the
#: library's optimisations), and the library's code as it runs.
AS_WRITTEN, AS_IMPLEMENTED = "as written", "as implemented"
IMPLEMENTATIONS = (AS_WRITTEN, AS_IMPLEMENTED)
KINDS = {PAPER: "the papers' sentences on the papers' problems",
         SUBSTITUTE: "the papers' sentences on substitute or reconstructed data",
         READING: "the library's readings"}


def register_basis(name):
    """Add ``name`` to :data:`BASES` (a margin the claim table names and judging.md
    justifies) and return it."""
    if not isinstance(name, str) or not name.isupper():
        raise ValueError(f"basis must be an upper-case name, got {name!r}")
    BASES.add(name)
    return name


def percentage_margin(value, decimals):
    """The margin of a paper's own percentage ``value`` (a fraction: 0.14 for "14%"),
    printed with ``decimals`` digits after the point of the percentage: ``SIMILAR`` of the
    value (relative to the claimed value), and at least half a unit of the last printed
    digit (the paper's reported precision: "14%" is 13.5% to 14.5%).

    >>> round(percentage_margin(0.14, 0), 6), round(percentage_margin(0.001, 1), 6)
    (0.014, 0.0005)
    """
    if not (isinstance(decimals, int) and decimals >= 0):
        raise ValueError(f"decimals must be an int >= 0, got {decimals!r}")
    if not (math.isfinite(value) and value != 0):
        raise ValueError(f"value must be finite and non-zero, got {value}")
    return max(SIMILAR * abs(value), 0.5 * 10.0 ** (-decimals) / 100)


@dataclasses.dataclass(frozen=True)
class Interval:
    """A measured quantity: estimate and confidence interval, for one root seed.

    Attributes
    ----------
    estimate : float
    low, high : float or None
        The interval; None when the measurement has none (a single timing, fewer than two
        runs): such a measurement is never conclusive.
    n : int
        Runs behind the estimate.
    sd : float or None
        Per-run standard deviation of the estimate's influence (for a mean over runs, the
        runs' standard deviation; for a bootstrap statistic, its standard error times
        ``sqrt(n)``): what :func:`runs_needed` scales.
    scale : float
        What a relative margin or threshold is a fraction of (the reference method's mean),
        1 for absolute ones.
    method : str
        How the interval was made (e.g. ``"paired t"``).
    spread : tuple of 3 floats or None
        For a measurement from repeats (timings): the per-repeat values' minimum, median
        and maximum, shown beside the interval.
    """

    estimate: float
    low: float | None
    high: float | None
    n: int
    sd: float | None = None
    scale: float = 1.0
    method: str = "paired t"
    spread: tuple | None = None

    def __post_init__(self):
        if (self.low is None) != (self.high is None):
            raise ValueError("low and high must both be given or both be None")
        if self.low is not None and not self.low <= self.high:
            raise ValueError(f"low must be <= high, got [{self.low}, {self.high}]")
        for name in ("estimate", "low", "high", "sd", "scale"):
            v = getattr(self, name)
            if v is not None and not math.isfinite(v):
                raise ValueError(f"{name} must be finite, got {v}")
        if self.spread is not None and not (
                len(self.spread) == 3 and all(math.isfinite(v) for v in self.spread)
                and self.spread[0] <= self.spread[1] <= self.spread[2]):
            raise ValueError(f"spread must be finite (min, median, max), got {self.spread}")

    @property
    def has_interval(self):
        return self.low is not None


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a paper and how it is judged.

    Attributes
    ----------
    id : str
        Stable identifier, e.g. ``"fig1-vits-ii-like-lints-zeta-1"``.
    paper : str
        The report's paper key (``"vits"``, ``"vts"``, ``"renyi"``, ...).
    experiment : str
        The registered experiment that measures it (e.g. ``"vits-fig1"``).
    where : str
        Where the paper says it (section, figure, table), or :data:`LIBRARY_READING`.
    words : str
        The paper's words, quoted; for a library reading, the reading itself.
    quantity : str
        The quantity measured, e.g. ``"final cumulative regret at T"``.
    measure : object
        What extracts the :class:`Interval` from an experiment's summary: an object with
        ``comparison`` (text such as ``"VITS-II - LinTS (zeta = 1)"``) and
        ``measure(result)`` returning an :class:`Interval` or, when the summary does not
        hold the quantity, a string saying why (:mod:`vits_ref.experiments.claims.measures`).
    claimed : {"equal", "lower", "higher"}
        Equality within ``margin`` of ``threshold``, or lower / higher than ``threshold``.
    margin : float or None
        The equivalence margin (half-width, > 0) of an equality claim; the size bound (> 0)
        of a direction with a size word; None for a bare direction.
    threshold : float, default 0
        The value an equality is centred on, or a direction is claimed against.
    size : {None, "small", "large"}, default None
        A direction's size word: :data:`SMALL` ("slightly", "barely": the gap from
        ``threshold`` on the claimed side is below ``margin``) or :data:`LARGE` ("much",
        "significantly": it is beyond ``margin``). Judged on both sides (module docstring).
    relative : bool, default False
        ``margin`` and ``threshold`` are fractions of the measurement's ``scale`` (the
        reference method's mean), not absolute values.
    data : str
        The data the experiment runs on.
    substitute : bool, default False
        True when ``data`` stands in for the paper's (the verdict is labelled so).
    note : str, default ""
        Why this margin or threshold, and the likely cause when the claim fails.
    size : {None, "small", "large"}
    reconstructed : bool, default False
        True when the paper's problem is not specified in it and the library rebuilt it
        (redrawn from its figures, or taken from the authors' code): the verdict is on the
        reconstruction, counted with substitute data (:data:`SUBSTITUTE`).
    basis : str, default ""
        The named margin (:data:`BASES`) that justifies ``margin`` or ``threshold``;
        inferred for the word margins (an equality within ``SIMILAR``, a size word's
        ``SLIGHTLY``, ``MUCH`` or ``SIGNIFICANTLY``, a bare direction at 0 or 1), required
        otherwise: a claim without a justified margin is refused.
    implementation : {"", "as written", "as implemented"}, default ""
        For a timing claim, which of its two judgements this is: :data:`AS_WRITTEN`, the
        paper's algorithm as the paper writes it (a cost count, or an implementation
        without the library's optimisations), or :data:`AS_IMPLEMENTED`, the library's
        code as it runs; "" for a claim that is not about time.
    optimisation : str, default ""
        For an :data:`AS_IMPLEMENTED` claim (required there, refused elsewhere): how the
        library's code departs from the algorithm as written (e.g. "VITS-II caches the
        constant Hessian of the linear model"), or a sentence that says it does not.
    twin : str, default ""
        The id of the claim's other judgement (the :data:`AS_WRITTEN` claim of an
        :data:`AS_IMPLEMENTED` one): a contradiction of this claim while its twin is
        reproduced is caused by the optimisation, and labelled so
        (:func:`vits_ref.experiments.claims.records.label_optimisations`).
    """

    id: str
    paper: str
    experiment: str
    where: str
    words: str
    quantity: str
    measure: object
    claimed: str
    margin: float | None = None
    threshold: float = 0.0
    relative: bool = False
    data: str = ""
    substitute: bool = False
    note: str = ""
    size: str | None = None
    reconstructed: bool = False
    basis: str = ""
    implementation: str = ""
    optimisation: str = ""
    twin: str = ""

    def __post_init__(self):
        for name in ("id", "paper", "experiment", "where", "words", "quantity", "data"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ValueError(f"{name} must be a non-empty string, got {v!r}")
        if self.claimed not in CLAIMED:
            raise ValueError(f"claimed must be one of {CLAIMED}, got {self.claimed!r}")
        if self.claimed == EQUAL:
            if self.margin is None:
                raise ValueError(f"margin: the equality claim {self.id!r} has no equivalence "
                                 "margin and cannot be judged; state one")
            if not (math.isfinite(self.margin) and self.margin > 0):
                raise ValueError(f"margin must be finite and > 0, got {self.margin}")
        elif self.size is not None:
            if self.size not in SIZES:
                raise ValueError(f"size must be one of {SIZES} or None, got {self.size!r}")
            if self.margin is None or not (math.isfinite(self.margin) and self.margin > 0):
                raise ValueError(f"margin: the {self.size!r} size of the claim {self.id!r} "
                                 f"needs a finite margin > 0, got {self.margin}")
        elif self.margin is not None:
            raise ValueError(f"margin: the {self.claimed!r} claim {self.id!r} is a direction "
                             "without a size word, it takes a threshold, not a margin")
        if self.claimed == EQUAL and self.size is not None:
            raise ValueError(f"size: the equality claim {self.id!r} takes no size word")
        if not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {self.threshold}")
        if not hasattr(self.measure, "measure") or not hasattr(self.measure, "comparison"):
            raise TypeError("measure must have measure(result) and comparison")
        if self.substitute and self.reconstructed:
            raise ValueError(f"substitute and reconstructed: the claim {self.id!r} is on "
                             "stand-in data or on a rebuilt problem, not both")
        if self.implementation not in ("", *IMPLEMENTATIONS):
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS} or '', got "
                             f"{self.implementation!r}")
        if (self.implementation == AS_IMPLEMENTED) != bool(self.optimisation):
            raise ValueError(f"optimisation: the claim {self.id!r} "
                             + ("judges the library's code: name how it departs from the "
                                "algorithm as written (or say that it does not)"
                                if self.implementation == AS_IMPLEMENTED else
                                "is not an 'as implemented' judgement and takes no "
                                "optimisation"))
        if self.twin and (self.implementation != AS_IMPLEMENTED or self.twin == self.id):
            raise ValueError(f"twin: only an 'as implemented' claim names its 'as written' "
                             f"twin (another id), got {self.twin!r} on {self.id!r}")
        basis = self.basis or self._word_basis()
        if basis not in BASES:
            raise ValueError(
                f"basis: the claim {self.id!r} ({self.claimed}, margin {self.margin}, "
                f"threshold {self.threshold}) has no justified margin "
                + (f"({basis!r} is not one of {sorted(BASES)})" if basis else
                   "(name its basis, justified in docs/reproduction/judging.md)"))
        object.__setattr__(self, "basis", basis)

    def _word_basis(self):
        """The basis a word margin implies, or "" when the margin is not a word's."""
        if self.claimed == EQUAL:
            # a relative margin of the reference, a ratio's 1 +- SIMILAR, or a quantity
            # already in the reference's units (a pooled relative difference, a curvature)
            return "SIMILAR" if (self.margin == SIMILAR
                                 and self.threshold in (0.0, 1.0)) else ""
        if self.size is None:
            return DIRECTION if self.threshold in (0.0, 1.0) else ""
        if self.threshold not in (0.0, 1.0):
            return ""
        if self.size == SMALL:
            return "SLIGHTLY" if self.margin == SLIGHTLY else ""
        return {MUCH: "MUCH", SIGNIFICANTLY: "SIGNIFICANTLY"}.get(self.margin, "")

    @property
    def kind(self):
        """:data:`PAPER`, :data:`SUBSTITUTE` or :data:`READING` (:data:`KINDS`)."""
        if self.where == LIBRARY_READING:
            return READING
        return SUBSTITUTE if self.substitute or self.reconstructed else PAPER

    def region(self, scale=1.0):
        """``(low, high)``: where the claim puts the quantity, in its units (``scale``
        multiplies a relative margin and threshold); an open end is an infinity."""
        s = abs(scale) if self.relative else 1.0
        c = self.threshold * s
        if self.claimed == EQUAL:
            return c - self.margin * s, c + self.margin * s
        if self.size is None:
            return (-math.inf, c) if self.claimed == LOWER else (c, math.inf)
        m = self.bound(scale)
        if self.size == SMALL:
            return (m, c) if self.claimed == LOWER else (c, m)
        return (-math.inf, m) if self.claimed == LOWER else (m, math.inf)

    def bound(self, scale=1.0):
        """The size word's bound, in the quantity's units: the threshold moved by ``margin``
        (times ``scale`` when relative) on the claimed side; None without a size word."""
        if self.size is None:
            return None
        s = abs(scale) if self.relative else 1.0
        step = self.margin * s
        return self.threshold * s + (-step if self.claimed == LOWER else step)

    def rule(self):
        """The rule in words, for the report."""
        unit = " of the reference's mean" if self.relative else ""
        pct = (lambda v: f"{100 * v:g}%") if self.relative else (lambda v: f"{v:g}")
        if self.claimed == EQUAL:
            centre = f" around {pct(self.threshold)}{unit}" if self.threshold else ""
            return (f"Equality within +-{pct(self.margin)}{unit}{centre}: reproduced if the "
                    f"{100 * CONFIDENCE:g}% interval lies inside the margin, contradicted if "
                    "it lies outside, inconclusive otherwise.")
        side, other = ("below", "above") if self.claimed == LOWER else ("above", "below")
        at = f"{pct(self.threshold)}{unit}" if self.threshold else "0"
        if self.size is None:
            return (f"Direction ({self.claimed} than {at}): reproduced if the "
                    f"{100 * CONFIDENCE:g}% interval lies {side} {at}, contradicted if it "
                    f"lies {other}, inconclusive if it contains {at}.")
        sign = "-" if self.claimed == LOWER else "+"
        at_m = (f"{at} {sign} {pct(self.margin)}{unit}" if self.threshold else
                f"{'-' if sign == '-' else ''}{pct(self.margin)}{unit}")
        small = self.size == SMALL
        size = (f"the gap is small (the interval lies {other} {at_m}, contradicted if it lies "
                f"{side})" if small else
                f"the gap is large (the interval lies {side} {at_m}, contradicted if it lies "
                f"{other})")
        return (f"Direction with a size word ({self.claimed} than {at}, by "
                f"{'less' if small else 'more'} than {pct(self.margin)}{unit}), judged on "
                f"both sides of the {100 * CONFIDENCE:g}% interval: the direction (the "
                f"interval lies {side} {at}, contradicted if it lies {other}) and {size}; "
                "contradicted if either part is, reproduced if both are, inconclusive "
                "otherwise.")


def verdict(claim, interval):
    """The verdict of one measurement: :data:`REPRODUCED`, :data:`CONTRADICTED` or
    :data:`INCONCLUSIVE` (see the module docstring for the rule).

    Parameters
    ----------
    claim : Claim
    interval : Interval

    Returns
    -------
    str
    """
    if not interval.has_interval:
        return INCONCLUSIVE
    lo, hi = claim.region(interval.scale)
    if claim.claimed == EQUAL:
        if lo <= interval.low and interval.high <= hi:
            return REPRODUCED
        if interval.high < lo or interval.low > hi:
            return CONTRADICTED
        return INCONCLUSIVE
    s = abs(interval.scale) if claim.relative else 1.0
    lower = claim.claimed == LOWER
    parts = [_side(interval, claim.threshold * s, lower)]  # the direction
    if claim.size is not None:  # and the size word, on the same interval
        parts.append(_side(interval, claim.bound(interval.scale), lower == (claim.size == LARGE)))
    if CONTRADICTED in parts:
        return CONTRADICTED
    return REPRODUCED if all(p == REPRODUCED for p in parts) else INCONCLUSIVE


def _side(interval, t, lower):
    """One side of a direction: the interval below ``t`` (``lower``) or above it:
    reproduced if it excludes ``t`` on that side, contradicted if on the other side,
    inconclusive if it contains ``t``."""
    below, above = interval.high < t, interval.low > t
    if lower:
        return REPRODUCED if below else CONTRADICTED if above else INCONCLUSIVE
    return REPRODUCED if above else CONTRADICTED if below else INCONCLUSIVE


def runs_needed(claim, interval, confidence=CONFIDENCE, max_runs=10**7):
    """Runs at which the interval would decide the claim, if the estimate and the per-run
    spread stayed as measured.

    The half-width of a t interval from ``n`` runs is ``t_{n-1} sd / sqrt(n)``; the claim
    is decided once it is smaller than the distance ``g`` from the estimate to the nearest
    end of the claimed region (for an equality, the margin's end on the estimate's side;
    for a direction, the threshold): the smallest ``n`` with ``t_{n-1} sd / sqrt(n) < g``.

    Returns
    -------
    int or None
        None when it cannot be estimated: no spread measured, or the estimate sits on the
        boundary (``g = 0``: no number of runs decides it), or more than ``max_runs``.
    """
    from scipy import stats

    if interval.sd is None or interval.sd <= 0:
        return None
    lo, hi = claim.region(interval.scale)
    x = interval.estimate
    if claim.claimed == EQUAL or (claim.size == SMALL and lo <= x <= hi):
        # inside a bounded region (an equality, or a small gap inside (threshold, bound)):
        # the nearer end must be cleared
        gap = min(abs(x - lo), abs(x - hi))
    elif claim.size == SMALL:
        # outside the band: the interval must clear the end it is beyond to contradict
        gap = abs(x - (lo if x < lo else hi))
    else:
        gap = abs(x - (hi if claim.claimed == LOWER else lo))
    if gap <= 0:
        return None
    q = 0.5 + confidence / 2
    n = max(2, math.ceil((stats.norm.ppf(q) * interval.sd / gap) ** 2))
    if n > max_runs:
        return None
    # the t quantile exceeds the normal one, so the answer is at or a few runs above the
    # normal approximation's n (about z^2 / 2 + 1 more): step up one run at a time
    while stats.t.ppf(q, n - 1) * interval.sd / math.sqrt(n) >= gap:
        n += 1
    return n if n <= max_runs else None


def pooled(intervals):
    """The intervals of several root seeds as one sample of all their runs: the mean of
    the estimates weighted by runs, and the spread of the concatenated runs
    (within-seed plus between-seed variance). Used only to estimate the runs a claim
    needs when seeds disagree; None if a seed has no spread."""
    if not intervals or any(i.sd is None for i in intervals):
        return None
    n = sum(i.n for i in intervals)
    if n < 2:
        return None
    mean = sum(i.n * i.estimate for i in intervals) / n
    ss = sum((i.n - 1) * i.sd ** 2 + i.n * (i.estimate - mean) ** 2 for i in intervals)
    scale = sum(i.n * i.scale for i in intervals) / n
    return Interval(mean, None, None, n, math.sqrt(ss / (n - 1)), scale,
                    "pooled over seeds")


@dataclasses.dataclass(frozen=True)
class SeedVerdict:
    """One root seed's measurement of a claim and its verdict."""

    seed: int | None
    interval: Interval | None
    verdict: str
    runs_needed: int | None
    size: str = ""
    missing: str = ""  # why there is no measurement, when there is none


@dataclasses.dataclass(frozen=True)
class Judgement:
    """A claim judged on one or more root seeds."""

    claim: Claim
    verdict: str
    seeds: tuple
    runs_needed: int | None
    reason: str


def judge(claim, measurements):
    """Judge ``claim`` on the measurements of one or more root seeds.

    Parameters
    ----------
    claim : Claim
    measurements : sequence of (seed, Interval or str, size)
        Per root seed: the seed, its :class:`Interval` (or why the quantity was not
        measured, a string) and the run's size in words (``"50 runs x 1000 rounds"``).

    Returns
    -------
    Judgement
        Every seed judged by :func:`verdict`; the claim's verdict is the seeds' common
        verdict, and :data:`INCONCLUSIVE` when they differ or none was measured. An
        inconclusive verdict carries the runs that would decide it: per seed from its own
        interval, and for the claim from the seeds pooled (:func:`pooled`).
    """
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    if not measurements:
        raise ValueError("measurements must hold at least one seed")
    per = []
    for seed, got, size in measurements:
        if isinstance(got, str):
            per.append(SeedVerdict(seed, None, INCONCLUSIVE, None, size, got))
            continue
        if not isinstance(got, Interval):
            raise TypeError(f"a measurement must be an Interval or a str, got {got!r}")
        v = verdict(claim, got)
        need = runs_needed(claim, got) if v == INCONCLUSIVE and got.has_interval else None
        missing = "" if got.has_interval else f"no interval ({got.method})"
        per.append(SeedVerdict(seed, got, v, need, size, missing))
    measured = [s for s in per if s.interval is not None and s.interval.has_interval]
    found = {s.verdict for s in per}
    if not measured:
        reasons = sorted({s.missing for s in per})
        return Judgement(claim, INCONCLUSIVE, tuple(per), None,
                         "not measured: " + "; ".join(reasons))
    if len(found) == 1:
        (v,) = found
        if v != INCONCLUSIVE:
            return Judgement(claim, v, tuple(per), None, "")
        reason = "the interval does not decide the claim"
    else:
        reason = "the seeds disagree (" + ", ".join(
            f"seed {s.seed}: {s.verdict}" for s in per) + ")"
    both = pooled([s.interval for s in measured])
    need = runs_needed(claim, both) if both is not None else None
    return Judgement(claim, INCONCLUSIVE, tuple(per), need, reason)
