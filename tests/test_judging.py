"""The rule that judges every claim (vits_ref.experiments.claims), on planted data whose
answer is known: a planted difference is contradicted, a planted equality within the
margin is reproduced, a tiny run is inconclusive with the runs that would decide it, the
paired interval covers at its nominal rate, and seeds that disagree are inconclusive."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from vits_ref.experiments.claims import (
    CLAIMS,
    CONTRADICTED,
    INCONCLUSIVE,
    REPRODUCED,
    Claim,
    Interval,
    judged,
    runs_needed,
    verdict,
    write_claims_json,
)
from vits_ref.experiments.claims.judging import EQUAL, HIGHER, LARGE, LOWER, SMALL
from vits_ref.experiments.claims.measures import PairedMean, PairedStatistic, TimeRatio
from vits_ref.experiments.claims.table import FIG1, SIMILAR

PANEL = "panel"


def _claim(claimed=EQUAL, margin=0.5, measure=None, **kw):
    # a planted margin is no word's: it names a basis, as the table's must
    kw.setdefault("basis", "NUMERICAL")
    return Claim(id="planted", paper="test", experiment="test", where="nowhere",
                 words="a planted claim", quantity="x", data="synthetic",
                 measure=measure or PairedMean(PANEL, "A", "B"), claimed=claimed,
                 margin=margin if claimed == EQUAL else None, **kw)


def _result(a, b, seed=0, key="final_regrets"):
    """A summary with two methods' per-run values in one panel."""
    return {"seed": seed, "runs": len(a), "rounds": 10, "results": [
        {"panel": PANEL, "method": "A", key: list(map(float, a))},
        {"panel": PANEL, "method": "B", key: list(map(float, b))}]}


def _planted(effect, sd, n, seed):
    """Paired runs: a shared per-run baseline (large, as an environment's share of the
    variance) plus independent noise; A is B plus ``effect``."""
    rng = np.random.default_rng(seed)
    base = rng.normal(100.0, 30.0, n)
    return (base + effect + rng.normal(0, sd / math.sqrt(2), n),
            base + rng.normal(0, sd / math.sqrt(2), n))


def _judge(claim, *results):
    return judged([claim], list(results))[0]


def test_a_planted_difference_is_contradicted():
    a, b = _planted(effect=5.0, sd=1.0, n=50, seed=1)
    res = _result(a, b)
    assert _judge(_claim(EQUAL, margin=1.0), res)["verdict"] == CONTRADICTED
    assert _judge(_claim(LOWER), res)["verdict"] == CONTRADICTED
    assert _judge(_claim(HIGHER), res)["verdict"] == REPRODUCED


def test_a_planted_equality_within_the_margin_is_reproduced():
    a, b = _planted(effect=0.0, sd=1.0, n=200, seed=2)
    rec = _judge(_claim(EQUAL, margin=0.5), _result(a, b))
    assert rec["verdict"] == REPRODUCED and rec["runs_needed"] is None
    lo, hi = rec["seeds"][0]["ci"]
    assert -0.5 <= lo and hi <= 0.5
    # a relative margin: 1% of B's mean (about 100) is about 1, the same equality holds
    assert _judge(_claim(EQUAL, margin=0.01, relative=True), _result(a, b))["verdict"] \
        == REPRODUCED
    # the same equality is not a direction: the interval contains 0
    assert _judge(_claim(LOWER), _result(a, b))["verdict"] == INCONCLUSIVE


def _half_width(sd, n):
    return stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)


def _is_smallest_n(n, sd, gap):
    """``n`` runs are the fewest whose t interval's half-width is below ``gap``."""
    return _half_width(sd, n) < gap <= _half_width(sd, n - 1)


