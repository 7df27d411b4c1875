"""Numerical limits: data and hyperparameters beyond double precision's safe range are
refused at the boundary, and a divergence is rolled back.

Each asserts the documented error (ValueError/TypeError naming the argument,
DivergenceError naming the engine, round and step size) or a finite, correct result, and
that a failed update leaves the engine exactly as it was.
"""

import numpy as np
import pytest
from vits_ref.kernels.newton import FAILED

import vits_ref as vr
from vits_ref import _validate as val
from vits_ref.drivers import cpu

# ---------------------------------------------------------------------------------------
# helpers: the whole state of an engine, to check that a failed update changed nothing
# ---------------------------------------------------------------------------------------


def _state(obj, seen=None):
    """Everything observable of an engine: its arrays, scalars, dicts, generators' states
    and its model's (history as the ``n_obs`` rows in use)."""
    out = {}
    for k, v in sorted(vars(obj).items()):
        if k in ("_scratch", "_g", "_H"):  # scratch: overwritten before it is read
            continue
        if k in ("_X", "_y", "_r"):  # history buffers: compared as their n_obs rows below
            out[k] = id(v)
            continue
        if isinstance(v, np.ndarray):
            out[k] = v.copy()
        elif isinstance(v, np.random.Generator):
            out[k] = repr(v.bit_generator.state)
        elif isinstance(v, (int, float, str, bool, type(None))):
            out[k] = v
        elif isinstance(v, dict):
            out[k] = repr(v)
    model = getattr(obj, "model", None)
    if model is not None:
        out["model"] = _state(model)
        for name in ("X", "y"):
            if hasattr(type(model), name):
                out["model"][name] = getattr(model, name).copy()
    return out


def _assert_same(a, b, path=""):
    assert a.keys() == b.keys(), path
    for k in a:
        if isinstance(a[k], dict):
            _assert_same(a[k], b[k], f"{path}.{k}")
        elif isinstance(a[k], np.ndarray):
            assert a[k].shape == b[k].shape and np.array_equal(a[k], b[k], equal_nan=True), \
                f"{path}.{k}"
        else:
            assert a[k] == b[k], f"{path}.{k}"


def _diverging_update_is_rolled_back(eng, X, r, name, step):
    """``update(X, r)`` raises a DivergenceError naming ``name`` and the round (and the
    step size ``step``), and leaves ``eng`` exactly as it was: same state, and the same
    draws afterwards as an identical engine that never saw the batch."""
    before = _state(eng)
    with pytest.raises(vr.DivergenceError) as info:
        eng.update(X, r)
    err = info.value
    assert err.engine == name and err.round == eng.n_obs + X.shape[0]
    assert f"round {err.round}" in str(err)
    if step is not None:
        assert err.step_size == pytest.approx(step)
    _assert_same(before, _state(eng))
    return err


# ---------------------------------------------------------------------------------------
# LinTS and LinUCB on huge finite features
# ---------------------------------------------------------------------------------------

