"""Variational Thompson sampling (VTS) and its one-component case, NIG Thompson sampling.

Urteaga & Wiggins, "Variational inference for the multi-armed contextual bandit" (AISTATS 2018,
sections 3-4; docs/algorithms.md section 4). Every arm ``a`` has its own reward model, a
mixture of ``K`` linear-Gaussian experts::

    y | x ~ sum_k pi_ak N(x w_ak, s2_ak),   pi_a ~ Dir(gamma0),
    w_ak | s2_ak ~ N(u0_k, s2_ak V0_k),      s2_ak ~ InvGamma(alpha0_k, beta0_k)

fitted after every observation by mean-field CAVI (eqs. 12-13,
:mod:`vits_ref.kernels.cavi`), and the arm to play is the argmax of one Thompson score per
arm drawn from the variational factors (eqs. 15-17).

- :class:`VTS`: the policy (``select``/``update``/``fresh``, as :class:`vits_ref.PerArm`);
- :class:`NIGTS`: ``VTS`` with ``K = 1``, the exact conjugate posterior (linear Thompson
  sampling with an unknown noise variance): the baseline;
- :func:`fit_mixture`: one CAVI fit of a mixture to data (Algorithm 1's inner loop);
- many seeded runs of VTS in one compiled driver (blocks of runs in threads) are
  :func:`vits_ref.bandit.vts.simulate_vts`.

Choices (each stated where it is made):

- **Thompson draws.** Eqs. (15)-(17) write the score with the variational means ``u_ak``,
  but Algorithm 1 draws ``theta ~ q`` and the authors' code draws
  ``s2 ~ InvGamma(alpha, beta)``, ``w ~ N(u, s2 V)``; with means only, eq. (17) would be
  greedy. ``sample_params=True`` (default) draws ``(w, s2)``; ``False`` scores with ``u``.
- **Scoring default** ``"sample_pi"`` (eq. 16, ``pi ~ Dir(gamma)``): what the authors'
  code runs (``VariationalContextualBanditSampling_actionMonteCarlo``); the paper saw no
  difference between the three.
- **Prior default** (the authors' code): ``gamma0 = 1``, ``alpha0 = beta0 = 1``,
  ``V0 = I`` and ``u0_k = k 1_d``: different prior means per component, which breaks the
  symmetry between the components (with equal priors every component gets the same
  responsibilities forever). With ``K = 1`` that is ``u0 = 0``.
- **Stopping rule.** CAVI stops once the ELBO's relative improvement is at most ``tol``
  (default ``1e-5``) or after ``max_iter`` (default 100) iterations. The authors' code
  restarts from the prior every round (100 iterations at most, ``eps = 1e-3`` to
  ``1e-4``); here every round starts from the previous round's factors (a warm start):
  adding one observation moves the optimum little, so a few iterations suffice.
- **Contexts.** Arm ``a`` is scored and updated at row ``a`` of the ``(n_arms, d)``
  contexts (the :class:`vits_ref.PerArm` convention, which the hard instance of the
  VITS paper needs); the paper's shared context is a ``(d,)`` vector, broadcast to every
  arm (:func:`vits_ref.envs.vts_scenario` repeats it on the rows).
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as val
from .._seeding import engine_streams
from ..drivers import cpu
from ..errors import DivergenceError
from ..kernels.cavi import EXPECTED_PI, SAMPLE_PI, SAMPLE_Z
from .base import Diagnostics
from .persist import Persistent

__all__ = ["DEFAULT_MAX_ITER", "DEFAULT_TOL", "SCORINGS", "MixtureFit", "NIGTS",
           "VTS", "fit_mixture"]

#: Scoring rules: eq. (15) sampled assignment, eq. (16) sampled proportions, eq. (17)
#: mean proportions.
SCORINGS = {"sample_z": SAMPLE_Z, "sample_pi": SAMPLE_PI, "expected_pi": EXPECTED_PI}
#: CAVI's relative ELBO tolerance and iteration cap (module docstring).
DEFAULT_TOL = 1e-5
DEFAULT_MAX_ITER = 100

_MEMORY_BUDGET = 256 * 2 ** 20  # bytes of realisations and histories held at once


# --------------------------------------------------------------------------- the prior


class _Prior:
    """A validated mixture prior and the tuple the kernels read (:mod:`vits_ref.kernels.cavi`)."""

    def __init__(self, dim, n_components, gamma0, u0, V0, alpha0, beta0, default_u0):
        K, d = n_components, dim
        self.gamma0 = _per_component(gamma0, "gamma0", K)
        self.alpha0 = _per_component(alpha0, "alpha0", K)
        self.beta0 = _per_component(beta0, "beta0", K)
        if u0 is None:
            u0 = (np.arange(K, dtype=float)[:, None] * np.ones(d) if default_u0 == "spread"
                  else np.zeros((K, d)))
        u0 = val.float_array(u0, "u0")
        if u0.shape == (d,):
            u0 = np.tile(u0, (K, 1))
        if u0.shape != (K, d):
            raise ValueError(f"u0 must have shape ({d},) or ({K}, {d}), got {u0.shape}")
        V0 = np.eye(d) if V0 is None else val.float_array(V0, "V0")
        if V0.shape == (d, d):
            V0 = np.tile(V0, (K, 1, 1))
        if V0.shape != (K, d, d):
            raise ValueError(f"V0 must have shape ({d}, {d}) or ({K}, {d}, {d}), "
                             f"got {V0.shape}")
        for k in range(K):
            val.spd_matrix(V0[k], "V0")
        self.u0, self.V0 = u0, V0
        P0 = np.linalg.inv(V0)
        P0 = 0.5 * (P0 + np.transpose(P0, (0, 2, 1)))
        C0 = np.linalg.cholesky(P0)
        b0 = np.einsum("kij,kj->ki", P0, u0)
        c0 = np.einsum("ki,ki->k", u0, b0)
        ld = 2.0 * np.log(np.diagonal(C0, axis1=1, axis2=2)).sum(axis=1)
        self.kernel = (self.gamma0, u0, P0, C0, self.alpha0, self.beta0, b0, c0, ld)

    def params(self):
        return {"gamma0": self.gamma0, "u0": self.u0, "V0": self.V0, "alpha0": self.alpha0,
                "beta0": self.beta0}


def _per_component(value, name, K):
    # a copy: a broadcast view is read-only, which Numba types (and compiles) apart
    arr = np.array(np.broadcast_to(val.float_array(value, name), (K,)))
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return arr


def _factors(A, K, d):
    """Empty factors ``(gamma, u, L, alpha, beta)`` and statistics with a leading arm axis."""
    fac = (np.empty((A, K)), np.empty((A, K, d)), np.empty((A, K, d, d)), np.empty((A, K)),
           np.empty((A, K)))
    st = (np.empty((A, K)), np.empty((A, K, d)), np.empty((A, K, d, d)), np.empty((A, K)))
    return fac, st


def _covariance(L):
    """``V = inv(L L^T)`` for every component's Cholesky factor (K, d, d)."""
    eye = np.eye(L.shape[-1])
    Linv = np.linalg.solve(L, np.broadcast_to(eye, L.shape))
    V = np.transpose(Linv, (0, 2, 1)) @ Linv
    return 0.5 * (V + np.transpose(V, (0, 2, 1)))


