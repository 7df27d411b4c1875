"""The MLP potential (docs/algorithms.md section 2): layout, value, back-propagation,
Jacobian, Gauss-Newton, general prior, history buffers, errors, and the kernel bodies run
as plain Python, for networks of depth 1, 2 and 3.

The plain-NumPy reference is :mod:`vits_ref.reference.mlp` (vectorised forward pass,
explicit Jacobian); it is checked itself against central finite differences here. Most
tests use tiny networks (p = 3, hidden (4, 5): 47 parameters); one runs at the paper's 861.
"""

import numpy as np
import pytest
from numba import njit
from vits_ref.kernels import mlp as km

import vits_ref as vr
from vits_ref.drivers import cpu
from vits_ref.models import MLP
from vits_ref.reference import mlp as ref

P, H1, H2 = 3, 4, 5
HID = (H1, H2)
ETA, LAM = 2.0, 0.5  # not 1: a confusion of eta with lam, or a missing eta, shows
DEPTHS = [(4,), (H1, H2), (4, 3, 5)]  # depth 1, 2 (the paper's shape) and 3


# ---------------------------------------------------------------------------------------
# the plain NumPy reference (vits_ref.reference.mlp), with this file's defaults
# ---------------------------------------------------------------------------------------

def ref_forward(theta, X, hidden=HID):
    """Outputs and pre-activations ``(g, [z_1, ..., z_L])`` for the rows of ``X``."""
    g, Z, _ = ref.forward(theta, X, hidden)
    return g, Z


def ref_value(theta, X, r, eta=ETA, lam=LAM, hidden=HID):
    return ref.value(X, r, theta, eta, lam, hidden)


def ref_jacobian(theta, X, hidden=HID):
    return ref.jacobian(theta, X, hidden)


def away_from_kinks(theta, X, margin=0.05, hidden=HID):
    """The rows of ``X`` whose pre-activations all satisfy ``|z| > margin``.

    A finite-difference step ``h = 1e-5`` moves any pre-activation by at most about
    ``h (1 + |x| + |a|) |weights| depth`` < 1e-3 here, so no ReLU mask flips inside the
    stencil and the potential is a polynomial along it.
    """
    _, Z = ref_forward(theta, X, hidden)
    keep = np.ones(X.shape[0], dtype=bool)
    for z in Z:
        keep &= np.abs(z).min(axis=1) > margin
    return X[keep]


def fitted(hidden, seed=314, n=60, **kw):
    """A tiny MLP with data away from every ReLU kink: (model, theta, X, r)."""
    rng = np.random.default_rng(seed)
    m = MLP(P, hidden=hidden, eta=ETA, lam=LAM, **kw)
    theta = m.init(rng) + 0.3 * rng.standard_normal(m.dim)  # non-zero biases too
    X = away_from_kinks(theta, rng.standard_normal((n, P)), hidden=hidden)
    assert X.shape[0] >= 20
    r = ref_forward(theta, X, hidden)[0] ** 2 + rng.standard_normal(X.shape[0])
    m.add(X, r)
    return m, theta, X, r


@pytest.fixture
def tiny():
    """A fitted tiny MLP: (model, theta, X, r), 20+ rows away from every ReLU kink."""
    return fitted(HID)


def central_diff(f, theta, h):
    out = []
    for k in range(theta.shape[0]):
        e = np.zeros_like(theta)
        e[k] = h
        out.append((np.asarray(f(theta + e)) - np.asarray(f(theta - e))) / (2 * h))
    return np.array(out)


# ---------------------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------------------

def test_paper_size_and_layout():
    m = MLP(20)
    assert m.name == "mlp" and m.input_dim == 20 and m.hidden == (20, 20)
    assert m.dim == 20 * 20 + 20 + 20 * 20 + 20 + 20 + 1 == 861 == km.n_params(20, (20, 20))
    assert [(k, v[0], v[1]) for k, v in m.layout.items()] == [
        ("W1", 0, 400), ("b1", 400, 420), ("W2", 420, 820), ("b2", 820, 840),
        ("w3", 840, 860), ("b3", 860, 861)]
    assert vr.models.MLP is MLP and "MLP" in vr.models.__all__
    assert vr.models.MODELS["mlp"] is MLP
    assert m.layout == km.layout(20, (20, 20))  # the one definition of the layout


def test_flat_layout_round_trip(rng):
    m = MLP(P, hidden=(H1, H2))
    theta = rng.standard_normal(m.dim)
    blocks = m.unpack(theta)
    assert [k for k in blocks] == ["W1", "b1", "W2", "b2", "w3", "b3"]
    assert blocks["W1"].shape == (H1, P) and blocks["W2"].shape == (H2, H1)
    # row-major: W1[i, j] is theta[i p + j]; W2 starts after W1 and b1
    assert blocks["W1"][2, 1] == theta[2 * P + 1]
    assert blocks["W2"][3, 2] == theta[H1 * P + H1 + 3 * H1 + 2]
    assert blocks["b3"] == theta[-1]
    assert np.shares_memory(blocks["W2"], theta)
    assert np.array_equal(m.pack(**blocks), theta)
    for got, want in zip(blocks.values(), ref.unpack(theta, P, HID).values(), strict=True):
        assert np.array_equal(got, want)
    assert np.array_equal(m.pack(*blocks.values()), theta)  # by position too
    with pytest.raises(ValueError, match="W2 must have shape"):
        m.pack(**{**blocks, "W2": np.zeros((H1, H2))})