def test_huge_features_are_rejected_at_the_boundary():
    # the decision: |x| <= MAX_ABS_DATA = 1e150 (a product of two stays below 1e300);
    # 1e155, for example, squares to inf, so it is refused before anything changes
    for eng in (vr.LinTS(2, seed=0), vr.VITS(2, seed=0), vr.Laplace(2, seed=0),
                vr.Langevin(2, seed=0)):
        before = _state(eng)
        with pytest.raises(ValueError, match=r"features must have entries of magnitude <= 1e\+150"):
            eng.update([[1e155, 0.0]], [1.0])
        with pytest.raises(ValueError, match="rewards must have entries"):
            eng.update([[1.0, 0.0]], [1e200])
        with pytest.raises(ValueError, match="features contains NaN or inf"):
            eng.update([[np.nan, 0.0]], [1.0])
        _assert_same(before, _state(eng))
    # at the bound itself the result is finite
    eng = vr.LinTS(2, seed=0).update([[1e150, 0.0]], [1.0])
    assert np.all(np.isfinite(eng.sample(3))) and np.all(np.isfinite(eng.cov))
    pol = vr.LinUCB(2)
    with pytest.raises(ValueError, match="contexts must have entries"):
        pol.select([[1e155, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="contexts must have entries"):
        pol.update([[1e155, 0.0]], 0, 1.0)
    with pytest.raises(ValueError, match="reward must have magnitude"):
        pol.update([[1.0, 0.0]], 0, 1e200)
    assert pol.n_obs == 0 and np.array_equal(pol.Vinv, np.eye(2))


def test_simulate_rejects_a_realisation_beyond_the_bound():
    # pool(zeta=1e154) is refused by the environment (test_pool_zeta_bound); an environment
    # that draws beyond the bound anyway is refused by simulate before the run, on the
    # fused and the Python path alike (the fused loop cannot check as it goes)
    class Huge(vr.envs.PoolEnvironment):
        def _contexts(self, T, rng):
            return 1e152 * super()._contexts(T, rng)

    env = Huge(dim=2, n_arms=3, zeta=1.0, seed=0)
    for fused in (True, False):
        with pytest.raises(ValueError, match="contexts must have entries"):
            vr.simulate("lints", env, 5, seed=0, fused=fused)


def test_overflowing_statistics_raise_and_roll_back(monkeypatch):
    # the second line of defence: a non-finite factor after the update (e.g. sums of many
    # terms near the bound) is a DivergenceError, rolled back; simulated by a rank-one
    # update that writes inf, since reaching 1.8e308 from entries <= 1e300 needs ~1e8 rows
    eng = vr.LinTS(2, seed=0).update([[1.0, 2.0]], [0.5])
    real = cpu.chol_update_rows

    def overflow(L, X):
        real(L, X)
        L[1, 1] = np.inf

    monkeypatch.setattr(cpu, "chol_update_rows", overflow)
    err = _diverging_update_is_rolled_back(eng, np.array([[1.0, 0.0]]), np.array([1.0]),
                                           "LinTS", None)
    assert "overflowed" in str(err)
    monkeypatch.setattr(cpu, "chol_update_rows", real)
    assert np.all(np.isfinite(eng.sample(2)))
    # LinUCB: the Sherman-Morrison update likewise, on its own path (the simulations'
    # Python loop) and in its compiled state, where b = sum r x overflows for real
    # (there, a ridge of 1e-100 makes x^T inv(V) x overflow for features of 1e150)
    for compiled, lam, x in ((False, 1.0, 1.0), (True, 1e-100, 1e150)):
        pol = vr.LinUCB(2, lam=lam)
        pol.compiled = compiled
        pol.update([[1.0, 2.0]], 0, 0.5)
        Vinv, b = pol.Vinv.copy(), pol.b.copy()
        if not compiled:
            monkeypatch.setattr(cpu, "sherman_morrison", lambda V, x: V.fill(np.nan))
        with pytest.raises(vr.DivergenceError, match="LinUCB diverged .* at round 2"):
            pol.update([[x, 0.0]], 0, 1.0)
        assert pol.n_obs == 1 and np.array_equal(pol.Vinv, Vinv) and np.array_equal(pol.b, b)
        assert (pol._core is not None) == compiled


# ---------------------------------------------------------------------------------------
# a DivergenceError is rolled back
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant,name", [("I", "VITS-I"), ("II", "VITS-II"),
                                          ("hessian_free", "VITS-II-HF")])
def test_vits_divergence_is_rolled_back(variant, name):
    # for example h = 1 with |x|^2 = 200 diverges in the first update (the
    # Hessian-free variant at h = 0.5 with 20 draws and a symmetrised A, so that its noisy
    # estimate of A survives the good rounds)
    h = 0.5 if variant == "hessian_free" else 1.0
    kw = {"n_mc": 20, "symmetrize": True} if variant == "hessian_free" else {}
    eng = vr.VITS(2, variant=variant, step_size=h, schedule="constant", seed=0, **kw)
    eng.update([[0.1, 0.2]], [0.3])  # a good first round, so there is a state to keep
    _diverging_update_is_rolled_back(eng, np.full((1, 2), 10.0), np.array([1.0]), name, h)
    assert eng.n_obs == 1 and np.all(np.isfinite(eng.cov))
    # and the engine carries on exactly as one that never saw the failed batch
    twin = vr.VITS(2, variant=variant, step_size=h, schedule="constant", seed=0, **kw)
    twin.update([[0.1, 0.2]], [0.3])
    for e in (eng, twin):
        e.update([[0.2, -0.1]], [0.1])
    assert np.array_equal(eng.mu, twin.mu) and np.array_equal(eng.B, twin.B)
    assert np.array_equal(eng.sample(2), twin.sample(2))
    assert np.all(np.isfinite(eng.sample(3)))


