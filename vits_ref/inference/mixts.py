r"""The diffusion paper's Thompson-sampling baselines with learned priors: MixTS and TunedTS.

Diffusion paper (Kveton et al., NeurIPS 2024), section 6.1: "TS" has the prior
``N(0, I)``, "TunedTS" the maximum-likelihood Gaussian of the prior samples, "MixTS" (Hong
et al., AISTATS 2022) a Gaussian mixture fitted to them; all three are exact Thompson
sampling for the linear-Gaussian model (docs/algorithms.md sections 1 and 3).

- :class:`MixTS`: a Gaussian-mixture prior and the **exact** mixture posterior of the
  linear-Gaussian model. Each component's posterior is the section-1 posterior with that
  component as a general Gaussian prior, in the statistics a :class:`LinTS` engine on a
  :class:`vits_ref.models.Linear` model with ``prior_mean = m_k``, ``prior_cov = S_k``
  keeps, updated by LinTS's rank-one Cholesky kernel (sufficient statistics only). Its
  weight is proportional to the prior weight times the component's marginal likelihood,
  computed from the same statistics in log space.
- :func:`TunedTS`: a factory. The MLE Gaussian of the samples becomes a general Gaussian
  prior of :class:`TunedLinTS` (a thin :class:`LinTS` subclass, ``model="linear"``) or of
  :class:`TunedLaplace` (a thin :class:`Laplace` subclass, ``model="logistic"``, IRLS with
  that prior). ``TunedTS.standard(dim)`` is the paper's "TS": the same with ``N(0, I)``.

Noise: the paper's likelihood is ``y = phi theta + N(0, sigma^2)`` with an *untempered*
prior. The library's linear model takes the inverse noise variance ``eta = 1/sigma^2`` and
stores a general prior as ``V0 = inv(Sigma0)/eta`` (:class:`vits_ref.models.Linear`), so
its posterior ``N(V^-1 b, inv(eta V))`` has precision ``inv(Sigma0) + sigma^-2 sum phi
phi^T``: the paper's eq. 3, with the prior not tempered (``tests/test_mixts.py`` checks it
against :func:`vits_ref.gaussian.linear_posterior_general`).
"""

import numpy as np
from scipy.linalg import solve_triangular

from .. import _validate as val
from ..drivers import cpu
from ..models import Linear, Logistic
from .base import Engine
from .exact import LinTS
from .laplace import Laplace

