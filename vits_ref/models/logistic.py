"""Logistic (Bernoulli) reward model: the potential of the VITS paper's logistic bandits.

Rewards ``y_s in {0, 1}`` with ``P(y = 1 | x) = sigmoid(x theta)`` and the prior
``N(0, I/(lam eta))`` tempered by ``eta`` (VITS paper, section 5 and appendix G;
docs/algorithms.md section 2)::

    U(theta) = eta [ sum_s (log(1 + exp(x_s theta)) - y_s x_s theta) + lam/2 |theta|^2 ]
    grad U   = eta ( sum_s (sigmoid(x_s theta) - y_s) x_s + lam theta )
    hess U   = eta ( sum_s sigmoid'(x_s theta) x_s x_s^T + lam I )

The Hessian's data term depends on ``theta``, so nothing of it can be cached across
``theta``; what is cached is the history, in preallocated buffers (see :class:`Logistic`).
The kernels are in :mod:`vits_ref.kernels.logistic`.
"""

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..kernels.logistic import POTENTIAL
from ._history import History, minibatch_weights
from .base import Model
from .linear import general_prior


def potential_scratch(n, dim, rows=1):
    """Scratch of the logistic potential's bodies for ``n`` observations and up to ``rows``
    parameter vectors at a time (the tuple documented in :mod:`vits_ref.kernels.logistic`)."""
    return (np.empty(n * rows), np.empty(n), np.empty((n, dim)), np.empty((rows, dim)),
            np.empty((rows, dim)), np.full(dim + 1, -1.0))


