"""MovieLens: a ratings loader, rank-``r`` alternating least squares, a synthetic stand-in,
and the per-arm logistic bandit of section 5 of the VITS paper.

The setting (Aouali et al. 2022, used in section 5 of Clavier, Huix and Durmus, ICML
2024): factorise the MovieLens-1M rating matrix at rank 5 into user vectors ``x_i`` and
movie vectors ``theta_j``; each run picks 100 random movies as the arms; each round the
context is a uniformly random user vector ``x_t``, and arm ``a`` pays
``Bernoulli(sigmoid(x_t . theta_a))``. Each arm has its own posterior, with the prior
``N(mu_0, diag(sigma_0))`` whose mean and variance are those of all the movie vectors,
dimension by dimension.

The ratings cannot be downloaded in the environment this library is developed in. So:

- :func:`load_ratings` reads a user-supplied MovieLens-1M ``ratings.dat``
  (``UserID::MovieID::Rating::Timestamp``) or the ``ratings.csv`` of ml-latest-small
  (header ``userId,movieId,rating,timestamp``);
- :func:`synthetic_ratings` draws a low-rank stand-in with MovieLens-1M's numbers of users
  and movies, used by the tests and as the default when no file is given;
- :func:`factorize` is the rank-``r`` alternating least squares on the mean-centred
  ratings, written with NumPy (normal equations accumulated with ``np.bincount``, one
  batched ``np.linalg.solve`` per half-step);
- :class:`MovieLensEnvironment` (built by :func:`vits_ref.envs.movielens`) is the bandit.
  Factorisations are cached in memory per file (path, modification time, size) or per
  stand-in, and per ALS setting, so that 50 runs with a fresh choice of movies each
  factorise once.
"""

import numbers
import os
import time
from dataclasses import dataclass, field

import numpy as np

from . import _validate as val
from .envs import Environment, _sigmoid

__all__ = ["MovieLensEnvironment", "Ratings", "clear_cache", "factorize", "load_ratings",
           "synthetic_ratings"]

#: Where to get the data (stated in error messages and the README).
DOWNLOAD_HINT = ("MovieLens-1M is at https://grouplens.org/datasets/movielens/1m/ "
                 "(ml-1m.zip, file ml-1m/ratings.dat); ml-latest-small's ratings.csv is "
                 "at https://grouplens.org/datasets/movielens/latest/")

#: Shapes of MovieLens-1M (1 000 209 ratings; 3706 of its 3952 movie ids are rated).
ML1M_USERS, ML1M_MOVIES = 6040, 3706

REWARDS = ("linear", "logistic")


# ---------------------------------------------------------------------------------------
# ratings
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Ratings:
    """Ratings with contiguous 0-based user and movie indices.

    Iterating gives ``(user_idx, movie_idx, ratings)``, so ``u, m, r = load_ratings(p)``
    and ``factorize(*load_ratings(p))`` work.

    Attributes
    ----------
    user_idx, movie_idx : ndarray of int64, shape (n,)
        Indices in ``0..n_users-1`` and ``0..n_movies-1``.
    ratings : ndarray of float64, shape (n,)
    user_ids, movie_ids : ndarray of int64
        The id maps: index ``i`` is the file's user ``user_ids[i]`` (sorted ids).
    source : str
        The file read, or a description of the synthetic stand-in.
    true_user_vectors, true_movie_vectors : ndarray or None
        The planted latent vectors (synthetic stand-in only).
    """

    user_idx: np.ndarray
    movie_idx: np.ndarray
    ratings: np.ndarray
    user_ids: np.ndarray
    movie_ids: np.ndarray
    source: str = ""
    true_user_vectors: np.ndarray = field(default=None, repr=False)
    true_movie_vectors: np.ndarray = field(default=None, repr=False)

    def __iter__(self):
        return iter((self.user_idx, self.movie_idx, self.ratings))

    @property
    def n_users(self):
        return int(self.user_ids.size)

    @property
    def n_movies(self):
        return int(self.movie_ids.size)

    @property
    def n_ratings(self):
        return int(self.ratings.size)

    def __repr__(self):
        return (f"Ratings(n_users={self.n_users}, n_movies={self.n_movies}, "
                f"n_ratings={self.n_ratings}, source={self.source!r})")


def _sniff(first_line, path):
    if "::" in first_line:
        return "dat"
    if "," in first_line:
        head = first_line.split(",")[0].strip().lower()
        return "csv-header" if head == "userid" else "csv"
    raise ValueError(f"{path}: line 1 is neither 'UserID::MovieID::Rating::Timestamp' "
                     f"(ratings.dat) nor 'userId,movieId,rating,timestamp' (ratings.csv): "
                     f"{first_line[:80]!r}")


