"""BNN regression and classifier (the OPVI paper, sections 5.2-5.3): potentials and gradients.

References: plain-NumPy forward passes with the SVGD reference code's log-posterior (plus
the normalising constants) and SciPy's ``logsumexp``; central finite differences for the
hand-written gradients; naive loops for the ensemble metrics.
"""

import numpy as np
import pytest
from conftest import max_diff_under_cuda_simulator
from scipy import special, stats

from vits_ref.drivers import cpu
from vits_ref.models import BNNClassifier, BNNRegression, accuracy, regression_metrics

EPS = np.finfo(float).eps


def central_diff(f, t, h, coords):
    out = np.empty(len(coords))
    for k, i in enumerate(coords):
        e = np.zeros_like(t)
        e[i] = h
        out[k] = (f(t + e) - f(t - e)) / (2 * h)
    return out


def fd_tolerance(f, t, h, coords, scale):
    """Central-difference error bound: truncation ``h^2/6 |f'''|`` estimated from the steps
    ``h`` and ``2h`` (their difference is 3x the truncation) plus rounding ``eps |f|/h``,
    with a factor 4 margin."""
    trunc = np.abs(central_diff(f, t, h, coords) - central_diff(f, t, 2 * h, coords)) / 3.0
    return 4.0 * (trunc + EPS * scale / h)


# --------------------------------------------------------------------------- regression


def reference_bnn_U(m, theta, X, y, lw=1.0, pw=1.0):
    """The SVGD code's ``log_posterior`` (bayesian_nn.py), negated, with the constants it
    drops (``-a0 log b0 + lgamma(a0)`` per Gamma prior) and the weights of the hook."""
    b = m.unpack(theta)
    lg, ll = b["log_gamma"], b["log_lambda"]
    f = np.maximum(X @ b["W1"].T + b["b1"], 0.0) @ b["w2"] + b["b2"]
    n, D = X.shape[0], m.dim - 2
    a0, b0 = m.a0, m.b0
    log_lik = -0.5 * n * (np.log(2 * np.pi) - lg) - np.exp(lg) / 2 * np.sum((f - y) ** 2)
    w = theta[:-2]
    log_prior_w = -0.5 * D * (np.log(2 * np.pi) - ll) - np.exp(ll) / 2 * np.sum(w ** 2)
    log_gam = [stats.gamma.logpdf(np.exp(t), a0, scale=1 / b0) + t for t in (lg, ll)]
    return -(lw * log_lik + pw * (log_prior_w + sum(log_gam)))


@pytest.fixture(scope="module")
def reg():
    rng = np.random.default_rng(5)
    m = BNNRegression(4, hidden=6, chunk=5)  # chunk 5 < n: the chunked passes are used
    X = rng.standard_normal((13, 4))
    y = rng.standard_normal(13)
    m.add(X, y)
    thetas = m.init_particles(3, seed=2, X=X, y=y)
    return m, X, y, thetas


def test_bnn_value_matches_reference(reg):
    m, X, y, thetas = reg
    for t in thetas:
        ref = reference_bnn_U(m, t, X, y)
        assert abs(m.value(t) - ref) <= 1e-11 * abs(ref)


def test_bnn_gradient_matches_finite_differences(reg):
    m, X, y, thetas = reg
    coords = list(range(m.dim))
    for t in thetas:
        g = m.grad(t)
        h = 1e-5
        fd = central_diff(m.value, t, h, coords)
        tol = fd_tolerance(m.value, t, h, coords, abs(m.value(t)))
        assert np.all(np.abs(g - fd) <= tol + 1e-12), np.max(np.abs(g - fd) - tol)
        assert np.median(tol / (1 + np.abs(g))) < 1e-6  # the check has teeth


