"""One SVGD step (n = 1000 particles, d = 50, a 50-d Gaussian target), compiled against
NumPy, BlackJAX and the floor, measured in one process.

The step: the gradients of ``log p`` for the Gaussian target
``N(0, S)`` (``grad log p(x) = -S^-1 x``, one (n, d) x (d, d) product), the SVGD
direction with the median bandwidth and repulsion 1, and the move ``x + eps phi``. Sides:

- ``compiled``: :func:`vits_ref.drivers.cpu.svgd_phi` in the BLAS form (the ``"auto"``
  choice at this size) and in the loop form, each single-thread (compiled serial, Numba
  and OpenBLAS 1 thread) and with the ``prange`` over particles on every core (BLAS on
  every core too);
- ``numpy gemm``: :func:`vits_ref.reference.svgd.phi_gemm` (an early prototype: 33 ms),
  BLAS on 1 thread and on every core;
- ``numpy broadcast``: :func:`vits_ref.reference.svgd.phi_broadcast` (prototype: 423 ms);
- ``blackjax``: BlackJAX's ``svgd`` step (``blackjax.svgd`` with its ``rbf_kernel`` and
  ``update_median_heuristic``, jitted, on the CPU) when BlackJAX is installed; skipped
  otherwise;
- ``floor``: :class:`FloorStep`, the two products no form avoids (``X X^T`` and
  ``K [Y | 1]``, ``n^2 (2 d + 1)`` multiply-adds) by ``np.dot``, and with the ``n^2``
  exponentials by ``np.exp`` (``floor_exp``).

Calls are interleaved and medians compared (:func:`vits_ref._bench.timing.median_times`):
the machine is shared and drifts. Run::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import svgd; svgd.main()"

(``python -m vits_ref bench`` runs it too, with the other sections.)
"""

import numba
import numpy as np

from .._threads import numba_threads
from ..drivers import cpu
from ..reference import svgd as rsvgd
from .timing import median_times, pin_blas_threads, ratio_text

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


class FloorStep:
    """The floor: the work no form of the step avoids, at BLAS and NumPy speed.

    ``X X^T`` (``n^2 d`` multiply-adds) and ``K [Y | 1]`` (``n^2 (d + 1)``: the weighted
    sums and the kernel's row sums in one product), by ``np.dot`` on preallocated
    buffers; with ``exp``, also NumPy's exponential of the ``n^2`` kernel entries.
    """

    def __init__(self, X, exp):
        n, d = X.shape
        self.X, self.exp = X, exp
        self.D = np.empty((n, n))
        # exponents -|x_i - x_j|^2 / h like the step's (values in [-30, 0]), and K = exp
        self.A = -30.0 * np.random.default_rng(2).random((n, n))
        self.K = np.exp(self.A)
        self.Y1 = np.ones((n, d + 1))
        self.acc = np.empty((n, d + 1))

    def __call__(self):
        np.dot(self.X, self.X.T, out=self.D)
        if self.exp:
            np.exp(self.A, out=self.K)
        np.dot(self.K, self.Y1, out=self.acc)
        return self.acc


