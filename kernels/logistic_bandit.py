"""The logistic model's pieces of the fused bandit loop: VITS, LMC-TS and Laplace (IRLS).

The logistic potential (:mod:`.logistic`; docs/algorithms.md section 2) has no sufficient
statistics: its gradient and Hessian at ``theta`` are sums over the whole history,
``eta (X^T (sigmoid(X theta) - y) + lam theta)``. So each piece keeps the run's history in
its state buffer, ``T`` rows (the horizon the loop passes to ``views``), beside the
potential's scratch sized for ``T`` rows (the tuple of
:func:`vits_ref.models.logistic.potential_scratch`). Round ``n`` stores the played arm's
features and reward at row ``n - 1`` and runs the engine's own step body on the views
``X[:n]``, ``y[:n]``, with the same data tuple, scratch and noise as the Python engine
(:class:`vits_ref.VITS`, :class:`vits_ref.Langevin`, :class:`vits_ref.Laplace` with
``model="logistic"``), so the fused loop and the Python loop play the same arms
(``tests/test_logistic_bandit.py``). Only the default prior ``N(0, I/(lam eta))``.

The pieces, with their ``params`` (a :class:`typing.NamedTuple` each, fields in this
order):

:data:`VITS_PIECE`, :class:`~vits_ref.kernels.vits.VITSParams`
    ``(variant, symmetrize, schedule, eta, lam, h0_mu, h0, max_abs_B)``: VITS-I, VITS-II
    or Hessian-free (:func:`.vits.make_vits_steps` on the logistic potential), Thompson
    draw ``mu + B z``. An update fails (the loop reports divergence)
    on a non-finite state or when ``max |B|`` exceeds ``max_abs_B`` (the engine's bound:
    ``1e6`` times the prior's standard deviation, beyond which ``B B^T`` has left the
    stable range, since the covariance never exceeds the prior's).
:data:`LANGEVIN_PIECE`, :class:`~vits_ref.kernels.langevin.LangevinParams`
    ``(schedule, eta, lam, h0)``: ``K_t`` Langevin steps on the chain
    (:func:`.langevin.make_langevin_steps`), which is what LMC-TS plays.
:data:`LAPLACE_PIECE`, :class:`LaplaceParams` ``(eta, lam, tol, max_iter)``
    Damped Newton, which for the logit link is IRLS (:func:`.newton.make_newton`), on the
    likelihood with the prior as the explicit Gaussian term ``P0 = eta lam I``, ``b0 = 0``,
    warm-started from the last MAP; Thompson draw ``theta_MAP + L^-T z`` with ``L L^T``
    the Hessian at the MAP. An update fails when the fit meets a non-finite value or a
    Hessian that is not positive definite. A fit that stops at ``max_iter`` continues from
    its last iterate, as the engine does (which also warns; the fused loop cannot).

None of them keeps a Gaussian with a closed-form target, so their ``kl`` is 0 (the specs
say ``gaussian=False``). They are not block-safe (the potential's sums store outside the
:mod:`.linalg` primitives), so on CUDA they run one run per thread.
"""

import math
from typing import NamedTuple

from vits_ref.config import kernel

from .bandit import BanditPiece, argmax, step_size
from .langevin import LangevinParams, make_langevin_steps
from .linalg import (
    all_finite_mat,
    all_finite_vec,
    div_vec,
    fill_vec,
    gemv,
    scaled_identity,
    solve_lower_t,
)
from .logistic import POTENTIAL as LOGISTIC
from .newton import FAILED, make_newton
from .views import take, take2, take3
from .vits import VITSParams, gaussian_draw, make_vits_steps, state_ok

# --------------------------------------------------------------------------- the history


def history_size(d, M, T):
    """Entries of :func:`history_views`: ``X`` (T, d), ``y`` (T,), the potential's scratch
    for ``T`` rows and ``M`` parameter vectors, and the default prior's two placeholders."""
    return T * d + T + T * M + T + T * d + 2 * M * d + (d + 1) + 2


