"""Every CPU driver of the library: the compiled entry points that call kernel bodies.

``kernels/`` holds bodies only (:mod:`vits_ref.kernels`); this module compiles them with
:func:`vits_ref.config.cpu_jit`. Steps that are generic over a potential or a bandit
piece are built per (step, potential) or per piece by the factories below, each cached
in the process (``functools.lru_cache``) and on disk by Numba (one entry per closure
contents). Every cached driver closes over the stamp of the kernel and driver sources
(:func:`vits_ref.config.sources_stamp`: through the bodies' ``fingerprint``, or as
``stamp``; module-level drivers are built by :func:`vits_ref.config.stamped`), so an edit
of a body in any file recompiles the drivers that inline it. Drivers allocate what the
bodies need as scratch when the caller does not keep it; engines that run many steps keep
their scratch (:func:`vits_scratch`).
"""

import functools

import numpy as np
from numba import prange

from ..config import cpu_jit, sources_stamp, stamped
from ..kernels.bandit import make_bandit_rounds, make_bandit_run
from ..kernels.langevin import make_langevin_steps
from ..kernels.linalg import chol_rank1_update
from ..kernels.lints import lints_draw
from ..kernels.linucb import linucb_scores as linucb_scores_body
from ..kernels.linucb import sherman_morrison as sherman_morrison_body
from ..kernels.mlp import mlp_jacobian
from ..kernels.newton import make_newton
from ..kernels.target import METHOD_LMC, lmc_block, vi_block
from ..kernels.vits import make_vits_steps

# --------------------------------------------------------------------------- potentials


@functools.cache
def grads_hessian(potential):
    """``run(data, thetas, want_hessian, G, H, scratch)``: the potential's gradients."""
    body = potential.grads_hessian
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(data, thetas, want_hessian, G, H, scratch):
        _ = fp
        body(data, thetas, want_hessian, G, H, scratch)

    return run


@functools.cache
def value(potential):
    """``run(data, theta, scratch) -> U(theta)``."""
    body = potential.value
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(data, theta, scratch):
        _ = fp
        return body(data, theta, scratch)

    return run


@functools.cache
def predict(potential):
    """``run(data, theta, X, out, scratch)``: the arms' scores."""
    body = potential.predict
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(data, theta, X, out, scratch):
        _ = fp
        body(data, theta, X, out, scratch)

    return run


# --------------------------------------------------------------------------- steps


def vits_scratch(d, n_mc):
    """The VITS step's scratch ``(mats (6, d, d), work2d (d, 2d), Z, T, G (M, d), vecs (2, d))``."""
    return (np.empty((6, d, d)), np.empty((d, 2 * d)), np.empty((n_mc, d)),
            np.empty((n_mc, d)), np.empty((n_mc, d)), np.zeros((2, d)))


@functools.cache
def vits_steps(potential):
    """``run(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr) -> ok``.

    See :func:`vits_ref.kernels.vits.make_vits_steps`; ``scr`` from :func:`vits_scratch`.
    """
    body = make_vits_steps(potential)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr):
        _ = fp
        return body(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr)

    return run


@functools.cache
def langevin_steps(potential):
    """``run(theta, data, eps, h, g, H, pscr)``: Langevin steps in place."""
    body = make_langevin_steps(potential)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(theta, data, eps, h, g, H, pscr):
        _ = fp
        body(theta, data, eps, h, g, H, pscr)

    return run


@functools.cache
def newton(potential):
    """``run(data, P0, b0, theta, tol, max_iter, H, L, scratch) -> (status, iterations)``.

    ``theta`` (d,) is updated in place; see :func:`vits_ref.kernels.newton.make_newton`.
    """
    body = make_newton(potential)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(data, P0, b0, theta, tol, max_iter, H, L, scratch):
        _ = fp
        d = theta.shape[0]
        theta2 = np.empty((1, d))
        theta2[0] = theta
        g2 = np.empty((1, d))
        trial2 = np.empty((1, d))
        step = np.empty(d)
        status, it = body(data, P0, b0, theta2, tol, max_iter, H, L, g2, step, trial2,
                          scratch)
        theta[:] = theta2[0]
        return status, it

    return run


# --------------------------------------------------------------------------- LinTS


@stamped
def chol_update_rows(stamp):
    @cpu_jit
    def chol_update_rows(L, X):
        """Rank-one updates of the lower factor ``L`` with every row of ``X``, in place."""
        _ = stamp
        work = np.empty(L.shape[0])
        for n in range(X.shape[0]):
            chol_rank1_update(L, X[n], work)

    return chol_update_rows


