r"""The alpha-divergence family between Gaussians, and the Rényi bound of a linear-Gaussian model.

Two parts (``docs/algorithms.md`` section 6; Rényi appendix, Table 2, eqs. 43-46 and
appendix B):

- :func:`i_divergence`, :func:`log_i_divergence`, :func:`renyi`, :func:`tsallis` and
  :func:`amari` between two Gaussians with full covariances, all with the signature
  ``(mean_p, cov_p, mean_q, cov_q, alpha)``;
- :func:`linear_gaussian_log_evidence`, :func:`linear_gaussian_elbo` and
  :func:`linear_gaussian_renyi_bound` for the model ``s ~ N(0, prior_cov)``,
  ``o | s ~ N(X s, noise_cov)`` and a Gaussian ``q(s) = N(mean_q, cov_q)``.

All five divergences are evaluated from one quantity. With ``p = N(m_p, S_p)``,
``q = N(m_q, S_q)``, ``Delta = m_p - m_q`` and ``S_a = a S_q + (1 - a) S_p``,

.. math::

    \log I_a = \log \int p^a q^{1-a} = -a(1-a)\, R_a, \qquad
    R_a = \tfrac12 \Delta^\top S_a^{-1} \Delta
          + \frac{\log\det S_a - (1-a)\log\det S_p - a \log\det S_q}{2a(1-a)},

a non-negative function of ``a`` that is smooth through ``a = 0`` and ``a = 1``, where it
equals ``KL(q || p)`` and ``KL(p || q)``. In the eigenbasis of ``L_q^{-1} S_p L_q^{-T}
= I + diag(u)`` (``S_q = L_q L_q^T``) every term is a ``log1p`` of the ``u_i``, so ``R_a`` is
evaluated without cancellation at any ``a``, including ``a = 1 +- 1e-9``; the divergences
are then ``renyi = a R_a``, ``tsallis = a R_a expm1(x)/x`` with ``x = a (a - 1) R_a``, and
so on (see each function). The linear-Gaussian bound reduces to the same quantity:
``L_a(q) = log p(o) - renyi(q || p(s | o))``.

This module imports nothing of ``vits_ref.gaussian`` (which re-exports it), so that the
two never import each other.
"""

import math
import numbers

import numpy as np
from scipy.linalg import eigh, solve_triangular

from .._validate import float_array, positive_float, spd_matrix
from ._docstrings import fill
from ._spd import chol as _chol
from ._spd import inv_from_chol as _inv_from_chol
from ._spd import logdet as _logdet
from ._spd import vector as _vector

__all__ = [
    "amari",
    "i_divergence",
    "linear_gaussian_elbo",
    "linear_gaussian_log_evidence",
    "linear_gaussian_renyi_bound",
    "log_i_divergence",
    "renyi",
    "tsallis",
]

_LOG_2PI = math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------