def test_bnn_minibatch_and_batch_rows(reg):
    m, X, y, thetas = reg
    idx = np.array([0, 4, 4, 12])
    d = m.minibatch_data(idx, like_weight=13 / 4, prior_weight=0.3)
    scr = m.kernel_scratch(3)
    u = cpu.value(m.potential)(d, thetas[0], scr)
    ref = reference_bnn_U(m, thetas[0], X[idx], y[idx], lw=13 / 4, pw=0.3)
    assert abs(u - ref) <= 1e-11 * abs(ref)
    G = np.empty_like(thetas)
    cpu.grads_hessian(m.potential)(d, thetas, False, G, np.empty((1, 1)), scr)
    # the hook's gradient is the weighted sum of the data and prior gradients
    full = m.minibatch_data(idx, 1.0, 0.0)
    prior = m.minibatch_data(np.array([], dtype=np.int64), 0.0, 1.0)
    Gl, Gp = np.empty_like(G), np.empty_like(G)
    cpu.grads_hessian(m.potential)(full, thetas, False, Gl, np.empty((1, 1)), scr)
    cpu.grads_hessian(m.potential)(prior, thetas, False, Gp, np.empty((1, 1)), scr)
    assert np.allclose(G, 13 / 4 * Gl + 0.3 * Gp, rtol=1e-12, atol=1e-10)
    # rows independent of the batch they come in, and of the scratch's row count
    Gall = m.grads_hessian(thetas)[0]
    for j in range(3):
        assert np.array_equal(Gall[j], m.grad(thetas[j]))


def test_bnn_chunk_invariance(reg):
    m, X, y, thetas = reg
    big = BNNRegression(4, hidden=6, chunk=256)
    big.add(X, y)
    assert np.allclose(big.grads_hessian(thetas)[0], m.grads_hessian(thetas)[0], rtol=1e-12,
                       atol=1e-11)
    assert np.allclose(big.predict(thetas[0], X), m.predict(thetas[0], X), rtol=1e-14)


def test_bnn_layout_init_and_errors(reg):
    m, X, y, thetas = reg
    assert BNNRegression(8).dim == 50 * 10 + 3  # Kin8nm's network: 503 parameters
    b = m.unpack(thetas[0])
    assert b["W1"].shape == (6, 4) and b["w2"].shape == (6,)
    assert np.all(b["b1"] == 0) and b["b2"] == 0.0
    # log gamma set from the particle's residuals (the SVGD code's start)
    f = m.predict(thetas[0], X)
    assert abs(b["log_gamma"] + np.log(np.mean((f - y) ** 2))) < 1e-12
    with pytest.raises(NotImplementedError, match="Hessian"):
        m.hess(thetas[0])
    with pytest.raises(ValueError, match="theta"):
        m.value(np.zeros(3))
    with pytest.raises(ValueError, match="features"):
        m.add(np.ones((2, 3)), np.ones(2))
    s = m.spawn(2.0, 1.0)
    assert s.n_obs == 0 and s.dim == m.dim and s.eta == 2.0


def test_regression_metrics_against_loops(reg):
    m, X, y, thetas = reg
    y_mean, y_std = 3.0, 0.4
    y_orig = y_mean + y_std * y
    rmse, ll = regression_metrics(m, thetas, X, y_orig, y_mean=y_mean, y_std=y_std)
    F = np.array([[m.predict(t, X[s:s + 1])[0] for s in range(X.shape[0])] for t in thetas])
    pred = (y_mean + y_std * F).mean(axis=0)
    assert abs(rmse - np.sqrt(np.mean((pred - y_orig) ** 2))) < 1e-12
    dens = np.mean([stats.norm.pdf(y_orig, y_mean + y_std * F[k],
                                   y_std / np.sqrt(np.exp(thetas[k, -2])))
                    for k in range(3)], axis=0)
    assert abs(ll - np.mean(np.log(dens))) < 1e-12
    _, ll_code = regression_metrics(m, thetas, X, y_orig, y_mean, y_std, convention="svgd_code")
    dens = np.mean([stats.norm.pdf(y_orig, y_mean + y_std * F[k],
                                   1 / np.sqrt(np.exp(thetas[k, -2]))) for k in range(3)], axis=0)
    assert abs(ll_code - np.mean(np.log(dens))) < 1e-12
    # far-off test points: log-sum-exp keeps the log-likelihood finite
    _, ll_far = regression_metrics(m, thetas, X, y_orig + 1e4, y_mean, y_std)
    assert np.isfinite(ll_far) and ll_far < -1e6
    with pytest.raises(ValueError, match="convention"):
        regression_metrics(m, thetas, X, y_orig, convention="paper")


