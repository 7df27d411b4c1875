"""Numerically stable scalar functions of the logistic link, written once.

Every compiled kernel calls these bodies; :mod:`vits_ref.gaussian.special` compiles the same
bodies into NumPy ufuncs for array code (environments, references), so the library has
one implementation of each formula (docs/algorithms.md section 2, "numerical forms").
"""

import math

from vits_ref.config import kernel


@kernel
def softplus(z):
    """``log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|))``, exact to rounding for any z."""
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


@kernel
def bernoulli_nll(z, y):
    """``log(1 + exp(z)) - y z = (1 - y) softplus(z) + y softplus(-z)`` (no cancellation)."""
    e = math.log1p(math.exp(-abs(z)))
    if y == 0.0:
        return max(z, 0.0) + e
    if y == 1.0:
        return max(-z, 0.0) + e
    return (1.0 - y) * (max(z, 0.0) + e) + y * (max(-z, 0.0) + e)


@kernel
def sigmoid(z):
    """``1 / (1 + exp(-z))`` via ``e = exp(-|z|)``: never overflows."""
    e = math.exp(-abs(z))
    if z >= 0.0:
        return 1.0 / (1.0 + e)
    return e / (1.0 + e)


@kernel
def residual_weight(z, y):
    """``(sigmoid(z) - y, sigmoid'(z))``: the gradient residual and the Hessian weight.

    ``sigmoid(z) - y = (1 - y) sigmoid(z) - y sigmoid(-z)`` keeps full relative accuracy
    when ``y = 1`` and ``z`` is large; ``sigmoid'(z) = e / (1 + e)^2``, ``e = exp(-|z|)``.
    """
    e = math.exp(-abs(z))
    inv = 1.0 / (1.0 + e)
    if z >= 0.0:
        sp, sm = inv, e * inv  # sigmoid(z), sigmoid(-z)
    else:
        sp, sm = e * inv, inv
    return (1.0 - y) * sp - y * sm, e * inv * inv