def test_logistic_history_is_truncated_not_copied():
    # capacity 1: the failed batch forces the history buffers to grow; the rollback puts
    # back n_obs and the old buffers (no copy of the history per update)
    eng = vr.VITS(2, model="logistic", step_size=1.0, schedule="constant", seed=0)
    eng.model.__init__(2, capacity=1)
    eng.update([[0.1, 0.2]], [1.0])
    X_before = eng.model._X
    _diverging_update_is_rolled_back(eng, np.full((3, 2), 30.0), np.ones(3), "VITS-II", 1.0)
    assert eng.model._X is X_before and eng.model.X.shape == (1, 2)


def test_langevin_divergence_is_rolled_back():
    eng = vr.Langevin(2, step_size=5.0, schedule="constant", seed=0)
    X, r = np.full((1, 2), 10.0), np.array([1.0])
    with pytest.raises(vr.DivergenceError):
        for _ in range(30):
            before = _state(eng)
            eng.update(X, r)
    _assert_same(before, _state(eng))
    assert np.all(np.isfinite(eng.sample(1)))


def test_laplace_divergence_is_rolled_back():
    eng = vr.Laplace(2, model="logistic", seed=0).update([[0.5, 0.1]], [1.0])
    eng._newton = lambda *args: (FAILED, 3)  # a fit that fails (non-finite IRLS step)
    _diverging_update_is_rolled_back(eng, np.ones((1, 2)), np.ones(1), "Laplace", None)
    assert eng.n_obs == 1 and eng.model.X.shape == (1, 2)


def test_rejected_input_and_other_errors_also_leave_the_engine_untouched():
    eng = vr.VITS(2, seed=0).update([[0.1, 0.2]], [0.3])
    before = _state(eng)
    for X, r in (([[1.0, 2.0, 3.0]], [1.0]), ([[1.0, 2.0]], [1.0, 2.0]),
                 ([["a", "b"]], [1.0])):
        with pytest.raises((ValueError, TypeError)):
            eng.update(X, r)
    _assert_same(before, _state(eng))


# ---------------------------------------------------------------------------------------
# the theoretical schedule's inputs
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,name", [
    ({"lam": 1e200}, "lam"), ({"lam": 1e-300}, "lam"), ({"horizon": 10 ** 400}, "horizon"),
    ({"R": 1e-300}, "R"), ({"prior_cov": 1e200 * np.eye(2)}, "prior_cov")])
def test_theoretical_schedule_inputs_are_checked_before_any_data(kw, name):
    horizon = kw.pop("horizon", 100)
    prior_cov = kw.pop("prior_cov", None)
    model = "linear" if prior_cov is None else vr.models.Linear(2, prior_cov=prior_cov)
    with pytest.raises(ValueError, match=name):
        vr.VITS(2, model=model, schedule="theoretical", horizon=horizon, seed=0, **kw)


def test_theoretical_step_overflow_in_an_update_is_a_rolled_back_divergence():
    # V's eigenvalue 1e300 squares to inf in h_t: a DivergenceError, nothing added
    eng = vr.VITS(2, schedule="theoretical", horizon=100, seed=0)
    _diverging_update_is_rolled_back(eng, np.array([[1e150, 0.0]]), np.array([1.0]),
                                     "VITS-II", None)
    assert eng.n_obs == 0


# ---------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------

def test_general_posterior_with_a_huge_prior_covariance():
    with pytest.raises(ValueError, match="not positive definite in double precision"):
        vr.gaussian.linear_posterior_general(np.ones((3, 2)), np.ones(3), np.zeros(2),
                                             1e300 * np.eye(2), 1.0)
    # a large but representable prior is fine (and close to least squares)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    mean, cov = vr.gaussian.linear_posterior_general(X, [1.0, 2.0, 3.0], np.zeros(2),
                                                     1e8 * np.eye(2), 1.0)
    np.testing.assert_allclose(mean, np.linalg.lstsq(X, [1.0, 2.0, 3.0], rcond=None)[0],
                               rtol=1e-6)  # prior weight 1e-8 against data weight O(1)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_closed_forms_never_return_non_finite_values():
    g = vr.gaussian
    with pytest.raises(ValueError, match="not finite"):
        g.w2_squared([0.0, 0.0], 1e308 * np.eye(2), [0.0, 0.0], 1e308 * np.eye(2))
    with pytest.raises(ValueError, match="not finite"):
        g.product([0.0], [[1e-309]], [0.0], [[1.0]])
    with pytest.raises(ValueError, match="not finite"):
        g.linear_posterior_general(1e200 * np.ones((3, 2)), np.ones(3), np.zeros(2),
                                   np.eye(2), 1.0)
    # ordinary inputs: the closed forms (docstring values)
    assert g.w2_squared([0.0], [[1.0]], [3.0], [[4.0]]) == 10.0
    mean, cov, _ = g.product([0.0], [[1.0]], [2.0], [[1.0]])
    np.testing.assert_allclose([mean[0], cov[0, 0]], [1.0, 0.5], rtol=1e-15)


