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

Block-safe: stores only through :mod:`.linalg`'s primitives (:mod:`.coop_linalg` says why).
"""

from vits_ref.config import kernel

from .linalg import (
    add_diff_vec,
    add_outer_pair,
    add_rows,
    axpy_vec,
    copy_mat,
    fill_vec,
    gemm_nn,
    gemm_nt,
    gemv,
    half_quadratic,
    mean_rows,
    scaled_identity,
    sub_rows,
    sub_rows_pair_mean,
    sub_vec,
)
from .potential import VARIANT_HF_CV, Potential, is_hessian_free, linear_scores


@kernel(inline=True)
def stats_add(V, b, etaV, eta_b, x, r, eta, track):
    """``b += r x``; with ``track`` also ``V += x x^T``, ``eta V``, ``eta b`` (one observation).

    Policies that never need ``V`` (LinTS and LinUCB keep their own factor or inverse)
    pass ``track=False`` unless a KL diagnostic is recorded. Stores only through
    primitives (block-safe): ``eta_b += (eta r) x``, ``etaV += (eta x_i) x_j``.
    """
    axpy_vec(r, x, b)
    if track:
        axpy_vec(eta * r, x, eta_b)
        add_outer_pair(x, eta, V, etaV)


@kernel(inline=True)
def stats_init(V, b, etaV, eta_b, lam, eta):
    """The default prior's statistics: ``V = lam I``, ``b = 0`` (and scaled by ``eta``)."""
    fill_vec(b, 0.0)
    fill_vec(eta_b, 0.0)
    scaled_identity(V, lam)
    scaled_identity(etaV, eta * lam)


@kernel(inline=True)
def grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """``G[m] = eta V theta_m - eta b``; ``H = eta V`` (a copy) when wanted."""
    etaV, eta_b = data[0], data[1]
    gemm_nt(thetas, etaV, G)  # (etaV theta_m)^T, etaV symmetric
    sub_rows(eta_b, G)
    if want_hessian:
        copy_mat(etaV, H)


@kernel(inline=True)
def value(data, theta, scratch):
    """``1/2 theta^T eta V theta - eta b^T theta`` (U without its constant)."""
    return half_quadratic(data[0], data[1], theta)


@kernel(inline=True)
def grad(data, theta, out, H, scratch):
    """``out = eta V theta - eta b`` (one BLAS matrix-vector product)."""
    etaV, eta_b = data[0], data[1]
    gemv(etaV, theta, out)
    sub_vec(eta_b, out)


@kernel
def linear_draws(mu, B, etaV, eta_b, eps, Z, G, g):
    """Draws ``theta_j = mu + B eps_j`` and gradients of the linear potential.

    ``eps`` (M, d) gives ``Z = eps B^T`` (rows ``B eps_j``), ``G`` (M, d) the gradients
    ``eta (V theta_j - b)`` (``etaV`` symmetric), and ``g`` their mean. ``Z`` is returned
    as ``(theta_j) - mu`` recomputed from the draws (what the Hessian-free estimator uses).
    """
    gemm_nt(eps, B, Z)
    add_rows(mu, Z)  # the draws theta_j
    gemm_nt(Z, etaV, G)  # (etaV theta_j)^T, etaV symmetric
    # G[j] -= eta b (the gradients), g their mean, and Z back to theta_j - mu for the
    # Hessian-free estimator
    sub_rows_pair_mean(mu, Z, eta_b, G, g)


@kernel(inline=True)
def vits_inputs(data, variant, mu, B, eps, Z, T, G, g, H, W1, gmu, scratch):
    """The VITS step's inputs on the linear potential (see the module docstring).

    VITS-I/II leave ``eta V mu`` in ``G[0]`` and the mean of the ``eps_j`` in ``Z[0]``.
    """
    etaV, eta_b = data[0], data[1]
    if is_hessian_free(variant):
        linear_draws(mu, B, etaV, eta_b, eps, Z, G, g)
        if variant == VARIANT_HF_CV:
            gemv(etaV, mu, gmu)
            sub_vec(eta_b, gmu)
        return etaV
    gemm_nn(etaV, B, W1)
    mean_rows(eps, Z[0])
    gemv(W1, Z[0], g)
    gemv(etaV, mu, G[0])
    add_diff_vec(G[0], eta_b, g)  # g + (eta V mu - eta b)
    return etaV


#: The linear potential's bodies (``data = (etaV, eta_b)``).
POTENTIAL = Potential("linear", grads_hessian, value, linear_scores, grad=grad,
                      vits_inputs=vits_inputs)
