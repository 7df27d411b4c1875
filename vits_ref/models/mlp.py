"""The ReLU-network potential: the VITS paper's quadratic bandit (docs/algorithms.md section 2).

A ReLU network ``x -> h_1 -> ... -> h_L -> 1`` of any depth ``L >= 1`` (20 -> 20 -> 20 -> 1
in the VITS paper, 861 parameters; 50 hidden units in the particle-VI paper's BNN) with a
Gaussian likelihood and a Gaussian prior, as a potential of its flat parameter vector::

    U(theta) = eta/2 ( sum_s (g_theta(x_s) - r_s)^2 + lam |theta|^2 )

(or a general prior ``N(theta0, Sigma0)``). Gradient by hand-written back-propagation;
"Hessian" = the Gauss-Newton matrix ``eta (J^T J + lam I)``. The kernels are in
:mod:`vits_ref.kernels.mlp`; the flat layout is defined there once
(:func:`vits_ref.kernels.mlp.layout`).
"""

import numbers

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..kernels.mlp import (
    POTENTIAL,
    layout,
    n_params,
)
from .base import Model
from .linear import general_prior

#: Rows of the history processed per pass (the height of the scratch buffers).
CHUNK = 256

#: The VITS paper's architecture (quadratic bandit): two ReLU layers of 20 units.
DEFAULT_HIDDEN = (20, 20)


