"""The linear-Gaussian potential, from its sufficient statistics (docs/algorithms.md section 1).

::

    U(theta) = 1/2 theta^T (eta V) theta - (eta b)^T theta + const
    grad U   = eta (V theta - b),   hess U = eta V

``data = (etaV, eta_b)``: the statistics already scaled by ``eta`` (``V = lam I + sum x
x^T``, ``b = sum r x``, or their general-prior forms), so no step multiplies by ``eta``
again. ``scratch`` is unused (pass an empty tuple or any placeholder).

The Hessian is constant, which gives the VITS step two shortcuts (:func:`vits_inputs`):
VITS-I/II take the mean gradient over the draws as
``eta V mu - eta b + (eta V B) mean_j eps_j``, reusing ``A B = eta V B`` that the square-root
update needs anyway (two BLAS calls fewer per step), and ``A`` is ``eta V`` itself.
"""

from vits_ref.config import kernel

from .linalg import gemm_nn, gemm_nt, gemv, half_quadratic
from .potential import VARIANT_HF_CV, Potential, is_hessian_free, linear_scores


@kernel(inline=True)
def stats_add(V, b, etaV, eta_b, x, r, eta, track):
    """``b += r x``; with ``track`` also ``V += x x^T``, ``eta V``, ``eta b`` (one observation).

    Policies that never need ``V`` (LinTS and LinUCB keep their own factor or inverse)
    pass ``track=False`` unless a KL diagnostic is recorded.
    """
    d = x.shape[0]
    for i in range(d):
        b[i] += r * x[i]
    if track:
        er = eta * r  # (eta r) x_i and (eta x_i) x_j: the products' order, hoisted
        for i in range(d):
            eta_b[i] += er * x[i]
            xi = x[i]
            exi = eta * xi
            for j in range(d):
                V[i, j] += xi * x[j]
                etaV[i, j] += exi * x[j]


@kernel(inline=True)
def stats_init(V, b, etaV, eta_b, lam, eta):
    """The default prior's statistics: ``V = lam I``, ``b = 0`` (and scaled by ``eta``)."""
    d = b.shape[0]
    for i in range(d):
        b[i] = 0.0
        eta_b[i] = 0.0
        for j in range(d):
            V[i, j] = lam if i == j else 0.0
            etaV[i, j] = eta * lam if i == j else 0.0


@kernel(inline=True)
def grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """``G[m] = eta V theta_m - eta b``; ``H = eta V`` (a copy) when wanted."""
    etaV, eta_b = data[0], data[1]
    M, d = thetas.shape
    gemm_nt(thetas, etaV, G)  # (etaV theta_m)^T, etaV symmetric
    for m in range(M):
        for i in range(d):
            G[m, i] -= eta_b[i]
    if want_hessian:
        for i in range(d):
            for j in range(d):
                H[i, j] = etaV[i, j]


@kernel(inline=True)
def value(data, theta, scratch):
    """``1/2 theta^T eta V theta - eta b^T theta`` (U without its constant)."""
    return half_quadratic(data[0], data[1], theta)


@kernel(inline=True)
def grad(data, theta, out, H, scratch):
    """``out = eta V theta - eta b`` (one BLAS matrix-vector product)."""
    etaV, eta_b = data[0], data[1]
    gemv(etaV, theta, out)
    for i in range(theta.shape[0]):
        out[i] -= eta_b[i]


@kernel
def linear_draws(mu, B, etaV, eta_b, eps, Z, G, g):
    """Draws ``theta_j = mu + B eps_j`` and gradients of the linear potential.

    ``eps`` (M, d) gives ``Z = eps B^T`` (rows ``B eps_j``), ``G`` (M, d) the gradients
    ``eta (V theta_j - b)`` (``etaV`` symmetric), and ``g`` their mean. ``Z`` is returned
    as ``(theta_j) - mu`` recomputed from the draws (what the Hessian-free estimator uses).
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


@kernel(inline=True)
def vits_inputs(data, variant, mu, B, eps, Z, T, G, g, H, W1, gmu, scratch):
    """The VITS step's inputs on the linear potential (see the module docstring)."""
    etaV, eta_b = data[0], data[1]
    M, d = eps.shape
    if is_hessian_free(variant):
        linear_draws(mu, B, etaV, eta_b, eps, Z, G, g)
        if variant == VARIANT_HF_CV:
            gemv(etaV, mu, gmu)
            for i in range(d):
                gmu[i] -= eta_b[i]
        return etaV
    gemm_nn(etaV, B, W1)
    for i in range(d):
        e = 0.0
        for m in range(M):
            e += eps[m, i]
        Z[0, i] = e / M
    gemv(W1, Z[0], g)
    gemv(etaV, mu, G[0])
    for i in range(d):
        g[i] += G[0, i] - eta_b[i]
    return etaV


#: The linear potential's bodies (``data = (etaV, eta_b)``).
POTENTIAL = Potential("linear", grads_hessian, value, linear_scores, grad=grad,
                      vits_inputs=vits_inputs)
