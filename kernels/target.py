"""Approximating a fixed Gaussian target (VITS paper appendices F and I).

Target ``p* = N(m*, inv(P))`` seen as the linear potential
``U(theta) = 1/2 theta^T P theta - (P m*)^T theta``. Each method runs from a fixed start
and its Gaussian is compared with ``p*`` in KL after every step: VITS-I/II/Hessian-free
(:func:`vits_linear_steps`, one step at a time) and LMC, whose Gaussian is the running
mean and covariance of the chain after ``burn_in`` steps (appendix F). Noise comes in
blocks filled by the driver (:func:`vits_ref.drivers.cpu.trace_many`), so the bodies draw
nothing.
"""

import math

from vits_ref.config import kernel

from .diagnostics import kl_to_linear_posterior
from .langevin import make_langevin_steps
from .linalg import all_finite_mat, cholesky
from .linear import POTENTIAL as LINEAR
from .vits import make_vits_steps

METHOD_LMC = -1  # otherwise the method is a kernels.vits.VARIANT_* code

_vits_steps = make_vits_steps(LINEAR)
_langevin_steps = make_langevin_steps(LINEAR)


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
def vi_block(variant, symmetrize, mu, B, C, P, Pm, h, eps, record, scr, kscr):
    """Run ``eps.shape[0]`` VITS steps, writing the KL after each into ``record``.

    ``scr``: the step's scratch (:func:`vits_ref.kernels.vits.make_vits_steps`); ``kscr =
    (Lv, Ls, W, v1)`` the KL's. Returns the number of steps done: fewer if the state became
    non-finite (then the remaining records are inf).
    """
    Lv, Ls, W, v1 = kscr
    n = eps.shape[0]
    for s in range(n):
        ok = _vits_steps(variant, symmetrize, mu, B, C, (P, Pm), eps[s:s + 1], h, h, scr, 0)
        if not (ok and all_finite_mat(B)):
            for r in range(s, n):
                record[r] = math.inf
            return s
        record[s] = kl_to_linear_posterior(mu, B, P, Pm, 1.0, Lv, Ls, W, v1)
    return n


@kernel
def lmc_block(theta, P, Pm, h, eps, step0, burn_in, moments, record, grad, kscr):
    """Run ``eps.shape[0]`` Langevin steps; after ``burn_in`` steps keep running moments.

    ``step0`` is the number of steps done before this block. ``record`` gets the KL of
    ``N(running mean, running covariance)`` (inf during burn-in and until the covariance
    is positive definite). Welford updates, so ``comoment`` / n is the covariance.
    ``moments = (mean, comoment, cov)``; ``kscr = (Lv, Ls, W, v1)``.
    """
    mean, comoment, cov = moments
    Lv, Ls, W, v1 = kscr
    n, _, d = eps.shape
    for s in range(n):
        _langevin_steps(theta, (P, Pm), eps[s], h, grad, W, 0)
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


