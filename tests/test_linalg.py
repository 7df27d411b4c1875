"""Kernel bodies of kernels/linalg.py and the baselines (kernels/lints.py, linucb.py,
langevin.py) against NumPy/SciPy.

Every body is tested on two paths:

``python``
    the function called directly from Python: the loop versions, which is what the CUDA
    simulator (and the CUDA target) runs;
``jit``
    the body called from a tiny ``numba.njit`` function defined here: on the CPU target
    ``gemm_*`` and ``gemv`` resolve to their BLAS overloads and ``inv_transpose`` to
    LAPACK (returning False where LAPACK raises on a singular matrix); the other bodies
    are compiled as written.

Tolerances: these are exact algorithms evaluated in float64 on matrices with condition
number <= 100, so their rounding error is ~ cond * d * eps ~ 1e-13 relative; rtol 1e-12
(products, one solve) and 1e-10 (200 chained rank-one updates, each adding ~eps) leave a
margin of 10-1000x while any algebra slip shows at 1e-2 or worse.
"""

import numba
import numpy as np
import pytest
import scipy.linalg
from vits_ref.kernels import linalg as la
from vits_ref.kernels import lints as klints
from vits_ref.kernels import linucb as klinucb
from vits_ref.kernels.diagnostics import kl_to_linear_posterior
from vits_ref.kernels.langevin import make_langevin_steps
from vits_ref.kernels.linear import POTENTIAL as LINEAR

from vits_ref.gaussian import kl
from vits_ref.reference.naive import langevin_linear_naive, lints_draw_naive, linucb_scores_naive

# --------------------------------------------------------------------------- jit wrappers
# cache=False: Numba's cache is keyed on this file only and would not see an edit of the
# library's kernel bodies, so a cached wrapper could test stale code.


@numba.njit(cache=False)
def _j_gemm_nn(a, b, out):
    la.gemm_nn(a, b, out)


@numba.njit(cache=False)
def _j_gemm_tn(a, b, out):
    la.gemm_tn(a, b, out)


@numba.njit(cache=False)
def _j_gemm_nt(a, b, out):
    la.gemm_nt(a, b, out)


@numba.njit(cache=False)
def _j_gemv(a, x, out):
    la.gemv(a, x, out)


@numba.njit(cache=False)
def _j_inv_transpose(b, out, work):
    return la.inv_transpose(b, out, work)


@numba.njit(cache=False)
def _j_cholesky(a, out):
    return la.cholesky(a, out)


@numba.njit(cache=False)
def _j_chol_rank1_update(L, x, work):
    la.chol_rank1_update(L, x, work)


@numba.njit(cache=False)
def _j_solve_lower(L, b, out):
    la.solve_lower(L, b, out)


@numba.njit(cache=False)
def _j_solve_lower_t(L, b, out):
    la.solve_lower_t(L, b, out)


@numba.njit(cache=False)
def _j_log_abs_det_chol(L):
    return la.log_abs_det_chol(L)


@numba.njit(cache=False)
def _j_all_finite_vec(x):
    return la.all_finite_vec(x)


@numba.njit(cache=False)
def _j_all_finite_mat(a):
    return la.all_finite_mat(a)


_langevin_linear = make_langevin_steps(LINEAR)


def _langevin_linear_steps(theta, etaV, eta_b, eps, h, grad):
    """The generic Langevin body on the linear potential, with the old argument list."""
    _langevin_linear(theta, (etaV, eta_b), eps, h, grad, np.empty((1, 1)), 0)


@numba.njit(cache=False)
def _j_sherman_morrison(Vinv, x, u):
    klinucb.sherman_morrison(Vinv, x, u)


@numba.njit(cache=False)
def _j_lints_draw(L, b, eta, z, out):
    klints.lints_draw(L, b, eta, z, out)


@numba.njit(cache=False)
def _j_langevin_linear_steps(theta, etaV, eta_b, eps, h, grad):
    _langevin_linear(theta, (etaV, eta_b), eps, h, grad, np.empty((1, 1)), 0)


@numba.njit(cache=False)
def _j_linucb_scores(Vinv, b, alpha, X, theta, VX, out):
    klinucb.linucb_scores(Vinv, b, alpha, X, theta, VX, out)


