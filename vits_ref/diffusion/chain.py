"""Python entry points of the compiled reverse chains (the engines and priors call these).

Each function validates nothing a caller inside the library has validated already; it
draws nothing itself except :func:`sample` and :func:`run_linear_bandit` given policy seeds
(which draw the normals with NumPy, in bulk). Bandit runs of the linear DiffTS go through
the runner: ``vits_ref.simulate`` chooses its ``"diffts-chain"`` backend, which calls
:func:`run_linear_bandit`. The bodies are in
:mod:`vits_ref.kernels.diffusion_chain`, the drivers in :mod:`vits_ref.drivers.cpu`
(``prange`` over samples or runs). Every chain takes its standard normals ``z``
(n, T + 1, d) as an input, so the CPU and CUDA drivers and the NumPy reference
(:mod:`vits_ref.reference.diffusion`) consume the same numbers.
"""

import numpy as np

from .. import _validate as val
from .._seeding import engine_streams
from ..drivers import cpu
from ..errors import DivergenceError, raise_first_divergence


def scratch_rows(prior, n):
    """The prior's eps scratch with one row per sample (or run): a tuple of (n, ...) arrays."""
    return tuple(np.empty((n,) + np.shape(a)) for a in prior.eps_scratch())


def normals(prior, n, seed=None):
    """``(n, T + 1, d)`` standard normals from ``seed`` (the chains' randomness)."""
    rng = val.as_generator(seed)
    return rng.standard_normal((n, prior.n_stages + 1, prior.dim))


def _z(prior, z):
    z = np.ascontiguousarray(z, dtype=np.float64)
    want = (prior.n_stages + 1, prior.dim)
    if z.ndim != 3 or z.shape[1:] != want:
        raise ValueError(f"z must have shape (n, {want[0]}, {want[1]}), got {z.shape}")
    return z


def eps_rows(prior, t, S):
    """``eps_t`` at the rows of ``S`` (n, d) through the compiled body."""
    S = np.ascontiguousarray(S, dtype=np.float64)
    out = np.empty_like(S)
    cpu.diffusion_eps(prior.eps_bodies)(prior.eps_params, int(t), S, out, prior.eps_scratch())
    return out


def vjp_rows(prior, t, S, V):
    """``J_t(S[j])^T V[j]`` for the rows of ``S``, ``V`` (n, d) through the compiled body."""
    S = np.ascontiguousarray(S, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    out = np.empty_like(S)
    cpu.diffusion_vjp(prior.eps_bodies)(prior.eps_params, int(t), S, V, out,
                                        prior.eps_scratch())
    return out


def reverse_mean(prior, t, s):
    """``mu_t(s)`` for one ``s`` (d,)."""
    ca = prior.chain_arrays()
    out = np.empty(prior.dim)
    cpu.diffusion_reverse_mean(prior.eps_bodies)(ca.coef, prior.eps_params, int(t),
                                                 np.ascontiguousarray(s, dtype=np.float64),
                                                 out, prior.eps_scratch())
    return out


def _draws(driver, prior, z, inputs):
    """``(draws (n, d), ok (n,))`` of a chain driver that marks each draw finite or not:
    ``driver(prior.eps_bodies)(coef, eps_params, *inputs(chain_arrays), z, out,
    scratch_rows, ok)``; ``inputs`` is called after ``z`` is checked."""
    z = _z(prior, z)
    n = z.shape[0]
    ca = prior.chain_arrays()
    out = np.empty((n, prior.dim))
    ok = np.zeros(n, dtype=np.bool_)
    driver(prior.eps_bodies)(ca.coef, prior.eps_params, *inputs(ca), z, out,
                             scratch_rows(prior, n), ok)
    return out, ok


def _contiguous(*arrays):
    """The arrays as C-contiguous float64 (what the compiled drivers take)."""
    return tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)


def reverse_chain(prior, z):
    """Prior draws from the normals ``z`` (n, T + 1, d): the plain reverse chain."""
    out, ok = _draws(cpu.diffusion_chain, prior, z,
                     lambda ca: (ca.prec_chol, ca.start_mean, ca.start_chol))
    if not ok.all():
        n = ok.shape[0]
        raise DivergenceError(f"{type(prior).__name__} reverse chain", 0, None,
                              detail=f"{int((~ok).sum())} of {n} draws are not finite: "
                                     f"check the prior's eps parameters.")
    return out


def sample(prior, n, seed=None):
    """``n`` draws of ``prior`` by the compiled reverse chain, shape ``(n, dim)``."""
    n = val.positive_int(n, "n")
    return reverse_chain(prior, normals(prior, n, seed))


def laplace_linear(prior, G, h, w, z):
    """LaplaceDPS draws for the linear model (Theorem 2 of Kveton et al.).

    ``G = sum phi phi^T`` (d, d), ``h = sum phi y`` (d,), ``w = sigma^-2``; ``z``
    (n, T + 1, d). Returns ``(draws (n, d), ok (n,))``.
    """
    return _draws(cpu.diffusion_laplace_linear, prior, z,
                  lambda ca: (ca.prec, ca.start_prec, ca.start_b, *_contiguous(G, h), float(w)))


