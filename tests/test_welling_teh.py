"""The Welling-Teh mixture (the OPVI paper, section 5.1): potential, gradients, Hessian, grid.

References: SciPy's normal log-density for the potential's value, central finite
differences for the gradient and the Hessian, the closed-form posterior of one observation
(a two-component mixture of linear-Gaussian posteriors) for the grid.
"""

import numpy as np
import pytest
from conftest import max_diff_under_cuda_simulator
from scipy import stats

from vits_ref.models import WellingTeh, posterior_grid, welling_teh_data
from vits_ref.models.welling_teh import SIGMA_X_WELLING_TEH, grid_moments

EPS = np.finfo(float).eps


def central_diff(f, t, h):
    out = np.empty(t.shape[0])
    for i in range(t.shape[0]):
        e = np.zeros_like(t)
        e[i] = h
        out[i] = (f(t + e) - f(t - e)) / (2 * h)
    return np.asarray(out)


def fd_tolerance(f, t, h, scale):
    """Error bound of the central difference with step ``h``: truncation ``h^2/6 |f'''|``,
    estimated from the steps ``h`` and ``2h`` (their difference is 3x the truncation), plus
    rounding ``eps |f| / h`` (``scale`` bounds ``|f|`` near ``t``), with a factor 4 margin."""
    trunc = np.abs(central_diff(f, t, h) - central_diff(f, t, 2 * h)) / 3.0
    return 4.0 * (trunc + EPS * scale / h) + 1e-300


def reference_U(x, theta, s, v, lw=1.0, pw=1.0):
    """``-lw sum log p(x | theta) - pw log p0(theta)`` with SciPy's densities."""
    la = stats.norm.logpdf(x, theta[0], s)
    lb = stats.norm.logpdf(x, theta[0] + theta[1], s)
    ll = np.logaddexp(la, lb) - np.log(2.0)
    lp = stats.norm.logpdf(theta[0], 0, np.sqrt(v[0])) + stats.norm.logpdf(theta[1], 0,
                                                                            np.sqrt(v[1]))
    return -lw * ll.sum() - pw * lp


@pytest.fixture(scope="module")
def data():
    return welling_teh_data(300, seed=3)


@pytest.mark.parametrize("sigma_x", [2.0, "welling_teh"])
def test_value_matches_scipy(data, sigma_x):
    m = WellingTeh(data, sigma_x=sigma_x)
    s = 2.0 if sigma_x == 2.0 else np.sqrt(2.0)
    for theta in ([0.0, 1.0], [1.0, -1.0], [-3.0, 2.5], [40.0, -60.0]):
        ref = reference_U(data, np.array(theta), s, (10.0, 1.0))
        # sums of 300 terms of size <= |ref|: rounding ~ 300 eps |ref|
        assert abs(m.value(theta) - ref) <= 1e-12 * abs(ref) + 1e-10


def test_gradient_and_hessian_match_finite_differences(data):
    m = WellingTeh(data, eta=1.7)
    for theta in (np.array([0.2, 0.9]), np.array([1.1, -0.8]), np.array([-2.0, 3.0])):
        g = m.grad(theta)
        h = 1e-4
        fd = central_diff(m.value, theta, h)
        tol = fd_tolerance(m.value, theta, h, abs(m.value(theta)))
        assert np.all(np.abs(g - fd) <= tol), (g, fd, tol)
        assert np.all(tol < 1e-5 * (1 + np.abs(g)))  # the check has teeth
        H = m.hess(theta)
        fdH = np.stack([central_diff(lambda t, i=i: m.grad(t)[i], theta, h) for i in range(2)])
        tolH = np.stack([fd_tolerance(lambda t, i=i: m.grad(t)[i], theta, h,
                                      np.abs(g[i]) + 1.0) for i in range(2)])
        assert np.all(np.abs(H - fdH) <= tolH), (H, fdH, tolH)
        assert np.allclose(H, H.T, rtol=0, atol=0)


