"""The plain-NumPy references (vits_ref.reference) compute the library's numbers.

The benchmarks (vits_ref._bench) time the library against these references; a speed ratio
means something only if both sides compute the same thing. Here each reference is run on
the same inputs (the same step noise, copied from the engine's stream) and compared to
rounding: the two differ only in the order of floating-point sums (BLAS Gram products vs
``X.T @ (w X)``, dsyrk vs ``J.T @ J``), so agreement is to ~1e-15 relative (measured);
1e-10 leaves room for other BLAS builds without hiding a wrong formula (a wrong sign, a
missing eta or lam, or the wrong Hessian changes the state by far more than 1e-10 at these
step sizes: each test first checks the round moved the state by at least 1e-4 to 1e-2
relative). The linear references (vits_step, linear_bandit_run) are checked in
test_vits.py, test_control_variate.py, test_target.py and test_simulate.py.
"""

import numpy as np
import pytest

from vits_ref import reference
from vits_ref._bench import nonlinear as bn
from vits_ref.reference import logistic as ref_logistic

needs_mlp = pytest.mark.skipif(bn.mlp_available() is None,
                               reason="vits_ref.models.MLP is not available")


def rel_err(got, want):
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def assert_rounds_agree(engine, rtol=1e-10, min_move=1e-4):
    start = (engine.mu.copy(), engine.B.copy(), engine.C.copy())
    lib, ref = bn.EngineRound(engine).with_reference()
    moved = max(rel_err(a, a0) for a, a0 in zip(lib, start, strict=True))
    assert moved > min_move, moved  # the round did something worth comparing
    for a, b in zip(lib, ref, strict=True):
        assert rel_err(a, b) < rtol


def test_public_names():
    for name in ("linear_bandit_run", "step_size", "vits_step", "vits_ii_step",
                 "vits_ii_round", "logistic", "mlp"):
        assert hasattr(reference, name), name
    from vits_ref.reference import bandit, vits

    assert bandit.vits_step is vits.vits_step  # one VITS step, imported where used


# --------------------------------------------------------------------------- logistic


def test_logistic_grads_hessian_reference():
    X, y = bn.logistic_problem(dim=6, n_obs=300, seed=1)
    eng = bn.logistic_engine(X, y, eta=1.7, lam=0.6)
    thetas = 3.0 * np.random.default_rng(2).standard_normal((3, 6))
    thetas[0, 0] = 400.0  # |x theta| in the hundreds: the overflow-free forms must agree
    G, H = eng.model.grads_hessian(thetas, True)
    G_ref, H_ref = ref_logistic.grads_hessian(X, y, thetas, 1.7, 0.6)
    assert rel_err(G, G_ref) < 1e-12
    assert rel_err(H, H_ref) < 1e-12


def test_logistic_value_reference():
    X, y = bn.logistic_problem(dim=6, n_obs=300, seed=1)
    eng = bn.logistic_engine(X, y, eta=1.7, lam=0.6)
    theta = 3.0 * np.random.default_rng(2).standard_normal(6)
    theta[0] = 400.0  # softplus of z in the hundreds: no overflow, no cancellation
    want = ref_logistic.value(X, y, theta, 1.7, 0.6)
    assert np.isfinite(want)
    assert abs(eng.model.value(theta) - want) < 1e-12 * abs(want)


def test_logistic_round_matches_numpy_constant_step():
    X, y = bn.logistic_problem(dim=8, n_obs=200, seed=3)
    eng = bn.logistic_engine(X, y, schedule="constant", step_size=0.05, eta=1.3, lam=0.7,
                             seed=4)
    assert_rounds_agree(eng, min_move=1e-2)


def test_logistic_round_matches_numpy_benchmark_configuration():
    # what the benchmark times: d = 20, n = 1000, the default (decayed) schedule
    X, y = bn.logistic_problem()
    eng = bn.logistic_engine(X, y)
    assert_rounds_agree(eng, min_move=1e-4)


# --------------------------------------------------------------------------- MLP


@needs_mlp
def test_mlp_grads_gauss_newton_reference():
    MLP = bn.mlp_available()
    m = MLP(3, hidden=(4, 5), eta=1.5, lam=0.4)
    X, r = bn.mlp_problem(input_dim=3, n_obs=40, seed=5)
    m.add(X, r)
    thetas = np.stack([m.init(6), m.init(7)])
    G, H = m.grads_hessian(thetas, True)
    G_ref, H_ref = reference.mlp.grads_gauss_newton(X, r, thetas, 1.5, 0.4, (4, 5))
    assert rel_err(G, G_ref) < 1e-12
    assert rel_err(H, H_ref) < 1e-12
    # the NumPy Jacobian is the model's explicit one
    J = reference.mlp.jacobian(thetas[0], X, (4, 5))
    assert rel_err(J, m.jacobian(thetas[0])) < 1e-13


@needs_mlp
def test_mlp_round_matches_numpy_small_network():
    X, r = bn.mlp_problem(input_dim=3, n_obs=60, seed=8)
    eng = bn.mlp_engine(X, r, hidden=(4, 5), schedule="constant", step_size=1e-4,
                        eta=1.2, lam=3.0, seed=9)  # h lmax(H) about 0.2
    assert_rounds_agree(eng, min_move=1e-3)


@needs_mlp
def test_mlp_round_matches_numpy_benchmark_configuration():
    # 861 parameters, n = 100: the smaller configuration the benchmark times
    X, r = bn.mlp_problem(n_obs=100)
    eng = bn.mlp_engine(X, r)
    assert eng.dim == 861
    assert_rounds_agree(eng, min_move=1e-2)


# --------------------------------------------------------------------------- IRLS


@pytest.mark.parametrize("ridge", [False, True])
def test_irls_numpy_is_the_kernel_iteration(ridge):
    X, y, P0, b0 = bn.irls_problem(dim=20, n_obs=1000, seed=0)
    if ridge:  # a general Gaussian prior N(theta0, inv(P0)), and eta != 1
        rng = np.random.default_rng(10)
        A = rng.standard_normal((20, 20))
        P0 = A @ A.T / 20 + np.eye(20)
        b0 = P0 @ rng.standard_normal(20)
    eta = 0.8 if ridge else 1.0
    status, it, theta, H = bn.irls_compiled(X, y, P0, b0, 1e-8, 100, eta=eta)
    s_ref, it_ref, theta_ref, H_ref = ref_logistic.irls(X, y, eta, P0, b0, np.zeros(20))
    assert status == s_ref == ref_logistic.CONVERGED
    assert it == it_ref
    assert rel_err(theta, theta_ref) < 1e-10
    assert rel_err(H, H_ref) < 1e-10


def test_irls_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    X, y, P0, b0 = bn.irls_problem()
    status, _, theta, _ = bn.irls_compiled(X, y, P0, b0)
    res = sm.GLM(y, X, family=sm.families.Binomial()).fit(tol=1e-12)
    assert status == ref_logistic.CONVERGED
    # both at the MLE to well below its standard errors (about 0.2 here)
    assert np.max(np.abs(theta - res.params)) < 1e-8
