"""The Welling-Teh two-parameter Gaussian mixture (the OPVI paper, section 5.1).

Welling & Teh (2011, section 5.1) and the OPVI paper (eq. 14)::

    (theta_1, theta_2) ~ N(0, diag(v_1, v_2)),  v = (10, 1)
    x_i ~ 1/2 N(theta_1, sigma_x^2) + 1/2 N(theta_1 + theta_2, sigma_x^2)

with data drawn at ``theta = (0, 1)``. The posterior is bimodal: ``(0, 1)`` and its mirror
``(1, -1)`` (swapping the components' roles) explain the data almost equally well.

``sigma_x``: the OPVI paper states ``sigma_x = 2`` (``sigma_x^2 = 4``, also docs/algorithms.md
section 5), which is the default here; Welling & Teh's own paper used ``sigma_x^2 = 2``
(``sigma_x = sqrt 2``), available as ``sigma_x="welling_teh"`` (or the float). With
``sigma_x = 2`` the two modes are less separated than in Welling & Teh's figure.

The kernels are in :mod:`vits_ref.kernels.welling_teh`; :func:`posterior_grid` is the
exact normalised posterior on a grid in plain NumPy (the experiments' ground truth).
"""

import math

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..kernels.welling_teh import POTENTIAL
from .base import Model

#: the OPVI paper's ``sigma_x`` (section 5.1: "sigma_x = 2")
SIGMA_X_SEED = 2.0
#: Welling & Teh (2011)'s ``sigma_x`` (their section 5.1: ``sigma_x^2 = 2``)
SIGMA_X_WELLING_TEH = math.sqrt(2.0)
_NO_SCRATCH = ()


def _sigma_x(sigma_x):
    if isinstance(sigma_x, str):
        key = val.choice(sigma_x, "sigma_x", ("seed", "welling_teh"))
        return SIGMA_X_SEED if key == "seed" else SIGMA_X_WELLING_TEH
    return val.positive_float(sigma_x, "sigma_x")


def _prior_var(prior_var):
    v = val.float_array(prior_var, "prior_var", ndim=1, shape=(2,))
    if np.any(v <= 0):
        raise ValueError(f"prior_var must be two positive variances, got {v.tolist()}")
    return float(v[0]), float(v[1])


def welling_teh_data(n=10000, theta=(0.0, 1.0), sigma_x=SIGMA_X_SEED, seed=None):
    """``n`` draws ``x_i ~ 1/2 N(theta_1, sigma_x^2) + 1/2 N(theta_1 + theta_2, sigma_x^2)``.

    Parameters
    ----------
    n : int, default 10000
        The OPVI paper uses "approximately 10,000" points, Welling & Teh 100.
    theta : (2,) array, default (0, 1)
    sigma_x : float or {"seed", "welling_teh"}, default 2.0
        2.0 is the OPVI paper's value, ``sqrt 2`` Welling & Teh's.
    seed : int, SeedSequence, Generator or None

    Returns
    -------
    x : (n,) ndarray

    Examples
    --------
    >>> x = welling_teh_data(1000, seed=0)
    >>> x.shape, bool(abs(x.mean() - 0.5) < 0.2)
    ((1000,), True)
    """
    n = val.positive_int(n, "n")
    theta = val.float_array(theta, "theta", ndim=1, shape=(2,))
    s = _sigma_x(sigma_x)
    rng = val.as_generator(seed)
    second = rng.random(n) < 0.5
    return theta[0] + theta[1] * second + s * rng.standard_normal(n)


def log_posterior_grid(x, grid, sigma_x=SIGMA_X_SEED, prior_var=(10.0, 1.0), chunk=256):
    """Unnormalised ``log p(x, theta)`` on the grid ``theta1s x theta2s`` (plain NumPy).

    Returns an array ``(len(theta1s), len(theta2s))``; see :func:`posterior_grid`.
    """
    x = val.float_array(x, "x", ndim=1)
    t1, t2 = _grid(grid)
    s = _sigma_x(sigma_x)
    v1, v2 = _prior_var(prior_var)
    T1, T2 = np.meshgrid(t1, t2, indexing="ij")
    out = -0.5 * (T1 ** 2 / v1 + T2 ** 2 / v2) - 0.5 * np.log(4 * np.pi ** 2 * v1 * v2)
    c = -math.log(2.0) - 0.5 * math.log(2 * math.pi * s * s)
    for i0 in range(0, x.shape[0], chunk):  # (chunk, g1, g2) at a time
        xc = x[i0:i0 + chunk, None, None]
        a = -0.5 * ((xc - T1) / s) ** 2
        b = -0.5 * ((xc - T1 - T2) / s) ** 2
        out = out + (np.logaddexp(a, b) + c).sum(axis=0)
    return out


