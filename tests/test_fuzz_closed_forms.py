"""Hypothesis fuzz of the closed forms of :mod:`vits_ref.gaussian`.

Each closed form gets Gaussians of dimension 1-4 whose covariances span scales 1e-300 to
1e300 and condition numbers 1 to 1e300, in random presentations (wrong dtypes, shapes,
non-contiguous, read-only, NaN/inf; tests/fuzz_strategies.present), and sometimes
non-symmetric or indefinite. Property: a documented ValueError/TypeError (naming the
argument, or saying the result over/underflows: "rescale"), or a finite result; and when
the inputs are valid and well conditioned (condition numbers <= 1e8, scales in
[1e-50, 1e50]) the call must succeed and agree with a plain NumPy/SciPy computation
(explicit inverses, eigendecompositions, scipy.stats).

Tolerances: with condition number kappa <= 1e8 a backward-stable computation in double
precision (unit roundoff u = 1.1e-16) has relative error about kappa d u <= 1e8 * 4 *
1.1e-16 = 4.4e-8 in each solve; both sides (library and reference) carry such an error
and a KL or W2 sums terms of magnitude M, so we allow 1e-6 (M + 1): a 20x margin over the
bound, far below any formula error (which is O(1) relative).

Runtime and case counts of the whole fuzz suite: tests/test_fuzz_api.py's docstring.
"""

import numpy as np
import pytest
import scipy.stats
from fuzz_strategies import (
    DOCUMENTED,
    PRESENTATIONS,
    counted,
    n_examples,
    names_an_argument,
    present,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vits_ref as vr

g = vr.gaussian
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::DeprecationWarning")

SCALES = (1e-300, 1e-150, 1e-50, 1e-10, 1.0, 1.0, 1.0, 10.0, 1e10, 1e50, 1e150, 1e300)
CONDS = (1.0, 10.0, 1e4, 1e8, 1e12, 1e17, 1e300)
WELL_SCALE = (1e-50, 1e50)
WELL_COND = 1e8


@st.composite
def spd(draw, d):
    """``(cov, info)``: an SPD matrix (scale, condition number in ``info``) of dimension
    ``d``, sometimes spoiled (non-symmetric, indefinite)."""
    a = draw(hnp.arrays(np.float64, (d, d), elements=st.floats(-1, 1)))
    q, r = np.linalg.qr(a + 3.0 * np.eye(d))
    scale, cond = draw(st.sampled_from(SCALES)), draw(st.sampled_from(CONDS))
    with np.errstate(all="ignore"):
        eigs = scale * np.logspace(0, np.log10(cond), d)
        cov = (q * eigs) @ q.T
        cov = 0.5 * (cov + cov.T)
    spoil = draw(st.sampled_from(["none"] * 8 + ["asym", "indefinite", "zero"]))
    if spoil == "asym" and d > 1:
        cov = cov.copy()
        cov[0, 1] += 1.0 + abs(cov[0, 1])
    elif spoil == "indefinite":
        cov = -cov
    elif spoil == "zero":
        cov = np.zeros((d, d))
    return cov, {"scale": scale, "cond": cond, "spoiled": spoil != "none" and
                 not (spoil == "asym" and d == 1)}


def pres():
    return st.sampled_from(PRESENTATIONS)


def _kind_ok(value, shape):
    """Real numeric dtype and exactly ``shape`` (the library's documented input)."""
    try:
        arr = np.asarray(value)
    except ValueError:
        return False
    return value is not None and arr.dtype.kind in "biuf" and arr.shape == shape \
        and bool(np.all(np.isfinite(arr.astype(float))))


#: presentations that keep a float64 array valid and exactly equal
_EXACT = {"plain", "list", "noncontig", "fortran", "readonly"}


@st.composite
def gaussians(draw, d, tag):
    """``(mean, cov, well)``: presented; ``well``: valid and well conditioned."""
    mean = draw(hnp.arrays(np.float64, (d,), elements=st.one_of(
        st.floats(-10, 10), st.sampled_from([1e10, -1e100, 1e300, np.nan, np.inf]))))
    cov, info = draw(spd(d))
    pm, pc = draw(pres()), draw(pres())
    well = (pm in _EXACT and pc in _EXACT and not info["spoiled"]
            and WELL_SCALE[0] <= info["scale"] <= WELL_SCALE[1]
            and info["cond"] <= WELL_COND and bool(np.all(np.abs(mean) <= 1e10)))
    return present(mean, pm), present(cov, pc), well


def _finite(x):
    return all(np.all(np.isfinite(np.asarray(v, dtype=float)))
               for v in (x if isinstance(x, tuple) else (x,)))


def outcome(fn, args, well, names):
    """Call ``fn(*args)``: a documented error (naming an argument or "rescale"), or a
    finite result; a well-conditioned valid input must succeed. Returns the result or
    None."""
    try:
        out = fn(*args)
    except DOCUMENTED as exc:
        assert not isinstance(exc, vr.DivergenceError), exc
        assert not well, f"{fn.__name__} refused a valid, well-conditioned input: {exc!r}"
        assert names_an_argument(exc, names + ("rescale",)), \
            f"{fn.__name__}: the message names no argument: {exc!r}"
        return None
    assert _finite(out), f"{fn.__name__} returned a non-finite value {out!r}"
    return out if well else None


def _close(got, want, magnitude):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * (magnitude + 1.0))


