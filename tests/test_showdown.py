"""The showdown (vits_ref.experiments.showdown): a tiny run writes its outputs, and the
comparison with the best method on planted data.

The planted checks are exact or statistical with fixed seeds: a method 5 units worse than
the best, with run-to-run noise of sd 1 in the paired differences, over 30 runs, has a
paired t interval of half-width about 0.75, so "worse" is certain (the interval's lower
end would have to fall 6 standard errors); identical methods give a difference of
exactly 0.
"""

import json
import os

import numpy as np
import pytest

from vits_ref.experiments import EXPERIMENTS, Experiment
from vits_ref.experiments.claims import claims_of
from vits_ref.experiments.showdown import catalogue, experiment
from vits_ref.experiments.showdown.versus_best import best_method, versus_best


def _entries(values):
    return [{"method": m, "final_regrets": list(v)} for m, v in values.items()]


def test_a_planted_better_method_is_found_and_the_worse_one_called_worse():
    rng = np.random.default_rng(0)
    base = rng.gamma(2.0, 50.0, size=30)  # heavy environment noise, shared by the methods
    good = base - 5.0 + rng.standard_normal(30)
    best, diffs = versus_best(_entries({"plain": base, "good": good,
                                        "twin of good": good.copy()}))
    assert best == "good"
    d = diffs["plain"]
    assert d["verdict"] == "higher" and d["ci"][0] > 0
    assert abs(d["mean"] - np.mean(base - good)) < 1e-12
    # identical to the best: a zero difference, exactly, with a degenerate interval
    twin = diffs["twin of good"]
    assert twin["mean"] == 0.0 and twin["ci"] == [0.0, 0.0]
    assert twin["verdict"] == "no difference detected"
    assert "good" not in diffs


def test_paired_intervals_are_narrower_than_the_marginal_spread():
    # the environment's share of the variance cancels in the paired difference
    rng = np.random.default_rng(1)
    base = rng.gamma(2.0, 50.0, size=30)
    _, diffs = versus_best(_entries({"a": base, "b": base + 2.0 + 0.5 * rng.standard_normal(30)}))
    lo, hi = diffs["b"]["ci"]
    assert 0 < lo < 2.0 < hi and hi - lo < 0.1 * base.std()


def test_best_method_ties_and_missing_values():
    assert best_method(_entries({"x": [1.0, 3.0], "y": [2.0, 2.0]})) == "x"  # tie: first
    assert best_method([{"method": "z"}]) is None
    assert versus_best([]) == (None, {})


def test_registered_as_an_experiment():
    mod = EXPERIMENTS["showdown"]
    assert mod is experiment and isinstance(mod, Experiment)
    # no paper's: the claim table has no entry for it, so no claims on a page
    assert not claims_of(mod.NAME) and not hasattr(mod, "claims")
    assert set(catalogue.SIZES["small"]) < set(catalogue.SIZES["full"])


def test_arguments_are_checked_before_any_work(tmp_path):
    for kw, match in (({"size": "huge"}, "size"), ({"environments": ["mars"]}, "environments"),
                      ({"methods": ["Oracle"]}, "methods")):
        with pytest.raises(ValueError, match=match):
            experiment.run(runs=2, rounds=4, out=str(tmp_path), **kw)
    assert not os.listdir(tmp_path)


def _not_here(setting, env):
    raise catalogue.NotApplicable("planted: needs per-arm identities")


def test_tiny_run_writes_its_outputs_and_resumes(tmp_path, monkeypatch):
    methods = tuple(m for m in catalogue.METHODS
                    if m.label in ("Uniform", "LinTS", "LinUCB", "VITS-II"))
    monkeypatch.setattr(experiment, "METHODS",
                        methods + (catalogue.Method("Planted", _not_here),))
    out = str(tmp_path / "sd")
    kw = dict(runs=3, rounds=6, seed=0, out=out, environments=["pool", "wheel-0.95"])
    res = experiment.run(**kw)
    names = {os.path.basename(f) for f in res["files"]}
    assert {"curves.csv", "summary.json", "showdown.md"} <= names
    assert all(os.path.exists(f) for f in res["files"])
    with open(os.path.join(out, "summary.json")) as fh:
        saved = json.load(fh)
    assert saved["best"] == res["best"]
    for panel in ("linear pool (d = 20, K = 50, zeta = 0.1)", "wheel (delta = 0.95)"):
        entries = [e for e in saved["results"] if e["panel"] == panel]
        assert [e["method"] for e in entries] == ["Uniform", "LinTS", "LinUCB", "VITS-II"]
        best = saved["best"][panel]
        for e in entries:
            assert len(e["final_regrets"]) == 3 and e["us_per_round"] > 0
            if e["method"] == best:
                assert "paired_vs_best" not in e
            else:
                diff = np.subtract(e["final_regrets"],
                                   next(x for x in entries if x["method"] == best)[
                                       "final_regrets"])
                assert e["paired_vs_best"]["best"] == best
                assert abs(e["paired_vs_best"]["mean"] - diff.mean()) < 1e-9
        kl = {e["method"]: e.get("kl_at_T") for e in entries}
        assert kl["LinTS"] == pytest.approx(0.0, abs=1e-8)  # LinTS is the exact posterior
        assert kl["VITS-II"] > 0 and kl["LinUCB"] is None
    assert {(s["method"], s["reason"]) for s in saved["not_applicable"]} == {
        ("Planted", "planted: needs per-arm identities")}
    page = open(os.path.join(out, "showdown.md"), encoding="utf-8").read()
    assert page.count("not applicable: planted") == 2 and "**best**" in page
    # the wheel's table over Uniform: the wheel panel only, every other method once
    wheel = "wheel (delta = 0.95)"
    assert list(saved["wheel_vs_uniform"]) == [wheel]
    assert set(saved["wheel_vs_uniform"][wheel]) == {"LinTS", "LinUCB", "VITS-II"}
    assert "| Uniform | 100 |" in page
    # the same command again reuses every chunk and gives the same numbers
    again = experiment.run(**kw)
    assert again["execution"]["computed"] == 0 and again["execution"]["reused"] > 0
    assert [e.get("final_regrets") for e in again["results"]] == [
        e.get("final_regrets") for e in res["results"]]


