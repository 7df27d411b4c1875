"""Experiment summaries are strict JSON: non-finite numbers are written as null, with a note
of what they were; one run has no standard error."""

import json

import numpy as np
import pytest

from vits_ref.experiments._common import write_json


def test_strict_json(tmp_path):
    path = tmp_path / "x.json"
    write_json(path, {"a": np.inf, "b": [1.0, np.nan], "c": {"d": -np.inf},
                      "e": np.arange(2.0), "f": np.float64(0.5)})

    def refuse(token):
        raise AssertionError(f"non-strict token {token}")

    obj = json.loads(path.read_text(), parse_constant=refuse)
    assert obj["a"] is None and "inf" in obj["a_nulls"]
    assert obj["b"] == [1.0, None] and "NaN" in obj["b_nulls"]
    assert obj["c"] == {"d": None, "d_nulls": obj["c"]["d_nulls"]}
    assert obj["e"] == [0.0, 1.0] and obj["f"] == 0.5


def test_figI_below_the_burn_in_writes_strict_json(tmp_path):
    from vits_ref.experiments.vits import figI

    figI.run(runs=2, rounds=50, out=str(tmp_path))  # 50 steps < LMC's burn-in of 1000
    text = (tmp_path / "summary.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    json.loads(text, parse_constant=lambda t: pytest.fail(t))


def test_one_run_has_no_standard_error(tmp_path):
    from vits_ref.experiments.vits import fig1

    res = fig1.run(runs=1, rounds=5, seed=0, out=str(tmp_path), methods=["LinTS"])
    summary = json.loads((tmp_path / "summary.json").read_text(),
                         parse_constant=lambda t: pytest.fail(t))
    for e in summary["results"]:
        assert e["final_regret_stderr"] is None and "NaN" in e["final_regret_stderr_nulls"]
    assert " n/a " in fig1.table(res)
