"""Bayesian neural network regression (the OPVI paper, section 5.2; Liu & Wang 2016, section 5).

One hidden layer of 50 ReLU units, Gaussian noise with precision ``gamma``, Gaussian
weights with precision ``lambda``, ``gamma, lambda ~ Gamma(1, rate 0.1)``, the precisions
carried in log space: the model of the SVGD paper's UCI experiments (its code,
``bayesian_nn.py``, uses ReLU and 50 units), which the OPVI paper reuses on Kin8nm with 20
particles. The potential, its gradient and the parameter layout are documented in
:mod:`vits_ref.kernels.bnn`.

Units: the model sees whatever ``(X, y)`` it is given; the experiments standardise inputs
and targets with the training split's statistics (:mod:`vits_ref.data.uci`), as the SVGD
code does, and :func:`regression_metrics` reports RMSE and test log-likelihood in the
*original* units of ``y`` (outputs de-standardised), as the SVGD paper's tables do.
"""

import numbers

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..kernels.bnn import POTENTIAL
from ..kernels.mlp import layout as mlp_layout
from ._history import NetworkModel

CHUNK = 256


class BNNRegression(NetworkModel):
    r"""The SVGD paper's BNN regression potential on a growing history.

    Parameters
    ----------
    input_dim : int
        ``p``, the number of inputs.
    hidden : int, default 50
        Hidden ReLU units.
    a0, b0 : float, default 1.0, 0.1
        ``Gamma(a0, rate b0)`` prior of both precisions (the SVGD paper's and the OPVI paper's
        ``Gamma(1, 0.1)``).
    eta : float, default 1.0
        Inverse temperature: multiplies the whole potential.
    lam : float, default 1.0
        Unused (the weight precision is a parameter); kept for the engines' signature.
    capacity : int, default 1024
        Initial history size (doubles when full).
    chunk : int, default 256
        Rows per pass of the bodies (the scratch's height).

    Notes
    -----
    Parameters ``theta = (W_1 (h, p) row-major, b_1 (h), w_2 (h), b_2, log gamma,
    log lambda)``, ``dim = h (p + 2) + 3``; :meth:`unpack` names the blocks. With
    ``f(x) = w_2 . relu(W_1 x + b_1) + b_2`` and ``D = dim - 2`` network weights ``w``:

    .. math::

        U(\theta) = -\sum_s \log N(y_s; f(x_s), \gamma^{-1})
            - \log N(w; 0, \lambda^{-1} I_D)
            - \sum_{t \in \{\gamma, \lambda\}} [\log \mathrm{Gamma}(t; a_0, b_0) + \log t],

    the last ``log t`` the Jacobian of ``t -> log t``. :meth:`minibatch_data` weights the
    data and prior terms for the particle engines (``like_weight = N/B`` is the SVGD code's
    ``log_lik_data * N / B``). No Hessian (:meth:`hess` raises).

    Examples
    --------
    >>> import numpy as np
    >>> m = BNNRegression(3, hidden=4)
    >>> m.dim, list(m.layout)
    (23, ['W1', 'b1', 'w2', 'b2', 'log_gamma', 'log_lambda'])
    >>> m.add(np.ones((2, 3)), np.array([0.5, -0.5]))
    >>> # d/dlog gamma = gamma S/2 - n/2 + b0 gamma - a0 = 0.25 - 1 - 0.9 at theta = 0;
    >>> # d/dlog lambda = lambda |w|^2/2 - D/2 + b0 lambda - a0 = -10.5 - 0.9
    >>> m.grad(np.zeros(m.dim))[-2:]
    array([ -1.65, -11.4 ])
    """

    name = "bnn"
    potential = POTENTIAL
    _what = "BNN regression"
    _shape_args = ("input_dim", "hidden", "a0", "b0")
    #: for vits_ref.load: the constructor's arguments (the history is History's state)
    _persist_params = ("input_dim", "hidden", "a0", "b0", "eta", "lam", "capacity", "chunk")

    def __init__(self, input_dim, hidden=50, a0=1.0, b0=0.1, eta=1.0, lam=1.0, capacity=1024,
                 chunk=CHUNK):
        self.input_dim = val.positive_int(input_dim, "input_dim")
        self.hidden = val.positive_int(hidden, "hidden")
        self.a0 = val.positive_float(a0, "a0")
        self.b0 = val.positive_float(b0, "b0")
        p, h = self.input_dim, self.hidden
        self.n_network = h * (p + 2) + 1
        self.dim = self.n_network + 2
        lay = mlp_layout(p, (h,))
        #: ``{block: (start, stop, shape)}`` of the flat vector
        self.layout = {"W1": lay["W1"], "b1": lay["b1"], "w2": lay["w2"], "b2": lay["b2"],
                       "log_gamma": (self.dim - 2, self.dim - 1, ()),
                       "log_lambda": (self.dim - 1, self.dim, ())}
        self._widths = np.array([h], dtype=np.int64)
        self._init_network(eta, lam, capacity, chunk)

    # -- data -----------------------------------------------------------------------------
    def add(self, features, rewards):
        """Append rows ``features`` (n, input_dim) and targets ``rewards`` (n,), finite."""
        self._append(*val.observations(features, rewards, self.input_dim))

    # -- kernel interface (the rest in NetworkModel) --------------------------------------
    def _shape_data(self):
        """``data = (X, y, widths, a0, b0, w_l, w_p)``: the part between ``y`` and the
        weights."""
        return (self._widths, self.a0, self.b0)

    def _scratch_widths(self):
        """``(A, D, out, gtmp)``: ``(R, c h)``, ``(R, c h)``, ``(R, c)``, ``(R, dim)``."""
        c, h = self.chunk, self.hidden
        return (c * h, c * h, c, self.dim)

    # -- potential ----------------------------------------------------------------------
    def predict(self, theta, contexts):
        """The network's outputs ``f(x)`` at the rows of ``contexts`` (units of ``y``)."""
        theta = self._theta(theta)
        X = val.float_array(contexts, "contexts", ndim=2)
        if X.shape[1] != self.input_dim:
            raise ValueError(f"contexts must have {self.input_dim} columns, got {X.shape}")
        out = np.empty(X.shape[0])
        cpu.predict(POTENTIAL)(self.kernel_data(), theta, X, out, self.kernel_scratch())
        return out

    def predict_particles(self, thetas, X):
        """``F[m, s] = f_{theta_m}(X[s])`` for the rows of ``thetas`` (M, dim)."""
        thetas = self._thetas(thetas)
        return np.stack([self.predict(t, X) for t in thetas])

    # -- parameters ---------------------------------------------------------------------
    def unpack(self, theta):
        """``{"W1", "b1", "w2", "b2", "log_gamma", "log_lambda"}`` (views; scalars float)."""
        theta = self._theta(theta)
        return {k: float(theta[a]) if s == () else theta[a:b].reshape(s)
                for k, (a, b, s) in self.layout.items()}

    def init_particles(self, n, seed=None, X=None, y=None):
        """``n`` starting particles as the SVGD reference code draws them.

        ``W_1 ~ N(0, 1/(p + 1))``, ``w_2 ~ N(0, 1/(h + 1))`` (standard deviations
        ``1/sqrt(p + 1)`` and ``1/sqrt(h + 1)``), biases 0, ``lambda ~ Gamma(a0, rate b0)``;
        ``log gamma`` from the particle's own residuals,
        ``-log mean((f(x) - y)^2)`` on up to 1000 rows of ``(X, y)`` drawn at random, when
        data are given (as the reference code does), else ``gamma ~ Gamma(a0, rate b0)``.
        The reference code draws both with ``np.random.gamma(a0, b0)``, which reads ``b0``
        as a *scale* (mean 0.1 instead of the prior's 10); here the prior's rate is used.
        """
        n = val.positive_int(n, "n")
        rng = val.as_generator(seed)
        p, h = self.input_dim, self.hidden
        out = np.zeros((n, self.dim))
        if X is not None:
            X = val.float_array(X, "X", ndim=2)
            y = val.float_array(y, "y", ndim=1, shape=(X.shape[0],))
            if X.shape[1] != p:
                raise ValueError(f"X must have {p} columns, got {X.shape}")
        for i in range(n):
            t = out[i]
            a, b, _ = self.layout["W1"]
            t[a:b] = rng.standard_normal(b - a) / np.sqrt(p + 1)
            a, b, _ = self.layout["w2"]
            t[a:b] = rng.standard_normal(b - a) / np.sqrt(h + 1)
            t[-1] = np.log(rng.gamma(self.a0, 1.0 / self.b0))
            if X is not None and X.shape[0] > 0:
                rows = rng.choice(X.shape[0], size=min(1000, X.shape[0]), replace=False)
                mse = np.mean((self.predict(t, X[rows]) - y[rows]) ** 2)
                t[-2] = -np.log(max(mse, 1e-300))
            else:
                t[-2] = np.log(rng.gamma(self.a0, 1.0 / self.b0))
        return out


