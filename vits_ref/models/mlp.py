"""The neural potential of the VITS paper's quadratic bandit (ALGORITHMS.md section 2).

A ReLU network ``x -> h1 -> h2 -> 1`` (20 -> 20 -> 20 -> 1 in the paper, 861 parameters)
with a Gaussian likelihood and a Gaussian prior, as a potential of its flat parameter
vector::

    U(theta) = eta/2 ( sum_s (g_theta(x_s) - r_s)^2 + lam |theta|^2 )

Gradient by hand-written back-propagation; "Hessian" = the Gauss-Newton matrix
``eta (J^T J + lam I)``. The kernels are in :mod:`vits_ref.kernels.mlp`.
"""

import numbers

import numpy as np

from .. import _validate as val
from ..kernels.mlp import (
    mlp_grads_hessian_cpu,
    mlp_jacobian_cpu,
    mlp_outputs_cpu,
    n_params,
)

#: Rows of the history processed per pass (the height of the scratch buffers).
CHUNK = 256

_BLOCKS = ("W1", "b1", "W2", "b2", "w3", "b3")


class MLP:
    """Two-hidden-layer ReLU network potential with flat parameters (the quadratic bandit).

    Network ``g_theta(x) = w3 . relu(W2 relu(W1 x + b1) + b2) + b3``, Gaussian likelihood
    with noise variance ``1/eta`` and prior ``N(0, I/(lam eta))`` on the flat parameter
    vector ``theta``.

    Parameters
    ----------
    input_dim : int
        Size ``p`` of an arm's feature vector.
    hidden : pair of int, default (20, 20)
        Widths ``(h1, h2)`` of the two ReLU layers.
    eta : float, default 1.0
        Inverse temperature (inverse noise variance).
    lam : float, default 1.0
        Ridge (prior precision in units of ``eta``).
    capacity : int, default 1024
        Initial number of observations the history buffers hold; they double when full
        (never per round), keeping dtype and rank, so compiled kernels never recompile.
    chunk : int, default 256
        Rows of the history processed per pass: the scratch (``chunk x dim`` for the
        Jacobian) does not grow with the history. Results depend on it only through the
        order of floating-point sums.

    Attributes
    ----------
    dim : int
        Number of parameters ``h1 p + h1 + h2 h1 + h2 + h2 + 1`` (861 for p = 20).
    n_obs : int
        Number of observations added.

    Notes
    -----
    **Flat layout.** ``theta`` concatenates, in this order, ``W1`` (h1, p) row-major,
    ``b1`` (h1), ``W2`` (h2, h1) row-major, ``b2`` (h2), ``w3`` (h2), ``b3`` (1);
    :meth:`unpack` and :meth:`pack` convert. ``relu'(0)`` is taken as 0.

    **Potential** (ALGORITHMS.md section 2, VITS paper section 5 and appendix H), residuals
    ``e_s = g_theta(x_s) - r_s``, ``J`` the (n, dim) Jacobian of the outputs::

        U = eta/2 (sum_s e_s^2 + lam |theta|^2),   grad U = eta (J^T e + lam theta)

    The gradient is computed by back-propagation without forming ``J``.

    **Hessian = Gauss-Newton.** :meth:`hess` and :meth:`grads_hessian` return the
    Gauss-Newton matrix ``eta (J^T J + lam I)``, the choice ALGORITHMS.md makes. It is
    symmetric positive definite (eigenvalues >= ``eta lam``) whatever ``theta``, so VITS's
    square-root recursion stays well posed. The exact Hessian adds the residual-weighted
    second-derivative terms ``eta sum_s e_s d^2 g(x_s)/dtheta^2`` (piecewise bilinear in
    the weights for a ReLU network), which can make it indefinite away from a good fit;
    they vanish where the network interpolates the data.

    **Cost** with n observations and d = dim: a gradient costs about
    ``2 n (2 p h1 + 3 h1 h2)`` flops (4 MFLOP at n = 1000, the paper's sizes); the
    Gauss-Newton matrix ``n d^2`` flops (BLAS ``dsyrk``: 0.74 GFLOP at n = 1000) plus
    forming ``J`` chunk by chunk. Nothing of ``J^T J`` carries over from one ``theta`` to
    another (each row depends on ``theta`` through the activations and ReLU masks), so
    nothing is cached; an engine that wants fewer Gauss-Newton matrices must evaluate them
    at fewer points (e.g. once per round at the mean instead of at each inner step's draw)
    and say so. The exact matrix over the full history is what this class computes.

    **Initialisation.** :meth:`init` gives He-scaled normal weights and zero biases; an
    engine may start its mean there instead of at a prior draw (a prior draw with
    ``lam eta`` around 1 puts O(1) weights everywhere, which for a deep ReLU network gives
    outputs of size ``~ sqrt(p) h``).

    The model keeps scratch buffers: one model must not be used from two threads at once
    (engines each own theirs, via :meth:`spawn`).

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.models import MLP
    >>> m = MLP(3, hidden=(4, 5), eta=2.0, lam=0.5)
    >>> m.dim
    47
    >>> theta = m.init(0)
    >>> rng = np.random.default_rng(1)
    >>> m.add(rng.standard_normal((10, 3)), rng.standard_normal(10))
    >>> G, H = m.grads_hessian(theta[None, :])
    >>> G.shape, H.shape
    ((1, 47), (47, 47))
    >>> bool(np.all(np.linalg.eigvalsh(H) >= 2.0 * 0.5 - 1e-12))
    True
    >>> m.predict(theta, np.zeros((2, 3)))  # zero biases: zero outputs at x = 0
    array([0., 0.])
    """

    name = "mlp"

    def __init__(self, input_dim, hidden=(20, 20), eta=1.0, lam=1.0, capacity=1024,
                 chunk=CHUNK):
        self.input_dim = val.positive_int(input_dim, "input_dim")
        self.hidden = _hidden(hidden)
        self.eta = val.positive_float(eta, "eta")
        self.lam = val.positive_float(lam, "lam")
        self.capacity = val.positive_int(capacity, "capacity")
        self.chunk = val.positive_int(chunk, "chunk")
        h1, h2 = self.hidden
        self.dim = n_params(self.input_dim, h1, h2)
        self.n_obs = 0
        self._X = np.empty((self.capacity, self.input_dim))
        self._r = np.empty(self.capacity)
        c, d = self.chunk, self.dim
        # A1, A2, out, D1, D2, gtmp, J: see kernels.mlp.mlp_potential
        self._scratch = (np.empty((c, h1)), np.empty((c, h2)), np.empty(c),
                         np.empty((c, h1)), np.empty((c, h2)), np.empty(d), np.empty((c, d)))
        offsets = np.cumsum([0, h1 * self.input_dim, h1, h2 * h1, h2, h2, 1])
        shapes = ((h1, self.input_dim), (h1,), (h2, h1), (h2,), (h2,), ())
        #: ``{block: (start, stop, shape)}`` of the flat layout
        self.layout = {name: (int(offsets[i]), int(offsets[i + 1]), shapes[i])
                       for i, name in enumerate(_BLOCKS)}

    def __repr__(self):
        return (f"MLP(input_dim={self.input_dim}, hidden={self.hidden}, eta={self.eta!r}, "
                f"lam={self.lam!r})")

    # -- data ---------------------------------------------------------------------------
    def add(self, features, rewards):
        """Append observations: ``features`` (n, input_dim), ``rewards`` (n,), finite.

        The history buffers double when full (amortised O(1) per row, no per-round
        reallocation).
        """
        features = val.float_array(features, "features", ndim=2)
        if features.shape[1] != self.input_dim:
            raise ValueError(f"features must have {self.input_dim} columns (the MLP's "
                             f"input_dim), got shape {features.shape}")
        rewards = val.float_array(rewards, "rewards", ndim=1)
        if rewards.shape[0] != features.shape[0]:
            raise ValueError(f"rewards has {rewards.shape[0]} entries but features has "
                             f"{features.shape[0]} rows")
        n = features.shape[0]
        need = self.n_obs + n
        if need > self._X.shape[0]:
            cap = self._X.shape[0]
            while cap < need:
                cap *= 2
            X = np.empty((cap, self.input_dim))
            r = np.empty(cap)
            X[:self.n_obs] = self._X[:self.n_obs]
            r[:self.n_obs] = self._r[:self.n_obs]
            self._X, self._r = X, r
        self._X[self.n_obs:need] = features
        self._r[self.n_obs:need] = rewards
        self.n_obs = need

    @property
    def features(self):
        """The observed features, (n_obs, input_dim) (a copy)."""
        return self._X[:self.n_obs].copy()

    @property
    def rewards(self):
        """The observed rewards, (n_obs,) (a copy)."""
        return self._r[:self.n_obs].copy()

    # -- potential ----------------------------------------------------------------------
    def value(self, theta):
        """``U(theta)``, including the constant ``eta/2 sum r^2``."""
        return self.value_grad(theta)[0]

    def grad(self, theta):
        """``grad U(theta) = eta (J^T e + lam theta)`` by back-propagation, shape (dim,)."""
        return self.value_grad(theta)[1]

    def value_grad(self, theta):
        """``(U(theta), grad U(theta))`` from one forward and one backward pass."""
        thetas = self._theta(theta)[None, :]
        G, _, values = self._run(thetas, False)
        return float(values[0]), G[0]

    def hess(self, theta):
        """The Gauss-Newton matrix ``eta (J^T J + lam I)`` at ``theta``, (dim, dim).

        Not the exact Hessian (see the class Notes): symmetric positive definite.
        """
        return self._run(self._theta(theta)[None, :], True)[1]

    def grads_hessian(self, thetas, want_hessian=True):
        """Gradients at the rows of ``thetas`` and their mean Gauss-Newton matrix.

        Parameters
        ----------
        thetas : (M, dim) array
        want_hessian : bool, default True

        Returns
        -------
        G : (M, dim) array
            ``grad U`` at each row.
        H : (dim, dim) array or None
            ``eta (mean_m J_m^T J_m + lam I)`` (Gauss-Newton, positive definite), or None
            when ``want_hessian`` is False (then no Jacobian is formed).

        Notes
        -----
        Non-finite parameters are not rejected: they give non-finite results, which the
        engines' divergence checks report.
        """
        thetas = val.float_array(thetas, "thetas", ndim=2, finite=False)
        if thetas.shape[1] != self.dim or thetas.shape[0] == 0:
            raise ValueError(f"thetas must have shape (M, {self.dim}) with M >= 1 (rows are "
                             f"parameter vectors of this MLP), got {thetas.shape}")
        G, H, _ = self._run(_writable(thetas), bool(want_hessian))
        return G, H

    def jacobian(self, theta, features=None):
        """``J`` (n, dim): the derivatives of the outputs at the rows of ``features``.

        ``features`` defaults to the history. Forms ``J`` explicitly (tests, teaching).
        """
        theta = self._theta(theta)
        X = self._X[:self.n_obs] if features is None else self._contexts(features, "features")
        J = np.empty((X.shape[0], self.dim))
        A1, A2, _, D1, D2, _, _ = self._scratch
        mlp_jacobian_cpu(theta, X, *self.hidden, A1, A2, np.empty(X.shape[0]), D1, D2, J)
        return J

    def predict(self, theta, contexts):
        """The network's outputs ``g_theta(x_a)`` for the rows of ``contexts``, shape (K,)."""
        theta = self._theta(theta)
        X = self._contexts(contexts, "contexts")
        out = np.empty(X.shape[0])
        A1, A2 = self._scratch[:2]
        mlp_outputs_cpu(theta, X, *self.hidden, A1, A2, out)
        return out

    def spawn(self, eta, lam):
        """An MLP of the same architecture with no data."""
        return MLP(self.input_dim, self.hidden, eta=eta, lam=lam, capacity=self.capacity,
                   chunk=self.chunk)

    # -- parameters ---------------------------------------------------------------------
    def init(self, rng=None):
        """A standard initialisation as a flat vector: He-normal weights, zero biases.

        ``W1 ~ N(0, 2/p)``, ``W2 ~ N(0, 2/h1)`` (He et al. 2015, for ReLU inputs),
        ``w3 ~ N(0, 1/h2)`` (linear output), biases 0. ``rng``: int, SeedSequence,
        Generator or None.
        """
        gen = val.as_generator(rng, "rng")
        h1, h2 = self.hidden
        p = self.input_dim
        return self.pack(W1=gen.standard_normal((h1, p)) * np.sqrt(2.0 / p),
                         b1=np.zeros(h1),
                         W2=gen.standard_normal((h2, h1)) * np.sqrt(2.0 / h1),
                         b2=np.zeros(h2),
                         w3=gen.standard_normal(h2) * np.sqrt(1.0 / h2),
                         b3=0.0)

    def unpack(self, theta):
        """``{"W1", "b1", "W2", "b2", "w3", "b3"}``: views into ``theta`` (``b3`` a float)."""
        theta = self._theta(theta)
        out = {}
        for name, (a, b, shape) in self.layout.items():
            out[name] = float(theta[a]) if shape == () else theta[a:b].reshape(shape)
        return out

    def pack(self, W1, b1, W2, b2, w3, b3):
        """The flat vector of the given blocks (shapes as in :attr:`layout`)."""
        theta = np.empty(self.dim)
        for name, value in zip(_BLOCKS, (W1, b1, W2, b2, w3, b3), strict=True):
            a, b, shape = self.layout[name]
            got = np.shape(value)
            arr = val.float_array(value, name, finite=False)
            if got != shape and not (shape == () and got == (1,)):
                raise ValueError(f"{name} must have shape {shape}, got {got}")
            theta[a:b] = arr.ravel()
        return theta

    # -- helpers ------------------------------------------------------------------------
    def _theta(self, theta):
        theta = val.float_array(theta, "theta", finite=False)
        if theta.shape != (self.dim,):
            raise ValueError(f"theta must be a flat vector of length dim = {self.dim} (this "
                             f"MLP's number of parameters), got shape {theta.shape}")
        return _writable(theta)

    def _contexts(self, x, name):
        x = val.float_array(x, name, ndim=2)
        if x.shape[1] != self.input_dim:
            raise ValueError(f"{name} must have {self.input_dim} columns (the MLP's "
                             f"input_dim), got shape {x.shape}")
        return _writable(x)

    def _run(self, thetas, want_hessian):
        M = thetas.shape[0]
        G = np.empty((M, self.dim))
        H = np.empty((self.dim, self.dim)) if want_hessian else np.empty((1, 1))
        values = np.empty(M)
        n = self.n_obs
        mlp_grads_hessian_cpu(thetas, self._X[:n], self._r[:n], self.eta, self.lam,
                              *self.hidden, want_hessian, G, H, values, *self._scratch)
        return G, (H if want_hessian else None), values


def _hidden(hidden):
    if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__len__"):
        raise TypeError(f"hidden must be a pair of layer widths such as (20, 20), "
                        f"got {hidden!r}")
    if len(hidden) != 2:
        raise ValueError(f"hidden must be a pair (h1, h2): this MLP has exactly two ReLU "
                         f"layers, got {len(hidden)} widths {tuple(hidden)!r}")
    for h in hidden:
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, numbers.Integral):
            raise TypeError(f"hidden widths must be integers, got {hidden!r}")
    return (val.positive_int(hidden[0], "hidden[0]"), val.positive_int(hidden[1], "hidden[1]"))


def _writable(a):
    # a read-only array would compile a second specialisation of every driver
    return a if a.flags.writeable else a.copy()
