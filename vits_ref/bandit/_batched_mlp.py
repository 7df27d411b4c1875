"""The VITS paper's Figure 2 methods on the MLP, batched over runs in lockstep (NumPy or CuPy).

VITS-II, VITS-II Hessian-free and LMC-TS on :class:`vits_ref.models.MLP` run in the Python
loop of :func:`vits_ref.bandit.simulate`, one run at a time; a VITS step on the 861-parameter
network is three 861 x 861 products. This module runs a block of ``R`` runs in lockstep
(round ``t`` of every run, then round ``t + 1``): the runs' states are stacked arrays
(``mu`` (R, d), ``B``, ``C`` (R, d, d); LMC's chain (R, d)), every d x d product is one
batched ``xp.matmul`` over the runs, and the network's forward pass, back-propagation and
Jacobian over each run's history are batched too (the histories grow by one row a round:
an (R, T, p) buffer and a length). ``xp`` is NumPy or CuPy, chosen by the caller
(:func:`array_module`; CuPy is imported only when asked for: the optional extra
``vits_ref[cupy]``).

It computes what the Python loop computes for each run (``tests/test_batched_mlp.py``):

- the same environment realisation (run ``r`` seeded by child ``r`` of the root, its child
  0 the environment's draws, child 2 the instance, as in :func:`vits_ref.bandit.simulate`);
- the same policy randomness in the same order: each run's engine is built by
  ``policy.fresh(child(run_seed, 1))`` exactly as the Python loop builds it, its initial
  state (``mu, B, C`` or LMC's ``theta``) taken from it, and its own two generators
  (:func:`vits_ref._seeding.engine_streams`) draw on the host with NumPy, in the shapes
  the engines draw (``(1, d)`` per Thompson draw from the sampling stream; ``(K_t, M, d)``
  for VITS and ``(K_t, d)`` for LMC per update from the update stream), copied to the
  device;
- the same step sizes (:func:`vits_ref.inference.schedules.step_size` of the engine's schedule,
  ``h0``, ``eta`` and ``t``, the number of observations);
- the same divergence rule and error: after each update, a run whose state is not finite
  (VITS: ``mu``, ``B``, ``C``; LMC: ``theta``) raises :class:`~vits_ref.DivergenceError`
  naming the engine, the run, the round and the step size, and a VITS square root with
  ``max |B|`` beyond the engine's ``_max_abs_B`` raises it with the engine's detail; the
  error raised is that of the lowest-numbered failing run (the one the Python loop, which
  runs the runs in order, meets first); a network output that overflows at finite
  parameters raises the model's ValueError.

The products are summed in other orders than the compiled loops (BLAS or cuBLAS batched
products against the kernels' chunked loops), so states agree to rounding, not bit for
bit; the measured differences are in the tests.

Formulas (docs/algorithms.md section 2; each batched function's docstring names its
equation): the flat layout comes from :func:`vits_ref.kernels.mlp.layer_block`, the
variant codes from :mod:`vits_ref.kernels.potential`, the step sizes from
:mod:`vits_ref.inference.schedules`, the initial states and streams from the engines themselves.
Supported: Thompson sampling over :class:`~vits_ref.VITS` (variants ``"II"`` and
``"hessian_free"``, with or without ``symmetrize`` and the control variate) and
:class:`~vits_ref.Langevin`, on an MLP with the default prior ``N(0, I/(eta lam))``, the
``constant`` or ``decayed`` schedule (:func:`supports`).
"""

import functools
import math
import os

import numpy as np

from .. import _seeding
from ..errors import DivergenceError
from ..inference import VITS, Langevin
from ..inference.schedules import step_size
from ..kernels.mlp import layer_block
from ..kernels.potential import VARIANT_HF, VARIANT_HF_CV, VARIANT_II, is_hessian_free
from ..models.mlp import MLP, _finite_or_raise
from . import backends
from ._fused_draws import realise_chunks
from .policies import ThompsonSampling
from .result import SimulationResult
from .simulate import simulate as _simulate

