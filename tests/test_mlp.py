"""The MLP potential (ALGORITHMS.md section 2): layout, value, back-propagation,
Jacobian, Gauss-Newton, history buffers, errors, and the kernel bodies run as plain Python.

References are written here in plain NumPy (vectorised forward pass, explicit Jacobian)
and checked themselves against central finite differences. Most tests use a tiny network
(p = 3, hidden (4, 5): 47 parameters); one runs at the paper's 861.
"""

import numpy as np
import pytest
from numba import njit
from vits_ref.kernels import mlp as km

import vits_ref as vr
from vits_ref.models import MLP

P, H1, H2 = 3, 4, 5
ETA, LAM = 2.0, 0.5  # not 1: a confusion of eta with lam, or a missing eta, shows


# ---------------------------------------------------------------------------------------
# plain NumPy references
# ---------------------------------------------------------------------------------------

def ref_blocks(theta, p, h1, h2):
    o = np.cumsum([0, h1 * p, h1, h2 * h1, h2, h2, 1])
    return (theta[o[0]:o[1]].reshape(h1, p), theta[o[1]:o[2]],
            theta[o[2]:o[3]].reshape(h2, h1), theta[o[3]:o[4]], theta[o[4]:o[5]], theta[o[5]])


def ref_forward(theta, X, h1=H1, h2=H2):
    """Outputs and pre-activations ``(g, z1, z2)`` for the rows of ``X``."""
    W1, b1, W2, b2, w3, b3 = ref_blocks(theta, X.shape[1], h1, h2)
    z1 = X @ W1.T + b1
    z2 = np.maximum(z1, 0.0) @ W2.T + b2
    return np.maximum(z2, 0.0) @ w3 + b3, z1, z2


def ref_value(theta, X, r, eta=ETA, lam=LAM, h1=H1, h2=H2):
    e = ref_forward(theta, X, h1, h2)[0] - r
    return 0.5 * eta * (e @ e + lam * theta @ theta)


def ref_jacobian(theta, X, h1=H1, h2=H2):
    """The explicit Jacobian (n, d) of the outputs, block by block (relu'(0) = 0)."""
    W1, b1, W2, b2, w3, b3 = ref_blocks(theta, X.shape[1], h1, h2)
    _, z1, z2 = ref_forward(theta, X, h1, h2)
    a1, a2 = np.maximum(z1, 0.0), np.maximum(z2, 0.0)
    D2 = w3 * (z2 > 0)
    D1 = (D2 @ W2) * (z1 > 0)
    n = X.shape[0]
    return np.hstack([(D1[:, :, None] * X[:, None, :]).reshape(n, -1), D1,
                      (D2[:, :, None] * a1[:, None, :]).reshape(n, -1), D2, a2,
                      np.ones((n, 1))])


def away_from_kinks(theta, X, margin=0.05, h1=H1, h2=H2):
    """The rows of ``X`` whose pre-activations all satisfy ``|z| > margin``.

    A finite-difference step ``h = 1e-5`` moves any pre-activation by at most about
    ``h (1 + |x| + |a1|) |weights|`` < 1e-3 here, so no ReLU mask flips inside the stencil
    and the potential is a polynomial along it.
    """
    _, z1, z2 = ref_forward(theta, X, h1, h2)
    keep = (np.abs(z1).min(axis=1) > margin) & (np.abs(z2).min(axis=1) > margin)
    return X[keep]