def test_init_he_scaled(rng):
    m = MLP(20)
    a, b = m.init(7), m.init(np.random.default_rng(7))
    assert np.array_equal(a, b)
    blk = m.unpack(a)
    for name in ("b1", "b2"):
        assert not blk[name].any()
    assert blk["b3"] == 0.0
    # 400 entries: the sample variance has relative SE sqrt(2/400) = 7%; 5 SE = 35%
    assert blk["W1"].var() == pytest.approx(2 / 20, rel=0.35)
    assert blk["W2"].var() == pytest.approx(2 / 20, rel=0.35)


# ---------------------------------------------------------------------------------------
# value, gradient, Jacobian, Gauss-Newton
# ---------------------------------------------------------------------------------------

def test_value_and_predict_match_numpy_forward(tiny, rng):
    m, theta, X, r = tiny
    # a few dozen products of O(1) numbers summed in another order: ~1e-15 relative
    assert m.value(theta) == pytest.approx(ref_value(theta, X, r), rel=1e-13)
    C = rng.standard_normal((7, P))
    assert np.allclose(m.predict(theta, C), ref_forward(theta, C)[0], rtol=1e-13, atol=1e-14)
    v, g = m.value_grad(theta)
    assert v == m.value(theta) and np.array_equal(g, m.grad(theta))


def test_gradient_vs_central_differences(tiny):
    m, theta, X, r = tiny
    h = 1e-5
    fd = central_diff(lambda t: ref_value(t, X, r), theta, h)
    g = m.grad(theta)
    # Along the stencil U is a polynomial of degree 6 (no mask flips, see away_from_kinks).
    # Rounding: the two values carry ~ 2 eps |U| each, divided by 2h: 2 eps |U| / h
    # (|U| ~ 120: 5e-9). Truncation h^2/6 |U'''|: measured below the rounding already at
    # h = 1e-4, so < 1e-12 here. Measured error 1.5e-9; the bound allows 100x the rounding.
    tol = 100 * 2 * np.finfo(float).eps * abs(m.value(theta)) / h
    assert np.abs(g - fd).max() < tol
    # and the gradient formula itself: eta (J^T e + lam theta)
    e = ref_forward(theta, X)[0] - r
    assert np.allclose(g, ETA * (ref_jacobian(theta, X).T @ e + LAM * theta), rtol=1e-12,
                       atol=1e-12 * np.abs(g).max())


def test_jacobian_vs_central_differences(tiny):
    m, theta, X, r = tiny
    h = 1e-5
    fd = central_diff(lambda t: ref_forward(t, X)[0], theta, h).T  # (n, d)
    J = m.jacobian(theta)
    # outputs are cubic in theta along the stencil (truncation negligible, as above);
    # rounding 2 eps |g(x)| / h with |g(x)| <= ~10 here: 5e-10. Measured 2.4e-11.
    gmax = np.abs(ref_forward(theta, X)[0]).max()
    assert np.abs(J - fd).max() < 100 * 2 * np.finfo(float).eps * max(1.0, gmax) / h
    assert np.allclose(J, ref_jacobian(theta, X), rtol=1e-14, atol=1e-14)
    assert np.array_equal(J[:, -1], np.ones(X.shape[0]))  # the b3 column
    C = X[:3] + 0.01
    assert np.allclose(m.jacobian(theta, C), ref_jacobian(theta, C), rtol=1e-14, atol=1e-14)


def test_gauss_newton_vs_explicit_jacobian(tiny, rng):
    m, theta, X, r = tiny
    J = ref_jacobian(theta, X)
    want = ETA * (J.T @ J + LAM * np.eye(m.dim))
    H = m.hess(theta)
    # n = 20-60 products per entry: rounding ~1e-15 relative to |J|^2
    assert np.abs(H - want).max() < 1e-12 * np.abs(want).max()
    assert np.array_equal(H, H.T)
    assert np.linalg.eigvalsh(H).min() >= ETA * LAM * (1 - 1e-10)  # positive definite
    # the mean over M = 3 draws, and their gradients
    thetas = theta + 0.1 * rng.standard_normal((3, m.dim))
    G, Hm = m.grads_hessian(thetas)
    Js = [ref_jacobian(t, X) for t in thetas]
    want = ETA * (sum(j.T @ j for j in Js) / 3 + LAM * np.eye(m.dim))
    assert np.abs(Hm - want).max() < 1e-12 * np.abs(want).max()
    for t, gm in zip(thetas, G, strict=True):
        assert np.allclose(gm, m.grad(t), rtol=0, atol=1e-13 * np.abs(gm).max())
    G2, none = m.grads_hessian(thetas, want_hessian=False)
    assert none is None and np.array_equal(G2, G)


