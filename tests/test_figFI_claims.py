"""Appendices F and I at small sizes: files, summary fields and the claims' verdicts.

The claims must come out the same from the dict ``run`` returns and from its
``summary.json`` read back (the reproduction report reloads it).
"""

import json
import os

import numpy as np
import pytest

from vits_ref.experiments._common import write_json
from vits_ref.experiments.claims import (
    CONTRADICTED,
    INCONCLUSIVE,
    REPRODUCED,
    VERDICTS,
    claims_of,
    judged_claims,
)
from vits_ref.experiments.vits import figF, figI


def _round_trip(result, tmp_path):
    path = os.path.join(tmp_path, "again.json")
    write_json(path, result)
    with open(path) as fh:
        return json.load(fh)


def _check_claims(module, result, tmp_path, n):
    direct = judged_claims(module.NAME, result)
    assert len(direct) == n
    for c in direct:
        assert c["verdict"] in VERDICTS
        assert c["quote"] and c["measured"] and c["why"]
        assert f"{result['runs']} runs x" in c["measured"]  # the size that was run
    assert judged_claims(module.NAME, _round_trip(result, tmp_path)) == direct
    return {c["id"]: c for c in direct}


@pytest.fixture(scope="module")
def figF_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("figF")
    return figF.run(runs=3, rounds=2000, seed=2, out=str(out), kappas=(2.5, 10.0, 20.0),
                    step_sizes=(0.01, 0.1)), out


@pytest.fixture(scope="module")
def figI_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("figI")
    return figI.run(runs=20, rounds=1500, seed=2, out=str(out)), out


def test_figF_writes_its_files_and_new_fields(figF_result):
    res, out = figF_result
    for f in ("steps.csv", "summary.json", "steps.png"):
        assert (out / f).exists(), f
    assert res["target"].startswith("Sigma* eigenvalues log-spaced in [1, kappa]")
    assert res["dim"] == 10 and res["eps"] == 0.1 and res["step_values"] == [0.01, 0.1]
    for e in res["results"]:
        assert len(e["steps"]) == len(e["reached"]) == 3
        assert e["median_censored"] == (2 * (3 - sum(e["reached"])) >= 3)
        assert all(s == res["cap"] for s, ok in zip(e["steps"], e["reached"], strict=True)
                   if not ok)
    # the cap is 2000, LMC needs more: censored everywhere, which the table marks
    assert all(e["median_censored"] for e in res["results"] if e["method"] == "LMC")
    assert "> 2000" in figF.table(res)
    assert "step size 0.01" in figF.table(res)


def test_figF_claims(figF_result, tmp_path):
    res, _ = figF_result
    by = _check_claims(figF, res, tmp_path, len(claims_of(figF.NAME)))
    # h = 0.001 was not run: its claims are not measured
    assert by["figF-vi-i-like-vi-ii-h0.001"]["reason"].startswith("not measured")
    # LMC is censored at the cap of 2000 everywhere: no trend of LMC can be measured
    assert by["figF-lmc-linear-in-kappa-h0.1"]["verdict"] == INCONCLUSIVE
    assert "censored" in by["figF-lmc-linear-in-kappa-h0.1"]["reason"]


def _fake_figF(vi1, vi2, lmc, kappas=(2.5, 5.0, 10.0, 20.0), runs=20, cap=50000, seed=0):
    """A figF summary at the three step sizes whose per-seed counts are ``f(kappa)`` times a
    lognormal factor of sd 5% (the same factor for the three methods of a seed: paired)."""
    rng = np.random.default_rng(seed)
    res = {"runs": runs, "cap": cap, "eps": 0.1, "dim": 10, "step_key": "step_size",
           "results": []}
    for h in (0.001, 0.01, 0.1):
        for k in kappas:
            shared = rng.lognormal(0.0, 0.05, runs)
            for label, f in (("VI-I", vi1), ("VI-II", vi2), ("LMC", lmc)):
                steps = np.minimum(np.rint(f(k) * shared * rng.lognormal(0, 0.01, runs)), cap)
                res["results"].append({"method": label, "step_size": h, "kappa": k,
                                       "steps": steps.astype(int).tolist(),
                                       "reached": (steps < cap).tolist()})
    return res


