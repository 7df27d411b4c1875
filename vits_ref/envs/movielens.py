"""Section 5 of the VITS paper: the MovieLens per-arm bandit.

The setting (Aouali et al. 2022, used in section 5 of Clavier, Huix and Durmus, ICML
2024): factorise the MovieLens-1M rating matrix at rank 5 into user vectors ``x_i`` and
movie vectors ``theta_j``; each run picks 100 random movies as the arms; each round the
context is a uniformly random user vector ``x_t``, and arm ``a`` pays
``Bernoulli(sigmoid(x_t . theta_a))``. Each arm has its own posterior, with the prior
``N(mu_0, diag(sigma_0))`` whose mean and variance are those of all the movie vectors,
dimension by dimension.

The data (a user-supplied ratings file or the synthetic stand-in) and its factorisation
live in :mod:`vits_ref.data`; :func:`vits_ref.data.factorization` caches the factors per
file or stand-in and ALS setting, so that 50 runs with a fresh choice of movies each
factorise once.
"""

import numbers
import os

import numpy as np

from .. import _validate as val
from ..data import factorization
from .base import Environment
from .rounds import Draw, RoundDraws

__all__ = ["REWARDS", "MovieLensEnvironment", "movielens"]

#: The reward models of the MovieLens bandit.
REWARDS = ("linear", "logistic")


class MovieLensEnvironment(Environment):
    """Section 5 of the VITS paper (setting of Aouali et al. 2022): per-arm logistic bandit.

    Users and movies are the rank-``rank`` ALS factors of the ratings
    (:func:`vits_ref.data.factorize` on ``path``, or on
    :func:`vits_ref.data.synthetic_ratings` when ``path`` is None; ``source`` says
    which). The instance, fixed by ``seed``, is ``n_movies`` distinct movies drawn
    uniformly: the arms, with parameters ``theta_star[a]`` (their movie vectors). Each
    round draws one user ``i`` uniformly and every arm sees the same context ``x_i``.
    Expected reward of arm ``a``: ``sigmoid(x_t . theta_a)`` (``reward="logistic"``,
    Bernoulli rewards) or ``x_t . theta_a`` (``"linear"``, plus ``N(0, noise_scale^2)``
    noise, one draw per round shared by the arms, as in the other environments).

    Parameters
    ----------
    path : str, os.PathLike or None
        A MovieLens ``ratings.dat`` or ``ratings.csv`` (:func:`vits_ref.data.load_ratings`);
        None for the synthetic stand-in.
    n_movies : int, default 100
        Number of arms ``K``.
    reward : {"logistic", "linear"}
    rank : int, default 5
        The dimension ``d`` of the user and movie vectors.
    noise_scale : float, default 0.75
        Noise of the linear variant (0.75 as in the MovieLens experiment of the
        diffusion-prior paper); unused for logistic rewards.
    lam, n_iter : float, int
        ALS settings (:func:`vits_ref.data.factorize`).
    data_seed : int, default 0
        Seeds the stand-in and the ALS initialisation: the *data*, shared by all
        instances. ``seed`` only picks the movies.
    synthetic_kwargs : dict, optional
        Passed to :func:`vits_ref.data.synthetic_ratings` (``n_users``, ``n_movies``, ``n_ratings``,
        ``noise``; ``rank`` defaults to ``rank``); the default is the full-size stand-in.
    seed : int, SeedSequence, Generator or None
        The instance: which movies are the arms.

    Attributes
    ----------
    theta_star, arm_params : ndarray, shape (K, d)
        The arms' movie vectors (per-arm parameters; ``theta_star`` is 2-D here, unlike
        the shared-parameter environments).
    arm_movies : ndarray of int, shape (K,)
        Indices of the arms among all movies (``movie_ids[arm_movies]`` are file ids).
    user_vectors : ndarray, shape (n_users, d)
        The pool of contexts.
    movie_vectors : ndarray, shape (n_all_movies, d)
        All movie vectors.
    prior_mean, prior_var : ndarray, shape (d,)
        The prior of the paper: mean and (population, ddof = 0) variance of *all* movie
        vectors, dimension by dimension; the prior of each arm is
        ``N(prior_mean, diag(prior_var))``.
    source : {"file", "synthetic"}
    data_info : dict
        The factorisation's ``global_mean``, training ``rmse`` per sweep, ``seconds``,
        ``n_users``, ``n_movies``, ``n_ratings``, ``source`` (path or description), ids.

    Notes
    -----
    :meth:`realise` returns contexts of shape (T, K, d) whose K rows are equal (the user
    vector), so the shared-parameter code paths (regret from ``means``) work unchanged;
    a per-arm policy uses ``contexts[t, a]`` with arm ``a``'s own posterior.
    """

    name = "movielens"

    def __init__(self, path=None, n_movies=100, reward="logistic", rank=5, noise_scale=0.75,
                 lam=1.0, n_iter=50, data_seed=0, synthetic_kwargs=None, seed=None):
        reward = val.choice(reward, "reward", REWARDS)
        rank = val.positive_int(rank, "rank")
        n_movies = val.positive_int(n_movies, "n_movies")
        self.noise_scale = val.positive_float(noise_scale, "noise_scale")
        self.lam = val.positive_float(lam, "lam")
        self.n_iter = val.positive_int(n_iter, "n_iter")
        if not isinstance(data_seed, numbers.Integral) or isinstance(data_seed, bool):
            raise TypeError(f"data_seed must be an int, got {type(data_seed).__name__}")
        if data_seed < 0:
            raise ValueError(f"data_seed must be non-negative, got {data_seed}")
        self.data_seed = int(data_seed)
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str, an os.PathLike or None, "
                            f"got {type(path).__name__}")
        if synthetic_kwargs is None:
            synthetic_kwargs = {}
        if not isinstance(synthetic_kwargs, dict):
            raise TypeError("synthetic_kwargs must be a dict or None")
        allowed = {"n_users", "n_movies", "n_ratings", "rank", "noise"}
        if set(synthetic_kwargs) - allowed:
            raise ValueError(f"synthetic_kwargs: unknown keys "
                             f"{sorted(set(synthetic_kwargs) - allowed)}; allowed "
                             f"{sorted(allowed)}")
        if path is not None and synthetic_kwargs:
            raise ValueError("synthetic_kwargs is only used when path is None")
        self.path = None if path is None else os.fspath(path)
        self.synthetic_kwargs = dict(synthetic_kwargs)
        self.source = "synthetic" if path is None else "file"
        U, V, info = factorization(self.path, rank, self.lam, self.n_iter, self.data_seed,
                                   self.synthetic_kwargs)
        if n_movies > V.shape[0]:
            raise ValueError(f"n_movies must be <= the number of movies in the data "
                             f"({V.shape[0]}), got {n_movies}")
        self.user_vectors, self.movie_vectors, self.data_info = U, V, info
        self.prior_mean = V.mean(axis=0)
        self.prior_var = V.var(axis=0)
        super().__init__(rank, n_movies, reward, seed)

    def _build(self, rng):
        self.arm_movies = np.sort(rng.choice(self.movie_vectors.shape[0], self.n_arms,
                                             replace=False))
        self.theta_star = self.movie_vectors[self.arm_movies]

    @property
    def arm_params(self):
        """The arms' parameters ``theta_star``, shape (K, d)."""
        return self.theta_star

    @property
    def n_users(self):
        return self.user_vectors.shape[0]

    def expected_reward(self, contexts):
        """Expected reward of each arm: ``contexts`` (..., K, d) -> (..., K).

        Row ``a`` of the last two axes is arm ``a``'s context, multiplied by
        ``theta_star[a]``. A 1-D ``contexts`` (d,) is one user vector shown to every arm.
        """
        x = np.asarray(contexts, dtype=float)
        if x.ndim == 1:
            x = np.broadcast_to(x, self.theta_star.shape)
        if x.shape[-2:] != self.theta_star.shape:
            raise ValueError(f"contexts must have shape (..., {self.n_arms}, {self.dim}), "
                             f"got {x.shape}")
        return self._link(np.einsum("...kd,kd->...k", x, self.theta_star))

    def round_draws(self):
        """A round: one user, uniform among the users, whose vector every arm sees; then
        the reward model's draws (:meth:`Environment._reward_round`). No counter piece."""
        users, K, d = self.user_vectors, self.n_arms, self.dim

        def contexts(parts, n):
            x = users[parts[0]]
            return np.ascontiguousarray(np.broadcast_to(x[:, None, :], (n, K, d)))

        return RoundDraws((Draw("integers", (), high=self.n_users),), contexts,
                          **self._reward_round())

    def _params(self):
        return {"path": self.path, "n_movies": self.n_arms, "reward": self.reward,
                "rank": self.dim, "noise_scale": self.noise_scale, "lam": self.lam,
                "n_iter": self.n_iter, "data_seed": self.data_seed,
                "synthetic_kwargs": self.synthetic_kwargs, "seed": self.seed}