def _tolerance(tol, max_iter):
    tol = val.positive_float(tol, "tol", allow_zero=True)
    return tol, val.positive_int(max_iter, "max_iter")


# --------------------------------------------------------------------------- one fit


@dataclass
class MixtureFit:
    """The outcome of :func:`fit_mixture`.

    Attributes
    ----------
    gamma : (K,) array
        Dirichlet parameters of ``q(pi)``.
    u : (K, d) array
    V : (K, d, d) array
    alpha, beta : (K,) arrays
        ``q(w_k, s2_k) = NIG(u_k, V_k, alpha_k, beta_k)``.
    responsibilities : (n, K) array
        ``q(z_t = k)`` of the last E-step.
    elbo : (iterations,) array
        The ELBO of every iteration (non-decreasing).
    n_iter : int
    converged : bool
        Whether the tolerance was met before ``max_iter``.
    """

    gamma: np.ndarray
    u: np.ndarray
    V: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    responsibilities: np.ndarray
    elbo: np.ndarray
    n_iter: int
    converged: bool

    @property
    def weights(self):
        """``E_q[pi] = gamma / sum(gamma)``."""
        return self.gamma / self.gamma.sum()

    def predict(self, X):
        """``E_q[E[y | x]] = sum_k E_q[pi_k] x u_k`` for the rows of ``X`` (n, d)."""
        return np.asarray(X, float) @ self.u.T @ self.weights


