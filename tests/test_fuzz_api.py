"""Hypothesis fuzz suite over the public API: engines and policies.

Property (every test): a call either raises a documented ``ValueError``/``TypeError``
(naming the bad argument) or ``DivergenceError``, or returns finite output of the right
shape; never an error from inside Numba, a hang (tests/fuzz_strategies.counted and the
per-test guard of tests/conftest.py), or a silent NaN. After any update that raised, the
engine's or policy's whole observable state is exactly as before (a deep copy of its
``__dict__`` arrays, generators, dicts, model and history rows; tests/fuzz_strategies.state).
Valid input (decided by tests/fuzz_strategies.valid_array, independently of the library)
is never refused with a ValueError/TypeError: it is accepted or, for a diverging state,
refused with a DivergenceError.

Profiles (tests/conftest.py): "ci" by default (derandomized, reproducible), "large" with
``VITS_REF_FUZZ=large`` or ``--hypothesis-profile=large`` (>= 10 000 cases). The number of
cases tried is printed in pytest's terminal summary (and written to the JSON file named by
``VITS_REF_FUZZ_COUNTS``).

Budget of the ci profile, the whole suite (tests/test_fuzz_*.py): 120 s. Measured
2026-11-22 on the 2-core development machine, warm Numba cache, with
``/usr/bin/time python -m pytest -q tests/test_fuzz_api.py tests/test_fuzz_closed_forms.py
tests/test_fuzz_envs.py tests/test_fuzz_cli.py``: 1606 cases, 16.0 s of wall time (15.1 s
of CPU) at a load average of 1.6; an earlier run while five other sessions loaded the
machine (load average 8) took 223 s of wall time for 38.6 s of CPU. The large profile
(``VITS_REF_FUZZ=large``, same command): 23 033 cases, 175 s of wall time, 164 s of CPU.
"""

import functools

import numpy as np
import pytest
from fuzz_strategies import (
    DOCUMENTED,
    assert_same_state,
    counted,
    floats,
    int_hyper,
    kwargs_of,
    n_examples,
    names_an_argument,
    presented,
    real_hyper,
    seeds,
    shapes,
    state,
    valid_array,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import vits_ref as vr

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::DeprecationWarning")

_SETTINGS = dict(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])

# ---------------------------------------------------------------------------------------
# engines: fuzzed hyperparameters
# ---------------------------------------------------------------------------------------

_COMMON = dict(dim=int_hyper(1, 3, extra_bad=(10 ** 30,)),
               eta=real_hyper(0.05, 20.0, extra_bad=(1e-200, 1e200)),
               lam=real_hyper(0.05, 20.0, extra_bad=(1e-200, 1e200, 5e-324)),
               seed=seeds())


def _model(options=("linear", "logistic")):
    return st.one_of(st.sampled_from(options).map(lambda m: (m, "valid")),
                     st.sampled_from(["LINEAR", "Logistic"]).map(lambda m: (m, "maybe")),
                     st.sampled_from(["foo", None, 3, ""]).map(lambda m: (m, "bad")))


def _choice(options, bad=("nope", None, 1)):
    return st.one_of(st.sampled_from(options).map(lambda v: (v, "valid")),
                     st.sampled_from(bad).map(lambda v: (v, "bad")))


#: name -> (constructor, strategies of its keyword arguments); sizes kept tiny (n_steps,
#: n_mc, particles) so an example costs milliseconds
ENGINES = {
    "LinTS": (vr.LinTS, dict(_COMMON)),
    "VITS": (vr.VITS, dict(_COMMON, model=_model(),
                           variant=_choice(("I", "II", "hessian_free")),
                           step_size=real_hyper(1e-4, 1.0, extra_bad=(1e300,)),
                           n_steps=int_hyper(1, 4), n_mc=int_hyper(1, 3),
                           schedule=_choice(("constant", "decayed")),
                           symmetrize=_choice((False, True), bad=("yes",)))),
    "Langevin": (vr.Langevin, dict(_COMMON, model=_model(),
                                   step_size=real_hyper(1e-4, 1.0),
                                   n_steps=int_hyper(1, 4),
                                   schedule=_choice(("constant", "decayed")))),
    "Laplace": (vr.Laplace, dict(_COMMON, model=_model(), tol=real_hyper(1e-10, 1e-2),
                                 max_iter=int_hyper(1, 30))),
    "RenyiVI": (vr.RenyiVI, dict(_COMMON, alpha=real_hyper(0.0, 2.0, allow_zero=True),
                                 n_mc=int_hyper(1, 8), n_steps=int_hyper(1, 3),
                                 step_size=real_hyper(1e-4, 0.1))),
    "SVGD": (vr.SVGD, dict(_COMMON, n_particles=int_hyper(1, 6), n_steps=int_hyper(1, 3),
                           step_size=real_hyper(1e-4, 0.1))),
    "SGLD": (vr.SGLD, dict(_COMMON, model=_model(("logistic",)), step_size=real_hyper(1e-5, 1e-2),
                           batch_size=int_hyper(1, 4), n_particles=int_hyper(1, 3),
                           n_steps=int_hyper(1, 3))),
}


