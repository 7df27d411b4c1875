r"""What every diffusion prior exposes: the interface the compiled reverse chains read.

Kveton et al. (NeurIPS 2024), section 3; docs/algorithms.md section 3. A prior
is its noise regressor ``eps_t(s)`` as kernel bodies (:attr:`eps_bodies`, an
:class:`~vits_ref.kernels.diffusion_chain.EpsBodies`) with the arrays they read
(:attr:`eps_params`), the reverse-step precisions and the start of the chain; the chains
themselves (plain sampling, LaplaceDPS, DPS) live in :mod:`vits_ref.diffusion.chain` and
:mod:`vits_ref.kernels.diffusion_chain`, written once for every prior.
"""

from collections import namedtuple

import numpy as np

from .. import _validate as val
from ..kernels.diffusion_chain import EpsBodies
from .schedule import Schedule

#: The arrays the compiled chains read (see :mod:`vits_ref.kernels.diffusion_chain`).
ChainArrays = namedtuple("ChainArrays", "coef prec prec_chol start_mean start_chol "
                                        "start_prec start_b")

__all__ = ["ChainArrays", "DiffusionPriorBase", "EpsBodies", "ddpm_reverse_prec"]


def ddpm_reverse_prec(schedule, dim):
    """``(T + 1, d, d)``: ``I / btilde_t`` for ``t >= 1`` (clipped ``btilde_1 = beta_1``),
    zeros at ``t = 0``."""
    T = schedule.n_stages
    out = np.zeros((T + 1, dim, dim))
    out[1:] = np.eye(dim)[None] / schedule.btilde[1:, None, None]
    return out


