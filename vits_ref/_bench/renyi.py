"""One RenyiVI update, compiled against plain NumPy, measured in one process.

The problem: ``RenyiVI(20, model="linear")`` with 100 observations
in its statistics, one update = 10 Adam steps on 300 Monte Carlo draws. The library side is
the engine's own ``_refit`` (draws the ``(10, 300, 20)`` normals from its stream, runs the
compiled :func:`vits_ref.drivers.cpu.renyi_steps` on its state in place); each call first
restores the engine's state, so every call does the same work. The NumPy side is
:func:`vits_ref.reference.renyi.renyi_steps` (the same algorithm with array
expressions: two (300, 20) x (20, 20) products for the draws and their gradients, the
potential's values, the weighted gradient product, Adam) from the same state, drawing its
normals from its own generator. Calls are interleaved and the medians compared
(:func:`vits_ref._bench.timing.median_times`), so the machine's drift hits both sides.

The logistic model's update (:func:`logistic_stats`) is timed the same way on a history of
1000 observations at d = 10 (the logistic hard instance halfway through a 2000-round
showdown run), where the update's cost is the (300, 1000) negative log-likelihoods and
residuals of every step, against the two products per step alone (the BLAS floor).

Set ``OPENBLAS_NUM_THREADS=1`` for single-thread figures::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import renyi; renyi.main()"
"""

import numpy as np

from .. import reference
from ..inference import RenyiVI
from ..reference import renyi as rrenyi
from .timing import blas_threads, median_times, ratio_text

DIM, N_OBS, N_MC, N_STEPS = 20, 100, 300, 10
#: The logistic update's problem: d and the observations in the history
LOGISTIC_DIM, LOGISTIC_N_OBS = 10, 1000


def problem(dim=DIM, n_obs=N_OBS, seed=0):
    """``(X, r)``: ``x ~ N(0, I/d)`` rows and ``r = x theta* + N(0, 1)``, ``theta* ~ N(0, I)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, dim)) / np.sqrt(dim)
    r = X @ rng.standard_normal(dim) + rng.standard_normal(n_obs)
    return X, r


def engine(dim=DIM, n_obs=N_OBS, n_mc=N_MC, n_steps=N_STEPS, alpha=0.5, seed=0):
    """A warm ``RenyiVI`` on :func:`problem` (one update done: compiled, Adam under way)."""
    X, r = problem(dim, n_obs, seed)
    return RenyiVI(dim, alpha=alpha, n_mc=n_mc, n_steps=n_steps, seed=seed).update(X, r)


def logistic_engine(dim=LOGISTIC_DIM, n_obs=LOGISTIC_N_OBS, seed=0):
    """A warm logistic ``RenyiVI`` (``eta = lam = 10``, the showdown's point) on ``x ~
    N(0, I/d)`` rows and ``y ~ Bernoulli(sigmoid(x theta*))``, ``theta* ~ N(0, I)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, dim)) / np.sqrt(dim)
    z = X @ rng.standard_normal(dim)
    y = (rng.random(n_obs) < 1.0 / (1.0 + np.exp(-z))).astype(float)
    return RenyiVI(dim, model="logistic", eta=10.0, lam=10.0, seed=seed).update(X, y)


def _reference_values_grads(eng):
    """The NumPy potential of the engine's model (linear or logistic)."""
    if eng.model.name == "logistic":
        X, y, eta, lam = eng.model.kernel_data()[:4]
        return rrenyi.logistic_values_grads(X.copy(), y.copy(), eta, lam)
    etaV, eta_b = eng.model.kernel_data()
    return rrenyi.linear_values_grads(etaV, eta_b)


class EngineUpdate:
    """The engine's update steps (``RenyiVI._refit``) from a fixed state, repeatable."""

    def __init__(self, eng):
        self.engine = eng
        self.state = (eng._P.copy(), eng._m.copy(), eng._v.copy(), eng._t.copy())

    def __call__(self):
        eng = self.engine
        eng._P, eng._m, eng._v, eng._t = (a.copy() for a in self.state)
        eng._refit(None, None)


class NumpyUpdate:
    """The same update in NumPy (:func:`vits_ref.reference.renyi.renyi_steps`)."""

    def __init__(self, eng, seed=1):
        self.values_grads = _reference_values_grads(eng)
        self.state = (eng._P.copy(), eng._m.copy(), eng._v.copy(), int(eng._t[0]))
        self.alpha, self.lr = eng.alpha, eng.step_size
        self.shape = (eng.n_steps, eng.n_mc, eng.dim)
        self.rng = np.random.default_rng(seed)

    def __call__(self):
        P, m, v, t = self.state
        eps = self.rng.standard_normal(self.shape)
        return reference.renyi.renyi_steps(self.alpha, P, eps, self.lr, self.values_grads,
                                           m, v, t)


class EngineSteps:
    """The compiled steps alone (``cpu.renyi_steps``) on pre-drawn normals, from a fixed state."""

    def __init__(self, eng, eps):
        self.engine, self.eps = eng, eps
        self.state = (eng._P.copy(), eng._m.copy(), eng._v.copy(), eng._t.copy())
        self.data = eng.model.kernel_data()
        self.trace = np.empty((eps.shape[0], 2))

    def __call__(self):
        eng = self.engine
        P, m, v, t = (a.copy() for a in self.state)
        b1, b2 = eng.betas
        eng._steps(eng.alpha, P, self.data, self.eps, eng.step_size, b1, b2, eng.adam_eps,
                   (m, v, t), eng._scratch, 0, self.trace)
        return P


