"""Classification data sets as contextual bandits: one arm per class, reward 1 if right.

The usual construction (Riquelme, Tucker and Snoek, 2018, "Deep Bayesian Bandits
Showdown", section 4; Dudik, Langford and Li, 2011): each round shows the features ``x``
of one sample of the data set; the ``K`` arms are the ``K`` classes; playing arm ``a``
pays 1 if ``a`` is the sample's class and 0 otherwise. The expected reward of arm ``a`` is
the indicator of the sample's class, so a round's regret is 0 for the right class and 1
for any other: the cumulative regret counts the wrong predictions, exactly.

:class:`ClassificationBandit` takes any feature matrix and labels; :func:`sklearn_bandit`
loads the data sets that scikit-learn ships (no download): ``"wine"`` (178 samples, 13
features, 3 classes), ``"breast_cancer"`` (569, 30, 2) and ``"digits"`` (1797 8 x 8
images, 64 pixels, 10 classes).
"""

import hashlib

import numpy as np

from .. import _validate as val
from .base import Environment
from .disjoint import decode, encode
from .rounds import Draw, RoundDraws

__all__ = ["DATA_HINT", "SKLEARN_SETS", "ClassificationBandit", "sklearn_bandit"]

#: The one-line fix named when scikit-learn is missing.
DATA_HINT = ("the classification bandits load scikit-learn's bundled data sets; install it "
             "with: pip install 'vits_ref[data]'")
#: The data sets of :func:`sklearn_bandit`, by the name of their scikit-learn loader.
SKLEARN_SETS = ("wine", "breast_cancer", "digits")