def test_a_tiny_run_is_inconclusive_with_the_runs_that_would_decide_it():
    a, b = _planted(effect=0.0, sd=1.0, n=4, seed=3)
    claim = _claim(EQUAL, margin=0.5)
    rec = _judge(claim, _result(a, b))
    assert rec["verdict"] == INCONCLUSIVE
    s = rec["seeds"][0]
    gap = abs(0.5 - abs(s["estimate"]))  # to the margin's end, from inside or outside
    assert rec["runs_needed"] == s["runs_needed"] > 4
    assert _is_smallest_n(s["runs_needed"], s["sd"], gap)
    # at the planted truth (difference 0, sd 1) the margin is decided at 18 runs:
    # t_{17, 0.975} / sqrt(18) = 0.497 < 0.5 <= t_{16, 0.975} / sqrt(17) = 0.514
    exact = Interval(0.0, -1.0, 1.0, 4, sd=1.0)
    assert runs_needed(claim, exact) == 18
    # and runs of that size from the planted process do decide it, as often as the
    # estimate lands inside the margin by more than the half-width: most of the time
    decided = [verdict(claim, _measure(*_planted(0.0, 1.0, 18 * 4, seed=100 + k)))
               for k in range(50)]
    assert decided.count(REPRODUCED) >= 45  # 4x the runs: half-width 0.24, margin 0.5


def _measure(a, b):
    return PairedMean(PANEL, "A", "B").measure(_result(a, b))


def test_the_seed_0_fig1_comparison_is_inconclusive():
    """VITS-II - LinTS = +2.2 [-29.6, +34.0] around a regret of about 133 (50 runs): the
    margin of 'similar' (+-13.3) is narrower than the interval, so it cannot be a
    reproduction."""
    claim = FIG1[0]
    assert claim.claimed == EQUAL and claim.margin == SIMILAR
    half = (34.0 + 29.6) / 2
    sd = half * math.sqrt(50) / stats.t.ppf(0.975, 49)
    got = Interval(2.2, -29.6, 34.0, 50, sd=sd, scale=133.4)
    assert verdict(claim, got) == INCONCLUSIVE
    need = runs_needed(claim, got)
    assert _is_smallest_n(need, sd, 13.34 - 2.2) and need > 300


def test_paired_interval_covers_at_its_nominal_rate():
    """1000 synthetic repeats of 8 paired runs with a known mean difference: the 95% paired
    t interval covers it within 2 points of 95% (the binomial sd of the coverage is 0.7
    points, so a correct interval fails this with probability below 1%). A normal-quantile
    interval on the same data covers about 92%: the check tells them apart."""
    effect, n, reps = 1.5, 8, 1000
    covered = z_covered = 0
    z = stats.norm.ppf(0.975)
    for k in range(reps):
        a, b = _planted(effect, sd=2.0, n=n, seed=10_000 + k)
        i = _measure(a, b)
        covered += i.low <= effect <= i.high
        half = z * i.sd / math.sqrt(n)
        z_covered += i.estimate - half <= effect <= i.estimate + half
    assert abs(covered / reps - 0.95) <= 0.02, covered / reps
    assert z_covered / reps < 0.935, z_covered / reps


def test_seeds_that_disagree_are_inconclusive():
    claim = _claim(EQUAL, margin=1.0)
    same = _result(*_planted(0.0, 1.0, 100, seed=4), seed=0)
    far = _result(*_planted(3.0, 1.0, 100, seed=5), seed=7)
    rec = _judge(claim, same, far)
    assert [s["verdict"] for s in rec["seeds"]] == [REPRODUCED, CONTRADICTED]
    assert rec["verdict"] == INCONCLUSIVE and "disagree" in rec["reason"]
    assert [s["seed"] for s in rec["seeds"]] == [0, 7]
    assert all(s["ci"] is not None for s in rec["seeds"])  # each seed's interval is shown
    # pooled, the 200 runs estimate a difference of about 1.5 with sd about 1.8: the
    # margin's end 1.0 is 0.5 away, decided at about (1.96 * 1.8 / 0.5)^2 = 50 runs
    assert rec["runs_needed"] is not None and rec["runs_needed"] < 200
    # two seeds that agree keep their verdict
    again = _result(*_planted(0.0, 1.0, 100, seed=6), seed=1)
    assert _judge(claim, same, again)["verdict"] == REPRODUCED


