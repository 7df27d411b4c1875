"""Two-layer Bayesian neural network classifier (the OPVI paper, section 5.3).

The OPVI paper classifies MNIST with "a two-layer BNN model with 100 hidden variables, with a
sigmoid input layer and a softmax output layer" and 20 particles; it states no prior.
The choice here: sigmoid hidden units, softmax over ``K`` classes, and a Gaussian prior
``N(0, I/alpha)`` with a *fixed* precision ``alpha`` (default 1) on every weight and bias
(no Gamma hyperprior, unlike :class:`~vits_ref.models.bnn.BNNRegression`: the classifier
has no noise precision, and a fixed prior keeps the potential's scale stable across the
mini-batch weights). The bodies are in :mod:`vits_ref.kernels.classifier`.
"""

import numpy as np

from .. import _validate as val
from ..config import cpu_jit, stamped
from ..kernels.classifier import POTENTIAL, classifier_probs
from ._history import NetworkModel

CHUNK = 256


@stamped
def _probs_particles(stamp):
    @cpu_jit
    def _probs_particles(data, thetas, X, P, scratch):
        # P (M, n, K): the class probabilities of every particle (serial over particles)
        _ = stamp
        for m in range(thetas.shape[0]):
            classifier_probs(data, thetas[m], X, P[m], scratch)

    return _probs_particles


