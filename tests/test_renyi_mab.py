"""The Rényi appendix's bandit (experiment ``renyi-mab``): environment, policy, run, claims."""

import json

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.envs.renyi_mab import TABLE4, MixtureArms, renyi_mab
from vits_ref.experiments import claims, get
from vits_ref.experiments.claims import judged_claims
from vits_ref.experiments.renyi import mab


def test_table4_environment():
    env = renyi_mab(seed=0)
    assert env.dim == 1 and env.n_arms == 3
    assert np.allclose(env.arm_means, [0.97 * 10 + 0.03 * 22, 16.0, 10.0])
    real = env.realise(200_000, rng=1)
    assert np.all(real.contexts == 1.0) and real.contexts.shape == (200_000, 3, 1)
    assert np.all(real.means == env.arm_means) and np.all(real.optimal_means == 16.0)
    # moments of the mixtures: mean within 5 standard errors, variance within 5% (the
    # variances are 1 + 0.97 * 0.03 * 12^2 = 5.19, 3 and 1)
    var = np.array([1 + 0.97 * 0.03 * 144, 3.0, 1.0])
    se = np.sqrt(var / 200_000)
    assert np.all(np.abs(real.rewards.mean(axis=0) - env.arm_means) < 5 * se)
    assert np.allclose(real.rewards.var(axis=0), var, rtol=0.05)
    # arm 1's rare mode at 22: about 3% of its rewards above 18
    assert abs((real.rewards[:, 0] > 18).mean() - 0.03) < 0.003
    again = env.realise(50, rng=1)
    assert np.array_equal(again.rewards, env.realise(50, rng=1).rewards)
    assert env.new_instance(5).arms == TABLE4
    with pytest.raises(ValueError, match="variance"):
        MixtureArms([((1.0, 0.0, 1.0),)])


def test_policy_updates_every_arm_and_scores():
    engines = mab.arm_engines(alpha=1.0, n_mc=20, n_steps=2)
    pol = mab.RenyiArms(engines, score="sample", seed=0)
    X = np.ones((3, 1))
    pol.update(X, 1, 16.0)
    assert [e.n_obs for e in pol.engines] == [0, 1, 0]
    assert [e.diagnostics["total_steps"] for e in pol.engines] == [2, 2, 2]
    lazy = mab.RenyiArms(engines, update_all=False, seed=0).update(X, 1, 16.0)
    assert [e.diagnostics["total_steps"] for e in lazy.engines] == [0, 2, 0]
    # the appendix's score divides each arm's draw by its variance
    scaled = mab.RenyiArms(engines, score="variance-scaled", seed=3)
    plain = mab.RenyiArms(engines, score="sample", seed=3)
    s_scaled, s_plain = scaled.scores(), plain.scores()
    var = np.array([e.cov[0, 0] for e in scaled.engines])
    assert np.allclose(s_scaled, s_plain / var)
    twin = mab.RenyiArms(engines, score="variance-scaled", seed=3)
    assert twin.select(X) == int(np.argmax(s_scaled))  # the same draws, their argmax
    f = pol.fresh(0)
    assert f.n_obs == 0 and repr(f).startswith("RenyiArms(alpha=1")
    with pytest.raises(ValueError):
        pol.select(np.ones((2, 1)))
    with pytest.raises(TypeError):
        mab.RenyiArms([vr.LinTS(1)])
    # Table 3's start: q = N(25, 1e-8) for every arm
    assert all(np.allclose(e.mean, [25.0]) and np.allclose(e.cov, [[1e-8]]) for e in engines)


def test_learning_rate_is_a_deprecated_alias_of_step_size():
    """``arm_engines``' and ``run``'s ``learning_rate`` (the former name of ``step_size``,
    Adam's step size) still works for one release, with a DeprecationWarning."""
    assert all(e.step_size == mab.STEP_SIZE == 2e-2 for e in mab.arm_engines(alpha=1.0))
    with pytest.warns(DeprecationWarning, match="learning_rate is deprecated.*use step_size"):
        engines = mab.arm_engines(alpha=1.0, learning_rate=1e-3)
    assert [e.step_size for e in engines] == [1e-3] * 3
    assert [e.step_size for e in mab.arm_engines(1.0, 1.0, 20, 2, 1e-3)] == [1e-3] * 3
    with pytest.raises(TypeError, match="give step_size only"):
        mab.arm_engines(alpha=1.0, step_size=1e-3, learning_rate=1e-3)