def test_relu_kink_uses_left_derivative():
    """At ``z = 0`` exactly the kernels use relu'(0) = 0: the left derivative."""
    m = MLP(2, hidden=(2, 2), eta=1.0, lam=1.0)
    blk = m.unpack(np.ones(m.dim))
    blk["b1"][:] = [0.0, 1.0]          # x = 0 puts unit 0 of layer 1 exactly at its kink
    theta = m.pack(**blk)
    x = np.zeros((1, 2))
    k_b1 = m.layout["b1"][0]           # column of b1[0]
    J = m.jacobian(theta, x)
    assert J[0, k_b1] == 0.0
    assert np.array_equal(J, ref_jacobian(theta, x, (2, 2)))
    h = 1e-6
    up, down = theta.copy(), theta.copy()
    up[k_b1] += h
    down[k_b1] -= h
    g0 = m.predict(theta, x)[0]
    right = (m.predict(up, x)[0] - g0) / h
    left = (g0 - m.predict(down, x)[0]) / h
    assert left == 0.0 and right == pytest.approx(2.0)  # w3 . W2[:, 0] = 1 + 1


def test_no_data_is_the_prior(rng):
    m = MLP(P, hidden=(H1, H2), eta=ETA, lam=LAM)
    theta = rng.standard_normal(m.dim)
    assert m.n_obs == 0
    assert m.value(theta) == pytest.approx(0.5 * ETA * LAM * theta @ theta, rel=1e-14)
    G, H = m.grads_hessian(np.vstack([theta, -theta]))
    assert np.allclose(G, ETA * LAM * np.vstack([theta, -theta]), rtol=1e-15)
    assert np.array_equal(H, ETA * LAM * np.eye(m.dim))


def test_nonfinite_theta_propagates(tiny):
    m, theta, _, _ = tiny
    bad = theta.copy()
    bad[5] = np.nan
    G, H = m.grads_hessian(np.vstack([theta, bad]))
    assert np.all(np.isfinite(G[0])) and not np.all(np.isfinite(G[1]))


# ---------------------------------------------------------------------------------------
# history buffers and chunks
# ---------------------------------------------------------------------------------------