@functools.cache
def _diffusion_prior():
    # the exact Gaussian diffusion prior, 5 stages: a reverse chain costs microseconds
    return vr.diffusion.GaussianDiffusionPrior(np.zeros(2), np.eye(2), n_stages=5)


def _mixts(**kw):
    return vr.MixTS([0.3, 0.7], np.array([[1.0, 0.0], [-1.0, 0.5]]),
                    np.stack([np.eye(2), 0.5 * np.eye(2)]), **kw)


_SIGMA = real_hyper(0.1, 5.0, extra_bad=(1e-200, 1e200))
ENGINES.update({
    "DiffTS": (lambda **kw: vr.DiffTS(_diffusion_prior(), **kw),
               dict(model=_model(), sigma=_SIGMA, seed=seeds(), tol=real_hyper(1e-10, 1e-2),
                    max_iter=int_hyper(1, 30))),
    "DPS": (lambda **kw: vr.DPS(_diffusion_prior(), **kw),
            dict(model=_model(("linear",)), sigma=_SIGMA, seed=seeds())),
    "MixTS": (_mixts, dict(sigma=_SIGMA, seed=seeds())),
})


def construct(name, kwargs, tags):
    """Build engine ``name``; return it, or None after checking the documented refusal."""
    make = ENGINES[name][0]
    bad = [k for k, t in tags.items() if t == "bad"]
    try:
        eng = make(**kwargs)
    except DOCUMENTED as exc:
        assert not isinstance(exc, vr.DivergenceError), exc
        assert any(t != "valid" for t in tags.values()), \
            f"{name}({kwargs}) refused valid hyperparameters: {exc!r}"
        assert names_an_argument(exc, list(kwargs) + ["prior precision", "model"]), \
            f"{name}: the message does not name the argument: {exc!r}"
        return None
    assert not bad, f"{name} accepted bad {bad}: {[kwargs[k] for k in bad]}"
    return eng


def check_engine_outputs(eng):
    try:
        draws = eng.sample(2)
    except vr.DivergenceError:  # documented for the diffusion engines' draws (DPS)
        draws = None
    if draws is not None:
        assert draws.shape == (2, eng.dim) and np.all(np.isfinite(draws)), draws
    if isinstance(eng, vr.inference.base.GaussianEngine):
        mean, cov = np.asarray(eng.mean), np.asarray(eng.cov)
        assert mean.shape == (eng.dim,) and cov.shape == (eng.dim, eng.dim)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))


@st.composite
def batches(draw, input_dim, logistic):
    """One update batch ``(features, rewards, valid)``: fuzzed presentation and values."""
    shape = draw(shapes(input_dim))
    features, _ = draw(presented(st.just(shape)))
    n = shape[0] if draw(st.integers(0, 9)) else shape[0] + 1
    if logistic and draw(st.booleans()):
        rewards = draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n))
        rewards = np.array(rewards, dtype=float)
    else:
        rewards, _ = draw(presented(st.just((n,))))
    valid = valid_array(features, (None, input_dim)) and valid_array(rewards, (None,)) \
        and np.asarray(features).shape[0] == np.asarray(rewards).shape[0]
    if valid and logistic:
        valid = bool(np.all(np.isin(np.asarray(rewards, dtype=float), (0.0, 1.0))))
    return features, rewards, valid


