"""NumPy ufuncs of the stable logistic-link functions, compiled from the kernel bodies.

``sigmoid``, ``softplus`` (``log(1 + exp(z))``), ``bernoulli_nll`` (``log(1 + exp(z)) -
y z``) and ``residual_weight`` are the scalar bodies of :mod:`vits_ref.kernels.scalars`
compiled by :func:`numba.vectorize`: array code (environments, the plain-NumPy
references) evaluates exactly the formula the kernels evaluate, finite for every finite
input.

Examples
--------
>>> import numpy as np
>>> from vits_ref.gaussian.special import sigmoid, softplus
>>> sigmoid(np.array([-800.0, 0.0, 800.0]))
array([0. , 0.5, 1. ])
>>> float(softplus(800.0))
800.0
"""

from numba import vectorize

from ..config import CACHE, stamped
from ..kernels import scalars as _s

_OPTS = {"cache": CACHE, "nopython": True}

sigmoid = vectorize(["float64(float64)"], **_OPTS)(_s.sigmoid)
softplus = vectorize(["float64(float64)"], **_OPTS)(_s.softplus)
bernoulli_nll = vectorize(["float64(float64, float64)"], **_OPTS)(_s.bernoulli_nll)

# The three above are the bodies of kernels/scalars.py themselves (Numba's cache follows
# that file); the two below call them from this file, so they close over the stamp of the
# kernel sources (:func:`vits_ref.config.stamped`) to follow an edit of those bodies.


@stamped
def residual(stamp):
    @vectorize(["float64(float64, float64)"], **_OPTS)
    def residual(z, y):
        """``sigmoid(z) - y`` in the cancellation-free form of the kernels."""
        _ = stamp
        return _s.residual_weight(z, y)[0]

    return residual


@stamped
def sigmoid_prime(stamp):
    @vectorize(["float64(float64)"], **_OPTS)
    def sigmoid_prime(z):
        """``sigmoid'(z) = e / (1 + e)^2``, ``e = exp(-|z|)``."""
        _ = stamp
        return _s.residual_weight(z, 0.0)[1]

    return sigmoid_prime


__all__ = ["bernoulli_nll", "residual", "sigmoid", "sigmoid_prime", "softplus"]
