"""Plain NumPy reference implementations: readable, slow, and the yardstick.

:func:`linear_bandit_run` implements the same algorithms as the fused compiled loop
(:func:`vits_ref.kernels.bandit.make_bandit_run` over each policy's piece) with ordinary
NumPy calls and the same pre-drawn randomness, so the two must give the same regret to rounding
(``tests/test_simulate.py``). The benchmarks time it against the compiled loop in the
same process. LinTS here refactorises ``V`` by ``np.linalg.cholesky`` and solves every
round, as most bandit libraries do; the compiled loop uses rank-one updates.
"""

import numpy as np

from ..kernels.bandit import step_size  # noqa: F401 (the schedule, written once)
from .naive import langevin_linear_naive, lints_draw_naive
from .vits import vits_step


def linear_bandit_run(spec, contexts, means, rewards, init_noise, sel_noise, step_noise):
    """One linear-bandit run in plain NumPy; returns ``(regret (T,), arms (T,))``.

    ``spec`` is a policy's :class:`vits_ref.drivers.fused.FusedSpec` (its piece's name says which
    algorithm, its ``params`` the hyperparameters: the piece's NamedTuple); the arrays are
    those of the fused loop (:func:`vits_ref.kernels.bandit.make_bandit_run`). Raises
    FloatingPointError on a non-finite state (or, for VITS, ``max |B|`` above the bound).
    """
    T, K, d = contexts.shape
    name, p = spec.piece.name, spec.params
    if name == "vits":
        variant, symmetrize, schedule = p.variant, p.symmetrize, p.schedule
        eta, lam, h0_mu, h0, max_abs_B = p.eta, p.lam, p.h0_mu, p.h0, p.max_abs_B
    elif name == "lmc":
        schedule, eta, lam, h0 = p.schedule, p.eta, p.lam, p.h0
    elif name == "lints":
        eta, lam = p.eta, p.lam
    elif name == "linucb":
        alpha, lam = p.alpha, p.lam
        eta = 1.0
    else:
        eta = lam = 1.0
    V = lam * np.eye(d)
    b = np.zeros(d)
    s0 = np.sqrt(lam * eta)
    mu = init_noise / s0 if init_noise.size else np.zeros(d)
    B = np.eye(d) / s0
    C = np.eye(d) * s0
    Vinv = np.eye(d) / lam
    regret = np.empty(T)
    arms = np.empty(T, dtype=np.int64)
    for t in range(T):
        X = contexts[t]
        if name == "random":
            arm = min(int(sel_noise[t, 0] * K), K - 1)
        else:
            if name == "lints":
                scores = X @ lints_draw_naive(V, b, eta, sel_noise[t])
            elif name == "linucb":
                theta = Vinv @ b
                width = np.sqrt(np.maximum(np.einsum("ai,ij,aj->a", X, Vinv, X), 0.0))
                scores = X @ theta + alpha * width
            elif name == "vits":
                scores = X @ (mu + B @ sel_noise[t])
            else:
                scores = X @ mu
            arm = int(np.argmax(scores))
        regret[t] = means[t].max() - means[t, arm]
        arms[t] = arm
        x, r = X[arm], rewards[t, arm]
        V += np.outer(x, x)
        b += r * x
        n_obs = t + 1
        if name == "linucb":
            u = Vinv @ x
            Vinv -= np.outer(u, u) / (1.0 + x @ u)
        elif name == "vits":
            h_mu = step_size(schedule, h0_mu, eta, n_obs)
            h = step_size(schedule, h0, eta, n_obs)
            for s in range(step_noise.shape[1]):
                mu, B, C = vits_step(variant, mu, B, C, eta * V, eta * b,
                                     step_noise[t, s], h_mu, h, symmetrize)
            if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(B))):
                raise FloatingPointError(f"non-finite state at round {n_obs}")
            if np.abs(B).max() > max_abs_B:
                raise FloatingPointError(f"max |B| above {max_abs_B:g} at round {n_obs}")
        elif name == "lmc":
            h = step_size(schedule, h0, eta, n_obs)
            mu = langevin_linear_naive(mu, eta * V, eta * b, step_noise[t, :, 0], h)
            if not np.all(np.isfinite(mu)):
                raise FloatingPointError(f"non-finite state at round {n_obs}")
    return regret, arms
