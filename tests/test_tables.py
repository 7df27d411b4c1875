"""The experiments' regret table (vits_ref.experiments._common.regret_table) says why
equal numbers are equal: at tiny sizes methods that share their random streams can pull
the same arms in every round, which looks like a copied result."""

import numpy as np

from vits_ref.experiments._common import regret_table


def test_the_table_says_why_two_methods_have_equal_regrets():
    """vits-figG at 2 runs x 20 rounds: VITS-I and VITS-II had equal final regrets in
    every run (the same arms: shared streams, draws too close to choose apart), which
    looked like a copied result; the table now says why."""
    def entry(method, regrets):
        return {"panel": "linear", "method": method, "final_regrets": regrets,
                "final_regret_mean": float(np.mean(regrets)), "final_regret_stderr": 1.0,
                "us_per_round": 1.0}

    result = {"results": [entry("VITS-I", [15.97, 8.95]), entry("VITS-II", [15.97, 8.95]),
                          entry("LinTS", [15.97, 9.0])]}
    lines = regret_table(result).splitlines()
    notes = [x for x in lines if "not a copied result" in x]
    assert len(notes) == 1 and notes[0].startswith("linear: VITS-I = VITS-II"), lines