def step_stats(repeats=11, broadcast=True, n=N, dim=DIM):
    """Milliseconds per step, medians of ``repeats`` interleaved calls (after a warm-up).

    Returns ``{name: ms}`` for ``gemm_1t``, ``loop_1t`` (the compiled BLAS and loop
    forms, compiled serial, one Numba thread, one BLAS thread), ``gemm_par``,
    ``loop_par`` (the ``prange`` compile on every core; BLAS on every core too: its calls
    are outside the ``prange``), ``numpy_gemm`` (one BLAS thread), ``numpy_gemm_par``
    (BLAS on every core), ``numpy_broadcast`` (if ``broadcast``), ``blackjax`` (if
    installed; XLA's own threads), ``floor`` and ``floor_exp`` (:class:`FloorStep`, one
    BLAS thread), and ``max_abs_diff`` (the compiled forms against the NumPy GEMM form on
    the same particles).
    """
    X, P = particles(n, dim), target(dim)
    cores = numba.config.NUMBA_NUM_THREADS
    fns = {"gemm_1t": CompiledStep(X, P, True, False),
           "loop_1t": CompiledStep(X, P, False, False),
           "gemm_par": CompiledStep(X, P, True, True),
           "loop_par": CompiledStep(X, P, False, True),
           "numpy_gemm": NumpyStep(X, P, rsvgd.phi_gemm),
           "numpy_gemm_par": NumpyStep(X, P, rsvgd.phi_gemm)}
    if broadcast:
        fns["numpy_broadcast"] = NumpyStep(X, P, rsvgd.phi_broadcast)
    bj = blackjax_step(X, P)
    if bj is not None:
        fns["blackjax"] = bj
    fns["floor"] = FloorStep(X, False)
    fns["floor_exp"] = FloorStep(X, True)
    par = {"gemm_par", "loop_par", "numpy_gemm_par"}

    def wrap(name, fn):
        def call():
            threads = cores if name in par else 1
            pin_blas_threads(threads)
            with numba_threads(threads):
                return fn()
        return call

    calls = [wrap(k, f) for k, f in fns.items()]
    try:
        outs = [c() for c in calls]  # warm-up (compiles)
        t = median_times(calls, repeats)
    finally:
        pin_blas_threads(1)
    stats = {k: 1e3 * v for k, v in zip(fns, t, strict=True)}
    ref = outs[list(fns).index("numpy_gemm")]
    stats["max_abs_diff"] = float(max(np.abs(outs[i] - ref).max() for i in range(4)))
    if bj is not None:
        stats["blackjax_max_abs_diff"] = float(
            np.abs(np.asarray(outs[list(fns).index("blackjax")]) - ref).max())
    return stats


ORDER = ("gemm_1t", "loop_1t", "gemm_par", "loop_par", "numpy_gemm", "numpy_gemm_par",
         "numpy_broadcast", "blackjax", "floor", "floor_exp")


def main(quick=False, rounds=None):
    """Print one SVGD step's time, compiled, NumPy, BlackJAX and the floor, and the ratios.

    ``rounds`` independent measurements (3; 1 if ``quick``), each the medians of
    interleaved calls (the broadcast form in the first only); the ratios NumPy GEMM /
    this are per round, then their median. Returns every round's :func:`step_stats`.
    """
    pin_blas_threads(1)
    repeats = 5 if quick else 15
    rounds = rounds or (1 if quick else 3)
    # the broadcast form (seconds per call) in the first round only
    all_stats = [step_stats(repeats, broadcast=not quick and r == 0) for r in range(rounds)]
    s = {k: float(np.median([a[k] for a in all_stats if k in a])) for k in all_stats[0]}
    cores = numba.config.NUMBA_NUM_THREADS
    print(f"SVGD step (n = {N}, d = {DIM}, Gaussian target, median bandwidth, repulsion 1), "
          f"medians of {repeats} interleaved calls, median of {rounds} rounds; Numba and "
          f"BLAS threads 1 (_1t, numpy_gemm, floor) or {cores} (_par)")
    for k in ORDER:
        if k in s:
            ratio = np.median([a["numpy_gemm"] / a[k] for a in all_stats if k in a])
            print(f"  {k:16s} {s[k]:8.2f} ms   NumPy GEMM (1 thread) / this = "
                  f"{ratio_text(ratio, other='NumPy GEMM')}")
    if "blackjax" not in s:
        print("  blackjax: not installed (pip install blackjax), skipped")
    print(f"  max |compiled - NumPy GEMM| = {s['max_abs_diff']:.1e}")
    if "blackjax_max_abs_diff" in s:
        print(f"  max |BlackJAX - NumPy GEMM| = {s['blackjax_max_abs_diff']:.1e}")
    return all_stats