def posterior_grid(x, grid, sigma_x=SIGMA_X_SEED, prior_var=(10.0, 1.0)):
    """The exact posterior density of the Welling-Teh model on a grid (plain NumPy).

    Parameters
    ----------
    x : (n,) array
        The observations.
    grid : pair of 1-D arrays ``(theta1s, theta2s)``
        Uniformly spaced, increasing axes (at least 2 points each).
    sigma_x, prior_var : as in :class:`WellingTeh`

    Returns
    -------
    P : (len(theta1s), len(theta2s)) ndarray
        ``P[i, j]`` the density at ``(theta1s[i], theta2s[j])``, normalised so that
        ``P.sum() * dtheta1 * dtheta2 = 1`` (a Riemann sum: the grid must cover the mass).

    Notes
    -----
    ``log p(x, theta)`` is summed observation by observation with ``np.logaddexp`` (no
    underflow at n = 10 000, where the likelihood itself is ``exp(-20 000)``), then
    normalised through its maximum.

    Examples
    --------
    >>> import numpy as np
    >>> x = welling_teh_data(100, seed=1)
    >>> g = (np.linspace(-3, 3, 61), np.linspace(-3, 3, 61))
    >>> P = posterior_grid(x, g)
    >>> round(float(P.sum() * 0.1 * 0.1), 12)
    1.0
    """
    t1, t2 = _grid(grid)
    lp = log_posterior_grid(x, (t1, t2), sigma_x=sigma_x, prior_var=prior_var)
    p = np.exp(lp - lp.max())
    return p / (p.sum() * (t1[1] - t1[0]) * (t2[1] - t2[0]))


def grid_moments(P, grid):
    """``(mean (2,), cov (2, 2))`` of a gridded density ``P`` (from :func:`posterior_grid`)."""
    t1, t2 = _grid(grid)
    w = P / P.sum()
    T1, T2 = np.meshgrid(t1, t2, indexing="ij")
    m = np.array([(w * T1).sum(), (w * T2).sum()])
    d1, d2 = T1 - m[0], T2 - m[1]
    c = np.array([[(w * d1 * d1).sum(), (w * d1 * d2).sum()],
                  [(w * d1 * d2).sum(), (w * d2 * d2).sum()]])
    return m, c


def _grid(grid):
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise TypeError("grid must be a pair (theta1s, theta2s) of 1-D arrays")
    axes = []
    for name, g in zip(("grid[0]", "grid[1]"), grid, strict=True):
        g = val.float_array(g, name, ndim=1)
        if g.shape[0] < 2:
            raise ValueError(f"{name} must have at least 2 points, got {g.shape[0]}")
        step = np.diff(g)
        if np.any(step <= 0) or not np.allclose(step, step[0], rtol=1e-8, atol=0):
            raise ValueError(f"{name} must be increasing and uniformly spaced")
        axes.append(g)
    return axes[0], axes[1]


