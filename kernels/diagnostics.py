"""Posterior-quality diagnostics computed inside compiled loops.

Block-safe: stores only through :mod:`.linalg`'s primitives (:mod:`.coop_linalg` says why).
"""

import math

from vits_ref.config import kernel

from .linalg import (
    cholesky,
    gemm_nt,
    gemm_tn,
    log_abs_det_chol,
    solve_lower,
    solve_lower_t,
    sub_vec,
)


@kernel
def kl_to_linear_posterior(mu, B, V, b, eta, Lv, Ls, W, v1):
    """``KL(N(mu, B B^T) || N(V^-1 b, inv(eta V)))`` via Cholesky factors.

    ``KL = 1/2 [eta tr(V S) + eta |L_V^T (m - mu)|^2 - d - d log eta - logdet V - logdet S]``
    with ``S = B B^T`` and ``m = V^-1 b`` (docs/algorithms.md section 1). ``Lv``, ``Ls``, ``W``
    (d, d) and ``v1`` (d,) are scratch. Returns inf if ``B B^T`` is singular; values in
    ``(-1e-12 d, 0)`` (rounding) are returned as 0.
    """
    d = mu.shape[0]
    if not cholesky(V, Lv):
        return math.inf
    gemm_nt(B, B, W)
    if not cholesky(W, Ls):
        return math.inf
    logdet_q = log_abs_det_chol(Ls)
    logdet_v = log_abs_det_chol(Lv)
    gemm_tn(Lv, B, W)  # L_V^T B: eta tr(V B B^T) = eta |L_V^T B|_F^2
    tr = 0.0
    for i in range(d):
        for j in range(d):
            tr += W[i, j] * W[i, j]
    solve_lower(Lv, b, v1)
    solve_lower_t(Lv, v1, v1)
    sub_vec(mu, v1)
    quad = 0.0
    for i in range(d):
        s = 0.0
        for k in range(i, d):
            s += Lv[k, i] * v1[k]
        quad += s * s
    kl = 0.5 * (eta * tr + eta * quad - d - d * math.log(eta) - logdet_v - logdet_q)
    # rounding of an exact posterior can give -1e-14; clip it like gaussian.kl does
    if kl < 0.0 and kl > -1e-12 * d:
        return 0.0
    return kl
