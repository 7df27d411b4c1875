"""Diffusion priors: the learned DDPM prior's training (:mod:`vits_ref.kernels.ddpm_mlp`)
and the reverse chains (:mod:`vits_ref.kernels.diffusion_chain`).

The DDPM prior's eps/vjp bodies run through the generic :func:`diffusion_eps` /
:func:`diffusion_vjp` drivers of the chains. One compiled chain driver per (chain, eps
bodies), cached in the process and on disk, the bodies' fingerprint in each closure.
``scratch_rows``: the prior's ``eps_scratch()`` tuple with a leading axis of one row per
sample (or run), so that the ``prange`` threads never share a buffer.
"""

import functools

import numpy as np
from numba import prange

from ...config import cpu_jit, sources_stamp
from ...kernels.ddpm_mlp import (
    adam_update,
    batch_loss_grads,
    fold_input_scaling,
    train_stage_epoch,
)
from ...kernels.diffusion_chain import (
    make_chain,
    make_diffts_linear_run,
    make_dps,
    make_laplace_glm,
    make_laplace_linear,
    make_reverse_mean,
)
from ...kernels.rows import index_rows
from ._forward import kernel_driver
from ._runs import over_runs

# ---- diffusion MLP: the learned DDPM prior's training
# one row per driver: name, the kernel, the docstring (the driver's arguments)
ddpm_batch_loss_grads = kernel_driver("ddpm_batch_loss_grads", batch_loss_grads, """\
``run(P, X, E, scr, G) -> loss``: one stage, one mini-batch
(:func:`vits_ref.kernels.ddpm_mlp.batch_loss_grads`).""")
ddpm_adam_update = kernel_driver("ddpm_adam_update", adam_update, """\
``run(P, G, M, V, k, lr, beta1, beta2, adam_eps)``: one stage's Adam step.""")
ddpm_fold_input_scaling = kernel_driver("ddpm_fold_input_scaling", fold_input_scaling, """\
``run(params, shift, inv_scale)``: fold the standardisation into ``W1``, ``b1``.""")


@functools.cache
def ddpm_train_epoch():
    """``run(params, m, v, step0, ca, cb, shift, inv_scale, s0, idx, noise, batch, lr,
    beta1, beta2, adam_eps, losses)``: one epoch of every stage, ``prange`` over stages.

    ``params``, ``m``, ``v``: tuples of the six stage-stacked arrays (leading axis T),
    updated in place; ``ca``, ``cb`` (T,) ``sqrt(abar_t)``, ``sqrt(1 - abar_t)``;
    ``shift``, ``inv_scale`` (T, d); ``s0`` (N, d); ``idx`` (T, N) int64 one permutation
    per stage; ``noise`` (T, N, d); ``losses`` (T,) receives each stage's mean loss
    (:func:`vits_ref.kernels.ddpm_mlp.train_stage_epoch`). Each stage is computed by one
    thread from its own pre-drawn numbers, so the result does not depend on the number of
    threads. The products are BLAS calls (``np.dot`` on (batch, h) blocks) inside each
    thread: set ``OPENBLAS_NUM_THREADS=1`` to keep BLAS from nesting its own threads.
    """
    stamp = sources_stamp()

    @cpu_jit(parallel=True)
    def run(params, m, v, step0, ca, cb, shift, inv_scale, s0, idx, noise, batch, lr,
            beta1, beta2, adam_eps, losses):
        _ = stamp
        W1, b1, W2, b2, W3, b3 = params
        T, d, h1 = W1.shape
        h2 = W2.shape[2]
        for k in prange(T):
            P = (W1[k], b1[k], W2[k], b2[k], W3[k], b3[k])
            M = (m[0][k], m[1][k], m[2][k], m[3][k], m[4][k], m[5][k])
            V = (v[0][k], v[1][k], v[2][k], v[3][k], v[4][k], v[5][k])
            G = (np.empty((d, h1)), np.empty(h1), np.empty((h1, h2)), np.empty(h2),
                 np.empty((h2, d)), np.empty(d))
            scr = (np.empty((batch, d)), np.empty((batch, d)), np.empty((batch, h1)),
                   np.empty((batch, h2)), np.empty((batch, d)), np.empty((batch, h1)),
                   np.empty((batch, h2)))
            losses[k] = train_stage_epoch(P, G, M, V, step0, ca[k], cb[k], shift[k],
                                          inv_scale[k], s0, idx[k], noise[k], batch, lr,
                                          beta1, beta2, adam_eps, scr)

    return run


# ---- diffusion chain


@functools.cache
def diffusion_eps(bodies):
    """``run(params, t, S, out, scratch)``: ``out[j] = eps_t(S[j])`` (serial)."""
    eps = bodies.eps
    fp = bodies.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(params, t, S, out, scratch):
        _ = fp
        for j in range(S.shape[0]):
            eps(params, t, S[j], out[j], scratch)

    return run


@functools.cache
def diffusion_vjp(bodies):
    """``run(params, t, S, V, out, scratch)``: ``out[j] = J_t(S[j])^T V[j]`` (serial)."""
    vjp = bodies.vjp
    fp = bodies.fingerprint

    @cpu_jit
    def run(params, t, S, V, out, scratch):
        _ = fp
        for j in range(S.shape[0]):
            vjp(params, t, S[j], V[j], out[j], scratch)

    return run


@functools.cache
def diffusion_reverse_mean(bodies):
    """``run(coef, params, t, s, out, scratch)``: ``out = mu_t(s)`` for one ``s``."""
    body = make_reverse_mean(bodies)
    fp = bodies.fingerprint

    @cpu_jit
    def run(coef, params, t, s, out, scratch):
        _ = fp
        e = np.empty(s.shape[0])
        body(coef, params, t, s, out, e, scratch)

    return run


