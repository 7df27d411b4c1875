"""Fused whole-run loop for the linear bandit, and its CPU drivers.

One run is ``T`` rounds of: select an arm from the policy's current state, look up the
pre-realised reward, update the sufficient statistics ``V = lam I + sum x x^T`` and
``b = sum r x``, then (VITS, LMC-TS) ``K_t`` inner steps. All randomness comes in as
arrays drawn beforehand with NumPy (:mod:`vits_ref.simulate` says in which order), so the
CPU driver, a CUDA driver and the NumPy reference (:mod:`vits_ref.reference`) consume the
same numbers and agree to rounding.

Policy state lives in fixed-size buffers (never the history). The driver
:func:`run_many` runs independent simulations in ``prange`` (one simulation per
iteration, so the result does not depend on the number of threads).
"""

import math

import numpy as np
from numba import prange

from vits_ref.config import cpu_jit, kernel

from .baselines import langevin_linear_steps, lints_draw, linucb_scores, sherman_morrison
from .diagnostics import kl_to_linear_posterior
from .linalg import (
    all_finite_mat,
    all_finite_vec,
    chol_rank1_update,
    gemv,
    inv_transpose,
    solve_lower,
    solve_lower_t,
)
from .vits import VARIANT_I, gaussian_draw, vits_linear_steps

POLICY_RANDOM = 0
POLICY_LINTS = 1
POLICY_LINUCB = 2
POLICY_VITS = 3
POLICY_LMC = 4

SCHEDULE_CONSTANT = 0
SCHEDULE_DECAYED = 1


@kernel
def step_size(schedule, h0, eta, t):
    """Step size at round ``t`` (1-based number of observations).

    ``constant``: ``h0``; ``decayed``: ``h0 / (eta t)`` (the VITS authors' code).
    """
    if schedule == SCHEDULE_DECAYED:
        return h0 / (eta * t)
    return h0


@kernel
def argmax(x):
    """Index of the first maximum (ties go to the lowest index, like ``np.argmax``)."""
    best = 0
    for i in range(1, x.shape[0]):
        if x[i] > x[best]:
            best = i
    return best


