"""Exact linear Thompson sampling (LinTS) from a Cholesky factor updated by rank one.

LinTS keeps the lower Cholesky factor ``L`` of ``V = lam I + sum x x^T`` and updates it by
:func:`~vits_ref.kernels.linalg.chol_rank1_update` per observation (O(d^2), no
refactorisation); a posterior draw is ``theta = L^-T (L^-1 b + z / sqrt(eta))`` ~
``N(V^-1 b, inv(eta V))`` (docs/algorithms.md section 1).

Block-safe: stores only through :mod:`.linalg`'s primitives (:mod:`.coop_linalg` says why).
"""

import math
from typing import NamedTuple

from vits_ref.config import kernel

from .bandit import BanditPiece, argmax
from .diagnostics import kl_to_linear_posterior
from .linalg import (
    all_finite_mat,
    all_finite_vec,
    axpy_vec,
    chol_rank1_update,
    div_mat,
    gemv,
    inv_transpose,
    scaled_identity,
    solve_lower,
    solve_lower_t,
)
from .linear import stats_add, stats_init
from .views import take, take2, take3


@kernel
def lints_draw(L, b, eta, z, out):
    """One exact posterior draw from the Cholesky factor: ``out = L^-T (L^-1 b + z/sqrt(eta))``."""
    solve_lower(L, b, out)
    axpy_vec(1.0 / math.sqrt(eta), z, out)
    solve_lower_t(L, out, out)


# --------------------------------------------------------------------------- bandit piece


class LinTSParams(NamedTuple):
    """The hyperparameters :data:`PIECE`'s bodies read (built by
    :meth:`vits_ref.LinTS.fused`)."""

    #: inverse temperature: the posterior is ``N(V^-1 b, inv(eta V))``
    eta: float
    #: ridge: ``V = lam I + sum x x^T``
    lam: float
    #: keep ``V`` (and ``eta V``, ``eta b``) for the KL diagnostic (O(d^2) a round)
    track: bool


def state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`views`."""
    return 9 * d * d + 6 * d + K


@kernel(inline=True)
def views(buf, d, K, M, T):
    """``(F, V, etaV, mats (4, d, d), work2d (d, 2d), vecs (6, d), scores (K,))``."""
    o = 0
    F, o = take2(buf, o, d, d)
    V, o = take2(buf, o, d, d)
    etaV, o = take2(buf, o, d, d)
    mats, o = take3(buf, o, 4, d, d)
    work2d, o = take2(buf, o, d, 2 * d)
    vecs, o = take2(buf, o, 6, d)
    scores, o = take(buf, o, K)
    return (F, V, etaV, mats, work2d, vecs, scores), o


@kernel(inline=True)
def init(params, state, init_noise):
    """``F = sqrt(lam) I`` (the factor of ``V = lam I``), statistics at the prior."""
    eta, lam = params[0], params[1]
    F, V, etaV, vecs = state[0], state[1], state[2], state[5]
    stats_init(V, vecs[0], etaV, vecs[1], lam, eta)
    scaled_identity(F, math.sqrt(lam))


@kernel(inline=True)
def select(params, state, X, noise):
    """An exact posterior draw and the best arm for it."""
    F, vecs, scores = state[0], state[5], state[6]
    theta = vecs[2]
    lints_draw(F, vecs[0], params[0], noise, theta)
    gemv(X, theta, scores)
    return argmax(scores)


@kernel(inline=True)
def update(params, state, x, r, n_obs, noise):
    """``b += r x`` and one rank-one update of the factor; False (the loop reports
    divergence) if the factor or ``b`` is no longer finite (features and rewards within the
    data bound still add up to an overflow), as :class:`vits_ref.LinTS` reports it."""
    F, V, etaV, vecs = state[0], state[1], state[2], state[5]
    stats_add(V, vecs[0], etaV, vecs[1], x, r, params[0], params[2])
    chol_rank1_update(F, x, vecs[3])
    return all_finite_mat(F) and all_finite_vec(vecs[0])


@kernel(inline=True)
def kl(params, state):
    """KL of LinTS's Gaussian (mean ``L^-T L^-1 b``, square root ``L^-T / sqrt(eta)``) to
    the posterior built from ``V``: it measures the rank-one updates' rounding."""
    eta = params[0]
    F, V, mats, work2d, vecs = state[0], state[1], state[3], state[4], state[5]
    S = mats[0]
    inv_transpose(F, S, work2d)
    div_mat(S, math.sqrt(eta), S)
    m = vecs[5]
    solve_lower(F, vecs[0], m)
    solve_lower_t(F, m, m)
    return kl_to_linear_posterior(m, S, V, vecs[0], eta, mats[1], mats[2], mats[3], vecs[4])


#: LinTS's part of the fused linear-bandit loop.
PIECE = BanditPiece("lints", state_size, views, init, select, update, kl,
                    params_type=LinTSParams)