@functools.cache
def diffusion_chain(bodies):
    """``run(coef, params, prec_chol, start_mean, start_chol, z, out, scratch_rows, ok)``:
    ``prange`` over the samples ``z`` (n, T + 1, d) -> ``out`` (n, d), ``ok`` (n,)
    (:func:`vits_ref.kernels.diffusion_chain.make_chain`)."""
    body = make_chain(bodies)
    fp = bodies.fingerprint

    @cpu_jit(parallel=True)
    def run(coef, params, prec_chol, start_mean, start_chol, z, out, scratch_rows, ok):
        _ = fp
        n, d = out.shape
        for j in prange(n):
            work = np.empty((3, d))
            ok[j] = body(coef, params, prec_chol, start_mean, start_chol, z[j], out[j], work,
                         index_rows(scratch_rows, j))

    return run


@functools.cache
def diffusion_laplace_linear(bodies):
    """``run(coef, params, prec, start_prec, start_b, G, h, w, z, out, scratch_rows, ok)``:
    ``prange`` over LaplaceDPS draws of the linear model
    (:func:`vits_ref.kernels.diffusion_chain.make_laplace_linear`)."""
    body = make_laplace_linear(bodies)
    fp = bodies.fingerprint

    @cpu_jit(parallel=True)
    def run(coef, params, prec, start_prec, start_b, G, h, w, z, out, scratch_rows, ok):
        _ = fp
        n, d = out.shape
        for j in prange(n):
            M, L = np.empty((d, d)), np.zeros((d, d))
            work = np.empty((4, d))
            ok[j] = body(coef, params, prec, start_prec, start_b, G, h, w, z[j], out[j], M, L,
                         work, index_rows(scratch_rows, j))

    return run


@functools.cache
def diffusion_laplace_glm(bodies, potential):
    """``run(coef, params, prec, start_mean, start_prec, start_b, data, tol, max_iter, z,
    out, scratch_rows, pscratch_rows, info)``: ``prange`` over LaplaceDPS draws of a GLM
    (:func:`vits_ref.kernels.diffusion_chain.make_laplace_glm`); ``info`` (n, 3) int64
    receives ``(failed_stage, not_converged, iterations)``; ``pscratch_rows`` the
    potential's scratch with one row per sample."""
    body = make_laplace_glm(bodies, potential)
    fp = bodies.fingerprint
    pfp = potential.fingerprint

    @cpu_jit(parallel=True)
    def run(coef, params, prec, start_mean, start_prec, start_b, data, tol, max_iter, z, out,
            scratch_rows, pscratch_rows, info):
        _ = fp
        _ = pfp
        n, d = out.shape
        for j in prange(n):
            nscr = (np.empty((d, d)), np.empty(d), np.empty((1, d)), np.empty((d, d)),
                    np.zeros((d, d)), np.empty((1, d)), np.empty(d), np.empty((1, d)))
            work = np.empty((3, d))
            failed, slow, iters = body(coef, params, prec, start_mean, start_prec, start_b,
                                       data, tol, max_iter, z[j], out[j], nscr, work,
                                       index_rows(scratch_rows, j),
                                       index_rows(pscratch_rows, j))
            info[j, 0] = failed
            info[j, 1] = slow
            info[j, 2] = iters

    return run


@functools.cache
def diffusion_dps(bodies):
    """``run(coef, params, start_mean, start_chol, G, h, syy, z, out, scratch_rows, ok)``:
    ``prange`` over DPS draws of the linear model
    (:func:`vits_ref.kernels.diffusion_chain.make_dps`)."""
    body = make_dps(bodies)
    fp = bodies.fingerprint

    @cpu_jit(parallel=True)
    def run(coef, params, start_mean, start_chol, G, h, syy, z, out, scratch_rows, ok):
        _ = fp
        n, d = out.shape
        for j in prange(n):
            work = np.empty((5, d))
            ok[j] = body(coef, params, start_mean, start_chol, G, h, syy, z[j], out[j], work,
                         index_rows(scratch_rows, j))

    return run


@functools.cache
def diffts_linear_runs(bodies):
    """``call(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
    arms, scratch_rows, status)``: independent linear DiffTS bandit runs
    (:func:`vits_ref.kernels.diffusion_chain.make_diffts_linear_run`), blocks of runs in
    threads over a serial compiled loop (:func:`._runs.over_runs`; ``call.serial``: a
    ``prange`` loop compiled the run's body into three more libraries). Runs on the leading
    axis: ``contexts`` (R, n, K, d), ``means``, ``rewards`` (R, n, K), ``z``
    (R, n, T + 1, d); ``regret`` (R, n), ``arms`` (R, n) int64, ``status`` (R,) int64,
    every array of ``scratch_rows``. Each run is computed by one thread from its own
    arrays, so the results depend neither on the number of threads nor on the blocks."""
    body = make_diffts_linear_run(bodies)
    fp = bodies.fingerprint

    @cpu_jit
    def run(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
            arms, scratch_rows, status):
        _ = fp
        R, n, K, d = contexts.shape
        for r in range(R):
            stats = (np.zeros((d, d)), np.zeros(d))
            theta, scores = np.empty(d), np.empty(K)
            M, L = np.empty((d, d)), np.zeros((d, d))
            work = np.empty((4, d))
            status[r] = body(coef, params, prec, start_prec, start_b, w, contexts[r], means[r],
                             rewards[r], z[r], regret[r], arms[r], stats, theta, scores, M, L,
                             work, index_rows(scratch_rows, r))

    # the runs on the leading axis of contexts ... status (scratch_rows: of each array)
    return over_runs(run, (6, 7, 8, 9, 10, 11, 12, 13))