class DiffusionPriorBase:
    r"""Base class of diffusion priors over ``theta`` in ``R^dim`` (DDPM reverse process).

    Parameters
    ----------
    dim : int
        Dimension ``d`` of ``theta``.
    n_stages : int, default 100
        Diffusion stages ``T``.
    alpha : float or (T,) array, default 0.97
        The schedule's ``alpha_t`` (:class:`Schedule`).

    Attributes
    ----------
    dim, n_stages : int
    schedule : Schedule
    eps_bodies : EpsBodies
        The noise regressor's kernel bodies (set by the subclass, a module-level constant).
    eps_params : tuple of arrays
        What the bodies read; stage-indexed arrays have a leading axis of length ``T``
        indexed by ``t - 1`` (set by the subclass).
    reverse_prec : (T + 1, d, d) ndarray
        ``reverse_prec[t] = inv(Sigma_t)``, the precision of the reverse step
        ``s_{t-1} | s_t ~ N(mu_t(s_t), Sigma_t)`` for ``t = 1..T`` (entry 0 unused, zeros).
        Default (the DDPM): ``I / btilde_t`` with the clipped ``btilde_1 = beta_1``.
    start_mean : (d,) ndarray, start_chol : (d, d) ndarray
        ``s_T ~ N(start_mean, start_chol start_chol^T)``; default ``N(0, I)``.

    Notes
    -----
    The reverse mean (Kveton et al., section 3; Ho et al. 2020):

    .. math::

        \hat s_0 = \frac{s_t - \sqrt{1-\bar\alpha_t}\,\varepsilon_t(s_t)}{\sqrt{\bar\alpha_t}},
        \qquad
        \mu_t(s_t) = \frac{\sqrt{\bar\alpha_{t-1}}\beta_t}{1-\bar\alpha_t}\hat s_0
                   + \frac{\sqrt{\alpha_t}(1-\bar\alpha_{t-1})}{1-\bar\alpha_t} s_t .

    Subclasses set :attr:`eps_bodies` and :attr:`eps_params` (and may override
    :attr:`reverse_prec`, the start and :meth:`eps_scratch`); :meth:`sample` runs the
    compiled chain of :func:`vits_ref.diffusion.chain.sample`.
    """

    eps_bodies = None
    eps_params = None
    #: for vits_ref.load (vits_ref.inference.persist): what a subclass's constructor does
    #: not rebuild from :meth:`_params` (nothing here)
    _persist_state = ()

    def __init__(self, dim, n_stages=100, alpha=0.97):
        self.dim = val.positive_int(dim, "dim")
        self.schedule = Schedule(n_stages, alpha)
        self.n_stages = self.schedule.n_stages
        self.reverse_prec = ddpm_reverse_prec(self.schedule, self.dim)
        self.start_mean = np.zeros(self.dim)
        self.start_chol = np.eye(self.dim)
        self._chain_cache = None

    def eps_scratch(self):
        """A new tuple of scratch buffers for the eps bodies (one set per thread or run)."""
        return (np.empty(1),)

    # -- what the chains read ---------------------------------------------------------------
    def chain_arrays(self):
        """The :data:`ChainArrays` the compiled chains read, recomputed when
        :attr:`reverse_prec`, :attr:`start_mean`, :attr:`start_chol` or :attr:`schedule` is
        replaced (not when they are modified in place).

        ``prec_chol[t]`` is the lower Cholesky factor of ``reverse_prec[t]`` (identity at
        ``t = 0``); ``start_chol`` is made lower triangular (the Cholesky factor of
        ``start_chol start_chol^T``) when it is not; ``start_prec = inv(L0 L0^T)``,
        ``start_b = start_prec start_mean``.

        Raises
        ------
        ValueError
            If a reverse precision is not symmetric positive definite, or a shape is wrong.
        """
        key = (id(self.schedule), id(self.reverse_prec), id(self.start_mean),
               id(self.start_chol))
        cache = self._chain_cache
        if cache is not None and cache[0] == key:
            return cache[2]
        d, T = self.dim, self.n_stages
        prec = val.float_array(self.reverse_prec, "reverse_prec", ndim=3,
                               shape=(T + 1, d, d))
        prec_chol = np.zeros_like(prec)
        prec_chol[0] = np.eye(d)
        for t in range(1, T + 1):
            try:
                prec_chol[t] = np.linalg.cholesky(prec[t])
            except np.linalg.LinAlgError:
                raise ValueError(f"reverse_prec[{t}] must be positive definite") from None
        m0 = val.float_array(self.start_mean, "start_mean", ndim=1, shape=(d,))
        L0 = val.float_array(self.start_chol, "start_chol", ndim=2, shape=(d, d))
        S0 = L0 @ L0.T
        if not np.array_equal(L0, np.tril(L0)):
            L0 = np.linalg.cholesky(S0)
        try:
            Linv = np.linalg.inv(L0)
        except np.linalg.LinAlgError:
            raise ValueError("start_chol must be nonsingular") from None
        P0 = Linv.T @ Linv
        P0 = 0.5 * (P0 + P0.T)
        arrays = ChainArrays(self.schedule.coefficients(), prec, prec_chol, m0,
                             np.ascontiguousarray(L0), P0, P0 @ m0)
        # the key's objects are kept alive with the cache, so their ids stay theirs
        self._chain_cache = (key, (self.schedule, self.reverse_prec, self.start_mean,
                                   self.start_chol), arrays)
        return arrays

    # -- the public face ---------------------------------------------------------------------
    def sample(self, n, seed=None):
        """``n`` draws of the prior by the compiled reverse chain, shape ``(n, dim)``.

        Parameters
        ----------
        n : int
        seed : int, SeedSequence, Generator or None
            Seeds the chain's normals ``(n, T + 1, d)`` (drawn in bulk with NumPy).
        """
        from . import chain

        return chain.sample(self, n, seed)

    def _stage(self, t):
        t = val.positive_int(t, "t")
        if t > self.n_stages:
            raise ValueError(f"t must be a stage in 1..{self.n_stages}, got {t}")
        return t

    def _point(self, s, name="s"):
        return val.float_array(s, name, ndim=1, shape=(self.dim,))

    def eps(self, t, s):
        """``eps_t(s)`` through the compiled body: ``s`` (d,) or (n, d), same shape back."""
        from . import chain

        t = self._stage(t)
        S = val.float_array(s, "s")
        if S.shape[-1:] != (self.dim,) or S.ndim not in (1, 2):
            raise ValueError(f"s must have shape ({self.dim},) or (n, {self.dim}), got {S.shape}")
        out = chain.eps_rows(self, t, S.reshape(-1, self.dim))
        return out.reshape(S.shape)

    def reverse_mean(self, t, s):
        """``mu_t(s)`` for one ``s`` (d,) and the 1-based stage ``t``, through the compiled
        eps body (see the class Notes)."""
        from . import chain

        return chain.reverse_mean(self, self._stage(t), self._point(s))

    def __repr__(self):
        return f"{type(self).__name__}(dim={self.dim}, n_stages={self.n_stages})"