def test_report_and_command_line_know_the_showdown(monkeypatch):
    import importlib.util

    from vits_ref.__main__ import CLIError, check_needs
    from vits_ref.experiments import report

    assert report.EXPERIMENTS["showdown"] == ("showdown",)
    assert report.SIZES["paper"]["showdown"] == {**experiment.PAPER_SIZE, "size": "full"}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sklearn" else real(name, *a))
    with pytest.raises(CLIError, match=r"pip install 'vits_ref\[data\]'"):
        check_needs(experiment)


def test_the_wheels_are_riquelme_et_als_five_deltas():
    # one environment per delta, each built with its own delta (a loop's late binding
    # would give every wheel the last one)
    assert catalogue.WHEEL_DELTAS == (0.5, 0.7, 0.9, 0.95, 0.99)
    built = [catalogue.ENVIRONMENTS[k].make(0) for k in catalogue.WHEELS]
    assert [env.delta for env in built] == list(catalogue.WHEEL_DELTAS)
    assert [(e.mu_constant, e.mu_small, e.mu_large) for e in built] == [(1.2, 1.0, 50.0)] * 5
    assert set(catalogue.WHEELS) <= set(catalogue.SIZES["full"])
    assert catalogue.SIZES["wheel"] == catalogue.WHEELS
    assert catalogue.SIZES["small"].count("wheel-0.95") == 1  # the small twin stays small


def test_wheel_ratios_to_uniform_on_planted_runs():
    rng = np.random.default_rng(2)
    uniform = rng.normal(900.0, 60.0, size=40)
    good = 0.3 * uniform + rng.normal(0.0, 5.0, size=40)
    wheel = "wheel (delta = 0.9)"
    result = {"runs": 40, "rounds": 2000, "results": [
        {"panel": wheel, "method": "Uniform", "final_regrets": list(uniform)},
        {"panel": wheel, "method": "good", "final_regrets": list(good)},
        {"panel": wheel, "method": "same", "final_regrets": list(uniform + 1.0)},
        # not a wheel, and a wheel without Uniform: no ratios
        {"panel": "wine (K = 3)", "method": "Uniform", "final_regrets": list(uniform)},
        {"panel": "wheel (delta = 0.5)", "method": "good", "final_regrets": list(good)}]}
    table = experiment.versus_uniform(result)
    assert list(table) == [wheel]
    g = table[wheel]["good"]
    assert g["ratio"] == pytest.approx(good.mean() / uniform.mean(), rel=1e-12)
    assert 0.28 < g["low"] < g["ratio"] < g["high"] < 0.32 and g["n"] == 40
    same = table[wheel]["same"]
    assert same["low"] < 1.0 + 1.0 / uniform.mean() < same["high"] < 1.01
    result["wheel_vs_uniform"] = table
    page = experiment.wheel_markdown(result)
    assert "| Uniform | 100 |" in page and f"| good | {100 * g['ratio']:.1f} [" in page