@stamped
def lints_draws(stamp):
    @cpu_jit
    def lints_draws(L, b, eta, Z, out):
        """Rows of ``out`` are exact posterior draws built from the rows of ``Z``."""
        _ = stamp
        for n in range(Z.shape[0]):
            lints_draw(L, b, eta, Z[n], out[n])

    return lints_draws


# --------------------------------------------------------------------------- bandit runs


@functools.cache
def bandit_run(piece):
    """``run(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
    regret, arms, kl_out) -> status``: one run (allocates its state buffer)."""
    body = make_bandit_run(piece)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies
    size = piece.state_size

    @cpu_jit
    def run(params, n_state, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out):
        _ = fp
        buf = np.empty(n_state)
        return body(params, buf, contexts, means, rewards, init_noise, sel_noise, step_noise,
                    kl_rounds, regret, arms, kl_out)

    def call(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out):
        T, K, d = contexts.shape
        return run(params, size(d, K, step_noise.shape[2], T), contexts, means, rewards,
                   init_noise, sel_noise, step_noise, kl_rounds, regret, arms, kl_out)

    return call


@functools.cache
def bandit_runs(piece):
    """``run(params, contexts, ..., kl_out, status)``: ``prange`` over independent runs.

    Every per-run array has the runs on its leading axis; each run is computed by one
    thread from its own arrays, so the results do not depend on the number of threads.
    """
    body = make_bandit_run(piece)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies
    size = piece.state_size

    @cpu_jit(parallel=True)
    def run(params, bufs, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status):
        _ = fp
        for r in prange(contexts.shape[0]):
            status[r] = body(params, bufs[r], contexts[r], means[r], rewards[r], init_noise[r],
                             sel_noise[r], step_noise[r], kl_rounds, regret[r], arms[r],
                             kl_out[r])

    def call(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out, status):
        R, T, K, d = contexts.shape
        bufs = np.empty((R, size(d, K, step_noise.shape[3], T)))
        run(params, bufs, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status)

    return call


@functools.cache
def bandit_rounds(piece):
    """``run(params, bufs, t0, contexts, ..., kl_out, status)``: rounds ``[t0, t0 + n)`` of
    independent runs, ``prange`` over the runs (:func:`vits_ref.kernels.bandit.make_bandit_rounds`).

    ``bufs`` (R, ``piece.state_size(d, K, M, T)``) are the runs' state buffers, kept by the
    caller between calls (initialised by the call with ``t0 == 0``); ``contexts`` (R, n, K,
    d), ``means``, ``rewards`` (R, n, K), ``sel_noise`` (R, n, ·), ``step_noise`` (R, n, S,
    M, d) the chunk's rows; ``init_noise`` (R, ·); ``regret``, ``arms`` (R, T) and
    ``kl_out`` (R, n_kl) the whole runs' outputs, written at the global rounds; ``status``
    (R,) set to each run's status for the chunk. Each run is computed by one thread from its
    own arrays, so the results depend neither on the number of threads nor on the chunks.
    """
    body = make_bandit_rounds(piece)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit(parallel=True)
    def run(params, bufs, t0, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status):
        _ = fp
        for r in prange(contexts.shape[0]):
            status[r] = body(params, bufs[r], t0, contexts[r], means[r], rewards[r],
                             init_noise[r], sel_noise[r], step_noise[r], kl_rounds, regret[r],
                             arms[r], kl_out[r])

    return run


# --------------------------------------------------------------------------- Gaussian targets


