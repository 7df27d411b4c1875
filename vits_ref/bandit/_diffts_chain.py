"""The runner's backend of linear DiffTS (Kveton et al.): runs in one compiled driver.

Thompson sampling over :class:`vits_ref.inference.diffts.DiffTS` on the linear model draws
each round's sample by the reverse chain of Theorem 2 of Kveton et al.;
:func:`vits_ref.diffusion.chain.run_linear_bandit` runs whole runs of it in one compiled
loop over runs, fed the runs' realisations and the chains' normals drawn from the policy
seeds as ``DiffTS(prior, seed=...)`` draws them online, so the regret and arms equal the
Python loop's bit for bit (``tests/test_runner_conformance.py``).
"""

from ..diffusion.chain import run_linear_bandit
from ..inference.diffts import DiffTS
from . import _plan, backends
from .policies import ThompsonSampling
from .result import SimulationResult

#: Bytes of realisations held at once (a batch of whole runs; the numbers do not depend
#: on the batches: each run has its own seeds).
MEMORY_BUDGET = 256 * 2 ** 20


def is_linear_diffts(policy):
    """Whether ``policy`` is Thompson sampling over DiffTS on the linear model."""
    eng = getattr(policy, "engine", None)
    return (isinstance(policy, ThompsonSampling) and isinstance(eng, DiffTS)
            and eng.model.name == "linear")


class DiffTSChains:
    """Linear DiffTS runs, batches of whole runs in one compiled driver each (a loop over
    blocks of runs, a block per thread)."""

    name, order, compiled, exact = "diffts-chain", 60, True, True
    result_type = SimulationResult

    def declines(self, block):
        if not is_linear_diffts(block.policy):
            return "the policy is not Thompson sampling over DiffTS on the linear model"
        return backends.cpu_driver_declines(block, "DiffTS's driver")

    def run(self, block, rows):
        eng = block.policy.engine
        R, T, env = block.n_runs, block.n_rounds, block.env
        # a run's realisation (contexts, means, rewards) and its chains' normals
        per_run = _plan.WORD * T * (env.n_arms * (env.dim + 2) + (eng.prior.n_stages + 1)
                                    * eng.prior.dim)
        batch = _plan.fit(MEMORY_BUDGET // per_run, R)
        for lo in range(0, R, batch):
            hi = min(R, lo + batch)
            contexts, means, rewards, seeds = backends.realise_block(block, lo, hi)
            rows.regret[lo:hi], rows.arms[lo:hi] = run_linear_bandit(
                eng.prior, contexts, means, rewards, sigma=eng.sigma, seeds=seeds,
                first_run=block.first_run + lo)
            block.report(hi)


backends.register(DiffTSChains())