@kernel
def linear_bandit_run(policy, variant, symmetrize, schedule, eta, lam, h0_mu, h0, ucb_alpha,
                      contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
                      regret, arms, kl_out,
                      V, F, bvec, etaV, eta_b, mu, B, C, mats, work2d, Z, G, vecs, scores, VX):
    """One linear-bandit run (body shared by the CPU and CUDA drivers).

    Parameters
    ----------
    policy, variant, symmetrize, schedule : int, int, bool, int
        ``POLICY_*``, ``kernels.vits.VARIANT_*``, Hessian-free symmetrisation,
        ``SCHEDULE_*``.
    eta, lam, h0_mu, h0, ucb_alpha : float
        Inverse temperature, ridge, step sizes of the mean and of the square root
        (or of the Langevin chain), LinUCB width.
    contexts, means, rewards : (T, K, d), (T, K), (T, K)
        The environment's realisation: arm features, expected and realised rewards.
    init_noise : (d,)
        Standard normals for the initial mean (VITS) or chain state (LMC).
    sel_noise : (T, d) or (T, 1)
        Standard normals of the Thompson draw per round (LinTS, VITS); uniforms for the
        random policy.
    step_noise : (T, S, M, d)
        Standard normals of the inner steps (``M = n_mc`` for VITS, 1 for LMC).
    kl_rounds : (n_kl,) int, increasing, 1-based
        Rounds after whose update the KL to the exact posterior is recorded.
    regret, arms, kl_out : outputs (T,), (T,), (n_kl,)
        Instantaneous regret, chosen arm, KL (0 where the policy keeps no Gaussian).
    V ... VX : scratch and state buffers (see :func:`run_one` for their shapes).

    Returns
    -------
    int
        0, or the 1-based round at which the state became non-finite.
    """
    T, K, d = contexts.shape
    S = step_noise.shape[1]
    for i in range(d):
        bvec[i] = 0.0
        eta_b[i] = 0.0
        for j in range(d):
            V[i, j] = lam if i == j else 0.0
            etaV[i, j] = eta * lam if i == j else 0.0
            B[i, j] = 0.0
            C[i, j] = 0.0
            F[i, j] = 0.0
    s0 = math.sqrt(lam * eta)
    for i in range(d):
        if policy == POLICY_LINTS:
            F[i, i] = math.sqrt(lam)  # Cholesky factor of V
        elif policy == POLICY_LINUCB:
            F[i, i] = 1.0 / lam  # inverse of V
        B[i, i] = 1.0 / s0
        C[i, i] = s0
        mu[i] = init_noise[i] / s0 if init_noise.shape[0] == d else 0.0
    theta = vecs[0]
    work = vecs[1]
    nk = 0
    track_v = policy == POLICY_VITS or policy == POLICY_LMC or kl_rounds.shape[0] > 0
    for t in range(T):
        X = contexts[t]
        # ---- select
        if policy == POLICY_RANDOM:
            arm = int(sel_noise[t, 0] * K)
            if arm >= K:
                arm = K - 1
        else:
            if policy == POLICY_LINTS:
                lints_draw(F, bvec, eta, sel_noise[t], theta)
                gemv(X, theta, scores)
            elif policy == POLICY_LINUCB:
                linucb_scores(F, bvec, ucb_alpha, X, theta, VX, scores)
            elif policy == POLICY_VITS:
                gaussian_draw(mu, B, sel_noise[t], theta)
                gemv(X, theta, scores)
            else:  # LMC-TS plays the chain's current state
                gemv(X, mu, scores)
            arm = argmax(scores)
        best = means[t, 0]
        for a in range(1, K):
            if means[t, a] > best:
                best = means[t, a]
        regret[t] = best - means[t, arm]
        arms[t] = arm
        # ---- update
        r = rewards[t, arm]
        x = X[arm]
        for i in range(d):
            bvec[i] += r * x[i]
        # V is needed by the VI/Langevin potentials and by the KL diagnostic only
        if track_v:
            for i in range(d):
                eta_b[i] += eta * r * x[i]
                for j in range(d):
                    V[i, j] += x[i] * x[j]
                    etaV[i, j] += eta * x[i] * x[j]
        n_obs = t + 1
        if policy == POLICY_LINTS:
            chol_rank1_update(F, x, work)
        elif policy == POLICY_LINUCB:
            sherman_morrison(F, x, work)
        elif policy == POLICY_VITS:
            hm = step_size(schedule, h0_mu, eta, n_obs)
            h = step_size(schedule, h0, eta, n_obs)
            ok = vits_linear_steps(variant, symmetrize, mu, B, C, etaV, eta_b, step_noise[t],
                                   hm, h, mats[0], mats[1], mats[2], mats[3], mats[4], work2d,
                                   Z, G, vecs[2])
            if not (ok and all_finite_vec(mu) and all_finite_mat(B)):
                return n_obs
            if variant != VARIANT_I and not all_finite_mat(C):
                return n_obs
        elif policy == POLICY_LMC:
            h = step_size(schedule, h0, eta, n_obs)
            for s in range(S):
                langevin_linear_steps(mu, etaV, eta_b, step_noise[t, s], h, vecs[2])
            if not all_finite_vec(mu):
                return n_obs
        # ---- diagnostics
        if nk < kl_rounds.shape[0] and kl_rounds[nk] == n_obs:
            if policy == POLICY_VITS:
                kl_out[nk] = kl_to_linear_posterior(mu, B, V, bvec, eta, mats[0], mats[1],
                                                    mats[2], vecs[3])
            elif policy == POLICY_LINTS:
                # LinTS's Gaussian: mean L^-T L^-1 b, square root L^-T / sqrt(eta); its KL
                # to the posterior built from V measures the rank-one updates' rounding.
                inv_transpose(F, mats[3], work2d)
                for i in range(d):
                    for j in range(d):
                        mats[3][i, j] /= math.sqrt(eta)
                solve_lower(F, bvec, vecs[5])
                solve_lower_t(F, vecs[5], vecs[5])
                kl_out[nk] = kl_to_linear_posterior(vecs[5], mats[3], V, bvec, eta, mats[0],
                                                    mats[1], mats[2], vecs[3])
            else:
                kl_out[nk] = 0.0
            nk += 1
    return 0


@cpu_jit
def run_one(policy, variant, symmetrize, schedule, eta, lam, h0_mu, h0, ucb_alpha,
            contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
            regret, arms, kl_out):
    """CPU driver for one run: allocates the state and scratch, calls the body."""
    T, K, d = contexts.shape
    M = step_noise.shape[2]
    V = np.empty((d, d))
    F = np.empty((d, d))
    etaV = np.empty((d, d))
    B = np.empty((d, d))
    C = np.empty((d, d))
    mats = np.empty((5, d, d))
    work2d = np.empty((d, 2 * d))
    Z = np.empty((max(M, 1), d))
    G = np.empty((max(M, 1), d))
    vecs = np.empty((6, d))
    bvec = np.empty(d)
    eta_b = np.empty(d)
    mu = np.empty(d)
    scores = np.empty(K)
    VX = np.empty((K, d))
    return linear_bandit_run(policy, variant, symmetrize, schedule, eta, lam, h0_mu, h0,
                             ucb_alpha, contexts, means, rewards, init_noise, sel_noise,
                             step_noise, kl_rounds, regret, arms, kl_out,
                             V, F, bvec, etaV, eta_b, mu, B, C, mats, work2d, Z, G, vecs,
                             scores, VX)


@cpu_jit(parallel=True)
def run_many(policy, variant, symmetrize, schedule, eta, lam, h0_mu, h0, ucb_alpha,
             contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out, status):
    """``prange`` over independent runs (leading axis of every per-run array)."""
    for r in prange(contexts.shape[0]):
        status[r] = run_one(policy, variant, symmetrize, schedule, eta, lam, h0_mu, h0,
                            ucb_alpha, contexts[r], means[r], rewards[r], init_noise[r],
                            sel_noise[r], step_noise[r], kl_rounds, regret[r], arms[r],
                            kl_out[r])
