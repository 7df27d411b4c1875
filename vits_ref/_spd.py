"""Cholesky helpers shared by the closed forms (:mod:`vits_ref.gaussian`,
:mod:`vits_ref.divergences`), for matrices their callers have already validated as
symmetric positive definite. A module of its own because ``gaussian`` re-exports
``divergences``: neither may import the other's helpers."""

import numpy as np
from scipy.linalg import cholesky, solve_triangular


def chol(mat):
    """Lower Cholesky factor of an (already validated) SPD matrix."""
    return cholesky(mat, lower=True, check_finite=False)


def logdet(factor):
    """``log det(L L^T)`` from the diagonal of the lower Cholesky factor ``L``."""
    return 2.0 * float(np.sum(np.log(np.diag(factor))))


def inv_from_chol(factor):
    """``inv(L L^T)`` as ``L^{-T} L^{-1}``, symmetrised."""
    linv = solve_triangular(factor, np.eye(factor.shape[0]), lower=True, check_finite=False)
    out = linv.T @ linv
    return 0.5 * (out + out.T)