def _mag(*arrays):
    return max(float(np.max(np.abs(np.asarray(a, dtype=float)))) for a in arrays)


def ref_kl(m1, S1, m2, S2):
    d = len(m1)
    S2i = np.linalg.inv(S2)
    dm = m2 - m1
    terms = (np.trace(S2i @ S1), dm @ S2i @ dm, np.linalg.slogdet(S2)[1],
             np.linalg.slogdet(S1)[1])
    return 0.5 * (terms[0] + terms[1] - d + terms[2] - terms[3]), sum(map(abs, terms))


def _sqrtm_spd(S):
    w, v = np.linalg.eigh(S)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def ref_w2sq(m1, S1, m2, S2):
    r1 = _sqrtm_spd(S1)
    mid = _sqrtm_spd(0.5 * (r1 @ S2 @ r1 + (r1 @ S2 @ r1).T))
    return float(np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * mid))


@pytest.mark.parametrize("fn", ["kl", "w2_squared", "w2", "product"])
def test_two_gaussians(fn):
    func = getattr(g, fn)
    names = ("mean_p", "cov_p", "mean_q", "cov_q", "mean1", "cov1", "mean2", "cov2")

    @settings(max_examples=n_examples(0.5))
    @given(d=st.integers(1, 4), data=st.data(), d2=st.sampled_from([0] * 8 + [1]))
    @counted
    def fuzz(d, data, d2):
        m1, S1, w1 = data.draw(gaussians(d, 1))
        m2, S2, w2 = data.draw(gaussians(d + d2, 2))
        out = outcome(func, (m1, S1, m2, S2), w1 and w2 and not d2, names)
        if out is None:
            return
        m1, S1, m2, S2 = (np.asarray(a, dtype=float) for a in (m1, S1, m2, S2))
        if fn == "kl":
            want, mag = ref_kl(m1, S1, m2, S2)
            _close(out, want, mag)
            assert out >= 0.0
        elif fn in ("w2_squared", "w2"):
            want = ref_w2sq(m1, S1, m2, S2)
            mag = float(np.sum((m1 - m2) ** 2) + np.trace(S1) + np.trace(S2))
            _close(out if fn == "w2_squared" else out ** 2, max(want, 0.0), mag)
        else:
            mean, cov, log_z = out
            P = np.linalg.inv(S1) + np.linalg.inv(S2)
            ref_cov = np.linalg.inv(P)
            ref_mean = ref_cov @ (np.linalg.solve(S1, m1) + np.linalg.solve(S2, m2))
            _close(cov, ref_cov, _mag(ref_cov))
            _close(mean, ref_mean, _mag(m1, m2))
            ref_z = scipy.stats.multivariate_normal(m2, S1 + S2).logpdf(m1)
            _close(log_z, ref_z, abs(ref_z))

    fuzz()


@pytest.mark.parametrize("fn", ["entropy", "logpdf"])
def test_one_gaussian(fn):
    @settings(max_examples=n_examples(0.25))
    @given(d=st.integers(1, 4), data=st.data())
    @counted
    def fuzz(d, data):
        m, S, well = data.draw(gaussians(d, 1))
        if fn == "entropy":
            out = outcome(g.entropy, (S,), well, ("cov",))
            if out is not None:
                S = np.asarray(S, dtype=float)
                want = 0.5 * d * (1 + np.log(2 * np.pi)) + 0.5 * np.linalg.slogdet(S)[1]
                _close(out, want, abs(want))
                assert np.isfinite(out)
            return
        x = data.draw(hnp.arrays(np.float64, data.draw(st.sampled_from([(d,), (2, d), (3,)])),
                                 elements=st.floats(-10, 10)))
        px = data.draw(pres())
        out = outcome(g.logpdf, (present(x, px), m, S),
                      well and px in _EXACT and x.shape[-1] == d, ("x", "mean", "cov"))
        if out is not None:
            want = scipy.stats.multivariate_normal(np.asarray(m, dtype=float),
                                                   np.asarray(S, dtype=float)).logpdf(x)
            _close(out, want, np.max(np.abs(want)))
            assert np.shape(out) == np.shape(want)

    fuzz()