def test_regression_metrics_scalar_statistics(reg):
    """``y_mean``/``y_std`` as the experiments pass them: plain floats (``float(y.mean())``),
    NumPy scalars, ints or 0-D arrays all give the same numbers; a shape-(1,) array, a
    bool, a string or a non-finite value is refused naming the argument."""
    m, X, y, thetas = reg
    y_orig = 3.0 + 0.4 * y
    want = regression_metrics(m, thetas, X, y_orig, 3.0, 0.4)
    for mean, std in ((np.float64(3.0), np.float64(0.4)), (np.array(3.0), np.array(0.4)),
                      (3, 0.4), (np.float32(3.0), 0.4)):
        got = regression_metrics(m, thetas, X, y_orig, mean, std)
        # float32(3.0) and int 3 are exactly 3.0: bit-identical results
        assert got == want, (mean, std)
    for bad, exc in ((np.array([3.0]), TypeError), (True, TypeError), ("3", TypeError),
                     (np.array(1 + 2j), TypeError), (np.nan, ValueError)):
        with pytest.raises(exc, match="y_mean"):
            regression_metrics(m, thetas, X, y_orig, bad, 0.4)
    for bad, exc in ((np.array([0.4]), TypeError), (0.0, ValueError), (np.inf, ValueError)):
        with pytest.raises(exc, match="y_std"):
            regression_metrics(m, thetas, X, y_orig, 3.0, bad)


# --------------------------------------------------------------------------- classifier


def reference_classifier_U(m, theta, X, y, lw=1.0, pw=1.0):
    b = m.unpack(theta)
    a = special.expit(X @ b["W1"].T + b["b1"])
    z = a @ b["W2"].T + b["b2"]
    nll = np.sum(special.logsumexp(z, axis=1) - z[np.arange(len(y)), y.astype(int)])
    prior = 0.5 * m.alpha * theta @ theta + 0.5 * m.dim * np.log(2 * np.pi / m.alpha)
    return lw * nll + pw * prior


@pytest.fixture(scope="module")
def clf():
    rng = np.random.default_rng(8)
    m = BNNClassifier(5, n_classes=3, hidden=7, alpha=0.8, chunk=4)
    X = rng.standard_normal((11, 5))
    y = rng.integers(0, 3, 11).astype(float)
    m.add(X, y)
    thetas = 0.7 * rng.standard_normal((3, m.dim))
    return m, X, y, thetas


def test_classifier_value_and_gradient(clf):
    m, X, y, thetas = clf
    coords = list(range(m.dim))
    for t in thetas:
        ref = reference_classifier_U(m, t, X, y)
        assert abs(m.value(t) - ref) <= 1e-12 * abs(ref)
        g = m.grad(t)
        h = 1e-5
        fd = central_diff(m.value, t, h, coords)
        tol = fd_tolerance(m.value, t, h, coords, abs(ref))
        assert np.all(np.abs(g - fd) <= tol + 1e-12)
        assert np.median(tol / (1 + np.abs(g))) < 1e-6


def test_classifier_minibatch_probs_and_accuracy(clf):
    m, X, y, thetas = clf
    idx = np.array([1, 2, 10])
    d = m.minibatch_data(idx, like_weight=11 / 3, prior_weight=0.5)
    u = cpu.value(m.potential)(d, thetas[1], m.kernel_scratch())
    assert abs(u - reference_classifier_U(m, thetas[1], X[idx], y[idx], 11 / 3, 0.5)) \
        <= 1e-12 * abs(u)
    P = m.predict_particles(thetas, X)
    assert P.shape == (3, 11, 3) and np.allclose(P.sum(axis=2), 1.0, rtol=0, atol=1e-14)
    for k, t in enumerate(thetas):
        b = m.unpack(t)
        z = special.expit(X @ b["W1"].T + b["b1"]) @ b["W2"].T + b["b2"]
        assert np.allclose(P[k], special.softmax(z, axis=1), rtol=1e-13, atol=1e-15)
    acc = accuracy(m, thetas, X, y)
    assert acc == np.mean(np.argmax(P.mean(axis=0), axis=1) == y)
    out = np.empty(11)
    cpu.predict(m.potential)(m.kernel_data(), thetas[0], X, out, m.kernel_scratch())
    assert np.allclose(out, P[0, :, 2], rtol=1e-14)