class BNNClassifier(NetworkModel):
    r"""Softmax classifier with one hidden layer of sigmoid units, as a potential.

    Parameters
    ----------
    input_dim : int
        ``p``.
    n_classes : int, default 2
        ``K >= 2``; labels are ``0 .. K-1``.
    hidden : int, default 100
        Hidden sigmoid units (the OPVI paper: 100).
    alpha : float, default 1.0
        Prior precision: ``theta ~ N(0, I/alpha)``.
    eta : float, default 1.0
        Inverse temperature: multiplies the whole potential.
    lam : float, default 1.0
        Unused (the prior is ``alpha``); kept for the engines' signature.
    capacity, chunk : int
        Initial history size (doubles when full); rows per pass of the bodies.

    Notes
    -----
    ``theta = (W_1 (h, p), b_1 (h), W_2 (K, h), b_2 (K))``, ``dim = h (p + 1) + K (h + 1)``.

    .. math::

        U(\theta) = -\sum_s \log \mathrm{softmax}(W_2 \sigma(W_1 x_s + b_1) + b_2)_{y_s}
                    + \tfrac{\alpha}{2}\|\theta\|^2 + \tfrac{d}{2}\log\tfrac{2\pi}{\alpha}.

    :meth:`predict` returns the class probabilities (n, K); :func:`accuracy` scores an
    ensemble by its mean probabilities. In the bandit protocol the potential's ``predict``
    body scores an arm by the last class's probability.

    Examples
    --------
    >>> import numpy as np
    >>> m = BNNClassifier(4, n_classes=3, hidden=5)
    >>> m.dim
    43
    >>> m.predict(np.zeros(m.dim), np.ones((2, 4))).round(4)
    array([[0.3333, 0.3333, 0.3333],
           [0.3333, 0.3333, 0.3333]])
    """

    name = "bnn_classifier"
    potential = POTENTIAL
    _what = "BNN classifier"
    _shape_args = ("input_dim", "n_classes", "hidden", "alpha")
    #: for vits_ref.load: the constructor's arguments (the history is History's state)
    _persist_params = ("input_dim", "n_classes", "hidden", "alpha", "eta", "lam", "capacity",
                       "chunk")

    def __init__(self, input_dim, n_classes=2, hidden=100, alpha=1.0, eta=1.0, lam=1.0,
                 capacity=1024, chunk=CHUNK):
        self.input_dim = val.positive_int(input_dim, "input_dim")
        self.n_classes = val.positive_int(n_classes, "n_classes", minimum=2)
        self.hidden = val.positive_int(hidden, "hidden")
        self.alpha = val.positive_float(alpha, "alpha")
        p, h, K = self.input_dim, self.hidden, self.n_classes
        self.dim = h * (p + 1) + K * (h + 1)
        o1, o2, o3 = h * p, h * p + h, h * p + h + K * h
        #: ``{block: (start, stop, shape)}`` of the flat vector
        self.layout = {"W1": (0, o1, (h, p)), "b1": (o1, o2, (h,)),
                       "W2": (o2, o3, (K, h)), "b2": (o3, o3 + K, (K,))}
        self._init_network(eta, lam, capacity, chunk)

    # -- data -----------------------------------------------------------------------------
    def add(self, features, rewards):
        """Append rows ``features`` (n, input_dim) and labels ``rewards`` (n,) in 0..K-1."""
        features, rewards = val.observations(features, rewards, self.input_dim)
        bad = (rewards != np.round(rewards)) | (rewards < 0) | (rewards >= self.n_classes)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"labels (rewards) must be integers in [0, {self.n_classes}), "
                             f"got {float(rewards[i])!r} at index {i}")
        self._append(features, rewards)

    # -- kernel interface (the rest in NetworkModel) --------------------------------------
    def _shape_data(self):
        """``data = (X, y, K, h, alpha, w_l, w_p)``: the part between ``y`` and the
        weights."""
        return (self.n_classes, self.hidden, self.alpha)

    def _scratch_widths(self):
        """``(A, Z, Dh, gtmp)``: ``(R, c h)``, ``(R, c K)``, ``(R, c h)``, ``(R, dim)``."""
        c, h, K = self.chunk, self.hidden, self.n_classes
        return (c * h, c * K, c * h, self.dim)

    # -- potential ----------------------------------------------------------------------
    def predict(self, theta, contexts):
        """Class probabilities (n, K) at the rows of ``contexts``."""
        return self.predict_particles(self._theta(theta)[None, :], contexts)[0]

    def predict_particles(self, thetas, X):
        """``P[m, s, k] = p(y = k | X[s], theta_m)`` for the rows of ``thetas``."""
        thetas = self._thetas(thetas)
        if not np.all(np.isfinite(thetas)):
            raise ValueError("thetas contains NaN or inf")
        X = val.float_array(X, "X", ndim=2)
        if X.shape[1] != self.input_dim:
            raise ValueError(f"X must have {self.input_dim} columns, got shape {X.shape}")
        P = np.empty((thetas.shape[0], X.shape[0], self.n_classes))
        _probs_particles(self.kernel_data(), thetas, X, P, self.kernel_scratch())
        return P

    def init_particles(self, n, seed=None):
        """``n`` starting particles: weights ``N(0, 1/fan_in)`` (Glorot-like), biases 0."""
        n = val.positive_int(n, "n")
        rng = val.as_generator(seed)
        out = np.zeros((n, self.dim))
        for name in ("W1", "W2"):
            a, b, shape = self.layout[name]
            out[:, a:b] = rng.standard_normal((n, b - a)) / np.sqrt(shape[1])
        return out

    def unpack(self, theta):
        """``{"W1", "b1", "W2", "b2"}``: views of ``theta``."""
        theta = self._theta(theta)
        return {k: theta[a:b].reshape(s) for k, (a, b, s) in self.layout.items()}


def accuracy(model, thetas, X, y):
    """Test accuracy of the ensemble's mean class probabilities.

    ``yhat_s = argmax_k 1/M sum_m p(k | x_s, theta_m)`` (the Bayesian model average over the
    particles); returns ``mean_s [yhat_s == y_s]``. ``y``: integer labels (n,).
    """
    if not isinstance(model, BNNClassifier):
        raise TypeError(f"model must be a BNNClassifier, got {type(model).__name__}")
    P = model.predict_particles(thetas, X).mean(axis=0)
    y = val.float_array(y, "y", ndim=1, shape=(P.shape[0],))
    return float(np.mean(np.argmax(P, axis=1) == y))
