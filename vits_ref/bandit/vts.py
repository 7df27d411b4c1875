"""Many seeded runs of :class:`vits_ref.VTS` in one compiled driver over blocks of runs.

:func:`simulate_vts` plays the same numbers as :func:`vits_ref.bandit.simulate.simulate`'s
Python loop over :class:`vits_ref.VTS` (Urteaga & Wiggins, sections 3-4), and also records
the per-arm error of the estimated expected reward (their Figure 3) and the CAVI
iterations of every round.
"""

from dataclasses import dataclass

import numpy as np

from ..drivers import cpu
from ..errors import raise_first_divergence
from ..inference.vts import _MEMORY_BUDGET, VTS, _rng_state
from . import _plan, backends
from .result import SimulationResult
from .simulate import simulate

__all__ = ["VTSSimulationResult", "simulate_vts"]


@dataclass
class VTSSimulationResult(SimulationResult):
    """:class:`vits_ref.SimulationResult` of :func:`simulate_vts`, with two more arrays.

    Attributes
    ----------
    reward_sq_error : (n_runs, n_rounds, n_arms) array
        ``(mu_hat_at - mu_at)^2``: the squared error of every arm's posterior-mean expected
        reward (before the round's draw) against the true one.
    cavi_iterations : (n_runs, n_rounds) int array
        CAVI iterations of each round's update (0: the closed form of ``K = 1``).
    """

    reward_sq_error: np.ndarray | None = None
    cavi_iterations: np.ndarray | None = None

    def mse(self):
        """Urteaga & Wiggins eq. (21) along the run: ``MSE_a(t) = 1/t sum_{s <= t} (mu_hat_as -
        mu_as)^2``, mean over runs, shape (n_rounds, n_arms)."""
        t = np.arange(1, self.n_rounds + 1)[:, None]
        return (np.cumsum(self.reward_sq_error, axis=1) / t).mean(axis=0)


def simulate_vts(policy, env, n_rounds, n_runs=1, seed=None, new_instance_per_run=False,
                 n_threads=None, progress=None, first_run=0):
    """``n_runs`` seeded runs of a :class:`VTS` policy in one compiled driver over runs.

    Seeds exactly as :func:`vits_ref.bandit.simulate` (run ``r``: child ``r`` of ``seed``; its
    child 0 draws the environment, child 1 seeds the policy, child 2 the instance), so the
    regret and arms equal those of ``simulate(policy, env, ...)``'s Python loop, number
    for number; the driver also records the per-arm squared error of the estimated
    expected reward and the CAVI iterations.

    Parameters
    ----------
    policy : VTS
        The specification (its state is not used: every run starts at the prior).
    env : Environment
    n_rounds, n_runs : int
    seed : int, SeedSequence or None
    new_instance_per_run : bool, default False
    n_threads : int or None
        Numba threads (default: Numba's current setting).
    progress : callable or None
        ``progress(runs_done, n_runs)`` after each batch.
    first_run : int, default 0
        Index of the first run (runs ``first_run, ..., first_run + n_runs - 1``, as
        :func:`vits_ref.bandit.simulate`'s ``first_run``): a block of runs equals the same rows
        of one call over all runs.

    Returns
    -------
    VTSSimulationResult

    Examples
    --------
    >>> import vits_ref as vr
    >>> from vits_ref.bandit.vts import simulate_vts
    >>> res = simulate_vts(vr.VTS(2, 2, seed=0), vr.envs.vts_scenario("A"),
    ...                    n_rounds=20, n_runs=3, seed=1)
    >>> res.cumulative_regret.shape, res.reward_sq_error.shape
    ((3, 20), (3, 20, 2))
    """
    if not isinstance(policy, VTS):
        raise TypeError(f"policy must be a vits_ref.VTS, got {type(policy).__name__}")
    return simulate(policy, env, n_rounds, n_runs, seed=seed,
                    new_instance_per_run=new_instance_per_run, n_threads=n_threads,
                    progress=progress, first_run=first_run, backend="vts")


class VTSRuns:
    """The runner's backend of :class:`VTS` policies: batches of whole runs (as many as
    :data:`vits_ref.inference.vts._MEMORY_BUDGET` holds) in one compiled driver
    (:func:`vits_ref.drivers.cpu.vts_runs`: a loop over blocks of runs, a block per
    thread), recording the per-arm squared error of the estimated expected reward and the
    CAVI iterations besides."""

    name, order, compiled, exact = "vts", 50, True, True
    result_type = VTSSimulationResult

    def declines(self, block):
        if not isinstance(block.policy, VTS):
            return "the policy is not a VTS"
        return backends.cpu_driver_declines(block, "VTS's driver")

    def run(self, block, rows):
        policy, R, T = block.policy, block.n_runs, block.n_rounds
        A, d, K = block.env.n_arms, block.env.dim, policy.n_components
        sqerr = rows.extras["reward_sq_error"] = np.empty((R, T, A))
        iters = rows.extras["cavi_iterations"] = np.empty((R, T), dtype=np.int64)
        per_run = _plan.WORD * T * A * (4 * d + 3 + K)  # realisation + histories
        batch = _plan.fit(_MEMORY_BUDGET // per_run, R)
        run = cpu.vts_runs()
        for lo in range(0, R, batch):
            hi = min(R, lo + batch)
            contexts, means, rewards, seeds = backends.realise_block(block, lo, hi)
            rngs = np.stack([_rng_state(s) for s in seeds])  # as policy.fresh(...) seeds
            status = np.zeros(hi - lo, dtype=np.int64)
            run(policy.params, policy._prior.kernel, contexts, means, rewards, rngs,
                rows.regret[lo:hi], rows.arms[lo:hi], sqerr[lo:hi], iters[lo:hi], status)
            raise_first_divergence(status, policy.name, block.first_run + lo)
            block.report(hi)


backends.register(VTSRuns())
