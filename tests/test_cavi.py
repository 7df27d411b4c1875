"""The CAVI kernels of VTS (kernels/cavi.py): special functions, random numbers, the fit.

Four layers (docs/architecture.md, "Conventions", Tests): the math against closed forms
(digamma against SciPy, the K = 1 fit against the NIG posterior and its log evidence), the
compiled CPU bodies against the plain-NumPy reference (:mod:`vits_ref.reference.cavi`),
the CUDA drivers on the simulator against the CPU drivers, and the ELBO's monotonicity on
many random problems.
"""

import math

import numpy as np
import pytest
from conftest import max_diff_under_cuda_simulator
from numba import njit
from scipy import special, stats
from vits_ref.kernels import cavi as kc

import vits_ref as vr
from vits_ref.drivers import cpu
from vits_ref.inference.vts import _covariance, _factors, _Prior, _rng_state
from vits_ref.reference import cavi as ref

# --------------------------------------------------------------------------- digamma


@njit(cache=False)
def _digamma_many(x, out):
    for i in range(x.shape[0]):
        out[i] = kc.digamma(x[i])


def _digamma_grid():
    x = np.concatenate([np.geomspace(1e-8, 1e8, 2001), np.linspace(0.5, 12.0, 1001),
                        [1.4616321449683622, 1.0, 2.0, 9.999999, 10.0, 10.000001]])
    return x


def test_digamma_matches_scipy_to_1e13():
    """Compiled and plain Python (the CUDA simulator's path) against
    ``scipy.special.digamma``: relative error below 1e-13 where ``|psi| >= 1``, absolute
    below 1e-13 elsewhere (near the root 1.4616..., ``psi`` itself goes through 0)."""
    x = _digamma_grid()
    want = special.digamma(x)
    got = np.empty_like(x)
    _digamma_many(x, got)
    err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    assert err.max() < 1e-13, (x[err.argmax()], err.max())
    py = np.array([kc.digamma(float(v)) for v in x[::7]])
    assert (np.abs(py - want[::7]) / np.maximum(1.0, np.abs(want[::7]))).max() < 1e-13


def test_digamma_domain():
    assert math.isnan(kc.digamma(0.0)) and math.isnan(kc.digamma(-1.5))
    assert math.isnan(kc.digamma(math.nan)) and kc.digamma(math.inf) == math.inf


# --------------------------------------------------------------------------- random numbers

_MASK = 2 ** 64 - 1


def _xoroshiro_reference(s0, s1, n):
    """xoroshiro128+ (Blackman & Vigna) on Python integers: the outputs."""
    out = []
    for _ in range(n):
        out.append((s0 + s1) & _MASK)
        s1 ^= s0
        s0 = (((s0 << 24) | (s0 >> 40)) & _MASK) ^ s1 ^ ((s1 << 16) & _MASK)
        s1 = ((s1 << 37) | (s1 >> 27)) & _MASK
    return out


@njit(cache=False)
def _u64_many(s, out):
    for i in range(out.shape[0]):
        out[i] = kc.next_u64(s)


@njit(cache=False)
def _draws(s, kind, a, out):
    for i in range(out.shape[0]):
        if kind == 0:
            out[i] = kc.uniform(s)
        elif kind == 1:
            out[i] = kc.normal(s)
        else:
            out[i] = kc.gamma_variate(s, a)


def test_xoroshiro_matches_the_reference_algorithm():
    seed = (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03)
    want = _xoroshiro_reference(*seed, 1000)
    s = np.array(seed, dtype=np.uint64)
    got = np.empty(1000, dtype=np.uint64)
    _u64_many(s, got)
    assert [int(v) for v in got] == want
    # plain Python runs the same body (the CUDA simulator does), with numpy uint64 words
    s = np.array(seed, dtype=np.uint64)
    with np.errstate(over="ignore"):
        assert [int(kc.next_u64(s)) for _ in range(20)] == want[:20]


