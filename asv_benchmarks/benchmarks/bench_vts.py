"""VTS (Urteaga & Wiggins): one CAVI round, compiled against NumPy, and whole runs.

One CAVI round (:mod:`vits_ref._bench.vts`): the played arm has ``t`` observations of
scenario B's arm 1 (``K = 2`` experts, ``d = 2``), CAVI runs from the factors converged on
the first ``t - 1`` (the warm start) to a relative ELBO tolerance of 1e-5; the compiled
driver (``vits_ref.drivers.cpu.cavi_fit``, kernels/cavi.py) against the plain-NumPy
reference (``vits_ref.reference.cavi.cavi``), the same iterations from the same factors.
``t`` in {100, 500, 2000}; the goal is stated at ``t = 500`` (10x).

Whole runs: ``vits_ref.bandit.vts.simulate_vts`` on scenario B, 16 runs of 500 rounds
(``prange`` over runs, one Numba thread here), for K = 1 (closed form) and K = 2.
Accuracy: the K = 1 fit's ELBO against the NIG log evidence (SciPy's multivariate t).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import vits_ref as vr  # noqa: E402
from vits_ref._bench import vts as bench  # noqa: E402
from vits_ref.reference import cavi as ref  # noqa: E402

from .common import TIMEOUT, median_times, single_thread  # noqa: E402

ROUND_SIZES = (100, 500, 2000)


class _Round:
    params = (ROUND_SIZES,)
    param_names = ["t"]
    timeout = TIMEOUT

    def setup(self, t):
        single_thread()
        self.p = bench.problem(n=t)
        it_c, it_n = bench.round_compiled(self.p), bench.round_numpy(self.p)  # compile
        if it_c != it_n:
            raise AssertionError(f"iterations differ: compiled {it_c}, NumPy {it_n}")


class TimeCaviRound(_Round):
    """One warm-started CAVI round of an arm with ``t`` observations (K = 2, d = 2)."""

    def time_compiled(self, t):
        """``cpu.cavi_fit`` on kept buffers (restoring the warm start included)."""
        bench.round_compiled(self.p)

    def time_numpy(self, t):
        """``reference.cavi.cavi`` from the same warm start."""
        bench.round_numpy(self.p)


class TrackCaviRoundRatio(_Round):
    """NumPy time / compiled time of one CAVI round, interleaved medians of 21 in-process."""

    unit = "ratio"

    def track_ratio_cavi_round(self, t):
        t_np, t_jit = median_times([lambda: bench.round_numpy(self.p),
                                    lambda: bench.round_compiled(self.p)], 21)
        return t_np / t_jit


class TimeVtsRuns:
    """16 VTS runs of 500 rounds on scenario B in the compiled driver (one thread)."""

    params = ((1, 2),)
    param_names = ["n_components"]
    timeout = TIMEOUT

    def setup(self, K):
        single_thread()
        self.env = vr.envs.vts_scenario("B")
        self.pol = vr.VTS(2, 2, n_components=K, seed=0)
        vr.simulate_vts(self.pol, self.env, 20, 2, seed=0)  # compile untimed

    def time_runs(self, K):
        """``simulate_vts``: 16 runs x 500 rounds (realisations drawn inside, as in use)."""
        vr.simulate_vts(self.pol, self.env, 500, 16, seed=0)


class TrackNigEvidence:
    """|ELBO - log evidence| / |log evidence| of a K = 1 fit (d = 3, n = 200): exact in
    exact arithmetic, so this tracks rounding (about 1e-15)."""

    unit = "relative error"
    timeout = TIMEOUT

    def setup(self):
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((200, 3))
        self.y = self.X @ np.array([1.0, -0.5, 2.0]) + rng.standard_normal(200)

    def track_elbo_vs_evidence(self):
        fit = vr.vts.fit_mixture(self.X, self.y, 1, u0=np.zeros(3), tol=1e-14)
        ev = ref.nig_log_evidence(self.X, self.y, np.zeros(3), np.eye(3), 1.0, 1.0)
        return abs(fit.elbo[-1] - ev) / abs(ev)