@numba.njit(cache=False)
def _j_kl_to_linear_posterior(mu, B, V, b, eta, Lv, Ls, W, v1):
    return kl_to_linear_posterior(mu, B, V, b, eta, Lv, Ls, W, v1)


IMPLS = {
    "gemm_nn": (la.gemm_nn, _j_gemm_nn),
    "gemm_tn": (la.gemm_tn, _j_gemm_tn),
    "gemm_nt": (la.gemm_nt, _j_gemm_nt),
    "gemv": (la.gemv, _j_gemv),
    "inv_transpose": (la.inv_transpose, _j_inv_transpose),
    "cholesky": (la.cholesky, _j_cholesky),
    "chol_rank1_update": (la.chol_rank1_update, _j_chol_rank1_update),
    "solve_lower": (la.solve_lower, _j_solve_lower),
    "solve_lower_t": (la.solve_lower_t, _j_solve_lower_t),
    "log_abs_det_chol": (la.log_abs_det_chol, _j_log_abs_det_chol),
    "all_finite_vec": (la.all_finite_vec, _j_all_finite_vec),
    "all_finite_mat": (la.all_finite_mat, _j_all_finite_mat),
    "sherman_morrison": (klinucb.sherman_morrison, _j_sherman_morrison),
    "lints_draw": (klints.lints_draw, _j_lints_draw),
    "langevin_linear_steps": (_langevin_linear_steps, _j_langevin_linear_steps),
    "linucb_scores": (klinucb.linucb_scores, _j_linucb_scores),
    "kl_to_linear_posterior": (kl_to_linear_posterior, _j_kl_to_linear_posterior),
}


@pytest.fixture(params=["python", "jit"])
def impl(request):
    """``impl(name)`` -> the Python body or its compiled wrapper."""
    index = 0 if request.param == "python" else 1
    return lambda name: IMPLS[name][index]


def rel_err(got, want):
    """Max-norm error relative to the max-norm of the reference."""
    want = np.asarray(want)
    return np.max(np.abs(np.asarray(got) - want)) / max(np.max(np.abs(want)), 1e-300)


# --------------------------------------------------------------------------- products


@pytest.mark.parametrize("n,k,m", [(3, 4, 5), (5, 5, 5), (1, 6, 2)])
def test_gemm_variants_match_numpy(impl, rng, n, k, m):
    a = rng.standard_normal((n, k))
    b = rng.standard_normal((k, m))
    out = np.full((n, m), np.nan)  # every entry must be written
    impl("gemm_nn")(a, b, out)
    assert rel_err(out, a @ b) < 1e-12

    at = np.ascontiguousarray(a.T)  # (k, n): gemm_tn computes at.T @ b = a @ b
    out = np.full((n, m), np.nan)
    impl("gemm_tn")(at, b, out)
    assert rel_err(out, a @ b) < 1e-12

    bt = np.ascontiguousarray(b.T)  # (m, k): gemm_nt computes a @ bt.T = a @ b
    out = np.full((n, m), np.nan)
    impl("gemm_nt")(a, bt, out)
    assert rel_err(out, a @ b) < 1e-12


def test_gemm_accepts_strided_views(impl, rng):
    # the kernels pass slices such as eps[s] and mats[k]; views of a larger array must work
    big = rng.standard_normal((3, 4, 4))
    out = np.empty((4, 4))
    impl("gemm_nn")(big[1], big[2], out)
    assert rel_err(out, big[1] @ big[2]) < 1e-12


@numba.njit(cache=False)
def _j_numba_dot(a, b, out):
    np.dot(a, b, out)


@numba.njit(cache=False)
def _j_numba_dot_tn(a, b, out):
    np.dot(a.T, b, out)


@numba.njit(cache=False)
def _j_numba_dot_nt(a, b, out):
    np.dot(a, b.T, out)


@numba.njit(cache=False)
def _j_gram(a, out):
    la.gram(a, out)


@pytest.mark.parametrize("n,k,m", [(20, 20, 20), (1, 6, 5), (5, 6, 1), (1, 6, 1), (7, 0, 3),
                                   (3, 70, 4)])
