"""A synthetic low-rank stand-in for the MovieLens-1M ratings (the real data cannot be
downloaded in the environment this library is developed in).

:func:`synthetic_ratings` has MovieLens-1M's numbers of users and movies by default; the
tests use it, and so does :func:`vits_ref.envs.movielens` when no file is given.
"""

import numpy as np

from .. import _validate as val
from .movielens import ML1M_MOVIES, ML1M_USERS, Ratings

__all__ = ["synthetic_ratings"]


def synthetic_ratings(n_users=ML1M_USERS, n_movies=ML1M_MOVIES, n_ratings=100_000, rank=5,
                      noise=0.5, seed=None):
    """A low-rank stand-in for MovieLens-1M (the real data cannot be downloaded here).

    Parameters
    ----------
    n_users, n_movies : int
        Defaults: MovieLens-1M's 6040 users and 3706 rated movies.
    n_ratings : int
        Number of distinct observed (user, movie) pairs, in
        ``[n_users + n_movies, n_users n_movies / 2]``.
    rank : int
        Rank of the planted model.
    noise : float
        Standard deviation of the Gaussian noise added before rounding.
    seed : int, SeedSequence, Generator or None

    Returns
    -------
    Ratings
        ``true_user_vectors`` (n_users, rank) and ``true_movie_vectors`` (n_movies, rank)
        hold the planted vectors; ids are ``0..n-1``.

    Notes
    -----
    Latent vectors ``u_i, v_j ~ N(0, s^2 I)`` with ``s = (0.8/rank)^(1/4)``, so that
    ``u_i . v_j`` has variance 0.8; rating ``clip(round(3.6 + u_i . v_j + noise eps), 1, 5)``
    (MovieLens-1M: mean 3.58, standard deviation 1.12). Observation pattern: users'
    activity weights are log-normal (sigma 1), movies' popularity weights Zipf-like,
    ``(rank of j)^(-0.8)`` over a random ordering, and pairs are drawn with probability
    proportional to the product, without repeats; every user and every movie gets at
    least one rating (so every index has data, as in the real file).

    Examples
    --------
    >>> from vits_ref.data import synthetic_ratings
    >>> r = synthetic_ratings(n_users=50, n_movies=40, n_ratings=500, seed=0)
    >>> r.n_users, r.n_movies, r.n_ratings, sorted(set(r.ratings.tolist())) <= [1, 2, 3, 4, 5]
    (50, 40, 500, True)
    """
    n_users = val.positive_int(n_users, "n_users")
    n_movies = val.positive_int(n_movies, "n_movies")
    n_ratings = val.positive_int(n_ratings, "n_ratings")
    rank = val.positive_int(rank, "rank")
    noise = val.positive_float(noise, "noise", allow_zero=True)
    if n_ratings < n_users + n_movies or 2 * n_ratings > n_users * n_movies:
        raise ValueError(f"n_ratings must lie in [n_users + n_movies, n_users n_movies / 2] "
                         f"= [{n_users + n_movies}, {n_users * n_movies // 2}], got {n_ratings}")
    rng = val.as_generator(seed)
    s = (0.8 / rank) ** 0.25
    U = s * rng.standard_normal((n_users, rank))
    V = s * rng.standard_normal((n_movies, rank))
    activity = rng.lognormal(0.0, 1.0, n_users)
    popularity = np.empty(n_movies)
    popularity[rng.permutation(n_movies)] = np.arange(1, n_movies + 1) ** -0.8
    pu, pm = activity / activity.sum(), popularity / popularity.sum()
    # guaranteed pairs: one movie per user, one user per movie
    must = np.unique(np.concatenate([
        np.arange(n_users) * n_movies + rng.choice(n_movies, n_users, p=pm),
        rng.choice(n_users, n_movies, p=pu) * n_movies + np.arange(n_movies)]))
    extra = np.empty(0, dtype=np.int64)
    need = n_ratings - must.size
    for it in range(200):
        if extra.size >= need:
            break
        m = 2 * (need - extra.size) + 16
        if it < 100:
            keys = rng.choice(n_users, m, p=pu) * n_movies + rng.choice(n_movies, m, p=pm)
        else:  # pragma: no cover - dense requests with a heavy skew: fill uniformly
            keys = rng.integers(n_users * n_movies, size=m)
        keys = np.setdiff1d(keys, must)  # sorted, unique
        extra = np.union1d(extra, keys)
    if extra.size < need:  # pragma: no cover - cannot happen below density 1/2
        raise RuntimeError("synthetic_ratings: could not draw enough distinct pairs")
    keys = np.concatenate([must, rng.choice(extra, need, replace=False)])
    keys = keys[rng.permutation(keys.size)]
    ui, mi = keys // n_movies, keys % n_movies
    z = 3.6 + np.einsum("ij,ij->i", U[ui], V[mi]) + noise * rng.standard_normal(keys.size)
    ratings = np.clip(np.rint(z), 1.0, 5.0)
    desc = (f"synthetic stand-in (n_users={n_users}, n_movies={n_movies}, "
            f"n_ratings={n_ratings}, rank={rank}, noise={noise})")
    return Ratings(ui.astype(np.int64), mi.astype(np.int64), ratings,
                   np.arange(n_users, dtype=np.int64), np.arange(n_movies, dtype=np.int64),
                   source=desc, true_user_vectors=U, true_movie_vectors=V)
