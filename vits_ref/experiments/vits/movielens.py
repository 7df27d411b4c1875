"""Section 5 of the VITS paper: MovieLens, logistic rewards, one posterior per movie.

Setup of Aouali et al. (2022): rank-5 factorisation of the MovieLens-1M ratings; each run
draws 100 random movies as the arms; each round's context is a random user vector ``x``
and movie ``a`` pays ``Bernoulli(sigmoid(x theta_a))``. Every arm has its own posterior
(:class:`vits_ref.PerArm`) with the prior ``N(mu0, diag(sigma0))``, ``mu0`` and ``sigma0``
the mean and variance of all movie vectors. Without ``--data`` (a user-supplied
``ratings.dat``) the synthetic low-rank stand-in of :mod:`vits_ref.data` is used,
so the curves are not the paper's (the real data cannot be downloaded here).

Methods: LinTS (Gaussian likelihood, misspecified), LMC-TS (10 steps), VITS-II (10 steps)
and VITS-II Hessian-free (10 steps, 20 draws, symmetrised), all on the logistic model
with that prior, plus Laplace (IRLS) TS as the GLM reference. ``eta = 1``; decayed steps
``h_t = h0 / t`` with ``h0 = 0.1``, ``t`` the arm's own number of observations: the
potential's curvature is at most ``1/sigma0 + |x|^2 / 4`` per observation (about 3 + 1.1
on the stand-in), so ``h_t`` times the largest curvature stays below 0.5.
"""

from ...envs import movielens
from ...inference import VITS, Langevin, Laplace, LinTS
from ...models import Linear, Logistic
from ...policies import PerArm
from .._common import regret_table, run_panels

NAME = "vits-movielens"
DESCRIPTION = "VITS paper section 5: MovieLens logistic bandit, a posterior per movie"
DEFAULTS = {"runs": 50, "rounds": 1000, "seed": 0}
N_MOVIES, RANK, STEP = 100, 5, 0.1


def policies(env, n_movies):
    """``(label, policy)`` pairs with the environment's prior."""
    prior = {"prior_mean": env.prior_mean, "prior_cov": env.prior_var}
    logistic = Logistic(RANK, **prior)
    steps = {"model": logistic, "eta": 1.0, "step_size": STEP, "n_steps": 10}
    return [
        ("LinTS", PerArm(LinTS(RANK, eta=1.0, model=Linear(RANK, **prior)), n_movies)),
        ("LMC-TS", PerArm(Langevin(RANK, **steps), n_movies)),
        ("VITS-II", PerArm(VITS(RANK, variant="II", **steps), n_movies)),
        ("VITS-II HF", PerArm(VITS(RANK, variant="hessian_free", n_mc=20, symmetrize=True,
                                   **steps), n_movies)),
        ("Laplace", PerArm(Laplace(RANK, model=logistic, eta=1.0), n_movies)),
    ]


def run(runs=50, rounds=1000, seed=0, out="results/vits-movielens", progress=None,
        path=None, n_movies=N_MOVIES, methods=None, synthetic_kwargs=None, n_jobs=1):
    """Run the experiment; writes ``curves.csv``, ``summary.json``, ``regret.png``.

    ``path``: a MovieLens ``ratings.dat`` (or ``ratings.csv``); None for the stand-in.
    """
    env = movielens(path=path, n_movies=n_movies, seed=seed, rank=RANK,
                    synthetic_kwargs=synthetic_kwargs)
    chosen = [m for m in policies(env, n_movies) if methods is None or m[0] in methods]
    panel = f"MovieLens ({env.source} data)"
    result = run_panels(NAME, DESCRIPTION, [(panel, env, chosen, {})], runs, rounds, seed,
                        out, progress,
                        extra={"n_movies": n_movies, "data": env.source, "step_size": STEP,
                               "prior_mean": env.prior_mean, "prior_var": env.prior_var},
                        n_jobs=n_jobs)
    return result


table = regret_table
