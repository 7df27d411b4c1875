"""VITS inner steps (VITS paper, Algorithms 2 and 3; ALGORITHMS.md section 2).

State ``(mu, B, C)``: Gaussian ``N(mu, B B^T)``, ``C ~ inv(B)``. One step with step
sizes ``h_mu`` (mean) and ``h`` (square root), averaged gradient ``g`` and matrix ``A``::

    mu <- mu - h_mu g
    VITS-I :  B <- (I - h A) B + h inv(B)^T
    VITS-II:  B <- (I - h A) B + h C^T,   C <- C (I - h (C^T C - A))

``A`` is the Hessian at the draw(s) for VITS-I/II, and for the Hessian-free variant
``A = (C^T C) mean_j (theta_j - mu) grad U(theta_j)^T`` (eq. 13 with the typo fixed),
optionally with the control variate ``grad U(mu)`` subtracted (:data:`VARIANT_HF_CV`).
The ``A`` and ``mu`` updates use the same draws; ``B`` and ``C`` are updated from the
old ``(B, C)``.
"""

import numpy as np

from vits_ref.config import cpu_jit, kernel

from .linalg import (
    all_finite_mat,
    all_finite_vec,
    gemm_nn,
    gemm_nt,
    gemm_tn,
    gemv,
    gram,
    inv_transpose,
)
from .logistic import logistic_grads_hessian

VARIANT_I = 0
VARIANT_II = 1
VARIANT_HF = 2
#: Hessian-free with the control variate ``grad U(mu)``:
#: ``A = (C^T C) mean_j (theta_j - mu)(grad U(theta_j) - grad U(mu))^T``. Unbiased like the
#: plain estimator (``E[theta_j - mu] = 0``), without its noise term
#: ``mean_j (theta_j - mu) grad U(mu)^T``, which is large while ``mu`` is far from the mode.
VARIANT_HF_CV = 3


@kernel
def vits_apply(variant, mu, B, C, g, A, AB, CtC, h_mu, h, W2, work2d):
    """Apply one VITS step given the averaged gradient ``g``, ``A`` and ``AB = A @ B``.

    ``CtC`` must hold ``C^T C`` for variants II and Hessian-free (the caller computes it
    because the Hessian-free ``A`` needs it too); it is overwritten. ``W2`` (d, d) and
    ``work2d`` (d, 2d) are scratch. Returns False if VITS-I meets a singular ``B`` (the
    caller reports divergence).
    """
    d = mu.shape[0]
    W1 = AB
    for i in range(d):
        mu[i] -= h_mu * g[i]
    if variant == VARIANT_I:
        if not inv_transpose(B, W2, work2d):
            return False
        for i in range(d):
            for j in range(d):
                B[i, j] += h * (W2[i, j] - W1[i, j])
        return True
    for i in range(d):
        for j in range(d):
            CtC[i, j] -= A[i, j]
    gemm_nn(C, CtC, W2)  # C (C^T C - A), from the old C
    for i in range(d):
        for j in range(d):
            B[i, j] += h * (C[j, i] - W1[i, j])
    for i in range(d):
        for j in range(d):
            C[i, j] -= h * W2[i, j]
    return True


@kernel
def linear_draws(mu, B, etaV, eta_b, eps, Z, G, g):
    """Draws ``theta_j = mu + B eps_j`` and gradients of the linear potential.

    ``eps`` (M, d) gives ``Z = eps B^T`` (rows ``B eps_j``), ``G`` (M, d) the gradients
    ``eta (V theta_j - b)`` (``etaV`` symmetric), and ``g`` their mean.
    """
    M, d = eps.shape
    gemm_nt(eps, B, Z)
    for m in range(M):
        for i in range(d):
            Z[m, i] += mu[i]
    gemm_nt(Z, etaV, G)  # (etaV theta_j)^T, etaV symmetric
    for i in range(d):
        g[i] = 0.0
    for m in range(M):
        for i in range(d):
            G[m, i] -= eta_b[i]
            g[i] += G[m, i]
            Z[m, i] -= mu[i]  # back to theta_j - mu for the Hessian-free estimator
    for i in range(d):
        g[i] /= M


@kernel
def subtract_rows(G, v):
    """``G[m] -= v`` for every row (the Hessian-free control variate)."""
    for m in range(G.shape[0]):
        for i in range(G.shape[1]):
            G[m, i] -= v[i]


