"""Late and batched feedback (``simulate(..., delay=, batch=)``): the fused loop's queue
of pending feedback against the Python loop, and against immediate feedback.

Pool environment (d = 20, K = 50), the policies' documented defaults, one run of
``N_ROUNDS`` rounds, a delay of 10 decisions and batches of 16, one Numba thread. The
fused loop and the Python loop give the same numbers bit for bit
(``tests/test_delayed_feedback.py``); the ``track_*`` ratios are measured in one process
with interleaved calls (:func:`vits_ref._bench.timing.median_times`): Python loop / fused
loop with the delay (the speed-up the queue brings), and fused with the delay / fused at
once (the queue's own cost, about 1).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import vits_ref  # noqa: E402

from .common import TIMEOUT, median_times, single_thread  # noqa: E402

POLICIES = ("lints", "vits-ii")
N_ROUNDS = 300
LATE = {"delay": 10, "batch": 16}


class LateFeedback:
    params = (POLICIES,)
    param_names = ["policy"]
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        self.env = vits_ref.envs.pool(dim=20, n_arms=50, zeta=0.1, seed=0)
        self.policy = vits_ref.make_policy(policy, 20)
        for fused in (None, False):  # compile (or load the cache) untimed
            self._run(fused, 5)
        self._run(None, 5, late=False)

    def _run(self, fused, n_rounds=N_ROUNDS, late=True):
        return vits_ref.simulate(self.policy, self.env, n_rounds, 1, seed=0, n_threads=1,
                                 fused=fused, **(LATE if late else {}))

    def time_fused(self, policy):
        """The fused loop with delay 10 and batches of 16, 300 rounds."""
        self._run(None)

    def time_python_loop(self, policy):
        """The Python loop with the same feedback, 300 rounds."""
        self._run(False)

    def track_python_over_fused(self, policy):
        """Python loop / fused loop, both with the delay, in one process."""
        fused, loop = median_times([lambda: self._run(None), lambda: self._run(False)], 5)
        return loop / fused

    track_python_over_fused.unit = "ratio"

    def track_late_over_immediate(self, policy):
        """Fused loop with the delay / fused loop at once (the queue's cost)."""
        late, now = median_times([lambda: self._run(None),
                                  lambda: self._run(None, late=False)], 7)
        return late / now

    track_late_over_immediate.unit = "ratio"