def regression_metrics(model, thetas, X, y, y_mean=0.0, y_std=1.0, convention="exact"):
    """Test RMSE and log-likelihood of a particle ensemble (the SVGD paper's definitions).

    Parameters
    ----------
    model : BNNRegression
    thetas : (M, dim) array
        The particles.
    X : (n, input_dim) array
        Test inputs, standardised as the training inputs were.
    y : (n,) array
        Test targets in the *original* units.
    y_mean, y_std : float
        The training targets' standardisation (``y_std = 1``, ``y_mean = 0``: none).
    convention : {"exact", "svgd_code"}, default "exact"
        How the noise precision enters the predictive (see Notes).

    Returns
    -------
    rmse, ll : float
        ``rmse = sqrt(mean_s (y_s - yhat_s)^2)``, ``yhat_s = y_mean + y_std mean_m f_m(x_s)``
        (the ensemble mean, de-standardised), and the mean over test points of the log of
        the ensemble's predictive density.

    Notes
    -----
    The predictive is the mixture over particles ``1/M sum_m N(y; mu_m(x), s_m^2)`` with
    ``mu_m = y_mean + y_std f_m(x)``; its log is taken with log-sum-exp. ``"exact"``: the
    particles' noise variance in original units, ``s_m^2 = y_std^2 / gamma_m`` (the
    density of the de-standardised model). ``"svgd_code"``: ``s_m^2 = 1/gamma_m``, what the
    SVGD reference code's ``evaluation`` computes (it applies the standardised-units
    precision to original-units residuals; the two agree when ``y_std = 1``).
    """
    conv = val.choice(convention, "convention", ("exact", "svgd_code"))
    if not isinstance(model, BNNRegression):
        raise TypeError(f"model must be a BNNRegression, got {type(model).__name__}")
    thetas = model._thetas(thetas)
    y = val.float_array(y, "y", ndim=1)
    y_mean = _scalar(y_mean, "y_mean")
    if not np.isfinite(y_mean):
        raise ValueError(f"y_mean must be finite, got {y_mean!r}")
    y_std = val.positive_float(_scalar(y_std, "y_std"), "y_std")
    F = model.predict_particles(thetas, X)
    if F.shape[1] != y.shape[0]:
        raise ValueError(f"y has {y.shape[0]} entries but X has {F.shape[1]} rows")
    if not np.all(np.isfinite(thetas)):
        raise ValueError("thetas contains NaN or inf")
    mu = y_mean + y_std * F
    rmse = float(np.sqrt(np.mean((y - mu.mean(axis=0)) ** 2)))
    lg = thetas[:, -2][:, None]
    log_s2 = -lg + (2.0 * np.log(y_std) if conv == "exact" else 0.0)
    logp = -0.5 * (np.log(2 * np.pi) + log_s2) - 0.5 * (y - mu) ** 2 * np.exp(-log_s2)
    top = logp.max(axis=0)
    lse = top + np.log(np.exp(logp - top).sum(axis=0)) - np.log(thetas.shape[0])
    return rmse, float(lse.mean())


def _scalar(value, name):
    """``value`` as a float: a real number (Python or NumPy scalar) or a 0-D real array.

    A 1-element array of shape ``(1,)`` (e.g. ``y.mean(axis=0, keepdims=True)``) is
    rejected rather than silently squeezed, and so are booleans and strings.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, np.ndarray):
        if value.ndim != 0 or not np.issubdtype(value.dtype, np.number) \
                or np.iscomplexobj(value):
            raise TypeError(f"{name} must be a real number or a 0-D real array, got an "
                            f"array of shape {value.shape} and dtype {value.dtype}")
        return float(value)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)