@kernel(inline=True)
def history_views(buf, o, d, M, T):
    """``(X, y, pscr, prior, o)``: the history's buffers from offset ``o`` of ``buf``.

    ``pscr = (zbuf, wbuf, Xw, D, DP, key)`` is the logistic potential's scratch
    (:mod:`.logistic`); ``prior = (P0 (1, 1), theta0 (1,))`` the placeholders of the
    general prior the data tuple carries (unused: ``has_prior`` is False).
    """
    X, o = take2(buf, o, T, d)
    y, o = take(buf, o, T)
    zbuf, o = take(buf, o, T * M)
    wbuf, o = take(buf, o, T)
    Xw, o = take2(buf, o, T, d)
    D, o = take2(buf, o, M, d)
    DP, o = take2(buf, o, M, d)
    key, o = take(buf, o, d + 1)
    P0, o = take2(buf, o, 1, 1)
    theta0, o = take(buf, o, 1)
    return X, y, (zbuf, wbuf, Xw, D, DP, key), (P0, theta0), o


@kernel(inline=True)
def history_init(pscr, prior):
    """The scratch's key at "nothing cached" (as the model allocates it) and the prior's
    placeholders at 0."""
    fill_vec(pscr[5], -1.0)
    P0, theta0 = prior
    P0[0, 0] = 0.0
    theta0[0] = 0.0


@kernel(inline=True)
def history_add(X, y, x, r, n_obs):
    """Row ``n_obs - 1`` of the history is ``(x, r)``."""
    row = X[n_obs - 1]
    for i in range(x.shape[0]):
        row[i] = x[i]
    y[n_obs - 1] = r


@kernel(inline=True)
def logistic_data(X, y, n_obs, eta, lam, prior):
    """The potential's data tuple on the first ``n_obs`` rows (``Logistic.kernel_data``)."""
    return (X[:n_obs], y[:n_obs], eta, lam, False, prior[0], prior[1])


# --------------------------------------------------------------------------- VITS
# state: B, C, mats (6, d, d), work2d (d, 2d), Z, Tm, G (M, d), vecs (4, d): the step's
# g and gmu, mu, the Thompson draw; scores (K,); the history.

_vits_steps = make_vits_steps(LOGISTIC)


def vits_state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`vits_views`."""
    return 8 * d * d + 2 * d * d + 3 * M * d + 4 * d + K + history_size(d, M, T)


@kernel(inline=True)
def vits_views(buf, d, K, M, T):
    """``(B, C, mats, work2d, Z, Tm, G, vecs, scores, X, y, pscr, prior)``."""
    o = 0
    B, o = take2(buf, o, d, d)
    C, o = take2(buf, o, d, d)
    mats, o = take3(buf, o, 6, d, d)
    work2d, o = take2(buf, o, d, 2 * d)
    Z, o = take2(buf, o, M, d)
    Tm, o = take2(buf, o, M, d)
    G, o = take2(buf, o, M, d)
    vecs, o = take2(buf, o, 4, d)
    scores, o = take(buf, o, K)
    X, y, pscr, prior, o = history_views(buf, o, d, M, T)
    return (B, C, mats, work2d, Z, Tm, G, vecs, scores, X, y, pscr, prior), o


@kernel(inline=True)
def vits_init(params, state, init_noise):
    """Algorithm 1's start: ``B = I/sqrt(lam eta)``, ``C = sqrt(lam eta) I``, ``mu ~ prior``."""
    eta, lam = params[3], params[4]
    B, C, vecs = state[0], state[1], state[7]
    s0 = math.sqrt(lam * eta)
    scaled_identity(B, 1.0 / s0)
    scaled_identity(C, s0)
    div_vec(init_noise, s0, vecs[2])
    fill_vec(vecs[0], 0.0)
    fill_vec(vecs[1], 0.0)
    history_init(state[11], state[12])


