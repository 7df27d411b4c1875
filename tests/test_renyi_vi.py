"""RenyiVI: the Monte Carlo Rényi bound's gradient kernel and the engine.

Layers (docs/architecture.md, "Conventions", Tests): the compiled gradient and Adam steps
against the plain-NumPy reference (``vits_ref.reference.renyi``) to 1e-12 and against
finite differences of the Monte Carlo bound with the draws fixed; the engine against the
closed-form linear-Gaussian posterior for alpha = 0.5, 1 and 2; the CUDA driver under the
simulator against the CPU driver; the public API (validation, reproducibility, warm start,
divergence).
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from vits_ref.kernels import renyi as krenyi
from vits_ref.kernels.linear import POTENTIAL as LINEAR
from vits_ref.kernels.logistic import POTENTIAL as LOGISTIC
from vits_ref.kernels.renyi import MIXTURE_PRIOR

import vits_ref as vr
from vits_ref.drivers import cpu
from vits_ref.models.mixture_prior import MixturePrior
from vits_ref.reference import logistic as rlogistic
from vits_ref.reference import renyi as ref

ALPHAS = (0.0, 0.5, 1.0, 2.0, 5.0)
D, M = 3, 40


def _linear_case(rng):
    X = rng.standard_normal((15, D))
    V = 0.7 * np.eye(D) + X.T @ X
    b = X.T @ rng.standard_normal(15)
    return LINEAR, (V, b), 0, ref.linear_values_grads(V, b)


def _logistic_case(rng):
    m = vr.models.Logistic(D, eta=1.3, lam=0.8)
    X = rng.standard_normal((25, D))
    m.add(X, (rng.random(25) < 0.5).astype(float))
    Xc, y = m.X.copy(), m.y.copy()

    def values_grads(thetas):
        G, _ = rlogistic.grads_hessian(Xc, y, thetas, 1.3, 0.8)
        return np.array([rlogistic.value(Xc, y, t, 1.3, 0.8) for t in thetas]), G

    return LOGISTIC, m.kernel_data(), m.kernel_scratch(M), values_grads


def _logistic_prior_case(rng, n_obs=25):
    # the general Gaussian prior N(theta0, Sigma0) instead of the ridge (DiffTS's form)
    A = rng.standard_normal((D, D))
    m = vr.models.Logistic(D, eta=1.3, prior_mean=rng.standard_normal(D),
                           prior_cov=A @ A.T + 0.5 * np.eye(D))
    if n_obs:
        m.add(rng.standard_normal((n_obs, D)), (rng.random(n_obs) < 0.5).astype(float))
    return LOGISTIC, m.kernel_data(), m.kernel_scratch(M), None


def _mixture_case(rng):
    means = rng.standard_normal((3, D)) * 2
    variances = rng.uniform(0.5, 2.0, (3, D))
    weights = np.array([0.2, 0.5, 0.3])
    m = MixturePrior(D, means, variances, weights, eta=1.7)
    m.add(rng.standard_normal((6, D)), rng.standard_normal(6))
    etaV, eta_b = m.kernel_data()[:2]
    return (MIXTURE_PRIOR, m.kernel_data(), m.kernel_scratch(M),
            ref.mixture_values_grads(etaV, eta_b, means, variances, weights))


CASES = {"linear": _linear_case, "logistic": _logistic_case, "mixture": _mixture_case}


def _params(rng, scale=0.3):
    L = np.tril(rng.standard_normal((D, D)) * scale, -1) + np.diag(rng.uniform(0.3, 0.8, D))
    return ref.params_from(0.3 * rng.standard_normal(D), L)


def _rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b))))


# --------------------------------------------------------------------------- the kernel


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_gradient_kernel_matches_numpy_reference(case, alpha):
    # the same formulas in two implementations (BLAS/loops against NumPy expressions):
    # rounding only, ~1e-15 relative; 1e-12 leaves room for the products' summation order
    rng = np.random.default_rng(11)
    pot, data, pscr, values_grads = CASES[case](rng)
    P = _params(rng)
    eps = rng.standard_normal((M, D))
    scr = cpu.renyi_scratch(D, M)
    bound, ess = cpu.renyi_grad(pot)(alpha, P, data, eps, scr, pscr)
    rb, ress, rgrad = ref.renyi_grad(alpha, P, eps, values_grads)
    assert _rel(bound, rb) < 1e-12
    assert _rel(ess, ress) < 1e-12
    assert _rel(scr[6], rgrad) < 1e-12
    assert np.all(np.triu(scr[6][1:], 1) == 0.0)  # the unused upper triangle gets no gradient
    assert 1.0 <= ess <= M + 1e-9


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("alpha", (0.5, 1.0, 2.0))
def test_adam_steps_match_numpy_reference(case, alpha):
    rng = np.random.default_rng(12)
    pot, data, pscr, values_grads = CASES[case](rng)
    P0 = _params(rng)
    S = 6
    eps = rng.standard_normal((S, M, D))
    # a warm Adam state, as after earlier updates
    m0, v0, t0 = 0.01 * rng.standard_normal(P0.shape), 0.02 * rng.random(P0.shape), 7
    m0[1:][np.triu_indices(D, 1)] = 0.0
    v0[1:][np.triu_indices(D, 1)] = 0.0
    P, m, v, t = P0.copy(), m0.copy(), v0.copy(), np.array([float(t0)])
    trace = np.empty((S, 2))
    scr = cpu.renyi_scratch(D, M)
    ok = cpu.renyi_steps(pot)(alpha, P, data, eps, 0.05, 0.9, 0.999, 1e-8, (m, v, t), scr,
                              pscr, trace)
    rP, rm, rv, rt, rtrace = ref.renyi_steps(alpha, P0, eps, 0.05, values_grads, m0, v0, t0)
    assert ok and t[0] == rt == t0 + S
    for got, want in ((P, rP), (m, rm), (v, rv), (trace, rtrace), (scr[0], ref.factor(rP))):
        assert _rel(got, want) < 1e-12


def _fd_gradient(alpha, P, eps, values_grads, h=1e-6):
    """Central differences of -bound over the lower-triangular entries of P."""
    g = np.zeros_like(P)
    entries = [(0, i) for i in range(D)] + [(1 + i, k) for i in range(D) for k in range(i + 1)]
    for r, c in entries:
        Pp, Pm = P.copy(), P.copy()
        Pp[r, c] += h
        Pm[r, c] -= h
        g[r, c] = -(ref.renyi_bound(alpha, Pp, eps, values_grads)
                    - ref.renyi_bound(alpha, Pm, eps, values_grads)) / (2 * h)
    return g


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("alpha", (0.0, 0.5, 1.0, 2.0))
def test_gradient_kernel_matches_finite_differences(case, alpha):
    # The gradient of the Monte Carlo bound with the draws eps fixed (Li & Turner eq. 14)
    # is the exact derivative of a smooth function of P: central differences with
    # h = 1e-6 err by O(h^2 f''') + O(eps_mach |f| / h) ~ 1e-9 relative here; 1e-6 is the
    # tolerance.
    rng = np.random.default_rng(13)
    pot, data, pscr, values_grads = CASES[case](rng)
    P = _params(rng)
    eps = rng.standard_normal((M, D))
    scr = cpu.renyi_scratch(D, M)
    cpu.renyi_grad(pot)(alpha, P, data, eps, scr, pscr)
    fd = _fd_gradient(alpha, P, eps, values_grads)
    assert np.max(np.abs(scr[6] - fd)) < 1e-6 * max(1.0, np.abs(fd).max())


def test_alpha_one_is_the_elbo_exactly_and_the_limit_of_alpha():
    rng = np.random.default_rng(14)
    pot, data, pscr, values_grads = _linear_case(rng)
    P = _params(rng)
    eps = rng.standard_normal((M, D))
    scr = cpu.renyi_scratch(D, M)
    bound, ess = cpu.renyi_grad(pot)(1.0, P, data, eps, scr, pscr)
    logw, _ = ref.log_weights(P, eps, values_grads)
    assert ess == M and np.all(scr[4] == 1.0 / M)  # uniform weights, not a limit
    assert abs(bound - logw.mean()) < 1e-12 * (1 + abs(bound))
    g1 = scr[6].copy()
    for a in (1.0 - 1e-7, 1.0 + 1e-7):  # continuity: the weights differ by O(|1 - a| |logw|)
        b_a, _ = cpu.renyi_grad(pot)(a, P, data, eps, scr, pscr)
        assert abs(b_a - bound) < 1e-4 * (1 + abs(bound))
        assert np.max(np.abs(scr[6] - g1)) < 1e-4 * np.abs(g1).max()


@pytest.mark.parametrize("alpha", (0.5, 1.0, 2.0))
def test_monte_carlo_bound_matches_the_closed_form_of_appendix_b2(alpha):
    """The kernel's Monte Carlo bound with many draws against ``vr.gaussian.
    linear_gaussian_renyi_bound`` (appendix B.2, derived independently and checked against
    quadrature in tests/test_divergences.py), once the constants the linear potential
    leaves out are added back: ``log p(data, theta) = -U(theta) - eta/2 sum r^2
    + n/2 log(eta / 2 pi) + d/2 log(lam eta / 2 pi)``. This checks ``log q`` and the
    ``d/2 log 2 pi`` in the log weights, which the gradient tests cannot see.

    Tolerance: 5 Monte Carlo standard errors (delta method on the mean of
    ``w^(1 - alpha)``); the estimator's O(1/M) bias is below 1e-5 here. ``q`` is the
    posterior shifted by half a standard deviation, with 0.8 times its covariance (for
    alpha = 2 the estimator's variance needs ``Sigma_q < 1.5 Sigma_post``).
    """
    rng = np.random.default_rng(17)
    n, d, eta, lam, Mbig = 12, 2, 1.5, 0.7, 200_000
    X = rng.standard_normal((n, d))
    r = X @ np.array([0.8, -0.4]) + rng.standard_normal(n) / np.sqrt(eta)
    mean_p, cov_p = vr.gaussian.linear_posterior(X, r, eta=eta, lam=lam)
    mean_q = mean_p + 0.5 * np.sqrt(np.diag(cov_p))
    cov_q = 0.8 * cov_p
    P = ref.params_from(mean_q, np.linalg.cholesky(cov_q))
    V, b = lam * np.eye(d) + X.T @ X, X.T @ r
    eps = rng.standard_normal((Mbig, d))
    bound, _ = cpu.renyi_grad(LINEAR)(alpha, P, (eta * V, eta * b), eps,
                                      cpu.renyi_scratch(d, Mbig), 0)
    const = (-0.5 * eta * r @ r + 0.5 * n * np.log(eta / (2 * np.pi))
             + 0.5 * d * np.log(lam * eta / (2 * np.pi)))
    closed = vr.gaussian.linear_gaussian_renyi_bound(r, X, np.eye(d) / (lam * eta),
                                                     np.eye(n) / eta, mean_q, cov_q, alpha)
    logw, _ = ref.log_weights(P, eps, ref.linear_values_grads(eta * V, eta * b))
    if alpha == 1.0:
        se = logw.std() / np.sqrt(Mbig)
    else:
        u = np.exp((1 - alpha) * (logw - logw.max()))
        se = u.std() / (abs(1 - alpha) * u.mean() * np.sqrt(Mbig))
    assert abs(bound + const - closed) < 5 * se + 1e-5


def test_log_sum_exp_is_stable_for_huge_log_weights():
    # log weights of order 1e4 (a potential far from q): exp would overflow without the
    # factored-out maximum
    logw = np.array([-2.0e4, -1.0e4, -1.0e4 + 1.0, -3.0e4])
    for alpha in (0.0, 0.5, 2.0):
        wts = np.empty(4)
        bound, ess = krenyi.renyi_weights(alpha, logw, wts)  # plain Python, as on CUDA
        rb, rw, ress = ref.bound_and_weights(alpha, logw)
        assert np.isfinite(bound) and abs(bound - rb) < 1e-12 * abs(rb)
        assert np.allclose(wts, rw, rtol=1e-12, atol=0) and abs(wts.sum() - 1) < 1e-15


@pytest.mark.parametrize("pot_case", ["linear", "logistic", "logistic-prior",
                                      "logistic-prior-no-data", "mixture"])
def test_specialised_values_grads_hooks_equal_the_generic_one(pot_case):
    # the linear, logistic and mixture-prior potentials have one-pass hooks; they must
    # compute what the generic value-then-gradient hook computes (bodies run as plain
    # Python here), to rounding: the logistic hook's X theta comes from one product
    # instead of one per draw, so its sums may round differently
    rng = np.random.default_rng(15)
    pot, data, pscr, _ = (_logistic_prior_case(rng) if pot_case == "logistic-prior" else
                          _logistic_prior_case(rng, 0) if pot_case == "logistic-prior-no-data"
                          else CASES[pot_case](rng))
    thetas = rng.standard_normal((7, D))
    out = []
    for hook in (krenyi.make_values_grads(pot), krenyi.generic_values_grads(pot)):
        logw, G, H = np.zeros(7), np.empty((7, D)), np.empty((D, D))
        hook(data, thetas, logw, G, H, pscr)
        out.append((logw, G))
    assert krenyi.make_values_grads(pot) is krenyi.VALUES_GRADS[pot]
    assert _rel(out[0][0], out[1][0]) < 1e-12 and _rel(out[0][1], out[1][1]) < 1e-12


def test_numpy_logistic_potential_equals_the_per_draw_reference():
    # reference.renyi's one-array logistic potential (what the benchmark's NumPy side runs)
    # against reference.logistic evaluated draw by draw
    rng = np.random.default_rng(17)
    _, data, _, per_draw = _logistic_case(rng)
    X, y, eta, lam = data[:4]
    thetas = rng.standard_normal((6, D))
    U, G = ref.logistic_values_grads(X, y, eta, lam)(thetas)
    Ur, Gr = per_draw(thetas)
    assert _rel(U, Ur) < 1e-12 and _rel(G, Gr) < 1e-12


def test_mixture_prior_potential_against_numpy_and_finite_differences():
    rng = np.random.default_rng(16)
    _, data, pscr, values_grads = _mixture_case(rng)
    m = MixturePrior(D, data[2], 1.0 / data[3], None)  # any model to reach the wrappers
    thetas = rng.standard_normal((5, D))
    G, H = np.empty((5, D)), np.empty((D, D))
    cpu.grads_hessian(MIXTURE_PRIOR)(data, thetas, True, G, H, pscr)
    U, Gr = values_grads(thetas)
    assert _rel(G, Gr) < 1e-12
    assert _rel([cpu.value(MIXTURE_PRIOR)(data, t, pscr) for t in thetas], U) < 1e-12
    h, Hfd = 1e-5, np.zeros((D, D))
    for t in thetas:  # the mean of the exact Hessians, by differences of the gradient
        for i in range(D):
            e = np.zeros(D)
            e[i] = h
            Hfd[:, i] += (values_grads((t + e)[None])[1][0]
                          - values_grads((t - e)[None])[1][0]) / (2 * h) / len(thetas)
    assert np.max(np.abs(H - Hfd)) < 1e-7 * max(1.0, np.abs(Hfd).max())
    assert m.potential is MIXTURE_PRIOR


# --------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("alpha", (0.5, 1.0, 2.0))
def test_converges_to_the_exact_linear_gaussian_posterior(small_problem, alpha):
    """KL(q || p) to the exact posterior after 2000 Adam steps at the appendix's rate 2e-2
    and 3000 at 1e-3 (M = 300 draws a step).

    The target is Gaussian, so the maximiser of L_alpha = log p(data) - D_alpha(q || p)
    over Gaussians is p itself for every alpha > 0. What is left is Monte Carlo noise:
    Adam at step lr with M-draw gradients jitters around the optimum. For alpha = 1 the
    mean's jitter per eigen-direction of the Hessian (eigenvalue a) is about
    ``lr / (2 sqrt(a M))`` in variance (Adam scales the step by the gradient noise
    ``sqrt(a / M)``), a KL of ``lr sqrt(a) / (4 sqrt(M))``: summed over this problem's
    eigenvalues (1.3 to 24) 2e-4 at lr = 1e-3, the covariance adding about as much.
    Measured over 10 seeds: mean 3.6e-4 (max 1.2e-3) for alpha = 1, 7.1e-4 (max 1.9e-3)
    for alpha = 0.5 (noisier self-normalised weights), 6.2e-5 for alpha = 2. For
    alpha != 1 the M-draw bound is also biased, by O(1/M) in the parameters, O(1/M^2) in
    the KL: negligible. Tolerance 5e-3: 14x the alpha = 1 mean, 7x the alpha = 0.5 mean;
    a q one posterior standard deviation off in one direction has KL 0.5.
    """
    p = small_problem
    eng = vr.RenyiVI(p.dim, alpha=alpha, eta=p.eta, lam=p.lam, n_steps=2000, seed=3)
    kl_prior = vr.gaussian.kl(eng.mean, eng.cov, p.mean, p.cov)
    eng.update(p.X, p.r)
    eng.step_size, eng.n_steps = 1e-3, 3000  # a smaller step to shrink the jitter
    eng.update(np.empty((0, p.dim)), np.empty(0))
    assert kl_prior > 1.0
    assert eng.kl_to_posterior() < 5e-3
    assert eng.diagnostics["total_steps"] == 5000 and eng.diagnostics["n_obs"] == p.X.shape[0]


def test_samples_follow_the_engine_gaussian(small_problem):
    p = small_problem
    eng = vr.RenyiVI(p.dim, alpha=1.0, eta=p.eta, lam=p.lam, n_steps=200, n_mc=50,
                     seed=4).update(p.X, p.r)
    n = 40000
    draws = eng.sample(n)
    assert draws.shape == (n, p.dim)
    sd = np.sqrt(np.diag(eng.cov))
    # sample mean within 5 standard errors; sample covariance within 5 of its own
    # (standard error of a covariance entry <= sqrt(2/n) sd_i sd_j)
    assert np.all(np.abs(draws.mean(axis=0) - eng.mean) < 5 * sd / np.sqrt(n))
    assert np.all(np.abs(np.cov(draws.T) - eng.cov) < 5 * np.sqrt(2 / n) * np.outer(sd, sd))
    assert np.allclose(eng.scale_tril @ eng.scale_tril.T, eng.cov)


def test_reproducible_and_fresh(small_problem):
    p = small_problem

    def run(seed):
        eng = vr.RenyiVI(p.dim, alpha=0.5, n_mc=30, n_steps=5, seed=seed)
        eng.update(p.X[:5], p.r[:5]).update(p.X[5:], p.r[5:])
        return eng

    a, b, c = run(7), run(7), run(8)
    assert np.array_equal(a.params, b.params) and np.array_equal(a.sample(3), b.sample(3))
    assert not np.array_equal(a.params, c.params)
    f = a.fresh(7)
    assert f.n_obs == 0 and f.diagnostics["total_steps"] == 0
    assert np.array_equal(f.update(p.X[:5], p.r[:5]).update(p.X[5:], p.r[5:]).params,
                          b.params)
    # sampling uses its own stream: extra draws do not change the optimisation
    d = vr.RenyiVI(p.dim, alpha=0.5, n_mc=30, n_steps=5, seed=7)
    d.sample(10)
    d.update(p.X[:5], p.r[:5]).update(p.X[5:], p.r[5:])
    assert np.array_equal(d.params, a.params)


def test_adam_state_persists_across_updates(small_problem):
    # two updates of S steps equal one of 2S steps on the same data only if Adam's moments
    # and step count carry over (the draws come from one stream in the same order)
    p = small_problem
    one = vr.RenyiVI(p.dim, alpha=2.0, n_mc=20, n_steps=8, seed=5).update(p.X, p.r)
    two = vr.RenyiVI(p.dim, alpha=2.0, n_mc=20, n_steps=4, seed=5).update(p.X, p.r)
    two.update(np.empty((0, p.dim)), np.empty(0))
    assert np.allclose(one.params, two.params, rtol=0, atol=1e-14)
    m1, v1, t1 = one.adam_state
    m2, v2, t2 = two.adam_state
    assert t1 == t2 == 8 and np.allclose(m1, m2, atol=1e-14) and np.allclose(v1, v2, atol=1e-14)


def test_divergence_names_engine_round_step_and_leaves_the_engine_unchanged(small_problem):
    p = small_problem
    eng = vr.RenyiVI(p.dim, alpha=0.5, n_mc=50, n_steps=10, seed=6).update(p.X[:4], p.r[:4])
    before = (eng.params, eng.adam_state, eng.model.V.copy(), eng.model.b.copy(),
              eng.n_obs, eng._rng_update.bit_generator.state, dict(eng.diagnostics))
    eng.step_size = 1e3  # exp(log diag L) overflows after one Adam step of ~1000
    with pytest.raises(vr.DivergenceError) as info:
        eng.update(p.X[4:], p.r[4:])
    err = info.value
    assert err.engine == "Renyi-VI (alpha=0.5)" and err.round == p.X.shape[0]
    assert err.step_size == 1e3 and "Adam's step_size" in str(err)
    after = (eng.params, eng.adam_state, eng.model.V, eng.model.b, eng.n_obs,
             eng._rng_update.bit_generator.state, eng.diagnostics)
    assert np.array_equal(before[0], after[0])
    assert all(np.array_equal(x, y) for x, y in zip(before[1][:2], after[1][:2], strict=True))
    assert before[1][2] == after[1][2]
    assert np.array_equal(before[2], after[2]) and np.array_equal(before[3], after[3])
    assert before[4] == after[4] and before[5] == after[5] and before[6] == after[6]
    # and it carries on as if the failed update never happened
    eng.step_size = 2e-2
    ref_eng = vr.RenyiVI(p.dim, alpha=0.5, n_mc=50, n_steps=10, seed=6).update(p.X[:4],
                                                                               p.r[:4])
    assert np.array_equal(eng.update(p.X[4:], p.r[4:]).params,
                          ref_eng.update(p.X[4:], p.r[4:]).params)


def test_logistic_and_model_objects():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((80, 2))
    y = (rng.random(80) < 1 / (1 + np.exp(-X @ [1.5, -1.0]))).astype(float)
    eng = vr.RenyiVI(2, "logistic", alpha=1.0, n_mc=100, n_steps=600, seed=1).update(X, y)
    lap = vr.Laplace(2, model="logistic").update(X, y)
    # Gaussian VI and Laplace differ at O(1/n) on a logistic posterior: close, not equal
    assert np.all(np.abs(eng.mean - lap.mean) < 0.3 * np.sqrt(np.diag(lap.cov)) + 0.05)
    with pytest.raises(ValueError, match="closed-form posterior"):
        eng.kl_to_posterior()
    arm = MixturePrior(1, [[13.0], [20.0]], [[1.5], [1.5]])
    e = vr.RenyiVI(1, arm, init_mean=[25.0], init_cov=[[1e-8]], seed=0)
    assert np.allclose(e.mean, [25.0]) and np.allclose(e.cov, [[1e-8]])
    start = vr.RenyiVI(1, arm, seed=0)  # default start: the prior's moments
    assert np.allclose(start.mean, arm.prior_mean) and np.allclose(start.cov, arm.prior_cov)


def test_pickles_for_worker_processes(small_problem):
    p = small_problem
    eng = vr.RenyiVI(p.dim, n_mc=20, n_steps=3, seed=2).update(p.X, p.r)
    copy = pickle.loads(pickle.dumps(eng))
    z = np.empty((0, p.dim)), np.empty(0)
    assert np.array_equal(copy.update(*z).params, eng.update(*z).params)


def test_validation():
    with pytest.raises(TypeError):
        vr.RenyiVI(2, "linear", 0.5)  # everything after model is keyword-only
    with pytest.raises(ValueError, match="alpha"):
        vr.RenyiVI(2, alpha=-0.5)
    with pytest.raises(ValueError, match="n_mc"):
        vr.RenyiVI(2, n_mc=0)
    with pytest.raises(ValueError, match="step_size"):
        vr.RenyiVI(2, step_size=0.0)
    with pytest.raises(ValueError, match="betas"):
        vr.RenyiVI(2, betas=(0.9, 1.0))
    with pytest.raises(TypeError, match="betas"):
        vr.RenyiVI(2, betas=0.9)
    with pytest.raises(ValueError, match="init_mean needs init_cov"):
        vr.RenyiVI(2, init_mean=[0.0, 0.0])
    with pytest.raises(ValueError, match="init_cov"):
        vr.RenyiVI(2, init_cov=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="features"):
        vr.RenyiVI(2).update(np.ones((1, 3)), np.ones(1))
    eng = vr.RenyiVI(2, alpha=2, seed=0)
    assert repr(eng).startswith("RenyiVI(") and "alpha=2.0" in repr(eng)
    assert eng.fresh(1).alpha == 2.0


# --------------------------------------------------------------------------- CUDA


CUDA_CHECK = r'''
import warnings
warnings.simplefilter("ignore")
import numpy as np
import vits_ref as vr
from vits_ref.drivers import cpu, cuda
from vits_ref.kernels.linear import POTENTIAL as LINEAR
from vits_ref.kernels.renyi import MIXTURE_PRIOR
from vits_ref.models.mixture_prior import MixturePrior

def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b))))

rng = np.random.default_rng(3)
R, S, M, d = 2, 3, 5, 2
X = rng.standard_normal((8, d))
V, b = np.eye(d) + X.T @ X, X.T @ rng.standard_normal(8)
mix = MixturePrior(d, [[1.0, 0.0], [-1.0, 2.0]], [[1.0, 0.5], [2.0, 1.0]], [0.3, 0.7],
                   eta=1.3)
mix.add(X, rng.standard_normal(8))
logit = vr.models.Logistic(d, eta=1.2, lam=0.8)
logit.add(X, (rng.random(8) < 0.5).astype(float))
per_thread = lambda scr: tuple(np.stack([a] * R) for a in scr)
cases = ((LINEAR, (V, b), 0), (MIXTURE_PRIOR, mix.kernel_data(), per_thread(mix.kernel_scratch())),
         (vr.models.Logistic.potential, logit.kernel_data(), per_thread(logit.kernel_scratch(M))))
worst = 0.0
for pot, data, pscr in cases:
    for alpha in (0.5, 1.0, 2.0):
        P = np.zeros((R, d + 1, d))
        P[:, 0] = 0.1 * rng.standard_normal((R, d))
        P[:, 2, 0], P[:, 1, 0] = 0.2, -0.3
        eps = rng.standard_normal((R, S, M, d))
        m, v, t = np.zeros_like(P), np.zeros_like(P), np.zeros((R, 1))
        gP, gm, gv, gt, gtr, gok = cuda.renyi_steps(pot, alpha, P, data, eps, 0.05, 0.9,
                                                    0.999, 1e-8, m, v, t, pscr)
        for r in range(R):
            Pc, mc, vc, tc = P[r].copy(), m[r].copy(), v[r].copy(), t[r].copy()
            tr = np.empty((S, 2))
            ps = pscr if not isinstance(pscr, tuple) else tuple(a[r].copy() for a in pscr)
            ok = cpu.renyi_steps(pot)(alpha, Pc, data, eps[r], 0.05, 0.9, 0.999, 1e-8,
                                      (mc, vc, tc), cpu.renyi_scratch(d, M), ps, tr)
            assert ok and gok[r] and gt[r, 0] == tc[0] == S
            worst = max(worst, rel(gP[r], Pc), rel(gm[r], mc), rel(gv[r], vc),
                        rel(gtr[r], tr))
print("MAXDIFF", worst)
'''


def test_cuda_driver_under_simulator():
    """The CUDA driver (one state per thread) runs the same body as the CPU driver.

    The simulator must be enabled before Numba is imported: a subprocess with
    ``NUMBA_ENABLE_CUDASIM=1``. The CPU products are BLAS, the CUDA ones the loops of
    kernels/linalg.py (another summation order): agreement to rounding, 1e-10 allowed.
    """
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", CUDA_CHECK], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert float(res.stdout.split("MAXDIFF")[1]) < 1e-10


def test_every_engine_runs_on_the_mixture_prior_model():
    # a model is a potential: the other engines run on the bandit's arm model unchanged
    import warnings

    arm = MixturePrior(1, [[13.0], [20.0]], [[1.5], [1.5]])
    X, r = np.ones((5, 1)), np.array([10.0, 11.0, 9.0, 10.0, 12.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no Numba IR warnings from the inlined bodies
        for cls in (vr.VITS, vr.Langevin, vr.Laplace, vr.RenyiVI):
            draws = cls(1, model=arm, seed=0).update(X, r).sample(3)
            assert draws.shape == (3, 1) and np.all(np.isfinite(draws)), cls.__name__


def test_learning_rate_is_a_deprecated_alias_of_step_size(small_problem):
    """``learning_rate`` (keyword and attribute), RenyiVI's former name of ``step_size``,
    still works for one release, with a DeprecationWarning naming ``step_size``."""
    p = small_problem
    new = vr.RenyiVI(p.dim, n_mc=20, n_steps=3, step_size=5e-3, seed=2)
    with pytest.warns(DeprecationWarning, match="learning_rate is deprecated.*use step_size"):
        old = vr.RenyiVI(p.dim, n_mc=20, n_steps=3, learning_rate=5e-3, seed=2)
    assert old.step_size == 5e-3 and "learning_rate" not in repr(old)
    assert np.array_equal(old.update(p.X, p.r).params, new.update(p.X, p.r).params)
    with pytest.warns(DeprecationWarning, match="use step_size"):
        assert old.learning_rate == 5e-3
    with pytest.warns(DeprecationWarning, match="use step_size"):
        old.learning_rate = 1e-3
    assert old.step_size == 1e-3 and old.fresh(0).step_size == 1e-3
    with pytest.raises(TypeError, match="give step_size only"):
        vr.RenyiVI(p.dim, step_size=1e-3, learning_rate=1e-3)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="step_size"):
        vr.RenyiVI(p.dim, learning_rate=0.0)


def test_a_collapsed_q_is_named_by_the_kl_diagnostic():
    """An engine whose own q has a singular covariance: KL(q || p) is +inf for it, so the
    diagnostic raises, naming the engine and q's eigenvalues (where it blamed the data's
    V before), directly and from the runner's loop."""
    from vits_ref.errors import DegenerateCovarianceError

    class Collapsed(vr.RenyiVI):
        # a factor whose diagonal has underflowed to 0 (no use to the KL) and its product
        def _q_scale_tril(self):
            return np.array([[1.0, 0.0], [1.0, 0.0]])

        @property
        def cov(self):
            return np.array([[1.0, 1.0], [1.0, 1.0]])  # rank one: eigenvalues 0 and 2

    eng = Collapsed(2, seed=0).update(np.eye(2), np.ones(2))
    with pytest.raises(DegenerateCovarianceError, match=r"Renyi.*q has a covariance.*"
                                                        r"eigenvalues from 0 to 2\), where"):
        eng.kl_to_posterior()
    env = vr.envs.pool(dim=2, n_arms=3, seed=0)
    with pytest.raises(DegenerateCovarianceError,
                       match=r"KL diagnostic at round 2 of run 0 .*q has a covariance"):
        vr.simulate(vr.ThompsonSampling(Collapsed(2)), env, 3, seed=0, kl_rounds=[2])