def test_products_are_numbas_np_dot_bit_for_bit(rng, n, k, m):
    """On the CPU the products lower Numba's own np.dot code in their caller
    (``la._dot_into``): the same BLAS call (dgemm, or dgemv and ddot for a matrix of one
    row or column), so the same bits as np.dot compiled by Numba, for every layout the
    bodies pass (a transposed view is Fortran-ordered)."""
    a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    for fn, ref, x, y in ((_j_gemm_nn, _j_numba_dot, a, b), (_j_gemm_tn, _j_numba_dot_tn, at, b),
                          (_j_gemm_nt, _j_numba_dot_nt, a, bt)):
        want, out = np.full((n, m), np.nan), np.full((n, m), np.nan)
        ref(x, y, want)
        fn(x, y, out)
        assert np.array_equal(out, want)
    x = rng.standard_normal(k)
    want_v, out_v = np.full(n, np.nan), np.full(n, np.nan)
    _j_numba_dot(a, x, want_v)
    _j_gemv(a, x, out_v)
    assert np.array_equal(out_v, want_v)
    want_g, out_g = np.full((k, k), np.nan), np.full((k, k), np.nan)
    _j_numba_dot_tn(a, a, want_g)  # a.T @ a, the general product gram uses below d = 64
    _j_gram(a, out_g)
    assert np.array_equal(out_g, want_g) if k < 64 else rel_err(out_g, a.T @ a) < 1e-12


def test_products_check_their_shapes():
    """A product of mismatched shapes raises np.dot's ValueError, not a wrong result."""
    with pytest.raises(ValueError, match="incompatible array sizes"):
        _j_gemm_nn(np.ones((2, 3)), np.ones((4, 2)), np.empty((2, 2)))
    with pytest.raises(ValueError, match="incompatible output array size"):
        _j_gemv(np.ones((2, 3)), np.ones(3), np.empty(3))


@pytest.mark.parametrize("n,k", [(4, 4), (3, 6), (6, 2)])
def test_gemv_matches_numpy(impl, rng, n, k):
    a = rng.standard_normal((n, k))
    x = rng.standard_normal(k)
    out = np.full(n, np.nan)
    impl("gemv")(a, x, out)
    assert rel_err(out, a @ x) < 1e-12


# --------------------------------------------------------------------------- inverse


@pytest.mark.parametrize("d", [1, 2, 5, 8])
def test_inv_transpose_matches_numpy(impl, rng, spd, orthogonal, d):
    # a non-symmetric matrix with condition number 100 (so that out = inv(b).T and
    # out = inv(b) differ): U diag(s) W^T with s in [1, 100]
    b = (orthogonal(rng, d) * np.logspace(0, 2, d)) @ orthogonal(rng, d).T
    out = np.full((d, d), np.nan)
    work = np.empty((d, 2 * d))
    assert impl("inv_transpose")(b, out, work) is True
    # cond(b) = 100: inversion error ~ cond * eps ~ 2e-14 relative
    assert rel_err(out, np.linalg.inv(b).T) < 1e-12
    if d > 1:
        assert rel_err(out, np.linalg.inv(b)) > 1e-3  # the transpose matters


@numba.njit(cache=False)
def _j_numba_inv(b):
    return np.linalg.inv(b)


def test_inv_transpose_jit_is_numbas_inverse_bit_for_bit(rng, orthogonal):
    """The CPU target calls LAPACK's dgetrf and dgetri itself, as Numba's np.linalg.inv
    does (fewer functions to compile): the same bits as np.linalg.inv compiled by Numba,
    which VITS-I's results were computed with."""
    for d in (1, 3, 20):
        b = (orthogonal(rng, d) * np.logspace(0, 2, d)) @ orthogonal(rng, d).T
        out = np.full((d, d), np.nan)
        assert _j_inv_transpose(b, out, np.empty((d, 2 * d))) is True
        assert np.array_equal(out, _j_numba_inv(b).T)


def test_the_fallback_without_numbas_lapack_names_is_the_same_inverse(rng, orthogonal):
    """Where Numba's private LAPACK bindings are gone, the CPU target compiles
    ``_inv_transpose_by_numpy`` (np.linalg.inv): run here as Python, the transposed
    inverse, and False for a singular or non-finite matrix."""
    b = (orthogonal(rng, 4) * np.logspace(0, 2, 4)) @ orthogonal(rng, 4).T
    out = np.full((4, 4), np.nan)
    assert la._inv_transpose_by_numpy(b, out, None) is True
    np.testing.assert_array_equal(out, np.linalg.inv(b).T)
    assert la._inv_transpose_by_numpy(np.ones((2, 2)), out[:2, :2], None) is False
    assert la._inv_transpose_by_numpy(np.full((2, 2), np.inf), out[:2, :2], None) is False