@kernel(inline=True)
def vits_select(params, state, X, noise):
    """Thompson draw ``theta = mu + B z``; the arm of the largest ``x theta``."""
    vecs, scores = state[7], state[8]
    gaussian_draw(vecs[2], state[0], noise, vecs[3])
    gemv(X, vecs[3], scores)
    return argmax(scores)


@kernel  # a function of its own, as the linear piece's (kernels/vits.py says why)
def vits_update(params, state, x, r, n_obs, noise):
    """Append ``(x, r)``, then ``K_t`` VITS steps on the logistic potential of the history."""
    variant, symmetrize, schedule, eta, lam, h0_mu, h0, max_abs_B = params
    B, C, mats, work2d, Z, Tm, G, vecs, scores, X, y, pscr, prior = state
    history_add(X, y, x, r, n_obs)
    hm = step_size(schedule, h0_mu, eta, n_obs)
    h = step_size(schedule, h0, eta, n_obs)
    ok = _vits_steps(variant, symmetrize, vecs[2], B, C,
                     logistic_data(X, y, n_obs, eta, lam, prior), noise, hm, h,
                     (mats, work2d, Z, Tm, G, vecs[0:2]), pscr)
    return state_ok(ok, variant, vecs[2], B, C, max_abs_B)


@kernel(inline=True)
def no_kl(params, state):
    """No closed-form posterior to compare with."""
    return 0.0


#: VITS on the logistic model in the fused bandit loop.
VITS_PIECE = BanditPiece("vits-logistic", vits_state_size, vits_views, vits_init,
                         vits_select, vits_update, no_kl, params_type=VITSParams)

# --------------------------------------------------------------------------- LMC-TS
# state: H (1, 1) (the gradient hook leaves it untouched), vecs (2, d): theta, gradient;
# scores (K,); the history.

_langevin_steps = make_langevin_steps(LOGISTIC)


def langevin_state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`langevin_views`."""
    return 1 + 2 * d + K + history_size(d, M, T)


@kernel(inline=True)
def langevin_views(buf, d, K, M, T):
    """``(H, vecs, scores, X, y, pscr, prior)``."""
    o = 0
    H, o = take2(buf, o, 1, 1)
    vecs, o = take2(buf, o, 2, d)
    scores, o = take(buf, o, K)
    X, y, pscr, prior, o = history_views(buf, o, d, M, T)
    return (H, vecs, scores, X, y, pscr, prior), o


@kernel(inline=True)
def langevin_init(params, state, init_noise):
    """The chain at a prior draw ``theta ~ N(0, I/(lam eta))``."""
    eta, lam = params[1], params[2]
    vecs = state[1]
    div_vec(init_noise, math.sqrt(lam * eta), vecs[0])
    history_init(state[5], state[6])


@kernel(inline=True)
def langevin_select(params, state, X, noise):
    """The arm of the largest ``x theta`` at the chain's current state."""
    vecs, scores = state[1], state[2]
    gemv(X, vecs[0], scores)
    return argmax(scores)


@kernel(inline=True)
def langevin_update(params, state, x, r, n_obs, noise):
    """Append ``(x, r)``, then ``K_t`` Langevin steps (``noise`` (S, 1, d))."""
    schedule, eta, lam, h0 = params
    H, vecs, scores, X, y, pscr, prior = state
    history_add(X, y, x, r, n_obs)
    h = step_size(schedule, h0, eta, n_obs)
    theta = vecs[0]
    _langevin_steps(theta, logistic_data(X, y, n_obs, eta, lam, prior),
                    noise.reshape((noise.shape[0], noise.shape[2])), h, vecs[1], H, pscr)
    return all_finite_vec(theta)


#: LMC-TS on the logistic model in the fused bandit loop.
LANGEVIN_PIECE = BanditPiece("lmc-logistic", langevin_state_size, langevin_views,
                             langevin_init, langevin_select, langevin_update, no_kl,
                             params_type=LangevinParams)