def test_an_equality_without_a_margin_cannot_be_judged():
    with pytest.raises(ValueError, match="margin"):
        Claim(id="x", paper="p", experiment="e", where="w", words="similar", quantity="q",
              data="d", measure=PairedMean(PANEL, "A", "B"), claimed=EQUAL)
    with pytest.raises(ValueError, match="margin"):
        Claim(id="x", paper="p", experiment="e", where="w", words="lower", quantity="q",
              data="d", measure=PairedMean(PANEL, "A", "B"), claimed=LOWER, margin=0.1)
    with pytest.raises(ValueError, match="claimed"):
        _claim("similar")
    with pytest.raises(ValueError, match="words"):
        Claim(id="x", paper="p", experiment="e", where="w", words="", quantity="q",
              data="d", measure=PairedMean(PANEL, "A", "B"), claimed=HIGHER)


def test_what_was_not_measured_is_inconclusive():
    claim = _claim(EQUAL, margin=1.0)
    res = _result([1.0, 2.0], [1.0, 2.0])
    res["results"].pop()
    rec = _judge(claim, res)
    assert rec["verdict"] == INCONCLUSIVE and "B did not run" in rec["reason"]
    one = _judge(claim, _result([1.0], [2.0]))
    assert one["verdict"] == INCONCLUSIVE and one["runs_needed"] is None
    # a timing without spread is never conclusive, however large the gap
    slow = _claim(LOWER, measure=TimeRatio("A", "B"), threshold=1.0)
    rec = _judge(slow, {"seed": 0, "us_per_round_warm": {"A": 1.0, "B": 100.0}})
    assert rec["verdict"] == INCONCLUSIVE and rec["seeds"][0]["estimate"] == 0.01


def test_a_planted_reduction_has_a_bootstrap_interval():
    """B's runs cut by 30% (a multiplicative effect): the paired BCa interval of
    1 - mean(A)/mean(B) holds 0.3, and a claimed 30% +- 5% is reproduced."""
    rng = np.random.default_rng(8)
    b = rng.gamma(5.0, 20.0, 400)
    a = 0.7 * b * rng.lognormal(0.0, 0.05, 400)
    meas = PairedStatistic(PANEL, "A", "B", "reduction")
    i = meas.measure(_result(a, b))
    assert i.method == "paired BCa bootstrap" and i.low < 0.3 < i.high
    claim = _claim(EQUAL, margin=0.05, threshold=0.3, measure=meas)
    assert verdict(claim, i) == REPRODUCED
    with pytest.raises(ValueError, match="statistic"):
        PairedStatistic(PANEL, "A", "B", "median")


def test_claims_json_holds_every_field(tmp_path):
    rec = _judge(_claim(EQUAL, margin=1.0), _result(*_planted(0.0, 1.0, 30, seed=9)))
    path = write_claims_json(tmp_path / "claims.json", [rec], paper="test", seeds=[0])
    doc = json.loads(path.read_text())
    got = doc["claims"][0]
    for key in ("id", "section", "quote", "library_reading", "quantity", "comparison",
                "claimed", "margin", "threshold", "relative", "data", "substitute",
                "verdict", "runs_needed", "seeds", "runs", "sizes"):
        assert key in got, key
    assert got["runs"] == 30 and got["sizes"] == ["30 runs x 10 rounds"]
    assert doc["confidence"] == 0.95 and doc["paper"] == "test"


def test_the_table_is_well_formed():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for c in CLAIMS:  # Claim validates itself; every claim names its comparison
        assert c.measure.comparison and c.rule()