def exercise_updates(eng, data, n_batches):
    logistic = getattr(eng.model, "name", "") == "logistic"
    for _ in range(n_batches):
        features, rewards, valid = data.draw(batches(eng.model.input_dim, logistic))
        before, n0 = state(eng), eng.n_obs
        try:
            eng.update(features, rewards)
        except DOCUMENTED as exc:
            assert_same_state(before, state(eng))
            assert eng.n_obs == n0
            if valid:
                assert isinstance(exc, vr.DivergenceError), \
                    f"{eng!r} refused a valid batch: {exc!r}"
            else:
                assert names_an_argument(exc, ("features", "rewards")), exc
            continue
        assert valid, f"{eng!r} accepted an invalid batch"
        assert eng.n_obs == n0 + np.asarray(features).shape[0]
        check_engine_outputs(eng)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engines(name):
    weight = 0.5 if name in ("LinTS", "VITS", "Langevin", "Laplace") else 0.25

    @settings(max_examples=n_examples(weight), **_SETTINGS)
    @given(kw=kwargs_of(**ENGINES[name][1]), data=st.data(), n_batches=st.integers(1, 4))
    @counted
    def fuzz(kw, data, n_batches):
        kwargs, tags = kw
        eng = construct(name, kwargs, tags)
        if eng is None:
            return
        check_engine_outputs(eng)
        exercise_updates(eng, data, n_batches)
        # sample's n
        n, tag = data.draw(int_hyper(1, 3))
        before = state(eng)
        try:
            out = eng.sample(n)
        except vr.DivergenceError:
            pass  # documented for the diffusion engines' draws (DPS)
        except DOCUMENTED as exc:
            assert tag != "valid" and "n" in str(exc), exc
            assert_same_state(before, state(eng))
        else:
            assert tag == "valid" and out.shape == (n, eng.dim) and np.all(np.isfinite(out))
        # fresh: the prior again, same hyperparameters
        twin = eng.fresh(0)
        assert type(twin) is type(eng) and twin.n_obs == 0 and twin.dim == eng.dim

    fuzz()


# ---------------------------------------------------------------------------------------
# policies
# ---------------------------------------------------------------------------------------

def _arms(K):
    good = st.one_of(st.integers(0, K - 1), st.integers(0, K - 1).map(np.int64))
    bad = st.sampled_from([K, -1, 0.0, True, "0", None, K + 10 ** 30])
    return st.one_of(good.map(lambda v: (v, "valid")), good.map(lambda v: (v, "valid")),
                     bad.map(lambda v: (v, "bad")))


def _rewards():
    good = st.one_of(st.floats(-10, 10), st.integers(-5, 5), st.floats(-10, 10).map(np.float32),
                     st.sampled_from([1e150, -1e150, 5e-324]))
    bad = st.sampled_from([np.nan, np.inf, 1e151, -1e300, 10 ** 400, "1", None, 1j,
                           [1.0], np.array([1.0, 2.0]), True])
    return st.one_of(good.map(lambda v: (v, "valid")), good.map(lambda v: (v, "valid")),
                     bad.map(lambda v: (v, "bad")))


def _policy(name, dim, n_arms, seed):
    if name == "ThompsonSampling":
        return vr.ThompsonSampling(vr.VITS(dim, n_steps=2, seed=seed))
    if name == "LinUCB":
        return vr.LinUCB(dim, alpha=0.5, lam=2.0)
    if name == "RandomPolicy":
        return vr.RandomPolicy(dim, seed=seed)
    if name == "EpsilonGreedy":
        return vr.EpsilonGreedy(dim, epsilon=0.5, lam=2.0, seed=seed)
    if name == "PerArm":
        return vr.PerArm(vr.LinTS(dim), n_arms, seed=seed)
    if name == "VTS":
        return vr.VTS(dim, n_arms, n_components=2, max_iter=20, seed=seed)
    return vr.NIGTS(dim, n_arms, seed=seed)


POLICIES = ("EpsilonGreedy", "LinUCB", "NIGTS", "PerArm", "RandomPolicy", "ThompsonSampling",
            "VTS")