# --------------------------------------------------------------------------- Laplace (IRLS)
# state: H, L, P0 (d, d), theta2, g2, trial2 (1, d), vecs (3, d): b0, Newton's step, the
# Thompson draw; scores (K,); the history. theta2[0] is the MAP.


class LaplaceParams(NamedTuple):
    """The hyperparameters :data:`LAPLACE_PIECE`'s bodies read (built by
    :meth:`vits_ref.Laplace.fused`)."""

    #: inverse temperature of the likelihood
    eta: float
    #: ridge (prior ``N(0, I/(lam eta))``)
    lam: float
    #: the Newton/IRLS fit's tolerance
    tol: float
    #: the Newton/IRLS fit's iteration cap per round
    max_iter: int

_newton = make_newton(LOGISTIC)


def laplace_state_size(d, K, M, T):
    """Length of the flat state buffer of :func:`laplace_views`."""
    return 3 * d * d + 3 * d + 3 * d + K + history_size(d, M, T)


@kernel(inline=True)
def laplace_views(buf, d, K, M, T):
    """``(H, L, P0, theta2, g2, trial2, vecs, scores, X, y, pscr, prior)``."""
    o = 0
    H, o = take2(buf, o, d, d)
    L, o = take2(buf, o, d, d)
    P0, o = take2(buf, o, d, d)
    theta2, o = take2(buf, o, 1, d)
    g2, o = take2(buf, o, 1, d)
    trial2, o = take2(buf, o, 1, d)
    vecs, o = take2(buf, o, 3, d)
    scores, o = take(buf, o, K)
    X, y, pscr, prior, o = history_views(buf, o, d, M, T)
    return (H, L, P0, theta2, g2, trial2, vecs, scores, X, y, pscr, prior), o


@kernel(inline=True)
def laplace_init(params, state, init_noise):
    """The prior as the Laplace posterior with no data: ``theta = 0``, ``H = P0 = eta lam
    I``, ``L = sqrt(eta lam) I``, ``b0 = P0 theta0 = 0``."""
    eta, lam = params[0], params[1]
    H, L, P0, theta2, vecs = state[0], state[1], state[2], state[3], state[6]
    scaled_identity(H, eta * lam)
    scaled_identity(P0, eta * lam)
    scaled_identity(L, math.sqrt(eta * lam))
    fill_vec(theta2[0], 0.0)
    fill_vec(vecs[0], 0.0)
    history_init(state[10], state[11])


@kernel(inline=True)
def laplace_select(params, state, X, noise):
    """Thompson draw ``theta_MAP + L^-T z``; the arm of the largest ``x theta``."""
    L, theta2, vecs, scores = state[1], state[3], state[6], state[7]
    draw = vecs[2]
    solve_lower_t(L, noise, draw)
    for i in range(draw.shape[0]):
        draw[i] += theta2[0, i]
    gemv(X, draw, scores)
    return argmax(scores)


@kernel(inline=True)
def laplace_update(params, state, x, r, n_obs, noise):
    """Append ``(x, r)``, then refit the MAP by Newton/IRLS from the last one."""
    eta, lam, tol, max_iter = params
    H, L, P0, theta2, g2, trial2, vecs, scores, X, y, pscr, prior = state
    history_add(X, y, x, r, n_obs)
    # the likelihood's part of the potential (lam = 0), the prior as the explicit term P0
    status, _ = _newton(logistic_data(X, y, n_obs, eta, 0.0, prior), P0, vecs[0], theta2,
                        tol, max_iter, H, L, g2, vecs[1], trial2, pscr)
    if status == FAILED:
        return False
    return all_finite_vec(theta2[0]) and all_finite_mat(L)


#: Laplace (IRLS) on the logistic model in the fused bandit loop.
LAPLACE_PIECE = BanditPiece("laplace-logistic", laplace_state_size, laplace_views,
                            laplace_init, laplace_select, laplace_update, no_kl,
                            params_type=LaplaceParams)
