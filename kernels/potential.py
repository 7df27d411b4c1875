"""Potentials as compiled objects: the bodies a step closes over.

A potential ``U(theta) = -log posterior(theta) + const`` is a small set of kernel bodies
with one signature for every model (docs/architecture.md):

``grads_hessian(data, thetas, want_hessian, G, H, scratch)``
    ``G[m] = grad U(thetas[m])`` for the rows of ``thetas`` (M, d); with
    ``want_hessian``, ``H`` (d, d) receives the mean over the rows of the Hessian (or the
    model's documented approximation, e.g. Gauss-Newton), else ``H`` is left untouched.
``value(data, theta, scratch) -> float``
    ``U(theta)`` (up to a constant the model documents).
``predict(data, theta, X, out, scratch)``
    ``out[a]``: the score of arm ``a`` (row ``a`` of ``X``) under ``theta``; Thompson
    sampling plays its argmax.

``data`` is a tuple of the model's arrays and scalars (its sufficient statistics or its
history, ``eta``, ``lam``, its prior); ``scratch`` a tuple of buffers the model owns.
Steps (VITS, Langevin, Newton, later SVGD and the diffusion chain) are factories that
close over these bodies; the drivers (:mod:`vits_ref.drivers`) cache one compiled
function per (step, potential). A model can override the derived hooks below where it
has a cheaper exact form (the linear model does).

Derived hooks, built from ``grads_hessian`` unless the potential supplies its own:

``grad(data, theta, out, H, scratch)``
    ``out = grad U(theta)`` (one row; ``H`` is the caller's (d, d) buffer, untouched).
``vits_inputs(data, variant, mu, B, eps, Z, T, G, g, H, W1, gmu, scratch) -> A``
    What one VITS step needs at the draws ``theta_j = mu + B eps_j``: the mean gradient
    ``g``; for VITS-I/II the mean Hessian ``A`` and ``W1 = A B``; for the Hessian-free
    variants the offsets ``Z = theta_j - mu`` and gradients ``G`` (and ``gmu = grad U(mu)``
    with the control variate). ``T`` (M, d) is scratch for the draws.
"""

import hashlib

from vits_ref.config import kernel, sources_stamp

from .linalg import gemm_nn, gemm_nt, gemv

# VITS variant codes (the steps in kernels/vits.py branch on them at run time)
VARIANT_I = 0
VARIANT_II = 1
VARIANT_HF = 2
#: Hessian-free with the control variate ``grad U(mu)``:
#: ``A = (C^T C) mean_j (theta_j - mu)(grad U(theta_j) - grad U(mu))^T``. Unbiased like the
#: plain estimator (``E[theta_j - mu] = 0``), without its noise term
#: ``mean_j (theta_j - mu) grad U(mu)^T``, which is large while ``mu`` is far from the mode.
VARIANT_HF_CV = 3


@kernel
def is_hessian_free(variant):
    """True for the variants that estimate ``A`` from gradients only."""
    return variant == VARIANT_HF or variant == VARIANT_HF_CV


def generic_grad(grads_hessian):
    """``grad`` hook from ``grads_hessian`` on a one-row view."""

    @kernel(inline=True)
    def grad(data, theta, out, H, scratch):
        d = theta.shape[0]
        grads_hessian(data, theta.reshape((1, d)), False, out.reshape((1, d)), H, scratch)

    return grad


def generic_vits_inputs(grads_hessian):
    """``vits_inputs`` hook from ``grads_hessian``: draws, their gradients, mean Hessian."""

    @kernel(inline=True)
    def vits_inputs(data, variant, mu, B, eps, Z, T, G, g, H, W1, gmu, scratch):
        M, d = eps.shape
        gemm_nt(eps, B, Z)  # rows B eps_j = theta_j - mu
        for m in range(M):
            for i in range(d):
                T[m, i] = mu[i] + Z[m, i]
        hf = is_hessian_free(variant)
        grads_hessian(data, T, not hf, G, H, scratch)
        if variant == VARIANT_HF_CV:  # the gradient at the mean, through the same body
            for i in range(d):
                T[0, i] = mu[i]
            grads_hessian(data, T[:1], False, gmu.reshape((1, d)), H, scratch)
        for i in range(d):
            s = 0.0
            for m in range(M):
                s += G[m, i]
            g[i] = s / M
        if not hf:
            gemm_nn(H, B, W1)
        return H

    return vits_inputs


class Potential:
    """The kernel bodies of one potential (see the module docstring).

    Instances are module-level constants of the model's kernel module (e.g.
    :data:`vits_ref.kernels.logistic.POTENTIAL`); they are hashed by identity, so the
    drivers' caches hold one compiled step per (step, potential).
    """

    def __init__(self, name, grads_hessian, value, predict, grad=None, vits_inputs=None):
        self.name = name
        self.grads_hessian = grads_hessian
        self.value = value
        self.predict = predict
        self.grad = generic_grad(grads_hessian) if grad is None else grad
        self.vits_inputs = (generic_vits_inputs(grads_hessian) if vits_inputs is None
                            else vits_inputs)
        self.fingerprint = fingerprint(grads_hessian, value, predict, grad, vits_inputs)

    def __repr__(self):
        return f"Potential({self.name!r})"


def fingerprint(*bodies):
    """A 63-bit hash of the bodies' compiled bytecode and constants, and of the library's
    kernel and driver sources (:func:`vits_ref.config.sources_stamp`).

    The drivers close over it, so Numba's on-disk cache (keyed by the closure's contents)
    recompiles when a body is edited: one defined outside ``kernels/`` (a user's own
    potential or piece, by its bytecode), or any of the library's (by the sources stamp).
    """
    digest = hashlib.sha256(sources_stamp().to_bytes(8, "little"))
    for fn in bodies:
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        digest.update(code.co_code + repr(code.co_consts).encode() + repr(code.co_names).encode())
    return int.from_bytes(digest.digest()[:8], "little") >> 1


@kernel
def linear_scores(data, theta, X, out, scratch):
    """``out = X theta``: the ``predict`` of every model whose score is linear in theta."""
    gemv(X, theta, out)