#: Rounds of the environments' realisations held at once (drawn by
#: :func:`vits_ref.bandit._fused_draws.realise_chunks`: the same rows as one whole draw).
REAL_CHUNK = 128

_BATCHED_VARIANTS = (VARIANT_II, VARIANT_HF, VARIANT_HF_CV)


# --------------------------------------------------------------------------- array module


def array_module(name="numpy"):
    """NumPy (``"numpy"``) or CuPy (``"cupy"``), the latter checked to see a GPU.

    Raises
    ------
    RuntimeError
        ``"cupy"`` without CuPy installed or without a usable GPU (one line, naming the
        fix), so that a caller can fail before any work.
    ValueError
        Any other name.
    """
    if name == "numpy":
        return np
    if name != "cupy":
        raise ValueError(f"array module must be 'numpy' or 'cupy', got {name!r}")
    try:
        import cupy
    except ImportError:
        raise RuntimeError("the batched MLP path on the GPU needs CuPy: pip install "
                           "'vits_ref[cupy]' (cupy-cuda12x) on a machine with an NVIDIA "
                           "GPU") from None
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken: CuPy raises its own types
        raise RuntimeError(f"CuPy is installed but sees no usable GPU "
                           f"({' '.join(str(exc).split())})") from None
    if n < 1:
        raise RuntimeError("CuPy is installed but sees no GPU")
    return cupy


def _host(xp, a):
    """``a`` as a NumPy array (a copy from the device for CuPy)."""
    return a if xp is np else xp.asnumpy(a)


# --------------------------------------------------------------------------- what it runs


def supports(policy):
    """Whether ``policy`` runs on the batched path (see the module docstring): Thompson
    sampling over VITS-II / Hessian-free or LMC-TS on an MLP with the default prior and the
    ``constant`` or ``decayed`` schedule."""
    return _unsupported(policy) is None


def _unsupported(policy):
    """None, or why ``policy`` is not supported."""
    if not isinstance(policy, ThompsonSampling):
        return f"{type(policy).__name__} is not Thompson sampling"
    eng = policy.engine
    if not isinstance(eng, (VITS, Langevin)):
        return f"engine {eng.name} is neither VITS nor Langevin"
    if not isinstance(eng.model, MLP):
        return f"the model is {eng.model.name!r}, not an MLP"
    if not eng.model.has_default_prior:
        return "the MLP has a general prior (only N(0, I/(eta lam)) is batched)"
    if eng.schedule not in ("constant", "decayed"):
        return f"schedule {eng.schedule!r} (only 'constant' and 'decayed' are batched)"
    if isinstance(eng, VITS) and eng.variant_code not in _BATCHED_VARIANTS:
        return "VITS-I (its inverse square root is not batched)"
    return None


def _check_env(policy, env, name="env"):
    """Raise unless ``env`` is an environment whose arms have the MLP's input dimension
    (``policy.dim``): a TypeError or a ValueError naming ``name``, before any work (a
    wrong one failed mid-run in ``numpy.matmul``, naming nothing)."""
    from ..envs import Environment

    if not isinstance(env, Environment):
        raise TypeError(f"{name} must be a vits_ref environment, got {type(env).__name__}")
    p = policy.engine.model.input_dim
    if env.dim != p:
        raise ValueError(f"{name}.dim {env.dim} does not match the MLP's input dimension "
                         f"{p}")


