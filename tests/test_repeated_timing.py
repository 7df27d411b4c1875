"""The repeated-timing measure of the timing claims (RepeatedTimeRatio, paired_time_ratio), on
planted timings whose ratio is known: a planted ratio with spread is found, a planted equal
time is not called faster, the interval covers at its nominal rate, one timing is never
conclusive, and claims.json and the page carry the repeats' spread."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from vits_ref.experiments.claims import (
    CONTRADICTED,
    INCONCLUSIVE,
    REPRODUCED,
    Claim,
    Interval,
    judged,
    verdict,
    write_claims_json,
)
from vits_ref.experiments.claims.judging import EQUAL, LOWER
from vits_ref.experiments.claims.measures import (
    EntryTimeRatio,
    EntryTimeRatioPer,
    RepeatedTimeRatio,
    TimeRatio,
    TimeToLevel,
    paired_time_ratio,
)
from vits_ref.experiments.claims.table import CLAIMS, SIMILAR

KEY = "us_per_round_warm_repeats"
RATIO = RepeatedTimeRatio((KEY, "A"), (KEY, "B"), "time per round, A / B")


def _claim(claimed, measure=RATIO, **kw):
    return Claim(id="planted", paper="test", experiment="test", where="nowhere",
                 words="a planted timing claim", quantity="time", data="synthetic",
                 measure=measure, claimed=claimed, **kw)


FASTER = _claim(LOWER, threshold=1.0)
SAME = _claim(EQUAL, threshold=1.0, margin=SIMILAR)


def _timings(ratio, n, drift=0.3, noise=0.03, seed=0):
    """Interleaved repeats: repeat r of both sides shares the machine's drift (lognormal,
    sd ``drift`` on the log scale, as a shared machine's minute-to-minute 1.5x), each timing
    has its own noise; A takes ``ratio`` times B's time."""
    rng = np.random.default_rng(seed)
    d = 10.0 * rng.lognormal(0, drift, n)
    return ratio * d * rng.lognormal(0, noise, n), d * rng.lognormal(0, noise, n)


def _summary(ta, tb, seed=0):
    return {"seed": seed, "runs": 1, KEY: {"A": np.atleast_1d(ta).tolist(),
                                           "B": np.atleast_1d(tb).tolist()}}


def test_a_planted_ratio_with_spread_is_found():
    ta, tb = _timings(0.5, 12)
    i = RATIO.measure(_summary(ta, tb))
    assert i.low < 0.5 < i.high < 1.0 and i.n == 12
    # the paired t interval of the log-ratios (SciPy), exponentiated
    logs = np.log(ta) - np.log(tb)
    ci = stats.ttest_1samp(logs, 0.0).confidence_interval(0.95)
    assert (i.low, i.high) == pytest.approx((math.exp(ci.low), math.exp(ci.high)), rel=1e-12)
    assert i.estimate == pytest.approx(math.exp(logs.mean()), rel=1e-12)
    # the spread: the per-repeat ratios' range and median
    per = ta / tb
    assert i.spread == pytest.approx((per.min(), np.median(per), per.max()), rel=1e-12)
    assert judged([FASTER], [_summary(ta, tb)])[0]["verdict"] == REPRODUCED
    # pairing is what removes the drift: Welch's interval on the same timings, unpaired,
    # is several times wider (drift sd 0.3 against a per-timing noise of 0.03)
    welch = TimeRatio("A", "B", key=KEY).measure(_summary(ta, tb))
    assert (i.high - i.low) * 4 < welch.high - welch.low


def test_a_planted_equal_time_is_not_called_faster_and_the_interval_covers():
    """1 000 synthetic sets of 10 interleaved repeats of two equally fast methods: "faster"
    is called in about 2.5% of them (the one-sided error of a 95% interval; the binomial
    sd is 0.5 point, the bound 4% is three of them above), never contradicted more than
    that either, and the interval covers the true ratio 1 in 95% of them within 2 points
    (binomial sd 0.7 point)."""
    calls = {REPRODUCED: 0, CONTRADICTED: 0, INCONCLUSIVE: 0}
    covered = 0
    for k in range(1000):
        ta, tb = _timings(1.0, 10, seed=k)
        i = paired_time_ratio(ta, tb)
        covered += i.low <= 1.0 <= i.high
        calls[verdict(FASTER, i)] += 1
    assert calls[REPRODUCED] <= 40 and calls[CONTRADICTED] <= 40
    assert abs(covered / 1000 - 0.95) <= 0.02


def test_the_same_time_is_reproduced_and_a_double_time_contradicted():
    ta, tb = _timings(1.0, 15, noise=0.01, seed=1)
    assert judged([SAME], [_summary(ta, tb)])[0]["verdict"] == REPRODUCED
    ta, tb = _timings(2.0, 15, noise=0.01, seed=1)
    assert judged([SAME, FASTER], [_summary(ta, tb)])[0]["verdict"] == CONTRADICTED
    assert judged([FASTER], [_summary(ta, tb)])[0]["verdict"] == CONTRADICTED