@st.composite
def regression(draw, d):
    """Features (n, d), rewards (n,): presented, with huge/tiny scales; and whether valid."""
    n = draw(st.integers(0, 5))
    scale = draw(st.sampled_from(SCALES))
    X = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-3, 3))) * scale
    y = draw(hnp.arrays(np.float64, (n + draw(st.sampled_from([0] * 9 + [1])),),
                        elements=st.one_of(st.floats(-10, 10),
                                           st.sampled_from([np.nan, 1e200]))))
    px, py = draw(pres()), draw(pres())
    # (an empty (0, d) array presented as a list is [], shape (0,): not exact)
    ok = (px in _EXACT and py in _EXACT and y.shape[0] == n and bool(np.all(np.isfinite(X)))
          and (n > 0 or "list" not in (px, py))
          and bool(np.all(np.abs(y) <= 10)) and 1e-20 <= scale <= 1e20)
    return present(X, px), present(y, py), ok


def _posterior_ok(out, ref_mean, ref_cov, scale):
    mean, cov = out
    _close(cov, ref_cov, _mag(ref_cov))
    _close(mean, ref_mean, scale)


@pytest.mark.parametrize("fn", ["linear_posterior", "linear_posterior_general",
                                "linear_posterior_from_stats"])
def test_linear_posteriors(fn):
    hyper = st.one_of(st.floats(0.1, 10.0), st.sampled_from(
        [0.0, -1.0, np.nan, np.inf, 1e-300, 1e300, "1", None, True]))

    @settings(max_examples=n_examples(0.25))
    @given(d=st.integers(1, 4), data=st.data(), eta=hyper, lam=hyper)
    @counted
    def fuzz(d, data, eta, lam):
        hyper_ok = all(isinstance(v, float) and 0.1 <= v <= 10 for v in (eta, lam))
        X, y, ok = data.draw(regression(d))
        if fn == "linear_posterior":
            well = ok and hyper_ok
            if well:
                Xa, ya = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
                V = lam * np.eye(d) + Xa.T @ Xa
                well = np.linalg.cond(V) <= WELL_COND
            out = outcome(g.linear_posterior, (X, y, eta, lam), well,
                          ("features", "rewards", "eta", "lam"))
            if out is not None:
                ref_mean = np.linalg.solve(V, Xa.T @ ya)
                _posterior_ok(out, ref_mean, np.linalg.inv(eta * V), _mag(ref_mean))
        elif fn == "linear_posterior_general":
            m0, S0, well = data.draw(gaussians(d, 0))
            names = ("features", "rewards", "prior_mean", "prior_cov", "noise_var")
            try:
                out = g.linear_posterior_general(X, y, m0, S0, eta)
            except DOCUMENTED as exc:
                assert names_an_argument(exc, names + ("rescale", "posterior precision")), exc
                out = None
            if out is not None:
                assert _finite(out)
            if not (ok and well and hyper_ok):
                return
            Xa, ya = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
            S0a, m0a = np.asarray(S0, dtype=float), np.asarray(m0, dtype=float)
            P = np.linalg.inv(S0a) + Xa.T @ Xa / eta
            if np.linalg.cond(P) > WELL_COND:
                return
            assert out is not None, "refused a valid, well-conditioned input"
            ref_cov = np.linalg.inv(P)
            ref_mean = ref_cov @ (np.linalg.solve(S0a, m0a) + Xa.T @ ya / eta)
            _posterior_ok(out, ref_mean, ref_cov, _mag(ref_mean, m0a))
        else:
            _, V, well = data.draw(gaussians(d, 0))
            b = data.draw(hnp.arrays(np.float64, (d,), elements=st.floats(-10, 10)))
            out = outcome(g.linear_posterior_from_stats, (V, b, eta), well and hyper_ok,
                          ("V", "b", "eta"))
            if out is not None:
                Va = np.asarray(V, dtype=float)
                _posterior_ok(out, np.linalg.solve(Va, b), np.linalg.inv(eta * Va),
                              _mag(np.linalg.solve(Va, b)))

    fuzz()


def ref_renyi(m1, S1, m2, S2, a):
    """The closed form D_a(p || q) = a/2 D^T S_a^-1 D - log(det S_a / (det S_p^(1-a)
    det S_q^a)) / (2 (a - 1)), S_a = a S_q + (1 - a) S_p, with explicit inverse and
    slogdet; None where S_a is not positive definite (the divergence is infinite)."""
    Sa = a * S2 + (1 - a) * S1
    if np.linalg.eigvalsh(Sa)[0] <= 0:
        return None, None
    dm = m2 - m1
    quad = dm @ np.linalg.solve(Sa, dm)
    logs = (np.linalg.slogdet(Sa)[1], np.linalg.slogdet(S1)[1], np.linalg.slogdet(S2)[1])
    value = 0.5 * a * quad - (logs[0] - (1 - a) * logs[1] - a * logs[2]) / (2 * (a - 1))
    return value, Sa


