"""VITS inner steps (VITS paper, Algorithms 2 and 3; docs/algorithms.md section 2).

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

The step is generic over the potential: :func:`make_vits_steps` closes over a potential's
``vits_inputs`` hook (:mod:`.potential`), and :data:`PIECE` is the VITS policy's part of
the fused linear-bandit loop (:mod:`.bandit`).

Block-safe: stores only through :mod:`.linalg`'s primitives (:mod:`.coop_linalg` says why).
"""

import math
from typing import NamedTuple

from vits_ref.config import kernel

from .bandit import BanditPiece, argmax, step_size
from .diagnostics import kl_to_linear_posterior
from .linalg import (
    add_scaled_diff_mat,
    add_scaled_diff_t_mat,
    add_vec,
    all_finite_mat,
    all_finite_vec,
    axpy_mat,
    axpy_vec,
    div_mat,
    div_vec,
    gemm_nn,
    gemm_tn,
    gemv,
    gram,
    inv_transpose,
    max_abs_mat,
    scaled_identity,
    sub_mat,
    sub_rows,
)
from .linalg import symmetrize as _symmetrize  # 'symmetrize' names a flag below
from .linear import POTENTIAL as LINEAR
from .linear import stats_add, stats_init
from .potential import (  # noqa: F401 (the variant codes are this engine's vocabulary)
    VARIANT_HF,
    VARIANT_HF_CV,
    VARIANT_I,
    VARIANT_II,
    is_hessian_free,
)
from .views import take, take2, take3


@kernel
def vits_apply(variant, mu, B, C, g, A, AB, CtC, h_mu, h, W2, work2d):
    """Apply one VITS step given the averaged gradient ``g``, ``A`` and ``AB = A @ B``.

    ``CtC`` must hold ``C^T C`` for variants II and Hessian-free (the caller computes it
    because the Hessian-free ``A`` needs it too); it is overwritten. ``W2`` (d, d) and
    ``work2d`` (d, 2d) are scratch. Returns False if VITS-I meets a singular ``B`` (the
    caller reports divergence). Stores only through primitives (block-safe).
    """
    W1 = AB
    axpy_vec(-h_mu, g, mu)  # mu - h_mu g
    if variant == VARIANT_I:
        if not inv_transpose(B, W2, work2d):
            return False
        add_scaled_diff_mat(h, W2, W1, B)  # B + h (inv(B)^T - A B)
        return True
    sub_mat(A, CtC)  # C^T C - A
    gemm_nn(C, CtC, W2)  # C (C^T C - A), from the old C
    add_scaled_diff_t_mat(h, C, W1, B)  # B + h (C^T - A B), from the old C
    axpy_mat(-h, W2, C)  # C - h C (C^T C - A)
    return True


@kernel
def hessian_free_matrix(C, Z, G, CtC, D, A, symmetrize):
    """``A = (C^T C) mean_j z_j g_j^T`` with ``z_j = theta_j - mu`` (rows of Z, G).

    Also leaves ``C^T C`` in ``CtC``; ``D`` is scratch. With ``symmetrize``,
    ``A <- (A + A^T) / 2``.
    """
    gemm_tn(Z, G, D)
    div_mat(D, Z.shape[0], D)
    gram(C, CtC)
    gemm_nn(CtC, D, A)
    if symmetrize:
        _symmetrize(A)


@kernel(inline=True)
def state_ok(ok, variant, mu, B, C, max_abs_B):
    """Whether the steps left a usable state: they succeeded (``ok``), ``mu``, ``B`` (and
    ``C`` but for VITS-I, which does not update it) are finite, and ``max |B| <=
    max_abs_B`` (:class:`vits_ref.VITS`'s bound: the covariance never exceeds the prior's)."""
    if not (ok and all_finite_vec(mu) and all_finite_mat(B)):
        return False
    if variant != VARIANT_I and not all_finite_mat(C):
        return False
    return max_abs_mat(B) <= max_abs_B


@kernel(inline=True)
def gaussian_draw(mu, B, eps, out):
    """``out = mu + B eps``."""
    gemv(B, eps, out)
    add_vec(mu, out)


def make_vits_steps(potential):
    """The VITS steps body for ``potential``.

    ``vits_steps(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr) -> ok`` runs
    ``S = eps.shape[0]`` steps in place (``eps`` (S, M, d): the standard normals of the
    ``M`` draws of each step). ``scr = (mats, work2d, Z, T, G, vecs)``: ``mats`` (6, d, d),
    ``work2d`` (d, 2d), ``Z``, ``T``, ``G`` (M, d), ``vecs`` (2, d); ``pscr`` is the
    potential's scratch. Returns False if a VITS-I step meets a singular ``B``; the caller
    checks the state for non-finite values.
    """
    inputs = potential.vits_inputs

    @kernel(inline=True)
    def vits_steps(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr):
        mats, work2d, Z, T, G, vecs = scr
        Amat, CtC, D, W1, W2, H = mats[0], mats[1], mats[2], mats[3], mats[4], mats[5]
        g, gmu = vecs[0], vecs[1]
        hf = is_hessian_free(variant)
        for s in range(eps.shape[0]):
            A = inputs(data, variant, mu, B, eps[s], Z, T, G, g, H, W1, gmu, pscr)
            if hf:
                if variant == VARIANT_HF_CV:
                    sub_rows(gmu, G)  # the control variate grad U(mu)
                hessian_free_matrix(C, Z, G, CtC, D, Amat, symmetrize)
                gemm_nn(Amat, B, W1)
                ok = vits_apply(variant, mu, B, C, g, Amat, W1, CtC, h_mu, h, W2, work2d)
            else:
                if variant == VARIANT_II:
                    gram(C, CtC)
                ok = vits_apply(variant, mu, B, C, g, A, W1, CtC, h_mu, h, W2, work2d)
            if not ok:
                return False
        return True

    return vits_steps


