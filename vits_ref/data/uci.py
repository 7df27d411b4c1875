"""Data sets of the particle experiments (the OPVI paper, section 5.2-5.3): loaders and splits.

The OPVI paper runs its BNN regression on Kin8nm (8 inputs, 8192 rows) and its classifier on
MNIST. Neither can be downloaded where this library is developed, so:

- :func:`load_kin8nm` reads a user-supplied Kin8nm file (CSV or whitespace-separated,
  with or without a header line: OpenML's ``kin8nm.csv`` or Delve's ``Dataset.data``);
- :func:`regression_dataset` gives ``"kin8nm"`` from that file, or by default a real
  regression data set that scikit-learn ships, ``"diabetes"`` (442 rows, 10 inputs);
- :func:`classification_dataset` gives scikit-learn's ``"breast_cancer"`` (569 rows, 30
  inputs, 2 classes) or ``"digits"`` (1797 rows of 8 x 8 images, 10 classes; the bundled
  small cousin of MNIST).

Splits are seeded random permutations (the OPVI paper: 90% train, 10% test). Inputs are
standardised with the *training* split's mean and standard deviation (as the SVGD code
does; a constant column keeps scale 1); regression targets too, with the test targets
kept in original units so that RMSE and log-likelihood are reported in those units
(:func:`vits_ref.models.bnn.regression_metrics` de-standardises the predictions).
"""

import math
import os
from dataclasses import dataclass

import numpy as np

from .. import _validate as val

KIN8NM_COLUMNS = 9
SKLEARN_HINT = "pip install scikit-learn  (or: pip install 'vits_ref[test]')"


@dataclass(frozen=True)
class Dataset:
    """A seeded train/test split, standardised with the training split's statistics.

    Attributes
    ----------
    name : str
    X_train, X_test : ndarray
        Standardised inputs ``(x - x_mean) / x_std``.
    y_train : ndarray
        Regression: standardised targets ``(y - y_mean) / y_std``; classification: integer
        labels as floats.
    y_test : ndarray
        Regression: targets in *original* units; classification: integer labels as floats.
    x_mean, x_std : ndarray
    y_mean, y_std : float
        The training targets' mean and standard deviation (0 and 1 for classification).
    n_classes : int
        0 for regression.
    source : str
        Where the data came from (a path or the scikit-learn loader).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: float
    y_std: float
    n_classes: int
    source: str

    @property
    def input_dim(self):
        """Number of inputs."""
        return self.X_train.shape[1]


def load_kin8nm(path):
    """Read Kin8nm from a user-supplied file: 8 input columns, then the target.

    Parameters
    ----------
    path : str or os.PathLike
        A text file with 9 numeric columns per line, separated by commas or whitespace;
        an optional first line of column names (OpenML's ``kin8nm.csv`` has one:
        ``theta1,...,theta8,y``) is skipped. Blank lines are ignored.

    Returns
    -------
    X : (n, 8) ndarray
    y : (n,) ndarray

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    IsADirectoryError
        If ``path`` is a directory.
    ValueError
        On a line with another number of columns than 9, a non-numeric or non-finite
        entry (naming the path and line), or a file without data rows.
    """
    table = _load_table(path, KIN8NM_COLUMNS, "Kin8nm")
    return table[:, :-1].copy(), table[:, -1].copy()


def _load_table(path, n_columns, what):
    """``(n, n_columns)`` array read from a comma- or whitespace-separated file, with the
    validation and messages of :func:`load_kin8nm`."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what} file not found: {path!r} (give the path of a file "
                                f"with {n_columns} numeric columns)")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{what} path is a directory, not a file: {path!r}")
    rows = []
    # utf-8-sig: a byte-order mark is not part of the first field (as part of it, the first
    # data row read as a header and was dropped)
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if not text:
                continue
            fields = text.split(",") if "," in text else text.split()
            fields = [f.strip().strip('"').strip("'") for f in fields]
            if len(fields) != n_columns:
                raise ValueError(f"{path!r} line {lineno}: expected {n_columns} columns "
                                 f"({what}), got {len(fields)}")
            try:
                values = [float(f) for f in fields]
            except ValueError:
                if not rows and lineno == _first_line(path):
                    continue  # a header line
                raise ValueError(f"{path!r} line {lineno}: non-numeric entry in "
                                 f"{fields!r}") from None
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f"{path!r} line {lineno}: NaN or inf in {fields!r}")
            rows.append(values)
    if not rows:
        raise ValueError(f"{path!r} has no data rows ({what}: {n_columns} numeric columns "
                         f"per line)")
    return np.array(rows, dtype=np.float64)


