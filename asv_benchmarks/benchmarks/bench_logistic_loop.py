"""The fused loop on the logistic model (``vits_ref.kernels.logistic_bandit``) on the CPU.

``TimeLogisticLoop.time_simulate``: ``simulate(policy, hard_instance(d=10, K=10,
logistic), 200 rounds, 2 runs, seed=1, fused=...)`` on one thread, the fused loop
(``"fused"``) and the Python loop (``"python"``), for VITS-II, LMC-TS (figG's logistic
points) and Laplace (eta 10, lam 10): the policies of ``vits_ref._bench.logistic_loop``.
Per round: time / 200. ``TrackLogisticLoop.track_logistic_loop``: Python loop / fused
loop per round (``ratio``, interleaved medians of 5 at the same size) and the share of a
round that is the history's O(n d) work at T = 1000 (``history_late_percent``, a round
near n = 1000; ``history_mean_percent``, the average round), from the fused loop's rounds
[0, 100) and [900, 1000) (``logistic_loop.phase_times``). The full section, with every
Numba thread: ``OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import
logistic_loop as m; m.main()"``.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import vits_ref as vr  # noqa: E402
from vits_ref._bench import logistic_loop  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

LABELS = logistic_loop.LABELS
LOOPS = ("fused", "python")
N_ROUNDS, N_RUNS = 200, 2


class TimeLogisticLoop:
    """One ``simulate`` call, 2 runs x 200 rounds at d = K = 10, one thread."""

    params = (LABELS, LOOPS)
    param_names = ["policy", "loop"]
    timeout = TIMEOUT

    def setup(self, label, loop):
        single_thread()
        self.policy = logistic_loop.policy(label)
        self.env = logistic_loop.environment()
        self.fused = loop == "fused"
        # compiled (or the cache loaded) untimed
        vr.simulate(self.policy, self.env, 3, 1, seed=0, fused=self.fused)

    def time_simulate(self, label, loop):
        vr.simulate(self.policy, self.env, N_ROUNDS, N_RUNS, seed=1, fused=self.fused)


class TrackLogisticLoop:
    """Python loop / fused loop per round, and the history's share of a round (percent)."""

    params = (LABELS, ("ratio", "history_late_percent", "history_mean_percent"))
    param_names = ["policy", "figure"]
    unit = "ratio (history_*: percent)"
    timeout = 2 * TIMEOUT

    def setup_cache(self):
        single_thread()
        out = {}
        for label in LABELS:
            s = logistic_loop.loop_stats(label, n_rounds=N_ROUNDS, n_runs=N_RUNS, repeats=5)
            early, late = logistic_loop.phase_times(label, 1000, 100, n_runs=1, repeats=5)
            f_late, f_mean = logistic_loop.history_fraction(early, late, 1000, 100)
            out[label] = {"ratio": s["ratio"], "history_late_percent": 100 * f_late,
                          "history_mean_percent": 100 * f_mean}
        return out

    def track_logistic_loop(self, figures, label, figure):
        return figures[label][figure]
