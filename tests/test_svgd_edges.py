"""The SVGD direction at the edges of double precision: translation invariance far from
the origin, and a clear ValueError (never a NaN or a direction that lost its digits) where
the bandwidth or the repulsion leave the representable range."""

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.reference import svgd as ref

N, D = 64, 3  # n >= GEMM_MIN_N: "auto" would take the BLAS form; both forms are checked
EPS = np.finfo(float).eps


def _particles():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, D))
    return X, -X  # the standard Gaussian's score


@pytest.mark.parametrize("form", ["gemm", "loop"])
@pytest.mark.parametrize("offset", [1e4, 1e8])
@pytest.mark.parametrize("bandwidth", [1.0, "median"])
def test_phi_is_translation_invariant(form, offset, bandwidth):
    X, G = _particles()
    Xs = X + offset
    got = vr.svgd.phi(Xs, G, bandwidth=bandwidth, form=form)
    # (a) against the pairwise-difference definition on the same shifted particles: x_i -
    # x_j of two doubles within a factor 2 of each other is exact (Sterbenz), so the
    # reference is as accurate as on particles near 0, and so is the library once it
    # shifts them there; 1e-12 is test_svgd's tolerance for particles near 0 (a few hundred ulps of
    # the n-term sums). Before centring, the BLAS form was off by 6e-8 at 1e4, 16x at 1e8.
    want = ref.phi_naive(Xs, G, None if bandwidth == "median" else bandwidth)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-12 * scale
    # (b) against the direction of the unshifted particles: X + offset rounds each
    # coordinate by at most ulp(offset)/2 (7.5e-9 at 1e8); the direction's derivatives in
    # the particles are O(1) here (unit bandwidth or the median's ~1.3, unit spread, score
    # -x), bounded by 100 on these particles, hence the tolerance 100 ulp(offset)
    base = ref.phi_naive(X, G, None if bandwidth == "median" else bandwidth)
    assert np.abs(got - base).max() <= 100 * np.spacing(offset) * scale


@pytest.mark.parametrize("form", ["gemm", "loop"])
def test_a_bandwidth_below_the_spread_is_refused(form):
    X, G = _particles()
    with pytest.raises(ValueError, match=r"bandwidth=1e-300 is too small.*or repulsion=0"):
        vr.svgd.phi(X, G, bandwidth=1e-300, form=form)
    # the limit is the gradients alone, and without repulsion nothing cancels: exact
    got = vr.svgd.phi(X, G, bandwidth=1e-300, repulsion=0.0, form=form)
    assert np.array_equal(got, G / N)
    # a narrow kernel that rounding still resolves: no error, the definition's value (the
    # error bound eps (|g| + 12 r R / h) is 6e-11 of |phi| here; tolerance 1e-9)
    got = vr.svgd.phi(X, G, bandwidth=1e-3, form=form)
    want = ref.phi_naive(X, G, 1e-3)
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


@pytest.mark.parametrize("form", ["gemm", "loop"])
def test_overflowing_repulsion_or_spread_is_refused(form):
    X, G = _particles()
    with pytest.raises(ValueError, match=r"2 \* repulsion / bandwidth overflows"):
        vr.svgd.phi(X, G, bandwidth=1.0, repulsion=1e308, form=form)
    with pytest.raises(ValueError, match=r"2 \* repulsion / bandwidth overflows"):
        vr.svgd.phi(X, G, bandwidth=1e-10, repulsion=1e300, form=form)
    with pytest.raises(ValueError, match="squared distances overflow"):
        vr.svgd.phi(X * 1e160, G, bandwidth=1.0, form=form)


@pytest.mark.parametrize("form", ["gemm", "loop"])
def test_a_cloud_near_the_origin_is_not_moved(form):
    # the shift is the mean rounded to a power of two above 4 R: 0 for a cloud with
    # |mean| < 2 R, so its arithmetic (and test_svgd's 1e-15 closed form) is unchanged;
    # a cluster finer than the mean's rounding keeps its structure (a mean-centring would
    # round the 1e-20 spacings of 60 particles away and the median heuristic to h = 1)
    X, _ = _particles()
    X[:60] = 1e-20 * X[:60]
    assert vr.svgd.median_bandwidth(X) == pytest.approx(ref.median_bandwidth(X), rel=1e-12)
    got = vr.svgd.phi(X, -X, bandwidth=1.0, form=form)
    want = ref.phi_naive(X, -X, 1.0)
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