def test_linfullpost_is_riquelme_et_als_update_written_out():
    """The showdown's LinFullPost is the authors' LinearFullPosteriorSampling update
    (``precision = X^T X + lambda_prior I``, ``mu = inv(precision) X^T y``, ``a = a0 +
    n/2``, ``b = b0 + (y^T y - mu^T precision mu) / 2``, written out here) on each arm's
    block of the disjoint encoding, at their a0 = b0 = 6, lambda_prior = 0.25. Exact
    arithmetic on d = 15 up to rounding (1e-9 relative: condition numbers below 1e3)."""
    setting = catalogue.ENVIRONMENTS["wheel-0.9"]
    env = setting.make(0)
    policy, params = catalogue._linfullpost(setting, env)
    assert {k: params[k] for k in ("a0", "b0", "lambda_prior")} == {
        "a0": 6.0, "b0": 6.0, "lambda_prior": 0.25}
    policy = policy.fresh(3)
    rng = np.random.default_rng(5)
    K, d, lam = env.n_arms, env.dim, 0.25
    assert d == 3 * K
    seen = {a: ([], []) for a in range(K)}
    for t in range(60):
        x = rng.uniform(-0.7, 0.7, size=2)  # a context in the disc, (x1, x2, 1) per block
        contexts = np.zeros((K, d))
        for a in range(K):
            contexts[a, 3 * a:3 * a + 3] = (*x, 1.0)
        arm = policy.select(contexts) if t % 2 else t % K
        reward = float(rng.normal(1.0 + 10 * (arm == t % K), 2.0))
        policy.update(contexts, arm, reward)
        seen[arm][0].append(contexts[arm])
        seen[arm][1].append(reward)
    for a in range(K):
        X, y = np.array(seen[a][0]).reshape(-1, d), np.array(seen[a][1])
        precision = X.T @ X + lam * np.eye(d)
        cov = np.linalg.inv(precision)
        mu = cov @ (X.T @ y)
        post = policy.posterior(a)
        np.testing.assert_allclose(post["u"][0], mu, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(post["V"][0], cov, rtol=1e-9, atol=1e-12)
        assert post["alpha"][0] == pytest.approx(6.0 + len(y) / 2, rel=1e-12)
        assert post["beta"][0] == pytest.approx(6.0 + 0.5 * (y @ y - mu @ precision @ mu),
                                                rel=1e-9)


def _summary(path, entries, rounds=2000):
    """A planted showdown summary.json: ``entries`` ``{(panel, method): final regrets}``."""
    results = [{"panel": p, "method": m, "final_regrets": list(v),
                "final_regret_mean": float(np.mean(v)),
                "final_regret_stderr": float(np.std(v, ddof=1) / np.sqrt(len(v))),
                "us_per_round": 1.0, "paired_vs_best": {"stale": True}}
               for (p, m), v in entries.items()]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"experiment": "showdown", "runs": 30, "rounds": rounds, "seed": 0,
                   "results": results, "hyperparameters": {}, "not_applicable": []}, fh)
    return str(path)


def test_combine_compares_a_later_method_with_the_earlier_ones(tmp_path):
    from vits_ref.experiments.showdown.combine import combine

    rng = np.random.default_rng(3)
    wheel, pool = "wheel (delta = 0.5)", "linear pool (d = 20, K = 50, zeta = 0.1)"
    uniform = rng.normal(900.0, 60.0, size=30)
    linucb = 0.4 * uniform + rng.normal(0.0, 5.0, size=30)
    added = linucb - 50.0 + rng.normal(0.0, 5.0, size=30)  # planted: 50 better than LinUCB
    pool_lints = rng.gamma(2.0, 50.0, size=30)
    first = _summary(tmp_path / "a.json", {(wheel, "Uniform"): uniform,
                                           (wheel, "LinUCB"): linucb,
                                           (pool, "LinTS"): pool_lints})
    second = _summary(tmp_path / "b.json", {(wheel, "Uniform"): uniform,
                                            (wheel, catalogue.LINFULLPOST): added})
    out = tmp_path / "both"
    res = combine([first, second], out=str(out))
    # the catalogue's order within a panel; the added method is the new best
    assert [(e["panel"], e["method"]) for e in res["results"]] == [
        (wheel, "Uniform"), (wheel, catalogue.LINFULLPOST), (wheel, "LinUCB"), (pool, "LinTS")]
    assert res["best"] == {wheel: catalogue.LINFULLPOST, pool: "LinTS"}
    got = {e["method"]: e.get("paired_vs_best") for e in res["results"] if e["panel"] == wheel}
    assert got[catalogue.LINFULLPOST] is None  # the stale comparison is gone
    assert got["LinUCB"]["mean"] == pytest.approx(np.mean(linucb - added), rel=1e-12)
    assert got["LinUCB"]["verdict"] == "higher"
    ratio = res["wheel_vs_uniform"][wheel][catalogue.LINFULLPOST]["ratio"]
    assert ratio == pytest.approx(added.mean() / uniform.mean(), rel=1e-12)
    assert set(res["wheel_vs_uniform"][wheel]) == {"LinUCB", catalogue.LINFULLPOST}
    page = (out / "showdown.md").read_text(encoding="utf-8")
    assert page.count("**best**") == 2 and json.loads((out / "summary.json").read_text())[
        "combined_from"] == [first, second]
    # summaries of other runs are refused, naming what differs
    other = _summary(tmp_path / "c.json", {(wheel, "Uniform"): uniform + 1.0,
                                           (wheel, "VTS"): added})
    with pytest.raises(ValueError, match="Uniform on 'wheel.*not the same runs"):
        combine([first, other])
    longer = _summary(tmp_path / "d.json", {(wheel, "Uniform"): uniform}, rounds=200)
    with pytest.raises(ValueError, match="rounds = 200"):
        combine([first, longer])
    unchecked = _summary(tmp_path / "e.json", {(wheel, "VTS"): added})
    with pytest.raises(ValueError, match="shares no method"):
        combine([first, unchecked])
    with pytest.raises(ValueError, match="two or more"):
        combine([first])
    with pytest.raises(ValueError, match="not a file"):
        combine([first, str(tmp_path / "missing.json")])