class NumpySteps(NumpyUpdate):
    """The NumPy steps alone on the same pre-drawn normals."""

    def __init__(self, eng, eps):
        super().__init__(eng)
        self.eps = eps

    def __call__(self):
        P, m, v, t = self.state
        return reference.renyi.renyi_steps(self.alpha, P, self.eps, self.lr,
                                           self.values_grads, m, v, t)[0]


def update_stats(repeats=31, alpha=0.5):
    """Microseconds per update, medians of ``repeats`` interleaved calls (one untimed
    warm-up call each).

    Returns ``{"compiled", "numpy", "ratio"}`` (the whole update, normals drawn on both
    sides), ``{"steps_compiled", "steps_numpy", "steps_ratio"}`` (the steps alone on the
    same pre-drawn normals), ``"draws"`` (drawing the (10, 300, 20) normals with NumPy's
    Generator, the part both sides share) and ``"max_abs_diff"`` (compiled against NumPy
    on the same normals).
    """
    eng = engine(alpha=alpha)
    eps = np.random.default_rng(2).standard_normal((eng.n_steps, eng.n_mc, eng.dim))
    rng = np.random.default_rng(3)
    fns = [EngineUpdate(eng), NumpyUpdate(eng), EngineSteps(eng, eps), NumpySteps(eng, eps),
           lambda: rng.standard_normal(eps.shape)]
    for fn in fns:
        fn()
    t = median_times(fns, repeats)
    diff = float(np.max(np.abs(fns[2]() - fns[3]())))
    return {"compiled": 1e6 * t[0], "numpy": 1e6 * t[1], "ratio": t[1] / t[0],
            "steps_compiled": 1e6 * t[2], "steps_numpy": 1e6 * t[3],
            "steps_ratio": t[3] / t[2], "draws": 1e6 * t[4], "max_abs_diff": diff}


class StepProducts:
    """The BLAS floor of the logistic steps: per step, ``Z = thetas X^T`` (M, n) and
    ``G = R X`` (M, d), on the engine's history."""

    def __init__(self, eng):
        X = eng.model.kernel_data()[0]
        self.X = X.copy()
        self.thetas = np.random.default_rng(4).standard_normal((eng.n_mc, eng.dim))
        self.Z = np.empty((eng.n_mc, X.shape[0]))
        self.G = np.empty((eng.n_mc, eng.dim))
        self.n_steps = eng.n_steps

    def __call__(self):
        for _ in range(self.n_steps):
            np.dot(self.thetas, self.X.T, out=self.Z)
            np.dot(self.Z, self.X, out=self.G)


def logistic_stats(repeats=11, dim=LOGISTIC_DIM, n_obs=LOGISTIC_N_OBS):
    """Microseconds per logistic update (:func:`logistic_engine`), medians of ``repeats``
    interleaved calls: ``{"compiled", "numpy", "ratio", "floor", "over_floor"}``, the
    floor being :class:`StepProducts` (the two products of every step)."""
    eng = logistic_engine(dim, n_obs)
    fns = [EngineUpdate(eng), NumpyUpdate(eng), StepProducts(eng)]
    for fn in fns:
        fn()
    t = median_times(fns, repeats)
    return {"compiled": 1e6 * t[0], "numpy": 1e6 * t[1], "ratio": t[1] / t[0],
            "floor": 1e6 * t[2], "over_floor": t[0] / t[2]}


def main(quick=False):
    """Print the time of one RenyiVI update, compiled and NumPy, and their ratio."""
    repeats = 7 if quick else 31
    print(f"RenyiVI update (d = {DIM}, linear model, {N_OBS} observations, {N_MC} draws, "
          f"{N_STEPS} Adam steps), medians of {repeats} interleaved calls; BLAS threads "
          f"{blas_threads() or 'unknown'}")
    for alpha in (0.5, 1.0):
        s = update_stats(repeats, alpha)
        print(f"  alpha = {alpha:g}: update   compiled {s['compiled']:7.0f} us   NumPy "
              f"{s['numpy']:7.0f} us   NumPy / compiled = {ratio_text(s['ratio'], '.2f')}")
        print(f"             steps    compiled {s['steps_compiled']:7.0f} us   NumPy "
              f"{s['steps_numpy']:7.0f} us   NumPy / compiled = "
              f"{ratio_text(s['steps_ratio'], '.2f')}   "
              f"(same normals; max |diff| {s['max_abs_diff']:.1e})")
        print(f"             drawing the {N_STEPS * N_MC * DIM} normals (both sides): "
              f"{s['draws']:.0f} us")
    s = logistic_stats(5 if quick else 11)
    print(f"RenyiVI update, logistic model (d = {LOGISTIC_DIM}, {LOGISTIC_N_OBS} observations, "
          f"{N_MC} draws, {N_STEPS} Adam steps, alpha = 0.5)")
    print(f"  compiled {s['compiled']:7.0f} us   NumPy {s['numpy']:7.0f} us   NumPy / compiled = "
          f"{ratio_text(s['ratio'], '.2f')}")
    print(f"  floor: the steps' two products alone {s['floor']:7.0f} us; compiled / floor = "
          f"{s['over_floor']:.1f} (the rest is one exp and one log1p per draw and "
          f"observation, scalar calls of the C library)")
