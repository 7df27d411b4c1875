"""Hypothesis fuzz of the environments (:mod:`vits_ref.envs`) and :func:`vits_ref.bandit.simulate`.

Property: constructors and ``realise`` either raise a documented ValueError/TypeError
naming the bad argument or return finite draws of the documented shapes; ``simulate``
(tiny sizes) either refuses (ValueError/TypeError naming the argument,
DivergenceError) or returns finite regret of shape ``(n_runs, n_rounds)`` with arms in
range. Valid arguments are never refused, except for the documented combinations
(``kl_rounds`` for a policy without a Gaussian posterior, ``fused=True`` for a policy
without a fused loop).
"""

import numpy as np
import pytest
from fuzz_strategies import (
    DOCUMENTED,
    counted,
    int_hyper,
    kwargs_of,
    n_examples,
    names_an_argument,
    real_hyper,
    seeds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import vits_ref as vr

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::DeprecationWarning")


def _choice(options, bad=("nope", None, 1)):
    return st.one_of(st.sampled_from(options).map(lambda v: (v, "valid")),
                     st.sampled_from(bad).map(lambda v: (v, "bad")))


ENVS = {
    "pool": (vr.envs.pool, dict(
        dim=int_hyper(1, 4), n_arms=int_hyper(1, 5), pool_size=int_hyper(1, 6),
        zeta=real_hyper(0.0, 3.0, allow_zero=True, extra_bad=(1e51, 1e200)),
        reward=_choice(("linear", "quadratic"), bad=("logistic", "x", None)), seed=seeds())),
    "hard_instance": (vr.envs.hard_instance, dict(
        dim=int_hyper(1, 4), n_arms=int_hyper(2, 5),
        reward=_choice(("linear", "logistic"), bad=("quadratic", "x", None)), seed=seeds())),
    "vts_scenario": (vr.envs.vts_scenario, dict(name=_choice(("A", "B"), bad=("C", None, 1)),
                                                seed=seeds())),
    "prior_bandit": (vr.envs.prior_bandit, dict(
        prior=_choice(("mixture", "ring", "cross"), bad=("nope", None, 3)),
        n_arms=int_hyper(1, 5), sigma=real_hyper(0.1, 3.0),
        reward=_choice(("linear", "logistic"), bad=("quadratic", None)), seed=seeds())),
}


@pytest.mark.parametrize("name", sorted(ENVS))
def test_environments(name):
    make, kw_strategies = ENVS[name]

    @settings(max_examples=n_examples(0.25))
    @given(kw=kwargs_of(**kw_strategies),
           n_rounds=int_hyper(1, 5), rng=seeds())  # 10**30: the test below
    @counted
    def fuzz(kw, n_rounds, rng):
        kwargs, tags = kw
        try:
            env = make(**kwargs)
        except DOCUMENTED as exc:
            assert any(t != "valid" for t in tags.values()), \
                f"{name}({kwargs}) refused valid arguments: {exc!r}"
            assert names_an_argument(exc, list(kwargs)), exc
            return
        bad = [k for k, t in tags.items() if t == "bad"]
        assert not bad, f"{name} accepted bad {bad}: {[kwargs[k] for k in bad]}"
        (T, t_tag), (r, r_tag) = n_rounds, rng
        try:
            real = env.realise(T, r)
        except DOCUMENTED as exc:
            assert "valid" != t_tag or "valid" != r_tag, f"realise refused valid input {exc!r}"
            assert names_an_argument(exc, ("n_rounds", "rng")), exc
            return
        assert t_tag == r_tag == "valid", f"realise accepted n_rounds={T!r}, rng={r!r}"
        K, d = env.n_arms, env.dim
        assert real.contexts.shape == (T, K, d) and real.means.shape == (T, K)
        assert real.rewards.shape == (T, K)
        for a in (real.contexts, real.means, real.rewards):
            assert np.all(np.isfinite(a))

    fuzz()


_ENV = {}


def _env(kind):
    if kind not in _ENV:
        _ENV[kind] = (vr.envs.pool(dim=2, n_arms=3, zeta=1.0, seed=0) if kind == "pool"
                      else vr.envs.hard_instance(dim=2, n_arms=3, seed=0))
    return _ENV[kind]


@st.composite
def kl_rounds(draw, T):
    good = st.one_of(st.none(), st.just([]),
                     st.lists(st.integers(1, T), min_size=1, max_size=3, unique=True)
                     .map(sorted))
    bad = st.sampled_from([[0], [T + 1], [1.5], "1", [True], [[1]], [-1], 3])
    return draw(st.one_of(good.map(lambda v: (v, "valid")), good.map(lambda v: (v, "valid")),
                          bad.map(lambda v: (v, "bad"))))


def test_simulate():
    names = vr.POLICY_NAMES

    @settings(max_examples=n_examples(0.3))
    @given(policy=_choice(names, bad=("nope", None, 3)),
           env=st.sampled_from(["pool", "hard"]), n_rounds=int_hyper(1, 4),
           n_runs=int_hyper(1, 2), seed=seeds(), data=st.data(),
           fused=st.sampled_from([None, True, False]).map(lambda v: (v, "valid")),
           n_jobs=st.one_of(st.just((1, "valid")),
                            st.sampled_from([0, "1", 1.0, True]).map(lambda v: (v, "bad"))))
    @counted
    def fuzz(policy, env, n_rounds, n_runs, seed, data, fused, n_jobs):
        T = n_rounds[0] if n_rounds[1] == "valid" else 3
        kl = data.draw(kl_rounds(T))
        args = dict(policy=policy, n_rounds=n_rounds, n_runs=n_runs, seed=seed,
                    kl_rounds=kl, fused=fused, n_jobs=n_jobs)
        values = {k: v for k, (v, _) in args.items()}
        bad = [k for k, (_, t) in args.items() if t != "valid"]
        try:
            res = vr.simulate(values.pop("policy"), _env(env), **values)
        except DOCUMENTED as exc:
            if not bad:  # documented refusals of valid arguments
                assert isinstance(exc, ValueError) and names_an_argument(
                    exc, ("kl_rounds", "fused")), f"simulate refused {args}: {exc!r}"
            else:
                assert names_an_argument(exc, list(args) + ["rounds", "policy"]), exc
            return
        assert not bad, f"simulate accepted bad {bad}: {[args[k] for k in bad]}"
        R, Tn = values["n_runs"], values["n_rounds"]
        assert res.regret.shape == (R, Tn) and np.all(np.isfinite(res.regret))
        assert np.all(res.regret >= -1e-9)  # per-round regret against the best arm
        assert np.all((0 <= res.arms) & (res.arms < 3))
        if res.kl is not None:
            assert np.all(np.isfinite(res.kl)) and res.kl.shape[0] == R

    fuzz()


# ---------------------------------------------------------------------------------------
# defects found by the fuzzing in simulate and the environments (fixed; regression tests)
# ---------------------------------------------------------------------------------------

def test_realise_with_a_huge_n_rounds_names_it():
    env = vr.envs.pool(dim=2, n_arms=2, seed=0)
    with pytest.raises(ValueError, match="n_rounds"):
        env.realise(10 ** 30, 0)


@pytest.mark.parametrize("fused", ["yes", 1])
def test_simulate_checks_fused(fused):
    with pytest.raises((TypeError, ValueError), match="fused"):
        vr.simulate("lints", vr.envs.pool(dim=2, n_arms=3, seed=0), 2, seed=0, fused=fused)
