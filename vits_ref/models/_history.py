"""What the models that keep their history share: growing buffers and mini-batch weights.

:class:`History` holds the observations in preallocated buffers ``_X`` (cap, input_dim)
and ``_y`` (cap,) that double when full (amortised O(1) per observation; dtype and rank
never change, so compiled kernels are never recompiled as the history grows).
:class:`NetworkModel` adds what the gradient-only network potentials
(:class:`~vits_ref.models.bnn.BNNRegression`, :class:`~vits_ref.models.classifier.
BNNClassifier`) share: their ``data`` tuples ``(X, y, *shape, w_l, w_p)``, scratch rows and
the gradient-only potential interface.
"""

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from .base import Model
from .welling_teh import _index


def minibatch_weights(like_weight, prior_weight):
    """``(like_weight, prior_weight)`` as floats ``>= 0`` (the mini-batch hook's weights)."""
    return (val.positive_float(like_weight, "like_weight", allow_zero=True),
            val.positive_float(prior_weight, "prior_weight", allow_zero=True))


class History:
    """Growing history buffers ``_X`` (cap, input_dim), ``_y`` (cap,) and ``n_obs``.

    A subclass sets ``input_dim``, calls :meth:`_init_history` and appends validated rows
    with :meth:`_append`; it may extend :meth:`_alloc` (called with the new capacity each
    time the buffers grow) to resize what is sized with the history.
    """

    #: for vits_ref.load (vits_ref.inference.persist): the history is the state; the
    #: buffers may have grown, and hold at least n_obs rows
    _persist_state = ("n_obs", "_X", "_y")
    _persist_growing = ("_X", "_y")
    _persist_bounds = (("n_obs", "_X", 0), ("n_obs", "_y", 0))

    def _persist_restored(self):
        """After vits_ref.load: buffers of one capacity, and what is sized with them."""
        self._alloc(self._X.shape[0])

    def _init_history(self, capacity):
        self.capacity = val.positive_int(capacity, "capacity")
        self.n_obs = 0
        self._alloc(self.capacity)

    def _alloc(self, cap):
        """Buffers of ``cap`` rows holding the ``n_obs`` rows so far."""
        X = np.zeros((cap, self.input_dim))
        y = np.zeros(cap)
        if self.n_obs:
            X[:self.n_obs] = self._X[:self.n_obs]
            y[:self.n_obs] = self._y[:self.n_obs]
        self._X, self._y = X, y

    def _append(self, features, rewards):
        """Append validated rows ``features`` (m, input_dim), ``rewards`` (m,); the
        buffers double until they hold them."""
        need = self.n_obs + features.shape[0]
        cap = self._X.shape[0]
        if need > cap:
            while cap < need:
                cap *= 2
            self._alloc(cap)
        self._X[self.n_obs:need] = features
        self._y[self.n_obs:need] = rewards
        self.n_obs = need

    @property
    def X(self):
        """The features seen so far, ``(n_obs, input_dim)`` (a view of the buffer)."""
        return self._X[:self.n_obs]

    @property
    def y(self):
        """The rewards (targets, labels as floats) seen so far, ``(n_obs,)`` (a view)."""
        return self._y[:self.n_obs]


