"""Claims of vits-fig2 (section 4.1, Figure 2) and vits-movielens (section 5, Figure 3).

Tiny runs check the paired differences, the stand-in statement and that every claim gets
a verdict (also after a JSON round trip); the verdict rules are checked on hand-made
summaries whose answer is known (the paper's size of Figure 2 costs about 28 CPU-hours,
and the real MovieLens file cannot be downloaded here).
"""

import json

import numpy as np
import pytest

from vits_ref.experiments import _claims
from vits_ref.experiments._common import write_json
from vits_ref.experiments.vits import fig2, movielens

# the small stand-in of tests/test_movielens.py's experiment test
SMALL = {"n_users": 60, "n_movies": 40, "n_ratings": 800}


def _round_trip(result, path):
    write_json(path, result)
    with open(path) as fh:
        return json.load(fh)


def _verdicts(found):
    assert all(c["verdict"] in _claims.VERDICTS for c in found)
    return {c["id"]: c["verdict"] for c in found}


# -- vits-movielens ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    out = tmp_path_factory.mktemp("movielens")
    return movielens.run(runs=2, rounds=30, seed=1, out=str(out), n_movies=8,
                         synthetic_kwargs=SMALL), out


def test_movielens_states_the_stand_in_cannot_test(stand_in, tmp_path):
    result, out = stand_in
    summary = json.loads((out / "summary.json").read_text())
    assert summary["data"] == "synthetic" and summary["reference"] == "LinTS"
    command = "python -m vits_ref run vits-movielens --data /path/to/ratings.dat"
    assert summary["real_data_command"] == command
    assert "cannot test" in summary["stand_in_note"] and command in summary["stand_in_note"]
    for e in summary["results"]:
        if e["method"] != "LinTS":
            assert e["paired_vs_reference"]["reference"] == "LinTS"
    text = movielens.table(result)
    assert "cannot test" in text and command in text
    found = movielens.claims(result)
    assert _verdicts(found) == {"movielens-lints-ill-suited": _claims.NOT_TESTABLE,
                                "movielens-vits-beats-lmc": _claims.NOT_TESTABLE}
    # the stand-in's numbers are given for information, with the command in the why
    assert all("[" in c["measured"] and command in c["why"] for c in found)
    back = movielens.claims(_round_trip(result, tmp_path / "s.json"))
    assert [(c["verdict"], c["measured"]) for c in back] == \
        [(c["verdict"], c["measured"]) for c in found]


def _fake_movielens(shifts, data="file", runs=10):
    rng = np.random.default_rng(0)
    base = rng.uniform(100, 200, size=runs)
    results = [{"panel": "MovieLens", "method": m,
                "final_regrets": (base + s + rng.normal(0, 1, runs)).tolist()}
               for m, s in shifts.items()]
    return {"runs": runs, "rounds": 1000, "n_movies": 100, "data": data, "results": results}


def test_movielens_rules_on_real_data():
    win = {"LinTS": 0.0, "LMC-TS": -20.0, "VITS-II": -30.0, "VITS-II HF": -25.0,
           "Laplace": -30.0}
    assert set(_verdicts(movielens.claims(_fake_movielens(win))).values()) == \
        {_claims.REPRODUCED}
    lose = {"LinTS": 0.0, "LMC-TS": -20.0, "VITS-II": 10.0, "VITS-II HF": -25.0}
    assert set(_verdicts(movielens.claims(_fake_movielens(lose))).values()) == \
        {_claims.NOT_REPRODUCED}
    # the same numbers from the stand-in decide nothing
    assert set(_verdicts(movielens.claims(_fake_movielens(win, "synthetic"))).values()) == \
        {_claims.NOT_TESTABLE}


# -- vits-fig2 -----------------------------------------------------------------------------

def test_fig2_small_run_is_not_testable(tmp_path):
    result = fig2.run(runs=2, rounds=1, seed=0, out=str(tmp_path))
    assert result["reference"] == "VITS-II"
    for e in result["results"]:
        if e["method"] != "VITS-II":
            assert e["paired_vs_reference"]["reference"] == "VITS-II"
    found = fig2.claims(result)
    assert _verdicts(found) == {"fig2-vits-ii-best": _claims.NOT_TESTABLE,
                                "fig2-lmc-gap-conditioning": _claims.NOT_TESTABLE}
    assert all("2 runs x 1 rounds" in c["measured"] for c in found)
    back = fig2.claims(_round_trip(result, tmp_path / "s.json"))
    assert [(c["verdict"], c["measured"]) for c in back] == \
        [(c["verdict"], c["measured"]) for c in found]


def _fake_fig2(shifts, runs=50):
    """``shifts[panel][method]``: a constant added to shared per-run base regrets."""
    rng = np.random.default_rng(1)
    base = rng.uniform(50, 100, size=runs)
    results = [{"panel": p, "method": m,
                "final_regrets": (base + s + rng.normal(0, 1, runs)).tolist()}
               for p, by in shifts.items() for m, s in by.items()]
    return {"runs": runs, "rounds": 1000, "results": results}


def test_fig2_rules_at_paper_size():
    hf = fig2.HF
    good = {"zeta = 0.1": {"VITS-II": 0.0, hf: 3.0, "LMC-TS": 40.0, "LinTS": 80.0},
            "zeta = 1": {"VITS-II": 0.0, hf: 1.0, "LMC-TS": 10.0, "LinTS": 80.0}}
    assert set(_verdicts(fig2.claims(_fake_fig2(good))).values()) == {_claims.REPRODUCED}
    bad = {"zeta = 0.1": {"VITS-II": 0.0, hf: -10.0, "LMC-TS": 10.0, "LinTS": 80.0},
           "zeta = 1": {"VITS-II": 0.0, hf: 1.0, "LMC-TS": 40.0, "LinTS": 80.0}}
    assert set(_verdicts(fig2.claims(_fake_fig2(bad))).values()) == \
        {_claims.NOT_REPRODUCED}
    # below the paper's size nothing is decided
    assert set(_verdicts(fig2.claims(_fake_fig2(good, runs=20))).values()) == \
        {_claims.NOT_TESTABLE}
