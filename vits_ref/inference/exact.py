"""Exact Gaussian posterior of the linear model: linear Thompson sampling (LinTS)."""

import numpy as np

from ..drivers import cpu
from ..drivers.fused import FusedSpec, thompson_noise, thompson_noise_chunks
from ..kernels import lints as klints
from .base import GaussianEngine


class LinTS(GaussianEngine):
    """Exact linear-Gaussian posterior ``N(V^-1 b, inv(eta V))`` (docs/algorithms.md section 1).

    Keeps the lower Cholesky factor ``L`` of ``V`` and updates it by one rank-one update per
    observation (O(d^2)); never refactorises, never inverts.

    Parameters
    ----------
    dim : int
        Parameter dimension.
    model : "linear" or a :class:`vits_ref.models.Linear`, default "linear"
        LinTS is exact for the linear-Gaussian model only (a general prior is allowed).
    eta : float, default 1.0
        Inverse temperature (inverse noise variance).
    lam : float, default 1.0
        Ridge: prior ``N(0, I/(lam eta))``.
    seed : int, SeedSequence, Generator or None
        Seed of the sampling stream.

    Notes
    -----
    A draw is ``theta = L^-T (L^-1 b + z / sqrt(eta))``, ``z ~ N(0, I)``: its mean is
    ``V^-1 b`` and its covariance ``L^-T L^-1 / eta = inv(eta V)``.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> eng = vr.LinTS(3, eta=1.0, lam=1.0, seed=0)
    >>> _ = eng.update(np.eye(3), np.ones(3))
    >>> eng.mean
    array([0.5, 0.5, 0.5])
    >>> eng.sample(4).shape
    (4, 3)
    """

    name = "LinTS"
    #: a batch is the rows' rank-one updates in order, and b its sum: the rows one by
    #: one, to rounding
    batch_is_sequential = True
    #: what :meth:`update` changes in place (the transactional snapshot)
    _state_attrs = ("L",)
    #: what vits_ref.load puts back after construction (with Engine's streams and model)
    _persist_state = ("L",)

    def _persist_check(self):
        """After vits_ref.load: ``L`` is a Cholesky factor, lower triangular with a positive
        diagonal (a zero or NaN pivot would make every draw the mean's)."""
        if not (np.all(np.diag(self.L) > 0) and not np.any(np.triu(self.L, 1))):
            raise ValueError("L is not a Cholesky factor (lower triangular, positive "
                             "diagonal)")

    def __init__(self, dim, model="linear", eta=1.0, lam=1.0, seed=None):
        super().__init__(dim, model=model, eta=eta, lam=lam, seed=seed)
        if self.model.name != "linear":
            raise ValueError(f"LinTS is exact for model='linear' only, got {self.model.name!r}; "
                             "use Laplace, VITS or Langevin")
        self.L = (np.sqrt(self.lam) * np.eye(self.dim) if self.model.has_default_prior
                  else np.linalg.cholesky(self.model.V))

    def _refit(self, features, rewards):
        # one rank-one update of L per observation; b is kept by the model
        cpu.chol_update_rows(self.L, features)
        # V = L L^T or b may overflow (features within the validated bound still add up);
        # the update is rolled back and reported instead of NaN draws
        self._check_finite(None, self.L, self.model.b,
                           detail="The statistics V = lam I + sum x x^T or b = sum r x "
                                  "overflowed: the features or rewards are too large.")

    def _sample(self, n):
        z = self._rng_sample.standard_normal((n, self.dim))
        out = np.empty((n, self.dim))
        cpu.lints_draws(self.L, self.model.b, self.eta, z, out)
        return out

    def fused(self, kl=False):
        """The fused loop's spec (:data:`vits_ref.kernels.lints.PIECE`) under the default
        prior, else None. ``kl``: keep ``V`` for the KL diagnostic (costs O(d^2) a round)."""
        if not self.model.has_default_prior:
            return None
        return FusedSpec(
            piece=klints.PIECE,
            params=klints.LinTSParams(eta=self.eta, lam=self.lam, track=bool(kl)),
            draw=lambda seed, T, d: thompson_noise(seed, T, d, init=False),
            draw_chunks=lambda seed, T, d, c: thompson_noise_chunks(seed, T, d, c, init=False),
            gaussian=True)

    @property
    def mean(self):
        """``V^-1 b`` by two triangular solves."""
        from scipy.linalg import solve_triangular

        y = solve_triangular(self.L, self.model.b, lower=True)
        return solve_triangular(self.L, y, lower=True, trans="T")

    @property
    def cov(self):
        """``inv(eta V) = L^-T L^-1 / eta``."""
        from scipy.linalg import solve_triangular

        Linv = solve_triangular(self.L, np.eye(self.dim), lower=True)
        return Linv.T @ Linv / self.eta