def test_batch_rows_and_mean_hessian(data):
    m = WellingTeh(data)
    rng = np.random.default_rng(0)
    thetas = rng.standard_normal((7, 2))
    G, H = m.grads_hessian(thetas, True)
    for j in range(7):
        assert np.array_equal(G[j], m.grad(thetas[j]))
    Hm = np.mean([m.hess(t) for t in thetas], axis=0)
    assert np.allclose(H, Hm, rtol=1e-13, atol=1e-12)
    G2, H2 = m.grads_hessian(thetas, False)
    assert H2 is None and np.array_equal(G, G2)


def test_extreme_inputs_stay_finite():
    m = WellingTeh(np.array([1e6, -1e6, 0.0]))
    g = m.grad(np.array([1e3, -2e3]))
    assert np.all(np.isfinite(g)) and np.isfinite(m.value([1e3, -2e3]))
    assert np.all(np.isfinite(m.hess(np.array([1e3, -2e3]))))


def test_minibatch_data_weights(data):
    m = WellingTeh(data, eta=2.0)
    idx = np.array([3, 5, 5, 299, 0])
    from vits_ref.drivers import cpu

    d = m.minibatch_data(idx, like_weight=60.0, prior_weight=0.25)
    theta = np.array([0.3, 0.4])
    u = cpu.value(m.potential)(d, theta, ())
    ref = 2.0 * reference_U(data[idx], theta, 2.0, (10.0, 1.0), lw=60.0, pw=0.25)
    assert abs(u - ref) <= 1e-12 * abs(ref)
    full = m.minibatch_data(np.arange(300))
    assert abs(cpu.value(m.potential)(full, theta, ()) - m.value(theta)) <= 1e-12 * m.value(
        theta)
    with pytest.raises(ValueError, match="index"):
        m.minibatch_data(np.array([300]))
    with pytest.raises(TypeError, match="index"):
        m.minibatch_data(np.array([0.5]))
    with pytest.raises(ValueError, match="like_weight"):
        m.minibatch_data(idx, like_weight=-1.0)


def one_point_posterior(x, s, v):
    """Exact posterior of one observation: a mixture of two linear-Gaussian posteriors
    (``x = a^T theta + noise`` with ``a = (1, 0)`` or ``(1, 1)``), weighted by evidence."""
    S0 = np.diag(v)
    comps = []
    for a in (np.array([1.0, 0.0]), np.array([1.0, 1.0])):
        var_x = a @ S0 @ a + s * s
        k = S0 @ a / var_x
        comps.append((stats.norm.pdf(x, 0, np.sqrt(var_x)), k * x, S0 - np.outer(k, a @ S0)))
    w = np.array([c[0] for c in comps])
    w /= w.sum()
    mean = sum(wi * c[1] for wi, c in zip(w, comps, strict=True))
    second = sum(wi * (c[2] + np.outer(c[1], c[1])) for wi, c in zip(w, comps, strict=True))
    return mean, second - np.outer(mean, mean)


def test_posterior_grid_against_closed_form():
    grid = (np.linspace(-16, 16, 641), np.linspace(-7, 7, 281))
    P = posterior_grid(np.array([1.3]), grid, sigma_x=2.0)
    assert abs(P.sum() * 0.05 * 0.05 - 1.0) < 1e-12
    m, c = grid_moments(P, grid)
    m_ref, c_ref = one_point_posterior(1.3, 2.0, (10.0, 1.0))
    # the Riemann sum of a smooth density decaying like exp(-t^2/20) over +-16 (5 sd) is
    # accurate to the tail mass outside the box, ~1e-6
    assert np.allclose(m, m_ref, atol=1e-5) and np.allclose(c, c_ref, atol=1e-4)


