r"""Expectation-maximisation for a Gaussian mixture with full covariances (NumPy).

:func:`fit_gmm` fits ``p(x) = sum_k w_k N(x; m_k, S_k)`` to samples by EM, with several
seeded restarts, and returns a :class:`GMMResult`. It is the MixTS baseline's prior
(:class:`vits_ref.MixTS`, diffusion paper section 6.1, which fits it with scikit-learn;
here scikit-learn is only the tests' cross-check, ``tests/test_gmm.py``).

EM (Dempster, Laird and Rubin 1977; Bishop, *Pattern Recognition and Machine Learning*,
section 9.2.2), with responsibilities ``r_ik``:

.. math::

    \text{E step:}\quad r_{ik} = \frac{w_k N(x_i; m_k, S_k)}{\sum_j w_j N(x_i; m_j, S_j)},
    \qquad
    \text{M step:}\quad n_k = \sum_i r_{ik},\; w_k = n_k / n,\;
    m_k = \frac{1}{n_k}\sum_i r_{ik} x_i,\;
    S_k = \frac{1}{n_k}\sum_i r_{ik} (x_i - m_k)(x_i - m_k)^\top + \epsilon I.

``epsilon = reg_covar`` keeps every ``S_k`` positive definite when a component collapses
onto fewer than ``d + 1`` points (the same regularisation as scikit-learn's
``GaussianMixture(reg_covar=...)``, default ``1e-6`` there and here). With
``reg_covar > 0`` the M step maximises the likelihood over the means and weights exactly
and over the covariances up to that ridge, so the log-likelihood trace is monotone only up
to ``O(reg_covar)``; with ``reg_covar = 0`` it is monotone (tested).
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from .. import _validate as val
from .._seeding import child

__all__ = ["GMMResult", "fit_gmm"]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: added to the component counts ``n_k`` so an empty component divides by no zero
#: (scikit-learn adds ``10 eps`` likewise); its mean then stays where it was
_TINY = 10.0 * np.finfo(np.float64).eps


@dataclass(frozen=True)
class GMMResult:
    """A fitted Gaussian mixture.

    Attributes
    ----------
    weights : ndarray, shape (K,)
        Mixture weights ``w_k`` (positive, summing to 1).
    means : ndarray, shape (K, d)
        Component means ``m_k``.
    covs : ndarray, shape (K, d, d)
        Component covariances ``S_k`` (symmetric positive definite, ``reg_covar``
        included).
    log_likelihood : float
        Mean log-likelihood per sample, ``1/n sum_i log p(x_i)``, at the returned
        parameters.
    log_likelihood_trace : ndarray, shape (n_iter + 1,)
        The mean log-likelihood of the best restart after its initialisation and after
        each EM iteration (E step at the current parameters).
    converged : bool
        Whether the best restart's last change of mean log-likelihood was below ``tol``.
    n_iter : int
        EM iterations of the best restart.
    best_init : int
        Index of the restart whose fit is returned (highest final log-likelihood).
    """

    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    log_likelihood: float
    log_likelihood_trace: np.ndarray
    converged: bool
    n_iter: int
    best_init: int

    @property
    def n_components(self):
        return self.weights.shape[0]

    @property
    def dim(self):
        return self.means.shape[1]

    def logpdf(self, x):
        """Log density of the mixture at the rows of ``x`` (n, d), shape (n,)."""
        x = val.float_array(x, "x", ndim=2, shape=(None, self.dim))
        log_joint = _log_joint(x, self.weights, self.means, _cholesky(self.covs, 0.0))
        return _logsumexp(log_joint)

    def sample(self, n, rng=None):
        """``n`` draws from the mixture, shape (n, d); ``rng``: seed or Generator."""
        n = val.positive_int(n, "n")
        rng = val.as_generator(rng, "rng")
        comp = rng.choice(self.n_components, size=n, p=self.weights)
        z = rng.standard_normal((n, self.dim))
        chol = _cholesky(self.covs, 0.0)
        return self.means[comp] + np.einsum("nij,nj->ni", chol[comp], z)


def _cholesky(covs, reg):
    """Lower Cholesky factors of ``covs + reg I`` (K, d, d); ValueError if one fails."""
    d = covs.shape[-1]
    try:
        return np.linalg.cholesky(covs + reg * np.eye(d))
    except np.linalg.LinAlgError:
        raise ValueError("a component covariance is not positive definite; raise reg_covar "
                         "(or use fewer components)") from None


def _log_joint(x, weights, means, chol):
    """``log w_k + log N(x_i; m_k, S_k)``, shape (K, n), from Cholesky factors of ``S_k``."""
    n, d = x.shape
    K = weights.shape[0]
    out = np.empty((K, n))
    for k in range(K):
        # ||L_k^{-1} (x_i - m_k)||^2 by one triangular solve for all samples
        z = solve_triangular(chol[k], (x - means[k]).T, lower=True, check_finite=False)
        logdet = 2.0 * np.sum(np.log(np.diag(chol[k])))
        out[k] = np.log(weights[k]) - 0.5 * (d * _LOG_2PI + logdet + np.einsum("ij,ij->j", z, z))
    return out


def _logsumexp(a):
    """``log sum_k exp(a[k])`` over the first axis of (K, n), without overflow."""
    top = a.max(axis=0)
    return top + np.log(np.sum(np.exp(a - top), axis=0))


def _m_step(x, resp, reg_covar):
    """Weights, means and covariances from responsibilities ``resp`` (K, n)."""
    n, d = x.shape
    nk = resp.sum(axis=1) + _TINY
    weights = nk / n
    means = (resp @ x) / nk[:, None]
    covs = np.empty((resp.shape[0], d, d))
    for k in range(resp.shape[0]):
        diff = x - means[k]
        c = (resp[k, :, None] * diff).T @ diff / nk[k]
        covs[k] = 0.5 * (c + c.T) + reg_covar * np.eye(d)
    return weights / weights.sum(), means, covs


def _kmeans_pp(x, K, rng):
    """k-means++ seeding (Arthur and Vassilvitskii 2007): the first centre uniform, each
    next one drawn with probability proportional to the squared distance to the nearest
    centre chosen so far. Returns hard responsibilities (K, n) of the nearest centres."""
    n = x.shape[0]
    centres = np.empty((K, x.shape[1]))
    centres[0] = x[rng.integers(n)]
    d2 = np.sum((x - centres[0]) ** 2, axis=1)
    for k in range(1, K):
        total = d2.sum()
        idx = rng.integers(n) if total <= 0 else rng.choice(n, p=d2 / total)
        centres[k] = x[idx]
        d2 = np.minimum(d2, np.sum((x - centres[k]) ** 2, axis=1))
    dist = np.sum((x[:, None, :] - centres[None, :, :]) ** 2, axis=2)
    resp = np.zeros((K, n))
    resp[np.argmin(dist, axis=1), np.arange(n)] = 1.0
    return resp


def _random_resp(x, K, rng):
    """Random responsibilities: rows uniform on [0, 1), normalised (scikit-learn's
    ``init_params="random"``), shape (K, n)."""
    resp = rng.random((x.shape[0], K))
    return (resp / resp.sum(axis=1, keepdims=True)).T


_INITS = {"kmeans++": _kmeans_pp, "random": _random_resp}


def _em(x, resp, reg_covar, tol, max_iter):
    """One restart: an M step from ``resp``, then E/M iterations until the mean
    log-likelihood changes by less than ``tol`` or ``max_iter`` iterations ran."""
    weights, means, covs = _m_step(x, resp, reg_covar)
    log_joint = _log_joint(x, weights, means, _cholesky(covs, 0.0))
    log_px = _logsumexp(log_joint)
    trace = [float(log_px.mean())]
    converged = False
    for _ in range(max_iter):
        resp = np.exp(log_joint - log_px)
        weights, means, covs = _m_step(x, resp, reg_covar)
        log_joint = _log_joint(x, weights, means, _cholesky(covs, 0.0))
        log_px = _logsumexp(log_joint)
        trace.append(float(log_px.mean()))
        if abs(trace[-1] - trace[-2]) < tol:
            converged = True
            break
    return weights, means, covs, np.array(trace), converged, len(trace) - 1


def fit_gmm(samples, n_components, seed=0, n_init=5, max_iter=500, tol=1e-6, reg_covar=1e-6,
            init="kmeans++"):
    r"""Fit a Gaussian mixture with full covariances by EM, keeping the best of restarts.

    Parameters
    ----------
    samples : array_like, shape (n, d)
        The data, finite; ``n >= n_components``.
    n_components : int
        Number of components ``K >= 1``.
    seed : int, SeedSequence, Generator or None, default 0
        Seeds the initialisations (restart ``i`` uses child ``i`` of the seed sequence),
        so the fit is reproducible.
    n_init : int, default 5
        Number of restarts; the one with the highest final log-likelihood is returned.
    max_iter : int, default 500
        Cap on EM iterations per restart.
    tol : float, default 1e-6
        Convergence: stop when the mean log-likelihood per sample changes by less than
        ``tol`` in one iteration (scikit-learn's criterion, whose default is ``1e-3``).
    reg_covar : float, default 1e-6
        Added to the diagonal of every covariance in each M step (see the module notes).
        ``>= 0``.
    init : {"kmeans++", "random"}, default "kmeans++"
        k-means++ seeding then hard responsibilities of the nearest centre, or random
        responsibilities; an M step follows either.

    Returns
    -------
    GMMResult

    Raises
    ------
    TypeError, ValueError
        On non-numeric, non-finite or wrongly shaped samples, fewer samples than
        components, or invalid settings (the message names the argument); ValueError if a
        covariance stops being positive definite (raise ``reg_covar``).

    Notes
    -----
    The E and M steps are those of the module docstring; densities are evaluated from
    Cholesky factors in log space, and responsibilities by log-sum-exp, so far-away points
    underflow no component. A restart does not stop on a non-monotone step; with
    ``reg_covar = 0`` none occurs (the trace is non-decreasing, as EM guarantees).

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.inference.gmm import fit_gmm
    >>> rng = np.random.default_rng(0)
    >>> x = np.vstack([rng.normal(-5.0, 1.0, (500, 1)), rng.normal(5.0, 1.0, (500, 1))])
    >>> fit = fit_gmm(x, 2, seed=0)
    >>> np.sort(fit.means[:, 0]).round(1), fit.converged
    (array([-5. ,  4.9]), True)
    """
    x = val.float_array(samples, "samples", ndim=2)
    n, d = x.shape
    if d == 0:
        raise ValueError(f"samples must have at least one column, got shape {x.shape}")
    K = val.positive_int(n_components, "n_components")
    if n < K:
        raise ValueError(f"samples has {n} rows but n_components is {K}: EM needs at least "
                         "one sample per component")
    n_init = val.positive_int(n_init, "n_init")
    max_iter = val.positive_int(max_iter, "max_iter")
    tol = val.positive_float(tol, "tol")
    reg_covar = val.positive_float(reg_covar, "reg_covar", allow_zero=True)
    init_fn = _INITS[val.choice(init, "init", tuple(_INITS))]
    if isinstance(seed, np.random.Generator):
        rngs = seed.spawn(n_init)
    else:
        root = val.as_seed_sequence(seed)
        rngs = [np.random.default_rng(child(root, i)) for i in range(n_init)]
    best, best_i = None, -1
    for i, rng in enumerate(rngs):
        fit = _em(x, init_fn(x, K, rng), reg_covar, tol, max_iter)
        if best is None or fit[3][-1] > best[3][-1]:
            best, best_i = fit, i
    weights, means, covs, trace, converged, it = best
    return GMMResult(weights, means, covs, float(trace[-1]), trace, bool(converged), int(it),
                     best_i)