def test_buffer_growth_equivalence(rng):
    X = rng.standard_normal((41, P))
    r = rng.standard_normal(41)
    whole = MLP(P, hidden=(H1, H2), eta=ETA, lam=LAM)
    whole.add(X, r)
    grown = MLP(P, hidden=(H1, H2), eta=ETA, lam=LAM, capacity=2)
    theta = whole.init(3)
    grown.grads_hessian(theta[None])  # compiled once before any growth
    n_sigs = len(cpu.grads_hessian(km.POTENTIAL).signatures)
    caps = []
    for a, b in [(0, 1), (1, 2), (2, 5), (5, 6), (6, 30), (30, 41)]:
        grown.add(X[a:b], r[a:b])
        caps.append(grown._X.shape[0])
        grown.grads_hessian(theta[None])
    assert caps == [2, 2, 8, 8, 32, 64]  # doubling, never per round
    assert len(cpu.grads_hessian(km.POTENTIAL).signatures) == n_sigs  # no recompiling
    assert grown.n_obs == 41
    assert np.array_equal(grown.features, X) and np.array_equal(grown.rewards, r)
    for a, b in zip(grown.grads_hessian(theta[None]), whole.grads_hessian(theta[None]),
                    strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("chunk", [1, 7, 41, 1000])
def test_chunked_passes_agree(rng, chunk):
    X = rng.standard_normal((41, P))
    r = rng.standard_normal(41)
    ref = MLP(P, hidden=(H1, H2), eta=ETA, lam=LAM)
    m = MLP(P, hidden=(H1, H2), eta=ETA, lam=LAM, chunk=chunk)
    ref.add(X, r)
    m.add(X, r)
    thetas = ref.init(0) + 0.2 * rng.standard_normal((2, ref.dim))
    G, H = m.grads_hessian(thetas)
    G0, H0 = ref.grads_hessian(thetas)
    # the same sums, grouped differently: rounding only
    assert np.abs(G - G0).max() < 1e-12 * np.abs(G0).max()
    assert np.abs(H - H0).max() < 1e-12 * np.abs(H0).max()
    C = rng.standard_normal((50, P))  # more contexts than a small chunk
    assert np.allclose(m.predict(thetas[0], C), ref.predict(thetas[0], C), rtol=1e-14,
                       atol=1e-14)


# ---------------------------------------------------------------------------------------
# the protocol's shapes and errors
# ---------------------------------------------------------------------------------------

def test_predict_shapes_and_spawn(tiny, rng):
    m, theta, X, r = tiny
    assert m.predict(theta, rng.standard_normal((1, P))).shape == (1,)
    assert m.predict(theta, rng.standard_normal((300, P))).shape == (300,)
    assert m.predict(list(theta), X[:4].tolist()).shape == (4,)
    s = m.spawn(5.0, 0.1)
    assert (s.input_dim, s.hidden, s.dim, s.eta, s.lam, s.n_obs) == (P, (H1, H2), m.dim,
                                                                      5.0, 0.1, 0)
    assert s.value(theta) == pytest.approx(0.5 * 5.0 * 0.1 * theta @ theta)


def test_shape_mismatch_errors(tiny):
    m, theta, X, r = tiny
    with pytest.raises(ValueError, match="features must have 3 columns"):
        m.add(np.zeros((2, 4)), np.zeros(2))
    with pytest.raises(ValueError, match="features contains NaN"):
        m.add(np.full((2, 3), np.nan), np.zeros(2))
    with pytest.raises(ValueError, match="rewards has 3 entries"):
        m.add(np.zeros((2, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="rewards contains NaN"):
        m.add(np.zeros((1, 3)), [np.inf])
    for f in (m.value, m.grad, m.hess):
        with pytest.raises(ValueError, match="theta must be a flat vector of length dim = 47"):
            f(theta[:-1])
    with pytest.raises(ValueError, match="theta"):
        m.predict(theta[None], X)
    with pytest.raises(ValueError, match="thetas must have shape"):
        m.grads_hessian(np.zeros((2, 46)))
    with pytest.raises(ValueError, match="thetas must be 2-D"):
        m.grads_hessian(theta)
    with pytest.raises(ValueError, match="contexts must have 3 columns"):
        m.predict(theta, np.zeros((2, 20)))
    assert m.n_obs == X.shape[0]  # nothing was added by the failed calls
    with pytest.raises(TypeError, match="hidden"):
        MLP(3, hidden=20)
    with pytest.raises(ValueError, match="input_dim"):
        MLP(0)
    with pytest.raises(ValueError, match="lam"):
        MLP(3, lam=0.0)


# ---------------------------------------------------------------------------------------
# any depth: 1, 2 and 3 hidden layers
# ---------------------------------------------------------------------------------------

def test_layout_any_depth(rng):
    m = MLP(P, hidden=(4, 3, 5))
    assert m.hidden == (4, 3, 5)
    assert m.dim == (4 * 3 + 4) + (3 * 4 + 3) + (5 * 3 + 5) + 5 + 1 == 57
    assert m.dim == km.n_params(P, (4, 3, 5))
    assert [(k, v[0], v[1], v[2]) for k, v in m.layout.items()] == [
        ("W1", 0, 12, (4, 3)), ("b1", 12, 16, (4,)), ("W2", 16, 28, (3, 4)),
        ("b2", 28, 31, (3,)), ("W3", 31, 46, (5, 3)), ("b3", 46, 51, (5,)),
        ("w4", 51, 56, (5,)), ("b4", 56, 57, ())]
    one = MLP(P, hidden=(4,))
    assert list(one.layout) == ["W1", "b1", "w2", "b2"] and one.dim == 4 * 3 + 4 + 4 + 1
    assert MLP(20, hidden=(50,)).dim == 50 * 20 + 50 + 50 + 1
    assert MLP(20, hidden=[20, 20]).hidden == (20, 20)  # a list is accepted, kept as tuple
    assert MLP(20, hidden=np.array([20, 20])).dim == 861
    theta = rng.standard_normal(m.dim)
    blocks = m.unpack(theta)
    assert np.array_equal(m.pack(**blocks), theta)
    for got, want in zip(blocks.values(), ref.unpack(theta, P, m.hidden).values(),
                         strict=True):
        assert np.array_equal(got, want)
    assert blocks["W3"][4, 2] == theta[31 + 4 * 3 + 2]  # row-major
    with pytest.raises(TypeError, match="pack needs exactly the blocks"):
        m.pack(**{k: v for k, v in blocks.items() if k != "W3"})


def test_init_draw_order_and_depth():
    """He-normal hidden weights, N(0, 1/h_L) output weights, zero biases; the two-layer
    network draws W1, W2, w3 in that order (results unchanged from the fixed-depth MLP)."""
    m = MLP(P, hidden=(H1, H2))
    gen = np.random.default_rng(7)
    want = m.pack(W1=gen.standard_normal((H1, P)) * np.sqrt(2.0 / P), b1=np.zeros(H1),
                  W2=gen.standard_normal((H2, H1)) * np.sqrt(2.0 / H1), b2=np.zeros(H2),
                  w3=gen.standard_normal(H2) * np.sqrt(1.0 / H2), b3=0.0)
    assert np.array_equal(m.init(7), want)
    deep = MLP(20, hidden=(40, 40, 40))
    blk = deep.unpack(deep.init(3))
    for name in ("b1", "b2", "b3"):
        assert not blk[name].any()
    assert blk["b4"] == 0.0
    # 1600 entries: the sample variance has relative SE sqrt(2/1600) = 3.5%; 5 SE = 18%
    # (W1: 800 entries, SE 5%, 5 SE = 25%; w4: 40 entries, SE 22%: only a loose check)
    assert blk["W1"].var() == pytest.approx(2 / 20, rel=0.25)
    assert blk["W2"].var() == pytest.approx(2 / 40, rel=0.18)
    assert blk["W3"].var() == pytest.approx(2 / 40, rel=0.18)
    assert blk["w4"].var() == pytest.approx(1 / 40, rel=0.9)


@pytest.mark.parametrize("hidden", DEPTHS)
def test_depth_gradient_vs_central_differences(hidden):
    m, theta, X, r = fitted(hidden)
    h = 1e-5
    fd = central_diff(lambda t: ref_value(t, X, r, hidden=hidden), theta, h)
    g = m.grad(theta)
    # No mask flips inside the stencil (away_from_kinks), so U is a polynomial along it
    # (degree 2 (L + 1)). Rounding: 2 eps |U| / h (|U| ~ 35-120 here). Truncation
    # h^2/6 |U'''| is below it: the measured error grows 10x from h = 1e-4 to 1e-5 (as
    # rounding does; truncation would shrink 100x) and is 0.6-1.5e-9 at h = 1e-5, 1/250
    # of the bound, which allows 100x the rounding, as for two layers.
    tol = 100 * 2 * np.finfo(float).eps * abs(m.value(theta)) / h
    assert np.abs(g - fd).max() < tol
    # the formula itself, against the explicit reference Jacobian: same sums reordered
    e = ref.outputs(theta, X, hidden) - r
    want = ETA * (ref_jacobian(theta, X, hidden).T @ e + LAM * theta)
    assert np.allclose(g, want, rtol=1e-12, atol=1e-12 * np.abs(g).max())
    assert m.value(theta) == pytest.approx(ref_value(theta, X, r, hidden=hidden), rel=1e-13)
    v, g2 = m.value_grad(theta)
    assert v == m.value(theta) and np.array_equal(g2, g)


@pytest.mark.parametrize("hidden", DEPTHS)
def test_depth_jacobian_vs_central_differences(hidden, rng):
    m, theta, X, r = fitted(hidden)
    h = 1e-5
    fd = central_diff(lambda t: ref.outputs(t, X, hidden), theta, h).T  # (n, d)
    J = m.jacobian(theta)
    # outputs are polynomials of degree L + 1 along the stencil (no mask flips); rounding
    # 2 eps |g(x)| / h ~ 4e-11 for |g| <= 1.4 here (measured 1.2-2.4e-11, growing 10x
    # from h = 1e-4 to 1e-5: rounding, not truncation). 100x that bound, as for 2 layers.
    gmax = np.abs(ref.outputs(theta, X, hidden)).max()
    tol = 100 * 2 * np.finfo(float).eps * max(1.0, gmax) / h
    assert np.abs(J - fd).max() < tol
    Jr = ref_jacobian(theta, X, hidden)
    assert np.abs(Jr - fd).max() < tol  # the reference itself
    # one product per entry, forward values summed in another order: ~1e-15
    assert np.allclose(J, Jr, rtol=1e-14, atol=1e-14)
    assert np.array_equal(J[:, -1], np.ones(X.shape[0]))
    C = rng.standard_normal((30, P))
    assert np.allclose(m.jacobian(theta, C), ref_jacobian(theta, C, hidden), rtol=1e-14,
                       atol=1e-14)
    assert np.allclose(m.predict(theta, C), ref.outputs(theta, C, hidden), rtol=1e-13,
                       atol=1e-14)


@pytest.mark.parametrize("hidden", DEPTHS)
@pytest.mark.parametrize("chunk", [7, 256])
def test_depth_gauss_newton_vs_reference(hidden, chunk, rng):
    m, theta, X, r = fitted(hidden, chunk=chunk)
    thetas = theta + 0.1 * rng.standard_normal((3, m.dim))
    G, H = m.grads_hessian(thetas)
    Gr, Hr = ref.grads_gauss_newton(X, r, thetas, ETA, LAM, hidden)
    # J^T J from one explicit product against chunked dsyrk: n <= 60 products per entry,
    # rounding ~1e-15 relative to |J|^2
    assert np.abs(H - Hr).max() < 1e-12 * np.abs(Hr).max()
    assert np.abs(G - Gr).max() < 1e-12 * np.abs(Gr).max()
    assert np.array_equal(H, H.T)
    assert np.linalg.eigvalsh(H).min() >= ETA * LAM * (1 - 1e-10)
    J = ref_jacobian(thetas[0], X, hidden)
    want = ETA * (J.T @ J + LAM * np.eye(m.dim))
    assert np.abs(m.hess(thetas[0]) - want).max() < 1e-12 * np.abs(want).max()
    G2, none = m.grads_hessian(thetas, want_hessian=False)
    assert none is None and np.array_equal(G2, G)


# ---------------------------------------------------------------------------------------
# general Gaussian prior N(theta0, Sigma0): 1/2 (theta - theta0)^T P0 (theta - theta0)
# ---------------------------------------------------------------------------------------

def _spd(rng, d):
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    return A @ A.T + 0.5 * np.eye(d)


@pytest.mark.parametrize("hidden", [(4,), (4, 3, 5)])
@pytest.mark.parametrize("dense", [False, True])
def test_general_prior_closed_form(rng, hidden, dense):
    d = km.n_params(P, hidden)
    mean = 0.3 * rng.standard_normal(d)
    cov = _spd(rng, d) if dense else rng.uniform(0.2, 3.0, d)  # a matrix, or a diagonal
    P0 = np.linalg.inv(cov) if dense else np.diag(1.0 / cov)
    m, theta, X, r = fitted(hidden, prior_mean=mean, prior_cov=cov)
    base = MLP(P, hidden=hidden, eta=ETA, lam=LAM)
    base.add(X, r)
    thetas = theta + 0.1 * rng.standard_normal((2, d))
    diff = thetas - mean
    # the data terms are the same bits in both models; the prior terms differ by the
    # closed forms (P0 from an explicit inverse: ~1e-15 relative with cond(Sigma0) < 50)
    G, H = m.grads_hessian(thetas)
    G0, H0 = base.grads_hessian(thetas)
    scale = np.abs(G).max()
    assert np.abs((G - G0) - (diff @ P0 - ETA * LAM * thetas)).max() < 1e-12 * scale
    assert np.abs((H - H0) - (P0 - ETA * LAM * np.eye(d))).max() < 1e-12 * np.abs(H).max()
    assert np.array_equal(H, H.T)
    v, v0 = m.value(thetas[0]), base.value(thetas[0])
    want = 0.5 * diff[0] @ P0 @ diff[0] - 0.5 * ETA * LAM * thetas[0] @ thetas[0]
    assert v - v0 == pytest.approx(want, rel=1e-10, abs=1e-12 * abs(v))
    Gr, Hr = ref.grads_gauss_newton(X, r, thetas, ETA, LAM, hidden, prior_mean=mean,
                                    prior_precision=P0)
    assert np.abs(G - Gr).max() < 1e-12 * scale
    assert np.abs(H - Hr).max() < 1e-12 * np.abs(Hr).max()
    # no data: exactly the prior, and eta does not temper it
    for eta in (ETA, 5.0):
        empty = MLP(P, hidden=hidden, eta=eta, lam=LAM, prior_mean=mean, prior_cov=cov)
        Ge, He = empty.grads_hessian(thetas)
        assert np.allclose(Ge, diff @ P0, rtol=1e-13, atol=1e-13 * np.abs(Ge).max())
        assert np.allclose(He, P0, rtol=1e-13, atol=1e-15)
        assert empty.value(thetas[0]) == pytest.approx(0.5 * diff[0] @ P0 @ diff[0],
                                                       rel=1e-13)


@pytest.mark.parametrize("hidden", [(4,), (4, 3, 5)])
def test_general_prior_vs_finite_differences(rng, hidden):
    d = km.n_params(P, hidden)
    mean = 0.3 * rng.standard_normal(d)
    cov = _spd(rng, d)
    P0 = np.linalg.inv(cov)
    m, theta, X, r = fitted(hidden, prior_mean=mean, prior_cov=cov)
    h = 1e-5
    fd = central_diff(lambda t: ref.value(X, r, t, ETA, LAM, hidden, prior_mean=mean,
                                          prior_precision=P0), theta, h)
    # as for the default prior: no mask flips, rounding 2 eps |U| / h dominates; 100x it
    tol = 100 * 2 * np.finfo(float).eps * abs(m.value(theta)) / h
    assert np.abs(m.grad(theta) - fd).max() < tol
    # with no data U is the quadratic prior term: its Hessian P0 is what central
    # differences of the gradient give, exactly up to rounding 2 eps |g| / h
    empty = m.spawn(ETA, LAM)
    assert empty.prior_cov is m.prior_cov and empty.n_obs == 0  # spawn keeps the prior
    fdH = central_diff(empty.grad, theta, h)
    gmax = np.abs(empty.grad(theta)).max()
    assert np.abs(fdH - P0).max() < 100 * 2 * np.finfo(float).eps * gmax / h
    assert np.allclose(empty.hess(theta), P0, rtol=1e-13, atol=1e-15)
    assert np.allclose(m.prior_precision, P0, rtol=1e-13, atol=1e-15)


def test_general_prior_errors_and_data_tuple():
    d = km.n_params(P, HID)
    with pytest.raises(ValueError, match="prior_mean needs prior_cov"):
        MLP(P, hidden=HID, prior_mean=np.zeros(d))
    with pytest.raises(ValueError, match="prior_cov"):
        MLP(P, hidden=HID, prior_cov=np.ones(d - 1))
    with pytest.raises(ValueError, match="prior_cov must be positive definite"):
        MLP(P, hidden=HID, prior_cov=-np.eye(d))
    m = MLP(P, hidden=HID, prior_cov=np.full(d, 4.0))
    assert np.array_equal(m.prior_mean, np.zeros(d))
    X, r, eta, lam, widths, general, P0, theta0 = m.kernel_data()
    assert general is True and np.array_equal(P0, np.eye(d) / 4.0)
    assert widths.dtype == np.int64 and tuple(widths) == HID
    assert X.shape == (0, P) and r.shape == (0,) and (eta, lam) == (1.0, 1.0)
    default = MLP(P, hidden=HID).kernel_data()
    assert default[5] is False
    assert np.allclose(MLP(P, hidden=HID, eta=2.0, lam=3.0).prior_precision, 6.0 * np.eye(d))


def test_kernel_data_views_and_scratch(tiny):
    m, theta, X, r = tiny
    Xd, rd, eta, lam, widths, general, _, _ = m.kernel_data()
    assert np.shares_memory(Xd, m._X) and np.array_equal(Xd, X) and np.array_equal(rd, r)
    assert Xd.flags.c_contiguous and (eta, lam, general) == (ETA, LAM, False)
    A, D, out, gtmp, J, pbuf = m.kernel_scratch()
    c = m.chunk
    assert A.shape == D.shape == (c * (H1 + H2),) and out.shape == (c,)
    assert gtmp.shape == pbuf.shape == (m.dim,) and J.shape == (c, m.dim)


# ---------------------------------------------------------------------------------------
# the registry and the architecture's validation
# ---------------------------------------------------------------------------------------

def test_models_registry_from_dim():
    m = vr.models.MODELS["mlp"].from_dim(20, eta=2.0, lam=3.0)
    assert isinstance(m, MLP)
    assert (m.input_dim, m.hidden, m.dim, m.eta, m.lam) == (20, (20, 20), 861, 2.0, 3.0)
    assert m.prior_cov is None and m.n_obs == 0
    assert MLP.from_dim(5).dim == km.n_params(5, (20, 20))


@pytest.mark.parametrize("hidden, exc, match", [
    (20, TypeError, "hidden must be a tuple"),
    ("20", TypeError, "hidden must be a tuple"),
    (None, TypeError, "hidden must be a tuple"),
    ((), ValueError, "hidden must have at least one layer"),
    ((20, 0), ValueError, r"hidden widths must be >= 1, got \(20, 0\)"),
    ([20, -3], ValueError, "hidden widths must be >= 1"),
    ((20, 2.5), TypeError, "hidden widths must be integers"),
    ((True, 4), TypeError, "hidden widths must be integers"),
])
def test_bad_hidden(hidden, exc, match):
    with pytest.raises(exc, match=match):
        MLP(3, hidden=hidden)


# ---------------------------------------------------------------------------------------
# kernels: the bodies as plain Python (what the CUDA simulator runs) and the primitives
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("hidden", DEPTHS)
@pytest.mark.parametrize("general", [False, True])
def test_python_bodies_match_compiled_driver(rng, hidden, general):
    """The uniform bodies (grads_hessian, value, predict; jacobian) run as plain Python
    (linalg's loop products, syrk_lower's loops: what the CUDA simulator runs) and through
    the compiled drivers, on the model's own data/scratch tuples; chunk of 8 rows."""
    prior = {}
    if general:
        d = km.n_params(P, hidden)
        prior = {"prior_mean": 0.1 * rng.standard_normal(d),
                 "prior_cov": rng.uniform(0.5, 2.0, d)}
    m, theta, X, r = fitted(hidden, chunk=8, **prior)
    data, scratch = m.kernel_data(), m.kernel_scratch()
    assert data[5] is general and len(scratch) == 6
    thetas = theta + 0.1 * rng.standard_normal((2, m.dim))
    out = []
    for fn in (km.mlp_grads_hessian, cpu.grads_hessian(km.POTENTIAL)):
        G, H = np.empty((2, m.dim)), np.full((m.dim, m.dim), np.nan)
        fn(data, thetas, True, G, H, scratch)
        out.append((G, H))
    # the same sums, Python loops against BLAS: rounding only (~1e-15 relative)
    for a, b in zip(*out, strict=True):
        assert np.abs(a - b).max() < 1e-12 * np.abs(b).max()
    Gr, Hr = ref.grads_gauss_newton(X, r, thetas, ETA, LAM, hidden,
                                    prior_mean=m.prior_mean,
                                    prior_precision=m._P0 if general else None)
    assert np.abs(out[1][0] - Gr).max() < 1e-12 * np.abs(Gr).max()
    assert np.abs(out[1][1] - Hr).max() < 1e-12 * np.abs(Hr).max()
    v_py = km.mlp_value(data, thetas[0], scratch)
    v_c = cpu.value(km.POTENTIAL)(data, thetas[0], scratch)
    v_ref = ref.value(X, r, thetas[0], ETA, LAM, hidden, prior_mean=m.prior_mean,
                      prior_precision=m._P0 if general else None)
    assert v_py == pytest.approx(v_c, rel=1e-13) and v_c == pytest.approx(v_ref, rel=1e-13)
    C = rng.standard_normal((19, P))  # more rows than a chunk
    for fn in (km.mlp_predict, cpu.predict(km.POTENTIAL)):
        o = np.empty(19)
        fn(data, theta, C, o, scratch)
        assert np.allclose(o, ref.outputs(theta, C, hidden), rtol=1e-14, atol=1e-14)
    J, o = np.empty((X.shape[0], m.dim)), np.empty(X.shape[0])
    km.mlp_jacobian(data, theta, X, o, J, scratch)
    assert np.allclose(J, ref_jacobian(theta, X, hidden), rtol=1e-14, atol=1e-14)
    assert np.allclose(o, ref.outputs(theta, X, hidden), rtol=1e-14, atol=1e-14)


@njit
def _syrk_compiled(a, alpha, beta, c):
    km.syrk_lower(a, alpha, beta, c)


@pytest.mark.parametrize("rows", [0, 1, 9])
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
def test_syrk_lower(rng, rows, beta):
    d = 6
    a = rng.standard_normal((rows, d))
    c0 = rng.standard_normal((d, d))
    want = beta * c0 + 2.5 * a.T @ a
    low = np.tril_indices(d)
    up = np.triu_indices(d, 1)
    for fn, arr in ((km.syrk_lower, a), (_syrk_compiled, a),
                    (_syrk_compiled, np.asfortranarray(a))):  # F order: the loop fallback
        c = c0.copy()
        if beta == 0.0:
            c[low] = np.nan  # beta = 0 overwrites, as BLAS does
        fn(arr, 2.5, beta, c)
        assert np.allclose(c[low], want[low], rtol=1e-14, atol=1e-14)
        assert np.array_equal(c[up], c0[up])  # strict upper triangle untouched


@njit
def _finish_compiled(H, ridge):
    km.gauss_newton_finish(H, ridge)


def test_gauss_newton_finish_mirrors(rng):
    for d in (1, 5, 33, 70):  # tiles of 32: partial and several
        H = rng.standard_normal((d, d))
        want = np.tril(H) + np.tril(H, -1).T + 0.25 * np.eye(d)
        for fn in (km.gauss_newton_finish, _finish_compiled):
            c = H.copy()
            fn(c, 0.25)
            assert np.array_equal(c, want)


# ---------------------------------------------------------------------------------------
# the paper's size
# ---------------------------------------------------------------------------------------

def test_paper_size_861_parameters(rng):
    m = MLP(20, eta=10.0, lam=1.0)
    X = rng.standard_normal((300, 20))  # two chunks of 256 rows
    theta_star = rng.standard_normal(20) / np.sqrt(20)
    r = (X @ theta_star) ** 2 + 0.1 * rng.standard_normal(300)
    m.add(X, r)
    theta = m.init(1)
    G, H = m.grads_hessian(theta[None])
    J = ref_jacobian(theta, X, (20, 20))
    e = ref_forward(theta, X, (20, 20))[0] - r
    g_ref = 10.0 * (J.T @ e + theta)
    H_ref = 10.0 * (J.T @ J + np.eye(861))
    assert G.shape == (1, 861) and H.shape == (861, 861)
    assert np.abs(G[0] - g_ref).max() < 1e-12 * np.abs(g_ref).max()
    assert np.abs(H - H_ref).max() < 1e-12 * np.abs(H_ref).max()
    assert m.value(theta) == pytest.approx(ref_value(theta, X, r, 10.0, 1.0, (20, 20)),
                                           rel=1e-12)
    assert m.predict(theta, X[:50]).shape == (50,)


def test_engines_accept_an_mlp_object(rng):
    """``model=MLP(...)``: the engine spawns its own copy (the protocol's ``spawn``)."""
    spec = MLP(P, hidden=(H1, H2))
    X = rng.standard_normal((15, P))
    r = X[:, 0] ** 2
    eng = vr.VITS(spec.dim, model=spec, variant="II", eta=1.0, lam=1.0, step_size=0.01,
                  n_steps=5, seed=0).update(X, r)
    assert eng.model is not spec and eng.model.n_obs == 15 and spec.n_obs == 0
    assert np.all(np.isfinite(eng.mean)) and eng.sample(3).shape == (3, spec.dim)
    with pytest.raises(ValueError, match="features must have 3 columns"):
        eng.update(np.zeros((1, spec.dim)), np.zeros(1))