class Net:
    """The flat layout of an MLP (:func:`vits_ref.kernels.mlp.layer_block`, its one
    definition) and its ``eta``, ``lam``: what the batched passes read."""

    def __init__(self, model):
        self.p = model.input_dim
        self.widths = tuple(model.hidden)
        self.L = len(self.widths)
        self.d = model.dim
        self.eta, self.lam = float(model.eta), float(model.lam)
        #: ``(start_W, start_b, fan_out, fan_in)`` of layers 0..L (L: the output layer)
        self.blocks = [tuple(int(v) for v in layer_block(self.p, self.widths, layer))
                       for layer in range(self.L + 1)]

    def layer(self, thetas, layer):
        """``(W (R, M, h, fan_in), b (R, M, h))`` of hidden layer ``layer`` of ``thetas``
        (R, M, d) (views)."""
        sw, sb, h, fan_in = self.blocks[layer]
        R, M = thetas.shape[:2]
        return thetas[:, :, sw:sb].reshape(R, M, h, fan_in), thetas[:, :, sb:sb + h]

    def output(self, thetas):
        """``(w_out (R, M, h_L), b_out (R, M))``."""
        sw, sb, _, _ = self.blocks[self.L]
        return thetas[:, :, sw:sb], thetas[:, :, sb]


# --------------------------------------------------------------------------- network passes


def forward(xp, net, thetas, X):
    """The network at the rows of ``X`` (R, n, p) for the parameters ``thetas`` (R, M, d).

    ``a_l = relu(a_{l-1} W_l^T + b_l)`` (``a_0 = x``), ``g = a_L w_out + b_out``: as
    :func:`vits_ref.kernels.mlp.mlp_forward` (NaN propagates through the ReLU, as there).
    Returns ``(acts, out)``: the post-ReLU activations, a list of (R, M, n, h_l), and the
    outputs (R, M, n).
    """
    prev = X[:, None]
    acts = []
    for layer in range(net.L):
        W, b = net.layer(thetas, layer)
        z = xp.matmul(prev, W.swapaxes(-1, -2))
        z += b[:, :, None, :]
        prev = xp.maximum(z, 0.0)
        acts.append(prev)
    w_out, b_out = net.output(thetas)
    out = xp.matmul(prev, w_out[..., None])[..., 0]
    out += b_out[..., None]
    return acts, out


def sensitivities(xp, net, thetas, acts):
    """``D_L = w_out 1[a_L > 0]``, ``D_{l-1} = (D_l W_l) 1[a_{l-1} > 0]`` (``dg/dz``), a
    list of (R, M, n, h_l): :func:`vits_ref.kernels.mlp.mlp_sensitivities` (entries where
    ``a`` is not positive are set to 0, as there, even where ``D_l W_l`` is not finite)."""
    w_out, _ = net.output(thetas)
    D = [None] * net.L
    D[-1] = xp.where(acts[-1] > 0.0, w_out[:, :, None, :], 0.0)
    for layer in range(net.L - 1, 0, -1):
        W, _ = net.layer(thetas, layer)
        D[layer - 1] = xp.where(acts[layer - 1] > 0.0, xp.matmul(D[layer], W), 0.0)
    return D


def backprop(xp, net, X, acts, D, e):
    """``J^T e`` (R, M, d) by back-propagation, without forming ``J``:
    :func:`vits_ref.kernels.mlp.mlp_backprop` (``gW_l = (D_l e)^T a_{l-1}``,
    ``gb_l = sum_s D_l e``, ``gw_out = a_L^T e``, ``gb_out = sum_s e``)."""
    R, M = e.shape[:2]
    g = xp.empty((R, M, net.d))
    prev = X[:, None]
    for layer in range(net.L):
        sw, sb, h, fan_in = net.blocks[layer]
        De = D[layer] * e[..., None]
        g[:, :, sw:sb] = xp.matmul(De.swapaxes(-1, -2), prev).reshape(R, M, h * fan_in)
        g[:, :, sb:sb + h] = De.sum(axis=2)
        prev = acts[layer]
    sw, sb, _, _ = net.blocks[net.L]
    g[:, :, sw:sb] = xp.matmul(e[:, :, None, :], prev)[:, :, 0, :]
    g[:, :, sb] = e.sum(axis=2)
    return g