@pytest.mark.parametrize("fn", ["renyi", "tsallis"])
def test_renyi_tsallis(fn):
    # reference comparison only where every covariance (S_p, S_q, S_a) has condition
    # number <= 1e4 and |a - 1| >= 0.05: the log-determinant error d u kappa <= 4 * 1.1e-16
    # * 1e4 = 4.4e-12 is divided by 2 |a - 1| >= 0.1, well inside 1e-6 (M + 1)
    func = getattr(g, fn)
    alphas = st.one_of(st.floats(-2.0, 3.0), st.sampled_from(
        [0.0, 1.0, 1 + 1e-9, 1 - 1e-9, 0.5, 2.0, 1e300, -1e300, np.nan, np.inf, True, "0.5",
         None, 1j]))

    @settings(max_examples=n_examples(0.25))
    @given(d=st.integers(1, 3), data=st.data(), a=alphas)
    @counted
    def fuzz(d, data, a):
        m1, S1, w1 = data.draw(gaussians(d, 1))
        m2, S2, w2 = data.draw(gaussians(d, 2))
        names = ("mean_p", "cov_p", "mean_q", "cov_q", "alpha")
        try:
            out = func(m1, S1, m2, S2, a)
        except DOCUMENTED as exc:
            assert not isinstance(exc, vr.DivergenceError), exc
            good_alpha = isinstance(a, float) and abs(a) <= 3
            assert not (w1 and w2 and good_alpha and abs(a - 1) >= 0.05), \
                f"{fn} refused a valid input: {exc!r}"
            assert names_an_argument(exc, names + ("rescale",)), exc
            return
        assert not np.isnan(out), f"{fn} returned NaN"
        if not (w1 and w2 and isinstance(a, float) and abs(a) <= 3 and abs(a - 1) >= 0.05):
            return
        m1, S1, m2, S2 = (np.asarray(v, dtype=float) for v in (m1, S1, m2, S2))
        want, Sa = ref_renyi(m1, S1, m2, S2, a)
        if want is None:  # S_a not positive definite: documented +-inf (or finite rounding)
            return
        if max(np.linalg.cond(S1), np.linalg.cond(S2), np.linalg.cond(Sa)) > 1e4:
            return
        assert np.isfinite(out)
        if fn == "tsallis":  # (exp((a - 1) D_a) - 1) / (a - 1)
            if (a - 1) * want > 700:  # exp overflows: the library may return inf
                return
            want = np.expm1((a - 1) * want) / (a - 1)
        _close(out, want, abs(want))

    fuzz()


def test_regression_overflowing_divergences_raise_instead_of_nan():
    # means 1e300 apart with covariances 1e-300: the whitened difference overflows; renyi,
    # tsallis, amari and log_i_divergence returned NaN (0 * inf), kl and logpdf inf
    m1, m2, S = np.zeros(2), np.full(2, 1e300), 1e-300 * np.eye(2)
    for fn in (g.renyi, g.tsallis, g.amari, g.log_i_divergence):
        with pytest.raises(ValueError, match="rescale"):
            fn(m1, S, m2, S, 1.0 if fn is not g.log_i_divergence else 0.5)
    with pytest.raises(ValueError, match="KL.*not finite"):
        g.kl(m1, S, m2, S)
    with pytest.raises(ValueError, match="log density is not finite"):
        g.logpdf(m2, m1, S)
    # documented infinities stay: S_a not positive definite
    assert g.renyi([0.0], [[4.0]], [0.0], [[1.0]], 2.0) == np.inf


def test_regression_huge_order_at_equal_gaussians_is_zero():
    # a (a - 1) overflowed for a = 1e300 and inf * R with R = 0 gave NaN
    m, S = np.zeros(1), 1e-300 * np.eye(1)
    for fn in (g.tsallis, g.amari, g.log_i_divergence, g.renyi):
        for a in (1e300, -1e300):
            assert fn(m, S, m, S, a) == 0.0


def test_regression_linear_posterior_names_its_arguments():
    # features of 1e10 in both columns: lam I + X^T X is singular in double precision; the
    # error named V, an internal quantity
    with pytest.raises(ValueError, match="features.*rescale"):
        g.linear_posterior([[1e10, 1e10]], [0.0])
