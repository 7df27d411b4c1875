"""The logistic potential (vits_ref.models.Logistic, kernels/logistic.py).

References, independent of the kernels: a plain NumPy implementation built on SciPy's
special functions (``expit``, ``log1p``, ``logaddexp``), central finite differences, and
closed-form asymptotics at ``|z| = 700, 1000``.

Each kernel body is checked on two paths, as in tests/test_linalg.py: called directly from
Python (the loop versions of the products: what the CUDA simulator runs) and through the
compiled CPU drivers (BLAS products).

Tolerances: value, gradient and Hessian are sums of n <= 60 well-scaled terms evaluated in
float64, so their rounding error is ~ n eps ~ 1e-14 relative; rtol 1e-12 leaves 100x
margin while any algebra slip (a missing eta, a lam/2) shows at 1e-2 or worse.
"""

import math
import warnings

import numpy as np
import pytest
from scipy.special import expit, log1p
from vits_ref.kernels import logistic as klog
from vits_ref.kernels import scalars as kscal

import vits_ref as vr
from vits_ref.models import MODELS, Logistic

ETA, LAM = 1.7, 0.6  # not 1: a confusion of eta with lam, or a missing eta, shows


def rel_err(got, want):
    want = np.asarray(want)
    return np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want))


# --------------------------------------------------------------------------- NumPy reference


def u_np(X, y, theta, eta, lam):
    z = X @ theta
    # log(1 + e^z) - y z, as logaddexp(0, z) - y z: SciPy/NumPy's stable forms
    return eta * (np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * theta @ theta)


def grad_np(X, y, theta, eta, lam):
    return eta * (X.T @ (expit(X @ theta) - y) + lam * theta)


def hess_np(X, y, theta, eta, lam):
    s = expit(X @ theta)
    return eta * ((X * (s * (1 - s))[:, None]).T @ X + lam * np.eye(X.shape[1]))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2024)
    n, d = 60, 4
    X = rng.standard_normal((n, d)) * np.array([1.0, 2.0, 0.5, 1.5])
    theta_star = np.array([1.0, -0.5, 2.0, 0.3])
    y = (rng.random(n) < expit(X @ theta_star)).astype(float)
    thetas = rng.standard_normal((5, d))
    return X, y, thetas


def model_with(X, y, eta=ETA, lam=LAM, **kw):
    m = Logistic(X.shape[1], eta=eta, lam=lam, **kw)
    m.add(X, y)
    return m


# --------------------------------------------------------------------------- compiled drivers


def test_value_grad_hess_vs_numpy(data):
    X, y, thetas = data
    m = model_with(X, y)
    for th in thetas:
        assert m.value(th) == pytest.approx(u_np(X, y, th, ETA, LAM), rel=1e-12)
        assert rel_err(m.grad(th), grad_np(X, y, th, ETA, LAM)) < 1e-12
        H = m.hess(th)
        assert rel_err(H, hess_np(X, y, th, ETA, LAM)) < 1e-12
        assert np.array_equal(H, H.T)  # made exactly symmetric


def test_finite_differences(data):
    X, y, thetas = data
    m = model_with(X, y)
    d = X.shape[1]
    h = 1e-5
    for th in thetas[:3]:
        E = np.eye(d) * h
        # central differences: truncation h^2 |U'''|/6 ~ 1e-10 |U|, rounding eps |U| / h ~
        # 1e-11 |U|; |U| ~ 50 and the gradient entries are O(10): rtol 1e-7 is 100x the sum
        fd_g = np.array([(m.value(th + e) - m.value(th - e)) / (2 * h) for e in E])
        assert rel_err(m.grad(th), fd_g) < 1e-7
        fd_h = np.array([(m.grad(th + e) - m.grad(th - e)) / (2 * h) for e in E])
        assert rel_err(m.hess(th), fd_h) < 1e-7


def test_grads_hessian_mean_of_hessians(data):
    X, y, thetas = data
    m = model_with(X, y)
    G, H = m.grads_hessian(thetas)
    assert G.shape == thetas.shape and H.shape == (4, 4)
    for j, th in enumerate(thetas):
        assert rel_err(G[j], m.grad(th)) < 1e-12
    # mean_j X^T diag(w_j) X = X^T diag(mean_j w_j) X: equal up to rounding
    assert rel_err(H, np.mean([m.hess(th) for th in thetas], axis=0)) < 1e-12
    assert rel_err(H, np.mean([hess_np(X, y, th, ETA, LAM) for th in thetas], axis=0)) < 1e-12
    G2, H2 = m.grads_hessian(thetas, want_hessian=False)
    assert H2 is None and np.array_equal(G2, G)
    with pytest.raises(ValueError, match="thetas"):
        m.grads_hessian(thetas[:, :3])