def laplace_glm(prior, potential, data, pscratch, z, tol=1e-8, max_iter=100):
    """LaplaceDPS draws for a GLM (Theorem 4 of Kveton et al.), one Newton solve per stage.

    ``data``: the likelihood's part of the potential (``model.kernel_data(prior=False)``),
    ``pscratch``: the potential's scratch for one parameter vector (copied per sample).
    Returns ``(draws (n, d), info (n, 3))`` with ``info[j] = (failed_stage, not_converged,
    iterations)`` (:func:`vits_ref.kernels.diffusion_chain.make_laplace_glm`).
    """
    z = _z(prior, z)
    n = z.shape[0]
    ca = prior.chain_arrays()
    out = np.empty((n, prior.dim))
    info = np.zeros((n, 3), dtype=np.int64)
    # one writable copy per sample (np.ascontiguousarray of a broadcast view is the
    # read-only view itself when n == 1)
    prows = tuple(np.repeat(np.asarray(a)[None], n, axis=0) for a in pscratch)
    cpu.diffusion_laplace_glm(prior.eps_bodies, potential)(
        ca.coef, prior.eps_params, ca.prec, ca.start_mean, ca.start_prec, ca.start_b, data,
        float(tol), int(max_iter), z, out, scratch_rows(prior, n), prows, info)
    return out, info


def dps_linear(prior, G, h, syy, z):
    """DPS draws for the linear model (Algorithm 4 of Kveton et al.) from the statistics
    ``G = sum phi phi^T``, ``h = sum phi y``, ``syy = sum y^2``. Returns ``(draws, ok)``."""
    return _draws(cpu.diffusion_dps, prior, z,
                  lambda ca: (ca.start_mean, ca.start_chol, *_contiguous(G, h), float(syy)))


def run_linear_bandit(prior, contexts, means, rewards, sigma=1.0, z=None, seeds=None,
                      first_run=0):
    """Many linear DiffTS bandit runs in one compiled loop over runs (blocks of runs in threads).

    Parameters
    ----------
    prior : DiffusionPriorBase
    contexts : (R, n, K, d) array
        Each run's arm features per round.
    means, rewards : (R, n, K) arrays
        Mean and realised rewards of every arm (the regret uses ``means``).
    sigma : float, default 1.0
        Reward noise of the linear-Gaussian likelihood, ``w = sigma^-2``.
    z : (R, n, T + 1, d) array, optional
        The chains' normals. Default: from ``seeds``.
    seeds : sequence of R seeds, optional
        Policy seeds: run ``r`` draws ``z[r]`` from the sampling stream of
        ``engine_streams(seeds[r])``, as ``DiffTS(prior, seed=seeds[r])`` does online, so
        the regret equals ``ThompsonSampling(DiffTS(...))``'s bit for bit.
    first_run : int, default 0
        Run number of row 0 (the block's offset in the seed's runs): a DivergenceError
        names run ``first_run + r`` of row ``r``.

    Returns
    -------
    regret : (R, n) ndarray
        Per-round regret (not cumulated).
    arms : (R, n) int64 ndarray

    Raises
    ------
    DivergenceError
        If a run's draw failed: the lowest such run (``first_run + r``) and the 1-based
        bandit round of its failed draw.
    """
    first_run = val.positive_int(first_run, "first_run", minimum=0)
    contexts = val.float_array(contexts, "contexts", ndim=4)
    R, n, K, d = contexts.shape
    if d != prior.dim:
        raise ValueError(f"contexts must have {prior.dim} features (the prior's dim), "
                         f"got shape {contexts.shape}")
    means = val.float_array(means, "means", ndim=3, shape=(R, n, K))
    rewards = val.float_array(rewards, "rewards", ndim=3, shape=(R, n, K))
    sigma = val.positive_float(sigma, "sigma")
    if z is None:
        if seeds is None or len(seeds) != R:
            raise ValueError(f"give z (R, n, T + 1, d) or one seed per run ({R})")
        z = np.stack([engine_streams(s)[0].standard_normal((n, prior.n_stages + 1, d))
                      for s in seeds])
    z = val.float_array(z, "z", ndim=4, shape=(R, n, prior.n_stages + 1, d))
    ca = prior.chain_arrays()
    regret = np.empty((R, n))
    arms = np.empty((R, n), dtype=np.int64)
    status = np.zeros(R, dtype=np.int64)
    cpu.diffts_linear_runs(prior.eps_bodies)(
        ca.coef, prior.eps_params, ca.prec, ca.start_prec, ca.start_b, 1.0 / sigma ** 2,
        contexts, means, rewards, z, regret, arms, scratch_rows(prior, R), status)
    raise_first_divergence(status, "DiffTS", first_run,
                           detail="A LaplaceDPS stage precision was not positive definite "
                                  "or a draw was not finite.")
    return regret, arms
