"""Paired comparisons of the experiments (vits_ref.experiments._paired) against SciPy and
against their own promised coverage."""

import json

import numpy as np
import pytest
from scipy import stats

from vits_ref.experiments._paired import (
    HIGHER,
    LOWER,
    NO_DIFFERENCE,
    compare,
    format_difference,
    paired_difference,
)


def test_t_interval_is_scipys_paired_t_test():
    rng = np.random.default_rng(0)
    y = rng.normal(100, 20, 30)
    x = y + rng.normal(1.5, 4, 30)
    d = paired_difference(x, y)
    want = stats.ttest_rel(x, y)
    ci = want.confidence_interval(0.95)
    np.testing.assert_allclose(d["ci"], [ci.low, ci.high], rtol=1e-12)
    assert d["p_value"] == pytest.approx(want.pvalue, rel=1e-12)
    assert d["mean"] == pytest.approx(np.mean(x - y), rel=1e-14)
    assert d["stderr"] == pytest.approx(stats.sem(x - y), rel=1e-12)
    assert d["relative"] == pytest.approx(np.mean(x - y) / np.mean(y), rel=1e-12)
    # the BCa interval is another estimate of the same thing: close to the t interval
    # for near-normal differences (within a quarter of the t interval's width)
    width = ci.high - ci.low
    assert abs(d["ci_bootstrap"][0] - ci.low) < width / 4
    assert abs(d["ci_bootstrap"][1] - ci.high) < width / 4


def test_bootstrap_is_reproducible_and_seeded():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=20), rng.normal(size=20)
    assert paired_difference(x, y)["ci_bootstrap"] == paired_difference(x, y)["ci_bootstrap"]
    assert (paired_difference(x, y, seed=1)["ci_bootstrap"]
            != paired_difference(x, y, seed=2)["ci_bootstrap"])


def test_coverage_of_the_t_interval():
    """400 data sets with a known mean difference of 2: the 95% interval covers it in
    380 +- 4.4 of them (binomial); 3.5 standard deviations either side cannot fail by
    chance in practice (p < 5e-4) and catches a wrong quantile or a missing sqrt(n)."""
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(400):
        y = rng.normal(50, 10, 25)
        x = y + 2.0 + rng.standard_t(5, 25)
        lo, hi = paired_difference(x, y, n_resamples=200)["ci"]
        covered += lo <= 2.0 <= hi
    assert 365 <= covered <= 395


def test_verdicts_and_degenerate_cases():
    y = np.arange(10.0)
    assert paired_difference(y + 5 + 0.1 * np.sin(y), y)["verdict"] == HIGHER
    assert paired_difference(y - 5 + 0.1 * np.sin(y), y)["verdict"] == LOWER
    assert paired_difference(y + np.sin(7 * y), y)["verdict"] == NO_DIFFERENCE
    same = paired_difference(y, y)
    assert same["ci"] == [0.0, 0.0] and same["verdict"] == NO_DIFFERENCE
    shifted = paired_difference(y + 1, y)  # every difference is 1: an exact interval
    assert shifted["ci"] == [1.0, 1.0] and shifted["verdict"] == HIGHER
    one = paired_difference([3.0], [1.0])
    assert one["mean"] == 2.0 and one["ci"] is None and one["verdict"] is None
    assert format_difference(one) == "+2.0"
    json.dumps(paired_difference(y + np.sin(y), y))  # plain floats, JSON-ready


def test_bad_input():
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_difference([1.0, np.nan], [1.0, 2.0])


def test_compare_against_a_reference():
    rng = np.random.default_rng(3)
    base = rng.normal(100, 10, 12)
    entries = [{"method": "ref", "final_regrets": base.tolist()},
               {"method": "worse", "final_regrets": (base + 10 + rng.normal(0, 1, 12)).tolist()},
               {"method": "diverged"}]
    out = compare(entries, "ref")
    assert set(out) == {"worse"} and out["worse"]["verdict"] == HIGHER
    assert compare(entries, "absent") == {}
    assert format_difference(out["worse"]).startswith("+")