def test_repeated_timings_get_an_interval_that_covers_the_ratio():
    """Timings with a lognormal spread: Welch's interval on log-times holds the true ratio
    of geometric means (0.5) and decides "faster"; a single timing never does."""
    rng = np.random.default_rng(3)
    ta, tb = 5.0 * rng.lognormal(0, 0.05, 9), 10.0 * rng.lognormal(0, 0.05, 9)
    meas = TimeRatio("A", "B")
    i = meas.measure({"us_per_round_warm": {"A": ta.tolist(), "B": tb.tolist()}})
    assert i.low < 0.5 < i.high and i.high < 1.0
    # the same interval as SciPy's Welch test on the logs, exponentiated
    ci = stats.ttest_ind(np.log(ta), np.log(tb), equal_var=False).confidence_interval(0.95)
    assert (i.low, i.high) == pytest.approx((math.exp(ci.low), math.exp(ci.high)), rel=1e-12)
    faster = _claim(LOWER, measure=meas, threshold=1.0)
    rec = _judge(faster, {"seed": 0, "us_per_round_warm": {"A": ta.tolist(),
                                                           "B": tb.tolist()}})
    assert rec["verdict"] == REPRODUCED
    rec = _judge(faster, {"seed": 0, "us_per_round_warm": {"A": ta.tolist(), "B": 10.0}})
    assert rec["verdict"] == INCONCLUSIVE  # one side timed once: no spread


# -- size words: the direction and the size, both judged on the same interval -------------

def _sized(claimed, size, margin=0.15, threshold=0.0, relative=True):
    return Claim(id="planted-size", paper="test", experiment="test", where="nowhere",
                 words="a planted size word", quantity="x", data="synthetic",
                 measure=PairedMean(PANEL, "A", "B"), claimed=claimed, size=size,
                 margin=margin, threshold=threshold, relative=relative)


def _iv(lo, hi, scale=100.0):
    return Interval((lo + hi) / 2, lo, hi, 50, sd=1.0, scale=scale)


#: (claimed, size word) -> planted intervals (scale 100: the bound is at 15 units on the
#: claimed side of 0) and the verdict each must get
_SIZE_CASES = {
    # "A slightly worse than B" (higher, small): the region is (0, 15)
    (HIGHER, SMALL): [((5, 10), REPRODUCED),       # right direction, right size
                      ((20, 30), CONTRADICTED),    # right direction, too large
                      ((10, 20), INCONCLUSIVE),    # straddles the size bound
                      ((-30, -20), CONTRADICTED),  # reversed sign, however small the gap
                      ((-10, -5), CONTRADICTED),   # reversed sign, small
                      ((-5, 5), INCONCLUSIVE)],    # contains 0: the direction undecided
    # "A slightly better than B" (lower, small): the region is (-15, 0)
    (LOWER, SMALL): [((-10, -5), REPRODUCED), ((-30, -20), CONTRADICTED),
                     ((-20, -10), INCONCLUSIVE), ((20, 30), CONTRADICTED),
                     ((5, 10), CONTRADICTED), ((-5, 5), INCONCLUSIVE)],
    # "A much worse than B" (higher, large): the region is (15, inf)
    (HIGHER, LARGE): [((20, 30), REPRODUCED), ((5, 10), CONTRADICTED),
                      ((10, 20), INCONCLUSIVE), ((-30, -20), CONTRADICTED),
                      ((-5, 5), CONTRADICTED),     # contains 0 and ends before 15
                      ((-5, 20), INCONCLUSIVE)],   # contains 0 and reaches beyond 15
    # "A much better than B" (lower, large): the region is (-inf, -15)
    (LOWER, LARGE): [((-30, -20), REPRODUCED), ((-10, -5), CONTRADICTED),
                     ((-20, -10), INCONCLUSIVE), ((20, 30), CONTRADICTED),
                     ((-5, 5), CONTRADICTED), ((-20, 5), INCONCLUSIVE)],
}


@pytest.mark.parametrize("claimed,size", list(_SIZE_CASES))
def test_size_words_are_judged_on_both_sides(claimed, size):
    claim = _sized(claimed, size)
    for (lo, hi), want in _SIZE_CASES[claimed, size]:
        assert verdict(claim, _iv(lo, hi)) == want, (claimed, size, lo, hi)
    # the same rule with an absolute margin (a ratio of times: "significant efficiency",
    # below 1 - 0.10) and a threshold other than 0
    ratio = _sized(LOWER, LARGE, margin=0.10, threshold=1.0, relative=False)
    assert verdict(ratio, _iv(0.5, 0.8, scale=1)) == REPRODUCED
    assert verdict(ratio, _iv(0.92, 0.98, scale=1)) == CONTRADICTED  # faster, not much
    assert verdict(ratio, _iv(1.1, 1.5, scale=1)) == CONTRADICTED  # slower
    assert verdict(ratio, _iv(0.85, 0.95, scale=1)) == INCONCLUSIVE


