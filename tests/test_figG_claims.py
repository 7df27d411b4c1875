"""vits-figG (appendix G): grid defaults, paired differences, the arm histogram, claims.

Small runs (a few runs of a few dozen rounds) check what is written and that every claim
gets a verdict; the verdict rules themselves are checked on hand-made summaries whose
answer is known.
"""

import json

import numpy as np
import pytest

from vits_ref.envs import hard_instance
from vits_ref.experiments import claims
from vits_ref.experiments._common import write_json
from vits_ref.experiments.claims import judged_claims
from vits_ref.experiments.vits import figG, grid

#: the claim table's entries for the experiment: one per claim, panel and compared method
CLAIM_IDS = [c.id for c in claims.claims_of(figG.NAME)]


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
    found = judged_claims(figG.NAME, result)
    assert [c["id"] for c in found] == CLAIM_IDS and len(found) == 15
    assert all(c["verdict"] in claims.VERDICTS for c in found)
    assert all("3 runs x 40 rounds" in c["measured"] for c in found)
    back = judged_claims(figG.NAME, _round_trip(result, tmp_path))
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
    # claims needing the missing methods or panel are inconclusive, not measured
    got = {c["id"]: c for c in judged_claims(figG.NAME, res)}
    for cid in ("figG-vits-ii-best-logistic-vs-lints", "figG-lmc-histogram-vs-vits-ii",
                "figG-vits-i-like-lints-linear"):
        assert got[cid]["verdict"] == claims.INCONCLUSIVE
        assert got[cid]["reason"].startswith("not measured")
    assert got["figG-vits-ii-like-lints-linear"]["reason"] is None or \
        not got["figG-vits-ii-like-lints-linear"]["reason"].startswith("not measured")


# -- the rules, on hand-made summaries ---------------------------------------------------

def _fake(regrets, optimal, runs=10):
    """A summary with per-run final regrets ``base + regrets[panel][method]`` (a shared
    per-run base of mean 40, each method shifted by a constant plus noise of sd 0.5) and
    per-run shares of optimal pulls ``optimal[method]`` plus noise of sd 0.01."""
    rng = np.random.default_rng(0)
    base = rng.uniform(20, 60, size=runs)
    results, pulls = [], {}
    for panel, by_method in regrets.items():
        for method, shift in by_method.items():
            final = base + shift + rng.normal(0, 0.5, runs)
            results.append({"panel": panel, "method": method, "final_regrets": final.tolist(),
                            "us_per_round": 10.0})
            opt = np.clip(optimal[method] + rng.normal(0, 0.01, runs), 0, 1)
            pulls.setdefault(panel, {})[method] = {
                "optimal": float(opt.mean()), "near_optimal": float(1 - opt.mean()),
                "others": 0.0, "per_run": {"optimal": opt.tolist()}}
    return {"runs": runs, "rounds": 1000, "tuned": False, "results": results,
            "arm_pulls": pulls}


def _verdicts(result):
    return {c["id"]: c["verdict"] for c in judged_claims(figG.NAME, result)}


# The paired noise has sd 0.5 sqrt(2) = 0.7, so with 10 runs an interval is about +-0.5
# (t(9) = 2.26): every verdict below is decided by a shift at least 1 away from its claim's
# boundary (0 for a direction, +-10% of the reference's mean of about 40 for "comparable").


def test_rules_reproduced_when_the_paper_holds():
    # VITS-I lowest among the approximate methods but within 10% of LinTS and of VITS-II
    linear = {"LinTS": 0.0, "LMC-TS": 30.0, "VITS-I": -2.0, "VITS-II": -0.5, "VTS": 20.0}
    res = _fake({"linear rewards": linear,
                 "logistic rewards": {**linear, "LinTS": 20.0}},
                {"LinTS": 0.8, "LMC-TS": 0.4, "VITS-I": 0.8, "VITS-II": 0.8, "VTS": 0.6})
    assert set(_verdicts(res).values()) == {claims.REPRODUCED}, _verdicts(res)


def test_rules_contradicted_when_the_opposite_holds():
    # VITS-I the worst, VITS-II between, both far from LinTS; LMC-TS settles on the optimum
    shifts = {"LinTS": 0.0, "LMC-TS": -30.0, "VITS-I": 60.0, "VITS-II": 25.0, "VTS": -30.0}
    res = _fake({"linear rewards": shifts, "logistic rewards": shifts},
                {"LinTS": 0.8, "LMC-TS": 0.9, "VITS-I": 0.5, "VITS-II": 0.5, "VTS": 0.5})
    assert set(_verdicts(res).values()) == {claims.CONTRADICTED}, _verdicts(res)


def test_rules_inconclusive_with_one_run():
    shifts = {"LinTS": 0.0, "LMC-TS": 30.0, "VITS-I": -2.0, "VITS-II": -0.5, "VTS": 20.0}
    res = _fake({"linear rewards": shifts, "logistic rewards": shifts},
                {m: 0.5 for m in shifts}, runs=1)
    found = judged_claims(figG.NAME, res)
    assert {c["verdict"] for c in found} == {claims.INCONCLUSIVE}
    assert all(c["reason"].startswith("not measured") for c in found)


def test_identical_choices_do_not_decide_a_direction():
    """VITS-I and VITS-II pick the same arms (identical regrets: the interval is [0, 0]):
    "VITS-I outperforms VITS-II" is undecided, and no run count decides it."""
    shifts = {"LinTS": 0.0, "LMC-TS": 30.0, "VITS-I": 0.0, "VITS-II": 0.0, "VTS": 20.0}
    res = _fake({"linear rewards": shifts, "logistic rewards": shifts}, {m: 0.5 for m in shifts})
    for e in res["results"]:
        if e["method"] == "VITS-II":
            e["final_regrets"] = next(x["final_regrets"] for x in res["results"]
                                      if x["method"] == "VITS-I" and x["panel"] == e["panel"])
    got = {c["id"]: c for c in judged_claims(figG.NAME, res)}
    c = got["figG-vits-i-best-linear-vs-vits-ii"]
    assert c["verdict"] == claims.INCONCLUSIVE and c["seeds"][0]["ci"] == [0.0, 0.0]
    assert c["runs_needed"] is None
    assert got["figG-vits-ii-like-vits-i-linear"]["verdict"] == claims.REPRODUCED


def test_the_table_names_the_figures_methods_and_panels():
    labels = {m[0] for m in figG.METHODS} | {figG.VTS_LABEL}
    panels = {figG.panel_title(r) for r in figG.REWARDS}
    for c in claims.claims_of(figG.NAME):
        m = c.measure
        if hasattr(m, "panel"):
            assert m.panel in panels and {m.a, m.b} <= labels, c.id
        else:  # the histogram: paths into arm_pulls
            assert m.a[1] in panels and {m.a[2], m.b[2]} <= labels, c.id


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
    assert [c["id"] for c in judged_claims(figG.NAME, both)] == CLAIM_IDS


def test_tune_particles_on_the_logistic_panel():
    grid_ = [{"n_particles": 12, "n_steps": 1, "step_size": 0.01},
             {"n_particles": 12, "n_steps": 2, "step_size": 0.01}]
    got = figG.tune_particles(runs=2, rounds=6, seed=5, grid=grid_)
    assert got["LinTS"]["point"] == figG.DEFAULT_POINTS["logistic"]["LinTS"]
    for label in figG.PARTICLE_LABELS:
        assert [s["point"] for s in got[label]["scores"]] == grid_
        assert sorted(map(str, got[label]["ranked"])) == sorted(map(str, grid_))