def jacobian(xp, net, X, acts, D):
    """The rows ``J_s = [D_1 (x) x, D_1, ..., D_L (x) a_{L-1}, D_L, a_L, 1]`` in the flat
    layout, (R, M, n, d): :func:`vits_ref.kernels.mlp.mlp_jacobian_rows`."""
    R, M, n = D[0].shape[:3]
    blocks = []
    prev = X[:, None]
    for layer in range(net.L):
        _, _, h, fan_in = net.blocks[layer]
        outer = D[layer][..., :, None] * prev[..., None, :]
        blocks += [outer.reshape(R, M, n, h * fan_in), D[layer]]
        prev = acts[layer]
    blocks += [xp.broadcast_to(prev, (R, M, n, prev.shape[-1])), xp.ones((R, M, n, 1))]
    return xp.concatenate(blocks, axis=-1)


def grads_hessian(xp, net, thetas, X, r, want_hessian):
    """Gradients ``G`` (R, M, d) at the rows of ``thetas`` (R, M, d) and, with
    ``want_hessian``, the mean Gauss-Newton matrix ``H`` (R, d, d), over each run's history
    ``X`` (R, n, p), ``r`` (R, n) (docs/algorithms.md section 2, "Potentials: neural")::

        grad U = eta (J^T e + lam theta),   H = eta mean_m J_m^T J_m + eta lam I

    with ``e = g_theta(x) - r``: :func:`vits_ref.kernels.mlp.mlp_grads_hessian` with the
    default prior (the ridge ``eta lam`` added to the diagonal as in
    :func:`~vits_ref.kernels.mlp.mlp_hessian_finish`). ``H`` is None without
    ``want_hessian``.
    """
    acts, out = forward(xp, net, thetas, X)
    e = out - r[:, None, :]
    D = sensitivities(xp, net, thetas, acts)
    H = None
    if want_hessian:
        R, M, n = out.shape
        J = jacobian(xp, net, X, acts, D).reshape(R, M * n, net.d)
        H = xp.matmul(J.swapaxes(-1, -2), J)
        H *= net.eta / M
        idx = xp.arange(net.d)
        H[:, idx, idx] += net.eta * net.lam
    g = backprop(xp, net, X, acts, D, e)
    return net.eta * (g + net.lam * thetas), H


# --------------------------------------------------------------------------- steps


def vits_step(xp, net, variant, symmetrize, mu, B, C, X, r, eps, h_mu, h):
    """One VITS step of every run, in place (docs/algorithms.md section 2, "Inner step";
    :func:`vits_ref.kernels.vits.make_vits_steps`)::

        theta_j = mu + B eps_j,   g = mean_j grad U(theta_j),   mu <- mu - h_mu g
        VITS-II: A = mean_j H(theta_j) (Gauss-Newton)
        HF:      A = (C^T C) mean_j (theta_j - mu) grad U(theta_j)^T  (eq. 13, fixed;
                 minus grad U(mu) with the control variate; (A + A^T)/2 with symmetrize)
        B <- B + h (C^T - A B),   C <- C - h C (C^T C - A)

    ``mu`` (R, d), ``B``, ``C`` (R, d, d), ``eps`` (R, M, d). Three batched d x d products
    per step (``C^T C``, ``A B``, ``C (C^T C - A)``); the Hessian-free ``A`` is formed as
    ``((C^T C) Z^T) G / M``, O(d^2 M) instead of a fourth d^3 product (the same matrix,
    summed in another order). VITS-II also forms ``J^T J`` over the history, ``2 n d^2``
    flops per draw.
    """
    M = eps.shape[1]
    Z = xp.matmul(eps, B.swapaxes(-1, -2))  # rows B eps_j = theta_j - mu
    T = mu[:, None, :] + Z
    hf = is_hessian_free(variant)
    G, H = grads_hessian(xp, net, T, X, r, not hf)
    g = G.sum(axis=1) / M
    CtC = xp.matmul(C.swapaxes(-1, -2), C)
    if hf:
        if variant == VARIANT_HF_CV:
            G = G - grads_hessian(xp, net, mu[:, None, :], X, r, False)[0]
        A = xp.matmul(xp.matmul(CtC, Z.swapaxes(-1, -2)), G)
        A /= M
        if symmetrize:
            A = 0.5 * (A + A.swapaxes(-1, -2))
    else:
        A = H
    W1 = xp.matmul(A, B)
    mu -= h_mu * g
    CtC -= A
    W2 = xp.matmul(C, CtC)
    B += h * (C.swapaxes(-1, -2) - W1)
    C -= h * W2


