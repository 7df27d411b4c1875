"""Plain-NumPy reference of the ReLU-network potential (any depth): the yardstick.

Readable and vectorised over observations; it forms the Jacobian ``J`` explicitly and
computes ``J^T J`` with one product, where the kernels of :mod:`vits_ref.kernels.mlp`
back-propagate and accumulate chunk by chunk. The flat layout comes from the one
definition, :func:`vits_ref.kernels.mlp.layout`.

The network ``x -> h_1 -> ... -> h_L -> 1`` (ReLU hidden layers, ``relu'(0) = 0``)::

    a_0 = x,  z_l = W_l a_{l-1} + b_l,  a_l = max(z_l, 0),  g = w_out . a_L + b_out

Potential over observations ``(X, r)``, residuals ``e = g(X) - r``::

    U = eta/2 (|e|^2 + lam |theta|^2),     grad U = eta (J^T e + lam theta),
    Gauss-Newton  eta (J^T J + lam I)

or, with a general prior ``N(theta0, inv(P0))`` (not tempered by ``eta``),
``eta/2 |e|^2 + 1/2 (theta - theta0)^T P0 (theta - theta0)``, ``eta J^T e + P0 (theta -
theta0)`` and ``eta J^T J + P0``.
"""

import numpy as np

from ..kernels.mlp import layout


def unpack(theta, p, hidden):
    """``{"W1", "b1", ..., "w{L+1}", "b{L+1}"}``: views into ``theta`` (the last a float)."""
    out = {}
    for name, (a, b, shape) in layout(p, hidden).items():
        out[name] = float(theta[a]) if shape == () else theta[a:b].reshape(shape)
    return out


def _layers(theta, p, hidden):
    """``[(W_1, b_1), ..., (W_L, b_L)]`` and ``(w_out, b_out)``."""
    blocks = unpack(theta, p, hidden)
    L = len(hidden)
    layers = [(blocks[f"W{layer}"], blocks[f"b{layer}"]) for layer in range(1, L + 1)]
    return layers, (blocks[f"w{L + 1}"], blocks[f"b{L + 1}"])


def forward(theta, X, hidden):
    """Outputs ``g`` (n,), pre-activations ``[z_1, ..., z_L]`` and activations ``[a_0 = X, ...,
    a_L]`` for the rows of ``X`` (n, p)."""
    layers, (w_out, b_out) = _layers(theta, X.shape[1], hidden)
    a, Z, A = X, [], [X]
    for W, b in layers:
        z = a @ W.T + b
        a = np.maximum(z, 0.0)
        Z.append(z)
        A.append(a)
    return a @ w_out + b_out, Z, A


def outputs(theta, X, hidden):
    """The network's outputs ``g_theta(x_s)`` (n,) for the rows of ``X`` (n, p)."""
    return forward(theta, X, hidden)[0]


def jacobian(theta, X, hidden):
    """The Jacobian ``J`` (n, d) of the outputs with respect to ``theta`` (flat layout).

    Row ``s`` is ``[D_1 (x) a_0, D_1, ..., D_L (x) a_{L-1}, D_L, a_L, 1]`` with the
    sensitivities ``D_L = w_out 1[z_L > 0]``, ``D_{l-1} = (D_l W_l) 1[z_{l-1} > 0]``.
    """
    n = X.shape[0]
    layers, (w_out, _) = _layers(theta, X.shape[1], hidden)
    _, Z, A = forward(theta, X, hidden)
    D = [None] * len(layers)
    D[-1] = w_out * (Z[-1] > 0.0)
    for layer in range(len(layers) - 1, 0, -1):
        D[layer - 1] = (D[layer] @ layers[layer][0]) * (Z[layer - 1] > 0.0)
    cols = []
    for layer, Dl in enumerate(D):
        cols.append((Dl[:, :, None] * A[layer][:, None, :]).reshape(n, -1))
        cols.append(Dl)
    cols += [A[-1], np.ones((n, 1))]
    return np.concatenate(cols, axis=1)


def _prior(theta, eta, lam, prior_mean, prior_precision):
    """``(value, gradient, precision)`` of the prior term."""
    if prior_precision is None:
        d = theta.shape[0]
        return 0.5 * eta * lam * theta @ theta, eta * lam * theta, eta * lam * np.eye(d)
    diff = theta - (0.0 if prior_mean is None else prior_mean)
    Pd = prior_precision @ diff
    return 0.5 * diff @ Pd, Pd, prior_precision


def value(X, r, theta, eta, lam, hidden, prior_mean=None, prior_precision=None):
    """``U(theta)``: ``eta/2 |g(X) - r|^2`` plus the prior term (default or general)."""
    e = outputs(theta, X, hidden) - r
    return 0.5 * eta * e @ e + _prior(theta, eta, lam, prior_mean, prior_precision)[0]


def grads_gauss_newton(X, r, thetas, eta, lam, hidden, prior_mean=None,
                       prior_precision=None):
    """Gradients at the rows of ``thetas`` (M, d) and their mean Gauss-Newton matrix.

    ``G[m] = eta J_m^T e_m + prior gradient``, ``H = eta mean_m J_m^T J_m + prior
    precision``; the default prior is ``N(0, I/(eta lam))`` (gradient ``eta lam theta``,
    precision ``eta lam I``), a general one ``N(prior_mean, inv(prior_precision))``.
    """
    M, d = thetas.shape
    G = np.empty((M, d))
    JtJ = np.zeros((d, d))
    for m, theta in enumerate(thetas):
        J = jacobian(theta, X, hidden)
        e = outputs(theta, X, hidden) - r
        G[m] = eta * (J.T @ e) + _prior(theta, eta, lam, prior_mean, prior_precision)[1]
        JtJ += J.T @ J                       # the n d^2 Gauss-Newton product
    P = _prior(thetas[0], eta, lam, prior_mean, prior_precision)[2]
    return G, eta * JtJ / M + P
