"""Kernels on their own: the VITS inner steps, and the ``prange`` driver over runs.

VITS steps: ``vits_ref.drivers.cpu.vits_steps`` on the linear potential (10 steps in one
call, the engine's scratch kept) against
10 calls of ``vits_ref.reference.vits_step``, on a fixed linear potential
``U = 1/2 theta^T V theta - b^T theta`` (``V = I + X^T X``, ``X`` (4d, d) Gaussian), step
``h = 0.1 / lmax(V)``, one Monte Carlo draw per step (20 for the Hessian-free variant).
Every call starts from the same state (the prior ``B = C = I``), so the work per call is
fixed however often asv calls it.

Runs in parallel: ``vits_ref.drivers.cpu.bandit_runs`` (``prange`` over independent runs)
on 8 VITS-II runs of 200 rounds (d = 20, K = 50), on 1 and 2 Numba threads.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from vits_ref.kernels.linear import POTENTIAL as LINEAR  # noqa: E402
from vits_ref.kernels.vits import VARIANT_HF, VARIANT_I, VARIANT_II  # noqa: E402

from vits_ref import reference  # noqa: E402
from vits_ref._bench import linear as bench  # noqa: E402
from vits_ref.drivers import cpu  # noqa: E402

from .common import TIMEOUT, median_times, single_thread  # noqa: E402

VARIANTS = {"I": VARIANT_I, "II": VARIANT_II, "HF": VARIANT_HF}
STEP_DIMS = (5, 20, 50)
N_STEPS = 10


class _VitsSteps:
    """Shared setup: the potential, the initial state, the step noise; compiles."""

    params = (tuple(VARIANTS), STEP_DIMS)
    param_names = ["variant", "d"]
    timeout = TIMEOUT

    def setup(self, variant, d):
        single_thread()
        rng = np.random.default_rng(0)
        X = rng.standard_normal((4 * d, d))
        self.etaV = np.eye(d) + X.T @ X
        self.eta_b = X.T @ rng.standard_normal(4 * d)
        self.h = 0.1 / np.linalg.eigvalsh(self.etaV)[-1]
        self.code = VARIANTS[variant]
        n_mc = 20 if variant == "HF" else 1
        self.eps = rng.standard_normal((N_STEPS, n_mc, d))
        self.init = (rng.standard_normal(d), np.eye(d), np.eye(d))
        self.state = tuple(a.copy() for a in self.init)
        self.steps = cpu.vits_steps(LINEAR)
        self.data = (self.etaV, self.eta_b)
        self.scratch = cpu.vits_scratch(d, n_mc)
        self.compiled()  # compile (or load the cache) untimed

    def compiled(self):
        mu, B, C = self.state
        for a, a0 in zip(self.state, self.init, strict=True):
            np.copyto(a, a0)
        if not self.steps(self.code, False, mu, B, C, self.data, self.eps, self.h, self.h,
                          self.scratch, 0):
            raise FloatingPointError("singular B")

    def numpy(self):
        mu, B, C = self.init
        for s in range(N_STEPS):
            mu, B, C = reference.vits_step(self.code, mu, B, C, self.etaV, self.eta_b,
                                           self.eps[s], self.h, self.h)
        return mu, B, C


class TimeVitsSteps(_VitsSteps):
    """10 VITS steps on a linear potential: compiled kernel vs NumPy (per step = time / 10)."""

    def time_compiled(self, variant, d):
        """``cpu.vits_steps(LINEAR)``, 10 steps (plus resetting the state, O(d^2))."""
        self.compiled()

    def time_reference(self, variant, d):
        """``reference.vits_step`` called 10 times."""
        self.numpy()


class TrackVitsStepRatio(_VitsSteps):
    """NumPy time / compiled time for 10 VITS steps, interleaved medians of 21 in-process."""

    unit = "ratio"

    def track_ratio_vits_steps(self, variant, d):
        t_ref, t_jit = median_times([self.numpy, self.compiled], 21)
        return t_ref / t_jit


N_RUNS = 8
N_ROUNDS_MANY = 200


class TimeRunMany:
    """``prange`` over 8 VITS-II runs of 200 rounds (d = 20, K = 50), arrays pre-stacked.

    Per round and run = reported time / 1600 (times the thread count for CPU time).
    Skipped where Numba has fewer threads than asked for.
    """

    params = ((1, 2),)
    param_names = ["n_threads"]
    timeout = TIMEOUT

    def setup(self, n_threads):
        if n_threads > numba.config.NUMBA_NUM_THREADS:
            raise NotImplementedError(f"Numba has {numba.config.NUMBA_NUM_THREADS} threads")
        numba.set_num_threads(n_threads)
        self.spec, runs = bench.problem("vits-ii", n_rounds=N_ROUNDS_MANY, dim=20, n_arms=50,
                                        n_runs=N_RUNS)
        self.stacked = bench.stack_runs(runs)
        self.out = (np.empty((N_RUNS, N_ROUNDS_MANY)),
                    np.empty((N_RUNS, N_ROUNDS_MANY), np.int64), np.zeros((N_RUNS, 0)),
                    np.zeros(N_RUNS, np.int64))
        self.kl_rounds = np.zeros(0, np.int64)
        self.run_many = cpu.bandit_runs(self.spec.piece)
        self.time_run_many(n_threads)  # compile (or load the cache) untimed
        if self.out[3].any():
            raise FloatingPointError("a run diverged")

    def time_run_many(self, n_threads):
        """8 runs x 200 rounds on ``n_threads`` Numba threads."""
        self.run_many(self.spec.params, *self.stacked, self.kl_rounds, *self.out)


class TrackParallelSpeedup:
    """Time on 1 thread / time on all Numba threads, 8 VITS-II runs of 500 rounds.

    ``vits_ref._bench.linear.parallel_speedup`` (medians of 3); 1.0 on a one-core machine.
    docs/performance.md: two cores gave 1.75x.
    """

    unit = "x"
    timeout = TIMEOUT

    def track_parallel_speedup(self):
        return bench.parallel_speedup(policy="vits-ii", n_runs=8, n_rounds=500, repeats=3)[2]