def fit_mixture(X, y, n_components=2, *, gamma0=1.0, u0=None, V0=None, alpha0=1.0, beta0=1.0,
                tol=DEFAULT_TOL, max_iter=DEFAULT_MAX_ITER):
    """Fit a mixture of linear-Gaussian experts to ``(X, y)`` by CAVI from the prior.

    Parameters
    ----------
    X : (n, d) array_like
    y : (n,) array_like
    n_components : int, default 2
    gamma0, u0, V0, alpha0, beta0
        The prior (see :class:`VTS`; ``u0`` defaults to ``u0_k = k 1_d``).
    tol : float, default :data:`DEFAULT_TOL`
        Relative ELBO improvement at which CAVI stops.
    max_iter : int, default :data:`DEFAULT_MAX_ITER`

    Returns
    -------
    MixtureFit

    Notes
    -----
    Urteaga & Wiggins eqs. (12)-(13); the ELBO and the stopping rule are those of
    :func:`vits_ref.kernels.cavi.cavi_iterate`. With ``n_components=1`` one iteration gives
    the exact NIG posterior and the ELBO equals the log marginal likelihood.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((400, 2))
    >>> z = rng.random(400) < 0.3
    >>> y = np.where(z, X @ [0.0, 0.0], X @ [3.0, 3.0]) + 0.3 * rng.standard_normal(400)
    >>> fit = vr.vts.fit_mixture(X, y, 2, tol=1e-8, max_iter=500)
    >>> np.round(np.sort(fit.weights), 1)
    array([0.3, 0.7])
    >>> bool(np.all(np.diff(fit.elbo) >= -1e-9 * abs(fit.elbo[-1])))
    True
    """
    X = val.float_array(X, "X", ndim=2)
    n, d = X.shape
    y = val.float_array(y, "y", ndim=1, shape=(n,))
    K = val.positive_int(n_components, "n_components")
    tol, max_iter = _tolerance(tol, max_iter)
    prior = _Prior(d, K, gamma0, u0, V0, alpha0, beta0, "spread")
    fac, st = _factors(1, K, d)
    fac, st = tuple(a[0] for a in fac), tuple(a[0] for a in st)
    cpu.cavi_init()(prior.kernel, fac, st)
    resp = np.empty((n, K))
    trace = np.empty(max_iter)
    it, _, ok = cpu.cavi_fit()(X, y, n, prior.kernel, fac, st, resp, tol, max_iter, trace)
    if not ok:
        raise DivergenceError("CAVI", n, None, detail="the factors became non-finite")
    converged = it >= 2 and abs(trace[it - 1] - trace[it - 2]) <= tol * abs(trace[it - 2])
    return MixtureFit(fac[0].copy(), fac[1].copy(), _covariance(fac[2]), fac[3].copy(),
                      fac[4].copy(), resp, trace[:it].copy(), int(it), bool(converged))


# --------------------------------------------------------------------------- the policy


def _rng_state(seed):
    """The policy's xoroshiro128+ state (two uint64 words) from its sampling stream."""
    rng, _ = engine_streams(seed)
    state = rng.bit_generator.random_raw(2).astype(np.uint64)
    if not state.any():  # the one invalid state of xoroshiro128+
        state[0] = 1
    return state


