r"""Plain-NumPy reference of the learned DDPM prior: the per-stage MLP, its training, the chain.

The same algorithm as :mod:`vits_ref.kernels.ddpm_mlp` (see its docstring for the
layout, the loss and the hand-written gradients), written with array expressions: the
yardstick the tests compare the compiled bodies against (to ~1e-12) and the benchmark
(:mod:`vits_ref._bench.diffusion`) times them against. One stage's parameters are
``P = (W1 (d, h1), b1 (h1,), W2 (h1, h2), b2 (h2,), W3 (h2, d), b3 (d,))`` (input-major:
row vectors times weights); the prior's
``params`` stack them over stages (leading axis T, indexed by ``t - 1``).

The reverse chain (:func:`reverse_chain`) is the DDPM's (Ho et al. 2020; Kveton et al.,
section 3 and appendix B), vectorised over samples, one stage at a time::

    s0_hat = (s_t - sqrt(1 - abar_t) eps_t(s_t)) / sqrt(abar_t)
    mu_t   = sqrt(abar_{t-1}) beta_t / (1 - abar_t) s0_hat
             + sqrt(alpha_t) (1 - abar_{t-1}) / (1 - abar_t) s_t
    s_{t-1} = mu_t + sqrt(btilde_t) z_t

Examples
--------
>>> import numpy as np
>>> from vits_ref.reference import ddpm
>>> rng = np.random.default_rng(0)
>>> params = ddpm.init_params(rng, T=3, dim=2, hidden=(4, 5))
>>> ddpm.eps(params, 2, np.zeros((1, 2))).shape
(1, 2)
"""

import numpy as np

#: Adam's defaults (Kingma & Ba 2015)
BETA1, BETA2, ADAM_EPS = 0.9, 0.999, 1e-8


def init_params(rng, T, dim, hidden):
    """He-initialised weights (``N(0, 2/fan_in)``; the output layer ``N(0, 1/fan_in)``),
    zero biases, for ``T`` stages: the tuple ``(W1, b1, W2, b2, W3, b3)``."""
    h1, h2 = hidden
    return (rng.standard_normal((T, dim, h1)) * np.sqrt(2.0 / dim), np.zeros((T, h1)),
            rng.standard_normal((T, h1, h2)) * np.sqrt(2.0 / h1), np.zeros((T, h2)),
            rng.standard_normal((T, h2, dim)) * np.sqrt(1.0 / h2), np.zeros((T, dim)))


def stage(params, t):
    """One stage's parameters (1-based ``t``): views of the stacked arrays."""
    return tuple(a[t - 1] for a in params)


def forward(P, X):
    """``(A1, A2, Y)``: activations and outputs of one stage's network at the rows of X."""
    W1, b1, W2, b2, W3, b3 = P
    A1 = np.maximum(X @ W1 + b1, 0.0)
    A2 = np.maximum(A1 @ W2 + b2, 0.0)
    return A1, A2, A2 @ W3 + b3


def eps(params, t, S):
    """``eps_t(s)`` at the rows of ``S`` (n, d)."""
    return forward(stage(params, t), S)[2]


def vjp(params, t, S, Vs):
    """``J_t(s_n)^T v_n`` for the rows of ``S`` and ``Vs`` (n, d)."""
    W1, b1, W2, b2, W3, b3 = stage(params, t)
    A1, A2, _ = forward((W1, b1, W2, b2, W3, b3), S)
    G2 = (Vs @ W3.T) * (A2 > 0)
    G1 = (G2 @ W2.T) * (A1 > 0)
    return G1 @ W1.T


def jacobian(params, t, s):
    """The (d, d) Jacobian ``d eps_t / d s`` at one point ``s``."""
    W1, b1, W2, b2, W3, b3 = stage(params, t)
    A1, A2, _ = forward((W1, b1, W2, b2, W3, b3), s[None, :])
    return W3.T @ ((A2[0] > 0)[:, None] * W2.T) @ ((A1[0] > 0)[:, None] * W1.T)


def loss_grads(P, X, E):
    """``(loss, grads)`` of ``1/B sum_b |eps(x_b) - e_b|^2`` for one stage and batch."""
    W1, b1, W2, b2, W3, b3 = P
    A1, A2, Y = forward(P, X)
    R = Y - E
    loss = float(np.sum(R * R) / X.shape[0])
    D3 = 2.0 / X.shape[0] * R
    D2 = (D3 @ W3.T) * (A2 > 0)
    D1 = (D2 @ W2.T) * (A1 > 0)
    return loss, (X.T @ D1, D1.sum(0), A1.T @ D2, D2.sum(0), A2.T @ D3, D3.sum(0))


