"""VITS (VITS-I, VITS-II, Hessian-free): convergence, fixed points, kernels, schedules.

References: ``vits_ref.gaussian.linear_posterior`` / ``kl`` (closed forms, tested in
test_gaussian.py) and ``vits_ref.reference.vits_step`` (plain NumPy, docs/algorithms.md
section 2). Tolerances are justified where they are used.
"""

import math

import numba
import numpy as np
import pytest
from vits_ref.kernels import vits as kv
from vits_ref.kernels.linear import POTENTIAL as LINEAR
from vits_ref.kernels.linear import linear_draws

import vits_ref as vr
from vits_ref import reference
from vits_ref._seeding import engine_streams
from vits_ref.drivers import cpu
from vits_ref.gaussian import kl
from vits_ref.inference.schedules import step_size, theoretical_eta, theoretical_step

VARIANT_CODES = {"I": kv.VARIANT_I, "II": kv.VARIANT_II, "hessian_free": kv.VARIANT_HF}
_LINEAR_STEPS = kv.make_vits_steps(LINEAR)  # the step body on the linear potential


def linear_steps_jit(variant, symmetrize, mu, B, C, etaV, eta_b, eps, h_mu, h):
    """The compiled VITS steps on the linear potential ``(eta V, eta b)``."""
    return cpu.vits_steps(LINEAR)(variant, symmetrize, mu, B, C, (etaV, eta_b), eps, h_mu,
                                  h, cpu.vits_scratch(mu.shape[0], eps.shape[1]), 0)
NO_DATA = (np.empty((0, 5)), np.empty(0))


def rel_err(got, want):
    want = np.asarray(want)
    return np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want))


# ---------------------------------------------------------------------------------------
# convergence to the exact posterior of an ill-conditioned linear model
# ---------------------------------------------------------------------------------------

