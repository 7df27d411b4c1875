"""Unadjusted Langevin steps on any potential (LMC-TS, Xu et al. 2022).

``theta <- theta - h grad U(theta) + sqrt(2 h) eps``; the noise scale follows the current
``h`` (the LMC-TS authors' code freezes it at the first step size). The step closes over
the potential's ``grad`` hook (:mod:`.potential`); :data:`PIECE` runs it on the linear
potential inside the fused bandit loop.

Block-safe: stores only through :mod:`.linalg`'s primitives (:mod:`.coop_linalg` says why).
"""

import math
from typing import NamedTuple

from vits_ref.config import kernel

from .bandit import BanditPiece, argmax, step_size
from .linalg import add_axpby_vec, all_finite_vec, div_vec, gemv
from .linear import POTENTIAL as LINEAR
from .linear import stats_add, stats_init
from .views import take, take2


def make_langevin_steps(potential):
    """``langevin_steps(theta, data, eps, h, g, H, pscr)``: ``eps.shape[0]`` steps in place.

    ``g`` (d,) receives the gradients, ``H`` is the caller's (d, d) buffer (untouched),
    ``pscr`` the potential's scratch.
    """
    grad = potential.grad

    @kernel(inline=True)
    def langevin_steps(theta, data, eps, h, g, H, pscr):
        c = math.sqrt(2.0 * h)
        for s in range(eps.shape[0]):
            grad(data, theta, g, H, pscr)
            add_axpby_vec(-h, g, c, eps[s], theta)  # theta + (-h g + c eps_s)

    return langevin_steps


# --------------------------------------------------------------------------- bandit piece
# params: a LangevinParams; the chain's current state is what LMC-TS plays.


class LangevinParams(NamedTuple):
    """The hyperparameters the Langevin pieces' bodies read: :data:`PIECE` and
    :data:`vits_ref.kernels.logistic_bandit.LANGEVIN_PIECE` (built by
    :meth:`vits_ref.Langevin.fused`)."""

    #: the schedule's code (:data:`vits_ref.kernels.bandit.SCHEDULE_CONSTANT` or
    #: ``SCHEDULE_DECAYED``)
    schedule: int
    #: inverse temperature of the potential
    eta: float
    #: ridge (prior ``N(0, I/(lam eta))``)
    lam: float
    #: the base step size (the engine's ``step_size``)
    h0: float

_linear_steps = make_langevin_steps(LINEAR)


def state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`views`."""
    return 3 * d * d + 4 * d + K


@kernel(inline=True)
def views(buf, d, K, M, T):
    """``(V, etaV, H, vecs (4, d): b, eta_b, theta, grad, scores (K,))``."""
    o = 0
    V, o = take2(buf, o, d, d)
    etaV, o = take2(buf, o, d, d)
    H, o = take2(buf, o, d, d)
    vecs, o = take2(buf, o, 4, d)
    scores, o = take(buf, o, K)
    return (V, etaV, H, vecs, scores), o


@kernel(inline=True)
def init(params, state, init_noise):
    """Statistics at the prior, the chain at a prior draw ``theta ~ N(0, I/(lam eta))``."""
    eta, lam = params[1], params[2]
    V, etaV, vecs = state[0], state[1], state[3]
    stats_init(V, vecs[0], etaV, vecs[1], lam, eta)
    div_vec(init_noise, math.sqrt(lam * eta), vecs[2])


@kernel(inline=True)
def select(params, state, X, noise):
    """The best arm for the chain's current state."""
    vecs, scores = state[3], state[4]
    gemv(X, vecs[2], scores)
    return argmax(scores)


@kernel(inline=True)
def update(params, state, x, r, n_obs, noise):
    """Add ``(x, r)``, then ``K_t`` Langevin steps (``noise`` (S, 1, d))."""
    schedule, eta, lam, h0 = params
    V, etaV, H, vecs, scores = state
    stats_add(V, vecs[0], etaV, vecs[1], x, r, eta, True)
    h = step_size(schedule, h0, eta, n_obs)
    theta = vecs[2]
    # the round's S steps in one call: noise (S, 1, d) is contiguous, so (S, d) is a view
    _linear_steps(theta, (etaV, vecs[1]), noise.reshape((noise.shape[0], noise.shape[2])),
                  h, vecs[3], H, 0)
    return all_finite_vec(theta)


@kernel(inline=True)
def kl(params, state):
    """LMC keeps no Gaussian."""
    return 0.0


#: LMC-TS's part of the fused linear-bandit loop.
PIECE = BanditPiece("lmc", state_size, views, init, select, update, kl,
                    params_type=LangevinParams)
