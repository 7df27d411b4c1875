"""Rényi VI: one RenyiVI update, compiled against plain NumPy, and its accuracy.

The problem of ``vits_ref._bench.renyi``: ``RenyiVI(20, model="linear")`` with 100
observations, one update = 10 Adam steps on 300 Monte Carlo draws (the appendix C
setting, at d = 20). The library side is the engine's ``_refit`` (draws the (10, 300, 20)
normals from its stream, runs the compiled steps on its state in place), restored to the
same state before each call; the NumPy side is ``vits_ref.reference.renyi.renyi_steps`` from
the same state. ``time_steps_*`` time the steps alone on the same pre-drawn normals (the
normals, about 0.6 ms of NumPy's Generator, are the same work on both sides).
``TrackRenyiUpdate`` reports the ratios from interleaved medians in one process.
``TimeRenyiLogisticUpdate``: the logistic model's update on 1000 observations at d = 10,
against NumPy and against its two products per step (the floor).
``TrackRenyiKL``: ``KL(q || p)`` to the exact linear-Gaussian posterior after a fixed
number of steps (seeded, so deterministic for a build; a change means the numerics
changed).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import vits_ref  # noqa: E402
from vits_ref._bench import renyi as br  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402


class TimeRenyiUpdate:
    """One RenyiVI update (d = 20, 100 observations, 300 draws, 10 Adam steps)."""

    params = ((0.5, 1.0),)
    param_names = ["alpha"]
    timeout = TIMEOUT

    def setup(self, alpha):
        single_thread()
        eng = br.engine(alpha=alpha)  # compiles (or loads the cache) untimed
        eps = np.random.default_rng(2).standard_normal((eng.n_steps, eng.n_mc, eng.dim))
        self.update, self.update_ref = br.EngineUpdate(eng), br.NumpyUpdate(eng)
        self.steps, self.steps_ref = br.EngineSteps(eng, eps), br.NumpySteps(eng, eps)
        self.update()
        self.steps()

    def time_update_compiled(self, alpha):
        """``RenyiVI._refit``: draw the normals, 10 compiled steps."""
        self.update()

    def time_update_reference(self, alpha):
        """The same update in NumPy."""
        self.update_ref()

    def time_steps_compiled(self, alpha):
        """The compiled steps on pre-drawn normals."""
        self.steps()

    def time_steps_reference(self, alpha):
        """The NumPy steps on the same normals."""
        self.steps_ref()


class TimeRenyiLogisticUpdate:
    """One logistic RenyiVI update (d = 10, 1000 observations, 300 draws, 10 Adam steps)."""

    timeout = TIMEOUT

    def setup(self):
        single_thread()
        eng = br.logistic_engine()  # compiles (or loads the cache) untimed
        self.update, self.update_ref = br.EngineUpdate(eng), br.NumpyUpdate(eng)
        self.floor = br.StepProducts(eng)
        self.update()

    def time_update_compiled(self):
        """``RenyiVI._refit`` on the logistic model."""
        self.update()

    def time_update_reference(self):
        """The same update in NumPy (``reference.renyi.logistic_values_grads``)."""
        self.update_ref()

    def time_step_products(self):
        """The floor: the two products of each of the 10 steps."""
        self.floor()


class TrackRenyiUpdate:
    """NumPy / compiled per update and per steps (alpha = 0.5), interleaved medians of 21."""

    timeout = TIMEOUT

    def setup_cache(self):
        single_thread()
        return br.update_stats(repeats=21, alpha=0.5)

    def track_ratio_update(self, stats):
        return stats["ratio"]

    track_ratio_update.unit = "ratio"

    def track_ratio_steps(self, stats):
        return stats["steps_ratio"]

    track_ratio_steps.unit = "ratio"

    def track_update_us(self, stats):
        return stats["compiled"]

    track_update_us.unit = "us"


class TrackRenyiKL:
    """``KL(q || p)`` (nats) after ``n_steps`` Adam steps at 2e-2 from the prior, d = 5."""

    params = ((0.5, 1.0, 2.0), (100, 1000))
    param_names = ["alpha", "n_steps"]
    unit = "nats"
    timeout = TIMEOUT

    def setup(self, alpha, n_steps):
        single_thread()
        self.X, self.r = br.problem(dim=5, n_obs=50, seed=1)

    def track_kl_to_posterior(self, alpha, n_steps):
        eng = vits_ref.RenyiVI(5, alpha=alpha, n_steps=n_steps, seed=0)
        return eng.update(self.X, self.r).kl_to_posterior()