def _bad_line(path, lineno, line, why, fmt):
    want = ("UserID::MovieID::Rating::Timestamp" if fmt == "dat"
            else "userId,movieId,rating,timestamp")
    return ValueError(f"{path}, line {lineno}: {why}; expected '{want}', got "
                      f"{line.strip()[:80]!r}")


def load_ratings(path):
    """Read MovieLens ratings: ``ratings.dat`` of MovieLens-1M or a ``ratings.csv``.

    Parameters
    ----------
    path : str or os.PathLike
        A MovieLens-1M ``ratings.dat`` (lines ``UserID::MovieID::Rating::Timestamp``) or a
        ``ratings.csv`` of ml-latest(-small) (``userId,movieId,rating,timestamp`` with that
        header, or without one). The format is sniffed from the first line. Blank lines are
        skipped.

    Returns
    -------
    Ratings
        Unpacks as ``(user_idx, movie_idx, ratings)``; ``user_ids`` and ``movie_ids`` map
        the contiguous 0-based indices back to the file's ids (sorted order).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (the message says where to download the data).
    ValueError
        On a malformed line (wrong number of fields, a non-integer id, a rating that is not
        a number in [0.5, 5]); the message gives the file and the 1-based line number.
        Also when the file holds no ratings.

    Notes
    -----
    Timestamps are checked to be integers and then dropped. Duplicate (user, movie) pairs
    are kept as given (MovieLens has none).

    Examples
    --------
    >>> import tempfile, os
    >>> from vits_ref.movielens import load_ratings
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "ratings.dat")
    >>> _ = open(p, "w").write("1::1193::5::978300760\\n1::661::3::978302109\\n"
    ...                        "7::1193::4::978300000\\n")
    >>> r = load_ratings(p)
    >>> r.user_idx.tolist(), r.movie_idx.tolist(), r.ratings.tolist()
    ([0, 0, 1], [1, 0, 1], [5.0, 3.0, 4.0])
    >>> r.user_ids.tolist(), r.movie_ids.tolist()
    ([1, 7], [661, 1193])
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ratings file not found: {path!r}. {DOWNLOAD_HINT}")
    with open(path, encoding="latin-1") as fh:  # ratings are ASCII; never a decode error
        lines = fh.read().splitlines()
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None:
        raise ValueError(f"{path}: no ratings in the file")
    fmt = _sniff(first, path)
    sep = "::" if fmt == "dat" else ","
    users, movies, stamps, rates = [], [], [], []
    skip_header = fmt == "csv-header"
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if skip_header:
            skip_header = False
            continue
        parts = line.split(sep)
        if len(parts) != 4:
            raise _bad_line(path, lineno, line, f"{len(parts)} fields instead of 4", fmt)
        u, m, r, s = (p.strip() for p in parts)
        if not (u.isdigit() and m.isdigit()):
            raise _bad_line(path, lineno, line, "user and movie ids must be non-negative "
                            "integers", fmt)
        if not s.isdigit():
            raise _bad_line(path, lineno, line, "the timestamp must be an integer", fmt)
        try:
            rv = float(r)
        except ValueError:
            rv = float("nan")
        if not 0.5 <= rv <= 5.0:
            raise _bad_line(path, lineno, line, "the rating must be a number in [0.5, 5]",
                            fmt)
        users.append(u)
        movies.append(m)
        stamps.append(s)
        rates.append(rv)
    if not rates:
        raise ValueError(f"{path}: no ratings in the file (only a header)")
    user_ids, user_idx = np.unique(np.array(users, dtype=np.int64), return_inverse=True)
    movie_ids, movie_idx = np.unique(np.array(movies, dtype=np.int64), return_inverse=True)
    return Ratings(user_idx.astype(np.int64).ravel(), movie_idx.astype(np.int64).ravel(),
                   np.array(rates, dtype=np.float64), user_ids, movie_ids,
                   source=os.path.abspath(path))


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
    >>> from vits_ref.movielens import synthetic_ratings
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


# ---------------------------------------------------------------------------------------
# alternating least squares
# ---------------------------------------------------------------------------------------

def _als_half_step(idx_a, idx_b, values, B, n_a, lam):
    """Ridge solve for every row of one side given the other side's vectors ``B``.

    Row ``a`` solves ``(sum_{obs (a, b)} B_b B_b^T + lam I) x_a = sum_{obs (a, b)} y B_b``;
    the normal equations are accumulated with one ``np.bincount`` per entry of the upper
    triangle (no per-row Python loop, no (n, r, r) temporary) and solved as one batched
    ``np.linalg.solve`` on an (n_a, r, r) stack.
    """
    r = B.shape[1]
    Bo = np.ascontiguousarray(B.T).take(idx_b, axis=1)   # (r, n_obs), contiguous rows
    G = np.empty((n_a, r, r))
    w = np.empty(idx_a.size)
    for i in range(r):
        for j in range(i, r):
            np.multiply(Bo[i], Bo[j], out=w)
            G[:, i, j] = np.bincount(idx_a, weights=w, minlength=n_a)
            G[:, j, i] = G[:, i, j]
    rhs = np.empty((n_a, r))
    for i in range(r):
        np.multiply(Bo[i], values, out=w)
        rhs[:, i] = np.bincount(idx_a, weights=w, minlength=n_a)
    G[:, np.arange(r), np.arange(r)] += lam
    return np.linalg.solve(G, rhs[:, :, None])[:, :, 0]


def _predict(U, V, u, m):
    """``U[u] . V[m]`` row by row, column-wise gathers (no (n, r) temporaries)."""
    UT, VT = np.ascontiguousarray(U.T), np.ascontiguousarray(V.T)
    out = UT[0].take(u) * VT[0].take(m)
    for i in range(1, U.shape[1]):
        out += UT[i].take(u) * VT[i].take(m)
    return out


def _index_array(value, name):
    arr = np.asarray(value)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_):
        raise TypeError(f"{name} must be a 1-D integer array, got dtype {arr.dtype} "
                        f"and shape {arr.shape}")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must be >= 0 (0-based indices)")
    return arr.astype(np.int64, copy=False)


def factorize(user_idx, movie_idx, ratings, rank=5, lam=1.0, n_iter=50, tol=1e-6, seed=None,
              n_users=None, n_movies=None, return_info=False, progress=None):
    """Rank-``rank`` factorisation of mean-centred ratings by alternating least squares.

    Parameters
    ----------
    user_idx, movie_idx : array of int, shape (n,)
        0-based indices (as returned by :func:`load_ratings`).
    ratings : array of float, shape (n,)
    rank : int, default 5
    lam : float, default 1.0
        Ridge penalty ``lam (|x_i|^2 + |theta_j|^2)`` on every vector (not scaled by the
        number of ratings). Rows with no ratings get the zero vector.
    n_iter : int, default 50
        Maximum number of ALS sweeps (users, then movies).
    tol : float, default 1e-6
        Stop after the first sweep whose training RMSE fell by less than ``tol`` times
        itself (0: always run ``n_iter`` sweeps). The stopping rule is deterministic, so
        the same inputs and seed give the same vectors.
    seed : int, SeedSequence, Generator or None
        Initial movie vectors ``N(0, 0.1^2 I)``.
    n_users, n_movies : int, optional
        Default ``max(index) + 1``.
    return_info : bool, default False
        Also return a dict: ``global_mean``, ``rmse`` (training RMSE after each sweep, in
        rating units), ``n_sweeps``, ``converged`` (the ``tol`` rule fired), ``seconds``,
        ``lam``.
    progress : callable, optional
        Called as ``progress(sweep, rmse)`` after each sweep (1-based), e.g. ``print``.

    Returns
    -------
    user_vectors : ndarray, shape (n_users, rank)
    movie_vectors : ndarray, shape (n_movies, rank)
    info : dict
        Only with ``return_info=True``.

    Notes
    -----
    The global mean ``m`` of the ratings is subtracted first, so
    ``x_i . theta_j`` models ``rating_ij - m`` (no per-user or per-movie bias terms; this
    is the mean-centring of the MovieLens setting of Aouali et al. 2022). Each sweep
    minimises ``sum_obs (y_ij - m - x_i . theta_j)^2 + lam (sum |x_i|^2 + sum |theta_j|^2)``
    exactly in the users, then in the movies (ridge normal equations, see
    ``_als_half_step``), so the objective never increases. Cost per sweep:
    ``O(n rank^2 + (n_users + n_movies) rank^3)``, about 0.13 s at 1M ratings and
    0.013 s at 100k (rank 5, one core).

    Examples
    --------
    >>> from vits_ref.movielens import factorize, synthetic_ratings
    >>> r = synthetic_ratings(n_users=100, n_movies=80, n_ratings=2000, seed=0)
    >>> U, V = factorize(*r, rank=5, seed=0)
    >>> U.shape, V.shape
    ((100, 5), (80, 5))
    """
    u = _index_array(user_idx, "user_idx")
    m = _index_array(movie_idx, "movie_idx")
    y = val.float_array(ratings, "ratings", ndim=1)
    if not (u.size == m.size == y.size):
        raise ValueError(f"user_idx, movie_idx and ratings must have the same length, got "
                         f"{u.size}, {m.size}, {y.size}")
    if y.size == 0:
        raise ValueError("ratings is empty")
    rank = val.positive_int(rank, "rank")
    lam = val.positive_float(lam, "lam")
    n_iter = val.positive_int(n_iter, "n_iter")
    tol = val.positive_float(tol, "tol", allow_zero=True)
    nu = int(u.max()) + 1 if n_users is None else val.positive_int(n_users, "n_users")
    nm = int(m.max()) + 1 if n_movies is None else val.positive_int(n_movies, "n_movies")
    if u.max() >= nu:
        raise ValueError(f"user_idx has index {u.max()} >= n_users = {nu}")
    if m.max() >= nm:
        raise ValueError(f"movie_idx has index {m.max()} >= n_movies = {nm}")
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable or None")
    rng = val.as_generator(seed)
    start = time.perf_counter()
    mean = float(y.mean())
    yc = y - mean
    V = 0.1 * rng.standard_normal((nm, rank))
    rmse = []
    converged = False
    for it in range(n_iter):
        U = _als_half_step(u, m, yc, V, nu, lam)
        V = _als_half_step(m, u, yc, U, nm, lam)
        resid = yc - _predict(U, V, u, m)
        rmse.append(float(np.sqrt(np.mean(resid * resid))))
        if progress is not None:
            progress(it + 1, rmse[-1])
        if it and rmse[-2] - rmse[-1] < tol * rmse[-1]:
            converged = True
            break
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V))):  # pragma: no cover
        raise FloatingPointError("factorize: non-finite vectors (check the ratings)")
    if not return_info:
        return U, V
    return U, V, {"global_mean": mean, "rmse": np.array(rmse), "n_sweeps": len(rmse),
                  "converged": converged, "seconds": time.perf_counter() - start, "lam": lam}


# ---------------------------------------------------------------------------------------
# cached factorisations
# ---------------------------------------------------------------------------------------

_CACHE = {}


def clear_cache():
    """Forget the cached factorisations (they are kept for the life of the process)."""
    _CACHE.clear()


def _frozen(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _factorization(path, rank, lam, n_iter, data_seed, synthetic_kwargs):
    """``(user_vectors, movie_vectors, info)`` for a file or the stand-in, cached.

    Key: the resolved path, its modification time (ns) and size, or the stand-in's
    arguments; plus rank, lam, n_iter and the seed. The arrays are read-only.
    """
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


# ---------------------------------------------------------------------------------------
# the bandit
# ---------------------------------------------------------------------------------------

class MovieLensEnvironment(Environment):
    """Section 5 of the VITS paper (setting of Aouali et al. 2022): per-arm logistic bandit.

    Users and movies are the rank-``rank`` ALS factors of the ratings (:func:`factorize`
    on ``path``, or on :func:`synthetic_ratings` when ``path`` is None; ``source`` says
    which). The instance, fixed by ``seed``, is ``n_movies`` distinct movies drawn
    uniformly: the arms, with parameters ``theta_star[a]`` (their movie vectors). Each
    round draws one user ``i`` uniformly and every arm sees the same context ``x_i``.
    Expected reward of arm ``a``: ``sigmoid(x_t . theta_a)`` (``reward="logistic"``,
    Bernoulli rewards) or ``x_t . theta_a`` (``"linear"``, plus ``N(0, noise_scale^2)``
    noise, one draw per round shared by the arms, as in the other environments).

    Parameters
    ----------
    path : str, os.PathLike or None
        A MovieLens ``ratings.dat`` or ``ratings.csv`` (:func:`load_ratings`); None for the
        synthetic stand-in.
    n_movies : int, default 100
        Number of arms ``K``.
    reward : {"logistic", "linear"}
    rank : int, default 5
        The dimension ``d`` of the user and movie vectors.
    noise_scale : float, default 0.75
        Noise of the linear variant (0.75 as in the MovieLens experiment of the
        diffusion-prior paper); unused for logistic rewards.
    lam, n_iter : float, int
        ALS settings (:func:`factorize`).
    data_seed : int, default 0
        Seeds the stand-in and the ALS initialisation: the *data*, shared by all
        instances. ``seed`` only picks the movies.
    synthetic_kwargs : dict, optional
        Passed to :func:`synthetic_ratings` (``n_users``, ``n_movies``, ``n_ratings``,
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
        U, V, info = _factorization(self.path, rank, self.lam, self.n_iter, self.data_seed,
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
        z = np.einsum("...kd,kd->...k", x, self.theta_star)
        return z if self.reward == "linear" else _sigmoid(z)

    def _contexts(self, T, rng):
        users = rng.integers(self.n_users, size=T)
        x = self.user_vectors[users]
        return np.ascontiguousarray(np.broadcast_to(x[:, None, :], (T, self.n_arms,
                                                                    self.dim)))

    def _params(self):
        return {"path": self.path, "n_movies": self.n_arms, "reward": self.reward,
                "rank": self.dim, "noise_scale": self.noise_scale, "lam": self.lam,
                "n_iter": self.n_iter, "data_seed": self.data_seed,
                "synthetic_kwargs": self.synthetic_kwargs, "seed": self.seed}