def langevin_step(xp, net, theta, X, r, eps, h):
    """One Langevin step of every chain, in place: ``theta <- theta - h grad U(theta) +
    sqrt(2 h) eps`` (docs/algorithms.md section 2, LMC-TS; :mod:`vits_ref.kernels.langevin`).
    ``theta``, ``eps`` (R, d)."""
    G, _ = grads_hessian(xp, net, theta[:, None, :], X, r, False)
    theta += -h * G[:, 0, :] + math.sqrt(2.0 * h) * eps


# --------------------------------------------------------------------------- runs


class _Runs:
    """The lockstep state of a block of runs (active runs only) and their host streams."""

    def __init__(self, xp, engines):
        eng = engines[0]
        self.xp = xp
        self.vits = isinstance(eng, VITS)
        self.name = eng.name
        self.net = Net(eng.model)
        self.eta, self.schedule = eng.eta, eng.schedule
        self.n_steps = eng.n_steps
        self.sample_streams = [e._rng_sample for e in engines]
        self.update_streams = [e._rng_update for e in engines]
        if self.vits:
            self.variant, self.symmetrize = eng.variant_code, eng.symmetrize
            self.n_mc = eng.n_mc
            self.h0_mu, self.h0 = eng.step_size, eng.cov_step_size
            self.max_abs_B = eng._max_abs_B
            self.mu = xp.asarray(np.stack([e.mu for e in engines]))
            self.B = xp.asarray(np.stack([e.B for e in engines]))
            self.C = xp.asarray(np.stack([e.C for e in engines]))
        else:
            self.h0 = eng.step_size
            self.theta = xp.asarray(np.stack([e.theta for e in engines]))

    def steps_and_sizes(self, t):
        """``(h_mu, h)`` at ``t`` observations (the engines' :func:`step_size`)."""
        t = max(t, 1)
        h = step_size(self.schedule, self.h0, self.eta, t)
        if not self.vits:
            return h, h
        return step_size(self.schedule, self.h0_mu, self.eta, t), h

    def draws(self, active, pool=None):
        """This round's host draws of the active runs: the Thompson normals ``(R, 1, d)``
        (VITS: ``(1, d)`` each from the sampling stream; LMC draws none) and the update's
        ``(R, K_t, M, d)`` (VITS) or ``(R, K_t, d)`` (LMC) from the update streams.

        ``pool`` (a thread pool) fills the runs' rows in parallel: each run's streams are
        its own and advanced by one thread, so the draws do not depend on it (NumPy
        releases the GIL in its fills). The Hessian-free method draws 172 200 normals per
        run and round at fig2's size, more than the GPU's products take to consume.
        """
        d = self.net.d
        R = len(active)
        sel = np.empty((R, 1, d)) if self.vits else None
        if self.vits:
            steps = np.empty((R, self.n_steps, self.n_mc, d))
        else:
            steps = np.empty((R, self.n_steps, d))

        def fill(i):
            k = active[i]
            if sel is not None:
                self.sample_streams[k].standard_normal((1, d), out=sel[i])
            self.update_streams[k].standard_normal(steps.shape[1:], out=steps[i])

        if pool is None:
            for i in range(R):
                fill(i)
        else:
            list(pool.map(fill, range(R)))
        return sel, steps

    def thompson(self, sel):
        """The parameters each run plays: ``mu + eps B^T`` (VITS, as ``VITS._sample``) or
        the chain's state (LMC), (R, d)."""
        xp = self.xp
        if not self.vits:
            return self.theta
        return self.mu + xp.matmul(xp.asarray(sel), self.B.swapaxes(-1, -2))[:, 0, :]

    def update(self, X, r, steps, h_mu, h):
        """``K_t`` steps of every active run on the histories ``X`` (R, n, p), ``r`` (R, n)."""
        xp = self.xp
        steps = xp.asarray(steps)
        for s in range(self.n_steps):
            if self.vits:
                vits_step(xp, self.net, self.variant, self.symmetrize, self.mu, self.B,
                          self.C, X, r, steps[:, s], h_mu, h)
            else:
                langevin_step(xp, self.net, self.theta, X, r, steps[:, s], h)

    def check(self):
        """Per active run: ``(finite, max |B|)`` as host arrays (``max |B|`` None for LMC)."""
        xp = self.xp
        if not self.vits:
            return _host(xp, xp.isfinite(self.theta).all(axis=1)), None
        ok = (xp.isfinite(self.mu).all(axis=1) & xp.isfinite(self.B).all(axis=(1, 2))
              & xp.isfinite(self.C).all(axis=(1, 2)))
        return _host(xp, ok), _host(xp, xp.abs(self.B).max(axis=(1, 2)))

    def keep(self, rows):
        """Keep only the state rows ``rows`` (positions among the active runs)."""
        idx = self.xp.asarray(np.asarray(rows, dtype=np.int64))
        names = ("mu", "B", "C") if self.vits else ("theta",)
        for name in names:
            setattr(self, name, getattr(self, name)[idx])

    def states(self):
        """The active runs' states as host arrays: ``{"mu", "B", "C"}`` or ``{"theta"}``."""
        names = ("mu", "B", "C") if self.vits else ("theta",)
        return {n: _host(self.xp, getattr(self, n)) for n in names}