def movielens(path=None, n_movies=100, seed=None, rank=5, reward="logistic", noise_scale=0.75,
              synthetic_kwargs=None, lam=1.0, n_iter=50, data_seed=0):
    """The MovieLens per-arm bandit of section 5 (see :class:`MovieLensEnvironment`).

    Parameters
    ----------
    path : str, os.PathLike or None
        A MovieLens-1M ``ratings.dat`` (or ml-latest ``ratings.csv``) you downloaded; None
        uses the synthetic low-rank stand-in (``env.source`` says which).
    n_movies : int, default 100
        Number of arms, distinct random movies fixed by ``seed``.
    seed : int, SeedSequence, Generator or None
    rank : int, default 5
    reward : {"logistic", "linear"}
    noise_scale : float, default 0.75
        Noise of the linear variant.
    synthetic_kwargs : dict, optional
        Sizes of the stand-in (:func:`vits_ref.data.synthetic_ratings`); default the
        full-size one (6040 users, 3706 movies, 100 000 ratings).
    lam, n_iter : float, int
        Alternating least squares settings (:func:`vits_ref.data.factorize`).
    data_seed : int, default 0
        Seeds the stand-in and the ALS initialisation (the data, shared by every
        instance); ``seed`` only picks the movies.

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.movielens(n_movies=10, seed=0,
    ...                         synthetic_kwargs={"n_users": 200, "n_movies": 150,
    ...                                           "n_ratings": 3000})
    >>> env.source, env.theta_star.shape, env.prior_mean.shape
    ('synthetic', (10, 5), (5,))
    >>> run = env.realise(100, rng=1)
    >>> run.contexts.shape, run.means.shape, bool((run.contexts == run.contexts[:, :1]).all())
    ((100, 10, 5), (100, 10), True)
    """
    return MovieLensEnvironment(path=path, n_movies=n_movies, reward=reward, rank=rank,
                                noise_scale=noise_scale, synthetic_kwargs=synthetic_kwargs,
                                lam=lam, n_iter=n_iter, data_seed=data_seed, seed=seed)
