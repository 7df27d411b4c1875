"""What a block of simulated bandit runs returns: :class:`SimulationResult`.

Assembled by :func:`vits_ref.bandit.simulate` from the rows a backend
(:mod:`vits_ref.bandit.backends`) computed; a backend that records more arrays returns a
subclass (:class:`vits_ref.bandit.vts.VTSSimulationResult`).
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SimulationResult"]


@dataclass
class SimulationResult:
    """Outcome of :func:`simulate`.

    Attributes
    ----------
    regret, cumulative_regret : (n_runs, n_rounds) arrays
        Instantaneous (exact: expected reward of the best arm minus that of the played
        arm) and cumulative regret.
    arms : (n_runs, n_rounds) int array
        Arms played.
    kl_rounds : (n_kl,) int array
        1-based rounds at which ``kl`` was recorded.
    kl : (n_runs, n_kl) array or None
        ``KL(q_t || p_t)`` from the engine's Gaussian to the exact linear posterior after
        the update of those rounds; None for policies without a Gaussian posterior.
    wall_time : float
        Seconds for all runs (randomness drawn, compiled loop or Python loop).
    fused : bool
        Whether the fused compiled loop ran.
    """

    policy: str
    environment: str
    regret: np.ndarray
    arms: np.ndarray
    kl_rounds: np.ndarray
    kl: np.ndarray | None
    wall_time: float
    fused: bool
    seed: object = None
    cumulative_regret: np.ndarray = field(init=False)

    def __post_init__(self):
        self.cumulative_regret = np.cumsum(self.regret, axis=1)

    @property
    def n_runs(self):
        return self.regret.shape[0]

    @property
    def n_rounds(self):
        return self.regret.shape[1]

    def mean_and_stderr(self):
        """Mean and standard error over runs of the cumulative regret, each (n_rounds,)."""
        cr = self.cumulative_regret
        se = cr.std(axis=0, ddof=1) / np.sqrt(cr.shape[0]) if cr.shape[0] > 1 else 0 * cr[0]
        return cr.mean(axis=0), se