def test_inv_transpose_needs_pivoting(impl):
    # a zero leading entry: Gauss-Jordan without row exchanges would divide by zero
    b = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    out = np.empty((3, 3))
    assert impl("inv_transpose")(b, out, np.empty((3, 6))) is True
    assert rel_err(out, np.linalg.inv(b).T) < 1e-12


@pytest.mark.parametrize("b", [np.zeros((3, 3)),
                               np.array([[1.0, 2.0], [2.0, 4.0]]),
                               np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [1.0, 2.0, 3.0]])],
                         ids=["zero", "rank1", "repeated-row"])
def test_inv_transpose_singular_returns_false_python(b):
    # exactly singular matrices (elimination meets an exact zero pivot). A matrix that is
    # singular only up to rounding (e.g. rows 1,2,3 / 4,5,6 / 5,7,9) gives a ~1e-16 pivot
    # and returns True with ~1e15 entries, like LAPACK: the check is "pivot == 0".
    d = b.shape[0]
    assert la.inv_transpose(b, np.empty((d, d)), np.empty((d, 2 * d))) is False


@pytest.mark.parametrize("b", [np.zeros((3, 3)), np.array([[1.0, 2.0], [2.0, 4.0]])],
                         ids=["zero", "rank1"])
def test_inv_transpose_singular_returns_false_jit(b):
    d = b.shape[0]
    assert _j_inv_transpose(b, np.empty((d, d)), np.empty((d, 2 * d))) is False


def test_inv_transpose_non_finite_returns_false(impl):
    b = np.eye(3)
    b[0, 0] = np.nan
    assert impl("inv_transpose")(b, np.empty((3, 3)), np.empty((3, 6))) is False


# --------------------------------------------------------------------------- Cholesky


@pytest.mark.parametrize("d", [1, 2, 5, 9])
def test_cholesky_matches_numpy(impl, rng, spd, d):
    a = spd(rng, d, cond=100.0)
    out = np.full((d, d), np.nan)  # the upper triangle must be zeroed, not left as is
    assert impl("cholesky")(a, out) is True
    assert rel_err(out, np.linalg.cholesky(a)) < 1e-12
    assert np.all(np.triu(out, 1) == 0.0)


@pytest.mark.parametrize("a", [np.diag([1.0, -1.0, 2.0]),
                               np.array([[1.0, 2.0], [2.0, 1.0]]),  # eigenvalues 3, -1
                               np.zeros((2, 2)),
                               np.array([[np.nan, 0.0], [0.0, 1.0]])],
                         ids=["negative-diag", "indefinite", "zero", "nan"])
def test_cholesky_not_spd_returns_false(impl, a):
    d = a.shape[0]
    assert impl("cholesky")(a, np.empty((d, d))) is False


@pytest.mark.parametrize("d", [1, 3, 6])
def test_chol_rank1_updates_match_refactorisation(impl, rng, spd, d):
    # 200 rank-one updates of the factor of V0 (random SPD) equal the Cholesky factor of
    # V0 + sum x x^T: every update is backward stable, so 200 of them accumulate at most
    # ~200 * d * eps ~ 1e-13 relative; 1e-10 leaves a 1000x margin.
    V0 = spd(rng, d, cond=10.0)
    X = rng.standard_normal((200, d)) * np.logspace(0, 1, d)
    L = np.linalg.cholesky(V0)
    work = np.empty(d)
    update = impl("chol_rank1_update")
    for x in X:
        x_before = x.copy()
        update(L, x, work)
        assert np.array_equal(x, x_before)  # x is not modified
    V = V0 + X.T @ X
    assert rel_err(L, np.linalg.cholesky(V)) < 1e-10
    assert rel_err(L @ L.T, V) < 1e-10
    assert np.all(np.triu(L, 1) == 0.0)


def test_chol_rank1_update_zero_vector_is_identity(impl, rng, spd):
    L = np.linalg.cholesky(spd(rng, 4))
    L0 = L.copy()
    impl("chol_rank1_update")(L, np.zeros(4), np.empty(4))
    assert rel_err(L, L0) < 1e-15


