"""vits-figG (appendix G): grid defaults, paired differences, the arm histogram, claims.

Small runs (a few runs of a few dozen rounds) check what is written and that every claim
gets a verdict; the verdict rules themselves are checked on hand-made summaries whose
answer is known.
"""

import json

import numpy as np
import pytest

from vits_ref.envs import hard_instance
from vits_ref.experiments import _claims
from vits_ref.experiments._common import write_json
from vits_ref.experiments.vits import figG, grid

CLAIM_IDS = ["figG-vits-i-best-approximate-linear", "figG-vits-like-lints-linear",
             "figG-vits-best-logistic", "figG-vits-ii-like-vits-i", "figG-lmc-histogram"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("figG")
    return figG.run(runs=3, rounds=40, seed=2, out=str(out)), out


def _round_trip(result, tmp_path):
    write_json(tmp_path / "s.json", result)
    with open(tmp_path / "s.json") as fh:
        return json.load(fh)


def test_defaults_are_grid_points():
    for reward, points in figG.DEFAULT_POINTS.items():
        assert set(points) == {m[0] for m in figG.METHODS}
        for label, _name, kind in figG.METHODS:
            assert points[label] in grid.points(kind), (reward, label)
    # the policies are built with those points and the model matching the rewards
    pols = dict(figG.policies("logistic"))
    assert pols["VITS-II"].engine.model.name == "logistic"
    assert pols["LinTS"].engine.model.name == "linear"   # misspecified on purpose
    assert pols["LMC-TS"].engine.eta == figG.DEFAULT_POINTS["logistic"]["LMC-TS"]["eta"]


def test_files_and_summary_fields(small):
    result, out = small
    for f in ("curves.csv", "summary.json", "regret.png", "arms.png"):
        assert (out / f).stat().st_size > 0, f
    assert str(out / "arms.png") in result["files"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference"] == "LinTS" and "VTS" in summary["vts_note"]
    assert "misspecified" in summary["reference_note"]
    for e in summary["results"]:
        assert len(e["final_regrets"]) == 3
        if e["method"] != "LinTS":
            assert e["paired_vs_reference"]["reference"] == "LinTS"
            assert len(e["paired_vs_reference"]["ci"]) == 2
    # the pull fractions: every method of both panels, from the same runs
    assert set(summary["arm_pulls"]) == {"linear rewards", "logistic rewards"}
    for methods in summary["arm_pulls"].values():
        assert set(methods) == {m[0] for m in figG.METHODS}
        for p in methods.values():
            assert p["optimal_is_best_runs"] == p["n_runs"] == 3
            assert p["optimal"] + p["near_optimal"] + p["others"] == pytest.approx(1.0)
            assert np.mean(p["per_run"]["optimal"]) == pytest.approx(p["optimal"])
            assert 0 <= p["last_half_optimal"] <= 1
    assert summary["hyperparameters"]["logistic rewards"]["VITS-I"]["model"] == "logistic"
    text = figG.table(result)
    assert "arms pulled" in text and "VTS" in text and "LinTS" in text


def test_claims_have_verdicts_and_survive_json(small, tmp_path):
    result, _ = small
    found = figG.claims(result)
    assert [c["id"] for c in found] == CLAIM_IDS
    assert all(c["verdict"] in _claims.VERDICTS for c in found)
    back = figG.claims(_round_trip(result, tmp_path))
    assert [(c["verdict"], c["measured"]) for c in back] == \
        [(c["verdict"], c["measured"]) for c in found]


def test_arm_pulls_counts_the_instances_arms():
    env = hard_instance(dim=4, n_arms=5, seed=0)
    arms = np.array([[0, 0, 1, 3], [1, 1, 1, 0]])
    p = figG.arm_pulls(arms, env, seed=7)
    assert p["optimal"] == pytest.approx(3 / 8) and p["near_optimal"] == pytest.approx(4 / 8)
    assert p["others"] == pytest.approx(1 / 8)
    assert p["per_run"]["optimal"] == [0.5, 0.25]
    assert p["last_half_optimal"] == pytest.approx(1 / 4)
    assert p["optimal_is_best_runs"] == 2  # arm 0 is theta*, the best arm, by construction


def test_tuning_records_scores_and_choice(tmp_path):
    res = figG.run(runs=2, rounds=20, seed=1, out=str(tmp_path), rewards=("linear",),
                   methods=["VITS-II"], tune=True, tune_runs=2)
    assert res["tuned"] and res["tune_seed"] == 1 + figG.TUNE_SEED_OFFSET
    rec = res["tuning"]["linear rewards"]
    assert set(rec) == {"LinTS", "VITS-II"}
    assert len(rec["LinTS"]["scores"]) == 12 and len(rec["VITS-II"]["scores"]) == 36
    for label, r in rec.items():
        ok = [s for s in r["scores"] if "diverged" not in s]
        best = min(ok, key=lambda s: s["final_regret_mean"])["point"]
        assert r["chosen"] == best
        assert r["diverged_points"] == [s["point"] for s in r["scores"] if "diverged" in s]
        used = res["hyperparameters"]["linear rewards"][label]
        assert all(used[k] == v for k, v in best.items())
    # claims needing the missing methods are not testable, the others still decided
    verdicts = {c["id"]: c["verdict"] for c in figG.claims(res)}
    assert verdicts["figG-vits-best-logistic"] == _claims.NOT_TESTABLE
    assert verdicts["figG-lmc-histogram"] == _claims.NOT_TESTABLE


# -- the rules, on hand-made summaries ---------------------------------------------------

def _fake(regrets, optimal, runs=10, same_vits=True):
    """A summary with per-run final regrets ``base + regrets[panel][method]`` (a method's
    regret is shifted by a constant plus small noise) and pull fractions. ``same_vits``:
    VITS-I and VITS-II without noise (equal shifts give identical regrets, as the two
    pick the same arms on the hard instance)."""
    rng = np.random.default_rng(0)
    base = rng.uniform(20, 60, size=runs)
    results, pulls = [], {}
    for panel, by_method in regrets.items():
        for method, shift in by_method.items():
            noise = (0 if same_vits and method.startswith("VITS")
                     else rng.normal(0, 0.5, runs))
            final = base + shift + noise
            results.append({"panel": panel, "method": method, "final_regrets": final.tolist(),
                            "us_per_round": 10.0})
            opt = np.clip(optimal[method] + rng.normal(0, 0.01, runs), 0, 1)
            pulls.setdefault(panel, {})[method] = {
                "optimal": float(opt.mean()), "near_optimal": float(1 - opt.mean()),
                "others": 0.0, "per_run": {"optimal": opt.tolist()}}
    return {"runs": runs, "rounds": 1000, "tuned": False, "results": results,
            "arm_pulls": pulls}


def _verdicts(result):
    return {c["id"]: c["verdict"] for c in figG.claims(result)}


def test_rules_reproduced_when_vits_wins():
    shifts = {"LinTS": 0.0, "LMC-TS": 30.0, "VITS-I": -1.0, "VITS-II": -1.0}
    res = _fake({"linear rewards": shifts,
                 "logistic rewards": {**shifts, "LinTS": 20.0}},
                {"LinTS": 0.8, "LMC-TS": 0.4, "VITS-I": 0.8, "VITS-II": 0.8})
    assert set(_verdicts(res).values()) == {_claims.REPRODUCED}


def test_rules_not_reproduced_when_lmc_wins():
    shifts = {"LinTS": 0.0, "LMC-TS": -30.0, "VITS-I": 25.0, "VITS-II": 60.0}
    res = _fake({"linear rewards": shifts, "logistic rewards": shifts},
                {"LinTS": 0.8, "LMC-TS": 0.9, "VITS-I": 0.5, "VITS-II": 0.5},
                same_vits=False)
    assert set(_verdicts(res).values()) == {_claims.NOT_REPRODUCED}


def test_rules_untestable_with_one_run():
    shifts = {"LinTS": 0.0, "LMC-TS": 1.0, "VITS-I": 0.0, "VITS-II": 0.0}
    res = _fake({"linear rewards": shifts, "logistic rewards": shifts},
                {m: 0.5 for m in shifts}, runs=1)
    assert set(_verdicts(res).values()) == {_claims.NOT_TESTABLE}


# -- the particle extras (not in the paper): SVGD-TS and OPVI-TS in the logistic panel

def test_particle_lines_in_the_logistic_panel_only(tmp_path):
    labels = list(figG.PARTICLE_LABELS)
    assert labels == ["extra: SVGD-TS", "extra: OPVI-TS"]
    both = figG.run(runs=2, rounds=25, seed=3, out=str(tmp_path / "a"),
                    methods=["LMC-TS", *labels])
    alone = figG.run(runs=2, rounds=25, seed=3, out=str(tmp_path / "b"), methods=["LMC-TS"])
    got = {(e["panel"], e["method"]): e for e in both["results"]}
    # the paper's lines are bit-identical with and without the extras
    for e in alone["results"]:
        assert got[(e["panel"], e["method"])]["final_regrets"] == e["final_regrets"]
    assert both["arm_pulls"] == alone["arm_pulls"]
    logistic = [e["method"] for e in both["results"] if e["panel"] == "logistic rewards"]
    linear = [e["method"] for e in both["results"] if e["panel"] == "linear rewards"]
    assert logistic == ["LinTS", "LMC-TS", *labels] and linear == ["LinTS", "LMC-TS"]
    for label in labels:
        e = got[("logistic rewards", label)]
        assert len(e["final_regrets"]) == 2 and "kl_mean" not in e  # no exact posterior
        assert e["paired_vs_reference"]["reference"] == "LinTS"
        hp = both["hyperparameters"]["logistic rewards"][label]
        assert hp["model"] == "logistic" and hp["eta"] == hp["lam"] == 10.0
        p = both["arm_pulls_particles"]["logistic rewards"][label]
        assert p["optimal"] + p["near_optimal"] + p["others"] == pytest.approx(1.0)
    assert set(both["arm_pulls_particles"]) == {"logistic rewards"}
    text = figG.table(both)
    assert all(label in text for label in labels)
    # the claims see the paper's methods only
    assert [c["id"] for c in figG.claims(both)] == CLAIM_IDS


def test_tune_particles_on_the_logistic_panel():
    grid_ = [{"n_particles": 12, "n_steps": 1, "step_size": 0.01},
             {"n_particles": 12, "n_steps": 2, "step_size": 0.01}]
    got = figG.tune_particles(runs=2, rounds=6, seed=5, grid=grid_)
    assert got["LinTS"]["point"] == figG.DEFAULT_POINTS["logistic"]["LinTS"]
    for label in figG.PARTICLE_LABELS:
        assert [s["point"] for s in got[label]["scores"]] == grid_
        assert sorted(map(str, got[label]["ranked"])) == sorted(map(str, grid_))
