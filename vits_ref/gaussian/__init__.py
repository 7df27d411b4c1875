"""Closed forms for Gaussians: divergences, products and linear-Gaussian posteriors.

These are the ground truth that every approximate-posterior engine is tested against
(``docs/algorithms.md`` section 1). Everything is computed from Cholesky factors: log
determinants come from their diagonals and linear systems are solved by triangular
solves; no explicit inverse is formed except where a covariance is itself the output.

Notation: a Gaussian is ``(mean, cov)`` with ``mean`` of shape ``(d,)`` and ``cov`` of
shape ``(d, d)``, symmetric positive definite. ``d = 1`` uses shapes ``(1,)`` and
``(1, 1)``.
"""

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from .._validate import float_array, positive_float, spd_matrix
from ._docstrings import fill
from ._spd import chol as _chol
from ._spd import finite_result as _finite
from ._spd import inv_from_chol as _inv_from_chol
from ._spd import logdet as _logdet
from ._spd import vector as _vector
from .divergences import (
    amari,
    i_divergence,
    linear_gaussian_elbo,
    linear_gaussian_log_evidence,
    linear_gaussian_renyi_bound,
    log_i_divergence,
    renyi,
    tsallis,
)

__all__ = [
    "amari",
    "entropy",
    "i_divergence",
    "kl",
    "kl_from_scale",
    "linear_gaussian_elbo",
    "linear_gaussian_log_evidence",
    "linear_gaussian_renyi_bound",
    "linear_posterior",
    "linear_posterior_from_stats",
    "linear_posterior_general",
    "log_i_divergence",
    "logpdf",
    "product",
    "renyi",
    "tsallis",
    "w2",
    "w2_squared",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


# ---------------------------------------------------------------------------------------
# validation and factorisation helpers
# ---------------------------------------------------------------------------------------

def _gaussian(mean, cov, mean_name, cov_name, dim=None):
    """Validate one Gaussian; return ``(mean, cov, lower Cholesky factor of cov)``."""
    mean = _vector(mean, mean_name, dim)
    cov = spd_matrix(cov, cov_name, dim=mean.shape[0])
    return mean, cov, _chol(cov)


def _scale_tril(mat, name, dim):
    """Validate a lower-triangular factor with a positive diagonal, (dim, dim)."""
    mat = float_array(mat, name, ndim=2)
    if mat.shape != (dim, dim):
        raise ValueError(f"{name} must have shape ({dim}, {dim}), got {mat.shape}")
    if np.any(np.triu(mat, 1)):
        raise ValueError(f"{name} must be lower triangular (zeros above the diagonal)")
    if not np.all(np.diag(mat) > 0.0):
        raise ValueError(f"{name} must have a positive diagonal, got minimum "
                         f"{np.diag(mat).min():.3g}")
    return mat


def _sym(mat):
    return 0.5 * (mat + mat.T)


def _features_rewards(features, rewards):
    """Validate features ``(n, d)`` (n >= 0, d >= 1) and rewards ``(n,)``."""
    features = float_array(features, "features", ndim=2)
    if features.shape[1] == 0:
        raise ValueError(f"features must have at least one column (d >= 1), "
                         f"got shape {features.shape}")
    rewards = float_array(rewards, "rewards", ndim=1)
    if rewards.shape[0] != features.shape[0]:
        raise ValueError(f"rewards has {rewards.shape[0]} entries but features has "
                         f"{features.shape[0]} rows; pass one reward per feature row")
    return features, rewards


# ---------------------------------------------------------------------------------------
# divergences
# ---------------------------------------------------------------------------------------

@fill
def kl(mean_p, cov_p, mean_q, cov_q):
    r"""Kullback-Leibler divergence ``KL(p || q)`` between two Gaussians.

    {pair_parameters}

    Returns
    -------
    float
        ``KL(p || q) >= 0`` in nats.

    Raises
    ------
    ValueError
        If an argument is non-finite, has the wrong shape, or a covariance is not
        symmetric positive definite; also if the computed value is negative beyond
        rounding (the covariances are too ill-conditioned for a reliable result).

    Notes
    -----
    With ``p = N(m1, S1)`` and ``q = N(m2, S2)`` (``docs/algorithms.md`` section 1)

    .. math::

        KL(p \| q) = \tfrac12 \big[ \operatorname{tr}(S_2^{-1} S_1)
            + (m_2 - m_1)^\top S_2^{-1} (m_2 - m_1) - d
            + \log\det S_2 - \log\det S_1 \big].

    With lower Cholesky factors ``S1 = L1 L1^T`` and ``S2 = L2 L2^T`` the trace is
    ``||L2^{-1} L1||_F^2``, the quadratic form is ``||L2^{-1} (m2 - m1)||^2`` and
    ``log det S2 - log det S1 = 2 sum_i log(L2[i, i] / L1[i, i])``; no inverse is formed.
    The exact value is non-negative; a computed value in ``(-1e-12 d, 0)`` is rounding
    and is returned as ``0.0``. A more negative value raises ``ValueError``.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import kl
    >>> round(kl([0.0], [[1.0]], [0.0], [[4.0]]), 6)  # log 2 + 1/8 - 1/2
    0.318147
    >>> kl(np.zeros(2), np.eye(2), np.zeros(2), np.eye(2))
    0.0
    """
    mean_p, _, chol_p = _gaussian(mean_p, cov_p, "mean_p", "cov_p")
    d = mean_p.shape[0]
    mean_q, _, chol_q = _gaussian(mean_q, cov_q, "mean_q", "cov_q", dim=d)
    return _kl_factors(mean_p, chol_p, mean_q, chol_q)


def kl_from_scale(mean_p, scale_tril_p, mean_q, cov_q):
    r"""``KL(p || q)`` with ``p``'s covariance given by its lower-triangular factor.

    Parameters
    ----------
    mean_p : array (d,)
    scale_tril_p : array (d, d)
        Lower triangular with a positive diagonal: ``cov_p = scale_tril_p scale_tril_p^T``.
    mean_q, cov_q : array (d,), (d, d)
        ``q``'s mean and covariance, symmetric positive definite.

    Returns
    -------
    float
        ``KL(p || q) >= 0`` in nats, as :func:`kl`.

    Raises
    ------
    ValueError
        As :func:`kl`, and if ``scale_tril_p`` is not finite, not lower triangular or has a
        diagonal entry ``<= 0``.

    Notes
    -----
    :func:`kl`'s formula with ``L1 = scale_tril_p``: ``p``'s factor is only multiplied
    (``L2^{-1} L1``) and its log-determinant is ``2 sum_i log L1[i, i]``, so ``p``'s
    covariance is never formed. That matters for a variational ``q`` that holds its own
    factor and has shrunk by many orders of magnitude in some direction (a diagonal entry
    of 1e-20 beside entries of 1): ``L1 L1^T`` then rounds to a singular matrix whose
    Cholesky fails, or succeeds with a pivot of rounding size and a wrong determinant, while
    the divergence itself is finite and large.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import kl, kl_from_scale
    >>> L = np.array([[1.0, 0.0], [0.5, 1e-20]])
    >>> round(kl_from_scale(np.zeros(2), L, np.zeros(2), np.eye(2)), 3)  # (1.25 - 2 + 92.103) / 2
    45.677
    >>> kl(np.zeros(2), L @ L.T, np.zeros(2), np.eye(2))  # L L^T = [[1, .5], [.5, .25]]
    Traceback (most recent call last):
        ...
    ValueError: cov_p must be positive definite
    """
    mean_p = _vector(mean_p, "mean_p")
    d = mean_p.shape[0]
    chol_p = _scale_tril(scale_tril_p, "scale_tril_p", d)
    mean_q, _, chol_q = _gaussian(mean_q, cov_q, "mean_q", "cov_q", dim=d)
    return _kl_factors(mean_p, chol_p, mean_q, chol_q)


def _kl_factors(mean_p, chol_p, mean_q, chol_q):
    """:func:`kl` from the lower factors of the two covariances (validated)."""
    d = mean_p.shape[0]
    m = solve_triangular(chol_q, chol_p, lower=True, check_finite=False)
    trace = float(np.sum(m * m))
    z = solve_triangular(chol_q, mean_q - mean_p, lower=True, check_finite=False)
    quad = float(z @ z)
    logdet_ratio = 2.0 * float(np.sum(np.log(np.diag(chol_q) / np.diag(chol_p))))
    value = 0.5 * (trace + quad - d + logdet_ratio)
    if value < 0.0:
        if value > -1e-12 * d:
            return 0.0
        raise ValueError(f"KL(p || q) evaluated to {value:.3g} < 0: cov_p and cov_q are too "
                         "ill-conditioned for a reliable value; rescale the problem")
    return _finite("KL(p || q)", value)  # an overflowed term was a silent inf


@fill
def w2_squared(mean_p, cov_p, mean_q, cov_q):
    r"""Squared 2-Wasserstein distance between two Gaussians.

    {pair_parameters}

    Returns
    -------
    float
        ``W2(p, q)^2 >= 0``.

    Notes
    -----
    With ``p = N(m1, S1)`` and ``q = N(m2, S2)`` (``docs/algorithms.md`` section 1; VITS
    paper, the Bures-Wasserstein geometry of its section 2)

    .. math::

        W_2^2(p, q) = \|m_1 - m_2\|^2 + \operatorname{tr}\big(S_1 + S_2
            - 2 (S_1^{1/2} S_2 S_1^{1/2})^{1/2}\big).

    The matrix ``S1^{1/2} S2 S1^{1/2}`` has the same eigenvalues as ``S2 S1`` and hence
    as ``(L2^T L1)^T (L2^T L1)`` for Cholesky factors ``S_i = L_i L_i^T``; so
    ``tr((S1^{1/2} S2 S1^{1/2})^{1/2})`` is the sum of the singular values of
    ``L2^T L1`` (its nuclear norm). That is what is computed: no matrix square root is
    needed and the singular values are non-negative by construction. The covariance
    (Bures) term is exactly ``>= 0``; negative rounding is clipped to ``0``.

    Examples
    --------
    >>> from vits_ref.gaussian import w2_squared
    >>> w2_squared([0.0], [[1.0]], [3.0], [[4.0]])  # (0 - 3)^2 + (1 - 2)^2
    10.0
    """
    mean_p, cov_p, chol_p = _gaussian(mean_p, cov_p, "mean_p", "cov_p")
    d = mean_p.shape[0]
    mean_q, cov_q, chol_q = _gaussian(mean_q, cov_q, "mean_q", "cov_q", dim=d)
    diff = mean_p - mean_q
    nuclear = float(np.sum(np.linalg.svd(_finite("L_q^T L_p", chol_q.T @ chol_p),
                                         compute_uv=False)))
    bures = max(float(np.trace(cov_p) + np.trace(cov_q)) - 2.0 * nuclear, 0.0)
    return _finite("W2^2", float(diff @ diff) + bures)


@fill
def w2(mean_p, cov_p, mean_q, cov_q):
    r"""2-Wasserstein distance between two Gaussians (not squared).

    {pair_parameters}

    Returns
    -------
    float
        ``W2(p, q) = sqrt(w2_squared(...)) >= 0``; a metric (symmetric, triangle
        inequality).

    Notes
    -----
    See :func:`w2_squared` for the closed form (``docs/algorithms.md`` section 1). In 1-D
    ``W2 = sqrt((m1 - m2)^2 + (s1 - s2)^2)`` with standard deviations ``s1, s2``.

    Examples
    --------
    >>> from vits_ref.gaussian import w2
    >>> w2([0.0], [[1.0]], [3.0], [[25.0]])  # sqrt(3^2 + (1 - 5)^2)
    5.0
    """
    return float(np.sqrt(w2_squared(mean_p, cov_p, mean_q, cov_q)))


# ---------------------------------------------------------------------------------------
# linear-Gaussian posteriors
# ---------------------------------------------------------------------------------------

def linear_posterior_from_stats(V, b, eta=1.0):
    r"""Exact posterior ``N(solve(V, b), inv(eta V))`` from sufficient statistics.

    Parameters
    ----------
    V : array_like, shape (d, d)
        ``lam I + sum_s phi_s phi_s^T``, symmetric positive definite.
    b : array_like, shape (d,)
        ``sum_s r_s phi_s``.
    eta : float, default 1.0
        Inverse temperature (inverse noise variance), ``> 0``.

    Returns
    -------
    mean : ndarray, shape (d,)
        ``solve(V, b)``.
    cov : ndarray, shape (d, d)
        ``inv(eta V)``, exactly symmetric.

    Notes
    -----
    For the model ``r = phi @ theta + noise`` with noise variance ``1/eta`` and prior
    ``N(0, I/(lam eta))`` the potential is ``U = eta/2 (sum_s (phi_s theta - r_s)^2 +
    lam |theta|^2)`` with Hessian ``eta V`` and minimiser ``solve(V, b)``, so the posterior
    is ``N(solve(V, b), inv(eta V))`` (``docs/algorithms.md`` section 1; VITS paper, linear
    bandit). Used by engines that keep ``V`` and ``b`` rather than the history.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import linear_posterior_from_stats
    >>> mean, cov = linear_posterior_from_stats(2.0 * np.eye(2), np.array([2.0, 4.0]), eta=0.5)
    >>> mean, np.diag(cov)
    (array([1., 2.]), array([1., 1.]))
    """
    V = spd_matrix(V, "V")
    b = _vector(b, "b", dim=V.shape[0])
    eta = positive_float(eta, "eta")
    chol = _chol(V, "V")
    mean = cho_solve((chol, True), b, check_finite=False)
    cov = _inv_from_chol(chol) / eta
    return _finite("the posterior (mean, cov)", mean, cov)


def linear_posterior(features, rewards, eta=1.0, lam=1.0):
    r"""Exact posterior of Bayesian linear regression with prior ``N(0, I/(lam eta))``.

    Parameters
    ----------
    features : array_like, shape (n, d)
        Feature rows ``phi_s``; ``n = 0`` is allowed (then the prior is returned).
    rewards : array_like, shape (n,)
        Observed rewards ``r_s``.
    eta : float, default 1.0
        Inverse temperature: the noise variance is ``1/eta``. Must be ``> 0``.
    lam : float, default 1.0
        Ridge: the prior covariance is ``I / (lam eta)``. Must be ``> 0``.

    Returns
    -------
    mean : ndarray, shape (d,)
        ``solve(V, b)``.
    cov : ndarray, shape (d, d)
        ``inv(eta V)``.

    Notes
    -----
    Model ``r = phi @ theta + noise``, ``noise ~ N(0, 1/eta)``, ``theta ~ N(0, I/(lam eta))``
    (``docs/algorithms.md`` section 1; VITS paper, linear bandit):

    .. math::

        V = \lambda I + \Phi^\top \Phi, \quad b = \Phi^\top r, \quad
        \theta \mid \text{data} \sim N\big(V^{-1} b, (\eta V)^{-1}\big).

    This is :func:`linear_posterior_general` with ``prior_mean = 0``,
    ``prior_cov = I/(lam eta)`` and ``noise_var = 1/eta``.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import linear_posterior
    >>> mean, cov = linear_posterior(np.ones((3, 1)), np.array([1.0, 2.0, 3.0]), eta=2.0)
    >>> mean, cov  # V = 1 + 3 = 4, b = 6
    (array([1.5]), array([[0.125]]))
    """
    features, rewards = _features_rewards(features, rewards)
    eta = positive_float(eta, "eta")
    lam = positive_float(lam, "lam")
    V = lam * np.eye(features.shape[1]) + _sym(features.T @ features)
    b = features.T @ rewards
    try:
        return linear_posterior_from_stats(V, b, eta)
    except ValueError as exc:  # named V, which the caller never passed
        raise ValueError(f"the posterior precision lam I + features^T features failed "
                         f"({exc}): the features' scales are too far apart for double "
                         f"precision; rescale the problem") from None


def linear_posterior_general(features, rewards, prior_mean, prior_cov, noise_var):
    r"""Exact posterior of Bayesian linear regression with a general Gaussian prior.

    Parameters
    ----------
    features : array_like, shape (n, d)
        Feature rows ``phi_l``; ``n = 0`` is allowed (then the prior is returned).
    rewards : array_like, shape (n,)
        Observations ``y_l``.
    prior_mean : array_like, shape (d,)
        Prior mean ``theta0``.
    prior_cov : array_like, shape (d, d)
        Prior covariance ``Sigma0``, symmetric positive definite.
    noise_var : float
        Observation noise variance ``sigma^2 > 0``.

    Returns
    -------
    mean : ndarray, shape (d,)
        ``theta_hat``.
    cov : ndarray, shape (d, d)
        ``Sigma_hat``.

    Notes
    -----
    Model ``y = phi @ theta + noise``, ``noise ~ N(0, sigma^2)``, ``theta ~ N(theta0,
    Sigma0)`` (diffusion paper eq. 3; ``docs/algorithms.md`` section 1):

    .. math::

        \hat\Sigma = \big(\Sigma_0^{-1} + \sigma^{-2} \Phi^\top \Phi\big)^{-1}, \quad
        \hat\theta = \hat\Sigma\big(\Sigma_0^{-1}\theta_0 + \sigma^{-2} \Phi^\top y\big).

    Computed in information form with Cholesky solves. With ``prior_mean = 0``,
    ``prior_cov = I/(lam eta)`` and ``noise_var = 1/eta`` it equals
    :func:`linear_posterior` ``(features, rewards, eta, lam)``. Because the posterior
    of one batch is the prior of the next, sequential updates reproduce the batch
    posterior. (Kveton et al.'s Assumption 1 writes the likelihood as
    ``exp(-sigma^-2 sum (y - phi theta)^2)``, missing a factor 1/2; eq. 3 is right.)

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import linear_posterior_general
    >>> mean, cov = linear_posterior_general(np.ones((1, 1)), [2.0], [0.0], [[1.0]], 1.0)
    >>> mean, cov
    (array([1.]), array([[0.5]]))
    """
    features, rewards = _features_rewards(features, rewards)
    d = features.shape[1]
    prior_mean, _, chol0 = _gaussian(prior_mean, prior_cov, "prior_mean", "prior_cov", dim=d)
    noise_var = positive_float(noise_var, "noise_var")
    precision = _inv_from_chol(chol0) + _sym(features.T @ features) / noise_var
    shift = cho_solve((chol0, True), prior_mean, check_finite=False)
    shift = shift + features.T @ rewards / noise_var
    chol = _chol(precision, "the posterior precision inv(prior_cov) + Phi^T Phi / noise_var")
    mean = cho_solve((chol, True), shift, check_finite=False)
    return _finite("the posterior (mean, cov)", mean, _inv_from_chol(chol))


# ---------------------------------------------------------------------------------------
# products, entropy, density
# ---------------------------------------------------------------------------------------

def product(mean1, cov1, mean2, cov2):
    r"""Product of two Gaussian densities: ``N(x; m1, S1) N(x; m2, S2) = Z N(x; m, S)``.

    Parameters
    ----------
    mean1 : array_like, shape (d,)
        Mean ``m1`` of the first factor.
    cov1 : array_like, shape (d, d)
        Covariance ``S1`` of the first factor, symmetric positive definite.
    mean2 : array_like, shape (d,)
        Mean ``m2`` of the second factor.
    cov2 : array_like, shape (d, d)
        Covariance ``S2`` of the second factor, symmetric positive definite.

    Returns
    -------
    mean : ndarray, shape (d,)
        ``m = S (inv(S1) m1 + inv(S2) m2)``.
    cov : ndarray, shape (d, d)
        ``S = inv(inv(S1) + inv(S2))``.
    log_normaliser : float
        ``log Z = log N(m1; m2, S1 + S2)``.

    Notes
    -----
    Diffusion paper Lemma 6 (``docs/algorithms.md`` section 1) states the proportionality

    .. math::

        N(x; m_1, S_1)\, N(x; m_2, S_2) = Z\, N(x; m, S), \quad
        S = (S_1^{-1} + S_2^{-1})^{-1}, \quad m = S(S_1^{-1} m_1 + S_2^{-1} m_2),

    and the constant, obtained by integrating both sides over ``x``, is
    ``Z = N(m1; m2, S1 + S2)``. (Lemma 6 allows ``S_i`` positive semi-definite; the
    formula needs them invertible, so positive definite is required here.) ``S`` and
    ``m`` are computed in information form with Cholesky solves, ``log Z`` from the
    Cholesky factor of ``S1 + S2``.

    Examples
    --------
    >>> from vits_ref.gaussian import product
    >>> mean, cov, log_z = product([0.0], [[1.0]], [2.0], [[1.0]])
    >>> mean, cov, round(log_z, 6)  # log N(0; 2, 2)
    (array([1.]), array([[0.5]]), -2.265512)
    """
    mean1, cov1, chol1 = _gaussian(mean1, cov1, "mean1", "cov1")
    d = mean1.shape[0]
    mean2, cov2, chol2 = _gaussian(mean2, cov2, "mean2", "cov2", dim=d)
    precision = _inv_from_chol(chol1) + _inv_from_chol(chol2)
    shift = (cho_solve((chol1, True), mean1, check_finite=False)
             + cho_solve((chol2, True), mean2, check_finite=False))
    chol = _chol(precision, "inv(cov1) + inv(cov2)")
    mean = cho_solve((chol, True), shift, check_finite=False)
    cov = _inv_from_chol(chol)
    log_z = _logpdf_chol(mean1[None, :], mean2, _chol(_sym(cov1 + cov2), "cov1 + cov2"))[0]
    mean, cov = _finite("the product (mean, cov)", mean, cov)
    return mean, cov, float(_finite("log Z", log_z))


def entropy(cov):
    r"""Differential entropy of ``N(m, cov)`` (independent of the mean), in nats.

    Parameters
    ----------
    cov : array_like, shape (d, d)
        Covariance, symmetric positive definite.

    Returns
    -------
    float
        ``d/2 (1 + log 2 pi) + 1/2 log det cov``.

    Notes
    -----
    ``H = 1/2 log det(2 pi e cov)``, with the log determinant from the Cholesky diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import entropy
    >>> round(entropy(np.eye(1)), 6)  # 1/2 log(2 pi e)
    1.418939
    """
    cov = spd_matrix(cov, "cov")
    d = cov.shape[0]
    return 0.5 * d * (1.0 + _LOG_2PI) + 0.5 * _logdet(_chol(cov))


def _logpdf_chol(x, mean, chol):
    """Log density at the rows of ``x`` (n, d), given the lower Cholesky factor."""
    d = mean.shape[0]
    z = solve_triangular(chol, (x - mean).T, lower=True, check_finite=False)
    return -0.5 * (d * _LOG_2PI + _logdet(chol) + np.sum(z * z, axis=0))


def logpdf(x, mean, cov):
    r"""Log density of ``N(mean, cov)`` at one point or at each row of ``x``.

    Parameters
    ----------
    x : array_like, shape (d,) or (n, d)
        Point(s) at which to evaluate.
    mean : array_like, shape (d,)
        Mean.
    cov : array_like, shape (d, d)
        Covariance, symmetric positive definite.

    Returns
    -------
    float or ndarray of shape (n,)
        A float for ``x`` of shape ``(d,)``, an array for ``x`` of shape ``(n, d)``.

    Notes
    -----
    ``log N(x; m, S) = -1/2 (d log 2 pi + log det S + ||L^{-1} (x - m)||^2)``, ``S = L L^T``.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.gaussian import logpdf
    >>> round(logpdf([0.0], [0.0], [[1.0]]), 6)  # -1/2 log(2 pi)
    -0.918939
    >>> logpdf(np.zeros((3, 2)), np.zeros(2), np.eye(2)).shape
    (3,)
    """
    mean, _, chol = _gaussian(mean, cov, "mean", "cov")
    d = mean.shape[0]
    x = float_array(x, "x")
    if x.ndim not in (1, 2) or x.shape[-1] != d:
        raise ValueError(f"x must have shape ({d},) or (n, {d}) to match mean, got {x.shape}")
    out = _finite("the log density", _logpdf_chol(np.atleast_2d(x), mean, chol))
    return float(out[0]) if x.ndim == 1 else out
