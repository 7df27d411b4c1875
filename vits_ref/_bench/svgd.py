"""One SVGD step (n = 1000 particles, d = 50, a 50-d Gaussian target), compiled against
NumPy and BlackJAX, measured in one process.

The step (issue 10, performance): the gradients of ``log p`` for the Gaussian target
``N(0, S)`` (``grad log p(x) = -S^-1 x``, one (n, d) x (d, d) product), the SVGD
direction with the median bandwidth and repulsion 1, and the move ``x + eps phi``. Sides:

- ``compiled``: :func:`vits_ref.drivers.cpu.svgd_phi` in the BLAS form (the ``"auto"``
  choice at this size) and in the loop form, each single-thread (``numba`` 1 thread,
  OpenBLAS 1 thread) and with the ``prange`` over particles on every core;
- ``numpy gemm``: :func:`vits_ref.reference.svgd.phi_gemm` (the issue's prototype: 33 ms);
- ``numpy broadcast``: :func:`vits_ref.reference.svgd.phi_broadcast` (prototype: 423 ms);
- ``blackjax``: BlackJAX's ``svgd`` step (``blackjax.svgd`` with its ``rbf_kernel`` and
  ``update_median_heuristic``, jitted, on the CPU) when BlackJAX is installed; skipped
  otherwise.

Calls are interleaved and medians compared (:func:`vits_ref._bench.timing.median_times`):
the machine is shared and drifts. Run::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import svgd; svgd.main()"
"""

import numba
import numpy as np

from ..drivers import cpu
from ..reference import svgd as rsvgd
from .timing import blas_threads, median_times, pin_blas_threads

N, DIM, STEP = 1000, 50, 1e-2


def target(dim=DIM, seed=0):
    """The precision ``P = S^-1`` of a 50-d Gaussian with eigenvalues in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    return (q * np.linspace(0.5, 2.0, dim)) @ q.T


def particles(n=N, dim=DIM, seed=1):
    return np.random.default_rng(seed).standard_normal((n, dim))


class CompiledStep:
    """``x + eps phi(x)`` with the compiled direction (``gemm``: the BLAS form)."""

    def __init__(self, X, P, gemm, parallel):
        self.X, self.P, self.gemm = X, P, gemm
        n, d = X.shape
        self.run = cpu.svgd_phi(parallel)
        self.scr = cpu.svgd_scratch(n, d)
        self.G = np.empty((n, d))
        self.phi = np.empty((n, d))

    def __call__(self):
        np.dot(self.X, self.P, out=self.G)
        np.negative(self.G, out=self.G)
        self.run(self.X, self.G, 0.0, 1.0, self.gemm, self.phi, self.scr)
        return self.X + STEP * self.phi


class NumpyStep:
    """The same step with a NumPy form of the direction."""

    def __init__(self, X, P, phi):
        self.X, self.P, self.phi = X, P, phi

    def __call__(self):
        return self.X + STEP * self.phi(self.X, -(self.X @ self.P), None, 1.0)


def blackjax_step(X, P):
    """A jitted BlackJAX SVGD step on the CPU (float64), or None without BlackJAX."""
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        import blackjax
        import jax.numpy as jnp
        from blackjax.vi.svgd import rbf_kernel, update_median_heuristic
    except Exception:  # noqa: BLE001 - any failure to import means "not available"
        return None
    Pj = jnp.asarray(P)

    def logdensity(x):
        return -0.5 * x @ Pj @ x

    import optax
    svgd = blackjax.svgd(jax.grad(logdensity), optax.sgd(STEP), rbf_kernel,
                         update_median_heuristic)
    # start from the median bandwidth of X, so its first step is the same step as ours
    # (BlackJAX updates the bandwidth after each step, for the next)
    state = svgd.init(jnp.asarray(X), {"length_scale": rsvgd.median_bandwidth(X)})
    step = jax.jit(svgd.step)

    def call():
        return step(state).particles.block_until_ready()

    return call


def step_stats(repeats=11, broadcast=True):
    """Milliseconds per step, medians of ``repeats`` interleaved calls (after a warm-up).

    Returns ``{name: ms}`` for ``gemm_1t``, ``loop_1t`` (one Numba thread), ``gemm_par``,
    ``loop_par`` (every core), ``numpy_gemm``, ``numpy_broadcast`` (if ``broadcast``),
    ``blackjax`` (if installed), and ``max_abs_diff`` (compiled gemm and loop against the
    NumPy GEMM form on the same particles).
    """
    X, P = particles(), target()
    cores = numba.config.NUMBA_NUM_THREADS
    fns = {"gemm_1t": CompiledStep(X, P, True, True), "loop_1t": CompiledStep(X, P, False, True),
           "gemm_par": CompiledStep(X, P, True, True),
           "loop_par": CompiledStep(X, P, False, True),
           "numpy_gemm": NumpyStep(X, P, rsvgd.phi_gemm)}
    if broadcast:
        fns["numpy_broadcast"] = NumpyStep(X, P, rsvgd.phi_broadcast)
    bj = blackjax_step(X, P)
    if bj is not None:
        fns["blackjax"] = bj
    threads = {"gemm_1t": 1, "loop_1t": 1, "gemm_par": cores, "loop_par": cores}

    def wrap(name, fn):
        def call():
            numba.set_num_threads(threads.get(name, cores))
            return fn()
        return call

    calls = [wrap(k, f) for k, f in fns.items()]
    outs = [c() for c in calls]  # warm-up (compiles)
    try:
        t = median_times(calls, repeats)
    finally:
        numba.set_num_threads(cores)
    stats = {k: 1e3 * v for k, v in zip(fns, t, strict=True)}
    ref = outs[list(fns).index("numpy_gemm")]
    stats["max_abs_diff"] = float(max(np.abs(outs[i] - ref).max() for i in range(4)))
    if bj is not None:
        stats["blackjax_max_abs_diff"] = float(np.abs(np.asarray(outs[-1]) - ref).max())
    return stats


def main(quick=False):
    """Print one SVGD step's time, compiled, NumPy and BlackJAX, and the ratios."""
    pin_blas_threads(1)
    repeats = 5 if quick else 15
    s = step_stats(repeats, broadcast=not quick)
    print(f"SVGD step (n = {N}, d = {DIM}, Gaussian target, median bandwidth), medians of "
          f"{repeats} interleaved calls; BLAS threads {blas_threads() or 'unknown'}, Numba "
          f"threads 1 or {numba.config.NUMBA_NUM_THREADS}")
    base = s["numpy_gemm"]
    for k in ("gemm_1t", "loop_1t", "gemm_par", "loop_par", "numpy_gemm", "numpy_broadcast",
              "blackjax"):
        if k in s:
            print(f"  {k:16s} {s[k]:8.2f} ms   NumPy GEMM / this = {base / s[k]:5.2f}")
    if "blackjax" not in s:
        print("  blackjax: not installed (pip install blackjax), skipped")
    print(f"  max |compiled - NumPy GEMM| = {s['max_abs_diff']:.1e}")
    if "blackjax_max_abs_diff" in s:
        print(f"  max |BlackJAX - NumPy GEMM| = {s['blackjax_max_abs_diff']:.1e}")