def test_posterior_grid_matches_model_potential(data):
    m = WellingTeh(data)
    grid = (np.linspace(-1.5, 2.5, 41), np.linspace(-2.5, 2.5, 51))
    P = m.posterior_grid(grid)
    # log P differences equal -U differences (the potential is -log p(x, theta))
    pts = [(5, 30), (20, 10), (33, 45)]
    for i, j in pts:
        lhs = np.log(P[i, j]) - np.log(P[pts[0]])
        rhs = -(m.value([grid[0][i], grid[1][j]]) - m.value([grid[0][5], grid[1][30]]))
        assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(rhs))
    # with sigma_x = 2 and 300 points the data identify E[x] = theta1 + theta2/2 sharply
    # (standard error sqrt(4.25/300) = 0.12) and little else: the mode lies on that ridge
    i, j = np.unravel_index(np.argmax(P), P.shape)
    assert abs(grid[0][i] + grid[1][j] / 2 - data.mean()) < 0.2


def test_data_moments_and_options():
    n = 20000
    x = welling_teh_data(n, theta=(0.5, 2.0), sigma_x=2.0, seed=1)
    # mean theta1 + theta2/2 = 1.5, variance s^2 + theta2^2/4 = 5; 5 standard errors
    assert abs(x.mean() - 1.5) < 5 * np.sqrt(5 / n)
    assert abs(x.var() - 5.0) < 5 * np.sqrt(2 * 25 / n) * 1.5
    assert np.array_equal(x, welling_teh_data(n, theta=(0.5, 2.0), seed=1))
    assert WellingTeh(sigma_x="welling_teh").sigma_x == SIGMA_X_WELLING_TEH
    assert WellingTeh().sigma_x == 2.0
    with pytest.raises(ValueError, match="sigma_x"):
        WellingTeh(sigma_x="paper")
    with pytest.raises(ValueError, match="prior_var"):
        WellingTeh(prior_var=(1.0, -1.0))
    with pytest.raises(ValueError, match="grid"):
        posterior_grid(x[:5], (np.array([0.0, 1.0, 3.0]), np.linspace(0, 1, 3)))


def test_protocol_add_and_spawn():
    m = WellingTeh()
    m.add(np.empty((3, 0)), np.array([0.1, 0.2, 0.3]))
    m.add_x(np.arange(2000.0))  # grows the buffer
    assert m.n_obs == 2003 and m.x[2] == 0.3 and m.x[-1] == 1999.0
    with pytest.raises(ValueError, match="features"):
        m.add(np.ones((2, 1)), np.ones(2))
    s = m.spawn(2.0, 1.0)
    assert s.n_obs == 0 and s.eta == 2.0 and s.sigma_x == m.sigma_x
    assert m.predict(np.array([1.0, 2.0]), np.empty((4, 0))).tolist() == [2.0] * 4
    assert m.init_particles(5, seed=0).shape == (5, 2)


CUDA_SCRIPT = """
import numpy as np
from numba import cuda
from vits_ref.config import cuda_jit
from vits_ref.kernels.welling_teh import wt_row
from vits_ref.models import WellingTeh, welling_teh_data

@cuda_jit
def grads(data, thetas, G):
    m = cuda.grid(1)
    if m < thetas.shape[0]:
        wt_row(data, thetas[m, 0], thetas[m, 1], False, True, False, G[m], G, 0.0)

model = WellingTeh(welling_teh_data(20, seed=0))
thetas = np.random.default_rng(1).standard_normal((5, 2))
G = np.zeros((5, 2))
x, s2, v1, v2, wl, wp = model.kernel_data()
grads[1, 8](( cuda.to_device(np.ascontiguousarray(x)), s2, v1, v2, wl, wp), thetas, G)
ref = model.grads_hessian(thetas, False)[0]
print("MAXDIFF", float(np.max(np.abs(G - ref) / (1 + np.abs(ref)))))
"""


def test_cuda_body_under_simulator():
    # same body, same loop order, no BLAS: the simulator reproduces the CPU to rounding
    assert max_diff_under_cuda_simulator(CUDA_SCRIPT) < 1e-13