class VTS(Persistent):
    """Variational Thompson sampling: a mixture of linear-Gaussian experts per arm.

    A *policy*, not an engine: it satisfies :class:`vits_ref.bandit.protocols.Policy`
    (``select(contexts)``, ``update(contexts, arm, reward)``, ``fresh(seed)``, ``name``,
    ``dim``), as :class:`vits_ref.PerArm` does, and keeps one posterior per arm, so it is
    not an :class:`~vits_ref.inference.base.Engine` (no ``sample``/``update(features,
    rewards)`` over one parameter). :func:`vits_ref.bandit.simulate` runs it in its Python
    loop like any policy; :func:`vits_ref.bandit.vts.simulate_vts` is its compiled
    many-runs driver. Its ``diagnostics`` is a
    :class:`~vits_ref.inference.base.Diagnostics` (``n_obs``, ``expected_rewards``,
    ``arm``, ``iterations``, ``elbo``, ``elbo_trace``).

    Parameters
    ----------
    dim : int
        Context dimension ``d``.
    n_arms : int
    n_components : int, default 2
        ``K``, the experts per arm (the paper's best in both scenarios, and its code's
        default).
    gamma0 : float or (K,) array_like, default 1.0
        Dirichlet prior of the weights.
    u0 : (d,) or (K, d) array_like, optional
        Prior means; default ``u0_k = k 1_d`` (module docstring: symmetry breaking).
    V0 : (d, d) or (K, d, d) array_like, optional
        Prior scale of ``w`` (``w | s2 ~ N(u0, s2 V0)``); default the identity.
    alpha0, beta0 : float or (K,) array_like, default 1.0
        Inverse-gamma prior of the variances.
    scoring : {"sample_pi", "sample_z", "expected_pi"}, default "sample_pi"
        Eq. (16), (15) or (17).
    sample_params : bool, default True
        Score with draws of ``(w, s2)`` (Thompson sampling) or with the means ``u``.
    tol : float, default :data:`DEFAULT_TOL`
        CAVI's relative ELBO tolerance.
    max_iter : int, default :data:`DEFAULT_MAX_ITER`
        CAVI's iteration cap per round.
    seed : int, SeedSequence, Generator or None
        Seeds the policy's xoroshiro128+ stream (from the sampling stream of
        :func:`vits_ref._seeding.engine_streams`).

    Notes
    -----
    ``select`` draws, for every arm ``a`` at its context ``x_a``, a score from the factors
    (Urteaga & Wiggins, eqs. 15-17; :func:`vits_ref.kernels.cavi.arm_score`) and plays the argmax
    (ties: lowest index). ``update`` appends ``(x_arm, reward)`` to the played arm's
    history and refits that arm only: with ``K = 1`` the exact NIG posterior by one
    rank-one update (O(d^2), no iteration), with ``K > 1`` CAVI warm-started from the
    arm's current factors over its whole history (O(n K d^2) per iteration: every
    responsibility changes when the factors do, so the weighted statistics are recomputed
    from the history; the histories live in arrays that double when full).

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> pol = vr.VTS(2, n_arms=2, n_components=2, seed=0)
    >>> x = np.array([0.5, 0.5])
    >>> arm = pol.select(x)
    >>> pol.update(x, arm, 1.0).n_obs
    1
    >>> sorted(pol.posterior(arm))
    ['V', 'alpha', 'beta', 'gamma', 'u']
    """

    _default_u0 = "spread"
    #: what vits_ref.load puts back after construction (``save(path)`` writes it): the
    #: stream, every arm's factors and statistics, the histories (which double when full)
    #: with the E-step's scratch sized with them, the counts, the diagnostics
    _persist_state = ("_rng", "_facs", "_sts", "_X", "_y", "_resp", "_W", "counts",
                      "diagnostics")
    _persist_growing = ("_X", "_y", "_resp", "_W")
    _persist_bounds = (("counts", "_X", 1), ("counts", "_y", 1), ("counts", "_resp", 1))

    def __init__(self, dim, n_arms, n_components=2, gamma0=1.0, u0=None, V0=None, alpha0=1.0,
                 beta0=1.0, scoring="sample_pi", sample_params=True, tol=DEFAULT_TOL,
                 max_iter=DEFAULT_MAX_ITER, seed=None):
        self.dim = val.positive_int(dim, "dim")
        self.n_arms = val.positive_int(n_arms, "n_arms")
        self.n_components = val.positive_int(n_components, "n_components")
        self._prior = _Prior(self.dim, self.n_components, gamma0, u0, V0, alpha0, beta0,
                             self._default_u0)
        self.scoring = val.choice(scoring, "scoring", tuple(SCORINGS))
        if not isinstance(sample_params, (bool, np.bool_)):
            raise TypeError("sample_params must be True or False")
        self.sample_params = bool(sample_params)
        self.tol, self.max_iter = _tolerance(tol, max_iter)
        self.seed = seed
        self._rng = _rng_state(seed)
        A, K, d = self.n_arms, self.n_components, self.dim
        self._facs, self._sts = _factors(A, K, d)
        for a in range(A):
            cpu.cavi_init()(self._prior.kernel, tuple(x[a] for x in self._facs),
                            tuple(x[a] for x in self._sts))
        self._cap = 16
        self._X = np.empty((A, self._cap, d))
        self._y = np.empty((A, self._cap))
        self._resp = np.empty((A, self._cap, K))
        self._W = np.empty((A, self._cap, d))  # the E-step's scratch, as large as _X
        self.counts = np.zeros(A, dtype=np.int64)
        self._trace = np.empty(self.max_iter)
        self._scores = np.empty(A)
        self._expected = np.empty(A)
        self.diagnostics = Diagnostics(n_obs=0)

    @property
    def name(self):
        return f"VTS (K={self.n_components}, {self.scoring})"

    @property
    def params(self):
        """``(scoring code, sample_params, tol, max_iter)``: what the kernels read."""
        return (SCORINGS[self.scoring], self.sample_params, self.tol, self.max_iter)

    @property
    def n_obs(self):
        """Observations over all arms."""
        return int(self.counts.sum())

    # -- protocol ------------------------------------------------------------------------
    def _contexts(self, contexts):
        # the simulation loop's arrays pass float_array's own fast path, unconverted
        X = val.float_array(contexts, "contexts", finite=False)
        # finite and |x| <= MAX_ABS_DATA (a min and a max, no temporary): contexts of 1e200
        # were accepted and gave a zero posterior covariance (tests/test_fuzz_api.py)
        val.bounded_data(X, "contexts")
        if X.shape == (self.dim,):
            # a new array: with one arm the broadcast is itself C-ordered, but read-only,
            # another type to the compiled calls (compiled again)
            return np.array(np.broadcast_to(X, (self.n_arms, self.dim)))
        if X.shape != (self.n_arms, self.dim):
            raise ValueError(f"contexts must have shape ({self.dim},) (shared by the arms) or "
                             f"({self.n_arms}, {self.dim}) (one row per arm), got {X.shape}")
        return X

    def select(self, contexts):
        """The arm whose Thompson score is largest (arm ``a`` scored at ``contexts[a]``).

        Also keeps every arm's posterior-mean expected reward in
        ``diagnostics["expected_rewards"]``.
        """
        X = self._contexts(contexts)
        arm = cpu.vts_select()(X, self._facs, SCORINGS[self.scoring], self.sample_params,
                               self._rng, self._scores, self._expected)
        self.diagnostics["expected_rewards"] = self._expected.copy()
        return int(arm)

    def update(self, contexts, arm, reward):
        """Append ``(contexts[arm], reward)`` to the arm's history and refit the arm."""
        X = self._contexts(contexts)
        arm = val.arm_index(arm, self.n_arms)
        reward = val.reward_value(reward)
        n = int(self.counts[arm])
        # transactional: a diverging refit leaves the policy exactly as it was (the arm's
        # factors, statistics, history and responsibilities, O(cap (d + K)) copies, small
        # next to the E-step); n_obs was incremented and the factors kept before (found
        # by tests/test_fuzz_api.py)
        saved = ([x[arm].copy() for x in self._facs + self._sts],
                 {k: getattr(self, k) for k in ("_X", "_y", "_resp", "_W", "_cap")},
                 [getattr(self, k)[arm].copy() for k in ("_X", "_y", "_resp")])
        if n == self._cap:
            self._grow()
        it, elbo, ok = cpu.vts_update()(
            self._X[arm], self._y[arm], self._resp[arm], self._W[arm], n, X[arm], reward,
            self._prior.kernel, tuple(x[arm] for x in self._facs),
            tuple(x[arm] for x in self._sts), self.tol, self.max_iter, self._trace)
        if not ok:
            factors, bindings, history = saved
            for x, copy in zip(self._facs + self._sts, factors, strict=True):
                x[arm] = copy
            for k, v in bindings.items():
                setattr(self, k, v)
            for k, copy in zip(("_X", "_y", "_resp"), history, strict=True):
                getattr(self, k)[arm] = copy
            raise DivergenceError(self.name, self.n_obs + 1, None,
                                  detail=f"(arm {arm}: the variational factors became "
                                         "non-finite)")
        self.counts[arm] = n + 1
        self.diagnostics.update(n_obs=self.n_obs, arm=arm, iterations=int(it),
                                elbo=float(elbo), elbo_trace=self._trace[:it].copy())
        return self

    def fresh(self, seed=None):
        """The same policy at the prior, with a new seed."""
        return type(self)(**{**self._params(), "seed": seed})

    # -- the posterior ---------------------------------------------------------------------
    def posterior(self, arm):
        """The arm's variational factors: a dict of copies.

        ``"gamma"`` (K,): ``q(pi) = Dir(gamma)``; ``"u"`` (K, d), ``"V"`` (K, d, d),
        ``"alpha"``, ``"beta"`` (K,): ``q(w_k, s2_k) = NIG(u_k, V_k, alpha_k, beta_k)``, i.e.
        ``w_k | s2_k ~ N(u_k, s2_k V_k)``, ``s2_k ~ InvGamma(alpha_k, beta_k)``.
        """
        arm = self._arm_index(arm)
        gamma, u, L, alpha, beta = (x[arm] for x in self._facs)
        return {"gamma": gamma.copy(), "u": u.copy(), "V": _covariance(L),
                "alpha": alpha.copy(), "beta": beta.copy()}

    def expected_rewards(self, contexts):
        """Every arm's posterior-mean expected reward ``sum_k E[pi_k] x_a u_k`` (no draw)."""
        X = self._contexts(contexts)
        gamma, u = self._facs[0], self._facs[1]
        w = gamma / gamma.sum(axis=1, keepdims=True)
        return np.einsum("ak,akd,ad->a", w, u, X)

    def history(self, arm):
        """The arm's observations ``(X (n, d), y (n,))`` (copies)."""
        arm = self._arm_index(arm)
        n = self.counts[arm]
        return self._X[arm, :n].copy(), self._y[arm, :n].copy()

    def responsibilities(self, arm):
        """The arm's responsibilities ``q(z_t = k)`` of its last E-step, (n, K) (ones when
        ``K = 1``)."""
        arm = self._arm_index(arm)
        return self._resp[arm, :self.counts[arm]].copy()

    # -- helpers ---------------------------------------------------------------------------
    def _arm_index(self, arm):
        return val.arm_index(arm, self.n_arms)

    def _grow(self):
        """Double the histories' capacity (amortised O(1) per observation)."""
        cap = 2 * self._cap
        for name in ("_X", "_y", "_resp", "_W"):
            old = getattr(self, name)
            new = np.empty((old.shape[0], cap) + old.shape[2:])
            new[:, :self._cap] = old
            setattr(self, name, new)
        self._cap = cap

    @staticmethod
    def _persist_cost(params):
        """The float64 entries the constructor allocates (vits_ref.load's size policy): per
        arm and component the factors (dim, dim), per arm the histories of 16 rows, the
        trace (max_iter)."""
        A, K, d, it = (params.get(k) for k in ("n_arms", "n_components", "dim", "max_iter"))
        A, K, d, it = (x if isinstance(x, int) and x > 0 else 0 for x in (A, K, d, it))
        return 8 * A * K * (d + 1) ** 2 + 64 * A * (2 * d + K + 1) + it + 4 * (d + K) ** 2

    def _persist_restored(self):
        """After vits_ref.load: the histories share one capacity, which ``_cap`` records
        (the compiled update writes row ``counts[arm] < _cap`` of each)."""
        caps = sorted({getattr(self, k).shape[1] for k in ("_X", "_y", "_resp", "_W")})
        if len(caps) != 1:
            raise ValueError(f"the history buffers have different capacities {caps}")
        self._cap = caps[0]

    def _params(self):
        return {"dim": self.dim, "n_arms": self.n_arms, "n_components": self.n_components,
                **self._prior.params(), "scoring": self.scoring,
                "sample_params": self.sample_params, "tol": self.tol,
                "max_iter": self.max_iter}

    def __repr__(self):
        return (f"{type(self).__name__}(dim={self.dim}, n_arms={self.n_arms}, "
                f"n_components={self.n_components}, scoring={self.scoring!r})")