def test_empty_history_is_the_prior():
    m = Logistic(3, eta=ETA, lam=LAM)
    th = np.array([0.5, -1.0, 2.0])
    assert m.value(th) == pytest.approx(0.5 * ETA * LAM * th @ th, rel=1e-15)
    assert rel_err(m.grad(th), ETA * LAM * th) < 1e-15
    assert np.array_equal(m.hess(th), ETA * LAM * np.eye(3))


# --------------------------------------------------------------------------- stability


@pytest.mark.parametrize("zabs", [700.0, 1000.0])
def test_stable_at_large_z(zabs):
    # rows giving z = +-zabs at theta = (1, 0), with both labels
    X = np.array([[zabs, 0.0], [zabs, 0.0], [-zabs, 0.0], [-zabs, 0.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0])
    th = np.array([1.0, 0.0])
    m = model_with(X, y, eta=1.0, lam=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            value, g, H = m.value(th), m.grad(th), m.hess(th)
    tiny = math.exp(-zabs)  # 9.9e-305 at 700 (a normal double), 0.0 at 1000
    # per-row loss: (z=+a, y=0) a + e^-a; (+a, 1) e^-a; (-a, 0) e^-a; (-a, 1) a + e^-a
    assert value == pytest.approx(2 * zabs + 0.5, rel=1e-15)  # + lam/2 |theta|^2
    # the correct asymptotics row by row, to full relative precision even at e^-700
    z = X @ th
    assert [kscal.bernoulli_nll(zi, yi) for zi, yi in zip(z, y, strict=True)] == \
        pytest.approx([zabs + tiny, tiny, tiny, zabs + tiny], rel=1e-14, abs=0.0)
    r_w = [kscal.residual_weight(zi, yi) for zi, yi in zip(z, y, strict=True)]
    # sigmoid(z) - y: (+a, 0) 1 - e^-a; (+a, 1) -e^-a; (-a, 0) e^-a; (-a, 1) -(1 - e^-a)
    assert [r for r, _ in r_w] == pytest.approx([1.0, -tiny, tiny, -1.0], rel=1e-14, abs=0.0)
    assert [w for _, w in r_w] == pytest.approx([tiny] * 4, rel=1e-14, abs=0.0)
    # gradient: x-coordinate a (1 - 1 + 2 e^-a) ... summed: a(1 - e^-a) - a e^-a - a e^-a
    # + a (1 - e^-a) = 2a (1 - 2 e^-a) in exact arithmetic; + lam theta
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(H))
    assert g[0] == pytest.approx(2 * zabs * (1 - 2 * tiny) + 1.0, rel=1e-15)
    assert H[0, 0] == pytest.approx(4 * zabs ** 2 * tiny + 1.0, rel=1e-12)
    # the naive formula overflows where the kernel does not
    if zabs == 1000.0:
        with np.errstate(over="ignore"):
            assert np.isinf(np.log(1 + np.exp(zabs)))
    # scipy's stable forms agree with the kernel's scalars
    assert kscal.softplus(-zabs) == pytest.approx(log1p(math.exp(-zabs)), rel=1e-15, abs=0)
    assert kscal.sigmoid(zabs) == expit(zabs) and kscal.sigmoid(-zabs) == expit(-zabs)


# --------------------------------------------------------------------------- python bodies


def test_python_bodies_match_numpy(data):
    """The kernel bodies called from Python (loop products, as under the CUDA simulator)."""
    X, y, thetas = data
    n, d = X.shape
    M = thetas.shape[0]
    z = np.empty((n, 1))
    for th in thetas[:2]:
        assert klog.logistic_value(X, y, th, ETA, LAM, z) == \
            pytest.approx(u_np(X, y, th, ETA, LAM), rel=1e-12)
    Z, wbar, Xw = np.empty((n, M)), np.empty(n), np.empty((n, d))
    G, H = np.empty((M, d)), np.empty((d, d))
    klog.logistic_grads_hessian(X, y, thetas, ETA, LAM, True, Z, wbar, Xw, G, H)
    assert rel_err(G, [grad_np(X, y, th, ETA, LAM) for th in thetas]) < 1e-12
    assert rel_err(H, np.mean([hess_np(X, y, th, ETA, LAM) for th in thetas], axis=0)) < 1e-12
    # and the compiled driver gives the same (BLAS vs loops: rounding only)
    Gc, Hc = model_with(X, y).grads_hessian(thetas)
    assert rel_err(Gc, G) < 1e-13 and rel_err(Hc, H) < 1e-13
    # want_hessian=False leaves H untouched
    H[:] = -7.0
    klog.logistic_grads_hessian(X, y, thetas, ETA, LAM, False, Z, wbar, Xw, G, H)
    assert np.all(H == -7.0)


def test_python_scalars_match_scipy():
    z = np.array([-800.0, -700.0, -40.0, -1.0, -1e-12, 0.0, 1e-12, 1.0, 40.0, 700.0, 800.0])
    for zi in z:
        assert kscal.sigmoid(zi) == pytest.approx(expit(zi), rel=1e-15, abs=0)
        assert kscal.softplus(zi) == pytest.approx(np.logaddexp(0.0, zi), rel=1e-15, abs=0)
        for yi in (0.0, 1.0):
            r, w = kscal.residual_weight(zi, yi)
            assert r == pytest.approx(expit(zi) - yi if yi == 0 else -expit(-zi), rel=1e-15,
                                      abs=0)
            assert w == pytest.approx(expit(zi) * expit(-zi), rel=1e-14, abs=0)


# --------------------------------------------------------------------------- history buffers


def test_buffer_growth_identical_results(data):
    X, y, thetas = data
    small = Logistic(4, eta=ETA, lam=LAM, capacity=4)
    big = Logistic(4, eta=ETA, lam=LAM, capacity=1024)
    caps = []
    sigs = None
    for lo, hi in [(0, 3), (3, 4), (4, 9), (9, 10), (10, 60)]:
        small.add(X[lo:hi], y[lo:hi])
        big.add(X[lo:hi], y[lo:hi])
        caps.append(small._X.shape[0])
        G1, H1 = small.grads_hessian(thetas)
        G2, H2 = big.grads_hessian(thetas)
        assert np.array_equal(G1, G2) and np.array_equal(H1, H2)
        assert small.value(thetas[0]) == big.value(thetas[0])
        if sigs is None:  # compiled specialisations after the first call
            sigs = len(_driver().signatures)
    # doubling: 4 -> 4 -> 8 -> 16 -> 64 (3 + 1 fits, then 9 > 4, 10 > 8, 60 > 16)
    assert caps == [4, 4, 16, 16, 64]
    assert np.array_equal(small.X, X) and np.array_equal(small.y, y) and small.n_obs == 60
    # no new compiled specialisation as the history grew (same dtype, rank and layout)
    assert len(_driver().signatures) == sigs


def _driver():
    """The compiled grads_hessian driver of the logistic potential."""
    from vits_ref.drivers import cpu

    return cpu.grads_hessian(klog.POTENTIAL)


@pytest.mark.parametrize("bad", [0.5, 2.0, -1.0, np.nan, np.inf])
def test_bad_rewards_raise(bad):
    m = Logistic(2)
    m.add(np.ones((1, 2)), np.array([1.0]))
    with pytest.raises(ValueError, match="rewards"):
        m.add(np.ones((3, 2)), np.array([0.0, bad, 1.0]))
    assert m.n_obs == 1  # nothing appended
    # ... and through an engine
    with pytest.raises(ValueError, match="rewards"):
        vr.Laplace(2, model="logistic").update(np.ones((1, 2)), np.array([bad]))


def test_bad_features_raise():
    m = Logistic(2)
    with pytest.raises(ValueError, match="features"):
        m.add(np.array([[1.0, np.nan]]), np.array([1.0]))
    with pytest.raises(ValueError, match="features"):
        m.add(np.ones((1, 3)), np.array([1.0]))
    with pytest.raises(ValueError, match="capacity"):
        Logistic(2, capacity=0)


# --------------------------------------------------------------------------- protocol


def test_protocol_registry_predict_spawn(data):
    X, y, thetas = data
    assert MODELS["logistic"] is Logistic
    m = model_with(X, y, capacity=8)
    assert (m.name, m.dim, m.input_dim, m.eta, m.lam, m.n_obs) == ("logistic", 4, 4, ETA,
                                                                  LAM, 60)
    s = m.spawn(2.0, 3.0)
    assert isinstance(s, Logistic) and (s.eta, s.lam, s.n_obs, s.capacity) == (2.0, 3.0, 0, 8)
    # scores x theta are monotone in sigmoid(x theta): same argmax, same order
    scores = m.predict(thetas[0], X)
    assert np.array_equal(scores, X @ thetas[0])
    assert np.array_equal(np.argsort(scores, kind="stable"),
                          np.argsort(expit(X @ thetas[0]), kind="stable"))
    # engines build it by name
    assert isinstance(vr.Laplace(3, model="logistic").model, Logistic)
