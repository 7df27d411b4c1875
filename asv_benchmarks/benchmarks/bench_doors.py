"""Every door to a policy: the policy objects, ``Bandit`` and ``Online``, and the peers.

:mod:`vits_ref._bench.doors`: ``d = 20``, ``K = 50``, one thread. ``Decision`` times a
block of rounds (select then update) through each door and tracks the policy objects' and
``Bandit``'s per-round cost as a ratio to ``Online``'s (goals: the policy objects within
3x the compiled floor for LinTS and LinUCB, ``Bandit`` within 1.5x ``Online``; ``Bandit``
given the round as ``predict`` takes it, and as rows of arrays).
``FitPredict`` times a fit of 10 000 logged rounds and a predict of 1 000 rounds and
tracks ``Bandit.fit`` against the exact engine's batch update (goal 3x) and
``Bandit.predict`` against ``Online.select_many`` (goal 1.5x); MABWiser's and
bayesianbandits' fit and predict are timed beside them where installed. ``Batches``
tracks ``Bandit.partial_fit`` of small batches of feedback against ``Online.update_many``.

The ratios are of the least CPU times of this thread over interleaved repeats
(:func:`vits_ref._bench.timing.least_cpu_times`): every door runs on one thread, and on a
loaded machine wall-time medians of microsecond calls swing by 2-5x, their ratios too.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from vits_ref._bench import doors  # noqa: E402
from vits_ref._bench.timing import least_cpu_times  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

#: interleaved repeats of each door whose least CPU time a ratio takes
REPEATS = 15


class Decision:
    params = ([name for name, _ in doors.DECISION_CASES],)
    param_names = ["policy"]
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        T = dict(doors.DECISION_CASES)[policy]
        self.fns = doors.decisions(policy, T)
        for fn in self.fns.values():  # compile, untimed
            fn()

    def time_online(self, policy):
        self.fns["online"]()

    def time_policy_object(self, policy):
        self.fns["policy"]()

    def time_bandit(self, policy):
        self.fns["bandit"]()

    def track_policy_object_over_online(self, policy):
        o, p = least_cpu_times([self.fns["online"], self.fns["policy"]], REPEATS)
        return p / o

    track_policy_object_over_online.unit = "policy object / Online"

    def track_bandit_over_online(self, policy):
        o, b = least_cpu_times([self.fns["online"], self.fns["bandit"]], REPEATS)
        return b / o

    track_bandit_over_online.unit = "Bandit / Online"

    def track_bandit_rows_over_online(self, policy):
        o, b = least_cpu_times([self.fns["online"], self.fns["bandit-rows"]], REPEATS)
        return b / o

    track_bandit_rows_over_online.unit = "Bandit (rows of arrays) / Online"

    def track_policy_object_over_simulate(self, policy):
        s, p = least_cpu_times([self.fns["simulate"], self.fns["policy"]], REPEATS)
        return p / s

    track_policy_object_over_simulate.unit = "policy object / simulate's round"


class FitPredict:
    params = ([c for c in doors.FIT_CASES if c != "laplace"],)
    param_names = ["policy"]
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        self.fits, self.predicts = doors.fit_predict(policy)
        self.floor = next(k for k in self.fits if k.startswith("floor"))
        for fn in (*self.fits.values(), *self.predicts.values()):  # compile, untimed
            fn()

    def time_bandit_fit(self, policy):
        self.fits["Bandit.fit"]()

    def time_bandit_predict(self, policy):
        self.predicts["Bandit.predict"]()

    def track_fit_over_floor(self, policy):
        f, b = least_cpu_times([self.fits[self.floor], self.fits["Bandit.fit"]], REPEATS)
        return b / f

    track_fit_over_floor.unit = "Bandit.fit / batch update"

    def track_fit_rows_over_floor(self, policy):
        f, b = least_cpu_times([self.fits[self.floor], self.fits["Bandit.fit (rows)"]],
                               REPEATS)
        return b / f

    track_fit_rows_over_floor.unit = "Bandit.fit of the played rows / batch update"

    def track_predict_over_select_many(self, policy):
        o, b = least_cpu_times([self.predicts["Online.select_many"],
                             self.predicts["Bandit.predict"]], REPEATS)
        return b / o

    track_predict_over_select_many.unit = "Bandit.predict / Online.select_many"


class LaplaceFit:
    """``Bandit.fit`` of Thompson sampling over Laplace on the linear model against the
    engine's batch update (goal 3x; its floor is one Newton solve): of the played rows,
    and of the rounds, whose check of every arm's features dominates (one read of them:
    ``track_rounds_read_over_floor``; docs/performance.md)."""

    timeout = TIMEOUT

    def setup(self):
        single_thread()
        self.fits, _ = doors.fit_predict("laplace")
        for fn in self.fits.values():
            fn()

    def time_bandit_fit(self):
        self.fits["Bandit.fit"]()

    def track_fit_over_floor(self):
        f, b = least_cpu_times([self.fits["floor: Laplace.update"], self.fits["Bandit.fit"]],
                               REPEATS)
        return b / f

    track_fit_over_floor.unit = "Bandit.fit / batch update"

    def track_fit_rows_over_floor(self):
        f, b = least_cpu_times([self.fits["floor: Laplace.update"],
                                self.fits["Bandit.fit (rows)"]], REPEATS)
        return b / f

    track_fit_rows_over_floor.unit = "Bandit.fit of the played rows / batch update"

    def track_rounds_read_over_floor(self):
        f, b = least_cpu_times([self.fits["floor: Laplace.update"],
                                self.fits["read of the rounds"]], REPEATS)
        return b / f

    track_rounds_read_over_floor.unit = "one read of the rounds / batch update"


class Batches:
    """Feedback in small batches (``doors.N_BATCH`` logged rounds a call, a service
    learning what came back since its last call): ``Bandit.partial_fit`` against
    ``Online.update_many`` (no goal is stated; docs/performance.md gives the figures)."""

    params = (list(doors.BATCH_CASES),)
    param_names = ["policy"]
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        self.fns = doors.batches(policy)
        for fn in self.fns.values():  # compile, untimed
            fn()

    def time_bandit_partial_fit(self, policy):
        self.fns["Bandit.partial_fit"]()

    def track_partial_fit_over_update_many(self, policy):
        o, b = least_cpu_times([self.fns["Online.update_many"],
                                self.fns["Bandit.partial_fit"]], REPEATS)
        return b / o

    track_partial_fit_over_update_many.unit = "Bandit.partial_fit / Online.update_many"
