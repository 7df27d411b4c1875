"""Step-size and inner-step schedules of VITS and LMC-TS (docs/algorithms.md section 2).

``constant``
    ``h_t = h0``: diverges once ``h0 eta lmax(V_t)`` passes 1 (covariance recursion) or 2
    (mean), and ``lmax(V_t)`` grows like ``t |x|^2``.
``decayed``
    ``h_t = h0 / (eta t)``, ``t`` the number of observations: the VITS authors' code. Stable
    while ``h0 |x|^2 < 1`` for contexts of squared norm ``|x|^2``.
``theoretical``
    Appendix A.2 of the VITS paper, eqs. (22)-(23)::

        h_t = lmin(V_t) / (2 eta (lmin(V_t)^2 + 2 lmax(V_t)^2))
        K_t = 1 + 2 (1 + 2 kappa_t^2) log(2 R kappa_t d^2 T^2 log^2(3 T^3)),  kappa_t = lmax/lmin

    It needs the horizon ``T`` and the sub-Gaussian constant ``R``; ``K_t`` grows like
    ``kappa_t^2`` and is capped at ``max_steps`` (the engine counts the capped rounds).
"""

import math

import numpy as np

from .. import _validate as val
from ..kernels.bandit import SCHEDULE_CONSTANT, SCHEDULE_DECAYED
from ..kernels.bandit import step_size as _step_size

SCHEDULES = ("constant", "decayed", "theoretical")
_CODES = {"constant": SCHEDULE_CONSTANT, "decayed": SCHEDULE_DECAYED}


def schedule_code(name):
    """Kernel code of a schedule that the fused loop supports, or None."""
    return _CODES.get(name)


def step_size(schedule, h0, eta, t):
    """``h_t`` for the ``constant`` and ``decayed`` schedules (same body as the kernels)."""
    return _step_size(_CODES[schedule], h0, eta, t)


def theoretical_step(V, eta, horizon, R=1.0):
    """``(h_t, K_t)`` of appendix A.2 (eqs. 22-23) for the current ``V``.

    Parameters
    ----------
    V : (d, d) array
        ``lam I + sum phi phi^T``.
    eta : float
        Inverse temperature.
    horizon : int
        ``T``, the number of rounds.
    R : float, default 1.0
        Sub-Gaussian constant of the rewards (assumption 3.1, ``R >= 1`` in the paper).

    Returns
    -------
    h : float
    K : int
    """
    T = val.positive_int(horizon, "horizon")
    if T > MAX_HORIZON:
        raise ValueError(f"horizon must be <= 2**53 = {MAX_HORIZON} (T^3 enters the "
                         f"schedule as a float), got {T}")
    try:
        ev = np.linalg.eigvalsh(V)
        lmin, lmax = float(ev[0]), float(ev[-1])
        d = V.shape[0]
        h = lmin / (2.0 * eta * (lmin ** 2 + 2.0 * lmax ** 2))
        kappa = lmax / lmin
        log3 = math.log(3.0 * T ** 3)
        K = 1 + 2 * (1 + 2 * kappa ** 2) * math.log(2 * R * kappa * d ** 2 * T ** 2 * log3 ** 2)
        if not (math.isfinite(h) and h > 0 and math.isfinite(K) and K >= 1):
            raise ValueError
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):
        raise ValueError(f"the theoretical schedule has no finite step for this V (its "
                         f"eigenvalues over- or underflow in h_t, or K_t < 1): V's "
                         f"diagonal spans [{float(np.min(np.diag(V))):.3g}, "
                         f"{float(np.max(np.diag(V))):.3g}], eta = {eta!r}, R = {R!r}, "
                         f"horizon = {T}") from None
    return h, int(math.ceil(K))


#: Largest ``horizon`` the theoretical schedule accepts (exact in a float).
MAX_HORIZON = 2 ** 53


def check_theoretical(V0, eta, horizon, R):
    """Validate the ``theoretical`` schedule's inputs at the prior ``V0`` (before any data).

    Raises a ValueError naming the argument: ``horizon`` above :data:`MAX_HORIZON`, ``R``
    so small that ``K_t < 1`` (it needs ``2 R d^2 T^2 log^2(3 T^3) >= 1``), or a prior
    (``lam``, ``eta`` or ``prior_cov``) whose ``h_0`` over- or underflows.
    """
    T = val.positive_int(horizon, "horizon")
    if T > MAX_HORIZON:
        raise ValueError(f"horizon must be <= 2**53 = {MAX_HORIZON} (T^3 enters the "
                         f"schedule as a float), got {T}")
    d = V0.shape[0]
    r_min = 1.0 / (2.0 * d ** 2 * T ** 2 * math.log(3.0 * T ** 3) ** 2)
    if R < r_min:
        raise ValueError(f"R must be >= {r_min:.3g} for the theoretical schedule with d = {d}, "
                         f"horizon = {T} (else K_t < 1; the paper assumes R >= 1), got {R!r}")
    try:
        theoretical_step(V0, eta, T, R)
    except ValueError:
        raise ValueError(f"lam and eta (or prior_cov) give no finite theoretical step at the "
                         f"prior: h_0 = lmin / (2 eta (lmin^2 + 2 lmax^2)) over- or "
                         f"underflows for the prior precision's eigenvalues (diagonal "
                         f"[{float(np.min(np.diag(V0))):.3g}, "
                         f"{float(np.max(np.diag(V0))):.3g}], eta = {eta!r})") from None


def theoretical_eta(lam, R, dim, horizon):
    """``eta = 4 lam^2 / (81 R^2 d log(3 T^3))`` (eq. 21)."""
    return 4.0 * lam ** 2 / (81.0 * R ** 2 * dim * math.log(3.0 * horizon ** 3))
