"""Laplace approximation with an IRLS/Newton MAP: GLM Thompson sampling.

docs/algorithms.md sections 2 ("Laplace / GLM-TS") and 3 (IRLS, Algorithm 1 of the diffusion
paper, Kveton et al. 2024).
"""

import warnings

import numpy as np
from scipy.linalg import solve_triangular

from .. import _validate as val
from ..drivers import cpu
from ..drivers.fused import FusedSpec, thompson_noise, thompson_noise_chunks
from ..kernels import logistic_bandit as klogb
from ..kernels.newton import CONVERGED, FAILED
from .base import GaussianEngine


class Laplace(GaussianEngine):
    r"""Laplace posterior ``N(theta_MAP, inv(hess U(theta_MAP)))``, the MAP fitted by IRLS.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d``.
    model : str or model object, default "linear"
        The potential ``U``: a name of :data:`vits_ref.models.MODELS` or a model object.
        The MAP is fitted by the compiled damped Newton kernel
        (:mod:`vits_ref.kernels.newton`) on the model's likelihood plus its Gaussian prior;
        for ``"logistic"`` that is IRLS. For ``"linear"`` the Laplace approximation is the
        exact posterior.
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

    ``diagnostics`` (:class:`~vits_ref.inference.base.Diagnostics`): ``n_obs``,
    ``newton_iterations`` (Newton/IRLS steps in the last update; formerly
    ``irls_iterations``, still readable with a DeprecationWarning), ``converged``.

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
    #: what :meth:`update` changes (the transactional snapshot; the fit reassigns them)
    _state_attrs = ()
    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("theta", "H", "L")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, tol=1e-8, max_iter=100,
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
        self._newton = cpu.newton(self.model.potential)
        self.diagnostics.update(newton_iterations=0, converged=True)

    def _params(self):
        return {**super()._params(), "tol": self.tol, "max_iter": self.max_iter}

    # -- fitting --------------------------------------------------------------------------
    @property
    def batch_is_sequential(self):
        """True on the linear model, whose Laplace posterior is the exact one whatever
        the grouping of the rows (to rounding); elsewhere the MAP is fitted to ``tol``
        from where the previous update left it, so a batch and its rows one by one end
        at MAPs that agree to the tolerance only."""
        return self.model.name == "linear"

    def _refit(self, features, rewards):
        theta = self.theta.copy()
        H = np.empty((self.dim, self.dim))
        L = np.zeros((self.dim, self.dim))
        # the likelihood's part of the potential, with the prior as an explicit Gaussian
        # term (for the logistic model: IRLS with prior N(theta0, inv(P0)))
        status, it = self._newton(self.model.kernel_data(prior=False), self._P0, self._b0,
                                  theta, self.tol, self.max_iter, H, L,
                                  self.model.kernel_scratch(1))
        if status == FAILED or not (np.all(np.isfinite(theta)) and np.all(np.isfinite(L))):
            raise self._diverged(
                None, f"The IRLS/Newton fit of the {self.model.name} model produced a "
                      f"non-finite value or a Hessian that is not positive definite after "
                      f"{it} iterations: check the scale of the features or increase lam.")
        converged = status == CONVERGED
        self.theta, self.H, self.L = theta, H, L
        self.diagnostics.update(newton_iterations=int(it), converged=converged)
        if not converged:
            warnings.warn(f"{self.name}: IRLS did not converge at round {self.model.n_obs} "
                          f"within max_iter={self.max_iter} iterations (tol={self.tol:g}); "
                          f"the mean and covariance are those of the last iterate. Raise "
                          f"max_iter, or raise lam if the data are (nearly) separable.",
                          RuntimeWarning, stacklevel=3)

    def fused(self, kl=False):
        """The fused loop's spec on the logistic model with the default prior
        (:data:`vits_ref.kernels.logistic_bandit.LAPLACE_PIECE`), else None.

        The loop runs the same Newton/IRLS body per round; a fit that stops at
        ``max_iter`` continues from its last iterate there too, without the warning.
        """
        if self._fused_model() != "logistic":
            return None
        return FusedSpec(
            piece=klogb.LAPLACE_PIECE,
            params=klogb.LaplaceParams(eta=self.eta, lam=self.lam, tol=self.tol,
                                       max_iter=self.max_iter),
            draw=lambda seed, T, d: thompson_noise(seed, T, d, init=False),
            draw_chunks=lambda seed, T, d, c: thompson_noise_chunks(seed, T, d, c, init=False),
            binary_rewards=True,
            divergence_detail=f"The IRLS/Newton fit of the {self.model.name} model produced "
                              f"a non-finite value or a Hessian that is not positive "
                              f"definite: check the scale of the features or increase lam.")

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