@kernel
def hessian_free_matrix(C, Z, G, CtC, D, A, symmetrize):
    """``A = (C^T C) mean_j z_j g_j^T`` with ``z_j = theta_j - mu`` (rows of Z, G).

    Also leaves ``C^T C`` in ``CtC``; ``D`` is scratch. With ``symmetrize``,
    ``A <- (A + A^T) / 2``.
    """
    M, d = Z.shape
    gemm_tn(Z, G, D)
    for i in range(d):
        for j in range(d):
            D[i, j] /= M
    gram(C, CtC)
    gemm_nn(CtC, D, A)
    if symmetrize:
        for i in range(d):
            for j in range(i + 1, d):
                s = 0.5 * (A[i, j] + A[j, i])
                A[i, j] = s
                A[j, i] = s


@kernel
def vits_linear_steps(variant, symmetrize, mu, B, C, etaV, eta_b, eps, h_mu, h,
                      A, CtC, D, W1, W2, work2d, Z, G, g):
    """Run ``S = eps.shape[0]`` VITS steps on the linear potential, in place.

    ``U(theta) = 1/2 theta^T (eta V) theta - (eta b)^T theta``: gradient
    ``eta (V theta - b)``, Hessian ``eta V`` (constant, so VITS-I/II use ``A = etaV``).
    ``eps`` (S, M, d) are the standard normals of the ``M`` draws of each step.
    Returns False if a VITS-I step meets a singular ``B``.
    """
    S, M, d = eps.shape
    for s in range(S):
        if variant == VARIANT_HF or variant == VARIANT_HF_CV:
            linear_draws(mu, B, etaV, eta_b, eps[s], Z, G, g)
            if variant == VARIANT_HF_CV:
                gmu = W2[0]  # scratch row, free until vits_apply
                gemv(etaV, mu, gmu)
                for i in range(d):
                    gmu[i] -= eta_b[i]
                subtract_rows(G, gmu)
            hessian_free_matrix(C, Z, G, CtC, D, A, symmetrize)
            gemm_nn(A, B, W1)
            ok = vits_apply(variant, mu, B, C, g, A, W1, CtC, h_mu, h, W2, work2d)
        else:
            # The Hessian is constant, so the mean gradient over the draws is
            # eta V mu - eta b + (eta V B) mean_j eps_j: it reuses A B = eta V B, which the
            # square-root update needs anyway (two BLAS calls fewer per step).
            gemm_nn(etaV, B, W1)
            for i in range(d):
                e = 0.0
                for m in range(M):
                    e += eps[s, m, i]
                Z[0, i] = e / M
            gemv(W1, Z[0], g)
            gemv(etaV, mu, G[0])
            for i in range(d):
                g[i] += G[0, i] - eta_b[i]
            if variant == VARIANT_II:
                gram(C, CtC)
            ok = vits_apply(variant, mu, B, C, g, etaV, W1, CtC, h_mu, h, W2, work2d)
        if not ok:
            return False
    return True


@kernel
def gaussian_draw(mu, B, eps, out):
    """``out = mu + B eps``."""
    gemv(B, eps, out)
    for i in range(mu.shape[0]):
        out[i] += mu[i]


@cpu_jit
def linear_steps_cpu(variant, symmetrize, mu, B, C, etaV, eta_b, eps, h_mu, h):
    """CPU driver of :func:`vits_linear_steps` for the engine API (allocates scratch)."""
    S, M, d = eps.shape
    mats = np.empty((5, d, d))
    work2d = np.empty((d, 2 * d))
    Z = np.empty((M, d))
    G = np.empty((M, d))
    g = np.empty(d)
    return vits_linear_steps(variant, symmetrize, mu, B, C, etaV, eta_b, eps, h_mu, h,
                             mats[0], mats[1], mats[2], mats[3], mats[4], work2d, Z, G, g)


@kernel
def vits_model_step(variant, symmetrize, mu, B, C, Z, G, H, gmu, h_mu, h,
                    A, CtC, D, W1, W2, work2d, g):
    """One VITS step for any potential, given the draws and their gradients.

    ``Z`` (M, d) holds ``theta_j - mu`` (``B eps_j``), ``G`` (M, d) the gradients
    ``grad U(theta_j)`` (modified under the control variate), ``H`` (d, d) the mean
    Hessian over the draws (ignored by the Hessian-free variants), ``gmu`` the gradient at
    ``mu`` (used by :data:`VARIANT_HF_CV` only). Same update as :func:`vits_linear_steps`;
    returns False if VITS-I meets a singular ``B``.
    """
    M, d = Z.shape
    for i in range(d):
        s = 0.0
        for m in range(M):
            s += G[m, i]
        g[i] = s / M
    if variant == VARIANT_HF or variant == VARIANT_HF_CV:
        if variant == VARIANT_HF_CV:
            subtract_rows(G, gmu)
        hessian_free_matrix(C, Z, G, CtC, D, A, symmetrize)
        gemm_nn(A, B, W1)
        return vits_apply(variant, mu, B, C, g, A, W1, CtC, h_mu, h, W2, work2d)
    if variant == VARIANT_II:
        gram(C, CtC)
    gemm_nn(H, B, W1)
    return vits_apply(variant, mu, B, C, g, H, W1, CtC, h_mu, h, W2, work2d)