__all__ = ["MixTS", "TunedLaplace", "TunedLinTS", "TunedTS"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def _mixture(weights, means, covs):
    """Validated ``(weights (K,), means (K, d), covs (K, d, d))``; weights normalised."""
    means = val.float_array(means, "means", ndim=2)
    K, d = means.shape
    if K == 0 or d == 0:
        raise ValueError(f"means must have shape (K, d) with K, d >= 1, got {means.shape}")
    weights = val.float_array(weights, "weights", ndim=1, shape=(K,))
    if np.any(weights <= 0):
        raise ValueError("weights must be positive (they are normalised to sum to 1)")
    covs = val.float_array(covs, "covs", ndim=3, shape=(K, d, d))
    for k in range(K):
        val.spd_matrix(covs[k], f"covs[{k}]", dim=d)
    return weights / weights.sum(), means, covs


class MixTS(Engine):
    r"""Thompson sampling with a Gaussian-mixture prior and the exact mixture posterior.

    Parameters
    ----------
    weights : array_like, shape (K,)
        Prior mixture weights ``w_k > 0`` (normalised here).
    means : array_like, shape (K, d)
        Component means ``m_k``.
    covs : array_like, shape (K, d, d)
        Component covariances ``S_k``, symmetric positive definite.
    sigma : float, default 1.0
        Reward noise standard deviation: ``y = phi theta + N(0, sigma^2)``.
    seed : int, SeedSequence, Generator or None
        Seed of the sampling stream.

    Attributes
    ----------
    posterior_weights : ndarray, shape (K,)
        The posterior mixture weights.

    Notes
    -----
    Prior ``p(theta) = sum_k w_k N(theta; m_k, S_k)`` and likelihood
    ``prod_l N(y_l; phi_l^T theta, sigma^2)``. Because the likelihood is Gaussian in
    ``theta``, the posterior is again a mixture (diffusion paper section 6.1; Hong et al.
    2022; docs/algorithms.md section 3, "Baselines"):

    .. math::

        p(\theta \mid h) = \sum_k \tilde w_k\, N(\theta; \hat m_k, \hat S_k),\quad
        \hat S_k^{-1} = S_k^{-1} + \sigma^{-2}\textstyle\sum_l \phi_l\phi_l^\top,\quad
        \hat m_k = \hat S_k\big(S_k^{-1} m_k + \sigma^{-2}\textstyle\sum_l \phi_l y_l\big),

    the section-1 posterior of each component (LinTS's, with the general prior ``N(m_k,
    S_k)``), and
    ``w~_k ∝ w_k p(h | k)`` with the component's marginal likelihood

    .. math::

        \log p(h \mid k) = -\tfrac{n}{2}\log(2\pi\sigma^2) - \tfrac{1}{2\sigma^2}\sum_l y_l^2
            - \tfrac12 m_k^\top S_k^{-1} m_k + \tfrac12 \hat m_k^\top \hat S_k^{-1} \hat m_k
            - \tfrac12 \log\det S_k + \tfrac12 \log\det \hat S_k,

    (the Gaussian integral of prior times likelihood). In the component's LinTS statistics
    ``V_k = S_k^{-1}/eta + sum phi phi^T = L_k L_k^T``, ``b_k = V_k m_hat_k`` with
    ``eta = sigma^-2``: ``m_hat^T S_hat^-1 m_hat = eta |L_k^-1 b_k|^2`` and
    ``log det S_hat_k = -d log eta - 2 sum log diag L_k``. Only ``sum phi phi^T``,
    ``sum phi y``, ``sum y^2`` and ``n`` enter (never the history); the weights are
    normalised by log-sum-exp of ``log w_k + log p(h | k)``, so no likelihood underflows
    however many observations. Each ``L_k`` is kept by LinTS's compiled rank-one Cholesky
    update (O(K d^2) per observation, no refactorisation); a draw picks a component with
    the posterior weights, then draws from it with LinTS's compiled draw body.

    ``diagnostics``: ``n_obs``, ``weights`` (posterior weights), ``log_evidence`` (the
    ``K`` values ``log p(h | k)``), ``log_marginal`` (``log p(h)``).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> eng = vr.MixTS([0.5, 0.5], [[-1.0, 0.0], [1.0, 0.0]], [np.eye(2) * 0.1] * 2,
    ...                sigma=0.5, seed=0)
    >>> _ = eng.update(np.array([[1.0, 0.0]] * 5), np.full(5, 1.0))
    >>> eng.posterior_weights.round(3)  # the data favour the component at +1
    array([0., 1.])
    >>> eng.sample(3).shape
    (3, 2)
    """

    name = "MixTS"
    #: what vits_ref.load puts back after construction (with Engine's streams and model);
    #: the prior weights too, normalised again by the constructor (not always to the
    #: same last bit)
    _persist_state = ("_L", "prior_weights", "posterior_weights", "_cum_weights")

    def __init__(self, weights, means, covs, sigma=1.0, seed=None):
        self.prior_weights, self.prior_means, self.prior_covs = _mixture(weights, means, covs)
        self.sigma = val.noise_sd(sigma, "sigma")
        dim = self.prior_means.shape[1]
        # self.model (the default-prior linear model) keeps the data's statistics:
        # V - I = sum phi phi^T, b = sum phi y, sum_r2 = sum y^2, n_obs
        super().__init__(dim, model="linear", eta=1.0 / self.sigma ** 2, lam=1.0, seed=seed)
        K = self.n_components
        # component k as a general prior in the linear model's statistics (as
        # vits_ref.models.Linear stores one): V0_k = inv(S_k)/eta, b0_k = V0_k m_k; its
        # posterior is LinTS's, V_k = V0_k + sum phi phi^T = L_k L_k^T, b_k = b0_k + sum phi y
        self._V0 = np.empty((K, dim, dim))
        self._b0 = np.empty((K, dim))
        self._L = np.empty((K, dim, dim))
        # -1/2 m^T S^-1 m - 1/2 log det S of each component: the prior's share of log p(h|k)
        self._prior_const = np.empty(K)
        for k, (m, S) in enumerate(zip(self.prior_means, self.prior_covs, strict=True)):
            chol = np.linalg.cholesky(S)
            z = solve_triangular(chol, m, lower=True)
            self._prior_const[k] = -0.5 * float(z @ z) - float(np.sum(np.log(np.diag(chol))))
            cinv = solve_triangular(chol, np.eye(dim), lower=True)
            prec = cinv.T @ cinv
            self._V0[k] = 0.5 * (prec + prec.T) / self.eta
            self._b0[k] = self._V0[k] @ m
            self._L[k] = np.linalg.cholesky(self._V0[k])
        self._refit_weights()

    @classmethod
    def from_samples(cls, samples, n_components=2, sigma=1.0, seed=None, fit_seed=0,
                     **gmm_kwargs):
        """MixTS with the Gaussian mixture fitted by EM to prior samples.

        Parameters
        ----------
        samples : array_like, shape (n, d)
            Samples of the prior of ``theta``.
        n_components : int, default 2
            Mixture components (the paper's MixTS uses 2 on the synthetic problems).
        sigma : float, default 1.0
            Reward noise standard deviation.
        seed : int, SeedSequence, Generator or None
            Seed of the engine's sampling stream.
        fit_seed : int, default 0
            Seed of EM's restarts (:func:`vits_ref.inference.gmm.fit_gmm`), separate from ``seed``
            so engines with different seeds share one fitted prior.
        **gmm_kwargs
            ``n_init``, ``max_iter``, ``tol``, ``reg_covar``, ``init`` of
            :func:`vits_ref.inference.gmm.fit_gmm`.

        Returns
        -------
        MixTS
            With the fit in ``prior_fit`` (a :class:`vits_ref.inference.gmm.GMMResult`).
        """
        from .gmm import fit_gmm

        fit = fit_gmm(samples, n_components, seed=fit_seed, **gmm_kwargs)
        eng = cls(fit.weights, fit.means, fit.covs, sigma=sigma, seed=seed)
        eng.prior_fit = fit
        return eng

    @property
    def n_components(self):
        return self.prior_weights.shape[0]

    def _params(self):
        return {"weights": self.prior_weights, "means": self.prior_means,
                "covs": self.prior_covs, "sigma": self.sigma}

    # -- posterior --------------------------------------------------------------------------
    def _b(self):
        """``b_k = b0_k + sum phi y`` of every component, (K, d)."""
        return self._b0 + self.model.b

    def _refit(self, features, rewards):
        # one rank-one update of each component's factor per observation (LinTS's kernel);
        # the shared sums are in self.model, already updated by Engine.update
        for k in range(self.n_components):
            cpu.chol_update_rows(self._L[k], features)
        self._refit_weights()

    def _refit_weights(self):
        d, eta, n = self.dim, self.eta, self.model.n_obs
        # u_k = L_k^-1 b_k for all components at once
        u = np.linalg.solve(self._L, self._b()[:, :, None])[:, :, 0]
        logdet_post_prec = d * np.log(eta) + 2.0 * np.sum(
            np.log(np.diagonal(self._L, axis1=1, axis2=2)), axis=1)
        delta = self._prior_const + 0.5 * eta * np.sum(u * u, axis=1) - 0.5 * logdet_post_prec
        common = -0.5 * n * (_LOG_2PI - np.log(eta)) - 0.5 * eta * self.model.sum_r2
        self._check_finite(None, delta)
        log_joint = np.log(self.prior_weights) + delta
        top = log_joint.max()
        log_marginal = top + np.log(np.sum(np.exp(log_joint - top)))
        self.posterior_weights = np.exp(log_joint - log_marginal)
        self._cum_weights = np.cumsum(self.posterior_weights)
        self.diagnostics.update(weights=self.posterior_weights.copy(),
                                log_evidence=delta + common,
                                log_marginal=float(log_marginal + common))

    def _sample(self, n):
        u = self._rng_sample.random(n)
        z = self._rng_sample.standard_normal((n, self.dim))
        comp = np.minimum(np.searchsorted(self._cum_weights, u * self._cum_weights[-1],
                                          side="right"), self.n_components - 1)
        b = self._b()
        out = np.empty((n, self.dim))
        if n == 1:  # a Thompson draw: one call of LinTS's draw body
            cpu.lints_draws(self._L[comp[0]], b[comp[0]], self.eta, z, out)
            return out
        for k in np.unique(comp):
            rows = np.flatnonzero(comp == k)
            part = np.empty((rows.size, self.dim))
            cpu.lints_draws(self._L[k], b[k], self.eta, z[rows], part)
            out[rows] = part
        return out

    def component_posteriors(self):
        """``[(mean_k, cov_k), ...]``: each component's exact posterior Gaussian, by
        :func:`vits_ref.gaussian.linear_posterior_from_stats` on its statistics."""
        from ..gaussian import linear_posterior_from_stats

        XX = self.model.kernel_data(prior=False)[0] / self.eta  # sum phi phi^T
        return [linear_posterior_from_stats(V0 + XX, b, eta=self.eta)
                for V0, b in zip(self._V0, self._b(), strict=True)]

    @property
    def mean(self):
        """Mean of the posterior mixture, ``sum_k w~_k m_hat_k``."""
        return sum(w * m for w, (m, _) in zip(self.posterior_weights,
                                               self.component_posteriors(), strict=True))

    @property
    def cov(self):
        """Covariance of the posterior mixture (law of total covariance)."""
        comps = self.component_posteriors()
        mean = sum(w * m for w, (m, _) in zip(self.posterior_weights, comps, strict=True))
        out = np.zeros((self.dim, self.dim))
        for w, (m, S) in zip(self.posterior_weights, comps, strict=True):
            out += w * (S + np.outer(m - mean, m - mean))
        return 0.5 * (out + out.T)


# ------------------------------------------------------------------------------------------
# TunedTS: a Gaussian prior fitted to samples, through LinTS or Laplace
# ------------------------------------------------------------------------------------------

def _label(label):
    if not isinstance(label, str) or not label:
        raise TypeError(f"label must be a non-empty string, got {label!r}")
    return label


def _prior(prior_mean, prior_cov):
    mean = val.float_array(prior_mean, "prior_mean", ndim=1)
    if mean.shape[0] == 0:
        raise ValueError("prior_mean must have at least one entry")
    return val.mean_and_cov(mean.shape[0], mean, prior_cov, "prior_mean", "prior_cov",
                            "pass the prior covariance")


class TunedLinTS(LinTS):
    """LinTS with a general Gaussian prior ``N(prior_mean, prior_cov)`` and noise ``sigma``.

    What :func:`TunedTS` returns for ``model="linear"``: :class:`LinTS` on a
    :class:`vits_ref.models.Linear` model with that prior and ``eta = 1/sigma^2`` (the
    prior is not tempered; see the module notes). ``label`` is the engine's ``name`` in
    results ("TunedTS", or "TS" for :func:`TunedTS.standard`).
    """

    name = "TunedTS"

    def __init__(self, prior_mean, prior_cov, sigma=1.0, seed=None, label="TunedTS"):
        mean, cov = _prior(prior_mean, prior_cov)
        self.sigma = val.noise_sd(sigma, "sigma")
        eta = 1.0 / self.sigma ** 2
        dim = mean.shape[0]
        super().__init__(dim, model=Linear(dim, eta=eta, prior_mean=mean, prior_cov=cov),
                         eta=eta, seed=seed)
        self.name = _label(label)

    def _params(self):
        return {"prior_mean": self.model.prior_mean, "prior_cov": self.model.prior_cov,
                "sigma": self.sigma, "label": self.name}


class StandardTS(LinTS):
    """The paper's "TS" for the linear model: prior ``N(0, I)``, reward noise ``sigma``.

    ``LinTS(dim, eta=1/sigma^2, lam=sigma^2)``: its default prior ``N(0, I/(lam eta))`` is
    ``N(0, I)``, so the posterior is eq. 3 of the diffusion paper with that prior and
    :func:`vits_ref.bandit.simulate` runs it in the fused compiled loop (a general prior, as in
    :class:`TunedLinTS`, has none). What :func:`TunedTS.standard` returns for
    ``model="linear"``.
    """

    name = "TS"

    def __init__(self, dim, sigma=1.0, seed=None):
        self.sigma = val.noise_sd(sigma, "sigma")
        super().__init__(dim, eta=1.0 / self.sigma ** 2, lam=self.sigma ** 2, seed=seed)

    def _params(self):
        return {"dim": self.dim, "sigma": self.sigma}


class TunedLaplace(Laplace):
    """Laplace (IRLS) for the logistic model with a general Gaussian prior.

    What :func:`TunedTS` returns for ``model="logistic"``: :class:`Laplace` on a
    :class:`vits_ref.models.Logistic` model with the prior ``N(prior_mean, prior_cov)``
    (untempered, ``eta = 1``): the MAP by IRLS (diffusion paper Algorithm 1) and the
    inverse Hessian at the MAP, as in the paper's section 2.2.
    """

    name = "TunedTS"

    def __init__(self, prior_mean, prior_cov, tol=1e-8, max_iter=100, seed=None,
                 label="TunedTS"):
        mean, cov = _prior(prior_mean, prior_cov)
        dim = mean.shape[0]
        super().__init__(dim, model=Logistic(dim, prior_mean=mean, prior_cov=cov),
                         tol=tol, max_iter=max_iter, seed=seed)
        self.name = _label(label)

    def _params(self):
        return {"prior_mean": self.model.prior_mean, "prior_cov": self.model.prior_cov,
                "tol": self.tol, "max_iter": self.max_iter, "label": self.name}


def _gaussian_ts(mean, cov, model, sigma, seed, label, engine_kwargs):
    model = val.choice(model, "model", ("linear", "logistic"))
    if model == "linear":
        if engine_kwargs:
            raise TypeError(f"unexpected arguments for model='linear': {sorted(engine_kwargs)}")
        return TunedLinTS(mean, cov, sigma=1.0 if sigma is None else sigma, seed=seed,
                          label=label)
    if sigma is not None:
        raise ValueError("sigma is the Gaussian reward noise of model='linear'; the logistic "
                         "model has none: leave sigma=None")
    return TunedLaplace(mean, cov, seed=seed, label=label, **engine_kwargs)


def TunedTS(samples, model="linear", sigma=None, seed=None, **engine_kwargs):  # noqa: N802
    r"""TunedTS: Thompson sampling with the maximum-likelihood Gaussian of prior samples.

    A factory (not a class): it fits the Gaussian and returns a :class:`TunedLinTS`
    (``model="linear"``) or a :class:`TunedLaplace` (``model="logistic"``) engine, named
    "TunedTS". ``TunedTS.standard(dim, ...)`` gives the paper's "TS" with ``N(0, I)``.

    Parameters
    ----------
    samples : array_like, shape (n, d)
        Samples of the prior of ``theta``; ``n >= d + 1`` and their covariance must be
        positive definite.
    model : {"linear", "logistic"}, default "linear"
        Exact LinTS for linear-Gaussian rewards, or Laplace (IRLS) for Bernoulli rewards.
    sigma : float or None, default None
        Reward noise standard deviation of the linear model (None: 1.0). Must be None for
        ``model="logistic"``.
    seed : int, SeedSequence, Generator or None
        Seed of the sampling stream.
    **engine_kwargs
        ``tol``, ``max_iter`` of :class:`vits_ref.Laplace` (logistic only).

    Returns
    -------
    TunedLinTS or TunedLaplace

    Notes
    -----
    Diffusion paper section 6.1: "In TunedTS, we fit the mean and covariance using maximum
    likelihood estimation": ``theta0 = 1/n sum_i x_i``, ``Sigma0 = 1/n sum_i (x_i - theta0)
    (x_i - theta0)^T`` (the MLE, divisor ``n``, not ``n - 1``). The posterior is then the
    section-1 closed form (linear) or the Laplace approximation of section 2.2 (logistic).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> samples = np.random.default_rng(0).normal([1.0, -1.0], 0.5, size=(1000, 2))
    >>> eng = vr.TunedTS(samples, sigma=2.0, seed=0)
    >>> eng.name, eng.mean.round(1)
    ('TunedTS', array([ 1., -1.]))
    >>> vr.TunedTS.standard(2, sigma=2.0).cov
    array([[1., 0.],
           [0., 1.]])
    """
    x = val.float_array(samples, "samples", ndim=2)
    n, d = x.shape
    if d == 0 or n < d + 1:
        raise ValueError(f"samples must have shape (n, d) with d >= 1 and n >= d + 1 for a "
                         f"positive definite covariance, got {x.shape}")
    mean = x.mean(axis=0)
    centred = x - mean
    cov = centred.T @ centred / n
    cov = 0.5 * (cov + cov.T)
    try:
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError("the samples' covariance is singular (samples on a subspace); "
                         "pass more varied samples") from None
    return _gaussian_ts(mean, cov, model, sigma, seed, "TunedTS", engine_kwargs)


def _standard(dim, model="linear", sigma=None, seed=None, **engine_kwargs):
    """The paper's "TS": :func:`TunedTS`'s engine with the prior ``N(0, I_dim)``.

    For the linear model a :class:`StandardTS`, ``vr.LinTS(dim, eta=1/sigma**2,
    lam=sigma**2)`` (prior ``N(0, I/(lam eta)) = N(0, I)``), which runs in the fused
    compiled loop; for the logistic model Laplace with that prior. The engine is named "TS".
    """
    dim = val.positive_int(dim, "dim")
    model = val.choice(model, "model", ("linear", "logistic"))
    if model == "linear":
        if engine_kwargs:
            raise TypeError(f"unexpected arguments for model='linear': {sorted(engine_kwargs)}")
        return StandardTS(dim, sigma=1.0 if sigma is None else sigma, seed=seed)
    return _gaussian_ts(np.zeros(dim), np.eye(dim), model, sigma, seed, "TS", engine_kwargs)


TunedTS.standard = _standard