@pytest.mark.parametrize("name", POLICIES)
def test_policies(name):
    per_arm = name in ("PerArm", "VTS", "NIGTS")

    @settings(max_examples=n_examples(0.5), **_SETTINGS)
    @given(dim=st.integers(1, 3), n_arms=st.integers(1, 4), seed=st.integers(0, 2 ** 32),
           data=st.data(), n_rounds=st.integers(1, 4))
    @counted
    def fuzz(dim, n_arms, seed, data, n_rounds):
        pol = _policy(name, dim, n_arms, seed)
        for _ in range(n_rounds):
            rows = n_arms if per_arm and data.draw(st.integers(0, 5)) else None
            shape = data.draw(shapes(dim, rows=(0, 4)) if rows is None
                              else st.tuples(st.just(rows), st.sampled_from([dim] * 5 + [dim + 1])))
            contexts, _ = data.draw(presented(st.just(shape)))
            ok_ctx = valid_array(contexts, (n_arms if per_arm else None, dim)) \
                and np.asarray(contexts).shape[0] >= 1
            if name in ("VTS", "NIGTS") and not ok_ctx:  # a shared context (dim,) is valid
                ok_ctx = valid_array(contexts, (dim,))
            before = state(pol)
            try:
                arm = pol.select(contexts)
            except DOCUMENTED as exc:
                assert not ok_ctx or isinstance(exc, vr.DivergenceError), \
                    f"{name}.select refused valid contexts: {exc!r}"
                assert names_an_argument(exc, ("contexts",)), exc
                assert_same_state(before, state(pol))
                continue
            assert ok_ctx or name == "RandomPolicy", f"{name}.select accepted invalid contexts"
            K = np.asarray(contexts).shape[0] if np.ndim(contexts) == 2 else n_arms
            assert isinstance(arm, int) and 0 <= arm < K
            arm_v, arm_tag = data.draw(_arms(K))
            reward, r_tag = data.draw(_rewards())
            before = state(pol)
            n0 = getattr(pol, "n_obs", None)
            try:
                pol.update(contexts, arm_v, reward)
            except DOCUMENTED as exc:
                assert_same_state(before, state(pol))
                if arm_tag == r_tag == "valid" and ok_ctx:
                    assert isinstance(exc, vr.DivergenceError), \
                        f"{name}.update refused valid input: {exc!r}"
                else:
                    assert names_an_argument(exc, ("contexts", "arm", "reward")), exc
                continue
            assert name == "RandomPolicy" or (arm_tag == r_tag == "valid" and ok_ctx), \
                f"{name}.update accepted arm={arm_v!r}, reward={reward!r}"
            if n0 is not None:
                assert pol.n_obs == n0 + 1
            if isinstance(pol, vr.ThompsonSampling):
                check_engine_outputs(pol.engine)
            if isinstance(pol, (vr.LinUCB, vr.EpsilonGreedy)):
                assert np.all(np.isfinite(pol.Vinv)) and np.all(np.isfinite(pol.b))

    fuzz()


@pytest.mark.parametrize("name", ("LinUCB", "ThompsonSampling"))
def test_bandit_one_round_accepts_and_refuses_what_the_policy_update_does(name):
    """``Bandit.partial_fit(x, arm, reward)`` of one ``(K, d)`` round against
    ``policy.update(x, arm, reward)`` on a twin policy: the same fuzzed arms and rewards
    accepted (the same state after, bit for bit) or refused with the same error type (the
    state unchanged). The Bandit's compiled door passes a Python or NumPy int and float
    straight through and leaves the rest to its checks."""

    @settings(max_examples=n_examples(2.0), **_SETTINGS)
    @given(dim=st.integers(1, 3), n_arms=st.integers(1, 4), seed=st.integers(0, 2 ** 32),
           data=st.data(), n_rounds=st.integers(1, 4))
    @counted
    def fuzz(dim, n_arms, seed, data, n_rounds):
        pol = _policy(name, dim, n_arms, seed)
        bandit = vr.Bandit(_policy(name, dim, n_arms, seed), n_arms=n_arms)
        rng = np.random.default_rng(seed)
        for _ in range(n_rounds):
            X = rng.standard_normal((n_arms, dim))
            assert bandit.predict(X) == pol.select(X)
            arm, _ = data.draw(_arms(n_arms))
            reward, _ = data.draw(_rewards())
            before = state(bandit.policy)
            outcome = []
            for learn in (pol.update, bandit.partial_fit):
                try:
                    learn(X, arm, reward)
                    outcome.append(None)
                except DOCUMENTED as exc:
                    outcome.append(type(exc))
            assert outcome[0] is outcome[1], \
                f"arm={arm!r}, reward={reward!r}: policy.update {outcome[0]}, Bandit {outcome[1]}"
            if outcome[1] is not None:
                assert_same_state(before, state(bandit.policy))
            # the twins' compiled states are two objects (their reprs differ): their
            # contents are the engines' and LinUCB's arrays, compared here
            twin, ours = state(pol), state(bandit.policy)
            twin.pop("_core"), ours.pop("_core")
            assert_same_state(twin, ours)

    fuzz()