@pytest.mark.parametrize("kind,a,dist", [
    (0, 0.0, stats.uniform()),
    (1, 0.0, stats.norm()),
    (2, 0.3, stats.gamma(0.3)),
    (2, 1.0, stats.gamma(1.0)),
    (2, 2.5, stats.gamma(2.5)),
    (2, 60.0, stats.gamma(60.0)),
])
def test_draws_follow_their_laws(kind, a, dist):
    """Kolmogorov-Smirnov on 20 000 draws from a fixed state. The seeds are fixed, so this
    is one deterministic computation; a wrong law (e.g. a shape off by 5%: KS statistic
    about 0.02 at a = 2.5, p < 1e-6 with n = 20 000) would fail it, a right one passes
    with probability 1 - 1e-3."""
    s = _rng_state(np.random.SeedSequence(kind * 100 + int(10 * a)))
    out = np.empty(20_000)
    _draws(s, kind, a, out)
    assert stats.kstest(out, dist.cdf).pvalue > 1e-3
    if kind == 0:
        assert 0.0 < out.min() and out.max() < 1.0


# --------------------------------------------------------------------------- the fit


def _mixture_data(rng, n, d, K):
    X = rng.random((n, d))
    W = 3.0 * rng.standard_normal((K, d))
    z = rng.integers(K, size=n)
    return X, np.einsum("td,td->t", X, W[z]) + 0.5 * rng.standard_normal(n)


def _kernel_fit(X, y, prior, tol, max_iter, factors=None):
    n, d = X.shape
    K = prior.gamma0.shape[0]
    fac, st = _factors(1, K, d)
    fac, st = tuple(a[0] for a in fac), tuple(a[0] for a in st)
    cpu.cavi_init()(prior.kernel, fac, st)
    if factors is not None:
        for dst, src in zip(fac, factors, strict=True):
            dst[...] = src
    resp, trace = np.empty((n, K)), np.empty(max_iter)
    it, elbo, ok = cpu.cavi_fit()(X, y, n, prior.kernel, fac, st, resp, tol, max_iter, trace)
    assert ok
    return fac, resp, trace[:it], elbo


@pytest.mark.parametrize("K,d,n", [(2, 2, 300), (3, 2, 200), (2, 3, 150), (1, 3, 50),
                                   (2, 4, 150), (3, 8, 120)])