def _divergence(runs, t, h, finite, big, i):
    """The DivergenceError (without the run) the engine raises for active row ``i`` after
    the update of round ``t`` (observations), or None: the engines' rule
    (``Engine._check_finite``, then VITS's range check of ``B``)."""
    if not finite[i]:
        return DivergenceError(runs.name, t, h)
    if big is not None and big[i] > runs.max_abs_B:
        return DivergenceError(
            runs.name, t, h,
            detail=f"The square root B left its stable range: max |B| = {big[i]:.3g} "
                   f"exceeds 1e6 times the prior's standard deviation "
                   f"({runs.max_abs_B:.3g}); the covariance B B^T never exceeds the "
                   f"prior's.")
    return None


def run_block(policy, envs, run_seeds, n_rounds, xp=np, first_index=0, return_states=False,
              prefetch=False, draw_threads=1):
    """Runs of ``policy`` on their environments in lockstep; the Python loop's results.

    Parameters
    ----------
    policy : ThompsonSampling
        Over VITS or Langevin on an MLP (:func:`supports`); every run starts from
        ``policy.fresh(child(run_seed, 1))`` as in :func:`vits_ref.bandit.simulate`.
    envs : list of Environment
        Run ``i``'s environment (the instance of the run).
    run_seeds : list of SeedSequence
        Run ``i``'s seed (child ``first_index + i`` of the root).
    n_rounds : int
    xp : module, default numpy
        NumPy or CuPy (:func:`array_module`).
    first_index : int
        Index of the first run (for the errors).
    return_states : bool
        Also return the final states (host arrays, rows in run order).
    prefetch : bool
        Draw the next round's normals on the host in a background thread while the device
        computes (worth it with CuPy, whose products run asynchronously).
    draw_threads : int
        Threads filling the runs' draws (:meth:`_Runs.draws`; the results do not depend on
        it).

    Returns
    -------
    regret (R, T), arms (R, T)[, states]

    Raises
    ------
    DivergenceError
        The lowest-numbered run that diverges, at its first diverging round, with its step
        size (the error the Python loop raises first).
    ValueError
        A network output overflowed at finite parameters (the model's error); or, before
        any work, an unsupported policy or an environment whose ``dim`` is not the MLP's
        input dimension.
    """
    why = _unsupported(policy)
    if why is not None:
        raise ValueError(f"the batched MLP path does not support this policy: {why}")
    for i, env in enumerate(envs):
        _check_env(policy, env, f"envs[{i}]")
    R, T = len(run_seeds), int(n_rounds)
    engines = [policy.fresh(_seeding.policy_seed(s)).engine for s in run_seeds]
    runs = _Runs(xp, engines)
    del engines  # the generators live on in runs; the engines' d x d buffers go
    net = runs.net
    reals = [realise_chunks(e, s, T, REAL_CHUNK) for e, s in zip(envs, run_seeds, strict=True)]
    regret = np.zeros((R, T))
    arms = np.zeros((R, T), dtype=np.int64)
    Xh = xp.zeros((R, T, net.p))
    rh = xp.zeros((R, T))
    active = list(range(R))  # block rows still computed, in order
    failures = {}  # block row -> the exception the Python loop raises for it
    pool = draw_pool = None
    if prefetch or draw_threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(1) if prefetch else None
        draw_pool = ThreadPoolExecutor(draw_threads) if draw_threads > 1 else None
    draw = functools.partial(runs.draws, pool=draw_pool)
    # a diverging run overflows quietly, as in the compiled loops; the checks report it
    quiet = np.errstate(over="ignore", invalid="ignore", divide="ignore")
    quiet.__enter__()
    try:
        pending = (list(active), pool.submit(draw, list(active))) if pool else None
        chunk = None
        for t in range(T):
            tc = t % REAL_CHUNK
            if tc == 0:
                chunk = [next(g) for g in reals]
                ctx = np.stack([c.contexts for c in chunk])  # (R, n, K, p)
                means = np.stack([c.means for c in chunk])
                rewards = np.stack([c.rewards for c in chunk])
                ctx_dev = xp.asarray(ctx)
            if pool:
                drawn_for, (sel, steps) = pending[0], pending[1].result()
                if t + 1 < T:
                    pending = (list(active), pool.submit(draw, list(active)))
            else:
                drawn_for, (sel, steps) = list(active), draw(active)
            act = np.asarray(active)
            # a run dropped since the draws were made: drop its rows (its streams no
            # longer matter)
            if len(drawn_for) != len(active):
                rows = [drawn_for.index(k) for k in active]
                sel = None if sel is None else sel[rows]
                steps = steps[rows]
            theta = runs.thompson(sel)
            act_x = xp.asarray(act)  # device-side index (CuPy indexes with its own arrays)
            Xt = ctx_dev[act_x, tc]  # (R, K, p)
            _, scores = forward(xp, net, theta[:, None, :], Xt)
            scores = scores[:, 0, :]
            played = _host(xp, xp.argmax(scores, axis=1))
            finite_scores = _host(xp, xp.isfinite(scores).all(axis=1))
            for i in np.flatnonzero(~finite_scores):
                th = _host(xp, theta[i])
                try:
                    _finite_or_raise(_host(xp, scores[i]), th, "the outputs")
                except ValueError as err:
                    failures.setdefault(active[i], err)
            regret[act, t] = means[act, tc].max(axis=1) - means[act, tc, played]
            arms[act, t] = played
            Xh[act_x, t] = xp.asarray(ctx[act, tc, played])
            rh[act_x, t] = xp.asarray(rewards[act, tc, played])
            n = t + 1
            h_mu, h = runs.steps_and_sizes(n)
            if len(active) == R:
                runs.update(Xh[:, :n], rh[:, :n], steps, h_mu, h)
            else:
                runs.update(Xh[act_x, :n], rh[act_x, :n], steps, h_mu, h)
            finite, big = runs.check()
            for i, k in enumerate(active):
                if k not in failures:
                    err = _divergence(runs, n, h, finite, big, i)
                    if err is not None:
                        failures[k] = err
            if failures:
                # only runs below the lowest failing one can still change the outcome
                low = min(failures)
                rows = [i for i, k in enumerate(active) if k < low]
                if len(rows) != len(active):
                    runs.keep(rows)
                    active = [active[i] for i in rows]
                if not active:
                    break
    finally:
        quiet.__exit__(None, None, None)
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)
        if draw_pool:
            draw_pool.shutdown(wait=True)
    if failures:
        low = min(failures)
        err = failures[low]
        if isinstance(err, DivergenceError):
            raise err.in_run(first_index + low)
        raise err
    if return_states:
        return regret, arms, runs.states()
    return regret, arms