def test_policy_is_reproducible_in_simulate():
    env = renyi_mab()
    pol = mab.RenyiArms(mab.arm_engines(alpha=0.5, n_mc=20, n_steps=2))
    a = vr.simulate(pol, env, n_rounds=30, n_runs=2, seed=4)
    b = vr.simulate(pol, env, n_rounds=30, n_runs=2, seed=4)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.arms, b.arms)
    assert set(np.unique(a.regret)) <= {0.0, 16.0 - 10.36, 6.0}


@pytest.fixture(scope="module")
def small_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("renyi-mab")
    return mab.run(runs=3, rounds=40, seed=0, out=str(out), alphas=(0.5, 1.0, 2.0),
                   n_mc=30, n_steps=3)


def test_small_run_writes_summary_and_pairs(small_result):
    res = small_result
    assert get("renyi-mab") is mab and mab.NAME == "renyi-mab"
    assert res["reference"] == mab.REFERENCE and res["alphas"] == [0.5, 1.0, 2.0]
    panels = {e["panel"] for e in res["results"]}
    assert panels == set(mab.SCORES.values())
    for e in res["results"]:
        assert len(e["final_regrets"]) == 3
        if e["method"] != mab.REFERENCE:
            assert e["paired_vs_reference"]["n"] == 3
    for methods in res["pulls"].values():
        for f in methods.values():
            assert abs(sum(f["all"]) - 1) < 1e-12 and len(f["optimal_last_per_run"]) == 3
    assert all(path.endswith(("csv", "json", "png")) for path in res["files"])
    text = mab.table(res)
    assert "alpha = 1 (KL)" in text and "(reference)" in text
    with open(res["files"][1]) as fh:
        assert json.load(fh)["pulls"] == json.loads(json.dumps(res["pulls"]))


def test_claims_have_verdicts_and_survive_json(small_result):
    cl = judged_claims(mab.NAME, small_result)
    assert [c["id"] for c in cl] == [c.id for c in claims.claims_of(mab.NAME)]
    assert len(cl) == len(mab.ALPHAS) and all(c["verdict"] in claims.VERDICTS for c in cl)
    # Algorithm 1's purpose is a reading, not the paper's words: labelled as one
    assert all(c["library_reading"] and c["section"] == claims.LIBRARY_READING for c in cl)
    again = judged_claims(mab.NAME, json.loads(json.dumps(small_result)))
    assert [c["verdict"] for c in again] == [c["verdict"] for c in cl]


def _constructed(per_run):
    """A summary whose variance-scaled panel has the given per-run shares of the last
    rounds on the optimal arm, per method."""
    pulls = {mab.SCORES["variance-scaled"]: {
        m: {"all": [0.0, 1.0, 0.0], "last": [1 - np.mean(v), np.mean(v), 0.0],
            "optimal_last_per_run": list(v)} for m, v in per_run.items()}}
    return {"runs": 20, "rounds": 10, "pulls": pulls, "results": []}


def test_optimal_arm_claim_rule_on_constructed_results():
    rng = np.random.default_rng(0)
    near_one = np.clip(rng.normal(0.98, 0.01, 20), 0, 1)  # mean 0.98, interval about +-0.005
    locked = np.r_[np.zeros(19), 1.0]  # 19 of 20 runs locked onto a suboptimal arm
    mixed = np.r_[np.ones(18), 0.0, 0.0]  # 0.9 exactly: the interval contains it
    got = {c["id"]: c for c in judged_claims(mab.NAME, _constructed(
        {"alpha = 0.5": near_one, "alpha = 2": locked, mab.REFERENCE: mixed}))}
    assert got["renyi-mab-optimal-arm-alpha-0.5"]["verdict"] == claims.REPRODUCED
    assert got["renyi-mab-optimal-arm-alpha-2"]["verdict"] == claims.CONTRADICTED
    ref = got["renyi-mab-optimal-arm-alpha-1"]
    assert ref["verdict"] == claims.INCONCLUSIVE and ref["runs_needed"] is None  # on 0.9
    # a method that did not run: inconclusive, saying so
    assert got["renyi-mab-optimal-arm-alpha-5"]["verdict"] == claims.INCONCLUSIVE
    assert got["renyi-mab-optimal-arm-alpha-5"]["reason"].startswith("not measured")