def _first_line(path):
    """Line number of the first non-blank line of ``path``."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                return lineno
    return 0


def _sklearn_datasets():
    try:
        from sklearn import datasets
    except ImportError:
        raise ImportError(f"this data set comes with scikit-learn, which is not installed; "
                          f"fix: {SKLEARN_HINT}") from None
    return datasets


def _split(n, test_fraction, seed):
    f = val.positive_float(test_fraction, "test_fraction")
    if not 0.0 < f < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    n_test = int(round(f * n))
    if n_test < 1 or n_test >= n:
        raise ValueError(f"test_fraction={test_fraction!r} leaves {n_test} of {n} rows for "
                         f"testing: need at least one row in each split")
    perm = val.as_generator(seed).permutation(n)
    return perm[n_test:], perm[:n_test]


def _pow2_scale(A):
    """Per column, the power of two ``2^e`` with ``max |A| / 2^e`` in ``[1, 2)`` (1/2 for a
    zero column)."""
    top = np.max(np.abs(A), axis=0) if A.shape[0] else np.zeros(A.shape[1:])
    # 2^(e - 1), not 2^e: 2^1024 overflows (max |A| in [1, 2) after the division)
    return np.ldexp(1.0, np.frexp(top)[1] - 1).astype(np.float64)


def _mean_std(A):
    """Column means and standard deviations of ``A``, computed on ``A / 2^e`` and scaled back.

    The variance squares the deviations: beyond 1e154 they overflow (the standardised
    column came out 0 or NaN), below 1e-154 they underflow. Scaled by a power of two (exact
    in binary floating point, short of overflow and subnormals) the squares stay near 1, and
    for ordinary data every result is bit for bit NumPy's ``mean`` and ``std``. A standard
    deviation is at most ``max |A|``, so neither result overflows.
    """
    scale = _pow2_scale(A)
    B = A / scale
    return B.mean(axis=0) * scale, B.std(axis=0) * scale, scale


def _standardise(X_train, X_test):
    mean, std, scale = _mean_std(X_train)
    std = np.where(std > 0, std, 1.0)
    # (x - mean) / std in scaled units: x - mean itself may overflow (1e308 - (-1e308))
    m, s = mean / scale, std / scale
    return (X_train / scale - m) / s, (X_test / scale - m) / s, mean, std


def regression_dataset(name="diabetes", path=None, test_fraction=0.1, seed=None):
    """A seeded, standardised train/test split of a regression data set.

    Parameters
    ----------
    name : {"diabetes", "kin8nm"}, default "diabetes"
        ``"diabetes"``: scikit-learn's ``load_diabetes`` (442 rows, 10 inputs; a real data
        set that ships with scikit-learn, used by default because Kin8nm cannot be
        downloaded here). ``"kin8nm"``: the OPVI paper's data set, from ``path``.
    path : str or None
        The Kin8nm file (:func:`load_kin8nm`); required for ``"kin8nm"``.
    test_fraction : float, default 0.1
        The OPVI paper: 90% train, 10% test.
    seed : int, SeedSequence, Generator or None
        The split's permutation.

    Returns
    -------
    Dataset
        Inputs and training targets standardised with the training statistics; ``y_test``
        in original units.

    Examples
    --------
    >>> ds = regression_dataset("diabetes", seed=0)
    >>> ds.X_train.shape, ds.X_test.shape
    ((398, 10), (44, 10))
    >>> round(float(ds.y_train.mean()), 12), round(float(ds.y_train.std()), 12)
    (0.0, 1.0)
    """
    name = val.choice(name, "name", ("diabetes", "kin8nm"))
    if name == "kin8nm":
        if path is None:
            raise ValueError("name='kin8nm' needs path= (Kin8nm cannot be downloaded here: "
                             "give the path of kin8nm.csv, 8 inputs and the target per row)")
        X, y = load_kin8nm(path)
        source = os.fspath(path)
    else:
        if path is not None:
            raise ValueError("path is only used with name='kin8nm'")
        X, y = _sklearn_datasets().load_diabetes(return_X_y=True)
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        source = "sklearn.datasets.load_diabetes"
    train, test = _split(X.shape[0], test_fraction, seed)
    Xtr, Xte, xm, xs = _standardise(X[train], X[test])
    ytr, _, ym, ys = _standardise(y[train, None], y[:0, None])
    return Dataset(name, Xtr, ytr[:, 0], Xte, y[test].copy(), xm, xs, float(ym[0]),
                   float(ys[0]), 0, source)


def classification_dataset(name="breast_cancer", test_fraction=0.1, seed=None):
    """A seeded, standardised train/test split of a classification data set.

    Parameters
    ----------
    name : {"breast_cancer", "digits"}, default "breast_cancer"
        scikit-learn's ``load_breast_cancer`` (569 rows, 30 inputs, 2 classes) or
        ``load_digits`` (1797 rows, 64 pixel inputs, 10 classes).
    test_fraction : float, default 0.1
    seed : int, SeedSequence, Generator or None

    Returns
    -------
    Dataset
        Standardised inputs; labels ``0 .. K-1`` as floats; ``n_classes = K``.

    Examples
    --------
    >>> ds = classification_dataset("digits", seed=0)
    >>> ds.X_train.shape, ds.n_classes
    ((1617, 64), 10)
    """
    name = val.choice(name, "name", ("breast_cancer", "digits"))
    loader = getattr(_sklearn_datasets(), f"load_{name}")
    X, y = loader(return_X_y=True)
    X = np.asarray(X, dtype=np.float64)
    labels, y = np.unique(np.asarray(y), return_inverse=True)
    y = y.astype(np.float64)
    train, test = _split(X.shape[0], test_fraction, seed)
    Xtr, Xte, xm, xs = _standardise(X[train], X[test])
    return Dataset(name, Xtr, y[train], Xte, y[test], xm, xs, 0.0, 1.0, int(labels.size),
                   f"sklearn.datasets.load_{name}")
