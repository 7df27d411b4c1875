"""The rules of vits-fig1's claims, on constructed results whose answer is known, and on a
small real run after a JSON round trip."""

import json

import numpy as np
import pytest

from vits_ref.experiments._claims import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, VERDICTS
from vits_ref.experiments._common import write_json
from vits_ref.experiments.vits import fig1


def _result(shift, runs=40, hf_speed=0.5):
    """A fig1-shaped summary: every method is LinTS's regrets plus ``shift[label]`` plus
    small noise (so the paired intervals are narrow and the verdicts known)."""
    rng = np.random.default_rng(0)
    entries = []
    for zeta in fig1.ZETAS:
        base = rng.normal(150, 30, runs)
        for label, *_ in fig1.METHODS:
            vals = base + shift.get(label, 0.0) + (0 if label == "LinTS" else
                                                   rng.normal(0, 1, runs))
            entries.append({"panel": f"zeta = {zeta:g}", "zeta": zeta, "method": label,
                            "final_regrets": vals.tolist(), "us_per_round": 1.0})
    warm = {label: 10.0 for label, *_ in fig1.METHODS}
    warm[fig1.HF] = 10.0 * hf_speed
    return {"runs": runs, "rounds": 1000, "tuned": False, "results": entries,
            "us_per_round_warm": warm}


def _verdicts(result):
    return {c["id"]: c["verdict"] for c in fig1.claims(result)}


def test_claims_hold_when_the_numbers_say_so():
    v = _verdicts(_result({fig1.HF: 0.0, "LMC-TS (10 steps)": 20.0,
                           "LMC-TS (50 steps)": 0.0}))
    assert v["fig1-vits-ii-like-lints"] == REPRODUCED
    assert v["fig1-hf-slightly-worse"] == REPRODUCED  # within 15% of VITS-II, and faster
    assert v["fig1-zeta1-similar"] == REPRODUCED
    # +10 on ~150 (7%) is "slightly worse" but detectably worse than LinTS at zeta = 1
    v = _verdicts(_result({fig1.HF: 10.0, "LMC-TS (10 steps)": 20.0}))
    assert v["fig1-hf-slightly-worse"] == REPRODUCED
    assert v["fig1-zeta1-similar"] == NOT_REPRODUCED
    assert v["fig1-vits-i-like-vits-ii"] == REPRODUCED
    # LMC-TS (50) equal to LinTS at zeta 0.1: the paper's "underperforms" does not hold
    assert v["fig1-zeta01-lmc-worse"] == NOT_REPRODUCED


def test_claims_fail_when_the_numbers_say_so():
    v = _verdicts(_result({"VITS-II": 30.0, fig1.HF: 90.0, "LMC-TS (50 steps)": 40.0,
                           "extra: VITS-I": -20.0}, hf_speed=2.0))
    assert v["fig1-vits-ii-like-lints"] == NOT_REPRODUCED
    assert v["fig1-hf-slightly-worse"] == NOT_REPRODUCED
    assert v["fig1-zeta1-similar"] == NOT_REPRODUCED  # VITS-II is detectably worse
    assert v["fig1-zeta01-lmc-worse"] == REPRODUCED  # 40 above LinTS and 10 above VITS-II
    assert v["fig1-vits-i-like-vits-ii"] == NOT_REPRODUCED
    # slightly worse but slower: the speed half of the claim fails on its own
    v = _verdicts(_result({fig1.HF: 5.0}, hf_speed=1.5))
    assert v["fig1-hf-slightly-worse"] == NOT_REPRODUCED


def test_a_method_that_did_not_run_makes_its_claims_untestable():
    res = _result({})
    res["results"] = [e for e in res["results"] if e["method"] != fig1.HF]
    v = _verdicts(res)
    assert v["fig1-hf-slightly-worse"] == NOT_TESTABLE
    assert v["fig1-zeta1-similar"] == NOT_TESTABLE
    assert v["fig1-vits-ii-like-lints"] == REPRODUCED


def test_claims_of_a_real_run_survive_json(tmp_path):
    res = fig1.run(runs=3, rounds=40, seed=2, out=str(tmp_path))
    write_json(tmp_path / "again.json", res)
    back = json.loads((tmp_path / "again.json").read_text())
    a, b = fig1.claims(res), fig1.claims(back)
    assert a == b and len(a) == 5
    assert all(c["verdict"] in VERDICTS for c in a)
    assert all("3 runs x 40 rounds" in c["measured"] for c in a)
    # every non-reference entry has its paired difference against LinTS
    for e in res["results"]:
        if e["method"] != "LinTS" and "final_regrets" in e:
            assert e["paired_vs_reference"]["reference"] == "LinTS"
            assert len(e["final_regrets"]) == 3


@pytest.mark.parametrize("name", ["vits-hf-sym", "lmc"])
def test_smaller_steps_are_the_grid_steps_below_the_default(name):
    steps = fig1.smaller_steps(name, {})
    assert [p["step_size"] for p in steps] == [0.001]
    if name == "vits-hf-sym":  # the square root keeps its halved step
        assert steps[0]["cov_step_size"] == pytest.approx(0.0005)