def test_floats_strategy_reaches_every_boundary():
    # the strategies must be able to produce what the suite claims to fuzz with
    from hypothesis import find

    assert np.isnan(find(floats(), lambda x: np.isnan(x)))
    assert np.isinf(find(floats(), lambda x: np.isinf(x)))
    assert abs(find(floats(), lambda x: 1e150 < abs(x) < np.inf)) > 1e150
    assert 0 < abs(find(floats(), lambda x: 0 < abs(x) < 1e-300)) < 1e-300


# ---------------------------------------------------------------------------------------
# regressions: the defects this suite found (fixed in vits_ref)
# ---------------------------------------------------------------------------------------

def test_regression_scalar_is_not_a_vector():
    # _validate.float_array used np.ascontiguousarray, which turns a 0-D array into shape
    # (1,): a scalar passed every ndim=1 check (kl's means, VTS's contexts, rewards)
    with pytest.raises(ValueError, match="mean_p must be 1-D"):
        vr.gaussian.kl(0.0, [[1.0]], 0.0, [[1.0]])
    with pytest.raises(ValueError, match="rewards must be 1-D"):
        vr.LinTS(1, seed=0).update([[1.0]], 1.0)
    with pytest.raises(ValueError, match="contexts must have shape"):
        vr.NIGTS(1, 1, seed=0).select(0.0)
    assert vr._validate.float_array(2.0, "x").shape == ()


@pytest.mark.parametrize("make", [lambda: vr.LinUCB(2),
                                  lambda: vr.EpsilonGreedy(2, seed=0),
                                  lambda: vr.ThompsonSampling(vr.LinTS(2, seed=0)),
                                  lambda: vr.PerArm(vr.LinTS(2), 2, seed=0),
                                  lambda: vr.NIGTS(2, 2, seed=0)])
def test_regression_reward_errors_name_the_reward(make):
    # float(None) raised "float() argument must be ..." (not naming reward), float(10**400)
    # an OverflowError; a 0-D array is still a number
    pol, X = make(), np.ones((2, 2))
    before = state(pol)
    for bad, exc in ((None, TypeError), ([1.0], TypeError), (np.array([1.0, 2.0]), TypeError),
                     (10 ** 400, ValueError), (-(10 ** 400), ValueError)):
        with pytest.raises(exc, match="reward"):
            pol.update(X, 0, bad)
    assert_same_state(before, state(pol))
    pol.update(X, 0, np.array(0.5))
    assert (pol.engine if isinstance(pol, vr.ThompsonSampling) else pol).n_obs == 1


def test_regression_vts_contexts_are_bounded():
    # VTS accepted contexts of 1e200 and returned a zero posterior covariance V
    for pol in (vr.VTS(1, 1, seed=0), vr.NIGTS(1, 1, seed=0)):
        before = state(pol)
        for bad in (np.array([1e200]), np.array([np.nan]), [1e151]):
            with pytest.raises(ValueError, match="contexts"):
                pol.select(bad)
            with pytest.raises(ValueError, match="contexts"):
                pol.update(bad, 0, 1.0)
        assert_same_state(before, state(pol))
        pol.update(np.array([1e150]), 0, 1.0)  # the bound itself is accepted
        assert all(np.all(np.isfinite(v)) for v in pol.posterior(0).values())


@pytest.mark.parametrize("make", [lambda: vr.NIGTS(2, 2, seed=0),
                                  lambda: vr.VTS(2, 2, seed=0)])
def test_regression_vts_divergence_is_rolled_back(make):
    # a DivergenceError of VTS/NIG-TS left n_obs incremented and the arm's factors changed
    pol, twin = make(), make()
    X, good = np.array([[1e150, -1e150], [0.5, 0.2]]), np.array([[0.1, 0.3], [0.5, 0.2]])
    for p in (pol, twin):
        p.update(good, 1, 0.3)
    err = None
    for i in range(6):  # within a few rounds at the bound the factors overflow
        before = state(pol)
        try:
            pol.update(X, 0, 1e150 * (-1) ** i)
        except vr.DivergenceError as exc:
            err = exc
            break
        twin.update(X, 0, 1e150 * (-1) ** i)
    assert err is not None and err.round == pol.n_obs + 1
    assert_same_state(before, state(pol))
    # and it carries on exactly as the twin that never saw the failed observation
    for p in (pol, twin):
        p.update(good, 1, -0.2)
    assert_same_state(state(pol), state(twin))
    assert pol.select(X) == twin.select(X)


