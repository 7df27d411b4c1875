"""Rank-``r`` alternating least squares on mean-centred ratings, written with NumPy.

:func:`factorize` accumulates the normal equations with ``np.bincount`` and solves them
with one batched ``np.linalg.solve`` per half-step (users, then movies).
"""

import time

import numpy as np

from .. import _validate as val

__all__ = ["factorize"]


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
        0-based indices (as returned by :func:`vits_ref.data.load_ratings`).
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
    >>> from vits_ref.data import factorize, synthetic_ratings
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
