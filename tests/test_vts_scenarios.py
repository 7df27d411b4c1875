"""Scenarios A and B of the VTS paper (vits_ref.envs.mixture) and the vts-scenarios
experiment: the environment's laws, the files and summary of a small run, the claims'
rules on hand-made summaries, and VTS in vits-figG.
"""

import json

import numpy as np
import pytest
from scipy import stats

import vits_ref as vr
from vits_ref.experiments import EXPERIMENTS, claims
from vits_ref.experiments._common import write_json
from vits_ref.experiments.claims import judged_claims
from vits_ref.experiments.vits import figG
from vits_ref.experiments.vts import scenarios

# --------------------------------------------------------------------------- environment


def test_scenarios_are_the_papers():
    """Eqs. (18)-(19): weights, coefficients, unit variances; arm 1 is best in both."""
    a, b = vr.envs.vts_scenario("A"), vr.envs.vts_scenario("b")
    np.testing.assert_array_equal(a.weights, [[0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_array_equal(a.coefs[1], [[2, 2], [3, 3]])
    np.testing.assert_array_equal(b.weights, [[0.5, 0.5], [0.3, 0.7]])
    np.testing.assert_array_equal(b.coefs[1], [[0, 0], [3, 3]])
    assert (a.noise_sd == 1).all() and (b.noise_sd == 1).all()
    run = b.realise(200, rng=3)
    assert run.contexts.shape == (200, 2, 2)
    np.testing.assert_array_equal(run.contexts[:, 0], run.contexts[:, 1])  # shared x
    assert 0 < run.contexts.min() and run.contexts.max() < 1
    x = run.contexts[:, 0]
    np.testing.assert_allclose(run.means, np.stack([1.5 * x.sum(1), 2.1 * x.sum(1)], 1))
    assert (run.means.argmax(axis=1) == 1).all()
    assert b.optimal_mean_reward(run.contexts[0]) == pytest.approx(run.means[0, 1])
    with pytest.raises(ValueError, match="name must be one of"):
        vr.envs.vts_scenario("C")


def test_rewards_follow_the_mixture():
    """Given its context, a reward of scenario B's arm 1 is 0.3 N(0, 1) + 0.7 N(3 s, 1)
    (``s = x1 + x2``): its conditional CDF ``F(y | x)`` is uniform; KS test on 20 000 draws
    (p > 1e-3; a weight of 0.35 instead of 0.3 gives p < 1e-10)."""
    env = vr.envs.MixtureEnvironment([[0.3, 0.7]], [[[0.0, 0.0], [3.0, 3.0]]], 1.0)
    rng = np.random.default_rng(0)
    run = env.realise(20_000, rng=rng)
    s = run.contexts[:, 0].sum(axis=1)
    # standardise by the component law given the context: u = F(y | x) is U(0, 1)
    u = 0.3 * stats.norm.cdf(run.rewards[:, 0]) + 0.7 * stats.norm.cdf(run.rewards[:, 0] - 3 * s)
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_mixture_environment_validates():
    with pytest.raises(ValueError, match="rows summing to 1"):
        vr.envs.MixtureEnvironment([[0.5, 0.6]], [[[0.0], [1.0]]])
    with pytest.raises(ValueError, match="noise_sd must be > 0"):
        vr.envs.MixtureEnvironment([[1.0]], [[[1.0]]], noise_sd=0.0)
    env = vr.envs.vts_scenario("A")
    assert "scenario A" in repr(env.new_instance(3))


# --------------------------------------------------------------------------- the experiment


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("vts")
    return scenarios.run(runs=30, rounds=60, seed=1, out=str(out)), out


#: the claim table's entries for the experiment: a claim per scenario, K and arm compared
CLAIM_IDS = [c.id for c in claims.claims_of(scenarios.NAME)]


def test_registered():
    assert EXPERIMENTS["vts-scenarios"] is scenarios
    assert scenarios.DEFAULTS == {"runs": 2000, "rounds": 500, "seed": 0}


def test_files_and_summary(small):
    result, out = small
    for f in ("curves.csv", "mse.csv", "summary.json", "regret.png", "mse.png"):
        assert (out / f).stat().st_size > 0, f
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference"] == "K = 1" and summary["paper_reduction"] == {"A": 0.14,
                                                                             "B": 0.28}
    assert {(e["scenario"], e["n_components"]) for e in summary["results"]} == \
        {(s, k) for s in "AB" for k in (1, 2, 3)}
    for e in summary["results"]:
        assert len(e["final_regrets"]) == 30 and len(e["final_mse"]) == 2
        assert np.isfinite(e["final_regret_mean"])
        if e["n_components"] == 1:
            assert e["cavi_iterations_mean"] == 0 and "reduction" not in e
        else:
            assert e["paired_vs_reference"]["reference"] == "K = 1"
            red = e["reduction"]
            assert red["ci"][0] <= red["value"] <= red["ci"][1]
            ref = next(r for r in summary["results"] if r["panel"] == e["panel"]
                       and r["n_components"] == 1)
            assert red["value"] == pytest.approx(
                1 - e["final_regret_mean"] / ref["final_regret_mean"])
    text = scenarios.table(result)
    assert "reduction vs K=1" in text and "28%" in text


def test_same_runs_are_reproducible(tmp_path):
    a = scenarios.run(runs=4, rounds=20, seed=3, out=str(tmp_path / "a"), components=(2,),
                      other_scorings=False)
    b = scenarios.run(runs=4, rounds=20, seed=3, out=str(tmp_path / "b"), components=(2,),
                      n_threads=1, other_scorings=False)
    assert [e["final_regrets"] for e in a["results"]] == \
        [e["final_regrets"] for e in b["results"]]
    assert {e["method"] for e in a["results"]} == {"K = 1", "K = 2"}


def test_claims_have_verdicts_and_survive_json(small, tmp_path):
    result, _ = small
    found = judged_claims(scenarios.NAME, result)
    assert [c["id"] for c in found] == CLAIM_IDS
    # 22, eqs. (15) and (17) against eq. (16) in both scenarios, and the best-K (4) and
    # 'K = 1 performs reasonably well' sentences
    assert len(found) == 31 and all(c["verdict"] in claims.VERDICTS for c in found)
    # the MSE claims read eq. (21) at t = T, the squared error averaged over the rounds:
    # its per-run values average to the eq. (21) curve's last point
    for e in result["results"]:
        if "final_mse" in e:
            assert np.mean(e["final_mse"], axis=1) == pytest.approx(e["mse_final_mean"],
                                                                    rel=1e-12)
    write_json(tmp_path / "s.json", result)
    back = judged_claims(scenarios.NAME, json.loads((tmp_path / "s.json").read_text()))
    assert [(c["verdict"], c["measured"]) for c in back] == \
        [(c["verdict"], c["measured"]) for c in found]


def _fake(shifts, mse, runs=40, sd_scale=None, k_noise=1.0, scoring_shift=0.0):
    """A summary whose final regrets are ``base + shift`` (K = 1 noisier by ``sd_scale``,
    K = 2 and 3 by ``k_noise``); K = 2 scored by eqs. (15) and (17) is K = 2 plus
    ``scoring_shift``, with noise as K = 2's."""
    rng = np.random.default_rng(0)
    base = rng.uniform(20, 40, size=runs)
    results = []
    for scen in "AB":
        for K in (1, 2, 3):
            noise = rng.normal(0, 0.3, runs) * (sd_scale if sd_scale and K == 1 else
                                                k_noise if K > 1 else 1)
            final = base + shifts[scen][K] + noise
            final_mse = [list(mse[scen][K] + rng.normal(0, 1e-3, runs)) for _ in range(2)]
            results.append({"panel": f"scenario {scen}", "scenario": scen,
                            "method": f"K = {K}", "n_components": K,
                            "final_regret_mean": float(final.mean()),
                            "final_regrets": final.tolist(), "final_mse": final_mse})
        k2 = np.asarray(results[-2]["final_regrets"])
        for eq in scenarios.OTHER_SCORINGS.values():
            other = k2 + scoring_shift + rng.normal(0, 0.3, runs) * k_noise
            results.append({"panel": f"scenario {scen}", "scenario": scen,
                            "method": scenarios.scoring_label(2, eq), "n_components": 2,
                            "final_regrets": other.tolist()})
    return {"runs": runs, "rounds": 500, "results": results}


def _verdicts(result):
    return {c["id"]: c["verdict"] for c in judged_claims(scenarios.NAME, result)}


def test_rules_reproduced_when_the_paper_holds():
    # reductions of 14% and 28% of a mean of 30; K = 3 within 10% of K = 2; K = 1 noisier.
    # The reductions are judged within 10% of the paper's percentages (+-1.4 and +-2.8
    # points): 400 runs and K = 1's noise sd 3 (still above the shared base's sd 5.8 by a
    # clear margin) pin them to about +-0.5 points
    shifts = {"A": {1: 0.0, 2: -0.14 * 30, 3: -0.14 * 30 + 0.5},
              "B": {1: 0.0, 2: -0.28 * 30, 3: -0.28 * 30 + 0.5}}
    mse = {s: {1: 0.4, 2: 0.2, 3: 0.1} for s in "AB"}
    res = _fake(shifts, mse, runs=400, sd_scale=10)
    assert set(_verdicts(res).values()) == {claims.REPRODUCED}


def test_rules_contradicted_when_k1_wins():
    # K = 2 and 3 worse by 5 and 15 on ~30 (a reduction of -17%; K = 3 - K = 2 = 10 against
    # the +-3.5 of "similar"), noisier (noise sd 7.5 on a shared base of sd 5.8: sd of the
    # final regret about 1.6 times K = 1's) and fitting worse; paired intervals of about
    # +-2.4 (40 runs) keep every verdict clear of its boundary
    shifts = {s: {1: 0.0, 2: 5.0, 3: 15.0} for s in "AB"}
    mse = {s: {1: 0.1, 2: 0.2, 3: 0.3} for s in "AB"}
    # the other scoring rules 15 above eq. (16)'s ~35 (43%, as eq. (15)'s +140% in kind)
    verdicts = _verdicts(_fake(shifts, mse, k_noise=25, scoring_shift=15.0))
    # K = 2 still below K = 3 (its best-K test against K = 3 holds), and K = 1 winning is
    # "reasonably well" (a reduction of -17%, below 15%)
    held = {f"vts-best-k-matches-{s}-vs-k3" for s in "AB"} | {"vts-k1-reasonable-in-A"}
    assert {verdicts.pop(i) for i in held} == {claims.REPRODUCED}
    assert set(verdicts.values()) == {claims.CONTRADICTED}, verdicts


def test_k1_reasonable_contradicted_by_a_large_cut():
    """Planted: K = 2 cuts K = 1's regret by 30% in scenario A (the paper's 28% of
    scenario B, where K = 1 'results in higher regret'): not 'reasonably well'."""
    shifts = {s: {1: 0.0, 2: -0.3 * 30, 3: -0.3 * 30 + 0.5} for s in "AB"}
    mse = {s: {1: 0.4, 2: 0.2, 3: 0.1} for s in "AB"}
    v = _verdicts(_fake(shifts, mse, runs=400, sd_scale=10))
    assert v["vts-k1-reasonable-in-A"] == claims.CONTRADICTED
    assert v["vts-best-k-matches-A-vs-k1"] == v["vts-best-k-matches-A-vs-k3"] \
        == claims.REPRODUCED


def test_rules_inconclusive_without_runs():
    res = _fake({s: {1: 0.0, 2: -1.0, 3: -1.0} for s in "AB"},
                {s: {1: 0.4, 2: 0.2, 3: 0.1} for s in "AB"}, runs=1)
    found = judged_claims(scenarios.NAME, res)
    assert {c["verdict"] for c in found} == {claims.INCONCLUSIVE}
    assert all(c["reason"].startswith("not measured") for c in found)


# --------------------------------------------------------------------------- VTS in vits-figG


def test_figG_runs_vts(tmp_path):
    """VTS joins appendix G's panels with its stated hyperparameters; the claims that name
    the other TS algorithms now include it."""
    res = figG.run(runs=3, rounds=30, seed=1, out=str(tmp_path))
    got = {(e["panel"], e["method"]) for e in res["results"]}
    assert ("linear rewards", "VTS") in got and ("logistic rewards", "VTS") in got
    assert res["hyperparameters"]["linear rewards"]["VTS"]["n_components"] == 2
    # VTS runs through the runner's compiled backend (its prange driver), unasked
    assert next(e for e in res["results"] if e["method"] == "VTS")["fused"]
    assert "VTS" in res["arm_pulls_vts"]["linear rewards"]
    assert "VTS" not in res["arm_pulls"]["linear rewards"]  # the grid-tuned methods only
    text = {c["id"]: c["why"] + c["measured"] for c in judged_claims(figG.NAME, res)}
    assert "VITS-I - VTS" in text["figG-vits-i-best-linear-vs-vts"]
    assert "VITS-II - VTS" in text["figG-vits-ii-best-logistic-vs-vts"]
