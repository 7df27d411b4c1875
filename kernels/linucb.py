"""LinUCB with ``inv(V)`` kept by Sherman-Morrison updates (O(d^2) per round).

Scores ``x_a theta_hat + alpha sqrt(x_a^T inv(V) x_a)`` with ``theta_hat = inv(V) b`` and
``V = lam I + sum x x^T`` (Li et al. 2010; the VITS paper's baseline).

Block-safe: stores only through :mod:`.linalg`'s primitives (:mod:`.coop_linalg` says why).
"""

from typing import NamedTuple

from vits_ref.config import kernel

from .bandit import BanditPiece, argmax
from .linalg import (
    add_sqrt_rowdots,
    all_finite_mat,
    all_finite_vec,
    axpy_vec,
    fill_vec,
    gemm_nn,
    gemv,
    scaled_identity,
    sub_outer_div,
)
from .views import take, take2


@kernel
def linucb_scores(Vinv, b, alpha, X, theta, VX, out):
    """``out_a = x_a theta_hat + alpha sqrt(x_a^T inv(V) x_a)``, ``theta_hat = inv(V) b``.

    ``VX`` (K, d) is scratch for ``X inv(V)`` (inv(V) symmetric).
    """
    gemv(Vinv, b, theta)
    gemv(X, theta, out)
    gemm_nn(X, Vinv, VX)
    add_sqrt_rowdots(alpha, X, VX, out)


@kernel
def sherman_morrison(Vinv, x, u):
    """``inv(V + x x^T) = inv(V) - (inv(V) x)(inv(V) x)^T / (1 + x^T inv(V) x)``, in place."""
    gemv(Vinv, x, u)
    den = 1.0
    for i in range(x.shape[0]):  # a reduction: reads only
        den += x[i] * u[i]
    sub_outer_div(u, u, den, Vinv)


# --------------------------------------------------------------------------- bandit piece


class LinUCBParams(NamedTuple):
    """The hyperparameters :data:`PIECE`'s bodies read (built by
    :meth:`vits_ref.LinUCB.fused`)."""

    #: width of the confidence bonus (>= 0)
    alpha: float
    #: ridge: ``V = lam I + sum x x^T``
    lam: float


def state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`views`."""
    return d * d + 3 * d + K * d + K


@kernel(inline=True)
def views(buf, d, K, M, T):
    """``(Vinv (d, d), vecs (3, d): b, theta, work, VX (K, d), scores (K,))``."""
    o = 0
    Vinv, o = take2(buf, o, d, d)
    vecs, o = take2(buf, o, 3, d)
    VX, o = take2(buf, o, K, d)
    scores, o = take(buf, o, K)
    return (Vinv, vecs, VX, scores), o


@kernel(inline=True)
def init(params, state, init_noise):
    """``inv(V) = I / lam``, ``b = 0``."""
    lam = params[1]
    Vinv, vecs = state[0], state[1]
    fill_vec(vecs[0], 0.0)
    scaled_identity(Vinv, 1.0 / lam)


@kernel(inline=True)
def select(params, state, X, noise):
    """The arm with the largest upper confidence bound (ties: lowest index)."""
    Vinv, vecs, VX, scores = state
    linucb_scores(Vinv, vecs[0], params[0], X, vecs[1], VX, scores)
    return argmax(scores)


@kernel(inline=True)
def update(params, state, x, r, n_obs, noise):
    """``b += r x`` and the Sherman-Morrison update of ``inv(V)``; False (the loop
    reports divergence) if either is no longer finite, as :class:`vits_ref.LinUCB`
    reports it."""
    Vinv, vecs = state[0], state[1]
    axpy_vec(r, x, vecs[0])
    sherman_morrison(Vinv, x, vecs[2])
    return all_finite_mat(Vinv) and all_finite_vec(vecs[0])


@kernel(inline=True)
def kl(params, state):
    """LinUCB keeps no posterior."""
    return 0.0


#: LinUCB's part of the fused linear-bandit loop.
PIECE = BanditPiece("linucb", state_size, views, init, select, update, kl,
                    params_type=LinUCBParams)