class NetworkModel(History, Model):
    """Base of the gradient-only network potentials on a growing history.

    A subclass sets ``potential``, ``_what`` (the model in messages) and
    ``_shape_args`` (the constructor's arguments that fix the shape and the prior, set as
    attributes of the same names), validates those and sets ``dim``, then calls
    :meth:`_init_network`; it defines ``_shape_data()`` (the ``data`` entries between ``y``
    and the weights) and ``_scratch_widths()`` (the widths of the scratch's
    ``(R, width)`` arrays).
    """

    #: how messages name the model
    _what = "network"
    #: the constructor's arguments, besides eta, lam, capacity and chunk (see spawn)
    _shape_args = ()

    def _init_network(self, eta, lam, capacity, chunk):
        """Validate and set what every network model takes; allocate the history and the
        scratch (``dim`` and the shape arguments are set)."""
        self.eta = val.positive_float(eta, "eta")
        self.lam = val.positive_float(lam, "lam")
        self.chunk = val.positive_int(chunk, "chunk")
        self._init_history(capacity)
        self._rows = 0
        self._scratch = None
        self.kernel_scratch(1)

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._shape_args + ("eta",))
        return f"{type(self).__name__}({args})"

    def spawn(self, eta, lam):
        """A model of the same shape and prior, no data."""
        return type(self)(**{k: getattr(self, k) for k in self._shape_args}, eta=eta,
                          lam=lam, capacity=self.capacity, chunk=self.chunk)

    # -- kernel interface ---------------------------------------------------------------
    def kernel_data(self, prior=True):
        """``(X, y, *shape, w_l, w_p)`` on the whole history, ``w_l = w_p = eta``
        (``prior=False``: ``w_p = 0``)."""
        n = self.n_obs
        return ((self._X[:n], self._y[:n]) + self._shape_data()
                + (self.eta, self.eta if prior else 0.0))

    def minibatch_data(self, index, like_weight=1.0, prior_weight=1.0):
        """Kernel data of ``U = -like_weight sum_{i in index} log p(y_i | x_i, theta)
        - prior_weight log p0(theta)`` (both times ``eta``; ``p0`` the model's whole prior).
        ``index``: integer rows of the history."""
        idx = _index(index, self.n_obs)
        lw, pw = minibatch_weights(like_weight, prior_weight)
        return ((self._X[idx], self._y[idx]) + self._shape_data()
                + (self.eta * lw, self.eta * pw))

    def kernel_scratch(self, n_rows=1):
        """The bodies' scratch arrays ``(R, width)``, one row per parameter vector
        (``R >= n_rows``)."""
        n_rows = max(1, int(n_rows))
        if n_rows > self._rows:
            self._scratch = tuple(np.empty((n_rows, w)) for w in self._scratch_widths())
            self._rows = n_rows
        return self._scratch

    # -- potential ----------------------------------------------------------------------
    def value(self, theta):
        """``U(theta)`` (``eta = 1``: exactly ``-log p(y, theta | X)``)."""
        return float(cpu.value(self.potential)(self.kernel_data(), self._theta(theta),
                                               self.kernel_scratch()))

    def grad(self, theta):
        """``grad U(theta)``, shape (dim,)."""
        return self.grads_hessian(self._theta(theta)[None, :], False)[0][0]

    def hess(self, theta):
        """Not available: the potential provides gradients only."""
        raise NotImplementedError(f"the {self._what} potential has no Hessian (gradients "
                                  "only): use a gradient-based engine (SVGD, OPVI, SGLD, "
                                  "Langevin)")

    def grads_hessian(self, thetas, want_hessian=False):
        """``(G (M, dim), None)``: the gradients at the rows of ``thetas``.

        Raises NotImplementedError for ``want_hessian=True``.
        """
        if want_hessian:
            self.hess(None)
        thetas = self._thetas(thetas)
        G = np.empty_like(thetas)
        cpu.grads_hessian(self.potential)(self.kernel_data(), thetas, False, G,
                                          np.empty((1, 1)),
                                          self.kernel_scratch(thetas.shape[0]))
        return G, None

    # -- helpers ------------------------------------------------------------------------
    def _theta(self, theta):
        theta = val.float_array(theta, "theta", ndim=1, finite=False)
        if theta.shape != (self.dim,):
            raise ValueError(f"theta must have shape ({self.dim},) (this {self._what}'s "
                             f"number of parameters), got {theta.shape}")
        return theta

    def _thetas(self, thetas):
        thetas = val.float_array(thetas, "thetas", ndim=2, finite=False)
        if thetas.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (M, {self.dim}), got {thetas.shape}")
        return thetas