@cpu_jit
def model_step_cpu(variant, symmetrize, mu, B, C, Z, G, H, gmu, h_mu, h, mats, work2d, g):
    """CPU driver of :func:`vits_model_step`; scratch ``mats`` (5, d, d), ``work2d``
    (d, 2d) and ``g`` (d,) come from the caller, which keeps them across steps (at
    d = 861 fresh buffers would page-fault 30 MB per step)."""
    return vits_model_step(variant, symmetrize, mu, B, C, Z, G, H, gmu, h_mu, h,
                           mats[0], mats[1], mats[2], mats[3], mats[4], work2d, g)


@kernel
def vits_logistic_steps(variant, symmetrize, mu, B, C, X, y, eta, lam, eps, h_mu, h,
                        thetas, Zd, G, H, gmu, Zn, Zn1, wbar, Xw, A, CtC, D, W1, W2, work2d,
                        g):
    """``S = eps.shape[0]`` VITS steps on the logistic potential, in place (one body).

    Each step draws ``thetas = mu + eps_s B^T`` (rows), evaluates the gradients and the
    mean Hessian with :func:`kernels.logistic.logistic_grads_hessian` on the history
    ``X``, ``y`` (default prior ``N(0, I/(lam eta))``), and applies
    :func:`vits_model_step`. Scratch: ``thetas``, ``Zd``, ``G`` (M, d); ``H`` (d, d);
    ``gmu``, ``g`` (d,); ``Zn`` (n, M); ``Zn1`` (n, 1); ``wbar`` (n,); ``Xw`` (n, d);
    the step's ``A``, ``CtC``, ``D``, ``W1``, ``W2`` (d, d) and ``work2d`` (d, 2d).
    Returns False on a singular ``B`` (VITS-I) or a non-finite state.
    """
    S, M, d = eps.shape
    want_h = variant != VARIANT_HF and variant != VARIANT_HF_CV
    for s in range(S):
        gemm_nt(eps[s], B, Zd)
        for m in range(M):
            for i in range(d):
                thetas[m, i] = mu[i] + Zd[m, i]
        logistic_grads_hessian(X, y, thetas, eta, lam, want_h, Zn, wbar, Xw, G, H)
        if variant == VARIANT_HF_CV:
            for i in range(d):
                thetas[0, i] = mu[i]
            # the gradient at the mean, through the same body on a one-row batch
            logistic_grads_hessian(X, y, thetas[:1], eta, lam, False, Zn1, wbar, Xw, W2[:1],
                                   H)
            for i in range(d):
                gmu[i] = W2[0, i]
        if not vits_model_step(variant, symmetrize, mu, B, C, Zd, G, H, gmu, h_mu, h,
                               A, CtC, D, W1, W2, work2d, g):
            return False
        if not (all_finite_vec(mu) and all_finite_mat(B)):
            return False
    return True


@cpu_jit
def logistic_steps_cpu(variant, symmetrize, mu, B, C, X, y, eta, lam, eps, h_mu, h, wbar, Xw):
    """CPU driver of :func:`vits_logistic_steps`; ``wbar``/``Xw`` are the model's scratch
    (sized with its capacity, sliced to the history here)."""
    S, M, d = eps.shape
    n = X.shape[0]
    thetas = np.empty((M, d))
    Zd = np.empty((M, d))
    G = np.empty((M, d))
    H = np.zeros((d, d))
    gmu = np.zeros(d)
    Zn = np.empty((n, M))
    Zn1 = np.empty((n, 1))
    mats = np.empty((5, d, d))
    work2d = np.empty((d, 2 * d))
    g = np.empty(d)
    return vits_logistic_steps(variant, symmetrize, mu, B, C, X, y, eta, lam, eps, h_mu, h,
                               thetas, Zd, G, H, gmu, Zn, Zn1, wbar[:n], Xw[:n], mats[0], mats[1],
                               mats[2], mats[3], mats[4], work2d, g)