def _figF_verdicts(res):
    return {c["id"]: c["verdict"] for c in judged_claims(figF.NAME, res)}


def test_figF_rules_reproduced_when_the_paper_holds():
    # VI-I = VI-II, both and LMC linear in kappa, LMC ten times slower
    v = _figF_verdicts(_fake_figF(lambda k: 40 * k, lambda k: 40 * k, lambda k: 400 * k))
    assert set(v.values()) == {REPRODUCED}, v


def test_figF_rules_contradicted_when_the_opposite_holds():
    # VI-I 30% above VI-II; every count falls with kappa along a convex curve (the parabola
    # sags below its chord by about 20% of the mean); LMC needs a fifth of VI's steps
    def falling(c):
        return lambda k: c * 4000 / k ** 1.5

    v = _figF_verdicts(_fake_figF(lambda k: 1.3 * falling(1)(k), falling(1), falling(0.2)))
    assert set(v.values()) == {CONTRADICTED}, v


def test_figF_rules_inconclusive_on_a_tiny_run():
    v = _figF_verdicts(_fake_figF(lambda k: 40 * k, lambda k: 40 * k, lambda k: 400 * k,
                                  runs=1, kappas=(5.0,)))
    assert set(v.values()) == {INCONCLUSIVE}, v


def test_figF_censored_cells_leave_a_trend_unmeasured():
    # LMC censored at every kappa: its trend is not measured; "fewer" still holds, since a
    # censored LMC count is a lower bound of its steps
    got = {c["id"]: c for c in judged_claims(figF.NAME, _fake_figF(
        lambda k: 40 * k, lambda k: 40 * k, lambda k: 1e6, cap=50000))}
    assert got["figF-lmc-linear-in-kappa-h0.1"]["verdict"] == INCONCLUSIVE
    assert got["figF-lmc-linear-in-kappa-h0.1"]["reason"].startswith("not measured")
    assert got["figF-vi-ii-fewer-steps-than-lmc-h0.1"]["verdict"] == REPRODUCED


def test_figI_writes_its_files_and_new_fields(figI_result):
    res, out = figI_result
    for f in ("kl_vs_time.csv", "summary.json", "kl_vs_time.png"):
        assert (out / f).exists(), f
    assert res["step_size"] == 0.1 and res["kappa"] == 10.0 and res["dim"] == 10
    assert res["target"].startswith("Sigma* eigenvalues log-spaced in [1, kappa]")
    assert len(res["times_s"]) == len(figI.TIME_FRACTIONS)
    fastest = min(e["us_per_step"] for e in res["results"])
    assert res["times_s"][-1] == pytest.approx(1e-6 * fastest * res["steps"])
    for e in res["results"]:
        assert not any(k.startswith("time_to_kl") for k in e)
        assert [row["time_s"] for row in e["kl_at_times"]] == res["times_s"]
        curve = e["curve"]
        assert curve["steps"][0] == 1 and curve["steps"][-1] == res["steps"]
        assert len(curve["steps"]) == len(curve["median"]) == len(curve["q25"])
        # order statistics: q25 <= median <= q75 wherever all are defined
        for lo, mid, hi in zip(curve["q25"], curve["median"], curve["q75"], strict=True):
            if None not in (lo, mid, hi):
                assert lo <= mid <= hi
    lmc = next(e for e in res["results"] if e["method"] == "LMC")
    assert lmc["kl_at_times"][0]["median"] is None  # still in its burn-in
    assert "burn-in" in figI.table(res) and "us/step" in figI.table(res)


def test_figI_claims(figI_result, tmp_path):
    res, _ = figI_result
    by = _check_claims(figI, res, tmp_path, len(claims_of(figI.NAME)))
    # the costs per step are interleaved repeats: every timing claim has its interval and
    # the repeats' spread (what the verdicts are is the run's finding, not the test's)
    for c in by.values():
        for s in c["seeds"]:
            if s["estimate"] is None:  # a curve that never reaches the level
                continue
            assert s["n"] == figI.TIMING_REPEATS and s["ci"] is not None
            assert s["spread"]["min"] <= s["spread"]["median"] <= s["spread"]["max"]