@stamped
def trace_one(stamp):
    @cpu_jit
    def trace_one(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl, seed, record):
        """KL after each of up to ``n_steps`` steps of one method from the standard start.

        VITS starts at ``N(0, I)`` (``B = C = I``), LMC at ``theta = 0``. Stops early once the
        KL is ``<= eps_kl`` (pass 0 to run all steps). Normals come from Numba's generator
        seeded with ``seed`` in blocks of 1000 steps (deterministic per call, whatever the
        thread). Returns the number of steps recorded.
        """
        _ = stamp
        np.random.seed(seed)  # noqa: NPY002 - Numba's per-thread generator, seeded per run
        d = P.shape[0]
        M = n_mc if method != METHOD_LMC else 1
        block = 1000
        mu = np.zeros(d)
        B = np.eye(d)
        C = np.eye(d)
        scr = (np.empty((6, d, d)), np.empty((d, 2 * d)), np.empty((M, d)), np.empty((M, d)),
               np.empty((M, d)), np.zeros((2, d)))
        kscr = (np.empty((d, d)), np.empty((d, d)), np.empty((d, d)), np.empty(d))
        grad = np.empty(d)
        moments = (np.zeros(d), np.zeros((d, d)), np.empty((d, d)))
        done = 0
        while done < n_steps:
            n = min(block, n_steps - done)
            eps = np.random.standard_normal((n, M, d))  # noqa: NPY002
            rec = record[done:done + n]
            if method == METHOD_LMC:
                got = lmc_block(mu, P, Pm, h, eps, done, burn_in, moments, rec, grad, kscr)
            else:
                got = vi_block(method, symmetrize, mu, B, C, P, Pm, h, eps, rec, scr, kscr)
            if got < n:
                return done + got
            if eps_kl > 0.0:
                for s in range(n):
                    if rec[s] <= eps_kl:
                        return done + s + 1
            done += n
        return done

    return trace_one


@stamped
def trace_many(stamp):
    @cpu_jit(parallel=True)
    def trace_many(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl, seeds, records,
                   counts):
        """``prange`` over seeds (one run per iteration; result independent of threads)."""
        _ = stamp
        for r in prange(seeds.shape[0]):
            counts[r] = trace_one(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl,
                                  seeds[r], records[r])

    return trace_many


# --------------------------------------------------------------------------- LinUCB


@stamped
def linucb_scores(stamp):
    @cpu_jit
    def linucb_scores(Vinv, b, alpha, X, out):
        """The arms' upper confidence bounds (:func:`vits_ref.kernels.linucb.linucb_scores`)."""
        _ = stamp
        theta = np.empty(b.shape[0])
        VX = np.empty(X.shape)
        linucb_scores_body(Vinv, b, alpha, X, theta, VX, out)

    return linucb_scores


@stamped
def sherman_morrison(stamp):
    @cpu_jit
    def sherman_morrison(Vinv, x):
        """``inv(V) <- inv(V + x x^T)`` in place."""
        _ = stamp
        sherman_morrison_body(Vinv, x, np.empty(x.shape[0]))

    return sherman_morrison


# --------------------------------------------------------------------------- MLP


@stamped
def mlp_jacobian_rows(stamp):
    @cpu_jit
    def mlp_jacobian_rows(data, theta, X, out, J, scratch):
        """The network's Jacobian ``J`` (n, d) and outputs at the rows of ``X`` (tests,
        teaching)."""
        _ = stamp
        mlp_jacobian(data, theta, X, out, J, scratch)

    return mlp_jacobian_rows


# --------------------------------------------------------------------------- Rényi VI
# (kernels imported inside the factories: this section is appended independently of the
# module's import block)


def renyi_scratch(d, n_mc):
    """The Rényi steps' scratch ``(L, T, G, logw, wts, D, grad, H)``
    (:mod:`vits_ref.kernels.renyi`): (d, d), (M, d), (M, d), (M,), (M,), (d, d), (d + 1, d),
    (d, d)."""
    return (np.zeros((d, d)), np.empty((n_mc, d)), np.empty((n_mc, d)), np.empty(n_mc),
            np.empty(n_mc), np.empty((d, d)), np.zeros((d + 1, d)), np.zeros((d, d)))


@functools.cache
def renyi_steps(potential):
    """``run(alpha, P, data, eps, lr, beta1, beta2, adam_eps, adam, scr, pscr, trace) -> ok``.

    Adam steps on the Monte Carlo Rényi bound (see
    :func:`vits_ref.kernels.renyi.make_renyi_steps`); ``scr`` from :func:`renyi_scratch`.
    """
    from ..kernels.renyi import make_renyi_steps

    body = make_renyi_steps(potential)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(alpha, P, data, eps, lr, beta1, beta2, adam_eps, adam, scr, pscr, trace):
        _ = fp
        return body(alpha, P, data, eps, lr, beta1, beta2, adam_eps, adam, scr, pscr, trace)

    return run


