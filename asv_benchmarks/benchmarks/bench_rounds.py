"""Linear-bandit rounds: the fused compiled loop against the plain NumPy reference.

Pool environment (``vits_ref.envs.pool``, zeta = 0.1), K = 50 arms, the policies'
documented defaults (10 inner steps for VITS and LMC-TS, 20 Monte Carlo draws for
VITS-HF), one run, Numba and OpenBLAS on one thread. The arrays come from
``vits_ref._bench.linear.problem``, so the compiled loop and the reference consume the same
pre-drawn randomness.

asv reports the time of one call, which runs many rounds: the time per round is the
reported time divided by ``N_ROUNDS_COMPILED`` (compiled) or ``N_ROUNDS_REFERENCE``
(reference). The ``track_ratio_*`` benchmarks measure the ratio itself in one process
(interleaved medians, ``vits_ref._bench.linear.round_ratio``); they are what the speed goals
are stated in (d = 20, K = 50: VITS-II >= 15x, LinTS >= 20x).

The floor of a VITS-II round (``vits_ref._bench.linear.floor_rounds``) is the BLAS work
the algorithm cannot avoid: 10 steps x 3 products of d x d matrices and scoring the K arms
(one (K, d) x (d,) product), ``np.dot`` into preallocated buffers in one compiled
function. ``TrackFloorRatio`` tracks compiled round / floor (about 2 when written).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from vits_ref import reference  # noqa: E402
from vits_ref._bench import linear as bench  # noqa: E402

from .common import TIMEOUT, single_thread, truncate  # noqa: E402

POLICIES = ("vits-ii", "vits-i", "vits-hf", "lints", "linucb", "lmc")
DIMS = (10, 20)
N_ARMS = 50
#: rounds per timed call: a few milliseconds each
N_ROUNDS_COMPILED = 200
N_ROUNDS_REFERENCE = 50


class TimeRoundCompiled:
    """Fused compiled loop (``vits_ref.drivers.cpu.bandit_run``), 200 rounds per call.

    Per round = reported time / 200.
    """

    params = (POLICIES, DIMS)
    param_names = ["policy", "d"]
    timeout = TIMEOUT

    def setup(self, policy, d):
        single_thread()
        self.spec, (self.run,) = bench.problem(policy, n_rounds=N_ROUNDS_COMPILED, dim=d,
                                               n_arms=N_ARMS)
        bench.run_compiled(self.spec, self.run)  # compile (or load the cache) untimed

    def time_run(self, policy, d):
        """One run of 200 rounds; per round = time / 200."""
        bench.run_compiled(self.spec, self.run)


class TimeRoundReference:
    """Plain NumPy reference (``vits_ref.reference.linear_bandit_run``), 50 rounds per call.

    Per round = reported time / 50.
    """

    params = (POLICIES, DIMS)
    param_names = ["policy", "d"]
    timeout = TIMEOUT

    def setup(self, policy, d):
        single_thread()
        self.spec, (run,) = bench.problem(policy, n_rounds=N_ROUNDS_REFERENCE, dim=d,
                                          n_arms=N_ARMS)
        self.run = truncate(run, N_ROUNDS_REFERENCE)

    def time_run(self, policy, d):
        """One run of 50 rounds; per round = time / 50."""
        reference.linear_bandit_run(self.spec, *self.run)


def _round_ratio(policy):
    """Reference us per round / compiled us per round at d = 20, K = 50 (medians of 7)."""
    return bench.round_ratio(policy, n_rounds_ref=200, n_rounds=1000, repeats=7, dim=20,
                             n_arms=N_ARMS)[2]


class TrackRoundRatio:
    """Speed-up of the fused loop over the NumPy reference per round (d = 20, K = 50).

    Measured in one process, calls interleaved, medians of 7 (reference: 200 rounds per
    call, compiled: 1000). Goals: VITS-II >= 15, LinTS >= 20.
    """

    unit = "ratio"
    timeout = TIMEOUT

    def setup(self):
        single_thread()

    def track_ratio_vits_ii_round(self):
        return _round_ratio("vits-ii")

    def track_ratio_vits_i_round(self):
        return _round_ratio("vits-i")

    def track_ratio_vits_hf_round(self):
        return _round_ratio("vits-hf")

    def track_ratio_lints_round(self):
        return _round_ratio("lints")

    def track_ratio_linucb_round(self):
        return _round_ratio("linucb")

    def track_ratio_lmc_round(self):
        return _round_ratio("lmc")


class TimeRoundFloor:
    """The floor of 200 VITS-II rounds (10 steps x 3 d x d products + scoring K = 50 arms).

    Per round = reported time / 200; compare with ``TimeRoundCompiled`` for ``vits-ii``.
    """

    params = (DIMS,)
    param_names = ["d"]
    timeout = TIMEOUT

    def setup(self, d):
        single_thread()
        _, (run,) = bench.problem("vits-ii", n_rounds=N_ROUNDS_COMPILED, dim=d, n_arms=N_ARMS)
        self.floor = bench.floor_call(run[0], run[5].shape[1])
        self.floor()  # compile (or load the cache) untimed

    def time_floor(self, d):
        """200 rounds of the floor; per round = time / 200."""
        self.floor()


class TrackFloorRatio:
    """Compiled VITS-II round / its floor (d = 20, K = 50, 10 steps), interleaved medians of 7.

    Both over the same 1000 rounds in one process (``vits_ref._bench.linear.floor_ratio``);
    1 would mean the fused loop does nothing but the unavoidable BLAS products.
    """

    unit = "ratio"
    timeout = TIMEOUT

    def setup(self):
        single_thread()

    def track_ratio_vits_ii_round_to_floor(self):
        return bench.floor_ratio(n_rounds=1000, repeats=7, dim=20, n_arms=N_ARMS)[2]