class NIGTS(VTS):
    """Thompson sampling with the exact normal-inverse-gamma posterior per arm (the baseline).

    ``VTS`` with one component: per arm ``y = x w + N(0, s2)``, ``w | s2 ~ N(u0, s2 V0)``,
    ``s2 ~ InvGamma(alpha0, beta0)``; the posterior is conjugate (docs/algorithms.md
    section 1, "NIG") and kept by one rank-one Cholesky update per observation. A round
    draws ``s2 ~ InvGamma(alpha, beta)``, ``w ~ N(u, s2 V)`` per arm and plays
    ``argmax_a x_a w_a``: linear Thompson sampling that learns the noise variance (Urteaga
    & Wiggins, section 4: "VTS with K = 1"). At ``u0 = 0``, ``V0 = I / 0.25`` and
    ``alpha0 = beta0 = 6`` it is Riquelme et al.'s ``LinFullPost`` at their point (the
    showdown's, :mod:`vits_ref.experiments.showdown.catalogue`).

    Parameters
    ----------
    dim, n_arms : int
    u0 : (d,) array_like, optional
        Prior mean (default 0).
    V0 : (d, d) array_like, optional
        Prior scale (default the identity).
    alpha0, beta0 : float, default 1.0
    sample_params : bool, default True
    seed : int, SeedSequence, Generator or None

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> pol = vr.NIGTS(2, n_arms=3, seed=0)
    >>> X = np.eye(3, 2)
    >>> pol.update(X, 0, 1.0).posterior(0)["alpha"]
    array([1.5])
    """

    _default_u0 = "zero"

    def __init__(self, dim, n_arms, u0=None, V0=None, alpha0=1.0, beta0=1.0,
                 sample_params=True, seed=None):
        super().__init__(dim, n_arms, n_components=1, u0=u0, V0=V0, alpha0=alpha0,
                         beta0=beta0, scoring="expected_pi", sample_params=sample_params,
                         seed=seed)

    @property
    def name(self):
        return "NIG-TS"

    def _params(self):
        p = self._prior.params()
        return {"dim": self.dim, "n_arms": self.n_arms, "u0": p["u0"][0], "V0": p["V0"][0],
                "alpha0": float(p["alpha0"][0]), "beta0": float(p["beta0"][0]),
                "sample_params": self.sample_params}

    def __repr__(self):
        return f"NIGTS(dim={self.dim}, n_arms={self.n_arms})"