@functools.cache
def renyi_grad(potential):
    """``run(alpha, P, data, eps, scr, pscr) -> (bound, ess)``: one Monte Carlo Rényi bound
    and its gradient (into ``scr[6]``), see :func:`vits_ref.kernels.renyi.make_renyi_grad`."""
    from ..kernels.renyi import make_renyi_grad

    body = make_renyi_grad(potential)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(alpha, P, data, eps, scr, pscr):
        _ = fp
        return body(alpha, P, data, eps, scr, pscr)

    return run


# --------------------------------------------------------------------------- VTS: CAVI
# (kernels imported inside the factories: this section is appended independently of the
# module's import block). Each factory compiles once per process (and is cached on disk);
# the drivers allocate the bodies' scratch
# ``(dv (4, d), kv (4, K), M (d, d), kd (K, d), kdd (K, d, d))``.


@functools.cache
def cavi_fit():
    """``run(X, y, n, prior, fac, st, resp, tol, max_iter, trace) -> (iterations, elbo, ok)``:
    CAVI on the first ``n`` rows from the factors in ``fac``
    (:func:`vits_ref.kernels.cavi.cavi_iterate`)."""
    from ..kernels.cavi import cavi_iterate

    stamp = sources_stamp()

    @cpu_jit
    def run(X, y, n, prior, fac, st, resp, tol, max_iter, trace):
        _ = stamp
        d, K = X.shape[1], fac[0].shape[0]
        scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
               np.zeros((K, d, d)))
        W = np.empty((n, d))
        return cavi_iterate(X, y, n, prior, fac, st, resp, W, tol, max_iter, trace, scr)

    return run


@functools.cache
def cavi_init():
    """``run(prior, fac, st)``: factors at the prior, zero statistics."""
    from ..kernels.cavi import init_factors

    stamp = sources_stamp()

    @cpu_jit
    def run(prior, fac, st):
        _ = stamp
        init_factors(prior, fac, st)

    return run


@functools.cache
def vts_update():
    """``run(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace) -> (iterations,
    elbo, ok)``: append ``(x, r)`` at row ``n`` and refit the arm (``W``: scratch as large
    as ``X``; :func:`vits_ref.kernels.cavi.arm_update`)."""
    from ..kernels.cavi import arm_update

    stamp = sources_stamp()

    @cpu_jit
    def run(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace):
        _ = stamp
        d, K = X.shape[1], fac[0].shape[0]
        scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
               np.zeros((K, d, d)))
        return arm_update(X, y, resp, W, n, x, r, prior, fac, st, tol, max_iter, trace, scr)

    return run


@functools.cache
def vts_select():
    """``run(contexts, facs, scoring, sample_params, rng, scores, expected) -> arm``: every
    arm's Thompson score (:func:`vits_ref.kernels.cavi.select`, the xoroshiro128+ state
    ``rng`` advanced in place) and, in ``expected``, every arm's posterior-mean expected
    reward (:func:`vits_ref.kernels.cavi.expected_reward`)."""
    from ..kernels.cavi import expected_reward, select

    stamp = sources_stamp()

    @cpu_jit
    def run(contexts, facs, scoring, sample_params, rng, scores, expected):
        _ = stamp
        d, K = contexts.shape[1], facs[0].shape[1]
        scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
               np.zeros((K, d, d)))
        for a in range(contexts.shape[0]):
            expected[a] = expected_reward(contexts[a], (facs[0][a], facs[1][a], facs[2][a],
                                                        facs[3][a], facs[4][a]))
        return select(contexts, facs, scoring, sample_params, rng, scores, scr)

    return run


@functools.cache
def vts_runs():
    """``run(params, prior, contexts, means, rewards, rngs, regret, arms, sqerr, iters,
    status)``: ``prange`` over independent VTS runs (:func:`vits_ref.kernels.cavi.vts_run`).

    Runs on the leading axis of every per-run array (``contexts`` (R, T, A, d), ``means``
    and ``rewards`` (R, T, A), ``rngs`` (R, 2) uint64); each run allocates its own state
    (histories of ``T`` rows per arm) and is computed by one thread, so the results do not
    depend on the number of threads.
    """
    from ..kernels.cavi import vts_run

    stamp = sources_stamp()

    @cpu_jit(parallel=True)
    def run(params, prior, contexts, means, rewards, rngs, regret, arms, sqerr, iters,
            status):
        _ = stamp
        R, T, A, d = contexts.shape
        K = prior[0].shape[0]
        for r in prange(R):
            hist = (np.empty((A, T, d)), np.empty((A, T)), np.empty((A, T, K)),
                    np.empty((A, T, d)))
            counts = np.zeros(A, dtype=np.int64)
            facs = (np.empty((A, K)), np.empty((A, K, d)), np.empty((A, K, d, d)),
                    np.empty((A, K)), np.empty((A, K)))
            sts = (np.empty((A, K)), np.empty((A, K, d)), np.empty((A, K, d, d)),
                   np.empty((A, K)))
            work = (np.empty(max(params[3], 1)), np.empty(A))
            scr = (np.zeros((4, d)), np.zeros((4, K)), np.zeros((d, d)), np.zeros((K, d)),
                   np.zeros((K, d, d)))
            status[r] = vts_run(params, prior, contexts[r], means[r], rewards[r], rngs[r],
                                hist, counts, facs, sts, work, scr, regret[r], arms[r],
                                sqerr[r], iters[r])

    return run


