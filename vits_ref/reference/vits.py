"""Plain-NumPy VITS steps (VITS paper, Algorithms 2 and 3; docs/algorithms.md section 2).

State ``(mu, B, C)``: the Gaussian ``N(mu, B B^T)`` and ``C ~ inv(B)``. Given the mean
gradient ``g`` over a step's draws and the matrix ``A`` (the mean Hessian, or the
Hessian-free estimate), one step is written once, in :func:`vits_update`::

    mu <- mu - h_mu g
    VITS-I :  B <- B - h A B + h inv(B)^T
    VITS-II:  B <- B - h A B + h C^T,   C <- C - h C (C^T C - A)

:func:`vits_step` is a step on the linear potential (what the fused bandit loop and the
linear engine run, every variant); :func:`vits_ii_step` and :func:`vits_ii_round` take the
gradients and the Hessian from any potential (the logistic and MLP references of
:mod:`~vits_ref.reference.logistic` and :mod:`~vits_ref.reference.mlp`), as the non-linear
benchmarks do.

Examples
--------
>>> import numpy as np
>>> from vits_ref.reference import vits_step
>>> from vits_ref.kernels.potential import VARIANT_II
>>> V, b = np.diag([2.0, 3.0]), np.array([1.0, -1.0])
>>> mu, B, C = np.zeros(2), np.eye(2), np.eye(2)
>>> for _ in range(2000):   # no draws' noise: eps = 0, so mu follows the gradient flow
...     mu, B, C = vits_step(VARIANT_II, mu, B, C, V, b, np.zeros((1, 2)), 0.05, 0.05)
>>> np.allclose(mu, np.linalg.solve(V, b)), np.allclose(B @ B.T, np.linalg.inv(V))
(True, True)
"""

import numpy as np

from ..kernels.potential import VARIANT_HF, VARIANT_HF_CV, VARIANT_I, VARIANT_II


def vits_update(variant, mu, B, C, g, A, h_mu, h):
    """One VITS step from the mean gradient ``g`` and the matrix ``A``; returns the new state.

    ``B`` and ``C`` are updated from the old ``(B, C)``; VITS-I leaves ``C`` as it is.
    """
    mu = mu - h_mu * g
    if variant == VARIANT_I:
        return mu, B - h * (A @ B) + h * np.linalg.inv(B).T, C
    B_new = B - h * (A @ B) + h * C.T
    C_new = C - h * (C @ (C.T @ C - A))
    return mu, B_new, C_new


def vits_step(variant, mu, B, C, etaV, eta_b, eps, h_mu, h, symmetrize=False):
    """One VITS step on the linear potential ``U = 1/2 theta^T etaV theta - eta_b^T theta``.

    ``eps`` (M, d): the standard normals of the step's M draws ``theta_j = mu + B eps_j``.
    VITS-I/II use ``A = etaV``; the Hessian-free variants
    ``A = (C^T C) mean_j (theta_j - mu) grad U(theta_j)^T`` (with the control variate
    ``grad U(mu)`` subtracted from the gradients for :data:`VARIANT_HF_CV`), symmetrised on
    request. Returns ``(mu, B, C)``.
    """
    Z = eps @ B.T                      # theta_j - mu
    G = (mu + Z) @ etaV - eta_b        # grad U(theta_j) (etaV symmetric)
    g = G.mean(axis=0)
    if variant in (VARIANT_HF, VARIANT_HF_CV):
        if variant == VARIANT_HF_CV:  # control variate: the gradient at the mean
            G = G - (mu @ etaV - eta_b)
        A = (C.T @ C) @ (Z.T @ G / eps.shape[0])
        if symmetrize:
            A = 0.5 * (A + A.T)
    else:
        A = etaV
    return vits_update(variant, mu, B, C, g, A, h_mu, h)


def vits_ii_step(mu, B, C, G, H, h_mu, h):
    """One VITS-II step from the draws' gradients ``G`` (M, d) and their mean Hessian ``H``."""
    return vits_update(VARIANT_II, mu, B, C, G.mean(axis=0), H, h_mu, h)


def vits_ii_round(grads_hessian, mu, B, C, eps, h_mu, h):
    """``eps.shape[0]`` VITS-II steps on any potential; returns the state ``(mu, B, C)``.

    ``grads_hessian(thetas) -> (G, H)``: the gradients at the rows of ``thetas`` (M, d) and
    their mean Hessian (or Gauss-Newton matrix). ``eps`` (S, M, d): the standard normals of
    each step's M draws. Raises FloatingPointError on a non-finite state.
    """
    for s in range(eps.shape[0]):
        G, H = grads_hessian(mu + eps[s] @ B.T)
        mu, B, C = vits_ii_step(mu, B, C, G, H, h_mu, h)
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(B)) and np.all(np.isfinite(C))):
        raise FloatingPointError("non-finite VITS-II state")
    return mu, B, C
