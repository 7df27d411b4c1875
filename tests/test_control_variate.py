"""The Hessian-free estimator with the control variate grad U(mu) (VARIANT_HF_CV)."""

import numpy as np
import pytest
from vits_ref.kernels import vits as kv
from vits_ref.kernels.linear import POTENTIAL as LINEAR

import vits_ref as vr
from vits_ref import reference
from vits_ref.drivers import cpu


@pytest.fixture
def linear_state():
    rng = np.random.default_rng(0)
    d = 4
    X = rng.standard_normal((30, d))
    V = np.eye(d) + X.T @ X
    b = X.T @ rng.standard_normal(30)
    B = np.linalg.cholesky(np.linalg.inv(V)) * 1.3  # not at the fixed point
    return V, b, rng.standard_normal(d) * 3.0, B, rng


def test_kernel_matches_reference(linear_state):
    V, b, mu, B, rng = linear_state
    C = np.linalg.inv(B)
    eps = rng.standard_normal((3, 5, 4))
    state = [a.copy() for a in (mu, B, C)]
    steps = cpu.vits_steps(LINEAR)
    assert steps(kv.VARIANT_HF_CV, True, *state, (V, b), eps, 1e-3, 2e-3, cpu.vits_scratch(4, 5), 0)
    m, Bm, Cm = mu, B, C
    for s in range(3):
        m, Bm, Cm = reference.vits_step(kv.VARIANT_HF_CV, m, Bm, Cm, V, b, eps[s], 1e-3, 2e-3,
                                        symmetrize=True)
    # BLAS vs NumPy summation order only: 1e-12 relative on O(1) entries
    for got, want in zip(state, (m, Bm, Cm), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _estimates(variant, V, b, mu, B, rng, n):
    """n independent one-draw estimates of A at (mu, B) with C = inv(B)."""
    C = np.linalg.inv(B)
    out = np.empty((n, 4, 4))
    for k in range(n):
        z = B @ rng.standard_normal(4)
        g = V @ (mu + z) - b
        if variant == kv.VARIANT_HF_CV:
            g = g - (V @ mu - b)
        out[k] = (C.T @ C) @ np.outer(z, g)
    return out


def test_unbiased_and_less_noisy_far_from_the_mode(linear_state):
    """Both estimators have mean V (= hess U) when C^T C = inv(B B^T); the control
    variate removes the term z grad U(mu)^T, whose size grows with |grad U(mu)|."""
    V, b, mu, B, rng = linear_state
    n = 40000
    plain = _estimates(kv.VARIANT_HF, V, b, mu, B, rng, n)
    cv = _estimates(kv.VARIANT_HF_CV, V, b, mu, B, rng, n)
    for est in (plain, cv):
        se = est.std(axis=0) / np.sqrt(n)
        assert np.all(np.abs(est.mean(axis=0) - V) < 5 * se + 1e-12)  # 5 standard errors
    # mu is 3 prior sds from the mode here, so the plain estimator is much noisier
    assert plain.var(axis=0).sum() > 10 * cv.var(axis=0).sum()


def test_engine_generic_path_and_fused_loop_agree():
    from vits_ref.models import Linear

    class Generic(Linear):
        name = "linear-generic"

        def spawn(self, eta, lam):
            return Generic(self.dim, eta=eta, lam=lam)

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((20, 3)), rng.standard_normal(20)
    kw = dict(variant="hessian_free", control_variate=True, n_mc=6, step_size=0.01,
              schedule="constant", n_steps=4, seed=3)
    fast, slow = vr.VITS(3, **kw), vr.VITS(3, model=Generic(3), **kw)
    fast.update(X, y)
    slow.update(X, y)
    np.testing.assert_allclose(slow.mu, fast.mu, atol=1e-10)
    np.testing.assert_allclose(slow.B, fast.B, atol=1e-10)
    env = vr.envs.pool(dim=5, n_arms=6, zeta=1.0, seed=0)
    a = vr.simulate("vits-hf-cv", env, n_rounds=40, n_runs=2, seed=2, kl_rounds=[40])
    b = vr.simulate("vits-hf-cv", env, n_rounds=40, n_runs=2, seed=2, kl_rounds=[40],
                    fused=False)
    assert a.fused and not b.fused
    np.testing.assert_allclose(a.cumulative_regret, b.cumulative_regret, atol=1e-10)
    np.testing.assert_allclose(a.kl, b.kl, rtol=1e-8)


def test_only_for_hessian_free():
    with pytest.raises(ValueError, match="control_variate"):
        vr.VITS(3, variant="II", control_variate=True)
    with pytest.raises(TypeError, match="control_variate"):
        vr.VITS(3, variant="hessian_free", control_variate="yes")