# ---- diffusion MLP
# The learned DDPM prior's training (vits_ref.kernels.ddpm_mlp; kernels imported inside the
# factories: this section is appended independently of the others). Its eps/vjp bodies run
# through the generic diffusion_eps / diffusion_vjp drivers of the chain section.


@functools.cache
def ddpm_batch_loss_grads():
    """``run(P, X, E, scr, G) -> loss``: one stage, one mini-batch
    (:func:`vits_ref.kernels.ddpm_mlp.batch_loss_grads`)."""
    from ..kernels.ddpm_mlp import batch_loss_grads

    stamp = sources_stamp()

    @cpu_jit
    def run(P, X, E, scr, G):
        _ = stamp
        return batch_loss_grads(P, X, E, scr, G)

    return run


@functools.cache
def ddpm_adam_update():
    """``run(P, G, M, V, k, lr, beta1, beta2, adam_eps)``: one stage's Adam step."""
    from ..kernels.ddpm_mlp import adam_update

    stamp = sources_stamp()

    @cpu_jit
    def run(P, G, M, V, k, lr, beta1, beta2, adam_eps):
        _ = stamp
        adam_update(P, G, M, V, k, lr, beta1, beta2, adam_eps)

    return run


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
    from ..kernels.ddpm_mlp import train_stage_epoch

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


@functools.cache
def ddpm_fold_input_scaling():
    """``run(params, shift, inv_scale)``: fold the standardisation into ``W1``, ``b1``."""
    from ..kernels.ddpm_mlp import fold_input_scaling

    stamp = sources_stamp()

    @cpu_jit
    def run(params, shift, inv_scale):
        _ = stamp
        fold_input_scaling(params, shift, inv_scale)

    return run


# ---- diffusion chain
# Reverse chains of a diffusion prior (:mod:`vits_ref.kernels.diffusion_chain`). Kernels
# imported inside the factories (this section is appended independently of the module's
# import block); one compiled driver per (chain, eps bodies), cached in the process and on
# disk, the bodies' fingerprint in each closure. ``scratch_rows``: the prior's
# ``eps_scratch()`` tuple with a leading axis of one row per sample (or run), so that the
# ``prange`` threads never share a buffer.


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
    from ..kernels.diffusion_chain import make_reverse_mean

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
    from ..kernels.diffusion_chain import make_chain
    from ..kernels.rows import index_rows

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
    from ..kernels.diffusion_chain import make_laplace_linear
    from ..kernels.rows import index_rows

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
    from ..kernels.diffusion_chain import make_laplace_glm
    from ..kernels.rows import index_rows

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
    from ..kernels.diffusion_chain import make_dps
    from ..kernels.rows import index_rows

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
    """``run(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
    arms, scratch_rows, status)``: ``prange`` over independent linear DiffTS bandit runs
    (:func:`vits_ref.kernels.diffusion_chain.make_diffts_linear_run`). Runs on the leading
    axis: ``contexts`` (R, n, K, d), ``means``, ``rewards`` (R, n, K), ``z``
    (R, n, T + 1, d); ``regret`` (R, n), ``arms`` (R, n) int64, ``status`` (R,) int64. Each
    run is computed by one thread, so the results do not depend on the number of threads."""
    from ..kernels.diffusion_chain import make_diffts_linear_run
    from ..kernels.rows import index_rows

    body = make_diffts_linear_run(bodies)
    fp = bodies.fingerprint

    @cpu_jit(parallel=True)
    def run(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
            arms, scratch_rows, status):
        _ = fp
        R, n, K, d = contexts.shape
        for r in prange(R):
            stats = (np.zeros((d, d)), np.zeros(d))
            theta, scores = np.empty(d), np.empty(K)
            M, L = np.empty((d, d)), np.zeros((d, d))
            work = np.empty((4, d))
            status[r] = body(coef, params, prec, start_prec, start_b, w, contexts[r], means[r],
                             rewards[r], z[r], regret[r], arms[r], stats, theta, scores, M, L,
                             work, index_rows(scratch_rows, r))

    return run


