"""MovieLens ratings: the loader of a user-supplied ``ratings.dat`` or ``ratings.csv``.

The ratings cannot be downloaded in the environment this library is developed in, so
:func:`load_ratings` reads a file the user downloaded (``DOWNLOAD_HINT`` says where):
MovieLens-1M's ``ratings.dat`` (``UserID::MovieID::Rating::Timestamp``) or the
``ratings.csv`` of ml-latest(-small) (header ``userId,movieId,rating,timestamp``).
:func:`vits_ref.data.synthetic_ratings` draws a stand-in of the same shape.
"""

import os
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DOWNLOAD_HINT", "ML1M_MOVIES", "ML1M_USERS", "Ratings", "load_ratings"]

#: Where to get the data (stated in error messages and the README).
DOWNLOAD_HINT = ("MovieLens-1M is at https://grouplens.org/datasets/movielens/1m/ "
                 "(ml-1m.zip, file ml-1m/ratings.dat); ml-latest-small's ratings.csv is "
                 "at https://grouplens.org/datasets/movielens/latest/")

#: Shapes of MovieLens-1M (1 000 209 ratings; 3706 of its 3952 movie ids are rated).
ML1M_USERS, ML1M_MOVIES = 6040, 3706


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


_INT64_MAX = 2 ** 63 - 1


def _is_int64(text):
    """Whether ``text`` is ASCII decimal digits of an integer that fits an int64 (the ids'
    array; ``str.isdigit`` alone passes superscripts and any length)."""
    # the length first: int() of a long digit string is slow, and refused past 4300 digits
    return (text.isascii() and text.isdigit() and len(text) <= 19
            and int(text) <= _INT64_MAX)


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
    >>> from vits_ref.data import load_ratings
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
        if not (_is_int64(u) and _is_int64(m)):
            raise _bad_line(path, lineno, line, "user and movie ids must be integers in "
                            f"[0, {_INT64_MAX}]", fmt)
        if not (s.isascii() and s.isdigit()):
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