def _alpha(value, name="alpha"):
    """A finite real order; bools and non-numbers are rejected because they are slips."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (a float such as 0.5), "
                        f"got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _pair(mean_p, cov_p, mean_q, cov_q):
    mean_p = _vector(mean_p, "mean_p")
    d = mean_p.shape[0]
    cov_p = spd_matrix(cov_p, "cov_p", dim=d)
    mean_q = _vector(mean_q, "mean_q", dim=d)
    cov_q = spd_matrix(cov_q, "cov_q", dim=d)
    chol_q = _chol(cov_q)

    def whiten(y):
        return solve_triangular(chol_q, y, lower=True, check_finite=False)

    return _spectrum(mean_p - mean_q, cov_p - cov_q, whiten)


# ---------------------------------------------------------------------------------------
# the reduced divergence R_a
# ---------------------------------------------------------------------------------------

def _spectrum(delta, cov_diff, whiten):
    """``(u, z)``: ``W (S_p - S_q) W^T = V diag(u) V^T`` and ``z = V^T W Delta``.

    ``whiten`` applies ``W = F^{-1}`` for any factor ``S_q = F F^T``. The difference
    ``S_p - S_q`` is whitened rather than ``S_p`` so that ``u`` keeps its relative accuracy
    when the two covariances are close (then ``KL ~ sum u^2 / 4``).
    """
    m = whiten(whiten(cov_diff).T)
    if not np.all(np.isfinite(m)):
        raise ValueError("inv(cov_q) cov_p is not finite for these inputs: their scales "
                         "overflow in double precision; rescale the problem")
    u, vecs = eigh(0.5 * (m + m.T), check_finite=False)
    if u[0] <= -1.0:
        raise ValueError("cov_p and cov_q are too ill-conditioned relative to each other: "
                         "an eigenvalue of inv(cov_q) cov_p rounded to <= 0; rescale the "
                         "problem")
    z = vecs.T @ whiten(delta)
    if not np.all(np.isfinite(z)):
        # (mean_p - mean_q) whitened by cov_q overflowed: 0 * inf in the rotation made the
        # divergences NaN (found by tests/test_fuzz_closed_forms.py)
        raise ValueError("the mean difference whitened by cov_q is not finite for these "
                         "inputs: their scales overflow in double precision; rescale the "
                         "problem")
    return u, z


def _log1p_over(t, x):
    """``log1p(t x) / t`` with its limit ``x`` at ``t = 0`` (no cancellation either way)."""
    if t == 0.0:
        return x.copy()
    return np.log1p(t * x) / t


def _reduced(u, z, a):
    r"""``R_a >= 0`` with ``log I_a = -a (1 - a) R_a``, or ``inf`` where ``I_a`` diverges.

    With ``t = 1 - a`` and ``lambda_i = 1 + u_i`` the eigenvalues of ``inv(S_q) S_p``,
    ``inv(S_q) S_a = I + t diag(u)`` in the eigenbasis, hence

        R_a = 1/2 sum_i [ z_i^2 / (1 + t u_i) + phi(t, u_i) ],
        phi(t, u) = (log(1 + t u) - t log(1 + u)) / (t (1 - t)).

    ``phi`` is 0/0 at ``t = 0`` and at ``t = 1``. For ``t <= 1/2`` it is
    ``(log1p(t u)/t - log1p(u)) / (1 - t)``; for ``t > 1/2`` the same expression with the
    roles of p and q exchanged (``t -> a``, ``u -> v = -u/(1 + u)``, the eigenvalues of
    ``inv(S_p) S_q`` minus one), because ``1 + t u = (1 + u)(1 + a v)``. Outside the
    ``log1p(t x)/t`` quotients, which have no cancellation, each form divides only by a
    number of magnitude ``>= 1/2``.
    """
    t = 1.0 - a
    w = 1.0 + t * u
    if np.any(w <= 0.0):
        # S_a is not positive definite: p^a q^(1-a) is not integrable.
        return math.inf
    log_lam = np.log1p(u)
    if t <= 0.5:
        phi = (_log1p_over(t, u) - log_lam) / (1.0 - t)
    else:
        phi = (_log1p_over(a, -u / (1.0 + u)) + log_lam) / t
    value = 0.5 * (float(np.sum(z * z / w)) + float(np.sum(phi)))
    if value < 0.0:
        # The exact value is >= 0 (Hoelder for 0 < a < 1, Jensen outside); what is left
        # is rounding of the log1p differences, at most a few ulps per eigenvalue.
        if value > -1e-12 * u.shape[0]:
            return 0.0
        raise ValueError(f"the divergence evaluated to {value:.3g} < 0: cov_p and cov_q are "
                         "too ill-conditioned for a reliable value; rescale the problem")
    return value


def _exprel(x):
    """``expm1(x)/x`` (1 at ``x = 0``); ``inf`` past overflow."""
    if x == 0.0:
        return 1.0
    with np.errstate(over="ignore"):
        return float(np.expm1(x) / x)


# ---------------------------------------------------------------------------------------
# the divergence family
# ---------------------------------------------------------------------------------------

@fill
def log_i_divergence(mean_p, cov_p, mean_q, cov_q, alpha):
    r"""Logarithm of the I-divergence ``log int p^a q^(1-a) ds`` between two Gaussians.

    {pair_parameters}
    {alpha}

    Returns
    -------
    float
        ``log I_a``: ``<= 0`` for ``0 <= a <= 1`` (``0`` at ``a`` in ``{0, 1}``), ``>= 0``
        outside; ``inf`` where the integral diverges (see Notes).

    {alpha_raises}

    Notes
    -----
    For ``p = N(m_p, S_p)``, ``q = N(m_q, S_q)``, ``Delta = m_p - m_q`` and
    ``S_a = a S_q + (1 - a) S_p`` (the standard Gaussian result; Rényi appendix Table 2
    defines ``D^I_a = int p^a q^(1-a)``):

    .. math::

        \log I_a = -\frac{a(1-a)}{2} \Delta^\top S_a^{-1} \Delta
            + \frac12 \log \frac{\det(S_p)^{1-a} \det(S_q)^{a}}{\det S_a}.

    The product ``p^a q^(1-a)`` has precision ``a inv(S_p) + (1 - a) inv(S_q) =
    inv(S_p) S_a inv(S_q)``, which is positive definite exactly when ``S_a`` is. For
    ``0 <= a <= 1`` it always is. For ``a > 1`` or ``a < 0`` it may not be, and then
    the integral diverges and ``inf`` is returned. No error is raised there, because
    this is a property of the pair, not bad input.

    Examples
    --------
    >>> from vits_ref.gaussian import log_i_divergence
    >>> log_i_divergence([0.0], [[1.0]], [1.0], [[1.0]], 0.5)  # -a(1-a)/2 |Delta|^2
    -0.125
    >>> log_i_divergence([0.0], [[4.0]], [0.0], [[1.0]], 2.0)  # S_2 = 2 - 4 < 0
    inf
    """
    a = _alpha(alpha)
    u, z = _pair(mean_p, cov_p, mean_q, cov_q)
    if a in (0.0, 1.0):
        return 0.0
    # (a R)(a - 1), not a (a - 1) R: a (a - 1) overflows for |a| > 1e154 and inf * 0 was
    # NaN at R = 0 (found by tests/test_fuzz_closed_forms.py)
    return a * _reduced(u, z, a) * (a - 1.0)


@fill
def i_divergence(mean_p, cov_p, mean_q, cov_q, alpha):
    r"""I-divergence ``int p^a q^(1-a) ds`` between two Gaussians.

    {pair_parameters}
    {alpha}

    Returns
    -------
    float
        ``I_a = exp(log_i_divergence(...))``: in ``(0, 1]`` for ``0 <= a <= 1``, ``>= 1``
        outside; ``inf`` where the integral diverges or overflows.

    {alpha_raises}

    Notes
    -----
    Rényi appendix Table 2 (after Nielsen and Nock, 2011): ``D^I_a[p || q] = int p^a
    q^(1-a) ds``. The closed form and its domain are those of :func:`log_i_divergence`;
    prefer that function when ``I_a`` may underflow or overflow.

    Examples
    --------
    >>> from vits_ref.gaussian import i_divergence
    >>> round(i_divergence([0.0], [[1.0]], [1.0], [[1.0]], 0.5), 6)  # exp(-1/8)
    0.882497
    """
    with np.errstate(over="ignore"):
        return float(np.exp(log_i_divergence(mean_p, cov_p, mean_q, cov_q, alpha)))


@fill
def renyi(mean_p, cov_p, mean_q, cov_q, alpha):
    r"""Rényi divergence ``D_a(p || q) = log(int p^a q^(1-a)) / (a - 1)`` between Gaussians.

    {pair_parameters}
    {alpha}

    Returns
    -------
    float
        ``D_a(p || q)`` in nats: ``>= 0`` for ``a >= 0``, ``<= 0`` for ``a < 0``.
        ``a = 1`` gives ``KL(p || q)`` and ``a = 0`` gives ``0``. Where the integral
        diverges the value is ``+inf`` for ``a > 1`` and ``-inf`` for ``a < 0``.

    {alpha_raises}

    Notes
    -----
    Rényi appendix Table 2 and eq. (46): ``D_a = log(D^I_a) / (a - 1)``. With
    ``S_a = a S_q + (1 - a) S_p`` (``docs/algorithms.md`` sections 1 and 6):

    .. math::

        D_a(p \| q) = \frac a2 \Delta^\top S_a^{-1} \Delta
            - \frac{1}{2(a-1)} \log \frac{\det S_a}{\det(S_p)^{1-a} \det(S_q)^{a}}.

    The limits are exact values of the function, not special cases bolted on:
    ``a -> 1`` gives ``KL(p || q)`` (the same value as
    :func:`vits_ref.gaussian.kl` ``(mean_p, cov_p, mean_q, cov_q)``), and ``a -> 0``
    gives ``-log int_{supp q} p = 0``, since two Gaussians have the same support.
    ``D_a`` is evaluated as ``a R_a`` with the non-negative ``R_a`` of the module
    docstring, which is smooth in ``a``; at ``a = 1 +- 1e-9`` the result agrees with
    ``KL`` to about ``1e-9`` relative, which is the true change of ``D_a`` there.

    Skew symmetry: ``(1 - a) D_a(p || q) = a D_{1-a}(q || p)``. ``D_a`` is
    non-decreasing in ``a``.

    Domain: for ``a > 1`` (or ``a < 0``) the integral exists only if ``S_a`` is positive
    definite. For ``a > 1`` that means ``S_p < a/(a - 1) S_q``: ``p`` must not be too much
    wider than ``q``. Otherwise the divergence is infinite, with the sign of
    ``1/(a - 1)``, and no error is raised.

    Examples
    --------
    >>> from vits_ref.gaussian import renyi
    >>> renyi([0.0], [[1.0]], [1.0], [[1.0]], 2.0)  # equal covariances: a |Delta|^2 / 2
    1.0
    >>> round(renyi([0.0], [[1.0]], [0.0], [[4.0]], 1.0), 6)  # KL(p || q)
    0.318147
    >>> renyi([0.0], [[4.0]], [0.0], [[1.0]], 2.0)  # p too wide for a = 2
    inf
    """
    a = _alpha(alpha)
    u, z = _pair(mean_p, cov_p, mean_q, cov_q)
    if a == 0.0:
        return 0.0
    return a * _reduced(u, z, a)


@fill
def tsallis(mean_p, cov_p, mean_q, cov_q, alpha):
    r"""Tsallis divergence ``(int p^a q^(1-a) - 1) / (a - 1)`` between two Gaussians.

    {pair_parameters}
    {alpha}

    Returns
    -------
    float
        ``D^T_a(p || q)``: ``>= 0`` for ``a >= 0``, ``<= 0`` for ``a < 0``; ``KL(p || q)``
        at ``a = 1``, ``0`` at ``a = 0``. Where the integral diverges or overflows the
        value is ``+inf`` for ``a > 1`` and ``-inf`` for ``a < 0``.

    {alpha_raises}

    Notes
    -----
    Rényi appendix Table 2 and eq. (43) (after Nielsen and Nock, 2011):
    ``D^T_a = (D^I_a - 1)/(a - 1)``. With ``D_a`` the Rényi divergence,
    ``D^I_a = exp((a - 1) D_a)``, so

    .. math::

        D^T_a = \frac{\exp((a-1) D_a) - 1}{a - 1}
              = D_a \,\frac{\operatorname{expm1}(x)}{x}, \quad x = (a-1) D_a,

    which is how it is evaluated: no cancellation near ``a = 1``, where it tends to
    ``KL(p || q)``. Inverting gives the conversion of eq. (46):
    ``D_a = log1p((a - 1) D^T_a)/(a - 1)``. Domain as in :func:`renyi`.

    Examples
    --------
    >>> from vits_ref.gaussian import tsallis
    >>> round(tsallis([0.0], [[1.0]], [1.0], [[1.0]], 2.0), 6)  # (e^1 - 1)/1
    1.718282
    """
    a = _alpha(alpha)
    u, z = _pair(mean_p, cov_p, mean_q, cov_q)
    if a == 0.0:
        return 0.0
    r = _reduced(u, z, a)
    if math.isinf(r):
        return math.copysign(math.inf, a)
    return a * r * _exprel(a * r * (a - 1.0))  # a r first: see log_i_divergence


@fill
def amari(mean_p, cov_p, mean_q, cov_q, alpha):
    r"""Amari's alpha-divergence ``4/(1 - a^2) (1 - int p^((1+a)/2) q^((1-a)/2))``.

    {pair_parameters}
    {alpha}

    Returns
    -------
    float
        ``D^AM_a(p || q) >= 0`` for every ``a``: ``KL(p || q)`` at ``a = 1``,
        ``KL(q || p)`` at ``a = -1``; ``inf`` where the integral diverges
        (``|a| > 1`` only).

    {alpha_raises}

    Notes
    -----
    Rényi appendix Table 2 and eqs. (44)-(45) (after Amari, 2009). With
    ``b = (1 + a)/2``, ``1 - a^2 = 4 b (1 - b)``, so

    .. math::

        D^{AM}_a = \frac{1 - D^I_b}{b(1-b)} = \frac{D^T_b}{b}
                 = R_b\, \frac{\operatorname{expm1}(x)}{x}, \quad x = b(b-1) R_b,

    with ``R_b = D_b/b`` (the reduced divergence of the module docstring, itself
    smooth in ``b``). The limits:

    - ``a -> 1`` (``b -> 1``): ``D^T_b / b -> KL(p || q)``.
    - ``a -> -1`` (``b -> 0``): ``(1 - D^I_b)/b -> -d/db int p^b q^(1-b) at b = 0``,
      which is ``-int q log(p/q) = KL(q || p)``.

    Both limits are attained by the formula above, so there is no special case.
    ``D^AM_0 = 4 (1 - int sqrt(p q))`` is four times the squared Hellinger distance
    in the convention ``H^2 = 1 - int sqrt(p q)``. Domain: the integral at ``b``
    diverges only if ``b > 1`` or ``b < 0``, i.e. ``|a| > 1``, when
    ``S_b = b S_q + (1 - b) S_p`` is not positive definite.

    Examples
    --------
    >>> from vits_ref.gaussian import amari
    >>> round(amari([0.0], [[1.0]], [1.0], [[1.0]], 0.0), 6)  # 4 (1 - exp(-1/8))
    0.470012
    >>> round(amari([0.0], [[4.0]], [0.0], [[1.0]], -1.0), 6)  # KL(q || p)
    0.318147
    """
    a = _alpha(alpha)
    u, z = _pair(mean_p, cov_p, mean_q, cov_q)
    b = 0.5 * (1.0 + a)
    r = _reduced(u, z, b)
    if math.isinf(r):
        return math.inf
    return r * _exprel(b * r * (b - 1.0))  # b r first: see log_i_divergence




# ---------------------------------------------------------------------------------------
# the linear-Gaussian model of appendix B
# ---------------------------------------------------------------------------------------

def _linear_model(o, X, prior_cov, noise_cov):
    o = float_array(o, "o", ndim=1)
    n = o.shape[0]
    if n == 0:
        raise ValueError("o must have at least one entry (one observation), got shape (0,)")
    X = float_array(X, "X", ndim=2)
    if X.shape[0] != n or X.shape[1] == 0:
        raise ValueError(f"X must have shape (n, d) = ({n}, d) with d >= 1, one row per "
                         f"entry of o, got shape {X.shape}; for the appendix's scalar s "
                         f"pass its vector x as x[:, None]")
    d = X.shape[1]
    prior_cov = spd_matrix(prior_cov, "prior_cov", dim=d)
    noise_cov = spd_matrix(noise_cov, "noise_cov", dim=n)
    return o, X, prior_cov, noise_cov


def _q(mean_q, cov_q, d):
    return _vector(mean_q, "mean_q", dim=d), spd_matrix(cov_q, "cov_q", dim=d)


def _log_gamma_prior(gamma_prior):
    """``log Gam(lambda_p; shape, rate)`` of eq. (50), or 0 without a Gamma prior."""
    if gamma_prior is None:
        return 0.0
    # imported here: scipy.special is 80 ms of every `import vits_ref` otherwise
    from scipy.special import gammaln

    if isinstance(gamma_prior, (str, bytes)) or not hasattr(gamma_prior, "__len__") \
            or len(gamma_prior) != 3:
        raise TypeError("gamma_prior must be None or a tuple (shape, rate, precision) of "
                        f"three positive numbers, got {gamma_prior!r}")
    shape = positive_float(gamma_prior[0], "gamma_prior[0] (shape alpha_p)")
    rate = positive_float(gamma_prior[1], "gamma_prior[1] (rate beta_p)")
    lam = positive_float(gamma_prior[2], "gamma_prior[2] (precision lambda_p)")
    return shape * math.log(rate) - float(gammaln(shape)) + (shape - 1.0) * math.log(lam) \
        - rate * lam


def _whitened(o, X, noise_cov):
    chol_l = _chol(noise_cov)
    return (solve_triangular(chol_l, o, lower=True, check_finite=False),
            solve_triangular(chol_l, X, lower=True, check_finite=False), _logdet(chol_l))


def _log_evidence(o, X, prior_cov, noise_cov):
    cov_o = noise_cov + X @ prior_cov @ X.T
    chol = _chol(0.5 * (cov_o + cov_o.T))
    r = solve_triangular(chol, o, lower=True, check_finite=False)
    return -0.5 * (o.shape[0] * _LOG_2PI + _logdet(chol) + float(r @ r))


@fill
def linear_gaussian_log_evidence(o, X, prior_cov, noise_cov, *, gamma_prior=None):
    r"""Log evidence ``log p(o)`` of the linear-Gaussian model of the Rényi appendix B.

    {model_parameters}
    {gamma_prior}

    Returns
    -------
    float
        ``log N(o; 0, noise_cov + X prior_cov X^T)`` (plus the Gamma term if given).

    {model_raises}

    Notes
    -----
    Model (Rényi appendix eqs. 65-66, with a vector ``s``): ``s ~ N(0, Sigma_p)``,
    ``o | s ~ N(X s, Sigma_l)``. Marginally ``o ~ N(0, Sigma_l + X Sigma_p X^T)``.
    This is what the Rényi bound equals at the exact posterior, for every order
    (:func:`linear_gaussian_renyi_bound`).

    Examples
    --------
    >>> from vits_ref.gaussian import linear_gaussian_log_evidence
    >>> round(linear_gaussian_log_evidence([1.0], [[1.0]], [[1.0]], [[1.0]]), 6)  # N(1; 0, 2)
    -1.515512
    """
    o, X, prior_cov, noise_cov = _linear_model(o, X, prior_cov, noise_cov)
    return _log_evidence(o, X, prior_cov, noise_cov) + _log_gamma_prior(gamma_prior)


@fill
def linear_gaussian_elbo(o, X, prior_cov, noise_cov, mean_q, cov_q, *, gamma_prior=None):
    r"""Negative variational free energy ``E_q[log p(o, s) - log q(s)]`` (Rényi appendix B.1).

    {model_parameters}
    {model_q}
    {gamma_prior}

    Returns
    -------
    float
        ``ELBO(q) = -KL[q(s) || p(s, o)] = log p(o) - KL(q || p(s | o)) <= log p(o)``.

    {model_raises}

    Notes
    -----
    Eqs. (61)-(64), written for a vector ``s`` (``d`` entries). With
    ``P = inv(Sigma_p) + X^T inv(Sigma_l) X`` and
    ``r = o - X mu_q`` it is evaluated directly, without the posterior:

    .. math::

        \mathrm{ELBO} = \tfrac12 \log\frac{\det\Sigma_q}{(2\pi)^n \det\Sigma_p
            \det\Sigma_l} - \tfrac12 \big(r^\top \Sigma_l^{-1} r
            + \mu_q^\top \Sigma_p^{-1} \mu_q\big)
            - \tfrac12 \big(\operatorname{tr}(P \Sigma_q) - d\big)
            + \log \mathrm{Gam}(\lambda_p; \alpha_p, \beta_p).

    For ``d = 1`` this is eqs. (61)-(64) term by term
    (``r^T inv(Sigma_l) r = o^T inv(Sigma_l) o - 2 mu_q x^T inv(Sigma_l) o +
    mu_q^2 x^T inv(Sigma_l) x``). The last term is present only with ``gamma_prior``.
    Eq. (54) puts the Gamma density in the numerator of ``q/p``; it belongs in the
    denominator, as eq. (56) has it. It is the ``alpha -> 1`` limit of
    :func:`linear_gaussian_renyi_bound`.

    Examples
    --------
    >>> from vits_ref.gaussian import linear_gaussian_elbo, linear_gaussian_log_evidence
    >>> args = ([1.0], [[1.0]], [[1.0]], [[1.0]])
    >>> elbo = linear_gaussian_elbo(*args, [0.5], [[0.5]])  # q = the exact posterior
    >>> bool(abs(elbo - linear_gaussian_log_evidence(*args)) < 1e-14)
    True
    """
    o, X, prior_cov, noise_cov = _linear_model(o, X, prior_cov, noise_cov)
    d = X.shape[1]
    mean_q, cov_q = _q(mean_q, cov_q, d)
    ow, Xw, logdet_l = _whitened(o, X, noise_cov)
    chol_p = _chol(prior_cov)
    chol_q = _chol(cov_q)
    resid = ow - Xw @ mean_q
    zp = solve_triangular(chol_p, mean_q, lower=True, check_finite=False)
    # tr(P Sigma_q) = ||Xw L_q||_F^2 + ||L_p^{-1} L_q||_F^2, with Sigma_q = L_q L_q^T
    a_l = Xw @ chol_q
    a_p = solve_triangular(chol_p, chol_q, lower=True, check_finite=False)
    trace = float(np.sum(a_l * a_l) + np.sum(a_p * a_p))
    value = 0.5 * (_logdet(chol_q) - o.shape[0] * _LOG_2PI - _logdet(chol_p) - logdet_l) \
        - 0.5 * (float(resid @ resid) + float(zp @ zp)) - 0.5 * (trace - d)
    return value + _log_gamma_prior(gamma_prior)


@fill
def linear_gaussian_renyi_bound(o, X, prior_cov, noise_cov, mean_q, cov_q, alpha, *,
                                gamma_prior=None):
    r"""Rényi variational bound ``L_a(q)`` of the linear-Gaussian model (Rényi appendix B.2).

    {model_parameters}
    {model_q}
    {alpha}
    {gamma_prior}

    Returns
    -------
    float
        ``L_a(q) = 1/(1 - a) log E_q[(p(o, s)/q(s))^(1-a)]``. It is non-increasing in
        ``a``, with ``L_0 = log p(o)`` and ``L_1 = ELBO`` (:func:`linear_gaussian_elbo`).
        It equals ``log p(o)`` for every ``a`` when ``q`` is the exact posterior. Where
        the expectation diverges the value is ``-inf`` for ``a > 1`` and ``+inf`` for
        ``a < 0``.

    {model_raises}

    Notes
    -----
    Convention: Li and Turner's (2016) ``L_a = 1/(1-a) log int q^a p(o, s)^(1-a) ds``,
    which is the appendix's eq. (68) ``-D_a[q(s) || p(s, o)]``. Eqs. (78) and (98) label
    the result ``D_a``, but their value is this ``-D_a``. It is a lower bound on
    ``log p(o)`` for ``a > 0`` and an upper bound for ``a < 0``.

    Derivation (``docs/algorithms.md`` section 6): write ``p(o, s) = p(o) pi(s)`` with
    the exact posterior ``pi = N(m, C)``, ``C = inv(P)``,
    ``P = inv(Sigma_p) + X^T inv(Sigma_l) X``, ``m = C X^T inv(Sigma_l) o``. Then
    ``int q^a p(o, s)^(1-a) = p(o)^(1-a) int q^a pi^(1-a)``, so

    .. math::

        L_a(q) = \log p(o) - D_a(q \,\|\, \pi)
               = \log p(o) - \frac a2 \delta^\top S^{-1} \delta
                 + \frac{1}{2(a-1)} \log\frac{\det S}{\det(\Sigma_q)^{1-a} \det(C)^a},

    with ``delta = mu_q - m`` and ``S = a C + (1 - a) Sigma_q``. ``D_a`` is
    :func:`renyi` and is evaluated as there, stably through ``a = 1`` and ``a = 0``.
    Expanded for ``d = 1`` it is eqs. (98)-(100) with the opposite sign of the label, plus
    ``-(1-a)/(2A) (O X - c^2)``, a term that eq. (101) lacks for ``n > 1``.

    Domain: the expectation is finite exactly when
    ``A = a inv(Sigma_q) + (1 - a) P`` (the appendix's ``inv(Sigma_alpha)``) is positive
    definite. That always holds for ``0 <= a <= 1``. Otherwise ``L_a`` is ``-inf``
    (``a > 1``) or ``+inf`` (``a < 0``); no error is raised.

    Examples
    --------
    >>> from vits_ref.gaussian import linear_gaussian_renyi_bound
    >>> args = ([1.0], [[1.0]], [[1.0]], [[1.0]])  # posterior N(0.5, 0.5), log p(o) = -1.5155
    >>> [round(linear_gaussian_renyi_bound(*args, [0.5], [[0.5]], a), 6) for a in (0.5, 2.0)]
    [-1.515512, -1.515512]
    >>> round(linear_gaussian_renyi_bound(*args, [0.0], [[1.0]], 0.5), 6)  # q = the prior
    -1.657737
    """
    a = _alpha(alpha)
    o, X, prior_cov, noise_cov = _linear_model(o, X, prior_cov, noise_cov)
    d = X.shape[1]
    mean_q, cov_q = _q(mean_q, cov_q, d)
    log_evidence = _log_evidence(o, X, prior_cov, noise_cov) + _log_gamma_prior(gamma_prior)
    if a == 0.0:
        return log_evidence
    ow, Xw, _ = _whitened(o, X, noise_cov)
    prec = _inv_from_chol(_chol(prior_cov)) + Xw.T @ Xw
    chol_prec = _chol(0.5 * (prec + prec.T))
    post_mean = solve_triangular(chol_prec.T, solve_triangular(chol_prec, Xw.T @ ow, lower=True,
                                                               check_finite=False),
                                 lower=False, check_finite=False)
    post_cov = _inv_from_chol(chol_prec)

    # C = inv(P) = F F^T with F = L_P^{-T}, so whitening by C is multiplying by L_P^T:
    # no second factorisation, and D_a(q || pi) comes out of the same code as renyi().
    def whiten(y):
        return chol_prec.T @ y

    u, z = _spectrum(mean_q - post_mean, cov_q - post_cov, whiten)
    return log_evidence - a * _reduced(u, z, a)

