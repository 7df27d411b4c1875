"""The disjoint encoding: one context shared by ``K`` arms as ``K`` feature vectors.

A round's context ``x`` (``p`` features) becomes, for arm ``a``, the vector of length
``K p`` that holds ``x`` in block ``a`` and zeros elsewhere (Li, Chu, Langford and Schapire,
2010, "disjoint linear models"). A shared parameter ``theta = (theta_0, ..., theta_{K-1})``
then scores arm ``a`` by ``x . theta_a``: the Gram matrix ``sum x_a x_a^T`` is block
diagonal, so a linear-Gaussian posterior over ``theta`` is exactly ``K`` independent
per-arm posteriors, the linear baselines of Riquelme, Tucker and Snoek (2018) ("Deep
Bayesian Bandits Showdown", one model per action), while every shared-parameter engine
of the library runs on it unchanged.
"""

import numpy as np

__all__ = ["decode", "encode"]


def encode(x, n_arms):
    """Contexts ``(n, p)`` -> arm features ``(n, K, K p)``, ``x`` in arm ``a``'s block ``a``.

    Examples
    --------
    >>> import numpy as np
    >>> encode(np.array([[1.0, 2.0]]), 2)[0]
    array([[1., 2., 0., 0.],
           [0., 0., 1., 2.]])
    """
    n, p = x.shape
    out = np.zeros((n, n_arms, n_arms * p))
    for a in range(n_arms):
        out[:, a, a * p:(a + 1) * p] = x
    return out


def decode(contexts, p):
    """The shared context ``(..., p)`` of arm features ``(..., K, K p)``: block 0 of arm 0."""
    return np.asarray(contexts, dtype=float)[..., 0, :p]
