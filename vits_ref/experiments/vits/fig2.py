"""Figure 2 of the VITS paper: the quadratic pool bandit with a neural reward model.

Pool environment of appendix H with ``r = (x theta*)^2 + alpha eps``,
``alpha = (1 + zeta^2) sqrt(3 + 6/d)``, ``d = 20``, ``K = 50``, zeta 0.1 and 1. VITS-II,
VITS-II Hessian-free (20 draws, symmetrised) and LMC-TS use the MLP ``x -> 20 -> 20 -> 1``
(ReLU, 861 parameters; :class:`vits_ref.models.MLP`, Hessian = Gauss-Newton matrix);
LinTS is the misspecified linear baseline. 10 inner steps per round.

Hyperparameters: ``eta = 1``, ``lam = 10`` (prior ``N(0, I/10)``: with ``lam = 1`` a prior
draw of the weights gives outputs and a Gauss-Newton curvature so large that VITS
diverged in the first round even at ``h0 = 1e-3``), decayed steps ``h_t = 1e-3 / t``.
The Hessian-free variant estimates the 861 x 861 matrix ``A`` from 20 draws: a rank-20
estimate whose nonzero eigenvalues are ~40 times too large in the first rounds, so with the
same square-root step it diverged in round 1; its square root uses ``h0 = 1e-4`` (stable
over 20 rounds x 2 runs at both zetas; 3e-4 was borderline).

Cost: a VITS step on 861 parameters is three 861 x 861 products (about 34 ms each on one
core here, 95% of a round), so a round takes about a second and the paper's 50 runs x
1000 rounds x 2 zetas would take days on 2 cores. The default is 2 runs x 100 rounds
(about 15 minutes); ``--runs`` and ``--rounds`` scale it up.
"""

from ...envs import pool
from ...inference import VITS, Langevin, LinTS
from ...models import MLP
from ...policies import ThompsonSampling
from .._common import regret_table, run_panels

NAME = "vits-fig2"
DESCRIPTION = "VITS paper Figure 2: quadratic pool bandit with a 20-20 MLP (small default)"
DEFAULTS = {"runs": 2, "rounds": 100, "seed": 0}
ZETAS = (0.1, 1.0)
DIM, N_ARMS, HIDDEN = 20, 50, (20, 20)
ETA, LAM, STEP, HF_COV_STEP = 1.0, 10.0, 1e-3, 1e-4


def policies():
    """``(label, policy)`` pairs."""
    net = MLP(DIM, hidden=HIDDEN)
    common = {"model": net, "eta": ETA, "lam": LAM, "step_size": STEP, "n_steps": 10}
    return [("LinTS", ThompsonSampling(LinTS(DIM, eta=1.0, lam=1.0))),
            ("VITS-II", ThompsonSampling(VITS(net.dim, variant="II", **common))),
            ("VITS-II HF (20 draws)", ThompsonSampling(
                VITS(net.dim, variant="hessian_free", n_mc=20, symmetrize=True,
                     cov_step_size=HF_COV_STEP, **common))),
            ("LMC-TS", ThompsonSampling(Langevin(net.dim, **common)))]


def run(runs=2, rounds=100, seed=0, out="results/vits-fig2", progress=None, methods=None,
        n_jobs=1):
    """Run both panels; writes ``curves.csv``, ``summary.json``, ``regret.png``."""
    panels = [(f"zeta = {zeta:g}",
               pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="quadratic", seed=seed),
               [m for m in policies() if methods is None or m[0] in methods], {"zeta": zeta})
              for zeta in ZETAS]
    return run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                      title=f"Quadratic pool bandit ({runs} runs)",
                      extra={"eta": ETA, "lam": LAM, "step_size": STEP,
                             "hf_cov_step_size": HF_COV_STEP, "hidden": HIDDEN},
                      n_jobs=n_jobs)


table = regret_table