class Logistic(History, Model):
    r"""Logistic-regression potential on a growing history of Bernoulli rewards.

    Parameters
    ----------
    dim : int
        Parameter dimension ``d`` (also the size of an arm's features, ``input_dim``).
    eta : float, default 1.0
        Inverse temperature: multiplies the whole potential (likelihood and prior).
    lam : float, default 1.0
        Ridge: the prior is ``N(0, I/(lam eta))``.
    prior_mean, prior_cov : array or None
        A general Gaussian prior ``N(theta0, Sigma0)`` instead (``prior_cov`` a matrix or
        the diagonal as a vector): the prior term of ``U`` becomes
        ``1/2 (theta - theta0)^T inv(Sigma0) (theta - theta0)``, not tempered by ``eta``
        (the MovieLens setting of the VITS paper, section 5).
    capacity : int, default 1024
        Initial number of observations the history buffers hold. When full they double
        (amortised O(1) per observation, never a reallocation per round); their dtype and
        rank never change, so the compiled kernels are never recompiled as history grows.

    Attributes
    ----------
    X, y : ndarray
        Views ``(n, d)`` and ``(n,)`` of the history buffers (``n = n_obs``).

    Notes
    -----
    The potential (VITS paper, section 5 / appendix G, "logistic bandit"; docs/algorithms.md
    section 2), with ``z_s = x_s theta`` and ``sigma`` the logistic function:

    .. math::

        U(\theta) = \eta \Big[\sum_s \big(\log(1 + e^{z_s}) - y_s z_s\big)
                    + \tfrac{\lambda}{2} \|\theta\|^2\Big],\quad
        \nabla U = \eta\big(X^T(\sigma(z) - y) + \lambda\theta\big),\quad
        \nabla^2 U = \eta\big(X^T \mathrm{diag}(\sigma'(z)) X + \lambda I\big).

    Evaluated in overflow-free forms (``log1p(exp(-|z|))``, ``exp(-|z|)``), accurate for
    any finite ``z`` (tested at ``|z| = 1000``). Unlike the VITS authors' code, the sigmoid
    is applied once. :meth:`predict` returns ``x theta``, not ``sigmoid(x theta)``: the mean
    reward is monotone in ``x theta``, so the argmax (the arm Thompson sampling plays) is
    the same and the scores stay informative where the sigmoid saturates.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.models import Logistic
    >>> m = Logistic(2, eta=1.0, lam=1.0)
    >>> m.add(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 0.0]))
    >>> m.grad(np.zeros(2))  # sigmoid(0) - y = -1/2, +1/2
    array([-0.5,  0.5])
    >>> float(m.value(np.zeros(2)))  # 2 log 2
    1.3862943611198906
    """

    name = "logistic"
    #: for vits_ref.load: the constructor's arguments (the history is History's state)
    _persist_params = ("dim", "eta", "lam", "capacity", "prior_mean", "prior_cov")
    #: the kernel bodies of this potential (:mod:`vits_ref.kernels.logistic`)
    potential = POTENTIAL

    def __init__(self, dim, eta=1.0, lam=1.0, capacity=1024, prior_mean=None, prior_cov=None):
        self.dim = val.positive_int(dim, "dim")
        self.input_dim = self.dim
        self.eta, self.lam = val.eta_lam(eta, lam)
        self.prior_mean, self.prior_cov = general_prior(self.dim, prior_mean, prior_cov)
        # the prior term 1/2 (theta - theta0)^T P0 (theta - theta0) of U; the default
        # prior is P0 = eta lam I, theta0 = 0 (and is handled inside the kernels)
        self.prior_precision = (self.eta * self.lam * np.eye(self.dim)
                                if self.prior_cov is None else np.linalg.inv(self.prior_cov))
        self._lam_kernel = self.lam if self.prior_cov is None else 0.0
        self._prior = ((False, np.zeros((1, 1)), np.zeros(1)) if self.prior_cov is None
                       else (True, self.prior_precision, self.prior_mean))
        self._rows = 1  # rows of parameter vectors the scratch holds
        self._init_history(capacity)

    def kernel_data(self, prior=True):
        """``(X, y, eta, lam, has_prior, P0, theta0)`` for the kernels.

        ``prior=False``: the likelihood's part only (``lam = 0``, no prior term), which the
        Laplace engine completes with the prior as an explicit Gaussian term.
        """
        if prior:
            return (self.X, self.y, self.eta, self._lam_kernel) + self._prior
        return (self.X, self.y, self.eta, 0.0, False, np.zeros((1, 1)), np.zeros(1))

    def kernel_scratch(self, n_rows=1):
        """The kernels' scratch for up to ``n_rows`` parameter vectors at a time."""
        if n_rows > self._rows:
            self._rows = int(n_rows)
            self._alloc(self._X.shape[0])
        return self._scratch

    # -- history buffers ------------------------------------------------------------------
    def _alloc(self, cap):
        # the history (History._alloc), then the kernel scratch, sized with the history:
        # X theta^T (flat), the Hessian's weights and scaled rows, and the general prior's
        # two (rows, d) buffers
        super()._alloc(cap)
        self._scratch = potential_scratch(cap, self.dim, self._rows)

    def add(self, features, rewards):
        """Append observations: ``features`` (n, dim) finite, ``rewards`` (n,) in {0, 1}.

        Raises
        ------
        ValueError
            On a shape mismatch, non-finite features, or a reward other than 0 or 1.
        """
        self._add_observed(*val.observations(features, rewards, self.input_dim))

    def _add_observed(self, features, rewards):
        self._append(features, val.bernoulli_rewards(rewards))

    def _state(self):
        """What :meth:`add` changes, without copying the history: appended rows lie beyond
        ``n_obs``, so restoring ``n_obs`` and the buffers' bindings (a growth may have
        reallocated them) restores it (for the engines' transactional update)."""
        return self.n_obs, self._X, self._y, self._scratch, self._rows

    def _restore(self, state):
        self.n_obs, self._X, self._y, self._scratch, self._rows = state

    # -- the potential --------------------------------------------------------------------
    def _theta(self, theta):
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if theta.shape != (self.dim,):
            raise ValueError(f"theta must have shape ({self.dim},), got {theta.shape}")
        return theta

    def value(self, theta):
        """``U(theta)``."""
        theta = self._theta(theta)
        return float(cpu.value(POTENTIAL)(self.kernel_data(), theta, self.kernel_scratch()))

    def grad(self, theta):
        """``eta (X^T (sigmoid(X theta) - y) + lam theta)``."""
        return self.grads_hessian(self._theta(theta)[None, :], False)[0][0]

    def hess(self, theta):
        """``eta (X^T diag(sigmoid'(X theta)) X + lam I)``."""
        return self.grads_hessian(self._theta(theta)[None, :], True)[1]

    def grads_hessian(self, thetas, want_hessian=True):
        """Gradients at the rows of ``thetas`` and the mean of the Hessians there.

        Parameters
        ----------
        thetas : (M, dim) array
        want_hessian : bool, default True

        Returns
        -------
        G : (M, dim) ndarray
            ``G[j] = grad U(thetas[j])``.
        H : (dim, dim) ndarray or None
            ``mean_j hess U(thetas[j]) = eta (X^T diag(mean_j sigmoid'(X thetas[j])) X
            + lam I)``: the weights are averaged first, so any M costs one Gram product.
        """
        thetas = np.ascontiguousarray(thetas, dtype=np.float64)
        if thetas.ndim != 2 or thetas.shape[1] != self.dim or thetas.shape[0] == 0:
            raise ValueError(f"thetas must have shape (M, {self.dim}) with M >= 1 (the "
                             f"Hessian is a mean over the rows), got {thetas.shape}")
        G = np.empty_like(thetas)
        H = np.empty((self.dim, self.dim))
        want = bool(want_hessian)
        cpu.grads_hessian(POTENTIAL)(self.kernel_data(), thetas, want, G, H,
                                     self.kernel_scratch(thetas.shape[0]))
        return G, (H if want else None)

    def predict(self, theta, contexts):
        """``contexts @ theta``: monotone in the mean reward ``sigmoid(x theta)``.

        The argmax (what Thompson sampling plays) is that of the mean rewards.
        """
        return np.asarray(contexts, dtype=float) @ theta

    def spawn(self, eta, lam):
        """A logistic model of the same dimension and initial capacity, with no data."""
        return Logistic(self.dim, eta=eta, lam=lam, capacity=self.capacity,
                        prior_mean=self.prior_mean, prior_cov=self.prior_cov)

    # -- mini-batches (OPVI) --------------------------------------------------------------
    def minibatch_data(self, index, like_weight=1.0, prior_weight=1.0):
        """The kernels' data tuple for the potential on a subset of the history.

        ``U(theta) = like_weight * eta sum_{s in index} (log(1 + exp(x_s theta)) - y_s x_s
        theta) + prior_weight * 1/2 (theta - theta0)^T P0 (theta - theta0)`` with the
        model's prior (``P0 = eta lam I``, ``theta0 = 0`` by default): the model hook of
        :mod:`vits_ref.models` that OPVI's mini-batches use. The rows are copied; the
        prior enters as the general-prior term (so any weight, 0 included, is exact) and
        the tuple has the types of :meth:`kernel_data` (no recompilation).

        Parameters
        ----------
        index : array of int
            Rows of the history (``0 <= index < n_obs``).
        like_weight, prior_weight : float, default 1.0
            Weights ``>= 0`` of the likelihood and prior terms.
        """
        index = np.asarray(index)
        if index.ndim != 1 or not np.issubdtype(index.dtype, np.integer):
            raise TypeError(f"index must be a 1-D integer array, got {index.dtype} with "
                            f"shape {index.shape}")
        if index.size and (index.min() < 0 or index.max() >= self.n_obs):
            raise ValueError(f"index must be in [0, n_obs = {self.n_obs}), got values in "
                             f"[{index.min()}, {index.max()}]")
        lw, pw = minibatch_weights(like_weight, prior_weight)
        theta0 = np.zeros(self.dim) if self.prior_mean is None else self.prior_mean
        return (np.ascontiguousarray(self.X[index]), np.ascontiguousarray(self.y[index]),
                self.eta * lw, 0.0, True, pw * self.prior_precision,
                np.ascontiguousarray(theta0, dtype=float))
