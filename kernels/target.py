"""Approximating a fixed Gaussian target (VITS paper appendices F and I).

Target ``p* = N(m*, inv(P))`` seen as the linear potential
``U(theta) = 1/2 theta^T P theta - (P m*)^T theta``. Each method runs from a fixed start
and its Gaussian is compared with ``p*`` in KL after every step: VITS-I/II/Hessian-free
(:func:`vits_linear_steps`, one step at a time) and LMC, whose Gaussian is the running
mean and covariance of the chain after ``burn_in`` steps (appendix F). Noise comes in
blocks filled by the CPU driver, so the bodies draw nothing.
"""

import math

import numpy as np
from numba import prange

from vits_ref.config import cpu_jit, kernel

from .baselines import langevin_linear_steps
from .diagnostics import kl_to_linear_posterior
from .linalg import all_finite_mat, cholesky
from .vits import vits_linear_steps

METHOD_LMC = -1  # otherwise the method is a kernels.vits.VARIANT_* code


@kernel
def kl_to_moments(mean, cov, P, Pm, Lv, Ls, W, v1):
    """``KL(N(mean, cov) || N(P^-1 Pm, inv(P)))``; inf if ``cov`` is not positive definite."""
    if not cholesky(cov, Ls):
        return math.inf
    # kl_to_linear_posterior takes a square root B of the covariance: Ls is one
    for i in range(mean.shape[0]):
        for j in range(mean.shape[0]):
            W[i, j] = Ls[i, j]
    return kl_to_linear_posterior(mean, W, P, Pm, 1.0, Lv, Ls, cov, v1)


@kernel
def vi_block(variant, symmetrize, mu, B, C, P, Pm, h, eps, record, A, CtC, D, W1, W2, work2d,
             Z, G, g, Lv, Ls, W, v1):
    """Run ``eps.shape[0]`` VITS steps, writing the KL after each into ``record``.

    Returns the number of steps done: fewer if the state became non-finite (then the
    remaining records are inf).
    """
    n = eps.shape[0]
    for s in range(n):
        ok = vits_linear_steps(variant, symmetrize, mu, B, C, P, Pm, eps[s:s + 1], h, h,
                               A, CtC, D, W1, W2, work2d, Z, G, g)
        if not (ok and all_finite_mat(B)):
            for r in range(s, n):
                record[r] = math.inf
            return s
        record[s] = kl_to_linear_posterior(mu, B, P, Pm, 1.0, Lv, Ls, W, v1)
    return n


@kernel
def lmc_block(theta, P, Pm, h, eps, step0, burn_in, mean, comoment, cov, record, grad,
              Lv, Ls, W, v1):
    """Run ``eps.shape[0]`` Langevin steps; after ``burn_in`` steps keep running moments.

    ``step0`` is the number of steps done before this block. ``record`` gets the KL of
    ``N(running mean, running covariance)`` (inf during burn-in and until the covariance
    is positive definite). Welford updates, so ``comoment`` / n is the covariance.
    """
    n, _, d = eps.shape
    for s in range(n):
        langevin_linear_steps(theta, P, Pm, eps[s], h, grad)
        k = step0 + s + 1 - burn_in  # samples averaged so far
        if k <= 0:
            record[s] = math.inf
            continue
        for i in range(d):
            delta = theta[i] - mean[i]
            mean[i] += delta / k
            v1[i] = delta
        for i in range(d):
            for j in range(d):
                comoment[i, j] += v1[i] * (theta[j] - mean[j])
        if k <= d:
            record[s] = math.inf
            continue
        for i in range(d):
            for j in range(d):
                cov[i, j] = 0.5 * (comoment[i, j] + comoment[j, i]) / k
        record[s] = kl_to_moments(mean, cov, P, Pm, Lv, Ls, W, v1)
    return n


@cpu_jit
def trace_one(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl, seed, record):
    """KL after each of up to ``n_steps`` steps of one method from the standard start.

    VITS starts at ``N(0, I)`` (``B = C = I``), LMC at ``theta = 0``. Stops early once the
    KL is ``<= eps_kl`` (pass 0 to run all steps). Normals come from Numba's generator
    seeded with ``seed`` in blocks of 1000 steps (deterministic per call, whatever the
    thread). Returns the number of steps recorded.
    """
    np.random.seed(seed)  # noqa: NPY002 - Numba's per-thread generator, seeded per run
    d = P.shape[0]
    M = n_mc if method != METHOD_LMC else 1
    block = 1000
    mu = np.zeros(d)
    B = np.eye(d)
    C = np.eye(d)
    mats = np.empty((5, d, d))
    work2d = np.empty((d, 2 * d))
    Z = np.empty((M, d))
    G = np.empty((M, d))
    vecs = np.empty((3, d))
    Lv = np.empty((d, d))
    Ls = np.empty((d, d))
    W = np.empty((d, d))
    mean = np.zeros(d)
    comoment = np.zeros((d, d))
    cov = np.empty((d, d))
    done = 0
    while done < n_steps:
        n = min(block, n_steps - done)
        eps = np.random.standard_normal((n, M, d))  # noqa: NPY002
        rec = record[done:done + n]
        if method == METHOD_LMC:
            got = lmc_block(mu, P, Pm, h, eps, done, burn_in, mean, comoment, cov, rec,
                            vecs[0], Lv, Ls, W, vecs[1])
        else:
            got = vi_block(method, symmetrize, mu, B, C, P, Pm, h, eps, rec, mats[0], mats[1],
                           mats[2], mats[3], mats[4], work2d, Z, G, vecs[0], Lv, Ls, W, vecs[1])
        if got < n:
            return done + got
        if eps_kl > 0.0:
            for s in range(n):
                if rec[s] <= eps_kl:
                    return done + s + 1
        done += n
    return done


@cpu_jit(parallel=True)
def trace_many(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl, seeds, records,
               counts):
    """``prange`` over seeds (one run per iteration; result independent of threads)."""
    for r in prange(seeds.shape[0]):
        counts[r] = trace_one(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl,
                              seeds[r], records[r])