def test_classifier_extreme_logits_and_errors(clf):
    m, X, y, thetas = clf
    t = thetas[0] * 1e4  # saturated sigmoids, logits ~1e5: still finite
    assert np.isfinite(m.value(t)) and np.all(np.isfinite(m.grad(t)))
    with pytest.raises(ValueError, match="labels"):
        m.add(np.ones((1, 5)), np.array([3.0]))
    with pytest.raises(ValueError, match="labels"):
        m.add(np.ones((1, 5)), np.array([0.5]))
    with pytest.raises(ValueError, match="n_classes"):
        BNNClassifier(3, n_classes=1)
    assert BNNClassifier(64, n_classes=10).dim == 100 * 65 + 10 * 101


CUDA_SCRIPT = """
import numpy as np
from numba import cuda
from vits_ref.config import cuda_jit
from vits_ref.kernels import bnn, classifier
from vits_ref.models import BNNClassifier, BNNRegression

def launcher(row):
    @cuda_jit
    def k(data, thetas, G, A, D, out, gtmp):
        m = cuda.grid(1)
        if m < thetas.shape[0]:
            row(data, thetas[m], True, G[m], A[m], D[m], out[m], gtmp[m])
    return k

def dev(t):
    return tuple(cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                 for a in t)

rng = np.random.default_rng(0)
worst = 0.0
for model, row in ((BNNRegression(3, hidden=4, chunk=4), bnn.bnn_row),
                   (BNNClassifier(3, n_classes=3, hidden=4, chunk=4), classifier.classifier_row)):
    X = rng.standard_normal((6, 3))
    y = rng.integers(0, 3, 6).astype(float)
    model.add(X, y)
    thetas = 0.5 * rng.standard_normal((3, model.dim))
    ref = model.grads_hessian(thetas)[0]
    G = np.zeros_like(thetas)
    scr = model.kernel_scratch(3)
    launcher(row)[1, 4](dev(model.kernel_data()), thetas, G, *scr)
    worst = max(worst, float(np.max(np.abs(G - ref) / (1 + np.abs(ref)))))
print("MAXDIFF", worst)
"""


def test_cuda_bodies_under_simulator():
    # CPU products are BLAS, the simulator runs the loops of kernels/linalg.py: the same
    # sums in another order, a few ulps at these sizes
    assert max_diff_under_cuda_simulator(CUDA_SCRIPT) < 1e-12


def test_spawn_and_repr_keep_the_shape_and_prior():
    """spawn (NetworkModel's, for both network models) gives a model of the same class,
    shape, prior, capacity and chunk with the new eta and lam and no data; repr names the
    shape and prior arguments."""
    m = BNNRegression(3, hidden=4, a0=2.0, b0=0.5, eta=1.5, capacity=4, chunk=8)
    m.add(np.ones((2, 3)), np.array([0.5, -0.5]))
    c = BNNClassifier(3, n_classes=4, hidden=5, alpha=2.0, capacity=4, chunk=16)
    for model, args in ((m, "input_dim=3, hidden=4, a0=2.0, b0=0.5"),
                        (c, "input_dim=3, n_classes=4, hidden=5, alpha=2.0")):
        s = model.spawn(0.5, 2.0)
        assert type(s) is type(model) and s.n_obs == 0 and s.dim == model.dim
        assert (s.eta, s.lam, s.capacity, s.chunk) == (0.5, 2.0, 4, model.chunk)
        assert s.layout == model.layout
        assert repr(s) == f"{type(model).__name__}({args}, eta=0.5)"