# ---------------------------------------------------------------------------------------
# hyperparameters and environments
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{"eta": 1e-200}, {"eta": 5e-324}, {"lam": 1e-200},
                                {"lam": 5e-324}, {"lam": 1e200},
                                {"eta": 1e-60, "lam": 1e-60}])
def test_hyperparameters_outside_the_range_are_refused(kw):
    name = r"eta \* lam \(the prior precision\)" if len(kw) == 2 else next(iter(kw))
    for make in (vr.LinTS, vr.VITS, vr.Langevin, vr.Laplace,
                 lambda d, **k: vr.models.Logistic(d, **k),
                 lambda d, **k: vr.models.MLP(d, hidden=(3,), **k)):
        with pytest.raises(ValueError, match=rf"{name} must be in \[1e-100, 1e\+100\]"):
            make(2, **kw)
    if "lam" in kw and len(kw) == 1:
        with pytest.raises(ValueError, match="lam must be in"):
            vr.LinUCB(2, lam=kw["lam"])


@pytest.mark.parametrize("lam", [1e6, 1e10])
def test_vits_i_leaving_its_stable_range_is_a_divergence(lam):
    # h0 lam >> 1: the square-root recursion blows up (to 1e299 and inf within 10 rounds
    # before); the range check |B| <= 1e6 x the prior's standard deviation stops it in
    # the first round, rolled back, naming round and step size
    env = vr.envs.pool(dim=5, n_arms=10, seed=0)
    real = env.realise(3, 1)
    eng = vr.VITS(5, variant="I", lam=lam, eta=10.0, step_size=0.01, seed=0)
    err = _diverging_update_is_rolled_back(eng, real.contexts[0, :1], real.rewards[0, :1],
                                           "VITS-I", 0.01 / 10.0)
    assert "left its stable range" in str(err) and err.round == 1
    # the same in simulate's Python loop; the fused loop stops at the first non-finite
    # value (a later round), never with a silent result
    for fused in (False, True):
        with pytest.raises(vr.DivergenceError, match="VITS-I diverged"):
            vr.simulate(vr.ThompsonSampling(eng), env, 30, seed=0, fused=fused,
                        kl_rounds=[30])


def test_well_scaled_vits_never_trips_the_range_check():
    # the posterior covariance is below the prior's: a healthy run stays far inside
    env = vr.envs.pool(dim=5, n_arms=10, seed=0)
    for name in ("vits-i", "vits-ii", "vits-hf"):
        res = vr.simulate(name, env, 200, seed=0, fused=False, kl_rounds=[200])
        assert np.all(np.isfinite(res.kl))


def test_pool_zeta_bound():
    with pytest.raises(ValueError, match=r"zeta must be <= 1e\+50"):
        vr.envs.pool(dim=2, n_arms=3, zeta=1e200, seed=0)
    env = vr.envs.pool(dim=2, n_arms=3, zeta=1e50, reward="quadratic", seed=0)
    real = env.realise(3, 0)
    assert np.all(np.isfinite(real.rewards)) and np.isfinite(env.noise_scale)


# ---------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------

def test_models_check_shapes_and_overflow():
    m = vr.models.Logistic(2)
    with pytest.raises(ValueError, match="M >= 1"):
        m.grads_hessian(np.empty((0, 2)))
    _, H = m.grads_hessian(np.zeros((1, 2)))  # no data: the prior's eta lam I
    assert np.array_equal(H, np.eye(2))
    lin = vr.models.Linear(2)
    assert lin.grad(np.zeros(2)).shape == (2,)
    with pytest.raises(ValueError, match=r"theta must have shape \(2,\)"):
        lin.grad(np.zeros((1, 2)))
    assert vr.models.Linear(1).grad([0.0]).shape == (1,)
    mlp = vr.models.MLP(2, hidden=(3,))
    mlp.add(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="overflowed"):
        mlp.grad(np.full(mlp.dim, 1e154))
    with pytest.raises(ValueError, match="overflowed"):
        mlp.predict(np.full(mlp.dim, 1e154), np.ones((1, 2)))
    assert np.all(np.isfinite(mlp.grad(mlp.init(0))))


_M = val.MAX_ABS_DATA
_ABOVE = np.nextafter(_M, np.inf)  # one ulp beyond the bound


_N = val._ONE_PASS_SIZE