def test_compiled_cavi_matches_the_numpy_reference(K, d, n):
    """Same iterations, ELBO trace, responsibilities and factors as the NumPy reference
    (explicit inverses, SciPy's digamma): relative agreement 1e-10 (measured: ~1e-14).
    ``d >= kc.BLAS_MIN_DIM`` runs the E-step's BLAS path, smaller ``d`` its loops."""
    rng = np.random.default_rng(100 * K + d)
    X, y = _mixture_data(rng, n, d, K)
    prior = _Prior(d, K, 1.0, None, None, 1.0, 1.0, "spread")
    fac, resp, trace, elbo = _kernel_fit(X, y, prior, 1e-7, 60)
    f, R, tr = ref.cavi(X, y, ref.vts_prior(d, K), tol=1e-7, max_iter=60)
    assert len(tr) == len(trace)
    np.testing.assert_allclose(trace, tr, rtol=1e-10)
    np.testing.assert_allclose(resp, R, rtol=1e-10, atol=1e-12)
    for key, got in (("gamma", fac[0]), ("u", fac[1]), ("alpha", fac[3]), ("beta", fac[4])):
        np.testing.assert_allclose(got, f[key], rtol=1e-10, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(_covariance(fac[2]), f["V"], rtol=1e-10, atol=1e-12)
    assert elbo == trace[-1]


def test_elbo_never_decreases():
    """CAVI is exact coordinate ascent: the ELBO of every iteration is at least the one
    before, up to rounding (1e-10 relative), on 60 random mixtures (K = 2, 3; d = 1 to 5,
    both E-step paths; heavy and light overlap), each fitted for 40 iterations from the
    prior."""
    worst = 0.0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        K, d = 2 + seed % 2, 1 + seed % 5
        n = int(rng.integers(5, 200))
        X, y = _mixture_data(rng, n, d, K)
        y *= rng.choice([0.1, 1.0, 10.0])
        prior = _Prior(d, K, rng.uniform(0.5, 2), None, None, rng.uniform(0.5, 3),
                       rng.uniform(0.1, 3), "spread")
        _, _, trace, _ = _kernel_fit(X, y, prior, 0.0, 40)
        drops = -np.diff(trace) / np.abs(trace[:-1])
        worst = max(worst, drops.max())
    assert worst < 1e-10


def test_one_component_is_the_nig_posterior_and_its_evidence():
    """K = 1: the first M-step gives the exact NIG posterior (explicit inverses, 1e-10);
    the ELBO recorded at iteration 2 (evaluated at those factors) equals the log marginal
    likelihood (SciPy's multivariate t, 1e-10 relative), because q is then the exact
    posterior (KL 0), and iteration 3 repeats it exactly, which stops the loop."""
    rng = np.random.default_rng(5)
    n, d = 40, 3
    X = rng.standard_normal((n, d))
    y = X @ np.array([0.5, -1.0, 2.0]) + 0.7 * rng.standard_normal(n)
    u0, V0, a0, b0 = np.array([0.2, 0.0, -0.1]), np.diag([2.0, 1.0, 0.5]), 2.0, 1.5
    prior = _Prior(d, 1, 1.0, u0, V0, a0, b0, "zero")
    fac, resp, trace, _ = _kernel_fit(X, y, prior, 1e-12, 10)
    assert len(trace) == 3 and trace[2] == trace[1] and np.all(resp == 1.0)
    u, V, alpha, beta = ref.nig_posterior(X, y, u0, V0, a0, b0)
    np.testing.assert_allclose(fac[1][0], u, rtol=1e-10)
    np.testing.assert_allclose(_covariance(fac[2])[0], V, rtol=1e-10)
    assert fac[3][0] == pytest.approx(alpha, rel=1e-12)
    assert fac[4][0] == pytest.approx(beta, rel=1e-10)
    assert fac[0][0] == pytest.approx(1.0 + n, rel=1e-12)
    assert trace[-1] == pytest.approx(ref.nig_log_evidence(X, y, u0, V0, a0, b0), rel=1e-10)


def test_warm_start_from_the_optimum_stops_at_once():
    """From converged factors the next fit stops after two iterations (the minimum for a
    relative-improvement test) and barely moves them (1e-5 relative: the ELBO is flat at
    its optimum, so an ELBO tolerance of 1e-13 leaves the factors ~1e-8 from it)."""
    rng = np.random.default_rng(9)
    X, y = _mixture_data(rng, 250, 2, 2)
    prior = _Prior(2, 2, 1.0, None, None, 1.0, 1.0, "spread")
    fac, _, trace, _ = _kernel_fit(X, y, prior, 1e-13, 5000)
    again, _, trace2, _ = _kernel_fit(X, y, prior, 1e-9, 100,
                                      factors=tuple(a.copy() for a in fac))
    assert len(trace2) == 2
    assert trace2[0] == pytest.approx(trace[-1], rel=1e-12)
    for a, b in zip(fac, again, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8)


def test_fit_mixture_recovers_separated_experts():
    """Two well separated experts (coefficients (0, 0) and (3, 3), noise 0.3, weights 0.3 and
    0.7; 2000 points): the fitted weights, means and noise variances are within 5 standard
    errors of the truth (the standard errors of a weight are ~0.01, of a coefficient ~0.03)."""
    rng = np.random.default_rng(11)
    n = 2000
    X = rng.random((n, 2))
    z = rng.random(n) < 0.3
    y = np.where(z, 0.0, X @ np.array([3.0, 3.0])) + 0.3 * rng.standard_normal(n)
    fit = vr.vts.fit_mixture(X, y, 2, tol=1e-10, max_iter=1000)
    order = np.argsort(fit.weights)
    assert fit.converged
    np.testing.assert_allclose(fit.weights[order], [0.3, 0.7], atol=0.05)
    np.testing.assert_allclose(fit.u[order], [[0.0, 0.0], [3.0, 3.0]], atol=0.15)
    np.testing.assert_allclose((fit.beta / (fit.alpha - 1))[order], [0.09, 0.09], rtol=0.25)
    assert fit.responsibilities.shape == (n, 2)
    np.testing.assert_allclose(fit.responsibilities.sum(axis=1), 1.0)
    assert np.all(np.diff(fit.elbo) >= -1e-10 * np.abs(fit.elbo[:-1]))


def test_fit_mixture_validates():
    X, y = np.ones((4, 2)), np.ones(4)
    with pytest.raises(ValueError, match="y must have shape"):
        vr.vts.fit_mixture(X, np.ones(3))
    with pytest.raises(ValueError, match="alpha0 must be > 0"):
        vr.vts.fit_mixture(X, y, alpha0=0.0)
    with pytest.raises(ValueError, match="u0 must have shape"):
        vr.vts.fit_mixture(X, y, 2, u0=np.ones(3))
    with pytest.raises(ValueError, match="V0 must be positive definite"):
        vr.vts.fit_mixture(X, y, 2, V0=-np.eye(2))
    with pytest.raises(ValueError, match="X contains NaN"):
        vr.vts.fit_mixture(np.full((4, 2), np.nan), y)


# --------------------------------------------------------------------------- CUDA drivers

CUDA_SCRIPT = '''
import warnings
warnings.simplefilter("ignore")
import numpy as np
import vits_ref as vr
from vits_ref.drivers import cpu, cuda
from vits_ref.inference.vts import _Prior, _factors, _rng_state

def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b)))) if a.size else 0.0

worst = 0.0
rng = np.random.default_rng(3)
R, n, K = 2, 8, 2
for d in (2, 5):  # the E-step's loops (d = 2) and its products (d >= BLAS_MIN_DIM)
  X, y, counts = rng.random((R, n, d)), rng.standard_normal((R, n)), np.array([8, 6])
  prior = _Prior(d, K, 1.0, None, None, 1.0, 1.0, "spread").kernel
  fac, resp, its, elbo, trace, ok = cuda.cavi_fits(X, y, counts, prior, 1e-6, 8)
  for r in range(R):
    f, s = _factors(1, K, d)
    f, s = tuple(a[0] for a in f), tuple(a[0] for a in s)
    cpu.cavi_init()(prior, f, s)
    rr, tr = np.zeros((n, K)), np.zeros(8)
    it, e, good = cpu.cavi_fit()(X[r], y[r], counts[r], prior, f, s, rr, 1e-6, 8, tr)
    assert it == its[r] and good and ok[r]
    worst = max(worst, rel(e, elbo[r]), rel(tr[:it], trace[r, :it]),
                rel(rr[:counts[r]], resp[r, :counts[r]]))
    worst = max([worst] + [rel(a, b[r]) for a, b in zip(f, fac)])
env = vr.envs.vts_scenario("B")
T = 5
for Kc, scoring in ((1, "sample_pi"), (2, "sample_z")):
    pol = vr.VTS(2, 2, n_components=Kc, scoring=scoring, max_iter=6, seed=0)
    reals = [env.realise(T, rng=s) for s in range(R)]
    rngs = np.stack([_rng_state(s) for s in range(R)])
    st = [np.stack([getattr(x, f) for x in reals]) for f in ("contexts", "means", "rewards")]
    g = cuda.vts_runs(pol.params, pol._prior.kernel, *st, rngs)
    want = (np.empty((R, T)), np.empty((R, T), np.int64), np.empty((R, T, 2)),
            np.empty((R, T), np.int64), np.zeros(R, np.int64))
    cpu.vts_runs()(pol.params, pol._prior.kernel, *st, rngs.copy(), *want)
    assert (g[1] == want[1]).all() and (g[3] == want[3]).all() and (g[4] == want[4]).all()
    worst = max(worst, rel(g[0], want[0]), rel(g[2], want[2]))
print("MAXDIFF", worst)
'''


def test_cuda_drivers_under_simulator():
    """``cuda.cavi_fits`` and ``cuda.vts_runs`` (one problem or run per thread) run the
    CPU drivers' bodies: same iterations, arms and status, values to 1e-12 (measured
    ~1e-15; at d = 5 the CPU's products are BLAS, CUDA's the loops of kernels/linalg.py)."""
    assert max_diff_under_cuda_simulator(CUDA_SCRIPT) < 1e-12
