"""Every CUDA driver of the library: the same kernel bodies as :mod:`.cpu`, on a GPU.

Imported lazily (it imports ``numba.cuda``, from the optional ``numba-cuda`` extra; see
:func:`vits_ref.config.check_cuda_stack` for the numpy pin it needs). Each launcher runs
independent problems one per thread with a grid-stride loop: the fused bandit loop over
runs, and the VITS, Langevin and Newton steps over a batch of states that share one
potential's ``data``. The bodies are those the CPU drivers compile, so the results agree
with :mod:`.cpu` to rounding (bit for bit where no BLAS call is involved: on CUDA the
products are the loops of :mod:`vits_ref.kernels.linalg`). Tests run them on Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) and on a real GPU when one is present.

One thread per problem is right for O(d^2) work such as a LinTS round; the VITS round's
serial chain of d x d products wants a block per run (:mod:`vits_ref.drivers.cuda_coop`).

Every launcher takes and returns host NumPy arrays (it copies to and from the device
explicitly) and accepts ``threads_per_block``.
"""

import functools

import numpy as np

from ..config import check_cuda_stack, cuda_jit
from ..kernels.bandit import make_bandit_rounds, make_bandit_run
from ..kernels.langevin import make_langevin_steps
from ..kernels.newton import make_newton
from ..kernels.rows import index_rows
from ..kernels.vits import make_vits_steps

check_cuda_stack()

from numba import cuda  # noqa: E402 (after the version guard)

THREADS_PER_BLOCK = 64