def adam_update(P, G, M, V, k, lr, beta1=BETA1, beta2=BETA2, adam_eps=ADAM_EPS):
    """The ``k``-th Adam step on tuples of arrays: returns new ``(P, M, V)``."""
    c1, c2 = 1.0 - beta1 ** k, 1.0 - beta2 ** k
    M = tuple(beta1 * m + (1.0 - beta1) * g for m, g in zip(M, G, strict=True))
    V = tuple(beta2 * v + (1.0 - beta2) * g * g for v, g in zip(V, G, strict=True))
    P = tuple(p - lr * (m / c1) / (np.sqrt(v / c2) + adam_eps)
              for p, m, v in zip(P, M, V, strict=True))
    return P, M, V


def train_epoch(params, m, v, step0, ca, cb, shift, inv_scale, s0, idx, noise, batch, lr,
                beta1=BETA1, beta2=BETA2, adam_eps=ADAM_EPS):
    """One epoch of every stage (the compiled ``ddpm_train_epoch`` with array expressions).

    Returns new ``(params, m, v, losses (T,))``; arguments as in
    :func:`vits_ref.drivers.cpu.ddpm_train_epoch`.
    """
    T, N = idx.shape
    out_p, out_m, out_v = ([a.copy() for a in x] for x in (params, m, v))
    losses = np.empty(T)
    for k in range(T):
        P = tuple(a[k] for a in params)
        M = tuple(a[k] for a in m)
        V = tuple(a[k] for a in v)
        total = 0.0
        for j, lo in enumerate(range(0, N, batch)):
            sel = slice(lo, min(lo + batch, N))
            E = noise[k, sel]
            X = (ca[k] * s0[idx[k, sel]] + cb[k] * E - shift[k]) * inv_scale[k]
            loss, G = loss_grads(P, X, E)
            P, M, V = adam_update(P, G, M, V, step0 + j + 1, lr, beta1, beta2, adam_eps)
            total += loss * X.shape[0]
        losses[k] = total / N
        for dst, src in ((out_p, P), (out_m, M), (out_v, V)):
            for a, b in zip(dst, src, strict=True):
                a[k] = b
    return tuple(out_p), tuple(out_m), tuple(out_v), losses


def fold_input_scaling(params, shift, inv_scale):
    """New params with ``((s - shift) inv_scale) W1 + b1`` rewritten as ``s W1' + b1'``."""
    W1, b1 = params[0], params[1]
    W1f = W1 * inv_scale[:, :, None]
    b1f = b1 - np.einsum("kij,ki->kj", W1f, shift)
    return (W1f, b1f) + tuple(params[2:])


def reverse_mean(eps_t, t, S, alpha, abar):
    """``mu_t(s)`` at the rows of ``S`` given ``eps_t = eps_t(S)`` (``alpha``, ``abar``:
    schedule arrays of length T + 1 indexed by the stage, entry 0 = 1)."""
    s0_hat = (S - np.sqrt(1.0 - abar[t]) * eps_t) / np.sqrt(abar[t])
    return (np.sqrt(abar[t - 1]) * (1.0 - alpha[t]) / (1.0 - abar[t]) * s0_hat
            + np.sqrt(alpha[t]) * (1.0 - abar[t - 1]) / (1.0 - abar[t]) * S)


def reverse_chain(eps_fn, alpha, abar, btilde, s_T, Z):
    """The DDPM reverse chain with no evidence, vectorised over the ``n`` samples.

    ``eps_fn(t, S)``: the noise regressor at the rows of ``S`` (for the learned prior
    ``lambda t, S: eps(params, t, S)``; any closed form for a ground truth); ``s_T``
    (n, d) the start; ``Z`` (T, n, d) standard normals (``Z[t - 1]`` used at stage ``t``);
    ``btilde`` (T + 1,) the reverse variances (the caller's clipped ones). Returns ``s_0``
    (n, d).
    """
    S = np.array(s_T, dtype=float)
    for t in range(Z.shape[0], 0, -1):
        S = reverse_mean(eps_fn(t, S), t, S, alpha, abar) + np.sqrt(btilde[t]) * Z[t - 1]
    return S
