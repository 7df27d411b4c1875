"""Data behind the environments: MovieLens ratings, their stand-in, ALS, and a cache.

- :func:`load_ratings` (:mod:`vits_ref.data.movielens`) reads a MovieLens-1M
  ``ratings.dat`` or an ml-latest ``ratings.csv`` into :class:`Ratings`;
- :func:`synthetic_ratings` (:mod:`vits_ref.data.standin`) draws a low-rank stand-in
  with MovieLens-1M's shape (the real data cannot be downloaded where this library is
  developed);
- :func:`factorize` (:mod:`vits_ref.data.als`) is rank-``r`` alternating least squares
  on the mean-centred ratings;
- :func:`factorization` (:mod:`vits_ref.data.cache`) loads or draws and factorises once
  per file or stand-in and ALS setting, for the life of the process
  (:func:`clear_cache` forgets).

The bandit built on them is :func:`vits_ref.envs.movielens`.
"""

from .als import factorize
from .cache import clear_cache, factorization
from .movielens import DOWNLOAD_HINT, ML1M_MOVIES, ML1M_USERS, Ratings, load_ratings
from .standin import synthetic_ratings

__all__ = ["DOWNLOAD_HINT", "ML1M_MOVIES", "ML1M_USERS", "Ratings", "clear_cache",
           "factorization", "factorize", "load_ratings", "synthetic_ratings"]

# the particle experiments' data (the OPVI paper): Kin8nm from a user file, scikit-learn's sets
from .uci import Dataset, classification_dataset, load_kin8nm, regression_dataset  # noqa: E402

__all__ += ["Dataset", "classification_dataset", "load_kin8nm", "regression_dataset"]
from .digits import clear_digits_cache, digit_embeddings  # noqa: E402

__all__ += ["clear_digits_cache", "digit_embeddings"]