def _fake_figI(costs, crossings, repeats=7, steps=1000, seed=0):
    """A figI summary whose median KL curve of each method falls from 10 through 1, 0.5 and
    0.2 at ``crossings[method]`` (steps; None: never below 1) and whose cost per step is
    ``costs[method]`` us, repeated ``repeats`` times with a 2% lognormal spread."""
    rng = np.random.default_rng(seed)
    grid = list(range(1, steps + 1, 10))
    results = []
    for m, cost in costs.items():
        at = crossings[m]

        def kl(k, at=at):
            if at is None:
                return 5.0
            return 10.0 if k < at[0] else 0.9 if k < at[1] else 0.45 if k < at[2] else 0.15

        us = (cost * rng.lognormal(0, 0.02, repeats)).tolist() if repeats > 1 else cost
        results.append({"method": m, "us_per_step": us, "us_per_step_repeats": us,
                        "curve": {"steps": grid, **{q: [kl(k) for k in grid]
                                                    for q in figI.QUARTILES}}})
    return {"runs": 1000, "steps": steps, "results": results}


_I_COSTS = {"LMC": 2.0, "VI-I": 4.0, "VI-II": 2.5, figI.HF: 9.0}


def _figI_verdicts(res):
    return {c["id"]: c["verdict"] for c in judged_claims(figI.NAME, res)}


def test_figI_rules_reproduced_when_the_paper_holds():
    # VI reaches each level in a few dozen steps, LMC after its burn-in; VI-I's steps cost
    # so much (its inverse) that it comes last: 31 x 40 us against LMC's 301 x 2 us
    cross = {"LMC": (301, 601, 901), "VI-I": (31, 61, 91), "VI-II": (31, 61, 91),
             figI.HF: (31, 61, 91)}
    v = _figI_verdicts(_fake_figI({**_I_COSTS, "VI-I": 40.0, figI.HF: 3.0}, cross))
    assert set(v.values()) == {REPRODUCED}, v


def test_figI_rules_contradicted_when_the_opposite_holds():
    # LMC reaches every level before VI-II and HF; VI-I, the cheapest, before everyone
    cross = {"LMC": (11, 21, 31), "VI-I": (5, 9, 13), "VI-II": (31, 61, 91),
             figI.HF: (31, 61, 91)}
    v = _figI_verdicts(_fake_figI({**_I_COSTS, "VI-I": 1.0}, cross))
    assert set(v.values()) == {CONTRADICTED}, v


def test_figI_rules_inconclusive_with_single_timings():
    cross = {"LMC": (301, 601, 901), "VI-I": (31, 61, 91), "VI-II": (31, 61, 91),
             figI.HF: (31, 61, 91)}
    found = judged_claims(figI.NAME, _fake_figI(_I_COSTS, cross, repeats=1))
    assert {c["verdict"] for c in found} == {INCONCLUSIVE}
    assert all("no interval" in c["reason"] for c in found)
    # a method that never reaches a level is not measured when it is the one claimed faster
    cross["VI-II"] = None
    got = {c["id"]: c for c in judged_claims(figI.NAME, _fake_figI(_I_COSTS, cross))}
    assert got["figI-vi-ii-faster-than-lmc-kl1"]["reason"].startswith("not measured")


def test_figI_crossing_times_read_the_sampled_curve():
    entry = {"us_per_step": 2.0, "curve": {"steps": [1, 2, 3, 10],
                                           "q25": [None, 0.5, 0.1, 0.05],
                                           "median": [None, 0.9, 0.4, 0.15],
                                           "q75": [None, 2.0, 1.5, 0.6]}}
    t = figI.crossing_times(entry, 0.2)
    assert t["q25"] == pytest.approx(3 * 2e-6)
    assert t["median"] == pytest.approx(10 * 2e-6)
    assert t["q75"] is None


def test_figF_steps_do_not_depend_on_threads(tmp_path):
    import numba

    got = []
    try:
        for n in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(n)
            res = figF.run(runs=3, rounds=600, seed=4, out=str(tmp_path / str(n)),
                           kappas=(5.0,), step_sizes=(0.1,), methods=("VI-II", "LMC"))
            got.append([e["steps"] for e in res["results"]])
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert all(g == got[0] for g in got)