def test_one_timing_or_unpaired_repeats_are_never_conclusive():
    rec = judged([FASTER], [_summary(1.0, 100.0)])[0]
    assert rec["verdict"] == INCONCLUSIVE and rec["seeds"][0]["ci"] is None
    assert "no spread" in rec["reason"]
    ta, tb = _timings(0.5, 6)
    got = RATIO.measure(_summary(ta, tb[:5]))
    assert isinstance(got, str) and "in pairs" in got
    assert isinstance(RATIO.measure(_summary(ta, -tb)), str)  # a negative time
    assert RATIO.measure({KEY: {"A": [1.0]}}).startswith("not in the summary")


def test_entries_skip_and_factor():
    """Repeats in each method's entry; ``skip`` drops a cold first repeat; ``factor``
    turns a time at 2T over one at T into a ratio that is 1 for a time linear in T."""
    ta, tb = _timings(0.5, 8, seed=2)
    cold = np.concatenate([[1e3 * ta[0]], ta]), np.concatenate([[tb[0]], tb])
    res = {"seed": 0, "results": [
        {"panel": "p", "method": "A", "t": cold[0].tolist()},
        {"panel": "p", "method": "B", "t": cold[1].tolist()}]}
    warm = RepeatedTimeRatio(("A", "t"), ("B", "t"), "A / B", entry=True, panel="p", skip=1)
    assert warm.measure(res) == paired_time_ratio(ta, tb)
    with_cold = RepeatedTimeRatio(("A", "t"), ("B", "t"), "A / B", entry=True, panel="p")
    assert with_cold.measure(res).high > warm.measure(res).high
    assert "did not run" in RepeatedTimeRatio(("C", "t"), ("B", "t"), "C / B",
                                              entry=True, panel="p").measure(res)
    # time at 2T over time at T, halved: 1 for a linear time, 2 for a quadratic one
    per_t = RepeatedTimeRatio(("t", "2T"), ("t", "T"), "time(2T) / (2 time(T))", factor=0.5)
    linear = _claim(EQUAL, measure=per_t, threshold=1.0, margin=SIMILAR)
    for growth, want in ((2.0, REPRODUCED), (4.0, CONTRADICTED)):
        t2, t1 = _timings(growth, 12, noise=0.01, seed=3)
        rec = judged([linear], [{"seed": 0, "t": {"2T": t2.tolist(), "T": t1.tolist()}}])[0]
        assert rec["verdict"] == want, (growth, rec["measured"])
        assert rec["seeds"][0]["estimate"] == pytest.approx(growth / 2, rel=0.05)


def test_per_divides_by_a_number_of_the_summary():
    """``per`` divides the ratio by the summary's number (DiffTS "T times as costly":
    chunk timings over T); a summary without that number is not measured."""
    ta, tb = _timings(50.0, 10, seed=4)
    res = {"seed": 0, "n_stages": 100, "results": [
        {"panel": "p", "method": "A", "t": ta.tolist()},
        {"panel": "p", "method": "B", "t": tb.tolist()}]}
    m = RepeatedTimeRatio(("A", "t"), ("B", "t"), "A / B / T", entry=True, panel="p",
                          per="n_stages")
    got, want = m.measure(res), paired_time_ratio(ta, tb, factor=1 / 100)
    assert (got.estimate, got.low, got.high) == (want.estimate, want.low, want.high)
    assert got.estimate == pytest.approx(0.5, rel=0.1)
    assert "n_stages" in m.measure({**res, "n_stages": 0})
    assert "n_stages" in m.measure({k: v for k, v in res.items() if k != "n_stages"})


def test_claims_json_and_the_page_carry_the_spread(tmp_path):
    ta, tb = _timings(0.5, 12)
    rec = judged([FASTER], [_summary(ta, tb, seed=0), _summary(*_timings(0.5, 12, seed=9),
                                                               seed=1)])[0]
    assert rec["verdict"] == REPRODUCED and rec["runs"] == 24
    back = json.loads(write_claims_json(tmp_path / "c.json", [rec]).read_text())["claims"][0]
    for s in back["seeds"]:
        sp = s["spread"]
        assert sp["min"] <= sp["median"] <= sp["max"] and s["n"] == 12
        assert s["method"] == "interleaved repeated timings, paired t on log-ratios"
    assert "12 repeats: from" in rec["measured"]


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="a must be"):
        RepeatedTimeRatio("A", (KEY, "B"), "x")
    with pytest.raises(ValueError, match="factor"):
        RepeatedTimeRatio((KEY, "A"), (KEY, "B"), "x", factor=0.0)
    with pytest.raises(ValueError, match="skip"):
        RepeatedTimeRatio((KEY, "A"), (KEY, "B"), "x", skip=-1)
    with pytest.raises(ValueError, match="spread"):
        Interval(1.0, 0.5, 2.0, 3, spread=(2.0, 1.0, 3.0))


def test_every_timing_claim_of_the_table_reads_repeats():
    """No timing claim of the table rests on one timing: each reads repeats (fig1's,
    MovieLens's, the OPVI BNN's two and figI's fifteen interleaved; DiffTS's three cost
    claims per chunk of runs)."""
    timing = (RepeatedTimeRatio, TimeRatio, EntryTimeRatio, EntryTimeRatioPer, TimeToLevel)
    timed = [c for c in CLAIMS if isinstance(c.measure, timing)]
    assert len(timed) == 22
    for c in timed:
        m = c.measure
        assert isinstance(m, RepeatedTimeRatio) or (isinstance(m, TimeToLevel) and m.paired), \
            c.id
