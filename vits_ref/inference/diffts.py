r"""Posterior sampling with a diffusion-model prior: DiffTS (LaplaceDPS) and DPS.

Kveton et al. (NeurIPS 2024): LaplaceDPS, Algorithm 2 with Theorems 2 (linear)
and 4 (GLM), and the DPS baseline of Chung et al. (Algorithm 4, appendix D);
docs/algorithms.md section 3. The chains are compiled kernels
(:mod:`vits_ref.kernels.diffusion_chain`) closing over the prior's noise-regressor bodies;
the priors are in :mod:`vits_ref.diffusion`.
"""

import numbers
import warnings

import numpy as np

from .. import _validate as val
from ..diffusion import chain
from ..diffusion.base import DiffusionPriorBase
from ..errors import DivergenceError
from ..kernels.logistic import POTENTIAL as LOGISTIC
from ..models.logistic import potential_scratch
from .base import Engine

MODELS = ("linear", "logistic")


def _prior(prior):
    if not isinstance(prior, DiffusionPriorBase):
        raise TypeError(f"prior must be a diffusion prior (vits_ref.diffusion."
                        f"GaussianDiffusionPrior, DiffusionPrior, or a DiffusionPriorBase "
                        f"subclass), got {type(prior).__name__}")
    if prior.eps_bodies is None or prior.eps_params is None:
        raise ValueError(f"prior {prior!r} has no noise regressor (eps_bodies/eps_params); "
                         f"fit it first")
    return prior


class _DiffusionEngine(Engine):
    """What DiffTS and DPS share: the prior, the noise scale, the linear statistics.

    Both constructors read ``(prior, model="linear", sigma=1.0, *, ..., seed=None)``: the
    engines' common order (``dim, model`` first, ``seed`` last) with the prior in place of
    ``dim`` and the noise scale in place of ``eta``.
    """

    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("_G", "_h", "_syy")

    def __init__(self, prior, model, sigma, seed):
        self.prior = _prior(prior)
        if isinstance(model, numbers.Real) and not isinstance(model, bool):
            # DPS used to read (prior, sigma, seed, model): a number here is a sigma
            raise TypeError(f"model must be one of {list(MODELS)}, got the number {model!r}: "
                            f"{type(self).__name__}'s arguments are (prior, model='linear', "
                            f"sigma=1.0, ...); pass sigma by keyword "
                            f"({type(self).__name__}(prior, sigma={model!r}))")
        self.sigma = val.noise_sd(sigma, "sigma")
        model = val.choice(model, "model", MODELS)
        super().__init__(self.prior.dim, model=model, eta=1.0 / self.sigma ** 2, lam=1.0,
                         seed=seed)
        d = self.dim
        self._G = np.zeros((d, d))  # sum phi phi^T
        self._h = np.zeros(d)       # sum phi y
        self._syy = 0.0             # sum y^2

    def _params(self):
        return {"prior": self.prior, "model": self.model_spec, "sigma": self.sigma}

    @property
    def stats(self):
        """``(G, h, syy) = (sum phi phi^T, sum phi y, sum y^2)`` of the observations (copies)."""
        return self._G.copy(), self._h.copy(), self._syy

    def _refit(self, features, rewards):
        # one row at a time, in order: the same additions as the compiled bandit loop
        for x, y in zip(features, rewards, strict=True):
            self._G += np.outer(x, x)
            self._h += y * x
            self._syy += float(y * y)

    def _normals(self, n):
        return self._rng_sample.standard_normal((n, self.prior.n_stages + 1, self.dim))

    def _check_draws(self, ok, what):
        """Raise DivergenceError (``what`` says why) unless every draw of ``ok`` succeeded."""
        if not ok.all():
            raise DivergenceError(self.name, self.n_obs, None,
                                  detail=f"{int((~ok).sum())} of {ok.size} {what}")