class MLP(Model):
    """ReLU network potential with flat parameters (the quadratic bandit's, any depth).

    Network ``g_theta(x) = w_out . relu(W_L ... relu(W_1 x + b_1) ... + b_L) + b_out``,
    Gaussian likelihood with noise variance ``1/eta`` and prior ``N(0, I/(lam eta))`` on the
    flat parameter vector ``theta`` (or a general Gaussian prior).

    Parameters
    ----------
    input_dim : int
        Size ``p`` of an arm's feature vector.
    hidden : tuple of int, default (20, 20)
        Widths ``(h_1, ..., h_L)`` of the ReLU layers, ``L >= 1``: ``(20, 20)`` is the VITS
        paper's quadratic bandit, ``(50,)`` the particle-VI paper's BNN.
    eta : float, default 1.0
        Inverse temperature (inverse noise variance).
    lam : float, default 1.0
        Ridge (prior precision in units of ``eta``); unused with a general prior.
    prior_mean, prior_cov : array or None
        A general Gaussian prior ``N(theta0, Sigma0)`` instead (``prior_cov`` a (dim, dim)
        matrix or, the common case, the diagonal as a (dim,) vector): the prior term of
        ``U`` becomes ``1/2 (theta - theta0)^T inv(Sigma0) (theta - theta0)``, not tempered
        by ``eta``, as in :class:`~vits_ref.models.Logistic`.
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
        Number of parameters ``sum_l (h_l h_{l-1} + h_l) + h_L + 1`` with ``h_0 = p``
        (861 for p = 20 and the default hidden widths).
    n_obs : int
        Number of observations added.
    layout : dict
        ``{block: (start, stop, shape)}`` of the flat vector (see Notes).

    Notes
    -----
    **Flat layout.** ``theta`` concatenates, in this order, ``W1`` (h_1, p) row-major,
    ``b1`` (h_1), ``W2`` (h_2, h_1) row-major, ``b2``, ..., ``WL``, ``bL``, then the output
    weights ``w{L+1}`` (h_L) and bias ``b{L+1}`` (one entry): for two layers ``W1, b1, W2,
    b2, w3, b3``. :meth:`unpack` and :meth:`pack` convert. ``relu'(0)`` is taken as 0.

    **Potential** (docs/algorithms.md section 2, VITS paper section 5 and appendix H), residuals
    ``e_s = g_theta(x_s) - r_s``, ``J`` the (n, dim) Jacobian of the outputs::

        U = eta/2 (sum_s e_s^2 + lam |theta|^2),   grad U = eta (J^T e + lam theta)

    The gradient is computed by back-propagation without forming ``J``. With a general
    prior ``N(theta0, Sigma0)``, ``P0 = inv(Sigma0)``::

        U = eta/2 sum_s e_s^2 + 1/2 (theta - theta0)^T P0 (theta - theta0),
        grad U = eta J^T e + P0 (theta - theta0),   Gauss-Newton eta J^T J + P0.

    **Hessian = Gauss-Newton.** :meth:`hess` and :meth:`grads_hessian` return the
    Gauss-Newton matrix ``eta (J^T J + lam I)``, the choice docs/algorithms.md makes. It is
    symmetric positive definite (eigenvalues >= ``eta lam``) whatever ``theta``, so VITS's
    square-root recursion stays well posed. The exact Hessian adds the residual-weighted
    second-derivative terms ``eta sum_s e_s d^2 g(x_s)/dtheta^2`` (piecewise polynomial in
    the weights for a ReLU network), which can make it indefinite away from a good fit;
    they vanish where the network interpolates the data.

    **Cost** with n observations and d = dim: a gradient costs about
    ``2 n (2 p h_1 + 3 sum_l h_{l-1} h_l)`` flops (4 MFLOP at n = 1000, the paper's sizes);
    the Gauss-Newton matrix ``n d^2`` flops (BLAS ``dsyrk``: 0.74 GFLOP at n = 1000) plus
    forming ``J`` chunk by chunk. Nothing of ``J^T J`` carries over from one ``theta`` to
    another (each row depends on ``theta`` through the activations and ReLU masks), so
    nothing is cached; an engine that wants fewer Gauss-Newton matrices must evaluate them
    at fewer points (e.g. once per round at the mean instead of at each inner step's draw)
    and say so. The exact matrix over the full history is what this class computes.

    **Initialisation.** :meth:`init` gives He-scaled normal weights and zero biases; an
    engine may start its mean there instead of at a prior draw (a prior draw with
    ``lam eta`` around 1 puts O(1) weights everywhere, which for a deep ReLU network gives
    outputs of size ``~ sqrt(p) h``).

    **Kernels.** :meth:`kernel_data` and :meth:`kernel_scratch` give the tuples the kernel
    bodies of :mod:`vits_ref.kernels.mlp` take (``mlp_grads_hessian``, ``mlp_value``,
    ``mlp_predict``), so compiled steps can close over this potential.

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
    >>> MLP(20, hidden=(50,)).dim, MLP(3, hidden=(4, 4, 4)).dim
    (1101, 61)
    """

    name = "mlp"
    #: for vits_ref.load (vits_ref.inference.persist): the constructor's arguments, the
    #: history (buffers that double when full, holding at least n_obs rows)
    _persist_params = ("input_dim", "hidden", "eta", "lam", "prior_mean", "prior_cov",
                       "capacity", "chunk")
    _persist_state = ("n_obs", "_X", "_r")
    _persist_growing = ("_X", "_r")
    _persist_bounds = (("n_obs", "_X", 0), ("n_obs", "_r", 0))
    #: the kernel bodies of this potential (:mod:`vits_ref.kernels.mlp`)
    potential = POTENTIAL

    def __init__(self, input_dim, hidden=DEFAULT_HIDDEN, eta=1.0, lam=1.0, prior_mean=None,
                 prior_cov=None, capacity=1024, chunk=CHUNK):
        self.input_dim = val.positive_int(input_dim, "input_dim")
        self.hidden = _hidden(hidden)
        self.eta, self.lam = val.eta_lam(eta, lam)
        self.capacity = val.positive_int(capacity, "capacity")
        self.chunk = val.positive_int(chunk, "chunk")
        self.dim = n_params(self.input_dim, self.hidden)
        #: ``{block: (start, stop, shape)}`` of the flat layout
        self.layout = layout(self.input_dim, self.hidden)
        self.prior_mean, self.prior_cov = general_prior(self.dim, prior_mean, prior_cov)
        self._P0_none, self._theta0_none = np.zeros((1, 1)), np.zeros(1)  # placeholders
        if self.prior_cov is None:
            self._P0, self._theta0 = self._P0_none, self._theta0_none  # unused by the kernels
        else:
            P0 = np.linalg.inv(self.prior_cov)
            self._P0, self._theta0 = 0.5 * (P0 + P0.T), self.prior_mean.copy()
        self._widths = np.array(self.hidden, dtype=np.int64)
        self.n_obs = 0
        self._X = np.empty((self.capacity, self.input_dim))
        self._r = np.empty(self.capacity)
        c, d = self.chunk, self.dim
        # A, D, out, gtmp, J, pbuf: see kernels.mlp (module docstring)
        self._scratch = (np.empty(c * sum(self.hidden)), np.empty(c * sum(self.hidden)),
                         np.empty(c), np.empty(d), np.empty((c, d)), np.empty(d))

    @staticmethod
    def _persist_dim(params):
        """The parameter count of the hyperparameters ``params`` (for vits_ref.load's
        size policy, before anything is built); 0 where they are invalid."""
        p, hidden = params.get("input_dim"), params.get("hidden", DEFAULT_HIDDEN)
        hidden = hidden if isinstance(hidden, tuple) else (hidden,)
        if not all(isinstance(x, int) and x > 0 for x in (p, *hidden)):
            return 0
        return n_params(p, hidden)

    @classmethod
    def _persist_cost(cls, params):
        """The float64 entries the constructor allocates (vits_ref.load's size policy): the
        prior's precision (dim, dim), the scratch (chunk, dim), the history."""
        d = cls._persist_dim(params)
        hidden = params.get("hidden", DEFAULT_HIDDEN)
        width = sum(hidden) if isinstance(hidden, tuple) else 0
        c, cap = params.get("chunk", CHUNK), params.get("capacity", 1024)
        c, cap = (x if isinstance(x, int) else 0 for x in (c, cap))
        p = params.get("input_dim") if isinstance(params.get("input_dim"), int) else 0
        return d * d + (c + 4) * d + 2 * c * width + cap * (p + 1)

    def __repr__(self):
        prior = "" if self.prior_cov is None else ", prior=general"
        return (f"MLP(input_dim={self.input_dim}, hidden={self.hidden}, eta={self.eta!r}, "
                f"lam={self.lam!r}{prior})")

    @property
    def prior_precision(self):
        """The prior's precision ``P0`` (dim, dim): ``eta lam I``, or ``inv(prior_cov)``."""
        if self.prior_cov is None:
            return self.eta * self.lam * np.eye(self.dim)
        return self._P0.copy()

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

    def _state(self):
        """What :meth:`add` changes, without copying the history (rows beyond ``n_obs`` are
        ignored; the bindings cover a reallocation): the engines' transactional update."""
        return self.n_obs, self._X, self._r

    def _restore(self, state):
        self.n_obs, self._X, self._r = state

    @property
    def features(self):
        """The observed features, (n_obs, input_dim) (a copy)."""
        return self._X[:self.n_obs].copy()

    @property
    def rewards(self):
        """The observed rewards, (n_obs,) (a copy)."""
        return self._r[:self.n_obs].copy()

    # -- kernel interface ---------------------------------------------------------------
    def kernel_data(self, prior=True):
        """``(X, r, eta, lam, widths, general, P0, theta0)``: what the kernel bodies read.

        ``X`` (n_obs, input_dim) and ``r`` (n_obs,) are views of the history buffers (valid
        until the next :meth:`add`); ``widths`` (L,) int64 the hidden widths; ``general``
        (bool) whether the prior is ``N(theta0, inv(P0))`` with ``P0`` (dim, dim) and
        ``theta0`` (dim,) (else (1, 1) and (1,) placeholders, and the prior is
        ``N(0, I/(eta lam))``).

        ``prior=False``: the likelihood's part only (``lam = 0``, no prior term), which the
        Laplace engine completes with the prior as an explicit Gaussian term.
        """
        n = self.n_obs
        if not prior:
            return (self._X[:n], self._r[:n], self.eta, 0.0, self._widths, False,
                    self._P0_none, self._theta0_none)
        return (self._X[:n], self._r[:n], self.eta, self.lam, self._widths,
                self.prior_cov is not None, self._P0, self._theta0)

    def kernel_scratch(self, n_rows=1):
        """``(A, D, out, gtmp, J, pbuf)``: the preallocated buffers the kernel bodies use.

        ``A``, ``D`` (chunk sum(hidden),) the per-layer activations and sensitivities of a
        chunk; ``out`` (chunk,); ``gtmp`` (dim,); ``J`` (chunk, dim); ``pbuf`` (dim,). The
        bodies treat parameter vectors one at a time, so ``n_rows`` (the number of rows of
        ``thetas`` a caller will pass) does not change them.
        """
        return self._scratch

    # -- potential ----------------------------------------------------------------------
    def value(self, theta):
        """``U(theta)``, including the constant ``eta/2 sum r^2``."""
        theta = self._theta(theta)
        out = float(cpu.value(POTENTIAL)(self.kernel_data(), theta, self.kernel_scratch()))
        return _finite_or_raise(out, theta, "U(theta)")

    def grad(self, theta):
        """``grad U(theta) = eta (J^T e + lam theta)`` by back-propagation, shape (dim,)."""
        return self._run(self._theta(theta)[None, :], False)[0][0]

    def value_grad(self, theta):
        """``(U(theta), grad U(theta))``."""
        theta = self._theta(theta)
        return self.value(theta), self._run(theta[None, :], False)[0][0]

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
            ``eta (mean_m J_m^T J_m + lam I)`` (Gauss-Newton, positive definite; ``eta
            mean_m J_m^T J_m + P0`` with a general prior), or None when ``want_hessian`` is
            False (then no Jacobian is formed).

        Notes
        -----
        Non-finite parameters are not rejected: they give non-finite results, which the
        engines' divergence checks report. Finite parameters whose results overflow (e.g.
        weights of 1e154) raise a ValueError.
        """
        thetas = val.float_array(thetas, "thetas", ndim=2, finite=False)
        if thetas.shape[1] != self.dim or thetas.shape[0] == 0:
            raise ValueError(f"thetas must have shape (M, {self.dim}) with M >= 1 (rows are "
                             f"parameter vectors of this MLP), got {thetas.shape}")
        return self._run(_writable(thetas), bool(want_hessian))

    def jacobian(self, theta, features=None):
        """``J`` (n, dim): the derivatives of the outputs at the rows of ``features``.

        ``features`` defaults to the history. Forms ``J`` explicitly (tests, teaching).
        """
        theta = self._theta(theta)
        X = self._X[:self.n_obs] if features is None else self._contexts(features, "features")
        J = np.empty((X.shape[0], self.dim))
        cpu.mlp_jacobian_rows(self.kernel_data(), theta, X, np.empty(X.shape[0]), J,
                         self.kernel_scratch())
        return J

    def predict(self, theta, contexts):
        """The network's outputs ``g_theta(x_a)`` for the rows of ``contexts``, shape (K,)."""
        theta = self._theta(theta)
        X = self._contexts(contexts, "contexts")
        out = np.empty(X.shape[0])
        cpu.predict(POTENTIAL)(self.kernel_data(), theta, X, out, self.kernel_scratch())
        return _finite_or_raise(out, theta, "the outputs")

    def spawn(self, eta, lam):
        """An MLP of the same architecture and prior with no data."""
        return MLP(self.input_dim, self.hidden, eta=eta, lam=lam, prior_mean=self.prior_mean,
                   prior_cov=self.prior_cov, capacity=self.capacity, chunk=self.chunk)

    # -- parameters ---------------------------------------------------------------------
    def init(self, rng=None):
        """A standard initialisation as a flat vector: He-normal weights, zero biases.

        ``W_l ~ N(0, 2/fan_in)`` for every hidden layer (He et al. 2015, for ReLU inputs;
        ``fan_in = p`` for the first), the output weights ``~ N(0, 1/h_L)`` (linear output),
        biases 0; drawn in the order ``W1, W2, ..., w_out``. ``rng``: int, SeedSequence,
        Generator or None.
        """
        gen = val.as_generator(rng, "rng")
        blocks = {}
        for name, (_, _, shape) in self.layout.items():
            if name[0] == "W":
                blocks[name] = gen.standard_normal(shape) * np.sqrt(2.0 / shape[1])
            elif name[0] == "w":
                blocks[name] = gen.standard_normal(shape) * np.sqrt(1.0 / shape[0])
            else:
                blocks[name] = np.zeros(shape) if shape else 0.0
        return self.pack(**blocks)

    def unpack(self, theta):
        """``{"W1", "b1", ..., "w{L+1}", "b{L+1}"}``: views into ``theta`` (the last a float)."""
        theta = self._theta(theta)
        out = {}
        for name, (a, b, shape) in self.layout.items():
            out[name] = float(theta[a]) if shape == () else theta[a:b].reshape(shape)
        return out

    def pack(self, *args, **blocks):
        """The flat vector of the given blocks (by position or name, as in :attr:`layout`)."""
        names = tuple(self.layout)
        if len(args) > len(names):
            raise TypeError(f"pack takes at most {len(names)} blocks {names}, got {len(args)}")
        for name, value in zip(names, args, strict=False):
            if name in blocks:
                raise TypeError(f"pack got block {name!r} both by position and by name")
            blocks[name] = value
        missing = [n for n in names if n not in blocks]
        unknown = [n for n in blocks if n not in self.layout]
        if missing or unknown:
            raise TypeError(f"pack needs exactly the blocks {names} of this MLP; missing "
                            f"{missing}, unknown {unknown}")
        theta = np.empty(self.dim)
        for name in names:
            a, b, shape = self.layout[name]
            value = blocks[name]
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
        G = np.empty((thetas.shape[0], self.dim))
        H = np.empty((self.dim, self.dim)) if want_hessian else np.empty((1, 1))
        cpu.grads_hessian(POTENTIAL)(self.kernel_data(), thetas, want_hessian, G, H,
                              self.kernel_scratch())
        _finite_or_raise(G, thetas, "the gradient")
        if want_hessian:
            _finite_or_raise(H, thetas, "the Gauss-Newton matrix")
        return G, (H if want_hessian else None)