@pytest.mark.parametrize("arr", [
    np.random.default_rng(0).standard_normal((_N, 7, 3)),  # shown in one pass
    np.zeros(_N),
    np.r_[np.zeros(_N), _M, -_M],                 # at the bound: within
    np.r_[np.zeros(_N), _ABOVE],                  # one ulp beyond, among zeros
    np.r_[np.zeros(_N), -_ABOVE],
    np.full(_N, _M),                              # within, the sum of squares overflows
    np.r_[np.zeros(_N), np.full(4, 0.6 * _M)],    # within, the sum just beyond M^2
    np.r_[np.ones(_N), np.nan],
    np.r_[np.ones(_N), np.inf],
    np.r_[np.ones(_N), -np.inf],
    np.full((_N, 4), 1e155)[:, ::2],              # not contiguous
    np.full((_N, 4), 1.0)[:, ::2],
    np.r_[np.ones(5), np.nan],                    # too small for the one pass
    np.full(5, 1e155),
    np.empty(0),
], ids=lambda a: f"{a.shape}")
def test_the_one_pass_bound_check_is_the_entrywise_check(arr):
    # bounded_data's one BLAS pass (sum x^2 < M^2) may only accept data that the
    # definition |x| <= M accepts entry by entry; everything else goes to min and max,
    # whose messages stay (contains NaN or inf / must have entries of magnitude)
    within = bool(np.all(np.abs(arr) <= _M))  # the definition (NaN compares False)
    if val._within_by_squares(arr):
        assert within
    if within:
        assert val.bounded_data(arr, "x") is arr
    else:
        with pytest.raises(ValueError, match=r"^x (contains NaN or inf|must have entries)"):
            val.bounded_data(arr, "x")
    with np.errstate(all="raise"):  # a user's error state: the fast path warns of nothing
        val._within_by_squares(arr)
    # the fast path is taken for ordinary data (else the pass it saves is not saved)
    if arr.size >= _N and np.all(np.abs(arr) < 1e100) and arr.flags.c_contiguous:
        assert val._within_by_squares(arr)


def test_bounds_are_documented_constants():
    assert val.MAX_ABS_DATA ** 2 < np.finfo(float).max
    assert val.HYPER_RANGE == (1e-100, 1e100)


# ---------------------------------------------------------------------------------------
# Rényi VI's Adam moments, the Gaussian diffusion prior's resolution
# ---------------------------------------------------------------------------------------

def test_renyi_gradients_whose_squares_overflow_raise_and_roll_back():
    # features of 1e80: V ~ 1e160, gradients ~1e160 are finite but their squares (Adam's
    # second moment) are inf, and m / sqrt(inf) = 0 froze q at the prior without a word
    eng = vr.RenyiVI(2, seed=0, step_size=0.05)
    rng = np.random.default_rng(0)
    X, r = 1e80 * rng.standard_normal((5, 2)), rng.standard_normal(5)
    err = _diverging_update_is_rolled_back(eng, X, r, eng.name, 0.05)
    assert "second moment" in str(err)
    # ordinary data after the refused batch: the engine still learns
    eng.update(rng.standard_normal((5, 2)), rng.standard_normal(5))
    assert np.all(np.isfinite(eng.mean)) and not np.array_equal(eng.mean, np.zeros(2))


def test_gaussian_diffusion_prior_refuses_a_spread_below_its_rounding():
    # the chain's rounding leaves a spread of ~1e-16 of max(1, |mean|, sqrt(max eig)):
    # cov = 1e-40 I came out with standard deviation 2.6e-17, not 1e-20
    GDP = vr.diffusion.GaussianDiffusionPrior
    for mean, cov in ((np.zeros(2), 1e-40 * np.eye(2)),
                      (np.full(2, 1e3), 1e-20 * np.eye(2)),  # (1e-12 x 1e3)^2 = 1e-18
                      (np.zeros(2), np.diag([1e10, 1e-20]))):  # (1e-12 x 1e5)^2 = 1e-14
        with pytest.raises(ValueError, match="cov's smallest eigenvalue .* must be at least"):
            GDP(mean, cov, n_stages=10)
    # inside the range the chain samples N(m, S): a spread of 1e-10 (standard deviation)
    # at the bound's 1e2 margin, checked to the sampling error of 4000 draws (5 sd: 11%)
    x = GDP(np.zeros(2), 1e-20 * np.eye(2), n_stages=10).sample(4000, seed=0)
    assert np.all(np.abs(x.std(axis=0) / 1e-10 - 1.0) < 0.11)
