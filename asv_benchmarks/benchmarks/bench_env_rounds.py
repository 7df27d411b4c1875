"""An environment round against drawing its numbers (``vits_ref._bench.env_rounds``).

On the pool environment at d = 20, K = 50, one thread: ``TimeEnvRound.time_draw`` is
NumPy drawing 4 runs x 1000 rounds of the environment's numbers (the draws of its one
description of a round, nothing built); ``time_simulate`` is ``simulate`` of the random
policy and of LinTS over the same runs, draws included. ``TrackEnvRoundRatio`` tracks
each ``simulate`` round over the drawing, measured interleaved in one process (the goal
for the random policy: at most 1.2x). The full section is
``OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import env_rounds; env_rounds.main()"``.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import vits_ref as vr  # noqa: E402
from vits_ref._bench import env_rounds  # noqa: E402
from vits_ref._seeding import env_rng, run_seeds  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

RUNS, ROUNDS = 4, 1000


class TimeEnvRound:
    """The drawing alone, and ``simulate`` of each policy, 4 runs x 1000 rounds."""

    params = (("draw",) + env_rounds.POLICIES,)
    param_names = ["what"]
    timeout = TIMEOUT

    def setup(self, what):
        single_thread()
        self.env = vr.envs.pool(dim=env_rounds.DIM, n_arms=env_rounds.ARMS, seed=0)
        self.desc = self.env.round_draws()
        self.seeds = run_seeds(1, 0, RUNS)
        if what != "draw":
            vr.simulate(what, self.env, 2, 1, seed=0, n_threads=1)  # compiled untimed

    def time_draw(self, what):
        if what == "draw":
            for seed in self.seeds:
                self.desc.draw_rows(env_rng(seed), ROUNDS)
        else:
            vr.simulate(what, self.env, ROUNDS, RUNS, seed=1, n_threads=1)


class TrackEnvRoundRatio:
    """``simulate`` round / drawing the round's numbers, interleaved medians."""

    params = (env_rounds.POLICIES,)
    param_names = ["policy"]
    unit = "simulate round / drawing"
    timeout = TIMEOUT

    def setup_cache(self):
        single_thread()
        return env_rounds.round_costs(n_runs=RUNS, n_rounds=ROUNDS, repeats=7)

    def track_ratio(self, costs, policy):
        return costs[f"{policy}/draw"]
