"""Exact linear TS at the edges of double precision: the rank-one Cholesky update keeps
the posterior of large contexts (its short form lost every digit across a context of 1e9),
and the KL diagnostic raises the same ValueError on the fused and the Python paths where
``V`` itself is not positive definite in double precision."""

from fractions import Fraction

import numpy as np
import pytest
from vits_ref.kernels import linalg

import vits_ref as vr
from vits_ref.drivers import cpu


def _exact_precision(X, lam):
    """``lam I + X^T X`` in exact rational arithmetic (of the given doubles)."""
    d = X.shape[1]
    V = [[Fraction(lam) if i == j else Fraction(0) for j in range(d)] for i in range(d)]
    for x in X:
        xf = [Fraction(float(v)) for v in x]
        for i in range(d):
            for j in range(d):
                V[i][j] += xf[i] * xf[j]
    return V


def _factor_product(L):
    """``L L^T`` in exact rational arithmetic."""
    Lf = [[Fraction(float(a)) for a in row] for row in L]
    d = len(Lf)
    return [[sum(Lf[i][k] * Lf[j][k] for k in range(d)) for j in range(d)] for i in range(d)]


def _quad(V, v):
    vf = [Fraction(float(a)) for a in v]
    return float(sum(vf[i] * V[i][j] * vf[j] for i in range(len(vf)) for j in range(len(vf))))


@pytest.mark.parametrize("scale", [1e4, 1e9, 1e12])
def test_variance_across_a_huge_context_is_kept(scale):
    # V = I + x x^T: across x (v orthogonal to x) the posterior variance is 1 and so is
    # the precision v^T V v (up to (x.v)^2, x.v ~ eps |x| from v's rounding). The factor's
    # precision along v, v^T L L^T v, is computed exactly (rationals) and compared with the
    # exact v^T V v: the Givens rotations keep it to a few ulps (1e-12, for the d = 5
    # rotations' rounding) plus what any double factor must lose: L's first column holds
    # |x| to eps |x| absolute, which reaches v^T L L^T v squared, (eps |x|)^2 (1e-7 at
    # 1e12). The short form gave 4.4 or 6e-5 for the variance at 1e9.
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = scale * rng.standard_normal(5)
        eng = vr.LinTS(5, seed=0).update(x[None], [1.0])
        v = rng.standard_normal(5)
        v -= (v @ x) / (x @ x) * x
        v /= np.linalg.norm(v)
        want = _quad(_exact_precision(x[None], 1.0), v)  # 1 + (x.v)^2, x.v ~ eps |x|
        tol = 1e-12 + 10.0 * (np.finfo(float).eps * np.linalg.norm(x)) ** 2
        assert abs(_quad(_factor_product(eng.L), v) - want) < tol * want
        assert abs(v @ eng.cov @ v - 1.0) < tol


def test_ordinary_rotations_keep_the_short_form():
    # below STEEP_ROTATION the update's arithmetic is the earlier short form, bit for bit
    # (the golden outputs of tests/test_golden.py pin the factors of ordinary runs)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 6))
    L = np.eye(6)
    cpu.chol_update_rows(L, X)
    M = np.eye(6)
    for x in X:
        w = x.copy()
        for k in range(6):
            r = np.sqrt(M[k, k] ** 2 + w[k] ** 2)
            c, s, ic = r / M[k, k], w[k] / M[k, k], M[k, k] / r
            assert c < linalg.STEEP_ROTATION
            M[k, k] = r
            for i in range(k + 1, 6):
                lik = (M[i, k] + s * w[i]) * ic
                M[i, k] = lik
                w[i] = c * w[i] - s * lik
    assert np.array_equal(L, M)


class _Scaled(vr.envs.PoolEnvironment):
    """The pool environment with every context multiplied by ``scale``."""

    scale = 1.0

    def _contexts(self, T, rng):
        return self.scale * super()._contexts(T, rng)


@pytest.fixture
def scaled():
    def make(scale):
        _Scaled.scale = scale
        return _Scaled(dim=5, n_arms=3, zeta=1.0, seed=0)

    yield make
    _Scaled.scale = 1.0


@pytest.mark.parametrize("fused", [True, False])
def test_kl_of_large_contexts_is_right_on_both_paths(scaled, fused):
    # contexts of 1e12 after 10 rounds (d = 5): V is well conditioned (its eigenvalues
    # ~1e24 within a factor ~10), so the KL of LinTS to the posterior is rounding: the two
    # means (from L and from V, both from the rounded b) differ by eps cond(V) |m| ~ 1e-15,
    # about 1e-3 of the posterior's standard deviation (1e-12), per coordinate; the KL is
    # half the squared sum, 1e-5 or so (measured 4e-5 at most). Tolerance 1e-3. Before,
    # both paths gave ~3e3 (LinTS's mean was thousands of standard deviations off).
    res = vr.simulate("lints", scaled(1e12), 20, seed=0, fused=fused, kl_rounds=[10, 20])
    assert np.all(np.abs(res.kl) < 1e-3)


@pytest.mark.parametrize("fused", [True, False])
def test_kl_where_v_is_singular_in_double_raises_on_both_paths(scaled, fused):
    # at round 3 < d = 5, V = I + sum x x^T with |x| ~ 1e10 has eigenvalues 1 and ~1e20:
    # not positive definite in double precision. The Python path raised, the fused one
    # returned inf; both raise the same ValueError now.
    with pytest.raises(ValueError, match=r"KL diagnostic at round 3 of run 0 cannot be "
                                         r"computed.*\|x\|\^2 / lam"):
        vr.simulate("lints", scaled(1e10), 20, seed=0, fused=fused, kl_rounds=[3, 10])
