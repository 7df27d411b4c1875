"""Bayesian neural network regression of the SVGD paper (the OPVI paper, section 5.2) as bodies.

The network of Liu & Wang (2016)'s BNN experiment (after Hernandez-Lobato & Adams 2015),
which the OPVI paper reuses: one hidden layer of ``h = 50`` ReLU units,
``f(x) = w_2 . relu(W_1 x + b_1) + b_2``; observation noise ``y ~ N(f(x), 1/gamma)``;
weights ``~ N(0, 1/lambda)``; ``gamma, lambda ~ Gamma(a0, b0)`` (shape ``a0 = 1``, rate
``b0 = 0.1``). As in the SVGD reference code (``bayesian_nn.py``), the precisions are
carried as ``log gamma`` and ``log lambda``, so the density of the parameter vector includes
the log-Jacobian ``log gamma + log lambda`` of that change of variables.

Flat parameter vector (``d = h (p + 2) + 3``; the network's part is the layout of
:mod:`.mlp` with one hidden layer, ``D = d - 2`` entries)::

    W_1 (h, p) row-major | b_1 (h) | w_2 (h) | b_2 (1) | log gamma | log lambda

Potential, with a likelihood weight ``w_l`` and a prior weight ``w_p`` (the mini-batch hook;
``w_l = N/B`` reproduces the reference code's ``log_lik_data * N / B``), ``e_s = f(x_s) - y_s``
over the ``n`` rows given, ``S = sum_s e_s^2``, ``|w|^2`` the squared norm of the D network
weights, normalising constants included (``w_l = w_p = 1``: exactly ``-log p(y, theta)``)::

    U = w_l [ n/2 (log 2 pi - log gamma) + gamma/2 S ]
      + w_p [ D/2 (log 2 pi - log lambda) + lambda/2 |w|^2
              + sum_{t in (gamma, lambda)} (-a0 log b0 + lgamma(a0) - a0 log t + b0 t) ]

(``-(a0 - 1) log t`` from the Gamma density and ``-log t`` from the Jacobian make the
``-a0 log t``.) Gradient::

    d/dw          = w_l gamma J^T e + w_p lambda w        (J^T e by back-propagation)
    d/dlog gamma  = w_l (gamma S/2 - n/2) + w_p (b0 gamma - a0)
    d/dlog lambda = w_p (lambda |w|^2/2 - D/2 + b0 lambda - a0)

No Hessian: ``grads_hessian`` leaves ``H`` untouched whatever ``want_hessian`` (the particle
engines need gradients only; the model's ``hess`` raises).

``data = (X, y, widths, a0, b0, w_l, w_p)``: the rows ``X`` (n, p) and targets ``y`` (n,)
(views of the history or a gathered mini-batch, standardised by the caller), ``widths``
``(h,)`` int64, the Gamma hyperparameters and the two weights (the model folds its
inverse temperature ``eta`` into both). ``scratch = (A, D, out, gtmp)``: ``A``, ``D``
``(R, c h)``, ``out`` ``(R, c)``, ``gtmp`` ``(R, d)``, one row per parameter vector, ``c`` the
chunk height (the data are processed ``c`` rows at a time, so the scratch does not grow with
the history). Row ``m`` of ``thetas`` uses scratch row ``m % R``: with ``R >= M`` the rows
are independent and a driver can run them in ``prange`` (or one CUDA thread each); the
serial loop below is correct for any ``R >= 1``.

Cost per parameter vector: forward and backward passes ``~ 6 n p h`` flops (three
products of the (n, p) rows with the (h, p) weights, BLAS on the CPU through
:mod:`.linalg`); the precisions cost one ``exp`` each per parameter vector.
"""

import math

from vits_ref.config import kernel

from .mlp import mlp_backprop, mlp_outputs, mlp_residuals, mlp_sensitivities
from .potential import Potential

LOG_2PI = math.log(2.0 * math.pi)


@kernel
def gamma_nll_log(t_log, a0, b0):
    """``-log`` density of ``log t`` when ``t ~ Gamma(a0, rate b0)`` (Jacobian included)."""
    return -a0 * math.log(b0) + math.lgamma(a0) - a0 * t_log + b0 * math.exp(t_log)


@kernel
def bnn_row(data, theta, want_grad, g, A, D, out, gtmp):
    """``U(theta)`` for one parameter vector; ``g`` (d,) receives the gradient if asked.

    ``A``, ``D`` (c h,), ``out`` (c,), ``gtmp`` (d,): one row of the scratch.
    """
    X, y, widths, a0, b0, wl, wp = data
    n, p = X.shape
    c = out.shape[0]
    d = theta.shape[0]
    dn = d - 2
    lg = theta[dn]
    ll = theta[dn + 1]
    gam = math.exp(lg)
    lam = math.exp(ll)
    if want_grad:
        for i in range(dn):
            g[i] = 0.0
    ss = 0.0
    for c0 in range(0, n, c):
        m = min(c, n - c0)
        Xc = X[c0:c0 + m]
        o = out[:m]
        ss = mlp_residuals(theta, Xc, y[c0:c0 + m], widths, A, c, o, ss)
        if want_grad:
            mlp_sensitivities(theta, p, widths, A, D, c, m)
            mlp_backprop(Xc, o, widths, A, D, c, gtmp)
            for i in range(dn):
                g[i] += gtmp[i]
    sq = 0.0
    for i in range(dn):
        sq += theta[i] * theta[i]
    if want_grad:
        lg_w = wl * gam
        lam_w = wp * lam
        for i in range(dn):
            g[i] = lg_w * g[i] + lam_w * theta[i]
        g[dn] = wl * (0.5 * gam * ss - 0.5 * n) + wp * (b0 * gam - a0)
        g[dn + 1] = wp * (0.5 * lam * sq - 0.5 * dn + b0 * lam - a0)
    nll = 0.5 * n * (LOG_2PI - lg) + 0.5 * gam * ss
    prior = (0.5 * dn * (LOG_2PI - ll) + 0.5 * lam * sq
             + gamma_nll_log(lg, a0, b0) + gamma_nll_log(ll, a0, b0))
    return wl * nll + wp * prior


@kernel
def grads_hessian(data, thetas, want_hessian, G, H, scratch):
    """The potential interface: ``G[m] = grad U(thetas[m])``; ``H`` is never touched."""
    A, D, out, gtmp = scratch
    R = out.shape[0]
    for m in range(thetas.shape[0]):
        k = m % R
        bnn_row(data, thetas[m], True, G[m], A[k], D[k], out[k], gtmp[k])


@kernel
def value(data, theta, scratch):
    """The potential interface: ``U(theta)`` (normalising constants included)."""
    A, D, out, gtmp = scratch
    return bnn_row(data, theta, False, gtmp[0], A[0], D[0], out[0], gtmp[0])


@kernel
def predict(data, theta, X, out, scratch):
    """Network outputs ``out[s] = f(X[s])`` (standardised units), ``c`` rows at a time."""
    mlp_outputs(theta, X, data[2], scratch[0][0], scratch[2].shape[1], out)


#: The BNN regression potential's bodies (the interface of :mod:`.potential`).
POTENTIAL = Potential("bnn", grads_hessian, value, predict)
