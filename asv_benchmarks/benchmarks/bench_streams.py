"""Counter-based streams (``simulate(..., stream="philox")``, docs/streams.md) on the CPU.

``TimeSimulateStream.time_simulate``: ``simulate(policy, pool(d=20, K=50), 100 rounds,
8 runs, stream=...)`` on one thread with the NumPy streams (drawn before the loop) and
with the Philox streams (generated inside the loop), LinTS and VITS-II.
``TrackDrawingCost.track_us_per_run_round``: microseconds per run-round of the draws
alone, each stream (``vits_ref._bench.streams.drawing_cost``). The full section is
``OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import streams; streams.main()"``.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import vits_ref as vr  # noqa: E402
from vits_ref._bench import streams  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

POLICIES = ("lints", "vits-ii")
STREAMS = ("numpy", "philox")


class TimeSimulateStream:
    """One ``simulate`` call per stream: 8 runs x 100 rounds at d = 20, K = 50."""

    params = (POLICIES, STREAMS)
    param_names = ["policy", "stream"]
    timeout = TIMEOUT

    def setup(self, policy, stream):
        single_thread()
        self.env = vr.envs.pool(dim=streams.DIM, n_arms=streams.ARMS, seed=0)
        vr.simulate(policy, self.env, 2, 1, seed=0, stream=stream)  # compiled untimed

    def time_simulate(self, policy, stream):
        vr.simulate(policy, self.env, 100, 8, seed=1, stream=stream)


class TrackDrawingCost:
    """Microseconds per run-round of the inputs' draws alone, per stream."""

    params = (POLICIES, STREAMS)
    param_names = ["policy", "stream"]
    unit = "us per run-round"
    timeout = TIMEOUT

    def setup_cache(self):
        single_thread()
        return {p: dict(zip(STREAMS, streams.drawing_cost(p), strict=True)) for p in POLICIES}

    def track_us_per_run_round(self, costs, policy, stream):
        return costs[policy][stream]