class WellingTeh(Model):
    r"""Welling-Teh mixture: the posterior over ``theta = (theta_1, theta_2)`` given ``x``.

    Parameters
    ----------
    x : (n,) array or None
        Observations to start with (more come through :meth:`add`).
    sigma_x : float or {"seed", "welling_teh"}, default 2.0
        The components' standard deviation: 2.0 as the OPVI paper states, ``sqrt 2``
        (``"welling_teh"``) as Welling & Teh (2011) used.
    prior_var : (2,) array, default (10, 1)
        Prior variances of ``theta_1`` and ``theta_2``.
    eta : float, default 1.0
        Inverse temperature: multiplies the whole potential.
    lam : float, default 1.0
        Unused (the prior is ``prior_var``); kept for the engines' common signature.
    capacity : int, default 1024
        Initial size of the observation buffer (doubles when full).

    Notes
    -----
    The model has no features: in the engines' protocol ``add(features, rewards)`` the
    observations are the ``rewards`` and ``features`` has 0 columns (``input_dim = 0``);
    :meth:`add_x` takes ``x`` alone. The potential (normalising constants included) is

    .. math::

        U(\theta) = -\eta\Big[\sum_i \log\big(\tfrac12 N(x_i; \theta_1, \sigma_x^2)
            + \tfrac12 N(x_i; \theta_1 + \theta_2, \sigma_x^2)\big)
            + \log N(\theta_1; 0, v_1) + \log N(\theta_2; 0, v_2)\Big],

    evaluated with log-sum-exp; its gradient and exact Hessian are hand-written in
    :mod:`vits_ref.kernels.welling_teh`. :meth:`minibatch_data` gives the weighted
    mini-batch potential of the particle engines.

    Examples
    --------
    >>> import numpy as np
    >>> m = WellingTeh(np.array([0.0, 1.0]))
    >>> m.grad(np.zeros(2))  # x = 1 pulls both components: -(1/4), -(1/2)(1/4)
    array([-0.25 , -0.125])
    """

    name = "welling_teh"
    potential = POTENTIAL
    input_dim = 0
    dim = 2
    #: for vits_ref.load (vits_ref.inference.persist): the constructor's arguments, the
    #: observations (a buffer that doubles when full, holding at least n_obs of them)
    _persist_params = ("sigma_x", "prior_var", "eta", "lam", "capacity")
    _persist_state = ("n_obs", "_x")
    _persist_growing = ("_x",)
    _persist_bounds = (("n_obs", "_x", 0),)

    def __init__(self, x=None, sigma_x=SIGMA_X_SEED, prior_var=(10.0, 1.0), eta=1.0, lam=1.0,
                 capacity=1024):
        self.sigma_x = _sigma_x(sigma_x)
        self.prior_var = _prior_var(prior_var)
        self.eta = val.positive_float(eta, "eta")
        self.lam = val.positive_float(lam, "lam")
        self.capacity = val.positive_int(capacity, "capacity")
        self._x = np.empty(self.capacity)
        self.n_obs = 0
        if x is not None:
            self.add_x(x)

    @classmethod
    def from_dim(cls, dim, eta=1.0, lam=1.0):
        """Only ``dim = 0`` (no features) makes sense; the model has 2 parameters."""
        if dim != 0:
            raise ValueError(f"the Welling-Teh model has no features: dim must be 0 (its "
                             f"parameter count is 2), got {dim}")
        return cls(eta=eta, lam=lam)

    def __repr__(self):
        return (f"WellingTeh(n_obs={self.n_obs}, sigma_x={self.sigma_x!r}, "
                f"prior_var={self.prior_var!r}, eta={self.eta!r})")

    # -- data -----------------------------------------------------------------------------
    def add_x(self, x):
        """Append observations ``x`` (n,), finite."""
        x = val.float_array(x, "x", ndim=1)
        need = self.n_obs + x.shape[0]
        if need > self._x.shape[0]:
            cap = self._x.shape[0]
            while cap < need:
                cap *= 2
            buf = np.empty(cap)
            buf[:self.n_obs] = self._x[:self.n_obs]
            self._x = buf
        self._x[self.n_obs:need] = x
        self.n_obs = need

    def add(self, features, rewards):
        """The engines' protocol: ``features`` (n, 0), ``rewards`` (n,) the observations."""
        features, rewards = val.observations(features, rewards, 0)
        self.add_x(rewards)

    @property
    def x(self):
        """The observations so far (a view of the buffer)."""
        return self._x[:self.n_obs]

    # -- kernel interface ---------------------------------------------------------------
    def kernel_data(self, prior=True):
        """``(x, s2, v1, v2, w_l, w_p)`` on the whole history, ``w_l = eta``, ``w_p = eta``
        (``prior=False``: ``w_p = 0``, the likelihood only)."""
        return (self._x[:self.n_obs], self.sigma_x ** 2, self.prior_var[0], self.prior_var[1],
                self.eta, self.eta if prior else 0.0)

    def minibatch_data(self, index, like_weight=1.0, prior_weight=1.0):
        """Kernel data of ``U = -like_weight sum_{i in index} log p(x_i | theta) -
        prior_weight log p0(theta)`` (both weights times ``eta``).

        ``index``: integer indices into the observations so far (repeats allowed).
        """
        idx = _index(index, self.n_obs)
        lw = val.positive_float(like_weight, "like_weight", allow_zero=True)
        pw = val.positive_float(prior_weight, "prior_weight", allow_zero=True)
        return (self._x[idx], self.sigma_x ** 2, self.prior_var[0], self.prior_var[1],
                self.eta * lw, self.eta * pw)

    def kernel_scratch(self, n_rows=1):
        """The bodies need no scratch: an empty tuple."""
        return _NO_SCRATCH

    # -- potential ----------------------------------------------------------------------
    def value(self, theta):
        """``U(theta)`` with every normalising constant (``eta = 1``: ``-log p(x, theta)``)."""
        return float(cpu.value(POTENTIAL)(self.kernel_data(), self._theta(theta), _NO_SCRATCH))

    def grad(self, theta):
        """``grad U(theta)``, shape (2,)."""
        return self.grads_hessian(self._theta(theta)[None, :], False)[0][0]

    def hess(self, theta):
        """The exact Hessian of ``U`` at ``theta`` (2, 2)."""
        return self.grads_hessian(self._theta(theta)[None, :], True)[1]

    def grads_hessian(self, thetas, want_hessian=True):
        """``(G (M, 2), H)``: gradients at the rows of ``thetas``, mean Hessian or None."""
        thetas = val.float_array(thetas, "thetas", ndim=2, finite=False)
        if thetas.shape[1] != 2:
            raise ValueError(f"thetas must have shape (M, 2), got {thetas.shape}")
        G = np.empty_like(thetas)
        H = np.empty((2, 2))
        want = bool(want_hessian)
        cpu.grads_hessian(POTENTIAL)(self.kernel_data(), thetas, want, G, H, _NO_SCRATCH)
        return G, (H if want else None)

    def predict(self, theta, contexts):
        """``E[x | theta] = theta_1 + theta_2 / 2`` for each row of ``contexts`` (K, 0)."""
        theta = self._theta(theta)
        n = np.shape(contexts)[0]
        return np.full(n, theta[0] + 0.5 * theta[1])

    def posterior_grid(self, grid):
        """The exact posterior on ``grid`` given the observations so far
        (:func:`posterior_grid`; ``eta`` is ignored: the untempered posterior)."""
        return posterior_grid(self.x, grid, sigma_x=self.sigma_x, prior_var=self.prior_var)

    def init_particles(self, n, seed=None):
        """``n`` draws from the prior ``N(0, diag(v))``, shape (n, 2): the particle
        engines' start."""
        rng = val.as_generator(seed)
        return rng.standard_normal((val.positive_int(n, "n"), 2)) * np.sqrt(self.prior_var)

    def spawn(self, eta, lam):
        """A model with the same ``sigma_x`` and prior, no data."""
        return WellingTeh(sigma_x=self.sigma_x, prior_var=self.prior_var, eta=eta, lam=lam,
                          capacity=self.capacity)

    def _theta(self, theta):
        theta = val.float_array(theta, "theta", ndim=1, finite=False)
        if theta.shape != (2,):
            raise ValueError(f"theta must have shape (2,), got {theta.shape}")
        return theta


def _index(index, n_obs):
    """``index`` as an int64 array of valid row indices into ``n_obs`` observations."""
    idx = np.asarray(index)
    if idx.dtype == np.bool_ or not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"index must be an array of integer indices, got dtype {idx.dtype}")
    if idx.ndim != 1:
        raise ValueError(f"index must be 1-D, got shape {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n_obs):
        raise ValueError(f"index must lie in [0, n_obs) = [0, {n_obs}), got values in "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    return idx.astype(np.int64, copy=False)