@pytest.mark.parametrize("name,trans", [("solve_lower", False), ("solve_lower_t", True)])
def test_triangular_solves_match_scipy(impl, rng, spd, name, trans):
    d = 6
    L = np.linalg.cholesky(spd(rng, d, cond=100.0))
    b = rng.standard_normal(d)
    want = scipy.linalg.solve_triangular(L, b, lower=True, trans="T" if trans else "N")
    out = np.full(d, np.nan)
    impl(name)(L, b, out)
    # cond(L) = sqrt(cond(V)) = 10: forward/back substitution is backward stable
    assert rel_err(out, want) < 1e-12
    # out may alias b (the kernels rely on it)
    b2 = b.copy()
    impl(name)(L, b2, b2)
    assert rel_err(b2, want) < 1e-12


def test_triangular_solves_use_lower_triangle_only(impl, rng, spd):
    # the solves must read the lower triangle only (their contract: "L lower triangular"),
    # so a factor whose upper triangle holds stale values gives the same answer
    L = np.linalg.cholesky(spd(rng, 4))
    Lg = L + np.triu(rng.standard_normal((4, 4)), 1)
    b = rng.standard_normal(4)
    for name in ("solve_lower", "solve_lower_t"):
        out, out_g = np.empty(4), np.empty(4)
        impl(name)(L, b, out)
        impl(name)(Lg, b, out_g)
        assert np.array_equal(out, out_g)


def test_log_abs_det_chol_matches_slogdet(impl, rng, spd):
    for d, cond in [(1, 1.0), (4, 10.0), (7, 1e4)]:
        V = spd(rng, d, cond=cond) * 3.7
        L = np.linalg.cholesky(V)
        sign, logdet = np.linalg.slogdet(V)
        assert sign == 1.0
        # sums of d logs: absolute error ~ d * eps * max|log L_ii|
        assert impl("log_abs_det_chol")(L) == pytest.approx(logdet, rel=1e-12, abs=1e-12)


# --------------------------------------------------------------------------- finiteness


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_all_finite(impl, bad):
    # the Python body returns a NumPy bool (np.float64 arithmetic): test truthiness
    v = np.array([1.0, -1e308, 1e308, 0.0, -0.0, 5e-324])  # extremes that are finite
    assert impl("all_finite_vec")(v)
    m = np.outer(v, np.ones(3))
    assert impl("all_finite_mat")(m)
    with np.errstate(invalid="ignore"):  # inf * 0 -> nan is the mechanism
        for i in range(v.size):
            w = v.copy()
            w[i] = bad
            assert not impl("all_finite_vec")(w)
        for i, j in [(0, 0), (5, 2), (3, 1)]:
            w = m.copy()
            w[i, j] = bad
            assert not impl("all_finite_mat")(w)


def test_all_finite_empty(impl):
    assert impl("all_finite_vec")(np.zeros(0))
    assert impl("all_finite_mat")(np.zeros((0, 3)))


# --------------------------------------------------------------------------- baselines


def test_sherman_morrison_single_update(impl, rng, spd):
    d = 5
    V = spd(rng, d, cond=20.0)
    x = rng.standard_normal(d)
    Vinv = np.linalg.inv(V)
    impl("sherman_morrison")(Vinv, x, np.empty(d))
    # one rank-one correction of an inverse with cond 20-ish: error ~ cond * eps
    assert rel_err(Vinv, np.linalg.inv(V + np.outer(x, x))) < 1e-12


def test_sherman_morrison_200_updates(impl, rng):
    # inv(V) after 200 Sherman-Morrison updates against np.linalg.inv of V itself. The
    # recursion is not backward stable like a factorisation: its error grows like
    # cond(V) * eps per step, cond(V) ~ 1e3 here -> ~1e-11; 1e-8 leaves a 1000x margin.
    d, lam = 5, 1.0
    X = rng.standard_normal((200, d)) * np.logspace(0, 1, d)
    Vinv = np.eye(d) / lam
    sm = impl("sherman_morrison")
    u = np.empty(d)
    for x in X:
        sm(Vinv, x, u)
    V = lam * np.eye(d) + X.T @ X
    assert rel_err(Vinv, np.linalg.inv(V)) < 1e-8