def test_a_shrunken_q_gets_its_finite_kl_from_its_own_factor():
    """A q shrunk to a standard deviation of 4e-18 in one direction (log L_22 = -40, what
    Adam's steps reach on the linear pool): L L^T rounds to a singular matrix, whose
    Cholesky fails, but KL(q || p) is finite. The engine's KL from its factor equals the
    closed form written with slogdet and a dense solve, and q's log-determinant taken from
    P's log-diagonal exactly."""
    rng = np.random.default_rng(21)
    X = rng.standard_normal((30, 3))
    eng = vr.RenyiVI(3, seed=0).update(X, X @ [1.0, -0.5, 0.2] + rng.standard_normal(30))
    eng._P[3, 2] = -40.0
    krenyi.factor_from_params(eng._P, eng._L)  # L from P, as the steps leave it
    mean_p, cov_p = eng.model.posterior()
    with pytest.raises(ValueError, match="positive definite"):
        vr.gaussian.kl(eng.mean, eng.cov, mean_p, cov_p)  # the covariance route fails
    L, dm = eng.scale_tril, eng.mean - mean_p
    closed = 0.5 * (np.trace(np.linalg.solve(cov_p, L @ L.T)) + dm @ np.linalg.solve(cov_p, dm)
                    - 3 + np.linalg.slogdet(cov_p)[1] - 2 * np.trace(eng._P[1:]))
    assert closed > 40  # finite and large: the -40 alone contributes 40 nats
    assert abs(eng.kl_to_posterior() - closed) < 1e-10 * closed
    # an unshrunk q: the factor's route and the covariance's agree to rounding
    fresh = vr.RenyiVI(3, seed=0).update(X, X[:, 0])
    mp, cp = fresh.model.posterior()
    assert abs(fresh.kl_to_posterior() - vr.gaussian.kl(fresh.mean, fresh.cov, mp, cp)) < 1e-12
