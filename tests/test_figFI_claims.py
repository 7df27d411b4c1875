"""Appendices F and I at small sizes: files, summary fields and the claims' verdicts.

The claims must come out the same from the dict ``run`` returns and from its
``summary.json`` read back (the reproduction report reloads it).
"""

import json
import os

import pytest

from vits_ref.experiments._claims import NOT_REPRODUCED, REPRODUCED, VERDICTS
from vits_ref.experiments._common import write_json
from vits_ref.experiments.vits import figF, figI


def _round_trip(result, tmp_path):
    path = os.path.join(tmp_path, "again.json")
    write_json(path, result)
    with open(path) as fh:
        return json.load(fh)


def _check_claims(module, result, tmp_path, n):
    direct = module.claims(result)
    assert len(direct) == n
    for c in direct:
        assert c["verdict"] in VERDICTS
        assert c["quote"] and c["measured"] and c["why"]
        assert f"{result['runs']} seeds" in c["measured"]  # the size that was run
    assert module.claims(_round_trip(result, tmp_path)) == direct
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
    by = _check_claims(figF, res, tmp_path, 3)
    assert by["figF-vi-i-equals-vi-ii"]["verdict"] == REPRODUCED
    # VI reaches eps in a few hundred steps, LMC is censored at 2000: fewer by censoring
    assert by["figF-vi-fewer-steps"]["verdict"] == REPRODUCED
    assert "censored" in by["figF-linear-in-kappa"]["measured"]


def _fake_figF(medians_vi1, medians_vi2, medians_lmc, kappas=(2.5, 5.0, 10.0, 20.0)):
    """A figF summary with one step size and 5 seeds whose counts are all the median."""
    res = {"runs": 5, "cap": 50000, "eps": 0.1, "dim": 10, "step_key": "step_size",
           "results": []}
    for label, meds in (("VI-I", medians_vi1), ("VI-II", medians_vi2), ("LMC", medians_lmc)):
        for k, m in zip(kappas, meds, strict=True):
            reached = m < 50000
            res["results"].append({
                "method": label, "step_size": 0.1, "kappa": k, "median_steps": float(m),
                "median_censored": not reached, "fraction_reached": float(reached),
                "steps": [int(m) + d for d in (-2, -1, 0, 1, 2)] if reached else [50000] * 5,
                "reached": [reached] * 5})
    return res


def test_figF_claim_rules_on_constructed_results():
    linear = [100, 200, 400, 800]
    by = {c["id"]: c for c in figF.claims(_fake_figF(linear, linear,
                                                     [10 * x for x in linear]))}
    assert by["figF-vi-i-equals-vi-ii"]["verdict"] == REPRODUCED
    assert by["figF-linear-in-kappa"]["verdict"] == REPRODUCED
    assert by["figF-vi-fewer-steps"]["verdict"] == REPRODUCED
    # VI-I 30% slower than VI-II; LMC flat in kappa and faster than VI
    by = {c["id"]: c for c in figF.claims(_fake_figF([130, 260, 520, 1040], linear,
                                                     [50, 900, 50, 900]))}
    assert by["figF-vi-i-equals-vi-ii"]["verdict"] == NOT_REPRODUCED
    assert by["figF-linear-in-kappa"]["verdict"] == NOT_REPRODUCED
    assert by["figF-vi-fewer-steps"]["verdict"] == NOT_REPRODUCED
    # LMC censored at every kappa: its kappa dependence cannot be fitted
    by = {c["id"]: c for c in figF.claims(_fake_figF(linear, linear, [50000] * 4))}
    assert by["figF-linear-in-kappa"]["verdict"] == "not testable here"
    assert by["figF-vi-fewer-steps"]["verdict"] == REPRODUCED


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
    by = _check_claims(figI, res, tmp_path, 2)
    assert by["figI-vits-ii-faster-than-lmc"]["verdict"] == REPRODUCED


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
