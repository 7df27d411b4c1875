"""Factorisations of the MovieLens ratings (or of the stand-in), cached for the process.

:func:`factorization` loads a ratings file (:func:`vits_ref.data.load_ratings`) or draws
the stand-in (:func:`vits_ref.data.synthetic_ratings`) and factorises it
(:func:`vits_ref.data.factorize`) once per file (path, modification time, size) or
stand-in, and per ALS setting, so that 50 runs of :func:`vits_ref.envs.movielens` with a
fresh choice of movies each factorise once. :func:`clear_cache` forgets them.
"""

import os

import numpy as np

from .als import factorize
from .movielens import DOWNLOAD_HINT, ML1M_MOVIES, ML1M_USERS, load_ratings
from .standin import synthetic_ratings

__all__ = ["clear_cache", "factorization"]

_CACHE = {}


def clear_cache():
    """Forget the cached factorisations (they are kept for the life of the process)."""
    _CACHE.clear()


def _frozen(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def factorization(path=None, rank=5, lam=1.0, n_iter=50, data_seed=0, synthetic_kwargs=None):
    """``(user_vectors, movie_vectors, info)`` of a ratings file or the stand-in, cached.

    Parameters
    ----------
    path : str, os.PathLike or None
        A MovieLens ``ratings.dat`` or ``ratings.csv`` (:func:`vits_ref.data.load_ratings`);
        None for the synthetic stand-in.
    rank, lam, n_iter : int, float, int
        ALS settings (:func:`vits_ref.data.factorize`, with its default ``tol``).
    data_seed : int, default 0
        Seeds the stand-in (``SeedSequence([data_seed, 0])``) and the ALS initialisation
        (``SeedSequence([data_seed, 1])``).
    synthetic_kwargs : dict, optional
        Passed to :func:`vits_ref.data.synthetic_ratings` over the full-size defaults
        (MovieLens-1M's 6040 users and 3706 movies, 100 000 ratings, ``rank``, noise 0.5);
        only used when ``path`` is None.

    Returns
    -------
    user_vectors : ndarray, shape (n_users, rank), read-only
    movie_vectors : ndarray, shape (n_movies, rank), read-only
    info : dict
        :func:`vits_ref.data.factorize`'s ``info`` (``rmse`` read-only) plus ``source``,
        ``n_users``, ``n_movies``, ``n_ratings``, ``user_ids`` and ``movie_ids``.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file (the message says where to download the data).

    Notes
    -----
    Cache key: the resolved path, its modification time (ns) and size, or the stand-in's
    arguments; plus ``rank``, ``lam``, ``n_iter`` and ``data_seed``. A hit returns the same
    array objects. Arguments are validated by :class:`vits_ref.envs.MovieLensEnvironment`
    and by the functions called on a miss.

    Examples
    --------
    >>> from vits_ref.data import factorization
    >>> small = {"n_users": 60, "n_movies": 40, "n_ratings": 600}
    >>> U, V, info = factorization(synthetic_kwargs=small)
    >>> U.shape, V.shape, info["n_ratings"], U.flags.writeable
    ((60, 5), (40, 5), 600, False)
    >>> factorization(synthetic_kwargs=small)[1] is V
    True
    """
    synthetic_kwargs = {} if synthetic_kwargs is None else synthetic_kwargs
    if path is None:
        kw = {"n_users": ML1M_USERS, "n_movies": ML1M_MOVIES, "n_ratings": 100_000,
              "rank": rank, "noise": 0.5, **synthetic_kwargs}
        key = ("synthetic", tuple(sorted(kw.items())), rank, lam, n_iter, data_seed)
    else:
        full = os.path.realpath(os.fspath(path))
        if not os.path.isfile(full):
            raise FileNotFoundError(f"ratings file not found: {os.fspath(path)!r}. "
                                    f"{DOWNLOAD_HINT}")
        st = os.stat(full)
        key = ("file", full, st.st_mtime_ns, st.st_size, rank, lam, n_iter, data_seed)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    if path is None:
        data = synthetic_ratings(**kw, seed=np.random.SeedSequence([data_seed, 0]))
    else:
        data = load_ratings(full)
    U, V, info = factorize(*data, rank=rank, lam=lam, n_iter=n_iter,
                           seed=np.random.SeedSequence([data_seed, 1]),
                           n_users=data.n_users, n_movies=data.n_movies, return_info=True)
    info.update(source=data.source, n_users=data.n_users, n_movies=data.n_movies,
                n_ratings=data.n_ratings, movie_ids=_frozen(data.movie_ids),
                user_ids=_frozen(data.user_ids))
    info["rmse"] = _frozen(info["rmse"])
    hit = (_frozen(U), _frozen(V), info)
    _CACHE[key] = hit
    return hit
