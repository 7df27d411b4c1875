"""Figure 1 of the VITS paper: linear pool bandit, zeta = 0.1 (ill-conditioned) and 1.

Setup (section 4.1, appendix H): d = 20, K = 50 arms from a pool of 50 vectors plus
``zeta N(0, I)``, ``theta* ~ N(0, I/d)``, reward noise ``sqrt(1 + zeta^2)``; 50 runs of
1000 rounds, each run on a new instance; mean and standard error of the cumulative regret.

Methods and hyperparameters (appendix E gives only grids; these are this library's
stated defaults, :data:`vits_ref.simulate.POLICY_DEFAULTS`): every method uses
``eta = 1`` (the true noise precision up to ``1 + zeta^2``) and ``lam = 1``. LinTS,
LinUCB (``alpha = 1``), VITS-II (10 steps), VITS-II Hessian-free (10 steps, 20 draws), and
LMC-TS with 10 and 50 steps; VITS and LMC use the decayed step ``h_t = h0/(eta t)``
with ``h0 = 0.01`` (VITS-II), 0.005 for the mean, 0.0025 for the square root and a
symmetrised ``A`` (Hessian-free), 0.02 (LMC-TS). One line is not in the paper: the
Hessian-free variant with the control variate ``grad U(mu)`` (``"vits-hf-cv"``). All
methods see the same contexts and noise in each run (common random numbers), so their
differences are not sampling noise of the environment.
"""

from ..envs import pool
from ..simulate import POLICY_DEFAULTS, make_policy
from ._common import regret_table, run_panels

NAME = "vits-fig1"
DESCRIPTION = "VITS paper Figure 1: linear pool bandit, zeta 0.1 and 1 (d=20, K=50)"
DEFAULTS = {"runs": 50, "rounds": 1000, "seed": 0}
ZETAS = (0.1, 1.0)
DIM, N_ARMS = 20, 50
#: (label, policy name, overrides)
METHODS = (
    ("LinTS", "lints", {}),
    ("LinUCB", "linucb", {}),
    ("VITS-II", "vits-ii", {}),
    ("VITS-II HF (20 draws)", "vits-hf", {}),
    ("VITS-II HF + control variate", "vits-hf-cv", {}),
    ("LMC-TS (10 steps)", "lmc", {"n_steps": 10}),
    ("LMC-TS (50 steps)", "lmc", {"n_steps": 50}),
)


def run(runs=50, rounds=1000, seed=0, out="results/vits-fig1", progress=None, methods=None,
        n_jobs=1):
    """Run the experiment and write ``curves.csv``, ``summary.json``, ``regret.png``.

    Parameters
    ----------
    runs, rounds, seed : int
    out : str
        Output folder (created).
    progress : callable or None
        ``progress(message)`` for status lines.
    methods : sequence of labels, optional
        Subset of :data:`METHODS` to run.

    Returns
    -------
    dict
        The JSON summary.
    """
    chosen = [m for m in METHODS if methods is None or m[0] in methods]
    kl_rounds = sorted({r for r in (10, 100, rounds // 2, rounds) if 1 <= r <= rounds})
    panels = []
    for zeta in ZETAS:
        env = pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="linear", seed=seed)
        methods_ = [(label, make_policy(name, DIM, **overrides))
                    for label, name, overrides in chosen]
        panels.append((f"zeta = {zeta:g}", env, methods_, {"zeta": zeta}))
    hyper = {label: {**POLICY_DEFAULTS[name], **overrides} for label, name, overrides in chosen}
    return run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                      title=f"Linear pool bandit (d={DIM}, K={N_ARMS}, {runs} runs)",
                      extra={"dim": DIM, "n_arms": N_ARMS, "hyperparameters": hyper},
                      kl_rounds=kl_rounds, n_jobs=n_jobs)


table = regret_table
