r"""Appendix C.2 of Kveton et al. (Figure 5) on scikit-learn's handwritten digits.

**Data.** The paper uses MNIST; this experiment uses the 1797 8 x 8 digits that
scikit-learn ships (``sklearn.datasets.load_digits``: real data, no download), which
replace MNIST here. The protocol is the appendix's (:mod:`vits_ref.data.digits`): an MLP
classifier of the digits gives ``d = 8`` dimensional embeddings (the arms' features); a
prior over ``theta_*`` comes from 10 000 linear fits, each on a random 20-point subset
with 50% positive labels (one random digit, reward 1) and 50% negative (reward -1).

Bandit: ``theta_*`` drawn from that prior in every run, ``K = 10`` random digits per
round; linear rewards ``x^T theta_*`` with noise ``sigma = 1`` and logistic rewards
``g(x^T theta_*)``. Methods as in :mod:`~vits_ref.experiments.diffts.movielens` (MixTS and
DPS on the linear panel only), paired differences against DiffTS; 100 runs of 100 rounds
(not stated in the paper). Needs scikit-learn (a test extra) for the data.

Execution: the bandit runs go in resumable chunks of runs, as in every experiment of
:mod:`vits_ref.experiments.diffts` (its docstring says what a rerun reuses).
"""

from .._chunks import check_progress
from .._common import regret_table
from ..plotting import paper_title
from . import _shared

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("diffts", "Figure 5: scikit-learn's digits (replace MNIST)")}

NAME = "diffts-digits"
DESCRIPTION = ("Diffusion-prior paper appendix C.2 on scikit-learn's digits (replaces "
               "MNIST): 8-d embeddings, K = 10, linear (sigma = 1) and logistic rewards")
DEFAULTS = {"runs": 100, "rounds": 100, "seed": 0}
#: What does not shrink with a smaller request (``run --help`` and stderr say it).
FIXED_COST = ("the digits protocol (the classifier fits behind the 8-d embeddings) "
              "and a prior on 10 000 samples (its epochs and checks scale)")
#: What the experiment imports from an extra: ``(module, distribution, extra, needed
#: with --data)`` (checked by the command line before any work).
NEEDS = (("sklearn", "scikit-learn", "data", True),)
N_ARMS, SIGMA, DIM = 10, 1.0, 8
REWARDS = ("linear", "logistic")


def environment(reward, seed, **data_kwargs):
    """The digits prior bandit (:func:`vits_ref.envs.diffusion.digits_prior_bandit`)."""
    from ...envs.diffusion import digits_prior_bandit

    return digits_prior_bandit(reward=reward, n_arms=N_ARMS, sigma=SIGMA, seed=seed,
                               **data_kwargs)


def run(runs=100, rounds=100, seed=0, out="results/diffts-digits", progress=None,
        rewards=REWARDS, methods=_shared.METHODS, n_stages=100, alpha=0.97, n_train=10_000,
        train_kwargs=None, n_energy=1000, data_kwargs=None, n_jobs=1):
    """Run the experiment; writes ``curves.csv``, ``summary.json``, ``regret.png``.

    The bandit runs go in resumable chunks (``out/chunks``; see the module docstring).

    ``data_kwargs``: options of the digits protocol (:mod:`vits_ref.data.digits`; the tests
    use fewer fits and classifier epochs). Other parameters as
    :func:`vits_ref.experiments.diffts.movielens.run`.
    """
    check_progress(progress)
    data_kwargs = dict(data_kwargs or {})
    envs = {r: environment(r, seed, **data_kwargs) for r in rewards}
    first = envs[rewards[0]]
    extra = {"data": "sklearn digits (replaces MNIST)", "n_arms": N_ARMS,
             "data_kwargs": data_kwargs}
    train_kwargs, training = _shared.scaled_training(train_kwargs, runs, rounds, DEFAULTS,
                                                     progress)
    extra["prior_training"] = training
    return _shared.run_embedding_experiment(
        NAME, DESCRIPTION, first.prior_pool, lambda r: envs[r], rewards, SIGMA, runs,
        rounds, seed, out, progress, methods, n_stages, alpha, n_train, train_kwargs,
        n_energy, n_jobs, extra, TITLES["regret.png"])


def table(result):
    """The regret table (paired differences against DiffTS) and the prior check."""
    e = result["energy"]
    return (regret_table(result) + f"\n\nenergy distance diffusion prior / thetas: "
            f"{e['learned_vs_true']:.4f} (two halves: {e['true_vs_true']:.4f})")
