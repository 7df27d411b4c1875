"""Appendix C.2 of the diffusion paper on scikit-learn's bundled handwritten digits.

The paper's "MNIST experiment" (Kveton et al., NeurIPS 2024, appendix C.2) learns an MLP
classifier of digits, takes ``d = 8`` embeddings of all digits, and builds a prior of
``theta`` from 10 000 linear fits on random 20-point positive/negative subsets.

MNIST cannot be downloaded where this library is developed, so this module uses
scikit-learn's bundled digits instead (:func:`sklearn.datasets.load_digits`: 1 797 real
8 x 8 handwritten digits from the UCI optical-recognition data set, shipped with
scikit-learn, no download). It *replaces* MNIST: same protocol, a smaller and coarser data
set. scikit-learn is an optional dependency, imported only when the data are built.
"""

import numpy as np

from .. import _validate as val

__all__ = ["SKLEARN_HINT", "clear_digits_cache", "digit_embeddings"]

SKLEARN_HINT = ("the digits experiment needs scikit-learn (its bundled digits data set and "
                "MLPClassifier): pip install scikit-learn")

_CACHE = {}


def clear_digits_cache():
    """Forget the cached embeddings and priors (kept for the life of the process)."""
    _CACHE.clear()


def _sklearn():
    try:
        from sklearn.datasets import load_digits
        from sklearn.neural_network import MLPClassifier
    except ImportError:
        raise ImportError(SKLEARN_HINT) from None
    return load_digits, MLPClassifier


def _frozen(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def digit_embeddings(n_thetas=10_000, subset_size=20, hidden=(64, 8), ridge=0.0, seed=0,
                     max_iter=500, return_info=False):
    r"""Embeddings of all digits and a prior sample of ``theta`` (appendix C.2 protocol).

    Parameters
    ----------
    n_thetas : int, default 10 000
        Number of ``theta`` draws (linear fits).
    subset_size : int, default 20
        Points per fit, half positive and half negative (even, ``>= 2``).
    hidden : tuple of int, default (64, 8)
        Hidden layer widths of the classifier; the last one is the embedding dimension
        ``d`` (8 in the paper).
    ridge : float, default 0.0
        Ridge of the linear fits (0: ordinary least squares, minimum-norm if singular).
    seed : int, default 0
        Seeds the train/test split and the classifier (``SeedSequence([seed, 0])``) and
        the subsets (``SeedSequence([seed, 1])``).
    max_iter : int, default 500
        Adam epochs of the classifier.
    return_info : bool, default False
        Also return a dict: ``labels`` (n_digits,), ``positive`` (the positive label of
        each ``theta``), ``test_accuracy`` (on a held-out quarter), ``source``.

    Returns
    -------
    embeddings : ndarray, shape (1797, d), read-only
        The last hidden layer of every digit, scaled so that the largest norm is 1 (the
        arms' features, ``|x| <= 1`` as in the synthetic problems).
    thetas : ndarray, shape (n_thetas, d), read-only
        Samples of the prior of ``theta``.
    info : dict
        Only with ``return_info``.

    Raises
    ------
    ImportError
        If scikit-learn is not installed (the message names ``pip install scikit-learn``).

    Notes
    -----
    1. An MLP classifier (:class:`sklearn.neural_network.MLPClassifier`, ``tanh`` hidden
       units, Adam, seeded) is trained on three quarters of the digits (pixels / 16,
       stratified split) and scored on the rest; its last hidden layer, applied to all
       digits, is the embedding. ``tanh`` rather than ReLU: a dead ReLU unit would make an
       embedding coordinate zero for every digit and the prior of ``theta`` degenerate.
    2. Each ``theta``: draw a positive label ``c`` uniformly from 0-9; draw
       ``subset_size/2`` digits of label ``c`` (reward 1) and as many of other labels
       (reward -1), without replacement; ``theta`` is the least-squares fit
       ``argmin |X theta - r|^2 + ridge |theta|^2`` without intercept (the bandit's mean
       reward is ``x^T theta``).

    The classifier takes a few seconds, so results are cached per argument tuple for the
    life of the process (:func:`clear_digits_cache` forgets); cached arrays are read-only.
    Reproducible for a given scikit-learn version (its MLP's floating point may change
    between versions).

    Examples
    --------
    >>> from vits_ref.data.digits import digit_embeddings
    >>> emb, thetas = digit_embeddings(n_thetas=100)  # doctest: +SKIP
    >>> emb.shape, thetas.shape  # doctest: +SKIP
    ((1797, 8), (100, 8))
    """
    n_thetas = val.positive_int(n_thetas, "n_thetas")
    subset_size = val.positive_int(subset_size, "subset_size", minimum=2)
    if subset_size % 2:
        raise ValueError(f"subset_size must be even (half positive, half negative), got "
                         f"{subset_size}")
    if (not isinstance(hidden, (tuple, list)) or not hidden):
        raise TypeError(f"hidden must be a non-empty tuple of layer widths, got {hidden!r}")
    hidden = tuple(val.positive_int(h, "hidden") for h in hidden)
    ridge = val.positive_float(ridge, "ridge", allow_zero=True)
    seed = val.positive_int(seed, "seed", minimum=0)
    max_iter = val.positive_int(max_iter, "max_iter")
    key = (n_thetas, subset_size, hidden, ridge, seed, max_iter)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _build(*key)
        _CACHE[key] = hit
    emb, thetas, info = hit
    return (emb, thetas, dict(info)) if return_info else (emb, thetas)


def _build(n_thetas, subset_size, hidden, ridge, seed, max_iter):
    import warnings

    load_digits, MLPClassifier = _sklearn()
    X, labels = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    # stratified split: a quarter of each label held out
    test = np.zeros(labels.size, dtype=bool)
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        test[rng.choice(idx, size=idx.size // 4, replace=False)] = True
    clf = MLPClassifier(hidden_layer_sizes=hidden, activation="tanh", max_iter=max_iter,
                        random_state=int(rng.integers(2 ** 31)))
    with warnings.catch_warnings():
        # a capped number of epochs is a choice here, not a failure
        warnings.simplefilter("ignore", category=UserWarning)
        clf.fit(X[~test], labels[~test])
    accuracy = float(clf.score(X[test], labels[test]))
    h = X
    for W, b in zip(clf.coefs_[:-1], clf.intercepts_[:-1], strict=True):
        h = np.tanh(h @ W + b)
    emb = h / np.linalg.norm(h, axis=1).max()
    d = emb.shape[1]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    half = subset_size // 2
    r = np.concatenate([np.ones(half), -np.ones(half)])
    by_label = [np.flatnonzero(labels == c) for c in range(10)]
    not_label = [np.flatnonzero(labels != c) for c in range(10)]
    positive = rng.integers(10, size=n_thetas)
    thetas = np.empty((n_thetas, d))
    pad_rows = np.sqrt(ridge) * np.eye(d)
    pad_r = np.zeros(d)
    for i, c in enumerate(positive):
        idx = np.concatenate([rng.choice(by_label[c], size=half, replace=False),
                              rng.choice(not_label[c], size=half, replace=False)])
        A, y = emb[idx], r
        if ridge > 0:
            A, y = np.vstack([A, pad_rows]), np.concatenate([r, pad_r])
        thetas[i] = np.linalg.lstsq(A, y, rcond=None)[0]
    info = {"labels": _frozen(labels), "positive": _frozen(positive),
            "test_accuracy": accuracy,
            "source": "sklearn.datasets.load_digits (replaces MNIST)"}
    return _frozen(emb), _frozen(thetas), info