# ---------------------------------------------------------------------------------------
# divergence: a failed update leaves the engine exactly as it was, and it carries on as a
# twin that never saw the batch
# ---------------------------------------------------------------------------------------

_DIVERGING = {
    "VITS-I": lambda h: vr.VITS(2, variant="I", step_size=h, schedule="constant", seed=0),
    "VITS-II": lambda h: vr.VITS(2, step_size=h, schedule="constant", seed=0),
    "VITS-HF": lambda h: vr.VITS(2, variant="hessian_free", step_size=h, n_mc=3,
                                 schedule="constant", seed=0),
    "Langevin": lambda h: vr.Langevin(2, step_size=h, schedule="constant", seed=0),
    "VITS-logistic": lambda h: vr.VITS(2, model="logistic", step_size=h,
                                       schedule="constant", seed=0),
}


@pytest.mark.parametrize("name", sorted(_DIVERGING))
def test_divergence_is_rolled_back(name):
    seen = []

    @settings(max_examples=n_examples(0.2), **_SETTINGS)
    @given(h=st.floats(0.05, 5.0), scale=st.sampled_from([1.0, 10.0, 1e3, 1e50, 1e150]),
           rows=st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1)), min_size=1,
                         max_size=3))
    @counted
    def fuzz(h, scale, rows):
        eng, twin = _DIVERGING[name](h), _DIVERGING[name](h)
        good = (np.array([[0.1, 0.2]]), np.array([1.0]))
        try:
            for e in (eng, twin):
                e.update(*good)
        except vr.DivergenceError:  # h too large even for the good batch: nothing to keep
            assume(False)
        X = scale * np.array(rows)
        r = np.ones(len(rows)) if "logistic" in name else scale * np.array(rows)[:, 0]
        before = state(eng)
        try:
            eng.update(X, r)
        except vr.DivergenceError as exc:
            seen.append(exc)
            assert exc.round == 1 + len(rows) and str(exc.round) in str(exc)
            assert_same_state(before, state(eng))
            outcomes = []
            for e in (eng, twin):  # the same continuation, bit for bit
                try:
                    e.update(*good)
                    outcomes.append(None)
                except vr.DivergenceError as again:
                    outcomes.append(str(again))
            assert outcomes[0] == outcomes[1]
            assert_same_state(state(eng), state(twin))
            assert np.array_equal(eng.sample(2), twin.sample(2))
        else:
            check_engine_outputs(eng)

    fuzz()
    assert seen, f"no example diverged: {name} was not exercised"


@pytest.mark.parametrize("sigma", [1e-200, 5e-324, 1e50, 1e200])
def test_regression_noise_sd_outside_the_range_names_sigma(sigma):
    # sigma = 1e-200: 1/sigma^2 raised a ZeroDivisionError; 1e50: an error naming eta
    for make in (lambda s: vr.DiffTS(_diffusion_prior(), sigma=s),
                 lambda s: vr.DPS(_diffusion_prior(), sigma=s),
                 lambda s: _mixts(sigma=s),
                 lambda s: vr.inference.mixts.TunedLinTS(np.zeros(2), np.eye(2), sigma=s),
                 lambda s: vr.inference.mixts.StandardTS(2, sigma=s)):
        with pytest.raises(ValueError, match=r"sigma must be about 1e-50 to 1e\+50"):
            make(sigma)
    assert _mixts(sigma=1e-49).sigma == 1e-49


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGALRM"), reason="no SIGALRM")
def test_hang_guard_fails_a_slow_example(monkeypatch):
    # the per-example guard of fuzz_strategies.counted turns a hang into a failure
    import time

    import fuzz_strategies

    monkeypatch.setattr(fuzz_strategies, "EXAMPLE_TIMEOUT", 1)

    @fuzz_strategies.counted
    def hangs():
        time.sleep(5)

    start = time.perf_counter()
    with pytest.raises(fuzz_strategies.ExampleTimeout):
        hangs()
    assert time.perf_counter() - start < 4
