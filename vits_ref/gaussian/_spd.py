"""Helpers shared by the closed forms (:mod:`vits_ref.gaussian`,
:mod:`vits_ref.gaussian.divergences`): the mean-vector check, and Cholesky helpers for
matrices their callers have already validated as symmetric positive definite. A module of
its own because ``gaussian`` re-exports ``divergences``: neither may import the other's
helpers."""

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from .._validate import float_array


def vector(value, name, dim=None):
    """A finite float64 vector of shape ``(dim,)`` (``dim`` free if None), d >= 1."""
    arr = float_array(value, name, ndim=1)
    if dim is None:
        if arr.shape[0] == 0:
            raise ValueError(f"{name} must have at least one entry, got shape {arr.shape}")
    elif arr.shape[0] != dim:
        raise ValueError(f"{name} must have shape ({dim},) to match the dimension d = {dim}, "
                         f"got shape {arr.shape}")
    return arr


def chol(mat, name="the matrix"):
    """Lower Cholesky factor of an (already validated) SPD matrix.

    A matrix computed from valid inputs can still fail in floating point (entries that
    overflowed, or a sum that lost positive definiteness to rounding): that raises a
    ValueError naming ``name``, not scipy's LinAlgError.
    """
    if not np.all(np.isfinite(mat)):
        raise ValueError(f"{name} is not finite: the inputs' scales overflow in double "
                         f"precision; rescale the problem")
    try:
        return cholesky(mat, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} is not positive definite in double precision (its "
                         f"scales span too many orders of magnitude); rescale the "
                         f"problem") from None


def finite_result(where, *arrays):
    """Return ``arrays`` (one: itself), or raise a ValueError if any entry is not finite:
    valid finite inputs whose closed form over- or underflows (e.g. variances of 1e308 or
    1e-309, features of 1e200) are an error, never a silent NaN or inf."""
    for a in arrays:
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where} is not finite for these inputs: their scales over- or "
                             f"underflow in double precision; rescale the problem")
    return arrays[0] if len(arrays) == 1 else arrays


def logdet(factor):
    """``log det(L L^T)`` from the diagonal of the lower Cholesky factor ``L``."""
    return 2.0 * float(np.sum(np.log(np.diag(factor))))


def inv_from_chol(factor):
    """``inv(L L^T)`` as ``L^{-T} L^{-1}``, symmetrised."""
    linv = solve_triangular(factor, np.eye(factor.shape[0]), lower=True, check_finite=False)
    out = linv.T @ linv
    return 0.5 * (out + out.T)