class DiffTS(_DiffusionEngine):
    r"""LaplaceDPS posterior sampling with a diffusion prior: the engine of DiffTS.

    Parameters
    ----------
    prior : DiffusionPriorBase
        The diffusion prior (:class:`vits_ref.diffusion.GaussianDiffusionPrior`,
        :class:`vits_ref.diffusion.DiffusionPrior`, ...).
    model : {"linear", "logistic"}, default "linear"
        ``"linear"``: rewards ``y = phi^T theta + N(0, sigma^2)`` (Theorem 2);
        ``"logistic"``: Bernoulli rewards ``P(y = 1) = sigmoid(phi^T theta)`` (Theorem 4).
    sigma : float, default 1.0
        Reward noise of the linear model. For the logistic model the log-likelihood is
        multiplied by ``1 / sigma^2`` (a temperature; ``sigma = 1`` is the Bernoulli
        likelihood of the paper).
    tol, max_iter : float, int, keyword-only
        The per-stage Newton/IRLS solves of the logistic model (as :class:`vits_ref.Laplace`).
    seed : int, SeedSequence, Generator or None, keyword-only
        Seeds the sampling stream (the chains' normals).

    The arguments are those of :class:`DPS`, in the same order (``prior, model, sigma``,
    then keyword-only, ``seed`` last); ``seed`` used to be the fourth positional argument,
    before ``tol`` and ``max_iter``.

    Notes
    -----
    Algorithm 2 of Kveton et al. (docs/algorithms.md section 3). Linear model (Theorem 2), with
    ``Sbar^-1 = sigma^-2 sum phi phi^T`` and ``Sbar^-1 thetabar = sigma^-2 sum phi y``:

    .. math::

        s_T \sim \mathcal N\big(S(P_0 m_0 + \bar\Sigma^{-1}\bar\theta/\sqrt{\bar\alpha_T}),\
                 S\big),\ S = (P_0 + \bar\Sigma^{-1}/\bar\alpha_T)^{-1};\qquad
        s_{t-1} \sim \mathcal N\big(S_t(P_t\mu_t(s_t)
                 + \bar\Sigma^{-1}\bar\theta/\sqrt{\bar\alpha_{t-1}}),\ S_t\big),\
                 S_t = (P_t + \bar\Sigma^{-1}/\bar\alpha_{t-1})^{-1}

    with ``P_t = prior.reverse_prec[t]`` and the prior's start ``N(m0, inv(P0))`` (the
    paper's ``N(0, I)``). Only the sufficient statistics are kept (``O(d^2)`` memory,
    whatever the number of observations). Logistic model (Theorem 4): each stage's
    Gaussian is the Laplace approximation (one warm-started Newton/IRLS solve, the
    library's single Newton kernel) of the logistic likelihood times the stage's prior
    ``N(mu_t(s_t)/sqrt(abar_{t-1}), Sigma_t/abar_{t-1})``, rescaled by
    ``sqrt(abar_{t-1})``; the history is kept in the model's buffers.

    With no observations the linear chain is the prior's reverse chain. With an exact
    Gaussian prior it is not the exact posterior in general (each stage treats the
    evidence as if it bore on ``s_{t-1}/sqrt(abar_{t-1})``); Theorem 3's claim, that the
    draws concentrate at the least-squares estimate as the evidence grows, holds with the
    schedule's clipped ``btilde_1`` (:class:`vits_ref.diffusion.Schedule`).

    Each :meth:`update` only adds to the statistics (or the history); the work is in
    :meth:`sample`: ``T`` stages per draw, draws in parallel (``prange``). A failed stage
    (a precision that is not positive definite, a failed Newton solve, a non-finite draw)
    raises :class:`vits_ref.DivergenceError` naming the engine, the round and the stage.

    ``diagnostics`` (:class:`~vits_ref.inference.base.Diagnostics`): ``n_obs``; for the
    logistic model also ``newton_iterations`` (all stages of the last :meth:`sample`) and
    ``stages_not_converged``.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> prior = vr.diffusion.GaussianDiffusionPrior(np.zeros(2), np.eye(2), n_stages=20)
    >>> eng = vr.DiffTS(prior, sigma=0.5, seed=0)
    >>> eng.update(np.eye(2), np.array([1.0, -1.0])).sample(3).shape
    (3, 2)
    """

    name = "DiffTS"

    def __init__(self, prior, model="linear", sigma=1.0, *, tol=1e-8, max_iter=100,
                 seed=None):
        self.tol = val.positive_float(tol, "tol")
        self.max_iter = val.positive_int(max_iter, "max_iter")
        super().__init__(prior, model, sigma, seed)
        if self.model.name == "logistic":
            self.diagnostics.update(newton_iterations=0, stages_not_converged=0)

    def _params(self):
        return {**super()._params(), "tol": self.tol, "max_iter": self.max_iter}

    def _refit(self, features, rewards):
        if self.model.name == "linear":
            super()._refit(features, rewards)
        # logistic: the model keeps the history (its buffers)

    def _sample(self, n):
        z = self._normals(n)
        if self.model.name == "linear":
            draws, ok = chain.laplace_linear(self.prior, self._G, self._h, self.model.eta, z)
            self._check_draws(ok, "LaplaceDPS draws failed (a stage precision that is not "
                                  "positive definite, or a non-finite state): check the "
                                  "prior's reverse_prec and eps parameters.")
            return draws
        m = self.model
        data = m.kernel_data(prior=False)
        draws, info = chain.laplace_glm(self.prior, LOGISTIC, data,
                                        potential_scratch(max(m.n_obs, 1), self.dim), z,
                                        self.tol, self.max_iter)
        failed = np.flatnonzero(info[:, 0])
        if failed.size:
            stage = int(info[failed[0], 0])
            where = ("the first stage (s_T)" if stage == self.prior.n_stages + 1
                     else f"stage {stage} (s_{stage} -> s_{stage - 1})")
            raise DivergenceError(
                self.name, self.n_obs, None,
                detail=f"The Newton/IRLS solve of {where} failed (a non-finite value or a "
                       f"Hessian that is not positive definite) in {failed.size} of {n} "
                       f"draws: check the scale of the features and the prior.")
        slow = int(info[:, 1].sum())
        self.diagnostics.update(newton_iterations=int(info[:, 2].sum()),
                                stages_not_converged=slow)
        if slow:
            warnings.warn(f"{self.name}: {slow} Newton/IRLS stage solves stopped at "
                          f"max_iter={self.max_iter} (tol={self.tol:g}) at round "
                          f"{self.n_obs}; the draws use their last iterates. Raise max_iter.",
                          RuntimeWarning, stacklevel=3)
        return draws


