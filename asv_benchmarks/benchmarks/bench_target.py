"""Gaussian-target studies (appendices F and I) and the Hessian-free control variate.

``time_trace``: 2000 steps of one method on the d = 10, condition-number-10 target of
``vits-figI`` with the KL recorded after every step (``vits_ref.drivers.cpu.trace_one``).
``track_steps_to_kl``: steps until ``KL <= 0.1`` (``vits-figF``'s statistic, median of 5
seeds; 20 000 cap), which shows LMC's averaging cost against VI.
``track_hf_kl``: KL to the exact posterior in the pool bandit for the plain and the
control-variate Hessian-free policies (the control variate removes the estimator's noise
term ``(theta_j - mu) grad U(mu)^T``, large away from the mode), VITS-II for reference.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import vits_ref  # noqa: E402
from vits_ref.drivers import cpu  # noqa: E402
from vits_ref.experiments.vits.target import METHODS, gaussian_target  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

LABELS = list(METHODS)


def _target():
    # the convention the history was recorded with (precision eigenvalues in [1, 10])
    P, Pm, _ = gaussian_target(10, 10.0, np.random.default_rng(0), scale="precision")
    return P, Pm, 0.1 / np.linalg.eigvalsh(P)[-1]


class TimeTrace:
    """Seconds for 2000 traced steps (KL after each) of each method."""

    params = [LABELS]
    param_names = ["method"]
    timeout = TIMEOUT

    def setup(self, label):
        single_thread()
        self.P, self.Pm, self.h = _target()
        self.code, self.n_mc = METHODS[label]
        self.rec = np.empty(2000)
        self.time_trace(label)  # compile outside the timing

    def time_trace(self, label):
        cpu.trace_one(self.code, True, self.P, self.Pm, self.h, self.n_mc, 2000, 500, 0.0, 1,
                     self.rec)


class TrackStepsToKL:
    """Median over 5 seeds of the steps until KL <= 0.1 (cap 20 000)."""

    params = [LABELS]
    param_names = ["method"]
    unit = "steps"
    timeout = TIMEOUT

    def setup(self, label):
        single_thread()
        self.P, self.Pm, self.h = _target()

    def track_steps_to_kl(self, label):
        code, n_mc = METHODS[label]
        seeds = np.arange(5, dtype=np.int64)
        rec = np.full((5, 20000), np.inf)
        counts = np.zeros(5, dtype=np.int64)
        cpu.trace_many(code, True, self.P, self.Pm, self.h, n_mc, 20000, 1000, 0.1, seeds, rec,
                      counts)
        reached = rec[np.arange(5), np.maximum(counts - 1, 0)] <= 0.1
        return float(np.median(np.where(reached, counts, 20000)))


class TrackHessianFreeKL:
    """Mean KL to the exact posterior at round 300 of the pool bandit (zeta 0.1, d = 20,
    K = 50, 4 runs) for the named Hessian-free policies (their defaults: the paper's
    Algorithm 3, the symmetrised extra and the control variate) and VITS-II:
    the setting where the control variate matters, a mean far from the mode after each
    new observation and only 10 steps per round."""

    params = [["vits-hf", "vits-hf-sym", "vits-hf-cv", "vits-ii"]]
    param_names = ["policy"]
    unit = "nats"
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        self.env = vits_ref.envs.pool(dim=20, n_arms=50, zeta=0.1, seed=0)

    def track_hf_kl(self, policy):
        res = vits_ref.bandit.simulate(policy, self.env, n_rounds=300, n_runs=4, seed=0,
                                kl_rounds=[300], new_instance_per_run=True)
        return float(res.kl.mean())
