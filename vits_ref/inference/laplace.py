"""Laplace approximation with an IRLS/Newton MAP: GLM Thompson sampling.

ALGORITHMS.md sections 2 ("Laplace / GLM-TS") and 3 (IRLS, Algorithm 1 of the diffusion
paper, Kveton et al. 2024).
"""

import warnings

import numpy as np
from scipy.linalg import solve_triangular

from .. import _validate as val
from ..errors import DivergenceError
from ..kernels.logistic import (
    IRLS_CONVERGED,
    IRLS_FAILED,
    irls_logistic_cpu,
)
from ..models.logistic import Logistic
from .base import GaussianEngine

_MAX_HALVINGS = 60


class Laplace(GaussianEngine):
    r"""Laplace posterior ``N(theta_MAP, inv(hess U(theta_MAP)))``, the MAP fitted by IRLS.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d``.
    model : {"logistic", "linear"} or a model object, default "logistic"
        The potential ``U``. For ``"logistic"`` the MAP is fitted by the compiled IRLS
        kernel (:func:`vits_ref.kernels.logistic.irls_logistic`); for any other model by
        the same damped Newton iteration in Python on ``model.grad`` / ``model.hess``.
        For ``"linear"`` the Laplace approximation is the exact posterior.
    eta, lam : float, default 1.0
        Inverse temperature and ridge; prior ``N(0, I/(lam eta))``.
    tol : float, default 1e-8
        Convergence tolerance on the relative change of ``theta`` in one Newton step:
        ``|delta| <= tol max(1, |theta|)``.
    max_iter : int, default 100
        Cap on the Newton (IRLS) steps per :meth:`update`.
    seed : int, SeedSequence, Generator or None
        Seed of the sampling stream.

    Notes
    -----
    Each :meth:`update` appends the observations and refits the MAP of
    ``U(theta) = -log posterior`` by Newton/IRLS steps warm-started from the previous
    MAP (few steps per round in a bandit, where one observation moves the MAP little).
    For the logistic model Newton's step equals the IRLS update of Algorithm 1 of the
    diffusion paper with prior ``N(0, I/(eta lam))`` and the likelihood scaled by ``eta``:

    .. math::

        \theta \leftarrow \Sigma\,\eta X^T W \tilde z,\quad
        \Sigma^{-1} = \eta (X^T W X + \lambda I),\quad
        W = \mathrm{diag}(\sigma'(X\theta)),\quad
        \tilde z = X\theta + W^{-1}(y - \sigma(X\theta)),

    computed without dividing by ``W`` and with step halving (see the kernel). The
    covariance is the inverse Hessian at the MAP, ``H^-1`` with ``H = L L^T`` evaluated
    at the returned MAP; a draw is ``theta = theta_MAP + L^-T z``, ``z ~ N(0, I)``
    (a triangular solve, no inverse).

    Non-convergence within ``max_iter`` steps raises nothing: ``diagnostics["converged"]``
    is False, the state is the last iterate (with its own Hessian), and a
    :class:`RuntimeWarning` names the round and the cap; the next update continues from
    that iterate. A non-finite state or a Hessian that is not positive definite raises
    :class:`vits_ref.DivergenceError`.

    ``diagnostics``: ``n_obs``, ``irls_iterations`` (Newton steps in the last update),
    ``converged``.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 3))
    >>> y = (rng.random(200) < 1 / (1 + np.exp(-X @ [1.0, -1.0, 0.5]))).astype(float)
    >>> eng = vr.Laplace(3, model="logistic", seed=1).update(X, y)
    >>> eng.diagnostics["converged"], eng.sample(4).shape
    (True, (4, 3))
    """

    name = "Laplace"

    def __init__(self, dim, model="logistic", eta=1.0, lam=1.0, tol=1e-8, max_iter=100,
                 seed=None):
        self.tol = val.positive_float(tol, "tol")
        self.max_iter = val.positive_int(max_iter, "max_iter")
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        # the prior is the Laplace posterior with no data
        start = self._prior_start()
        if start is None:  # N(0, I/(eta lam))
            self.theta = np.zeros(self.dim)
            self.H = self.eta * self.lam * np.eye(self.dim)
            self.L = np.sqrt(self.eta * self.lam) * np.eye(self.dim)
        else:  # N(theta0, Sigma0) given by the model
            self.theta = start[0].copy()
            self.H = np.linalg.inv(self.model.prior_cov)
            self.H = 0.5 * (self.H + self.H.T)
            self.L = np.linalg.cholesky(self.H)
        self._P0 = self.H.copy()
        self._b0 = self._P0 @ self.theta
        self.diagnostics.update(irls_iterations=0, converged=True)

    def _params(self):
        return {**super()._params(), "tol": self.tol, "max_iter": self.max_iter}

    # -- fitting --------------------------------------------------------------------------
    def _refit(self, features, rewards):
        theta = self.theta.copy()
        H = np.empty((self.dim, self.dim))
        L = np.zeros((self.dim, self.dim))
        if isinstance(self.model, Logistic):
            status, it = irls_logistic_cpu(self.model.X, self.model.y, self.eta, self._P0,
                                           self._b0, theta, self.tol, self.max_iter, H, L)
        else:
            status, it = self._newton(theta, H, L)
        if status == IRLS_FAILED or not (np.all(np.isfinite(theta)) and np.all(np.isfinite(L))):
            raise DivergenceError(
                self.name, self.model.n_obs, None,
                detail=f"The IRLS/Newton fit of the "
                       f"{self.model.name} model produced a non-finite value or a Hessian "
                       f"that is not positive definite after {it} iterations: check the "
                       f"scale of the features or increase lam.")
        converged = status == IRLS_CONVERGED
        self.theta, self.H, self.L = theta, H, L
        self.diagnostics.update(irls_iterations=int(it), converged=converged)
        if not converged:
            warnings.warn(f"{self.name}: IRLS did not converge at round {self.model.n_obs} "
                          f"within max_iter={self.max_iter} iterations (tol={self.tol:g}); "
                          f"the mean and covariance are those of the last iterate. Raise "
                          f"max_iter, or raise lam if the data are (nearly) separable.",
                          RuntimeWarning, stacklevel=3)

    def _newton(self, theta, H, L):
        """Damped Newton on ``model.value/grad/hess`` (any model; mirrors the kernel)."""
        model = self.model
        f = model.value(theta)
        it = 0
        last = np.inf
        while True:
            if not np.isfinite(f):
                return IRLS_FAILED, it
            g = model.grad(theta)
            H[:] = model.hess(theta)
            try:
                L[:] = np.linalg.cholesky(H)
            except np.linalg.LinAlgError:
                return IRLS_FAILED, it
            if last <= self.tol * max(1.0, float(np.linalg.norm(theta))):
                return IRLS_CONVERGED, it
            if it >= self.max_iter:
                return 0, it
            step = -solve_triangular(L, solve_triangular(L, g, lower=True), lower=True,
                                     trans="T")
            snorm = float(np.linalg.norm(step))
            if not np.isfinite(snorm):
                return IRLS_FAILED, it
            t, slack = 1.0, 1e-12 * (1.0 + abs(f))
            for _ in range(_MAX_HALVINGS):
                trial = theta + t * step
                f_new = model.value(trial)
                if f_new <= f + slack:
                    break
                t *= 0.5
            theta[:] = trial
            f, last = f_new, snorm
            it += 1

    # -- the Gaussian ---------------------------------------------------------------------
    def _sample(self, n):
        z = self._rng_sample.standard_normal((n, self.dim))
        # rows: theta_MAP + L^-T z (one triangular solve for all draws)
        return self.theta + solve_triangular(self.L, z.T, lower=True, trans="T").T

    @property
    def mean(self):
        """The MAP ``theta_MAP`` (a copy)."""
        return self.theta.copy()

    @property
    def cov(self):
        """``inv(H) = L^-T L^-1``, the inverse Hessian of ``U`` at the MAP."""
        Linv = solve_triangular(self.L, np.eye(self.dim), lower=True)
        return Linv.T @ Linv

    @property
    def precision(self):
        """``H = hess U(theta_MAP)`` (a copy)."""
        return self.H.copy()
