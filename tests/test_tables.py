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


def _entry(method, regrets, panel="plain sampling"):
    return {"panel": panel, "method": method, "final_regrets": regrets,
            "final_regret_mean": float(np.mean(regrets)), "final_regret_stderr": 1.0,
            "us_per_round": 1.0}


def test_the_renyi_table_gives_its_own_reason_for_equal_alphas():
    """renyi-mab at 2 runs x 20 rounds: every alpha had the same regret in every run (Adam's
    steps move every alpha's narrow q alike from the N(25, 1e-8) start); the table says
    that, not the generic shared-streams reason."""
    from vits_ref.experiments.renyi import mab

    result = {"results": [_entry("alpha = 0 (IW bound)", [60.1, 67.2]),
                          _entry("alpha = 0.5", [60.1, 67.2]),
                          _entry("alpha = 1 (KL)", [60.1, 67.2]),
                          _entry("alpha = 1 (KL)", [52.2, 52.9], panel="variance-scaled")]}
    notes = [x for x in mab.table(result).splitlines() if "not a copied result" in x]
    assert len(notes) == 1, notes
    assert notes[0].startswith("plain sampling: alpha = 0 (IW bound) = alpha = 0.5 = "
                               "alpha = 1 (KL)") and "Adam" in notes[0], notes


def test_the_opvi_classifier_table_says_why_accuracies_are_equal():
    """opvi-classifier at 2 runs x 20 rounds: three methods at 52/57 = 0.9123 in both
    splits, se 0 (their particles differ; their predictive labels agree on every test
    row); the table says that accuracy counts test rows, for the equality and the se."""
    from vits_ref.experiments.opvi import classifier

    def entry(method, acc):
        return {"method": method, "final_accuracy": acc,
                "final_accuracy_mean": float(np.mean(acc)),
                "final_accuracy_stderr": float(np.std(acc, ddof=1) / np.sqrt(len(acc))),
                "wall_time_s": 1.0}

    result = {"data": "breast_cancer", "n_train": 512, "n_test": 57, "runs": 2,
              "rounds": 20, "majority_accuracy_mean": 0.63, "data_note": "",
              "results": [entry("OPVI (B_t = t^0.55)", [40 / 57, 45 / 57]),
                          entry("OPVI (B = 20)", [52 / 57, 52 / 57]),
                          entry("SVGD (B = 20)", [52 / 57, 52 / 57])]}
    lines = classifier.table(result).splitlines()
    equal = [x for x in lines if "not a copied result" in x]
    assert len(equal) == 1 and equal[0].startswith("OPVI (B = 20) = SVGD (B = 20) in every "
                                                   "run: as many of the 57 test rows"), lines
    flat = [x for x in lines if x.startswith("+-se 0")]
    assert len(flat) == 1 and "OPVI (B = 20), SVGD (B = 20)" in flat[0] \
        and "B_t" not in flat[0], lines
