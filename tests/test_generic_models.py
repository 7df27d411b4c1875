"""The engines' path for non-linear models, checked on a linear model routed through it.

``_GenericLinear`` is the linear model under another name, so the VITS and Langevin
engines take their generic path (``grads_hessian`` + the shared update body) instead of
the linear fast path; both paths must give the same iterates from the same seed.
"""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.models import Linear


class _GenericLinear(Linear):
    name = "linear-generic"

    def spawn(self, eta, lam):
        return _GenericLinear(self.dim, eta=eta, lam=lam)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 4)) * np.array([1.0, 0.5, 0.2, 0.1])
    return X, X @ np.array([0.5, -1.0, 2.0, 1.0]) + 0.3 * rng.standard_normal(40)


@pytest.mark.parametrize("variant,n_mc", [("I", 1), ("II", 1), ("II", 3), ("hessian_free", 8)])
def test_vits_generic_path_matches_linear_path(data, variant, n_mc):
    X, r = data
    kw = dict(variant=variant, step_size=0.01, schedule="constant", n_steps=5, n_mc=n_mc,
              seed=11)
    fast = vr.VITS(4, **kw)
    slow = vr.VITS(4, model=_GenericLinear(4), **kw)
    for i in range(0, 40, 8):
        fast.update(X[i:i + 8], r[i:i + 8])
        slow.update(X[i:i + 8], r[i:i + 8])
    # Same algorithm, same noise; the gradients are summed in another order (a
    # matrix product vs eta V mu + (eta V B) mean eps), so agreement is to rounding
    # amplified by 25 steps of a contraction: 1e-10 is ~1e5 ulps of O(1) entries.
    np.testing.assert_allclose(slow.mu, fast.mu, rtol=0, atol=1e-10)
    np.testing.assert_allclose(slow.B, fast.B, rtol=0, atol=1e-10)
    np.testing.assert_allclose(slow.C, fast.C, rtol=0, atol=1e-10)


def test_langevin_generic_path_matches_linear_path(data):
    X, r = data
    fast = vr.Langevin(4, step_size=0.01, schedule="constant", n_steps=7, seed=2)
    slow = vr.Langevin(4, model=_GenericLinear(4), step_size=0.01, schedule="constant",
                       n_steps=7, seed=2)
    for i in range(0, 40, 10):
        fast.update(X[i:i + 10], r[i:i + 10])
        slow.update(X[i:i + 10], r[i:i + 10])
    np.testing.assert_allclose(slow.theta, fast.theta, rtol=0, atol=1e-12)


def test_model_object_dimension_must_match():
    with pytest.raises(ValueError, match="dim"):
        vr.VITS(3, model=_GenericLinear(4))
    with pytest.raises(TypeError, match="model"):
        vr.VITS(3, model=42)


def test_theoretical_schedule_needs_linear_model():
    eng = vr.VITS(2, model=_GenericLinear(2), schedule="theoretical", horizon=10)
    with pytest.raises(ValueError, match="linear"):
        eng.update(np.eye(2), np.ones(2))


def test_simulate_runs_generic_models_in_python_loop():
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    pol = vr.ThompsonSampling(vr.VITS(3, model=_GenericLinear(3), step_size=0.01))
    res = vr.simulate(pol, env, n_rounds=20, n_runs=2, seed=1)
    ref = vr.simulate(vr.ThompsonSampling(vr.VITS(3, step_size=0.01)), env, n_rounds=20,
                      n_runs=2, seed=1)
    assert not res.fused and ref.fused
    np.testing.assert_allclose(res.cumulative_regret, ref.cumulative_regret, atol=1e-9)


@pytest.mark.parametrize("variant,kw", [("I", {}), ("II", {}), ("II", {"n_mc": 3}),
                                        ("hessian_free", {"n_mc": 7}),
                                        ("hessian_free", {"n_mc": 7, "control_variate": True,
                                                          "symmetrize": True})])
def test_fused_logistic_round_matches_generic_path(variant, kw):
    """The one-body logistic round (kernels.vits.vits_logistic_steps) runs exactly the
    generic path's arithmetic: same bodies, same order, so bit-identical iterates."""
    from vits_ref.models import Logistic

    class GenericLogistic(Logistic):
        name = "logistic-generic"

        def spawn(self, eta, lam):
            return GenericLogistic(self.dim, eta=eta, lam=lam)

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = (rng.random(200) < 0.5).astype(float)
    common = dict(variant=variant, step_size=0.01, schedule="constant", n_steps=6, seed=1,
                  **kw)
    fused = vr.VITS(5, model="logistic", **common)
    generic = vr.VITS(5, model=GenericLogistic(5), **common)
    for i in range(0, 200, 50):
        fused.update(X[i:i + 50], y[i:i + 50])
        generic.update(X[i:i + 50], y[i:i + 50])
    for a, b in ((fused.mu, generic.mu), (fused.B, generic.B), (fused.C, generic.C)):
        np.testing.assert_array_equal(a, b)
