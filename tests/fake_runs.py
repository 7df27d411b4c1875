"""Stand-ins for the runner's tests: a policy and a ``simulate_fn`` that cost nothing, so
that :func:`vits_ref.experiments._common.run_panels`' bookkeeping (candidates, labels,
outputs) is tested without compiling a kernel."""

import numpy as np

from vits_ref.bandit.simulate import SimulationResult
from vits_ref.errors import DivergenceError


class Policy:
    """A stand-in policy: only its step size matters to :func:`fake_simulate`."""

    def __init__(self, step_size):
        self.step_size = step_size
        self.name = "fake"

    def __repr__(self):
        return f"Policy(step_size={self.step_size})"


def fake_simulate(policy, env, n_rounds, n_runs, seed, new_instance_per_run=True,
                  kl_rounds=None, first_run=0, device="cpu"):
    """The step 0.01 diverges on the panel ``"A"`` only; regrets are constant."""
    if env == "A" and policy.step_size == 0.01:
        raise DivergenceError("fake", round=1, step_size=0.01, run=first_run)
    regret = np.full((n_runs, n_rounds), policy.step_size)
    return SimulationResult("fake", env, regret, np.zeros((n_runs, n_rounds), np.int64),
                            np.zeros(0, np.int64), None, 0.0, False, seed)