def _grid(n, threads_per_block):
    return (max(1, -(-n // threads_per_block)), threads_per_block)


def _to_device(arrays):
    return tuple(cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                 for a in arrays)


def _device_tuple(t):
    """A tuple argument (``data``, scratch) with its arrays on the device."""
    if isinstance(t, tuple):
        return tuple(_device_tuple(x) for x in t)
    if isinstance(t, np.ndarray):
        return cuda.to_device(np.ascontiguousarray(t))
    return t


# --------------------------------------------------------------------------- bandit runs


@functools.cache
def _bandit_kernel(piece):
    body = make_bandit_run(piece)

    @cuda_jit
    def kernel(params, bufs, contexts, means, rewards, init_noise, sel_noise, step_noise,
               kl_rounds, regret, arms, kl_out, status):
        r = cuda.grid(1)
        while r < contexts.shape[0]:
            status[r] = body(params, bufs[r], contexts[r], means[r], rewards[r],
                             init_noise[r], sel_noise[r], step_noise[r], kl_rounds, regret[r],
                             arms[r], kl_out[r])
            r += cuda.gridsize(1)

    return kernel


def bandit_runs(piece, params, contexts, means, rewards, init_noise, sel_noise, step_noise,
                kl_rounds, threads_per_block=THREADS_PER_BLOCK):
    """Many independent runs of the fused loop, one per thread.

    Same arguments and meaning as :func:`vits_ref.drivers.cpu.bandit_runs` (runs on the
    leading axis). Returns ``(regret (R, T), arms (R, T), kl (R, n_kl), status (R,))``.
    """
    R, T, K, d = contexts.shape
    n_state = piece.state_size(d, K, step_noise.shape[3], T)
    bufs = cuda.device_array((R, n_state))
    regret = cuda.device_array((R, T))
    arms = cuda.device_array((R, T), dtype=np.int64)
    kl = cuda.to_device(np.zeros((R, len(kl_rounds))))
    status = cuda.device_array(R, dtype=np.int64)
    args = _to_device((contexts, means, rewards, init_noise, sel_noise, step_noise,
                       np.asarray(kl_rounds, dtype=np.int64)))
    _bandit_kernel(piece)[_grid(R, threads_per_block)](params, bufs, *args, regret, arms, kl,
                                                        status)
    return (regret.copy_to_host(), arms.copy_to_host(), kl.copy_to_host(),
            status.copy_to_host())


def run_fused(spec, realisations, noises, kl_rounds, threads_per_block=THREADS_PER_BLOCK):
    """A policy's fused runs on the GPU from its :class:`~vits_ref.drivers.fused.FusedSpec`.

    ``realisations``: the runs' :class:`~vits_ref.envs.Realisation`; ``noises``: their
    ``spec.draw(...)`` triples. Returns what :func:`bandit_runs` returns.
    """
    stack = [np.stack([getattr(x, f) for x in realisations])
             for f in ("contexts", "means", "rewards")]
    stack += [np.stack([n[i] for n in noises]) for i in range(3)]
    return bandit_runs(spec.piece, spec.params, *stack, kl_rounds,
                       threads_per_block=threads_per_block)


@functools.cache
def _bandit_rounds_kernel(piece):
    body = make_bandit_rounds(piece)

    @cuda_jit
    def kernel(params, bufs, t0, contexts, means, rewards, init_noise, sel_noise, step_noise,
               kl_rounds, regret, arms, kl_out, status):
        r = cuda.grid(1)
        while r < contexts.shape[0]:
            status[r] = body(params, bufs[r], t0, contexts[r], means[r], rewards[r],
                             init_noise[r], sel_noise[r], step_noise[r], kl_rounds, regret[r],
                             arms[r], kl_out[r])
            r += cuda.gridsize(1)

    return kernel


def _check_rounds(runs, n):
    """A ValueError if ``n`` more rounds of ``runs`` (a :class:`BanditRounds` or
    :class:`BanditStreams`, or their block-layout subclasses) go past its horizon."""
    if runs.t0 + n > runs.n_rounds:
        raise ValueError(f"the chunk of {n} rounds goes past n_rounds={runs.n_rounds} "
                         f"(at round {runs.t0})")


class BanditRounds:
    """``R`` fused runs of ``T`` rounds on the GPU, advanced a chunk of rounds at a time.

    The runs' state buffers and outputs stay on the device between chunks; each
    :meth:`advance` copies one chunk's realisation and randomness (host arrays, runs on the
    leading axis, rows of rounds ``[t0, t0 + n)``) and runs those rounds
    (:func:`vits_ref.kernels.bandit.make_bandit_rounds`, the body of the CPU driver
    :func:`vits_ref.drivers.cpu.bandit_rounds`), so the host memory is bounded by the chunk
    whatever ``T`` (the chunks come from :meth:`vits_ref.envs.Environment.realise_chunks`
    and :func:`vits_ref.drivers.fused.draw_chunks`). The results equal :func:`bandit_runs` over
    the whole horizon bit for bit.

    Parameters
    ----------
    piece, params : the policy's :class:`~vits_ref.drivers.fused.FusedSpec` ``piece`` and ``params``
    n_runs, n_rounds, dim, n_arms, n_mc : int
        ``R``, ``T``, ``d``, ``K`` and ``M`` (the step noise's third axis).
    kl_rounds : (n_kl,) int array
        1-based rounds at which to record the KL.
    """

    def __init__(self, piece, params, n_runs, n_rounds, dim, n_arms, n_mc, kl_rounds,
                 threads_per_block=THREADS_PER_BLOCK):
        self.piece, self.params, self.n_rounds = piece, params, n_rounds
        self.threads_per_block = threads_per_block
        self.t0 = 0
        self.bufs = cuda.device_array((n_runs, piece.state_size(dim, n_arms, n_mc,
                                                                  n_rounds)))
        self.regret = cuda.device_array((n_runs, n_rounds))
        self.arms = cuda.device_array((n_runs, n_rounds), dtype=np.int64)
        self.kl = cuda.to_device(np.zeros((n_runs, len(kl_rounds))))
        self.status = cuda.device_array(n_runs, dtype=np.int64)
        self.kl_rounds = cuda.to_device(np.asarray(kl_rounds, dtype=np.int64))

    def advance(self, contexts, means, rewards, init_noise, sel_noise, step_noise):
        """Run the next ``n = contexts.shape[1]`` rounds; returns the runs' status (R,)
        (0, or the 1-based round at which a run's state became non-finite)."""
        n = contexts.shape[1]
        _check_rounds(self, n)
        args = _to_device((contexts, means, rewards, init_noise, sel_noise, step_noise))
        grid = _grid(contexts.shape[0], self.threads_per_block)
        _bandit_rounds_kernel(self.piece)[grid](self.params, self.bufs, self.t0, *args,
                                                self.kl_rounds, self.regret, self.arms,
                                                self.kl, self.status)
        self.t0 += n
        return self.status.copy_to_host()

    def results(self):
        """``(regret (R, T), arms (R, T), kl (R, n_kl))`` on the host."""
        return self.regret.copy_to_host(), self.arms.copy_to_host(), self.kl.copy_to_host()


# --------------------------------------------------------------------------- steps


@functools.cache
def _vits_kernel(potential):
    body = make_vits_steps(potential)

    @cuda_jit
    def kernel(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr, ok):
        r = cuda.grid(1)
        while r < mu.shape[0]:
            ok[r] = body(variant, symmetrize, mu[r], B[r], C[r], data, eps[r], h_mu, h,
                         index_rows(scr, r), index_rows(pscr, r))
            r += cuda.gridsize(1)

    return kernel


def vits_steps(potential, variant, symmetrize, mu, B, C, data, eps, h_mu, h, pscr=0,
               threads_per_block=THREADS_PER_BLOCK):
    """VITS steps for a batch of states ``mu`` (R, d), ``B``, ``C`` (R, d, d) sharing ``data``.

    ``eps`` (R, S, M, d); ``pscr``: the potential's scratch with a leading R axis on every
    array (each thread its own). Returns ``(mu, B, C, ok (R,))`` (new arrays).
    """
    R, d = mu.shape
    M = eps.shape[2]
    scr = (cuda.device_array((R, 6, d, d)), cuda.device_array((R, d, 2 * d)),
           cuda.device_array((R, M, d)), cuda.device_array((R, M, d)),
           cuda.device_array((R, M, d)), cuda.to_device(np.zeros((R, 2, d))))
    dmu, dB, dC, deps = _to_device((mu, B, C, eps))
    ok = cuda.device_array(R, dtype=np.bool_)
    _vits_kernel(potential)[_grid(R, threads_per_block)](
        variant, symmetrize, dmu, dB, dC, _device_tuple(data), deps, h_mu, h, scr,
        _device_tuple(pscr), ok)
    return dmu.copy_to_host(), dB.copy_to_host(), dC.copy_to_host(), ok.copy_to_host()


@functools.cache
def _langevin_kernel(potential):
    body = make_langevin_steps(potential)

    @cuda_jit
    def kernel(theta, data, eps, h, g, H, pscr):
        r = cuda.grid(1)
        while r < theta.shape[0]:
            body(theta[r], data, eps[r], h, g[r], H[r], index_rows(pscr, r))
            r += cuda.gridsize(1)

    return kernel


def langevin_steps(potential, theta, data, eps, h, pscr=0,
                   threads_per_block=THREADS_PER_BLOCK):
    """Langevin steps for a batch of chains ``theta`` (R, d) sharing ``data``; ``eps``
    (R, S, d). Returns the new ``theta``."""
    R, d = theta.shape
    dtheta, deps = _to_device((theta, eps))
    g = cuda.device_array((R, d))
    H = cuda.device_array((R, 1, 1))
    _langevin_kernel(potential)[_grid(R, threads_per_block)](
        dtheta, _device_tuple(data), deps, h, g, H, _device_tuple(pscr))
    return dtheta.copy_to_host()


@functools.cache
def _newton_kernel(potential):
    body = make_newton(potential)

    @cuda_jit
    def kernel(data, P0, b0, theta2, tol, max_iter, H, L, g2, step, trial2, pscr, out):
        r = cuda.grid(1)
        while r < theta2.shape[0]:
            status, it = body(data, P0, b0, theta2[r], tol, max_iter, H[r], L[r], g2[r],
                              step[r], trial2[r], index_rows(pscr, r))
            out[r, 0] = status
            out[r, 1] = it
            r += cuda.gridsize(1)

    return kernel


def newton(potential, data, P0, b0, theta, tol, max_iter, pscr=0,
           threads_per_block=THREADS_PER_BLOCK):
    """Damped Newton from a batch of starts ``theta`` (R, d) on one potential.

    Returns ``(theta (R, d), H (R, d, d), L (R, d, d), status (R,), iterations (R,))``;
    see :func:`vits_ref.kernels.newton.make_newton`.
    """
    R, d = theta.shape
    theta2 = cuda.to_device(np.ascontiguousarray(theta).reshape(R, 1, d))
    H = cuda.device_array((R, d, d))
    L = cuda.to_device(np.zeros((R, d, d)))
    g2, trial2 = cuda.device_array((R, 1, d)), cuda.device_array((R, 1, d))
    step = cuda.device_array((R, d))
    out = cuda.device_array((R, 2), dtype=np.int64)
    dP0, db0 = _to_device((P0, b0))
    _newton_kernel(potential)[_grid(R, threads_per_block)](
        _device_tuple(data), dP0, db0, theta2, tol, max_iter, H, L, g2, step, trial2,
        _device_tuple(pscr), out)
    res = out.copy_to_host()
    return (theta2.copy_to_host().reshape(R, d), H.copy_to_host(), L.copy_to_host(),
            res[:, 0], res[:, 1])


# --------------------------------------------------------------------------- Rényi VI


@functools.cache
def _renyi_kernel(potential):
    from ..kernels.renyi import make_renyi_steps

    body = make_renyi_steps(potential)

    @cuda_jit
    def kernel(alpha, P, data, eps, lr, beta1, beta2, adam_eps, m, v, t, scr, pscr, trace,
               ok):
        r = cuda.grid(1)
        while r < P.shape[0]:
            ok[r] = body(alpha, P[r], data, eps[r], lr, beta1, beta2, adam_eps,
                         (m[r], v[r], t[r]), index_rows(scr, r), index_rows(pscr, r),
                         trace[r])
            r += cuda.gridsize(1)

    return kernel


def renyi_steps(potential, alpha, P, data, eps, lr, beta1, beta2, adam_eps, m, v, t, pscr=0,
                threads_per_block=THREADS_PER_BLOCK):
    """Rényi-VI Adam steps for a batch of states ``P`` (R, d + 1, d) sharing ``data``.

    ``eps`` (R, S, M, d); Adam's ``m``, ``v`` (R, d + 1, d) and ``t`` (R, 1); ``pscr``: the
    potential's scratch with a leading R axis on every array. Returns
    ``(P, m, v, t, trace (R, S, 2), ok (R,))`` (new arrays); see
    :func:`vits_ref.drivers.cpu.renyi_steps`.
    """
    R, S, M, d = eps.shape
    scr = (cuda.to_device(np.zeros((R, d, d))), cuda.device_array((R, M, d)),
           cuda.device_array((R, M, d)), cuda.device_array((R, M)), cuda.device_array((R, M)),
           cuda.device_array((R, d, d)), cuda.to_device(np.zeros((R, d + 1, d))),
           cuda.to_device(np.zeros((R, d, d))))
    dP, deps, dm, dv, dt = _to_device((P, eps, m, v, t))
    trace = cuda.device_array((R, S, 2))
    ok = cuda.device_array(R, dtype=np.bool_)
    _renyi_kernel(potential)[_grid(R, threads_per_block)](
        alpha, dP, _device_tuple(data), deps, lr, beta1, beta2, adam_eps, dm, dv, dt, scr,
        _device_tuple(pscr), trace, ok)
    return (dP.copy_to_host(), dm.copy_to_host(), dv.copy_to_host(), dt.copy_to_host(),
            trace.copy_to_host(), ok.copy_to_host())


# --------------------------------------------------------------------------- VTS: CAVI
# (kernels imported inside the factories: this section is appended independently of the
# module's import block)


@functools.cache
def _cavi_kernel():
    from ..kernels.cavi import cavi_iterate, init_factors

    @cuda_jit
    def kernel(X, y, counts, prior, fac, st, resp, W, tol, max_iter, trace, scr, out_it,
               out_elbo, ok):
        r = cuda.grid(1)
        while r < X.shape[0]:
            f = index_rows(fac, r)
            s = index_rows(st, r)
            init_factors(prior, f, s)
            it, elbo, good = cavi_iterate(X[r], y[r], counts[r], prior, f, s, resp[r], W[r],
                                          tol, max_iter, trace[r], index_rows(scr, r))
            out_it[r] = it
            out_elbo[r] = elbo
            ok[r] = good
            r += cuda.gridsize(1)

    return kernel


def cavi_fits(X, y, counts, prior, tol, max_iter, threads_per_block=THREADS_PER_BLOCK):
    """Independent CAVI fits from the prior, one per thread (:mod:`vits_ref.kernels.cavi`).

    ``X`` (R, n, d), ``y`` (R, n): problem ``r`` uses its first ``counts[r]`` rows; ``prior``
    the kernels' prior tuple (shared). Returns ``(fac, resp (R, n, K), iterations (R,),
    elbo (R,), trace (R, max_iter), ok (R,))`` with ``fac = (gamma, u, L, alpha, beta)``
    stacked over the problems; the same bodies as :func:`vits_ref.drivers.cpu.cavi_fit`.
    """
    R, n, d = X.shape
    K = prior[0].shape[0]
    fac = tuple(cuda.device_array(s) for s in ((R, K), (R, K, d), (R, K, d, d), (R, K),
                                                 (R, K)))
    st = tuple(cuda.device_array(s) for s in ((R, K), (R, K, d), (R, K, d, d), (R, K)))
    scr = (cuda.to_device(np.zeros((R, 4, d))), cuda.to_device(np.zeros((R, 4, K))),
           cuda.to_device(np.zeros((R, d, d))), cuda.to_device(np.zeros((R, K, d))),
           cuda.to_device(np.zeros((R, K, d, d))))
    resp = cuda.to_device(np.zeros((R, n, K)))
    W = cuda.device_array((R, n, d))
    trace = cuda.to_device(np.zeros((R, max_iter)))
    out_it = cuda.device_array(R, dtype=np.int64)
    out_elbo = cuda.device_array(R)
    ok = cuda.device_array(R, dtype=np.bool_)
    dX, dy, dc = _to_device((X, y, np.asarray(counts, dtype=np.int64)))
    _cavi_kernel()[_grid(R, threads_per_block)](dX, dy, dc, _device_tuple(prior), fac, st,
                                                resp, W, tol, max_iter, trace, scr, out_it,
                                                out_elbo, ok)
    return (tuple(a.copy_to_host() for a in fac), resp.copy_to_host(), out_it.copy_to_host(),
            out_elbo.copy_to_host(), trace.copy_to_host(), ok.copy_to_host())


@functools.cache
def _vts_kernel():
    from ..kernels.cavi import vts_run

    @cuda_jit
    def kernel(params, prior, contexts, means, rewards, rngs, hist, counts, facs, sts, work,
               scr, regret, arms, sqerr, iters, status):
        r = cuda.grid(1)
        while r < contexts.shape[0]:
            status[r] = vts_run(params, prior, contexts[r], means[r], rewards[r], rngs[r],
                                index_rows(hist, r), counts[r], index_rows(facs, r),
                                index_rows(sts, r), index_rows(work, r), index_rows(scr, r),
                                regret[r], arms[r], sqerr[r], iters[r])
            r += cuda.gridsize(1)

    return kernel


def vts_runs(params, prior, contexts, means, rewards, rngs,
             threads_per_block=THREADS_PER_BLOCK):
    """Independent VTS runs, one per thread (:func:`vits_ref.kernels.cavi.vts_run`).

    Same arguments as :func:`vits_ref.drivers.cpu.vts_runs` (runs on the leading axis;
    ``rngs`` (R, 2) uint64, copied: the host's states are not advanced). Returns
    ``(regret (R, T), arms (R, T), sqerr (R, T, A), iters (R, T), status (R,))``. Every run's
    histories (``T`` rows per arm) are allocated on the device up front.
    """
    R, T, A, d = contexts.shape
    K = prior[0].shape[0]
    hist = (cuda.device_array((R, A, T, d)), cuda.device_array((R, A, T)),
            cuda.device_array((R, A, T, K)), cuda.device_array((R, A, T, d)))
    counts = cuda.device_array((R, A), dtype=np.int64)
    facs = tuple(cuda.device_array((R, A) + s) for s in ((K,), (K, d), (K, d, d), (K,), (K,)))
    sts = tuple(cuda.device_array((R, A) + s) for s in ((K,), (K, d), (K, d, d), (K,)))
    work = (cuda.device_array((R, max(params[3], 1))), cuda.device_array((R, A)))
    scr = (cuda.to_device(np.zeros((R, 4, d))), cuda.to_device(np.zeros((R, 4, K))),
           cuda.to_device(np.zeros((R, d, d))), cuda.to_device(np.zeros((R, K, d))),
           cuda.to_device(np.zeros((R, K, d, d))))
    regret = cuda.device_array((R, T))
    arms = cuda.device_array((R, T), dtype=np.int64)
    sqerr = cuda.device_array((R, T, A))
    iters = cuda.device_array((R, T), dtype=np.int64)
    status = cuda.device_array(R, dtype=np.int64)
    args = _to_device((contexts, means, rewards, np.array(rngs, dtype=np.uint64)))
    _vts_kernel()[_grid(R, threads_per_block)](params, _device_tuple(prior), *args, hist,
                                               counts, facs, sts, work, scr, regret, arms,
                                               sqerr, iters, status)
    return (regret.copy_to_host(), arms.copy_to_host(), sqerr.copy_to_host(),
            iters.copy_to_host(), status.copy_to_host())


# ---- diffusion chain
# The reverse chains of :mod:`vits_ref.kernels.diffusion_chain`, one sample (or bandit run)
# per thread, the same bodies as :mod:`.cpu`'s ``diffusion_*`` drivers. ``arrays`` is the
# prior's :meth:`~vits_ref.diffusion.DiffusionPriorBase.chain_arrays`; ``scratch_rows`` the
# eps scratch with one row per thread (:func:`vits_ref.diffusion.chain.scratch_rows`).


@functools.cache
def _diffusion_chain_kernel(bodies):
    from ..kernels.diffusion_chain import make_chain

    body = make_chain(bodies)

    @cuda_jit
    def kernel(coef, params, prec_chol, start_mean, start_chol, z, out, work, scr, ok):
        j = cuda.grid(1)
        while j < z.shape[0]:
            ok[j] = body(coef, params, prec_chol, start_mean, start_chol, z[j], out[j], work[j],
                         index_rows(scr, j))
            j += cuda.gridsize(1)

    return kernel


def diffusion_chain(bodies, params, arrays, z, scratch_rows,
                    threads_per_block=THREADS_PER_BLOCK):
    """Prior draws by the plain reverse chain from ``z`` (n, T + 1, d): ``(out (n, d),
    ok (n,))``; see :func:`vits_ref.drivers.cpu.diffusion_chain`."""
    n, _, d = z.shape
    out = cuda.device_array((n, d))
    ok = cuda.device_array(n, dtype=np.bool_)
    _diffusion_chain_kernel(bodies)[_grid(n, threads_per_block)](
        *_to_device((arrays.coef,)), _device_tuple(params),
        *_to_device((arrays.prec_chol, arrays.start_mean, arrays.start_chol, z)), out,
        cuda.device_array((n, 3, d)), _device_tuple(scratch_rows), ok)
    return out.copy_to_host(), ok.copy_to_host()


@functools.cache
def _diffusion_laplace_linear_kernel(bodies):
    from ..kernels.diffusion_chain import make_laplace_linear

    body = make_laplace_linear(bodies)

    @cuda_jit
    def kernel(coef, params, prec, start_prec, start_b, G, h, w, z, out, M, L, work, scr, ok):
        j = cuda.grid(1)
        while j < z.shape[0]:
            ok[j] = body(coef, params, prec, start_prec, start_b, G, h, w, z[j], out[j], M[j],
                         L[j], work[j], index_rows(scr, j))
            j += cuda.gridsize(1)

    return kernel


def diffusion_laplace_linear(bodies, params, arrays, G, h, w, z, scratch_rows,
                             threads_per_block=THREADS_PER_BLOCK):
    """LaplaceDPS draws of the linear model: ``(out (n, d), ok (n,))``; see
    :func:`vits_ref.drivers.cpu.diffusion_laplace_linear`."""
    n, _, d = z.shape
    out = cuda.device_array((n, d))
    ok = cuda.device_array(n, dtype=np.bool_)
    _diffusion_laplace_linear_kernel(bodies)[_grid(n, threads_per_block)](
        *_to_device((arrays.coef,)), _device_tuple(params),
        *_to_device((arrays.prec, arrays.start_prec, arrays.start_b, G, h)), float(w),
        *_to_device((z,)), out, cuda.device_array((n, d, d)),
        cuda.to_device(np.zeros((n, d, d))), cuda.device_array((n, 4, d)),
        _device_tuple(scratch_rows), ok)
    return out.copy_to_host(), ok.copy_to_host()


@functools.cache
def _diffusion_laplace_glm_kernel(bodies, potential):
    from ..kernels.diffusion_chain import make_laplace_glm

    body = make_laplace_glm(bodies, potential)

    @cuda_jit
    def kernel(coef, params, prec, start_mean, start_prec, start_b, data, tol, max_iter, z,
               out, n0, n1, n2, n3, n4, n5, n6, n7, work, scr, pscr, info):
        j = cuda.grid(1)
        while j < z.shape[0]:
            failed, slow, iters = body(coef, params, prec, start_mean, start_prec, start_b,
                                       data, tol, max_iter, z[j], out[j],
                                       (n0[j], n1[j], n2[j], n3[j], n4[j], n5[j], n6[j], n7[j]),
                                       work[j], index_rows(scr, j), index_rows(pscr, j))
            info[j, 0] = failed
            info[j, 1] = slow
            info[j, 2] = iters
            j += cuda.gridsize(1)

    return kernel


def diffusion_laplace_glm(bodies, potential, params, arrays, data, tol, max_iter, z,
                          scratch_rows, pscratch_rows, threads_per_block=THREADS_PER_BLOCK):
    """LaplaceDPS draws of a GLM, one Newton solve per stage: ``(out (n, d), info (n, 3))``;
    see :func:`vits_ref.drivers.cpu.diffusion_laplace_glm`."""
    n, _, d = z.shape
    out = cuda.device_array((n, d))
    info = cuda.device_array((n, 3), dtype=np.int64)
    nscr = (cuda.device_array((n, d, d)), cuda.device_array((n, d)),
            cuda.device_array((n, 1, d)), cuda.device_array((n, d, d)),
            cuda.to_device(np.zeros((n, d, d))), cuda.device_array((n, 1, d)),
            cuda.device_array((n, d)), cuda.device_array((n, 1, d)))
    _diffusion_laplace_glm_kernel(bodies, potential)[_grid(n, threads_per_block)](
        *_to_device((arrays.coef,)), _device_tuple(params),
        *_to_device((arrays.prec, arrays.start_mean, arrays.start_prec, arrays.start_b)),
        _device_tuple(data), float(tol), int(max_iter), *_to_device((z,)), out, *nscr,
        cuda.device_array((n, 3, d)), _device_tuple(scratch_rows),
        _device_tuple(pscratch_rows), info)
    return out.copy_to_host(), info.copy_to_host()


@functools.cache
def _diffusion_dps_kernel(bodies):
    from ..kernels.diffusion_chain import make_dps

    body = make_dps(bodies)

    @cuda_jit
    def kernel(coef, params, start_mean, start_chol, G, h, syy, z, out, work, scr, ok):
        j = cuda.grid(1)
        while j < z.shape[0]:
            ok[j] = body(coef, params, start_mean, start_chol, G, h, syy, z[j], out[j], work[j],
                         index_rows(scr, j))
            j += cuda.gridsize(1)

    return kernel


def diffusion_dps(bodies, params, arrays, G, h, syy, z, scratch_rows,
                  threads_per_block=THREADS_PER_BLOCK):
    """DPS draws of the linear model: ``(out (n, d), ok (n,))``; see
    :func:`vits_ref.drivers.cpu.diffusion_dps`."""
    n, _, d = z.shape
    out = cuda.device_array((n, d))
    ok = cuda.device_array(n, dtype=np.bool_)
    _diffusion_dps_kernel(bodies)[_grid(n, threads_per_block)](
        *_to_device((arrays.coef,)), _device_tuple(params),
        *_to_device((arrays.start_mean, arrays.start_chol, G, h)), float(syy),
        *_to_device((z,)), out, cuda.device_array((n, 5, d)), _device_tuple(scratch_rows), ok)
    return out.copy_to_host(), ok.copy_to_host()


@functools.cache
def _diffts_linear_runs_kernel(bodies):
    from ..kernels.diffusion_chain import make_diffts_linear_run

    body = make_diffts_linear_run(bodies)

    @cuda_jit
    def kernel(coef, params, prec, start_prec, start_b, w, contexts, means, rewards, z, regret,
               arms, G, h, theta, scores, M, L, work, scr, status):
        r = cuda.grid(1)
        while r < contexts.shape[0]:
            status[r] = body(coef, params, prec, start_prec, start_b, w, contexts[r], means[r],
                             rewards[r], z[r], regret[r], arms[r], (G[r], h[r]), theta[r],
                             scores[r], M[r], L[r], work[r], index_rows(scr, r))
            r += cuda.gridsize(1)

    return kernel


def diffts_linear_runs(bodies, params, arrays, w, contexts, means, rewards, z, scratch_rows,
                       threads_per_block=THREADS_PER_BLOCK):
    """Linear DiffTS bandit runs, one per thread: ``(regret (R, n), arms (R, n),
    status (R,))``; see :func:`vits_ref.drivers.cpu.diffts_linear_runs`."""
    R, n, K, d = contexts.shape
    regret = cuda.device_array((R, n))
    arms = cuda.device_array((R, n), dtype=np.int64)
    status = cuda.device_array(R, dtype=np.int64)
    _diffts_linear_runs_kernel(bodies)[_grid(R, threads_per_block)](
        *_to_device((arrays.coef,)), _device_tuple(params),
        *_to_device((arrays.prec, arrays.start_prec, arrays.start_b)), float(w),
        *_to_device((contexts, means, rewards, z)), regret, arms,
        cuda.device_array((R, d, d)), cuda.device_array((R, d)), cuda.device_array((R, d)),
        cuda.device_array((R, K)), cuda.device_array((R, d, d)),
        cuda.to_device(np.zeros((R, d, d))), cuda.device_array((R, 4, d)),
        _device_tuple(scratch_rows), status)
    return regret.copy_to_host(), arms.copy_to_host(), status.copy_to_host()


# --------------------------------------------------------------------------- SVGD
# (kernels imported inside the factories: this section is appended independently of the
# module's import block). The loop form of vits_ref.drivers.cpu.svgd_phi, one thread per
# particle: the same row bodies (distances, kernel row, weighted sum); the median heuristic
# is one thread's quickselect (correctness first: a parallel selection is future work).


@functools.cache
def _svgd_kernels():
    from ..kernels.svgd import (
        kernel_row,
        median_bandwidth_from,
        median_sqdist,
        phi_row,
        shifted_grads,
        sqdist_row,
    )

    @cuda_jit
    def dist(X, XT, D):
        i = cuda.grid(1)
        while i < X.shape[0]:
            sqdist_row(X, XT, i, D[i])
            i += cuda.gridsize(1)

    @cuda_jit
    def median(D, w, hbuf):
        if cuda.grid(1) == 0:
            hbuf[0] = median_bandwidth_from(median_sqdist(D, w), D.shape[0])

    @cuda_jit
    def shift(X, G, hbuf, repulsion, Y):
        i = cuda.grid(1)
        c = 2.0 * repulsion / hbuf[0]
        while i < X.shape[0]:
            shifted_grads(X, G, c, Y, i)
            i += cuda.gridsize(1)

    @cuda_jit
    def rows(X, XT, Y, D, hbuf, repulsion, have_dist, out):
        i = cuda.grid(1)
        h = hbuf[0]
        c = 2.0 * repulsion / h
        while i < X.shape[0]:
            if not have_dist:
                sqdist_row(X, XT, i, D[i])
            s = kernel_row(D[i], 1.0 / h)
            phi_row(D[i], Y, X, i, c, s, out[i])
            i += cuda.gridsize(1)

    return dist, median, shift, rows


def svgd_phi(X, G, h, repulsion, threads_per_block=THREADS_PER_BLOCK):
    """The SVGD direction on the GPU, one thread per particle (the loop form).

    Same arguments as :func:`vits_ref.drivers.cpu.svgd_phi` (``G``: gradients of ``log p``;
    ``h <= 0``: the median heuristic). Returns ``(phi (n, d), h)`` (host arrays).
    """
    dist, median, shift, rows = _svgd_kernels()
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    dX, dXT, dG = _to_device((X, X.T.copy(), G))
    D = cuda.device_array((n, n))
    Y = cuda.device_array((n, d))
    out = cuda.device_array((n, d))
    grid = _grid(n, threads_per_block)
    if h <= 0.0:
        hbuf = cuda.device_array(1)
        dist[grid](dX, dXT, D)
        median[1, 1](D, cuda.device_array(max(1, n * (n - 1) // 2)), hbuf)
    else:
        hbuf = cuda.to_device(np.array([float(h)]))
    shift[grid](dX, dG, hbuf, float(repulsion), Y)
    rows[grid](dX, dXT, Y, D, hbuf, float(repulsion), h <= 0.0, out)
    return out.copy_to_host(), float(hbuf.copy_to_host()[0])


# ---- diffusion MLP
# The learned DDPM prior's eps_t and vjp bodies (vits_ref.kernels.ddpm_mlp), one row per
# thread: the bodies the chains call per stage, checked alone against the CPU. (The chains
# themselves run them through the diffusion chain section with the MLP EpsBodies.)


@functools.cache
def _ddpm_rows_kernel():
    from ..kernels.ddpm_mlp import eps, vjp

    @cuda_jit
    def kernel(params, t, S, V, want_vjp, out, scr):
        j = cuda.grid(1)
        while j < S.shape[0]:
            if want_vjp:
                vjp(params, t, S[j], V[j], out[j], index_rows(scr, j))
            else:
                eps(params, t, S[j], out[j], index_rows(scr, j))
            j += cuda.gridsize(1)

    return kernel


def ddpm_rows(params, t, S, V=None, threads_per_block=THREADS_PER_BLOCK):
    """``eps_t`` (``V`` None) or ``J_t^T v`` at the rows of ``S`` (n, d), one row per thread.

    ``params``: the prior's ``eps_params`` (``(W1, b1, W2, b2, W3, b3)``, stage axis first,
    input-major weights);
    ``t`` the 1-based stage. Returns ``out`` (n, d) on the host.
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    n, _ = S.shape
    h1, h2 = params[0].shape[2], params[2].shape[2]
    scr = (cuda.device_array((n, h1)), cuda.device_array((n, h2)),
           cuda.device_array((n, h1)), cuda.device_array((n, h2)))
    out = cuda.device_array(S.shape)
    Vd = S if V is None else V
    _ddpm_rows_kernel()[_grid(n, threads_per_block)](
        _device_tuple(tuple(params)), int(t), *_to_device((S, Vd)), V is not None, out, scr)
    return out.copy_to_host()


# --------------------------------------------------------------------------- streamed bandit runs

from ..kernels.bandit_streams import make_bandit_streams  # noqa: E402


@functools.cache
def _bandit_streams_kernel(piece, env_round):
    body = make_bandit_streams(piece, env_round)

    @cuda_jit
    def kernel(params, env, keys, dims, bufs, scratch, t0, n, kl_rounds, regret, arms, kl_out,
               status):
        r = cuda.grid(1)
        while r < keys.shape[0]:
            status[r] = body(params, env, keys[r], dims, bufs[r], scratch[r], t0, n,
                             kl_rounds, regret[r], arms[r], kl_out[r])
            r += cuda.gridsize(1)

    return kernel


class BanditStreams:
    """``R`` fused runs of ``T`` rounds fed by counter-based streams, one per GPU thread.

    Nothing is copied in but the runs' keys and the environment's parameters: each round's
    inputs are generated on the device (:func:`vits_ref.kernels.bandit_streams.make_bandit_streams`,
    the body of the CPU driver :func:`vits_ref.drivers.cpu.bandit_streams`). The state
    buffers, scratch and outputs stay on the device; :meth:`advance` runs the next ``n``
    rounds (one launch). Orchestrated by :func:`vits_ref.bandit._streams.run_streams_cuda`.

    Parameters
    ----------
    piece, params : the policy's :class:`~vits_ref.drivers.fused.FusedSpec` ``piece`` and ``params``
    env_round, env_params : :meth:`vits_ref.envs.Environment.counter_piece`
    keys : (R, 2) uint64 array
    dims : tuple ``(d, K, n_init, n_sel, S, M)``
    n_rounds : int
    kl_rounds : (n_kl,) int array
    n_state, n_scratch : int
        Lengths of a run's state buffer and scratch.
    """

    def __init__(self, piece, params, env_round, env_params, keys, dims, n_rounds, kl_rounds,
                 n_state, n_scratch, threads_per_block=THREADS_PER_BLOCK):
        self.piece, self.params, self.env_round = piece, params, env_round
        self.env = _device_tuple(tuple(env_params))
        self.dims = tuple(int(x) for x in dims)
        self.n_rounds, self.threads_per_block = n_rounds, threads_per_block
        self.t0 = 0
        n_runs = keys.shape[0]
        self.keys = cuda.to_device(np.ascontiguousarray(keys, dtype=np.uint64))
        self.bufs = cuda.device_array((n_runs, n_state))
        self.scratch = cuda.device_array((n_runs, max(1, n_scratch)))
        self.regret = cuda.device_array((n_runs, n_rounds))
        self.arms = cuda.device_array((n_runs, n_rounds), dtype=np.int64)
        self.kl = cuda.to_device(np.zeros((n_runs, len(kl_rounds))))
        self.status = cuda.device_array(n_runs, dtype=np.int64)
        self.kl_rounds = cuda.to_device(np.asarray(kl_rounds, dtype=np.int64))

    def advance(self, n):
        """Run the next ``n`` rounds; returns the runs' status (R,) (0, or the 1-based
        round at which a run's state became non-finite)."""
        _check_rounds(self, n)
        grid = _grid(self.keys.shape[0], self.threads_per_block)
        _bandit_streams_kernel(self.piece, self.env_round)[grid](
            self.params, self.env, self.keys, self.dims, self.bufs, self.scratch, self.t0,
            n, self.kl_rounds, self.regret, self.arms, self.kl, self.status)
        self.t0 += n
        return self.status.copy_to_host()

    def results(self):
        """``(regret (R, T), arms (R, T), kl (R, n_kl))`` on the host."""
        return self.regret.copy_to_host(), self.arms.copy_to_host(), self.kl.copy_to_host()