def _finite_or_raise(out, theta, what):
    """``out``; a ValueError if it is not finite although ``theta`` is (an overflow in
    the network: the ReLU layers multiply the weights' scales). Non-finite parameters are
    passed through (the engines' divergence checks report them)."""
    if not np.all(np.isfinite(out)) and np.all(np.isfinite(theta)):
        raise ValueError(f"{what} overflowed at parameters of magnitude up to "
                         f"{float(np.abs(theta).max()):.3g}: the network's output (a product "
                         f"of the layers' weights) is not representable; use parameters of "
                         f"moderate size")
    return out


def _hidden(hidden):
    """``hidden`` as a non-empty tuple of positive ints, or a TypeError/ValueError."""
    if isinstance(hidden, np.ndarray) and hidden.ndim == 1:
        hidden = hidden.tolist()
    if not isinstance(hidden, (tuple, list)):
        raise TypeError(f"hidden must be a tuple of layer widths such as (20, 20) or (50,), "
                        f"got {hidden!r}")
    if len(hidden) == 0:
        raise ValueError("hidden must have at least one layer width, e.g. (20, 20) or (50,); "
                         "got ()")
    for h in hidden:
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, numbers.Integral):
            raise TypeError(f"hidden widths must be integers, got {tuple(hidden)!r}")
        if h < 1:
            raise ValueError(f"hidden widths must be >= 1, got {tuple(hidden)!r}")
    return tuple(int(h) for h in hidden)


def _writable(a):
    # a read-only array would compile a second specialisation of every driver
    return a if a.flags.writeable else a.copy()
