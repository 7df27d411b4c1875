"""SVGD: one step of the direction at n in {100, 1000, 5000}, d = 50.

The problem of ``vits_ref._bench.svgd``: a 50-d Gaussian target, median bandwidth,
repulsion 1, the move ``x + eps phi``. ``time_step_*``: the compiled direction in its
``"auto"`` form (the BLAS form at these sizes), the loop form, the NumPy GEMM form of
``vits_ref.reference.svgd`` (the NumPy broadcast form only at n = 100: (n, n, d)
temporaries of 400 MB at n = 1000), BlackJAX's jitted step (n <= 1000, when installed)
and the floor (``FloorStep``: ``X X^T`` and ``K [Y | 1]`` by BLAS and the ``n^2``
exponentials by NumPy). Single thread (Numba and OpenBLAS; BlackJAX: XLA's own threads).
``TrackSvgdStep``: NumPy GEMM / compiled at n = 1000 from interleaved medians.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from vits_ref._bench import svgd as bs  # noqa: E402
from vits_ref.reference import svgd as rsvgd  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402


class TimeSvgdStep:
    """One SVGD step (n particles, d = 50)."""

    params = ((100, 1000, 5000),)
    param_names = ["n"]
    timeout = TIMEOUT

    def setup(self, n):
        single_thread()
        X, P = bs.particles(n), bs.target()
        self.gemm = bs.CompiledStep(X, P, True, False)
        self.loop = bs.CompiledStep(X, P, False, False)
        self.numpy = bs.NumpyStep(X, P, rsvgd.phi_gemm)
        self.broadcast = bs.NumpyStep(X, P, rsvgd.phi_broadcast) if n <= 100 else None
        self.blackjax = bs.blackjax_step(X, P) if n <= 1000 else None
        self.floor = bs.FloorStep(X, True)
        self.gemm()  # compiles (or loads the cache) untimed
        self.loop()
        if self.blackjax is not None:
            self.blackjax()  # XLA compiles untimed

    def time_step_compiled_gemm(self, n):
        self.gemm()

    def time_step_compiled_loop(self, n):
        self.loop()

    def time_step_numpy_gemm(self, n):
        self.numpy()

    def time_step_numpy_broadcast(self, n):
        if self.broadcast is None:
            raise NotImplementedError("(n, n, d) temporaries too large")
        self.broadcast()

    def time_step_blackjax(self, n):
        if self.blackjax is None:
            raise NotImplementedError("BlackJAX not installed, or n > 1000 (seconds per step)")
        self.blackjax()

    def time_step_floor(self, n):
        self.floor()

    def peakmem_step_compiled_gemm(self, n):
        self.gemm()


class TrackSvgdStep:
    """NumPy GEMM form / compiled (single thread), n = 1000, d = 50."""

    timeout = TIMEOUT

    def setup_cache(self):
        single_thread()
        return bs.step_stats(repeats=9, broadcast=False)

    def track_ratio_gemm(self, stats):
        return stats["numpy_gemm"] / stats["gemm_1t"]

    track_ratio_gemm.unit = "ratio"

    def track_ratio_loop(self, stats):
        return stats["numpy_gemm"] / stats["loop_1t"]

    track_ratio_loop.unit = "ratio"

    def track_max_abs_diff(self, stats):
        return stats["max_abs_diff"]

    track_max_abs_diff.unit = "abs"

    def track_ratio_floor(self, stats):
        """Compiled BLAS form / floor (1 is the floor)."""
        return stats["gemm_1t"] / stats["floor_exp"]

    track_ratio_floor.unit = "ratio"