def run_phases(prob, variant, phases, n_mc, seed, symmetrize=False, chunk=1000):
    """Engine API: ``update(X, r)`` then extra updates with no data, in constant-step phases.

    ``phases`` is a list of ``(h * lmax(eta V), n_steps)``; between phases the engine's
    public ``step_size``/``cov_step_size`` attributes are lowered (a step-size schedule
    written by hand). Updates with no data run ``n_steps`` more inner steps on the same
    posterior; ``chunk`` steps per update keeps the pre-drawn noise at 8 MB.
    """
    lmax = prob.eigs[-1]
    eng = vr.VITS(prob.dim, variant=variant, eta=prob.eta, lam=prob.lam,
                  step_size=phases[0][0] / lmax, schedule="constant", n_steps=chunk,
                  n_mc=n_mc, symmetrize=symmetrize, seed=seed)
    first = True
    for frac, n_steps in phases:
        assert frac <= 0.5 and n_steps % chunk == 0
        eng.step_size = eng.cov_step_size = frac / lmax
        for _ in range(n_steps // chunk):
            eng.update(*((prob.X, prob.r) if first else NO_DATA))
            first = False
    assert eng.n_obs == prob.X.shape[0]
    assert eng.diagnostics["step_size"] == phases[-1][0] / lmax
    return eng


def expected_mean_noise_kl(eigs, phases, n_mc):
    """E[1/2 (mu - m)^T (eta V) (mu - m)] from the Monte Carlo noise of the mean update.

    Once ``B B^T = inv(A)``, ``A = eta V``, the mean follows (docs/algorithms.md section 2, one
    gradient averaged over ``n_mc`` draws) ``e' = (I - hA) e - h A B eps_bar``: noise
    covariance ``h^2 A / n_mc``, diagonal in A's eigenbasis. Per eigenvalue ``a`` the
    variance obeys ``s' = (1 - ha)^2 s + h^2 a / n_mc``: stationary ``h / (n_mc (2 - ha))``,
    reached geometrically with factor ``(1 - ha)^(2N)`` over a phase of N steps.
    """
    s = np.zeros_like(eigs)
    for frac, n_steps in phases:
        h = frac / eigs[-1]
        q2n = (1.0 - h * eigs) ** (2 * n_steps)
        s = q2n * s + (1.0 - q2n) * h / (n_mc * (2.0 - h * eigs))
    return float(np.sum(0.5 * eigs * s))


@pytest.mark.parametrize("variant", ["I", "II"])
def test_vits_converges_to_exact_posterior(ill_conditioned, variant):
    prob = ill_conditioned
    # h lmax(eta V) = 0.5 for 4000 steps: the slowest direction contracts by
    # (1 - 0.5/cond)^4000 ~ e^-18 (cond ~ 113), so the initial error (prior draw, O(1)) is
    # gone; then h/10 for 10000 steps to shrink the Monte Carlo noise of the mean (the
    # slowest direction relaxes by e^-(2 * 0.05/113 * 10000) ~ e^-9 to the new level).
    phases = [(0.5, 4000), (0.05, 10000)]
    eng = run_phases(prob, variant, phases, n_mc=200, seed=11)
    total = kl(eng.mean, eng.cov, prob.mean, prob.cov)
    cov_part = kl(prob.mean, eng.cov, prob.mean, prob.cov)
    # For the linear model A = eta V is exact, so the square-root recursion is
    # deterministic and converges geometrically: B B^T = inv(eta V) to rounding.
    assert cov_part < 1e-10
    assert rel_err(eng.cov, prob.cov) < 1e-8
    # The mean carries the noise of one averaged draw per step: KL is a weighted sum of
    # independent chi2_1 variables with expectation E (computed exactly above, ~1e-4).
    # P(w chi2_1 > 20 w) = 8e-6, so 20 E fails a correct implementation with probability
    # < 1e-5, while a covariance off by 10% (KL ~ 0.01) or a mean off by 1% of its
    # posterior standard deviation in every direction is caught (E << 1e-2).
    expected = expected_mean_noise_kl(prob.eigs, phases, n_mc=200)
    assert expected < 2e-4
    assert total < 20 * expected
    # the engine's own diagnostic agrees with the independent closed form
    assert eng.kl_to_posterior() == pytest.approx(total, rel=1e-8, abs=1e-12)


def test_vits_hessian_free_converges_to_exact_posterior(ill_conditioned):
    prob = ill_conditioned
    # The Hessian-free estimator is noisy, and from the prior (B = I/sqrt(lam eta), while
    # the posterior's smallest variance is 1/lmax ~ 5e-4) C grows faster than B shrinks:
    # with n_mc = 200 the chain diverged within ~50 steps at h lmax = 0.2 or 0.5 for most
    # seeds (the noise-free recursion does not). A gentle start (h lmax = 0.02, 2000 steps)
    # avoids that transient; then h lmax = 0.2 (4000 steps, slowest direction e^-7) and
    # 0.02 (10000 steps) for the noise.
    phases = [(0.02, 2000), (0.2, 4000), (0.02, 10000)]
    for symmetrize in (False, True):
        eng = run_phases(prob, "hessian_free", phases, n_mc=200, seed=3,
                         symmetrize=symmetrize)
        total = kl(eng.mean, eng.cov, prob.mean, prob.cov)
        # Here B is noisy too: the estimate of A has relative error ~ sqrt(d / n_mc) per
        # step, and B B^T fluctuates around inv(eta V) with KL ~ |relative error|_F^2 / 4.
        # Over 10 seeds (both settings of symmetrize) KL was 1.7e-4 .. 4.6e-4; 2e-3 is 4x
        # the largest, and still catches a covariance off by 10% (KL ~ 0.01).
        assert total < 2e-3
        # C tracks inv(B) up to the same noise: |B C - I| ~ 4e-4 over those seeds
        assert np.abs(eng.B @ eng.C - np.eye(5)).max() < 5e-3


def test_vits_ii_tracks_inverse_of_b(ill_conditioned):
    prob = ill_conditioned
    eng = run_phases(prob, "II", [(0.5, 6000)], n_mc=1, seed=2)
    # deterministic square-root recursion, converged (contraction e^-26): rounding only
    assert np.abs(eng.B @ eng.C - np.eye(5)).max() < 1e-8
    assert rel_err(eng.precision, prob.etaV) < 1e-8
    assert rel_err(eng.C.T @ eng.C, np.linalg.inv(eng.cov)) < 1e-8


# ---------------------------------------------------------------------------------------
# the fixed point of docs/algorithms.md section 2
# ---------------------------------------------------------------------------------------

@numba.njit(cache=False)
def _j_vits_apply(variant, mu, B, C, g, A, AB, CtC, h_mu, h, W2, work2d):
    return kv.vits_apply(variant, mu, B, C, g, A, AB, CtC, h_mu, h, W2, work2d)


def apply_step(jit, variant, mu, B, C, A, h):
    """One deterministic step with a zero gradient; returns (ok, mu, B, C) (copies)."""
    d = len(mu)
    mu, B, C = mu.copy(), B.copy(), C.copy()
    fn = _j_vits_apply if jit else kv.vits_apply
    ok = fn(VARIANT_CODES[variant], mu, B, C, np.zeros(d), A, A @ B, C.T @ C, h, h,
            np.empty((d, d)), np.empty((d, 2 * d)))
    return ok, mu, B, C


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
def test_fixed_point_vits_i(ill_conditioned, orthogonal, jit):
    prob = ill_conditioned
    A = prob.etaV
    h = 0.5 / prob.eigs[-1]
    L = np.linalg.cholesky(np.linalg.inv(A))
    Q = orthogonal(np.random.default_rng(5), 5)
    for B in (L, L @ Q):  # any square root of inv(eta V) is a fixed point of VITS-I
        ok, mu, B1, _ = apply_step(jit, "I", prob.mean, B, np.eye(5), A, h)
        assert ok
        # B + h (inv(B)^T - A B): the bracket vanishes up to the rounding of an inverse
        # with cond ~ 10 (~1e-15 relative), times h |A B| ~ 0.5
        assert rel_err(B1, B) < 1e-12
        assert np.array_equal(mu, prob.mean)
    # power: a square root 5% too large is moved by ~h * 0.1 |A B| ~ 5%
    _, _, B1, _ = apply_step(jit, "I", prob.mean, 1.05 * L, np.eye(5), A, h)
    assert rel_err(B1, 1.05 * L) > 1e-3


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
def test_fixed_point_vits_ii(ill_conditioned, orthogonal, jit):
    prob = ill_conditioned
    A = prob.etaV
    h = 0.5 / prob.eigs[-1]
    L = np.linalg.cholesky(np.linalg.inv(A))
    Q = orthogonal(np.random.default_rng(6), 5)
    for B in (L, L @ Q):
        C = np.linalg.inv(B)
        ok, mu, B1, C1 = apply_step(jit, "II", prob.mean, B, C, A, h)
        assert ok
        # C^T C = inv(B B^T) = A and C^T = A B up to the rounding of inv (cond ~ 10)
        assert rel_err(B1, B) < 1e-12
        assert rel_err(C1, C) < 1e-12
        assert np.array_equal(mu, prob.mean)
    # power: C = inv(B) perturbed by 5% is not a fixed point of the C recursion
    C = 1.05 * np.linalg.inv(L)
    _, _, B1, C1 = apply_step(jit, "II", prob.mean, L, C, A, h)
    assert rel_err(C1, C) > 1e-3 and rel_err(B1, L) > 1e-3


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
def test_vits_i_singular_b_reported(ill_conditioned, jit):
    # a singular B makes the step return False (the callers raise DivergenceError), on the
    # Python body (the CUDA path) and compiled alike; B grown along one direction (what a
    # too-large step produces) is singular to machine precision
    prob = ill_conditioned
    for B in (np.zeros((5, 5)), np.outer(np.arange(1.0, 6.0), np.ones(5)) * 1e45):
        ok, *_ = apply_step(jit, "I", prob.mean, B, np.eye(5), prob.etaV, 1e-3)
        assert not ok


# ---------------------------------------------------------------------------------------
# one kernel step against the NumPy reference
# ---------------------------------------------------------------------------------------

def _python_linear_steps(variant, symmetrize, mu, B, C, etaV, eta_b, eps, h_mu, h):
    """The pure-Python body (what the CUDA simulator runs), with its scratch buffers."""
    S, M, d = eps.shape
    scr = (np.full((6, d, d), np.nan), np.full((d, 2 * d), np.nan), np.full((M, d), np.nan),
           np.full((M, d), np.nan), np.full((M, d), np.nan), np.full((2, d), np.nan))
    return _LINEAR_STEPS(variant, symmetrize, mu, B, C, (etaV, eta_b), eps, h_mu, h, scr, 0)


@pytest.fixture
def step_state(rng, spd):
    d = 4
    B = np.linalg.cholesky(spd(rng, d, cond=5.0)) @ (np.eye(d) + 0.1 * rng.standard_normal((d, d)))
    # C not exactly inv(B): exercises the C recursion away from its fixed point
    C = np.linalg.inv(B) + 0.05 * rng.standard_normal((d, d))
    return {"mu": rng.standard_normal(d), "B": B, "C": C,
            "etaV": spd(rng, d, cond=20.0) * 2.0, "eta_b": rng.standard_normal(d),
            "eps": rng.standard_normal((3, 3, d))}  # S = 3 steps of M = 3 draws


@pytest.mark.parametrize("n_steps", [1, 3])
@pytest.mark.parametrize("symmetrize", [False, True])
@pytest.mark.parametrize("variant", ["I", "II", "hessian_free"])
@pytest.mark.parametrize("path", ["python", "jit"])
def test_kernel_steps_match_reference(step_state, variant, symmetrize, path, n_steps):
    st = {**step_state, "eps": step_state["eps"][:n_steps]}
    code = VARIANT_CODES[variant]
    h_mu, h = 0.03, 0.02  # different, so a swapped step size is caught
    mu, B, C = st["mu"].copy(), st["B"].copy(), st["C"].copy()
    run = linear_steps_jit if path == "jit" else _python_linear_steps
    ok = run(code, symmetrize, mu, B, C, st["etaV"], st["eta_b"], st["eps"], h_mu, h)
    assert ok
    rm, rB, rC = st["mu"], st["B"], st["C"]
    for s in range(st["eps"].shape[0]):
        rm, rB, rC = reference.vits_step(code, rm, rB, rC, st["etaV"], st["eta_b"],
                                         st["eps"][s], h_mu, h, symmetrize)
        if s == 0:
            # after one step the reference must differ from the start (non-trivial test)
            assert rel_err(rB, st["B"]) > 1e-3
    # one or three steps of O(d^3) float64 arithmetic on cond <= 20 matrices: ~1e-15;
    # the kernel uses a different but equivalent order (A B reused for the gradient)
    assert rel_err(mu, rm) < 1e-12
    assert rel_err(B, rB) < 1e-12
    if variant != "I":
        assert rel_err(C, rC) < 1e-12
    else:
        assert np.array_equal(C, st["C"])  # VITS-I never touches C


def test_symmetrize_only_changes_hessian_free(step_state):
    st = step_state
    out = {}
    for variant in ("II", "hessian_free"):
        for sym in (False, True):
            mu, B, C = st["mu"].copy(), st["B"].copy(), st["C"].copy()
            linear_steps_jit(VARIANT_CODES[variant], sym, mu, B, C, st["etaV"],
                                st["eta_b"], st["eps"], 0.03, 0.02)
            out[variant, sym] = B
    assert np.array_equal(out["II", False], out["II", True])
    assert rel_err(out["hessian_free", False], out["hessian_free", True]) > 1e-6


# ---------------------------------------------------------------------------------------
# the Hessian-free estimator
# ---------------------------------------------------------------------------------------

@numba.njit(cache=False)
def _j_hf_matrix(mu, B, C, etaV, eta_b, eps, symmetrize):
    M, d = eps.shape
    Z = np.empty((M, d))
    G = np.empty((M, d))
    g = np.empty(d)
    CtC = np.empty((d, d))
    D = np.empty((d, d))
    A = np.empty((d, d))
    linear_draws(mu, B, etaV, eta_b, eps, Z, G, g)
    kv.hessian_free_matrix(C, Z, G, CtC, D, A, symmetrize)
    return A, g, CtC


def _hf_python(mu, B, C, etaV, eta_b, eps, symmetrize):
    M, d = eps.shape
    Z, G, g = np.empty((M, d)), np.empty((M, d)), np.empty(d)
    CtC, D, A = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    linear_draws(mu, B, etaV, eta_b, eps, Z, G, g)
    kv.hessian_free_matrix(C, Z, G, CtC, D, A, symmetrize)
    return A, g, CtC


def test_hessian_free_estimator_is_unbiased(rng, spd, orthogonal):
    # E[A] = C^T C E[(theta - mu) grad U(theta)^T] = C^T C (B B^T) (eta V) = eta V when
    # C^T C = inv(B B^T). Here C = Q inv(B) (Q orthogonal: C is not inv(B), only C^T C is
    # right) and mu is far from the posterior mean (that term has mean zero).
    d, N = 3, 200_000
    B = np.linalg.cholesky(spd(rng, d, cond=4.0)) @ orthogonal(rng, d)
    C = orthogonal(rng, d) @ np.linalg.inv(B)
    etaV = spd(rng, d, cond=10.0) * 3.0
    eta_b = rng.standard_normal(d)
    mu = 2.0 * rng.standard_normal(d)
    eps = rng.standard_normal((N, d))
    A, g, CtC = _j_hf_matrix(mu, B, C, etaV, eta_b, eps, False)
    # per-draw terms, for the standard errors
    Z = eps @ B.T
    G = (mu + Z) @ etaV - eta_b
    terms = np.einsum("ij,nj,nk->nik", C.T @ C, Z, G)
    assert rel_err(A, terms.mean(axis=0)) < 1e-10  # the kernel computes this average
    se = terms.std(axis=0, ddof=1) / np.sqrt(N)
    # 5 standard errors per entry: false-alarm probability 9 * 5.7e-7 ~ 5e-6
    assert np.all(np.abs(A - etaV) < 5 * se)
    # power: the errors we can resolve are ~1% of eta V
    assert np.all(5 * se < 0.05 * np.abs(etaV).max())
    # and with the wrong C (C^T C != inv(B B^T)) the expectation is C^T C B B^T eta V, which
    # the same test tells apart from eta V
    A_bad, _, _ = _j_hf_matrix(mu, B, np.eye(d), etaV, eta_b, eps, False)
    terms_bad = np.einsum("nj,nk->njk", Z, G)
    se_bad = terms_bad.std(axis=0, ddof=1) / np.sqrt(N)
    assert np.all(np.abs(A_bad - B @ B.T @ etaV) < 5 * se_bad)
    assert np.abs(A_bad - etaV).max() > 20 * se_bad.max()
    # the mean gradient is the average of the per-draw gradients
    assert rel_err(g, G.mean(axis=0)) < 1e-10


@pytest.mark.parametrize("path", ["python", "jit"])
def test_hessian_free_symmetrize(rng, spd, path):
    d, M = 4, 7
    B = np.linalg.cholesky(spd(rng, d, cond=4.0))
    C = np.linalg.inv(B) + 0.1 * rng.standard_normal((d, d))
    etaV = spd(rng, d, cond=10.0)
    args = (rng.standard_normal(d), B, C, etaV, rng.standard_normal(d),
            rng.standard_normal((M, d)))
    fn = _j_hf_matrix if path == "jit" else _hf_python
    A0, _, CtC = fn(*args, False)
    A1, _, _ = fn(*args, True)
    assert np.abs(A0 - A0.T).max() > 1e-3  # the raw estimator is not symmetric
    assert np.array_equal(A1, A1.T)
    assert np.allclose(A1, 0.5 * (A0 + A0.T), rtol=1e-14, atol=1e-14)
    assert rel_err(CtC, C.T @ C) < 1e-13


# ---------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("h0,eta,t", [(0.01, 1.0, 1), (0.3, 2.0, 7), (1e-3, 500.0, 1000)])
def test_decayed_and_constant_step(h0, eta, t):
    assert step_size("decayed", h0, eta, t) == pytest.approx(h0 / (eta * t), rel=1e-15)
    assert step_size("constant", h0, eta, t) == h0


def test_engine_uses_decayed_step(ill_conditioned):
    prob = ill_conditioned
    eng = vr.VITS(5, eta=prob.eta, lam=prob.lam, step_size=0.01, schedule="decayed",
                  n_steps=3, seed=0)
    for t in range(1, 4):
        eng.update(prob.X[t - 1:t], prob.r[t - 1:t])
        assert eng.diagnostics["step_size"] == pytest.approx(0.01 / (prob.eta * t), rel=1e-15)
        assert eng.diagnostics["n_steps"] == 3


def test_theoretical_step_by_hand(orthogonal):
    # V with eigenvalues 1, 2, 4 in a rotated basis, eta = 0.5, T = 100, R = 1.5, d = 3:
    #   eq. (22): h = lmin / (2 eta (lmin^2 + 2 lmax^2)) = 1 / (2 * 0.5 * (1 + 32)) = 1/33
    #   eq. (23): kappa = 4,
    #     K = 1 + 2 (1 + 2 * 16) log(2 * 1.5 * 4 * 9 * 100^2 * log(3 * 100^3)^2)
    #       = 1 + 66 log(1_080_000 * 14.9141^2) = 1 + 66 log(2.4023e8)
    #       = 1 + 66 * 19.2971 = 1274.61 -> K = 1275
    Q = orthogonal(np.random.default_rng(0), 3)
    V = (Q * np.array([1.0, 2.0, 4.0])) @ Q.T
    h, K = theoretical_step(V, eta=0.5, horizon=100, R=1.5)
    assert h == pytest.approx(1.0 / 33.0, rel=1e-12)
    log3 = math.log(3.0 * 100 ** 3)  # 14.914...
    K_hand = 1.0 + 66.0 * math.log(1_080_000.0 * log3 ** 2)
    assert 1274.5 < K_hand < 1274.7  # the hand computation above
    assert K == 1275
    assert isinstance(K, int)
    # eq. (21)
    assert theoretical_eta(lam=1.0, R=1.0, dim=3, horizon=100) == pytest.approx(
        4.0 / (81.0 * 3.0 * log3), rel=1e-14)


def test_theoretical_schedule_requires_horizon():
    with pytest.raises(ValueError, match="horizon"):
        vr.VITS(3, schedule="theoretical")
    with pytest.raises(ValueError, match="horizon"):
        vr.VITS(3, schedule="theoretical", horizon=0)


def test_engine_uses_theoretical_schedule():
    # one observation x = 0.3 * 1: V = lam I + x x^T has eigenvalues lam and lam + 0.45,
    # kappa = 1.9, so K_t is a few hundred steps
    eta, lam = 2.0, 0.5
    X, r = 0.3 * np.ones((1, 5)), np.array([0.7])
    eng = vr.VITS(5, eta=eta, lam=lam, schedule="theoretical", horizon=50, max_steps=10_000,
                  seed=0)
    eng.update(X, r)
    V = lam * np.eye(5) + X.T @ X
    h, K = theoretical_step(V, eta, 50, 1.0)
    assert h == pytest.approx(lam / (2 * eta * (lam ** 2 + 2 * (lam + 0.45) ** 2)), rel=1e-12)
    assert 10 < K < 10_000
    assert eng.diagnostics["step_size"] == h
    assert eng.diagnostics["n_steps"] == K
    assert eng.diagnostics["capped_rounds"] == 0
    # the cap, and its count
    eng = vr.VITS(5, eta=eta, lam=lam, schedule="theoretical", horizon=50, max_steps=7,
                  seed=0)
    eng.update(X, r)
    eng.update(X, r)
    assert eng.diagnostics["n_steps"] == 7
    assert eng.diagnostics["capped_rounds"] == 2


# ---------------------------------------------------------------------------------------
# the engine: initialisation and sample(n)
# ---------------------------------------------------------------------------------------

def test_initialisation_algorithm_1():
    eta, lam, d = 2.0, 0.5, 3
    eng = vr.VITS(d, eta=eta, lam=lam, seed=4)
    s0 = math.sqrt(lam * eta)
    assert np.array_equal(eng.B, np.eye(d) / s0)
    assert np.array_equal(eng.C, np.eye(d) * s0)
    # mu ~ N(0, I/(lam eta)), drawn from the optimisation stream
    _, upd = engine_streams(4)
    assert np.allclose(eng.mean, upd.standard_normal(d) / s0, rtol=1e-15, atol=0)
    # ... statistically over seeds: 3000 seeds x 3 coordinates, the variance of
    # sqrt(lam eta) mu is 1 within 5 standard errors (sqrt(2/9000) = 0.015)
    mus = np.array([vr.VITS(d, eta=eta, lam=lam, seed=s).mean for s in range(3000)]) * s0
    assert abs(mus.mean()) < 5 / math.sqrt(mus.size)
    assert abs(mus.var() - 1.0) < 5 * math.sqrt(2.0 / mus.size)


@pytest.fixture(scope="module")
def fitted_engine(ill_conditioned):
    prob = ill_conditioned
    eng = vr.VITS(5, variant="II", eta=prob.eta, lam=prob.lam, step_size=0.2 / prob.eigs[-1],
                  schedule="constant", n_steps=50, seed=21)
    eng.update(prob.X, prob.r)
    return eng


def test_sample_moments(fitted_engine):
    eng = fitted_engine
    n = 20_000
    mean, cov = eng.mean, eng.cov
    x = eng.sample(n)
    assert x.shape == (n, 5)
    sd = np.sqrt(np.diag(cov))
    # mean: standard error sd/sqrt(n) per coordinate; 5 SE (false alarm ~3e-6 for 5)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 5 * sd / math.sqrt(n))
    # covariance: Var(S_ij) = (S_ii S_jj + S_ij^2)/n for Gaussian draws; 5 SE per entry
    emp = np.cov(x, rowvar=False)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    assert np.all(np.abs(emp - cov) < 5 * se)
    # power: on the diagonal 5 SE = 5 sqrt(2/n) = 5% of the variances
    assert np.all(5 * np.diag(se) < 0.051 * np.diag(cov))


def test_sample_reproducible(ill_conditioned):
    prob = ill_conditioned
    a, b = (vr.VITS(5, eta=prob.eta, lam=prob.lam, seed=9).update(prob.X, prob.r)
            for _ in range(2))
    assert np.array_equal(a.sample(7), b.sample(7))
    c = vr.VITS(5, eta=prob.eta, lam=prob.lam, seed=10).update(prob.X, prob.r)
    assert not np.array_equal(a.sample(7), c.sample(7))


@pytest.mark.parametrize("variant", ["I", "II", "hessian_free"])
def test_sample_does_not_change_trajectory(ill_conditioned, variant):
    prob = ill_conditioned
    kw = dict(variant=variant, eta=prob.eta, lam=prob.lam, step_size=0.001, n_steps=5,
              n_mc=3, seed=13)
    a, b = vr.VITS(5, **kw), vr.VITS(5, **kw)
    for i in range(0, 12, 3):
        a.update(prob.X[i:i + 3], prob.r[i:i + 3])
        b.update(prob.X[i:i + 3], prob.r[i:i + 3])
        b.sample(100)
    assert np.array_equal(a.mu, b.mu)
    assert np.array_equal(a.B, b.B)
    assert np.array_equal(a.C, b.C)
    assert not np.array_equal(a.mu, vr.VITS(5, **kw).mu)  # the updates did move mu


def test_empty_update_at_the_prior():
    # an empty batch passes validation (LinTS and Langevin accept it), so VITS with its
    # default decayed schedule must too (or reject it with a ValueError naming features)
    eng = vr.VITS(3, seed=0)
    try:
        eng.update(np.empty((0, 3)), np.empty(0))
    except ValueError as err:
        assert "features" in str(err)
    else:
        assert np.all(np.isfinite(eng.mu)) and eng.n_obs == 0