class ClassificationBandit(Environment):
    r"""A classification data set as a bandit: one arm per class, reward 1 for the right one.

    Parameters
    ----------
    features : (n, p) array_like
        One row per sample, finite.
    labels : (n,) array_like
        The samples' classes (any values; sorted, they are the arms ``0 .. K-1``), at least
        two distinct ones.
    standardize : bool, default True
        Centre every feature and divide it by its standard deviation (a constant feature
        keeps scale 1), then divide by ``sqrt(p)``, so that a sample's squared norm is 1 on
        average over the data set whatever the number of features: the scale of the hard
        instance's unit-norm arms, so that one step size suits every data set
        (docs/reproduction/showdown.md).
    n_components : int, optional
        Keep only the first ``n_components`` principal components of the (standardised)
        features: their scores on the leading right singular vectors of the centred
        matrix, each vector's sign fixed so that its largest entry in absolute value is
        positive (reproducible across BLAS builds). ``None``: every feature. Applied before
        the division by ``sqrt(p)``, with ``p`` then the number of components.
    intercept : bool, default True
        Append a constant 1 to every sample's features (a per-arm bias, as the linear
        baselines of Riquelme et al. have), so ``p`` grows by one.
    seed : int, SeedSequence, Generator or None
        Unused: the instance is the data set (kept for the protocol); every run draws its
        own samples.
    label : str, optional
        A name for messages and results (e.g. ``"wine"``).

    Attributes
    ----------
    n_features : int
        ``p``, the length of one arm's block (after the preprocessing and the intercept).
    X : (n, p) ndarray
        The preprocessed features, read-only.
    y : (n,) ndarray of int
        The arm (class index) of every sample.
    classes : ndarray
        The original label of each arm.

    Notes
    -----
    Each round draws a sample index ``i`` uniformly from the ``n`` samples (with
    replacement, from the run's generator) and shows the features ``x_i``. The arms' features
    are the disjoint encoding (:mod:`vits_ref.envs.disjoint`): arm ``a`` sees ``x_i`` in
    block ``a`` of a vector of length ``d = K p``, so the shared-parameter engines fit one
    linear score per class. Expected rewards: ``means[t, a] = P(class a | x_t)`` over the
    data set, the indicator of ``y_i`` when no two samples with equal features have
    different labels (the case of every :data:`SKLEARN_SETS` data set); rewards: one
    uniform ``u_t`` per round picks the class with those probabilities, so with the
    indicator the reward is exactly the indicator. The expected reward is a function of the
    context, :meth:`expected_reward` (a table of the data set's distinct rows), so the
    regret ``max_a means - means[arm]`` is exact.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    >>> env = vr.envs.ClassificationBandit(X, ["b", "a", "b"], standardize=False)
    >>> env.n_arms, env.dim, env.classes.tolist()
    (2, 6, ['a', 'b'])
    >>> run = env.realise(4, rng=0)
    >>> bool(np.array_equal(run.rewards, run.means)), run.means.sum(axis=1).tolist()
    (True, [1.0, 1.0, 1.0, 1.0])
    """

    name = "classification"

    def __init__(self, features, labels, standardize=True, n_components=None, intercept=True,
                 seed=None, label=None):
        raw = val.float_array(features, "features", ndim=2)
        n = raw.shape[0]
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels must have shape ({n},) (one per row of features), got "
                             f"{labels.shape}")
        classes, y = np.unique(labels, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"labels must hold at least two classes (one arm each), got "
                             f"{classes.size}")
        if not isinstance(standardize, (bool, np.bool_)):
            raise TypeError(f"standardize must be True or False, got {standardize!r}")
        if not isinstance(intercept, (bool, np.bool_)):
            raise TypeError(f"intercept must be True or False, got {intercept!r}")
        if n_components is not None:
            n_components = val.positive_int(n_components, "n_components")
            if n_components > min(raw.shape):
                raise ValueError(f"n_components must be <= min(n, p) = {min(raw.shape)}, "
                                 f"got {n_components}")
        self.features, self.labels = raw, labels
        self.standardize, self.n_components = bool(standardize), n_components
        self.intercept, self.label = bool(intercept), label
        self.classes, self.y = classes, y.astype(np.int64)
        X = _preprocess(raw, self.standardize, n_components)
        if self.intercept:
            X = np.hstack([X, np.ones((n, 1))])
        X.setflags(write=False)
        self.X = X
        self.n_features = X.shape[1]
        K = classes.size
        # P(class | features) per distinct row: the expected rewards (exact regret)
        rows, inverse = np.unique(X, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        probs = np.zeros((rows.shape[0], K))
        np.add.at(probs, (inverse, self.y), 1.0)
        probs /= probs.sum(axis=1, keepdims=True)
        self._probs, self._row_of_sample = probs, inverse
        self._cum = np.cumsum(probs, axis=1)
        self._row_index = {r.tobytes(): u for u, r in enumerate(rows)}
        super().__init__(K * self.n_features, K, "linear", seed)

    def _build(self, rng):
        # the instance is the data set: nothing random
        self.noise_scale = None

    @property
    def n_samples(self):
        """Number of samples ``n``."""
        return self.X.shape[0]

    # -- reward model ----------------------------------------------------------------------
    def expected_reward(self, contexts):
        """``P(class a | x)`` for arm features ``(..., K, d)`` of data set samples -> ``(..., K)``.

        Raises ValueError for a context that is not a sample's (the data set defines the
        expected reward only there).
        """
        x = decode(contexts, self.n_features)
        flat = np.ascontiguousarray(x.reshape(-1, self.n_features))
        try:
            rows = np.fromiter((self._row_index[r.tobytes()] for r in flat), np.int64,
                               count=flat.shape[0])
        except KeyError:
            raise ValueError("contexts must be arm features of the data set's samples "
                             "(the disjoint encoding of a row of X)") from None
        return self._probs[rows].reshape(x.shape[:-1] + (self.n_arms,))

    # -- a run's draws: the samples, then one uniform per round for the rewards ------------
    def round_draws(self):
        """A round: one sample index (a uniform integer in ``[0, n_samples)``), its features
        in the disjoint encoding; then one uniform ``u`` that picks the observed class,
        the first whose cumulative probability exceeds ``u`` (with one-hot expected
        rewards, the sample's own class whatever ``u``). No counter piece."""
        X, K = self.X, self.n_arms

        def contexts(parts, n):
            return encode(X[parts[0][:, 0]], K)

        def rewards(contexts, means, parts):
            cls = np.minimum((parts[0] >= np.cumsum(means, axis=1)).sum(axis=1), K - 1)
            return (cls[:, None] == np.arange(K)[None, :]).astype(float)

        return RoundDraws((Draw("integers", (1,), high=self.n_samples),), contexts,
                          (Draw("uniform", (1,)),), rewards)

    def _params(self):
        return {"features": self.features, "labels": self.labels,
                "standardize": self.standardize, "n_components": self.n_components,
                "intercept": self.intercept, "seed": self.seed, "label": self.label}

    def __repr__(self):
        # the data enter by their digest: a repr that names them without printing them
        h = hashlib.sha256(np.ascontiguousarray(self.features).tobytes())
        h.update(np.asarray(self.y).tobytes())
        what = f"{self.label!r}, " if self.label else ""
        return (f"ClassificationBandit({what}n={self.n_samples}, K={self.n_arms}, "
                f"p={self.n_features}, standardize={self.standardize}, "
                f"n_components={self.n_components}, intercept={self.intercept}, "
                f"data={h.hexdigest()[:16]})")


def _preprocess(X, standardize, n_components):
    X = X.copy()
    if standardize or n_components is not None:
        X -= X.mean(axis=0)
    if standardize:
        sd = X.std(axis=0)
        X /= np.where(sd > 0, sd, 1.0)
    if n_components is not None:
        _, _, vt = np.linalg.svd(X, full_matrices=False)
        vt = vt[:n_components]
        # a singular vector's sign is arbitrary (and BLAS-dependent): fix it
        big = np.argmax(np.abs(vt), axis=1)
        vt *= np.sign(vt[np.arange(n_components), big])[:, None]
        X = X @ vt.T
    if standardize:
        X /= np.sqrt(X.shape[1])
    return np.ascontiguousarray(X)


def sklearn_bandit(name, standardize=True, n_components=None, intercept=True, seed=None):
    """The bandit of a data set that scikit-learn ships: ``"wine"``, ``"breast_cancer"``
    or ``"digits"`` (:data:`SKLEARN_SETS`; nothing is downloaded).

    Parameters
    ----------
    name : {"wine", "breast_cancer", "digits"}
    standardize, n_components, intercept, seed
        As :class:`ClassificationBandit`.

    Raises
    ------
    ImportError
        If scikit-learn is not installed (the ``data`` extra; the message names
        ``pip install 'vits_ref[data]'``).

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.sklearn_bandit("wine")
    >>> env.n_arms, env.n_features, env.dim
    (3, 14, 42)
    """
    name = val.choice(name, "name", SKLEARN_SETS)
    try:
        from sklearn import datasets
    except ImportError:
        raise ImportError(DATA_HINT) from None
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    return ClassificationBandit(X, y, standardize=standardize, n_components=n_components,
                                intercept=intercept, seed=seed, label=name)