def test_every_size_word_of_the_table_is_judged_on_planted_data():
    """Each claim of the table with a size word, on planted paired runs: the claimed
    direction and size reproduce it, a reversed sign and a wrong size contradict it, an
    equality (interval around 0) never reproduces it."""
    from vits_ref.experiments.claims.table import MUCH, SIGNIFICANTLY, SLIGHTLY
    worded = [c for c in CLAIMS if c.size is not None]
    words = {c.id: c.words.lower() for c in worded}
    assert worded and all(c.margin in (SLIGHTLY, MUCH, SIGNIFICANTLY) for c in worded)
    for w in ("slightly", "barely", "much", "significant", "notably"):
        assert any(w in words[c] for c in words), w
    for c in worded:
        sign = -1.0 if c.claimed == LOWER else 1.0
        small = c.size == SMALL
        inside = sign * (c.margin / 2 if small else 2 * c.margin)   # fraction of B's mean
        wrong = sign * (3 * c.margin if small else c.margin / 3)
        toy = _sized(c.claimed, c.size, margin=c.margin, relative=True)
        for effect, want in ((inside, REPRODUCED), (wrong, CONTRADICTED),
                             (-inside, CONTRADICTED)):
            a, b = _planted(effect * 100.0, sd=1.0, n=60, seed=7)
            assert _judge(toy, _result(a, b))["verdict"] == want, (c.id, effect)
        a, b = _planted(0.0, sd=1.0, n=60, seed=8)  # an equality: 0 in the interval
        assert _judge(toy, _result(a, b))["verdict"] != REPRODUCED, c.id


def test_size_words_still_need_two_seeds_that_agree():
    claim = _sized(HIGHER, SMALL)
    a, b = _planted(8.0, sd=1.0, n=60, seed=9)     # slightly worse: reproduced
    c, d = _planted(-8.0, sd=1.0, n=60, seed=10)   # reversed: contradicted
    rec = _judge(claim, _result(a, b, seed=0), _result(c, d, seed=1))
    assert [s["verdict"] for s in rec["seeds"]] == [REPRODUCED, CONTRADICTED]
    assert rec["verdict"] == INCONCLUSIVE and "disagree" in rec["reason"]
    e, f = _planted(9.0, sd=1.0, n=60, seed=11)
    assert _judge(claim, _result(a, b, seed=0), _result(e, f, seed=1))["verdict"] \
        == REPRODUCED


def test_a_size_word_takes_a_margin_and_no_equality_takes_one():
    with pytest.raises(ValueError, match="margin"):
        _sized(HIGHER, SMALL, margin=None)
    with pytest.raises(ValueError, match="size"):
        _sized(HIGHER, "tiny")
    with pytest.raises(ValueError, match="margin"):
        _sized(HIGHER, None, margin=0.1)  # a bare direction takes no margin


@pytest.mark.parametrize("paper", ["vits", "vts", "renyi", "opvi", "diffts"])
def test_rejudging_a_published_page_gives_its_verdicts_back(paper):
    """Each published claims.json, re-judged from its stored intervals by the table's
    current rule, gives every stored verdict back (the pages are what the rule says)."""
    from pathlib import Path

    from vits_ref.experiments.claims.records import rejudge

    path = Path(__file__).resolve().parents[1] / "docs" / "reproduction" / paper / "claims.json"
    if not path.exists():
        pytest.skip(f"no published {path}")
    stored = json.loads(path.read_text())["claims"]
    again = rejudge(stored, CLAIMS)
    assert [c["id"] for c in again] == [c["id"] for c in stored]
    assert [c["verdict"] for c in again] == [c["verdict"] for c in stored]
    assert [[s["verdict"] for s in c["seeds"]] for c in again] == \
        [[s["verdict"] for s in c["seeds"]] for c in stored]
