r"""Section 6.3 of Kveton et al. (Figure 3): MovieLens with a diffusion prior, linear and logistic.

Setup, as the paper states it: the ratings minus their mean, completed by alternating
least squares with rank ``d = 5`` (``M = U V^T``); ``K = 10`` random actions per round;
linear rewards with noise ``sigma = 0.75`` and logistic rewards (``g`` the sigmoid). The
prior of ``theta_*`` is the empirical distribution of the movie vectors ``V_j`` and the
arms are user vectors ``U_i``, as the paper says ("We use the item embeddings V_j as
unknown model parameters and the user embeddings U_i as features of the actions";
:func:`vits_ref.envs.diffusion.movielens_prior_bandit`); ``theta_*`` is drawn from it in
every run. The diffusion prior (``T = 100``,
``alpha_t = 0.97``) is learned from those vectors (all of them when there are fewer than
10 000).

Data: without ``--data`` the synthetic low-rank stand-in of :mod:`vits_ref.data` (the
library's loader; MovieLens cannot be downloaded here). The paper's claims are judged on
it and labelled as judged on substitute data (the claim table); the summary says so, with
the command for a real MovieLens-1M ``ratings.dat`` (:data:`REAL_DATA_COMMAND`), as
``vits-movielens`` does.

Methods: TS (``N(0, I)``), TunedTS, MixTS (linear only, 2 components), DPS (linear
only) and DiffTS; paired differences against DiffTS. Runs and rounds are not stated in
the paper: 100 runs of 100 rounds, as the synthetic problems (see
:mod:`~vits_ref.experiments.diffts.synthetic` for that horizon).

Execution: the bandit runs go in resumable chunks of runs, as in every experiment of
:mod:`vits_ref.experiments.diffts` (its docstring says what a rerun reuses).
"""

from .._chunks import check_progress
from .._common import regret_table
from ..plotting import paper_title
from . import _shared

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("diffts", "Figure 3: MovieLens")}

NAME = "diffts-movielens"
DESCRIPTION = ("Diffusion-prior paper section 6.3: MovieLens rank-5 embeddings, K = 10, "
               "linear (sigma = 0.75) and logistic rewards (--data)")
DEFAULTS = {"runs": 100, "rounds": 100, "seed": 0}
RANK, N_ARMS, SIGMA = 5, 10, 0.75
REWARDS = ("linear", "logistic")
REAL_DATA_COMMAND = "python -m vits_ref run diffts-movielens --data /path/to/ratings.dat"
STAND_IN_NOTE = (
    "These curves come from the synthetic low-rank stand-in of vits_ref.data, not from "
    "MovieLens: the paper's claims about MovieLens (section 6.3, Figure 3) are judged on "
    "substitute data here. To judge them on MovieLens, download MovieLens-1M "
    "(grouplens.org) and run: "
    + REAL_DATA_COMMAND)


def environment(reward, seed, path=None, synthetic_kwargs=None):
    """The MovieLens prior bandit (:func:`vits_ref.envs.diffusion.movielens_prior_bandit`:
    ``theta`` a movie vector, the arms user vectors, as the paper)."""
    from ...envs.diffusion import movielens_prior_bandit

    return movielens_prior_bandit(path=path, reward=reward, n_arms=N_ARMS, sigma=SIGMA,
                                  rank=RANK, synthetic_kwargs=synthetic_kwargs, seed=seed)


def run(runs=100, rounds=100, seed=0, out="results/diffts-movielens", progress=None,
        path=None, rewards=REWARDS, methods=_shared.METHODS, n_stages=100, alpha=0.97,
        n_train=10_000, train_kwargs=None, n_energy=1000, synthetic_kwargs=None, n_jobs=1):
    """Run the experiment; writes ``curves.csv``, ``summary.json``, ``regret.png``.

    The bandit runs go in resumable chunks (``out/chunks``; see the module docstring).

    ``path``: a MovieLens ``ratings.dat`` (or ``ratings.csv``); None: the stand-in
    (``synthetic_kwargs`` sizes it, the tests use a small one). ``rewards``: the panels.
    ``train_kwargs``: training options of the diffusion prior (tests: few epochs). Other
    parameters as :func:`vits_ref.experiments.diffts.synthetic.run`.
    """
    check_progress(progress)
    envs = {r: environment(r, seed, path, synthetic_kwargs) for r in rewards}
    first = envs[rewards[0]]
    source = "synthetic" if path is None else "file"
    extra = {"data": source, "n_arms": N_ARMS, "rank": RANK, "n_users": first.pool.shape[0],
             "n_movies": first.prior_pool.shape[0], "real_data_command": REAL_DATA_COMMAND}
    if source == "synthetic":
        extra["stand_in_note"] = STAND_IN_NOTE
    train_kwargs, training = _shared.scaled_training(train_kwargs, runs, rounds, DEFAULTS,
                                                     progress)
    extra["prior_training"] = training
    return _shared.run_embedding_experiment(
        NAME, DESCRIPTION, first.prior_pool, lambda r: envs[r], rewards, SIGMA, runs,
        rounds, seed, out, progress, methods, n_stages, alpha, n_train, train_kwargs,
        n_energy, n_jobs, extra, f"{TITLES['regret.png']} ({source} data)")


def table(result):
    """The regret table (paired differences against DiffTS); on the stand-in, the note."""
    text = regret_table(result)
    e = result.get("energy")
    if e:
        text += (f"\n\nenergy distance diffusion prior / data: {e['learned_vs_true']:.4f} "
                 f"(two halves of the data: {e['true_vs_true']:.4f})")
    if result.get("data") != "file":
        text += "\n\n" + result.get("stand_in_note", STAND_IN_NOTE)
    return text