def simulate(policy, env, n_rounds, n_runs=1, seed=None, kl_rounds=None,
             new_instance_per_run=False, first_run=0, device="cpu", array="numpy",
             **ignored):
    """:func:`vits_ref.bandit.simulate` of an MLP policy (:func:`supports`) on the batched path.

    The runs ``first_run, ..., first_run + n_runs - 1`` form one lockstep block; ``array``
    is ``"numpy"`` or ``"cupy"`` (:func:`array_module`). Same arguments and result as
    :func:`vits_ref.bandit.simulate` (``device`` and the other execution options, e.g.
    ``n_jobs``, are accepted and ignored: the array module decides where it runs), and the
    same regret and arms as its Python loop. The arguments, and ``env.dim`` against the
    MLP's input dimension, are checked before any work.
    """
    if array not in ("numpy", "cupy"):
        raise ValueError(f"array must be 'numpy' or 'cupy', got {array!r}")
    return _simulate(policy, env, n_rounds, n_runs, seed=seed, kl_rounds=kl_rounds,
               new_instance_per_run=new_instance_per_run, first_run=first_run,
               device="cuda" if array == "cupy" else "cpu", backend="batched-mlp")


class BatchedMLP:
    """The runner's backend of VITS and LMC-TS on an MLP (:func:`supports`): the block's
    runs in lockstep (:func:`run_block`), with NumPy on the CPU, CuPy on CUDA. Not exact:
    its BLAS products sum in another order than the Python loop's, so its states differ by
    rounding (``tests/test_batched_mlp.py`` bounds it) and it runs only when named."""

    name, order, compiled, exact = "batched-mlp", 70, False, False
    result_type = SimulationResult

    def declines(self, block):
        why = _unsupported(block.policy)
        if why is None and block.stream != "numpy":
            why = "it draws with NumPy's streams"
        if why is None and not block.immediate:
            why = "it learns each round's reward at once (no delay or batch)"
        return why

    def run(self, block, rows):
        _check_env(block.policy, block.env)
        xp = array_module("cupy" if block.device == "cuda" else "numpy")
        seeds = block.seeds()
        envs = [block.env_for(s) for s in seeds]
        gpu = xp is not np
        threads = min(block.n_runs, 8, max(1, (os.cpu_count() or 1) - 1)) if gpu else 1
        rows.regret[:], rows.arms[:] = run_block(
            block.policy, envs, seeds, block.n_rounds, xp=xp, first_index=block.first_run,
            prefetch=gpu, draw_threads=threads)
        block.report(block.n_runs)


backends.register(BatchedMLP())


# --------------------------------------------------------------------------- cost model


def flops_per_round(d, t, n_mc, n_steps=10, hessian=True, net=None):
    """Floating-point operations of one round of one run at ``t`` observations.

    ``3 * 2 d^3`` per step for the three d x d products (VITS), plus for VITS-II
    (``hessian``) ``2 t d^2`` per draw for ``J^T J`` over the history, plus the Hessian-free
    ``A``'s ``4 d^2 M``; the network passes over the history (``net``: a :class:`Net`, for
    their ``2 t sum (fan_in h)`` flops per pass, three passes per draw) are small beside
    them. LMC-TS (``n_mc = 0``) costs only the passes.
    """
    passes = 0.0
    if net is not None:
        passes = 3 * 2 * t * sum(fo * fi for _, _, fo, fi in net.blocks)
    if n_mc == 0:
        return n_steps * passes
    per_step = 3 * 2.0 * d ** 3 + n_mc * passes
    if hessian:
        per_step += n_mc * 2.0 * t * d * d
    else:
        per_step += 4.0 * d * d * n_mc
    return n_steps * per_step