# --------------------------------------------------------------------------- SVGD
# (kernels imported inside the factories: this section is appended independently of the
# module's import block). The SVGD direction (vits_ref.kernels.svgd) in two forms:
# "loop", the row bodies in a prange over particles (distances, exponentials and the
# weighted sum of one particle per iteration); "gemm", the BLAS form: the Gram matrix
# X X^T and the product K [Y | 1] by np.dot (BLAS beats the loops on the CPU once n d is
# large, see vits_ref.inference.svgd.choose_form) and the n^2 exponentials by NumPy's vectorised
# np.exp (about 5x faster than the compiled exp_nonpos loop on AVX-512: NumPy's SIMD exp,
# which Numba has no way to emit without SVML), called from an object-mode block (about
# 2 us); the CUDA path keeps the compiled bodies. Numba warns at compile and cache load
# that the object-mode block cannot run in parallel: it runs once per step outside the
# prange, by design, so that warning (this module's only) is silenced here.

import warnings as _warnings  # noqa: E402

from numba import objmode as _objmode  # noqa: E402
from numba.core.errors import NumbaWarning as _NumbaWarning  # noqa: E402

_warnings.filterwarnings("ignore", message="Code running in object mode won't allow parallel",
                         category=_NumbaWarning)


def svgd_scratch(n, d):
    """The SVGD direction's scratch ``(XT (d, n), D (n, n), w (m,), Y (n, d), Y1 (n, d + 1),
    acc (n, d + 1), sq (n,))``, ``m = max(1, n (n - 1) / 2)`` (the median's work). An
    engine keeps one across its steps."""
    m = max(1, n * (n - 1) // 2)
    return (np.empty((d, n)), np.empty((n, n)), np.empty(m), np.empty((n, d)),
            np.empty((n, d + 1)), np.empty((n, d + 1)), np.empty(n))


@functools.cache
def svgd_phi(parallel=False):
    """``run(X, G, h, repulsion, gemm, out, scr) -> h``: the SVGD direction into ``out``.

    ``G``: gradients of ``log p`` at the particles ``X`` (n, d); ``h > 0`` a fixed bandwidth,
    ``h <= 0`` the median heuristic; ``gemm``: the BLAS form; ``scr`` from
    :func:`svgd_scratch`. Returns the bandwidth used. Each particle's row is computed by
    one iteration of a ``prange`` (the median is serial; BLAS and ``np.exp`` compute each
    entry the same way whatever Numba's thread count), so the result does not depend on
    the number of Numba threads. ``parallel=False`` compiles the same code with the
    ``prange`` loops serial: each parallel region costs a launch (about 2 us on an idle
    machine, milliseconds on a loaded one), which small problems do not repay
    (:func:`vits_ref.inference.svgd.use_parallel`).

    The BLAS form, per step: ``sq_i = |x_i|^2``; ``D = X X^T`` (BLAS); the strict lower
    triangle of the squared distances (only when the median needs it) and the median by
    sampling selection (:func:`vits_ref.kernels.svgd.median_sqdist`); ``D <- -dist^2 / h``
    row by row; ``D <- exp(D)`` (NumPy); ``acc = D [G - c X | 1]`` (one BLAS product whose
    last column is the kernel's row sums); ``out_i = (acc_i + c S_i x_i) / n``.
    """
    from ..kernels.svgd import (
        kernel_row,
        median_bandwidth_from,
        median_sqdist,
        neg_scaled_sqdist_row,
        phi_finish_sums_row,
        phi_row,
        shifted_grads,
        shifted_grads_ones,
        sqdist_from_gram_lower,
        sqdist_row,
        transpose_into,
    )

    stamp = sources_stamp()

    @cpu_jit(parallel=parallel)
    def run(X, G, h, repulsion, gemm, out, scr):
        _ = stamp
        XT, D, w, Y, Y1, acc, sq = scr
        n, d = X.shape
        median = h <= 0.0
        if gemm:
            for i in prange(n):
                s = 0.0
                for k in range(d):
                    s += X[i, k] * X[i, k]
                sq[i] = s
            np.dot(X, X.T, D)  # BLAS: the Gram matrix
            if median:
                for i in prange(n):
                    sqdist_from_gram_lower(sq, i, D[i])
        else:
            transpose_into(X, XT)
            if median:
                for i in prange(n):
                    sqdist_row(X, XT, i, D[i])
        if median:
            h = median_bandwidth_from(median_sqdist(D, w), n)
        inv_h = 1.0 / h
        c = 2.0 * repulsion * inv_h
        if gemm:
            for i in prange(n):
                shifted_grads_ones(X, G, c, Y1, i)
                neg_scaled_sqdist_row(sq, i, D[i], inv_h, median)
            with _objmode():
                np.exp(D, D)  # NumPy's SIMD exp: the kernel matrix K
            np.dot(D, Y1, acc)  # BLAS: K [G - c X | 1]
            for i in prange(n):
                phi_finish_sums_row(acc[i], X, i, c, out[i])
        else:
            for i in prange(n):
                shifted_grads(X, G, c, Y, i)
            for i in prange(n):
                if not median:
                    sqdist_row(X, XT, i, D[i])
                s = kernel_row(D[i], inv_h)
                phi_row(D[i], Y, X, i, c, s, out[i])
        return h

    return run


@functools.cache
def svgd_steps(potential, parallel=False):
    """``run(X, data, n_steps, h, repulsion, gemm, step, alpha, fudge, t0, hist, G, H, phi,
    scr, pscr, trace) -> ok``: SVGD ascent steps on ``U``'s particles ``X`` in place.

    Each step: ``G = grad U`` at every particle (the potential's ``grads_hessian``, one call
    for all rows), ``g = -G``, the direction :func:`svgd_phi` (fixed ``h > 0`` or the
    median heuristic) into ``phi``, then :func:`vits_ref.kernels.svgd.adagrad_row` (``alpha
    < 0``: plain ascent) with ``t0`` the number of steps taken before (``t0 = 0``: the
    first step initialises ``hist``). ``trace[s]`` receives the bandwidth of step ``s``.
    Returns False (leaving ``X`` partly updated) as soon as a direction is non-finite.
    ``parallel``: as in :func:`svgd_phi`.
    """
    from ..kernels.linalg import all_finite_mat
    from ..kernels.svgd import adagrad_row

    grads = potential.grads_hessian
    phi_run = svgd_phi(parallel)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit(parallel=parallel)
    def run(X, data, n_steps, h, repulsion, gemm, step, alpha, fudge, t0, hist, G, H, phi,
            scr, pscr, trace):
        _ = fp
        n = X.shape[0]
        for s in range(n_steps):
            grads(data, X, False, G, H, pscr)
            for i in prange(n):
                for k in range(X.shape[1]):
                    G[i, k] = -G[i, k]
            trace[s] = phi_run(X, G, h, repulsion, gemm, phi, scr)
            if not all_finite_mat(phi):
                return False
            first = t0 + s == 0
            for i in prange(n):
                adagrad_row(X, phi, hist, i, step, alpha, fudge, first)
        return True

    return run


# --------------------------------------------------------------------------- streamed bandit runs

from ..kernels.bandit_streams import make_bandit_streams  # noqa: E402
from ..kernels.potential import fingerprint as _fingerprint  # noqa: E402


@functools.cache
def bandit_streams(piece, env_round):
    """``run(params, env, keys, dims, bufs, scratch, t0, n, kl_rounds, regret, arms, kl_out,
    status)``: rounds ``[t0, t0 + n)`` of independent runs fed by counter-based streams,
    ``prange`` over the runs (:func:`vits_ref.kernels.bandit_streams.make_bandit_streams`).

    ``keys`` (R, 2) uint64 are the runs' keys, ``bufs`` (R, state size) and ``scratch``
    (R, :func:`~vits_ref.kernels.bandit_streams.scratch_size`) their state and scratch
    (kept by the caller between calls), ``regret``, ``arms`` (R, T) and ``kl_out`` (R,
    n_kl) the outputs, ``status`` (R,) each run's status. Each run is computed by one
    thread from its own key, so the results depend neither on the threads nor on the
    chunks of rounds.
    """
    body = make_bandit_streams(piece, env_round)
    fp = (piece.fingerprint, _fingerprint(env_round))  # Numba's cache key follows the bodies

    @cpu_jit(parallel=True)
    def run(params, env, keys, dims, bufs, scratch, t0, n, kl_rounds, regret, arms, kl_out,
            status):
        _ = fp
        for r in prange(keys.shape[0]):
            status[r] = body(params, env, keys[r], dims, bufs[r], scratch[r], t0, n,
                             kl_rounds, regret[r], arms[r], kl_out[r])

    return run


# --------------------------------------------------------------------------- Philox fills

from ..kernels import philox as _philox  # noqa: E402
from ..kernels.bandit_streams import STREAM_SELECT as _STREAM_SELECT  # noqa: E402
from ..kernels.bandit_streams import STREAM_STEP as _STREAM_STEP  # noqa: E402
from ..kernels.views import take as _take  # noqa: E402
from ..kernels.views import take2 as _take2  # noqa: E402

FILL_UNIFORMS, FILL_NORMALS, FILL_BOUNDED, NORMALS_BY_ELEMENT = 0, 1, 2, 3


@stamped
def philox_words(stamp):
    @cpu_jit
    def philox_words(keys, ctrs, out):
        """``out[n]`` (4,) = Philox4x64-10 of counter ``ctrs[n]`` (4,) under key ``keys[n]``
        (2,), all uint64 (:func:`vits_ref.kernels.philox.philox4x64`)."""
        _ = stamp
        for n in range(keys.shape[0]):
            w0, w1, w2, w3 = _philox.philox4x64(ctrs[n, 0], ctrs[n, 1], ctrs[n, 2], ctrs[n, 3],
                                                keys[n, 0], keys[n, 1])
            out[n, 0], out[n, 1], out[n, 2], out[n, 3] = w0, w1, w2, w3

    return philox_words


@stamped
def philox_fills(stamp):
    @cpu_jit
    def philox_fills(kind, keys, c0, c1, m, out):
        """Row ``r`` of ``out`` (R, n): a fill (``kind``: :data:`FILL_UNIFORMS`,
        :data:`FILL_NORMALS`, :data:`FILL_BOUNDED` in ``[0, m)``, or
        :data:`NORMALS_BY_ELEMENT`: ``normal_at`` element by element) under key ``keys[r]`` at
        counter ``(c0 + r, c1, ·, 0)`` (a serial loop: compiled in a fraction of a parallel
        one's time; the fills' thread invariance is tested on the cooperative twins and the
        streamed loop's ``prange``)."""
        _ = stamp
        for r in range(out.shape[0]):
            k0, k1 = keys[r, 0], keys[r, 1]
            row = out[r]
            if kind == FILL_UNIFORMS:
                _philox.fill_uniforms(k0, k1, c0 + r, c1, row)
            elif kind == FILL_NORMALS:
                _philox.fill_normals(k0, k1, c0 + r, c1, row)
            elif kind == FILL_BOUNDED:
                _philox.fill_bounded(k0, k1, c0 + r, c1, m, row)
            else:
                for i in range(row.shape[0]):
                    row[i] = _philox.normal_at(k0, k1, c0 + r, c1, i)

    return philox_fills


@functools.cache
def stream_draws(env_round):
    """``run(env, keys, dims, scratch, T)``: rounds ``0 .. T - 1`` of each run's
    environment (``env_round``) and normal selection and step noise generated into its
    scratch, as the streamed loop generates them, without the policy (the benchmark's
    drawing cost, :mod:`vits_ref._bench.streams`)."""
    fp = _fingerprint(env_round)

    @cpu_jit
    def run(env, keys, dims, scratch, T):
        _ = fp
        d, K, n_init, n_sel, S, M = dims
        for r in range(keys.shape[0]):
            k0, k1 = keys[r, 0], keys[r, 1]
            buf = scratch[r]
            X, o = _take2(buf, 0, K, d)
            x_flat, _o = _take(buf, 0, K * d)
            means, o = _take(buf, o, K)
            rewards, o = _take(buf, o, K)
            sel, o = _take(buf, o, n_sel)
            steps, o = _take(buf, o, S * M * d)
            for t in range(T):
                env_round(env, k0, k1, t, X, x_flat, means, rewards)
                _philox.fill_normals(k0, k1, t, _STREAM_SELECT, sel)
                _philox.fill_normals(k0, k1, t, _STREAM_STEP, steps)

    return run
