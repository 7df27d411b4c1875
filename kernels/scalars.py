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


@kernel(inline=True)
def nll_given(z, y, e):
    """:func:`bernoulli_nll` given ``e = exp(-|z|)`` (shared with :func:`nll_residual`)."""
    lg = math.log1p(e)
    if y == 0.0:
        return max(z, 0.0) + lg
    if y == 1.0:
        return max(-z, 0.0) + lg
    return (1.0 - y) * (max(z, 0.0) + lg) + y * (max(-z, 0.0) + lg)


@kernel
def bernoulli_nll(z, y):
    """``log(1 + exp(z)) - y z = (1 - y) softplus(z) + y softplus(-z)`` (no cancellation)."""
    return nll_given(z, y, math.exp(-abs(z)))


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
    return residual_weight_given(z, y, math.exp(-abs(z)))


@kernel(inline=True)
def residual_weight_given(z, y, e):
    """:func:`residual_weight` given ``e = exp(-|z|)`` (shared with :func:`nll_residual`)."""
    inv = 1.0 / (1.0 + e)
    if z >= 0.0:
        sp, sm = inv, e * inv  # sigmoid(z), sigmoid(-z)
    else:
        sp, sm = e * inv, inv
    return (1.0 - y) * sp - y * sm, e * inv * inv


@kernel(inline=True)
def nll_residual(z, y):
    """``(bernoulli_nll(z, y), sigmoid(z) - y)`` from one ``exp``: the value and gradient
    terms of one observation, as a potential's value-and-gradient pass needs them."""
    e = math.exp(-abs(z))
    return nll_given(z, y, e), residual_weight_given(z, y, e)[0]