@pytest.fixture
def tiny():
    """A fitted tiny MLP: (model, theta, X, r), 20+ rows away from every ReLU kink."""
    rng = np.random.default_rng(314)
    m = MLP(P, hidden=(H1, H2), eta=ETA, lam=LAM)
    theta = m.init(rng) + 0.3 * rng.standard_normal(m.dim)  # non-zero biases too
    X = away_from_kinks(theta, rng.standard_normal((60, P)))
    assert X.shape[0] >= 20
    r = ref_forward(theta, X)[0] ** 2 + rng.standard_normal(X.shape[0])
    m.add(X, r)
    return m, theta, X, r


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
    assert m.dim == 20 * 20 + 20 + 20 * 20 + 20 + 20 + 1 == 861 == km.n_params(20, 20, 20)
    assert [(k, v[0], v[1]) for k, v in m.layout.items()] == [
        ("W1", 0, 400), ("b1", 400, 420), ("W2", 420, 820), ("b2", 820, 840),
        ("w3", 840, 860), ("b3", 860, 861)]
    assert vr.models.MLP is MLP and "MLP" in vr.models.__all__
    assert "mlp" not in vr.models.MODELS  # needs a shape: passed as an object


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
    for got, want in zip(blocks.values(), ref_blocks(theta, P, H1, H2), strict=True):
        assert np.array_equal(got, want)
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
    assert np.array_equal(J, ref_jacobian(theta, x, 2, 2))
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
    n_sigs = len(km.mlp_grads_hessian_cpu.signatures)
    caps = []
    for a, b in [(0, 1), (1, 2), (2, 5), (5, 6), (6, 30), (30, 41)]:
        grown.add(X[a:b], r[a:b])
        caps.append(grown._X.shape[0])
        grown.grads_hessian(theta[None])
    assert caps == [2, 2, 8, 8, 32, 64]  # doubling, never per round
    assert len(km.mlp_grads_hessian_cpu.signatures) == n_sigs  # no recompiling
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
    with pytest.raises(ValueError, match="hidden must be a pair"):
        MLP(3, hidden=(20,))
    with pytest.raises(TypeError, match="hidden"):
        MLP(3, hidden=20)
    with pytest.raises(ValueError, match="input_dim"):
        MLP(0)
    with pytest.raises(ValueError, match="lam"):
        MLP(3, lam=0.0)


# ---------------------------------------------------------------------------------------
# kernels: the bodies as plain Python (what the CUDA simulator runs) and the primitives
# ---------------------------------------------------------------------------------------

def _scratch(c, d, h1=H1, h2=H2):
    return (np.empty((c, h1)), np.empty((c, h2)), np.empty(c), np.empty((c, h1)),
            np.empty((c, h2)), np.empty(d), np.empty((c, d)))


def test_python_bodies_match_compiled_driver(tiny, rng):
    m, theta, X, r = tiny
    thetas = theta + 0.1 * rng.standard_normal((2, m.dim))
    out = []
    # the body called directly: linalg's loop products, syrk_lower's loops; chunk 8 rows
    for fn in (km.mlp_grads_hessian, km.mlp_grads_hessian_cpu):
        G, H, v = np.empty((2, m.dim)), np.full((m.dim, m.dim), np.nan), np.empty(2)
        fn(thetas, X, r, ETA, LAM, H1, H2, True, G, H, v, *_scratch(8, m.dim))
        out.append((G, H, v))
    for a, b in zip(*out, strict=True):
        assert np.abs(a - b).max() < 1e-12 * np.abs(b).max()
    assert out[1][2][0] == pytest.approx(ref_value(thetas[0], X, r), rel=1e-13)
    J, o = np.empty((X.shape[0], m.dim)), np.empty(X.shape[0])
    sc = _scratch(8, m.dim)
    km.mlp_jacobian(theta, X, H1, H2, sc[0], sc[1], o, sc[3], sc[4], J)
    assert np.allclose(J, ref_jacobian(theta, X), rtol=1e-14, atol=1e-14)
    assert np.allclose(o, ref_forward(theta, X)[0], rtol=1e-14, atol=1e-14)


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
    J = ref_jacobian(theta, X, 20, 20)
    e = ref_forward(theta, X, 20, 20)[0] - r
    g_ref = 10.0 * (J.T @ e + theta)
    H_ref = 10.0 * (J.T @ J + np.eye(861))
    assert G.shape == (1, 861) and H.shape == (861, 861)
    assert np.abs(G[0] - g_ref).max() < 1e-12 * np.abs(g_ref).max()
    assert np.abs(H - H_ref).max() < 1e-12 * np.abs(H_ref).max()
    assert m.value(theta) == pytest.approx(ref_value(theta, X, r, 10.0, 1.0, 20, 20),
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