def test_lints_draw_matches_dense_solves(impl, rng, spd):
    d, eta = 5, 2.5
    V = spd(rng, d, cond=50.0)
    L = np.linalg.cholesky(V)
    b = rng.standard_normal(d)
    for _ in range(3):
        z = rng.standard_normal(d)
        out = np.full(d, np.nan)
        impl("lints_draw")(L, b, eta, z, out)
        # two triangular solves, cond(L) ~ 7: rounding ~ 1e-15
        assert rel_err(out, lints_draw_naive(V, b, eta, z)) < 1e-12
    # z = 0 gives the posterior mean V^-1 b
    out = np.empty(d)
    impl("lints_draw")(L, b, eta, np.zeros(d), out)
    assert rel_err(out, np.linalg.solve(V, b)) < 1e-12


def test_langevin_linear_steps_match_numpy(impl, rng, spd):
    d, S, h = 4, 25, 0.01
    etaV = spd(rng, d, cond=10.0) * 3.0
    eta_b = rng.standard_normal(d)
    eps = rng.standard_normal((S, d))
    theta0 = rng.standard_normal(d)
    theta = theta0.copy()
    impl("langevin_linear_steps")(theta, etaV, eta_b, eps, h, np.empty(d))
    # 25 contractive affine steps (h lmax = 0.3): rounding stays ~ S * eps
    assert rel_err(theta, langevin_linear_naive(theta0, etaV, eta_b, eps, h)) < 1e-12


def test_langevin_noise_scale_follows_step(impl, rng):
    # with a zero potential (etaV = 0, eta_b = 0) one step adds exactly sqrt(2 h) eps
    d = 3
    for h in (1e-4, 0.3):
        theta = np.zeros(d)
        eps = rng.standard_normal((1, d))
        impl("langevin_linear_steps")(theta, np.zeros((d, d)), np.zeros(d), eps, h,
                                      np.empty(d))
        assert rel_err(theta, np.sqrt(2 * h) * eps[0]) < 1e-15


def test_linucb_scores_kernel_matches_explicit_inverse(impl, rng, spd):
    d, K, alpha = 4, 7, 0.8
    V = spd(rng, d, cond=30.0)
    b = rng.standard_normal(d)
    X = rng.standard_normal((K, d))
    out = np.full(K, np.nan)
    theta = np.empty(d)
    impl("linucb_scores")(np.linalg.inv(V), b, alpha, X, theta, np.empty((K, d)), out)
    assert rel_err(out, linucb_scores_naive(V, b, X, alpha)) < 1e-12
    assert rel_err(theta, np.linalg.solve(V, b)) < 1e-12


def test_kl_to_linear_posterior_matches_gaussian_kl(impl, rng, spd):
    # the fused loop's KL diagnostic against vits_ref.gaussian.kl (itself tested against
    # explicit inverses and Monte Carlo); both are exact, KL ~ O(1) here
    d, eta = 5, 1.7
    V = spd(rng, d, cond=50.0)
    b = rng.standard_normal(d)
    mu = rng.standard_normal(d)
    B = np.linalg.cholesky(spd(rng, d, cond=5.0)) @ np.diag(rng.uniform(0.2, 1.0, d))
    scratch = [np.empty((d, d)) for _ in range(3)] + [np.empty(d)]
    got = impl("kl_to_linear_posterior")(mu, B, V, b, eta, *scratch)
    want = kl(mu, B @ B.T, np.linalg.solve(V, b), np.linalg.inv(eta * V))
    assert got == pytest.approx(want, rel=1e-10)
    # a singular square root gives inf, not a crash
    B[:, 0] = 0.0
    assert impl("kl_to_linear_posterior")(mu, B, V, b, eta, *scratch) == np.inf


@pytest.mark.parametrize("d", [5, 80])  # below and above the dsyrk switch (d = 64)
def test_gram_is_symmetric_product(d):
    rng = np.random.default_rng(d)
    a = rng.standard_normal((d, d))
    out = np.full((d, d), np.nan)

    @numba.njit(cache=False)
    def jit_gram(a, out):
        la.gram(a, out)

    jit_gram(a, out)
    np.testing.assert_allclose(out, a.T @ a, rtol=1e-12, atol=1e-12 * d)
    assert np.array_equal(out, out.T)
    loops = np.full((d, d), np.nan)
    la.gram(a, loops)  # the Python (CUDA-simulator) body
    np.testing.assert_allclose(loops, a.T @ a, rtol=1e-12, atol=1e-12 * d)