class DPS(_DiffusionEngine):
    r"""Diffusion posterior sampling (Chung et al. 2023) as in Kveton et al.'s appendix D.

    Parameters
    ----------
    prior : DiffusionPriorBase
    model : {"linear"}, default "linear"
        DPS is implemented for the linear model only (the paper's DPS baseline runs in its
        linear bandits); ``"logistic"`` raises ``ValueError``.
    sigma : float, default 1.0
        Reward noise of the linear model. Algorithm 4's guidance step is normalised by the
        residual norm (``zeta_t``), so ``sigma`` does not enter the chain; it is kept for
        the engines' common signature (and the model's temperature).
    seed : int, SeedSequence, Generator or None, keyword-only
        Seeds the sampling stream.

    The arguments are those of :class:`DiffTS`, in the same order (``prior, model,
    sigma``, then ``seed`` keyword-only). They used to be ``(prior, sigma, seed, model)``:
    a number given as the second positional argument (a sigma, formerly) raises a
    ``TypeError`` that says so.

    Notes
    -----
    Algorithm 4 of Kveton et al. (its line 5 with the sign typo fixed), for ``t = T..1``:

    .. math::

        \hat s_0 = \frac{s_t - \sqrt{1-\bar\alpha_t}\,\varepsilon_t(s_t)}{\sqrt{\bar\alpha_t}},\quad
        s_{t-1} = \mu_t(s_t) + \sqrt{\tilde\beta_t}\,z
                  - \zeta_t\nabla_{s_t}\sum_\ell(y_\ell - \phi_\ell^T\hat s_0)^2,\quad
        \zeta_t = \Big(\sum_\ell(y_\ell - \phi_\ell^T\hat s_0)^2\Big)^{-1/2},

    the gradient through ``s0_hat`` (the noise regressor's vector-Jacobian product), from
    the sufficient statistics ``sum phi phi^T``, ``sum phi y``, ``sum y^2`` only; the start
    is the prior's (``N(0, I)`` for a DDPM) and ``btilde_1`` is clipped as in the schedule.
    The guidance grows like ``sqrt(N)`` with the number of observations ``N``: DPS's error
    grows with ``N`` (the paper's divergence claim; ``tests/test_diffts.py`` measures it).
    A non-finite draw raises :class:`vits_ref.DivergenceError`.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> prior = vr.diffusion.GaussianDiffusionPrior(np.zeros(2), np.eye(2), n_stages=20)
    >>> vr.DPS(prior, seed=0).update(np.eye(2), np.array([1.0, -1.0])).sample(3).shape
    (3, 2)
    """

    name = "DPS"

    def __init__(self, prior, model="linear", sigma=1.0, *, seed=None):
        if isinstance(model, str) and model.lower() == "logistic":
            raise ValueError("model must be 'linear': DPS is implemented for the linear "
                             "model only (use DiffTS(prior, model='logistic'))")
        super().__init__(prior, model, sigma, seed)

    def _sample(self, n):
        draws, ok = chain.dps_linear(self.prior, self._G, self._h, self._syy,
                                     self._normals(n))
        self._check_draws(ok, "DPS draws overflowed: the likelihood guidance grows with the "
                              "number of observations (Algorithm 4's known instability).")
        return draws
