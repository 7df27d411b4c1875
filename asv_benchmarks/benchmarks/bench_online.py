"""The online API: ``vits_ref.Online``'s select + update per round against the fused round.

:mod:`vits_ref._bench.online`: ``d = 20``, ``K = 50``, the pool environment, one thread.
``time_*`` times a block of rounds of each side; ``track_ratio`` the per-round ratio online
/ fused measured in one process, calls interleaved (goals: 3x for LinTS and LinUCB, 1.3x
for the iterative engines: VITS-II, VITS-I, Hessian-free VITS, LMC-TS and logistic Laplace;
the cases of ``vits_ref._bench.online.CASES``).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from vits_ref._bench import online as bench  # noqa: E402

from .common import TIMEOUT, median_times, single_thread  # noqa: E402

POLICIES = tuple(name for name, _, _ in bench.CASES)


class Online:
    params = (POLICIES,)
    param_names = ["policy"]
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        self.T = dict((n, T) for n, T, _ in bench.CASES)[policy]
        self.fused, self.online, self.policy = bench._case(policy, self.T, 20, 50)
        for fn in (self.fused, self.online, self.policy):  # compile, untimed
            fn()

    def time_fused_rounds(self, policy):
        self.fused()

    def time_online_rounds(self, policy):
        self.online()

    def track_ratio(self, policy):
        f, o = median_times([self.fused, self.online], 7)
        return o / f

    track_ratio.unit = "online / fused"
