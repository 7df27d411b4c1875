r"""The exact diffusion of a Gaussian prior: the ground truth of every diffusion test.

For samples ``s_0 ~ N(m, S)`` the forward process gives ``s_t ~ N(sqrt(abar_t) m, C_t)``,
``C_t = abar_t S + (1 - abar_t) I``, and the optimal noise regressor is affine in ``s_t``;
everything is in closed form, no learning (docs/algorithms.md section 3).
"""

import numpy as np

from .. import _validate as val
from ..kernels.diffusion_chain import AFFINE
from .base import DiffusionPriorBase

REVERSE_VARIANCES = ("exact", "ddpm")
STARTS = ("exact", "standard")
#: smallest standard deviation of ``cov`` (along any direction), relative to the chain's
#: scale ``max(1, max |mean|, sqrt(largest eigenvalue))``, that :class:`GaussianDiffusionPrior`
#: accepts: the chain's rounding leaves a spread of about 1e-16 of that scale (measured:
#: 2.6e-17 at scale 1, 7.4e-17 at 1e3, whatever smaller spread is asked for), which adds
#: at most 1e-8 of the variance from here on
MIN_RELATIVE_SPREAD = 1e-12


class GaussianDiffusionPrior(DiffusionPriorBase):
    r"""The exact diffusion model of ``N(mean, cov)``: affine ``eps_t``, closed-form chain.

    Parameters
    ----------
    mean : (d,) array
    cov : (d, d) array or (d,) array
        Symmetric positive definite covariance ``S`` (a vector: the diagonal).
    n_stages : int, default 100
    alpha : float or (T,) array, default 0.97
        The schedule (:class:`~vits_ref.diffusion.Schedule`).
    reverse_variance : {"exact", "ddpm"}, default "exact"
        ``"exact"``: the true ``Cov(s_{t-1} | s_t)`` of the diffused Gaussian;
        ``"ddpm"``: the DDPM's ``btilde_t I`` (clipped ``btilde_1 = beta_1``), what a learned
        prior uses (Kveton et al.).
    start : {"exact", "standard"}, default "exact"
        ``"exact"``: ``s_T ~ N(sqrt(abar_T) m, C_T)``, the true marginal at stage T;
        ``"standard"``: ``N(0, I)``, the DDPM's (and Kveton et al.'s) start.

    Notes
    -----
    With ``C_t = abar_t S + (1 - abar_t) I`` (so ``C_0 = S``) and
    ``Cov(s_{t-1}, s_t) = sqrt(alpha_t) C_{t-1}``:

    .. math::

        \varepsilon_t(s) = E[\varepsilon \mid s_t = s]
            = \sqrt{1-\bar\alpha_t}\, C_t^{-1}(s - \sqrt{\bar\alpha_t} m)
            = A_t s + c_t,\qquad
        \mathrm{Cov}(s_{t-1}\mid s_t) = C_{t-1} - \alpha_t C_{t-1} C_t^{-1} C_{t-1}.

    The DDPM mean ``mu_t(s)`` with this ``eps_t`` is the exact ``E[s_{t-1} | s_t]`` (it is
    affine in ``s0_hat = E[s_0 | s_t]``), so with ``reverse_variance="exact"`` and
    ``start="exact"`` (the defaults) the chain samples ``N(m, S)`` exactly, at any ``T``:
    the defaults make this class the ground truth of the tests. All matrices commute with
    ``S = Q diag(l) Q^T``; per eigenvalue ``c_t = abar_t l + 1 - abar_t``, ``A_t`` has
    eigenvalues ``sqrt(1 - abar_t) / c_t`` and the exact reverse variance
    ``c_{t-1} beta_t / c_t`` (> 0 for every ``t``, including ``t = 1``).

    ``reverse_variance="ddpm"`` with ``start="standard"`` is the paper's chain. At
    ``T = 100``, ``alpha = 0.97`` its output covariance falls about 8-9% short of ``S``
    (``vits_ref.reference.diffusion.chain_moments`` propagates the
    moments exactly): a property of the DDPM reverse process at finite T, not of this code.

    The chain adds and removes unit-variance noise: its rounding leaves a spread of about
    1e-16 of ``max(1, max |mean|, sqrt(largest eigenvalue of cov))`` (the samples of
    ``cov = 1e-40 I`` came out with standard deviation 2.6e-17, not 1e-20). A ``cov`` whose
    smallest eigenvalue is below ``(1e-12 x that scale)^2``
    (:data:`MIN_RELATIVE_SPREAD`) is refused with a ValueError; rescale the problem.

    Attributes
    ----------
    mean, cov : ndarray
    eps_params : ``(A (T, d, d), c (T, d))``, ``eps_t(s) = A[t-1] s + c[t-1]``.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> prior = vr.diffusion.GaussianDiffusionPrior([1.0, -1.0], [[1.0, 0.5], [0.5, 2.0]])
    >>> x = prior.sample(20000, seed=0)
    >>> bool(np.allclose(x.mean(0), [1.0, -1.0], atol=0.05))
    True
    """

    eps_bodies = AFFINE

    def __init__(self, mean, cov, n_stages=100, alpha=0.97, reverse_variance="exact",
                 start="exact"):
        mean = val.float_array(mean, "mean", ndim=1)
        if mean.size == 0:
            raise ValueError("mean must have at least one entry")
        d = mean.shape[0]
        mean, cov = val.mean_and_cov(d, mean, cov, "mean", "cov", "cov is required")
        self.reverse_variance = val.choice(reverse_variance, "reverse_variance",
                                           REVERSE_VARIANCES)
        self.start = val.choice(start, "start", STARTS)
        super().__init__(d, n_stages=n_stages, alpha=alpha)
        self.mean, self.cov = mean, cov
        sch = self.schedule
        T = self.n_stages
        lam, Q = np.linalg.eigh(0.5 * (cov + cov.T))
        _check_spread(mean, lam)
        ab = sch.abar
        c = ab[:, None] * lam[None, :] + (1.0 - ab[:, None])  # (T + 1, d): eigenvalues of C_t

        def sym(diag):  # Q diag(.) Q^T for each row of diag, exactly symmetric
            M = np.einsum("ij,tj,kj->tik", Q, diag, Q)
            return 0.5 * (M + np.swapaxes(M, 1, 2))

        A = sym(np.sqrt(1.0 - ab[1:, None]) / c[1:])
        cvec = -np.sqrt(ab[1:, None]) * (A @ mean)
        self.eps_params = (np.ascontiguousarray(A), np.ascontiguousarray(cvec))
        if self.reverse_variance == "exact":
            prec = np.zeros((T + 1, d, d))
            prec[1:] = sym(c[1:] / (c[:-1] * sch.beta[1:, None]))
            self.reverse_prec = prec
        if self.start == "exact":
            self.start_mean = np.sqrt(ab[T]) * mean
            self.start_chol = np.linalg.cholesky(sym(c[T:T + 1])[0])

    def _params(self):
        """The constructor's arguments (for vits_ref.load)."""
        return {"mean": self.mean, "cov": self.cov, "n_stages": self.n_stages,
                "alpha": self.schedule.alpha[1:], "reverse_variance": self.reverse_variance,
                "start": self.start}

    def marginal(self, t):
        """``(mean, cov)`` of the forward marginal ``s_t ~ N(sqrt(abar_t) m, C_t)``."""
        t = val.positive_int(t, "t", minimum=0)
        if t > self.n_stages:
            raise ValueError(f"t must be in 0..{self.n_stages}, got {t}")
        ab = self.schedule.abar[t]
        return np.sqrt(ab) * self.mean, ab * self.cov + (1.0 - ab) * np.eye(self.dim)

    def __repr__(self):
        return (f"GaussianDiffusionPrior(dim={self.dim}, n_stages={self.n_stages}, "
                f"reverse_variance={self.reverse_variance!r}, start={self.start!r})")


def _check_spread(mean, eigenvalues):
    """Raise ValueError unless ``cov``'s spread is above the chain's rounding
    (:data:`MIN_RELATIVE_SPREAD`)."""
    scale = max(1.0, float(np.max(np.abs(mean))), float(np.sqrt(max(eigenvalues.max(), 0.0))))
    floor = (MIN_RELATIVE_SPREAD * scale) ** 2
    if not eigenvalues.min() >= floor:
        raise ValueError(
            f"cov's smallest eigenvalue {eigenvalues.min():.3g} is below the diffusion "
            f"chain's resolution: its unit-variance noise leaves a spread of about 1e-16 x "
            f"{scale:.3g} (max(1, max |mean|, sqrt(largest eigenvalue))), so cov's eigenvalues "
            f"must be at least (1e-12 x {scale:.3g})^2 = {floor:.3g}; rescale the problem")