# --------------------------------------------------------------------------- bandit piece
#
# VITS on the linear potential inside the fused bandit loop. params: a VITSParams;
# state: the statistics V, b, eta V, eta b, the Gaussian (mu, B, C), the step's scratch
# and the KL scratch, carved from one buffer.


class VITSParams(NamedTuple):
    """The hyperparameters the VITS pieces' bodies read: :data:`PIECE` and
    :data:`vits_ref.kernels.logistic_bandit.VITS_PIECE` (built by
    :meth:`vits_ref.VITS.fused`)."""

    #: the variant's code (:data:`VARIANT_I`, :data:`VARIANT_II`, :data:`VARIANT_HF`,
    #: :data:`VARIANT_HF_CV`)
    variant: int
    #: symmetrise ``A`` before the square-root step
    symmetrize: bool
    #: the schedule's code (:data:`vits_ref.kernels.bandit.SCHEDULE_CONSTANT` or
    #: ``SCHEDULE_DECAYED``)
    schedule: int
    #: inverse temperature of the potential
    eta: float
    #: ridge (prior ``N(0, I/(lam eta))``)
    lam: float
    #: the mean's base step size (the engine's ``step_size``)
    h0_mu: float
    #: the square root's base step size (the engine's ``cov_step_size``)
    h0: float
    #: the engine's bound on ``max |B|``: an update beyond it fails, as the engine raises
    max_abs_B: float

_linear_steps = make_vits_steps(LINEAR)


def state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`views`."""
    return 13 * d * d + 2 * d * d + 3 * M * d + 6 * d + K


@kernel(inline=True)
def views(buf, d, K, M, T):
    """The state's arrays, carved from the flat buffer ``buf`` (see :func:`state_size`)."""
    o = 0
    V, o = take2(buf, o, d, d)
    etaV, o = take2(buf, o, d, d)
    B, o = take2(buf, o, d, d)
    C, o = take2(buf, o, d, d)
    mats, o = take3(buf, o, 6, d, d)
    klm, o = take3(buf, o, 3, d, d)
    work2d, o = take2(buf, o, d, 2 * d)
    Z, o = take2(buf, o, M, d)
    T, o = take2(buf, o, M, d)
    G, o = take2(buf, o, M, d)
    vecs, o = take2(buf, o, 6, d)
    scores, o = take(buf, o, K)
    return (V, etaV, B, C, mats, klm, work2d, Z, T, G, vecs, scores), o


@kernel(inline=True)
def init(params, state, init_noise):
    """Algorithm 1's start: ``B = I/sqrt(lam eta)``, ``C = sqrt(lam eta) I``, ``mu ~ prior``."""
    eta, lam = params[3], params[4]
    V, etaV, B, C = state[0], state[1], state[2], state[3]
    vecs = state[10]
    b, eta_b, mu = vecs[0], vecs[1], vecs[2]
    stats_init(V, b, etaV, eta_b, lam, eta)
    s0 = math.sqrt(lam * eta)
    scaled_identity(B, 1.0 / s0)
    scaled_identity(C, s0)
    div_vec(init_noise, s0, mu)


@kernel(inline=True)
def select(params, state, X, noise):
    """Thompson draw ``theta = mu + B z`` and the best arm for it."""
    B = state[2]
    vecs = state[10]
    scores = state[11]
    theta = vecs[3]
    gaussian_draw(vecs[2], B, noise, theta)
    gemv(X, theta, scores)
    return argmax(scores)


# A function of its own, not inlined: inlined, Numba copies its IR (and that of the
# steps inlined into it) at each level it is inlined through, which cost the README's
# VITS-II snippet about 8 s of CPU on a cold cache; the call costs nothing measurable
# next to the round's 10 steps (docs/performance.md, "The first run").
@kernel
def update(params, state, x, r, n_obs, noise):
    """Add ``(x, r)`` to the statistics, then ``K_t`` VITS steps (``noise`` (S, M, d)).

    False (the loop reports divergence) on a non-finite state or ``max |B| > max_abs_B``
    (:class:`vits_ref.VITS`'s bound: the covariance ``B B^T`` never exceeds the prior's).
    """
    variant, symmetrize, schedule, eta, lam, h0_mu, h0, max_abs_B = params
    V, etaV, B, C, mats, klm, work2d, Z, T, G, vecs, scores = state
    b, eta_b, mu = vecs[0], vecs[1], vecs[2]
    stats_add(V, b, etaV, eta_b, x, r, eta, True)
    hm = step_size(schedule, h0_mu, eta, n_obs)
    h = step_size(schedule, h0, eta, n_obs)
    ok = _linear_steps(variant, symmetrize, mu, B, C, (etaV, eta_b), noise, hm, h,
                       (mats, work2d, Z, T, G, vecs[4:6]), 0)
    return state_ok(ok, variant, mu, B, C, max_abs_B)


@kernel(inline=True)
def kl(params, state):
    """``KL(N(mu, B B^T) || exact posterior)`` from the statistics."""
    eta = params[3]
    V, B = state[0], state[2]
    klm = state[5]
    vecs = state[10]
    return kl_to_linear_posterior(vecs[2], B, V, vecs[0], eta, klm[0], klm[1], klm[2], vecs[3])


#: VITS's part of the fused linear-bandit loop.
PIECE = BanditPiece("vits", state_size, views, init, select, update, kl,
                    params_type=VITSParams)
