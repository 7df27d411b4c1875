"""Non-linear rounds against plain NumPy versions of the same algorithms, in one process.

The library sets three performance goals, as ratios measured in the same run:

1. a logistic VITS-II round (d = 20, 1000 observations, 10 inner steps, one draw per
   step) at least 10x faster than plain NumPy;
2. an MLP VITS-II round (861 parameters: input 20, hidden (20, 20)) at least 5x faster
   than plain NumPy, with the time per round and the fraction spent in the 861 x 861
   products reported;
3. IRLS to convergence (d = 20, n = 1000) at least as fast as statsmodels' GLM.

The NumPy side is :mod:`vits_ref.reference` (:func:`~vits_ref.reference.vits_ii_round` on
:func:`vits_ref.reference.logistic.grads_hessian` or
:func:`vits_ref.reference.mlp.grads_gauss_newton`; :func:`vits_ref.reference.logistic.irls`),
which computes the same numbers as the library to rounding (``tests/test_bench.py``).

The library side is the engine's own path: ``VITS(..., model=...)._refit``, which draws the
step noise and runs ``n_steps`` steps of the compiled ``cpu.vits_steps(model.potential)``
(the model's gradients and Hessian at the draw, then the VITS-II update), and checks the
state is finite. Each timed library call first restores the engine's state ``(mu, B, C)``
(three copies of d x d arrays), so every call does the same work from the same start; the
NumPy side starts from the same arrays.

What is cached across inner steps: only the history (the models' preallocated buffers) and
the models' scratch. The Hessian (logistic: ``X^T diag(sigmoid'(X theta)) X``; MLP:
Gauss-Newton ``J^T J``) depends on the step's draw ``theta = mu + B eps``, so it is
recomputed at every step, in both implementations.
"""

import copy

import numpy as np
from scipy.linalg.blas import dgemm

from .. import reference
from ..drivers import cpu
from ..envs import pool
from ..inference import VITS
from ..kernels import linear as klin
from ..kernels import logistic as klog
from ..kernels.newton import CONVERGED
from ..kernels.potential import VARIANT_II
from ..models.logistic import potential_scratch
from .timing import blas_threads, median_times, ratio_text

# --------------------------------------------------------------------------- problems


def logistic_problem(dim=20, n_obs=1000, seed=0):
    """``(X, y)``: rows ``x ~ N(0, I/d)`` (norm about 1), ``y ~ Bernoulli(sigmoid(x theta*))``.

    ``theta* ~ N(0, 4 I)``, so ``x theta*`` has standard deviation about 2: the data are not
    separable at ``n = 1000, d = 20`` (the unpenalised MAP exists) and the weights
    ``sigmoid'(x theta)`` are far from constant.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, dim)) / np.sqrt(dim)
    theta = 2.0 * rng.standard_normal(dim)
    y = (rng.random(n_obs) < 1.0 / (1.0 + np.exp(-(X @ theta)))).astype(float)
    return X, y


def mlp_problem(input_dim=20, n_obs=1000, seed=0):
    """``(X, r)``: the quadratic pool bandit of the VITS paper (``vits_ref.envs.pool``).

    ``n_obs`` rounds of the pool environment (``reward="quadratic"``, zeta = 0.1, K = 50),
    one uniformly random arm per round: the history of an exploring policy.
    """
    env = pool(dim=input_dim, n_arms=50, zeta=0.1, reward="quadratic", seed=seed)
    rng = np.random.default_rng(seed)
    real = env.realise(n_obs, rng=rng)
    arms = rng.integers(0, real.contexts.shape[1], n_obs)
    rows = np.arange(n_obs)
    return real.contexts[rows, arms], real.rewards[rows, arms]


def mlp_available():
    """``vits_ref.models.MLP`` if it can be imported, else None."""
    try:
        from ..models import MLP
    except ImportError:
        return None
    return MLP


def numpy_grads_hessian(model):
    """``thetas -> (G, H)`` in NumPy (:mod:`vits_ref.reference`) for a library model.

    The logistic model with its default prior, or the MLP (default or general prior).
    """
    if model.name == "logistic":
        if getattr(model, "prior_cov", None) is not None:
            raise ValueError("the NumPy reference covers the default prior N(0, I/(eta lam))")
        X, y, eta, lam = model.X.copy(), model.y.copy(), model.eta, model.lam
        return lambda thetas: reference.logistic.grads_hessian(X, y, thetas, eta, lam)
    if model.name == "mlp":
        X, r, hidden = model.features, model.rewards, model.hidden
        prior = ({} if model.has_default_prior else
                 {"prior_mean": model.prior_mean, "prior_precision": model.prior_precision})
        return lambda thetas: reference.mlp.grads_gauss_newton(X, r, thetas, model.eta,
                                                               model.lam, hidden, **prior)
    raise ValueError(f"no NumPy reference for model {model.name!r}")


# --------------------------------------------------------------------------- library side


def logistic_engine(X, y, n_steps=10, n_mc=1, seed=0, **kw):
    """``VITS(d, model="logistic", variant="II")`` with ``(X, y)`` in its history."""
    eng = VITS(X.shape[1], model="logistic", variant="II", n_steps=n_steps, n_mc=n_mc,
               seed=seed, **kw)
    eng.model.add(X, y)
    return eng


def mlp_engine(X, r, hidden=(20, 20), n_steps=10, n_mc=1, seed=0, eta=1.0, lam=10.0,
               step_size=1e-3, **kw):
    """``VITS(861, model=MLP(p, hidden), variant="II")`` with ``(X, r)`` in its history.

    Defaults are those of the vits-fig2 experiment (``eta = 1``, ``lam = 10``, decayed
    steps ``h_t = 1e-3 / t``), with which VITS-II is stable on this potential.
    """
    MLP = mlp_available()
    if MLP is None:
        raise NotImplementedError("vits_ref.models.MLP is not available")
    spec = MLP(X.shape[1], hidden=hidden)
    eng = VITS(spec.dim, model=spec, variant="II", n_steps=n_steps, n_mc=n_mc, seed=seed,
               eta=eta, lam=lam, step_size=step_size, **kw)
    eng.model.add(X, r)
    return eng


class EngineRound:
    """One engine update's inner steps (``VITS._refit``) from a fixed state, repeatable.

    ``__call__`` restores ``(mu, B, C)`` to the state at construction and runs the
    engine's ``_refit`` (step noise drawn from the engine's stream, ``n_steps`` steps on
    the model's compiled kernels, finiteness checks).
    """

    def __init__(self, engine):
        self.engine = engine
        self.state = (engine.mu.copy(), engine.B.copy(), engine.C.copy())

    def restore(self):
        for a, a0 in zip((self.engine.mu, self.engine.B, self.engine.C), self.state,
                         strict=True):
            np.copyto(a, a0)

    def __call__(self):
        self.restore()
        self.engine._refit(None, None)

    def with_reference(self):
        """Run one round in the library and the same round in NumPy; return both states.

        The NumPy round consumes the same step noise (a copy of the engine's update
        stream) and step sizes. Returns ``((mu, B, C) library, (mu, B, C) NumPy)``.
        """
        eng = self.engine
        self.restore()
        rng = copy.deepcopy(eng._rng_update)
        K, h_mu, h = eng._steps_and_sizes()
        eng._refit(None, None)
        eps = rng.standard_normal((K, eng.n_mc, eng.dim))
        ref = reference.vits_ii_round(numpy_grads_hessian(eng.model), *self.state, eps,
                                      h_mu, h)
        return (eng.mu.copy(), eng.B.copy(), eng.C.copy()), ref


class NumpyRound:
    """The same round in NumPy from the same state: draws the noise, runs the steps."""

    def __init__(self, engine, seed=1):
        self.grads_hessian = numpy_grads_hessian(engine.model)
        self.state = (engine.mu.copy(), engine.B.copy(), engine.C.copy())
        self.K, self.h_mu, self.h = engine._steps_and_sizes()
        self.shape = (self.K, engine.n_mc, engine.dim)
        self.rng = np.random.default_rng(seed)

    def __call__(self):
        eps = self.rng.standard_normal(self.shape)
        return reference.vits_ii_round(self.grads_hessian, *self.state, eps, self.h_mu,
                                       self.h)


# --------------------------------------------------------------------------- timing


def _step_parts(engine):
    """Library callables for one inner step's parts at the current state.

    ``(grads+Hessian, grads only, update, (eps, G, H, mu, B, C))``: the model's compiled
    ``grads_hessian`` at one draw with and without the Hessian, and the VITS-II update on
    copies of the state. The update is one compiled VITS-II step
    (``cpu.vits_steps``) on the linear potential whose Hessian is the model's ``H`` at the
    draw: the update's products (``H B``, ``C^T C``, ``C (C^T C - H)``) plus two
    matrix-vector products for the linear potential's mean gradient.
    """
    model = engine.model
    rng = np.random.default_rng(2)
    eps = rng.standard_normal((1, engine.n_mc, engine.dim))
    thetas = engine.mu + eps[0] @ engine.B.T
    G, H = model.grads_hessian(thetas, True)
    mu, B, C = engine.mu.copy(), engine.B.copy(), engine.C.copy()
    K, h_mu, h = engine._steps_and_sizes()
    steps = cpu.vits_steps(klin.POTENTIAL)
    data = (np.ascontiguousarray(H), G.mean(axis=0))
    scr = cpu.vits_scratch(engine.dim, engine.n_mc)

    def update():
        np.copyto(mu, engine.mu)
        np.copyto(B, engine.B)
        np.copyto(C, engine.C)
        steps(VARIANT_II, False, mu, B, C, data, eps, h_mu, h, scr, 0)

    return (lambda: model.grads_hessian(thetas, True),
            lambda: model.grads_hessian(thetas, False), update, (eps, G, H, mu, B, C))


def logistic_round_stats(dim=20, n_obs=1000, repeats=15, seed=0):
    """Logistic VITS-II round (10 steps, one draw each): library vs NumPy, and the parts.

    Returns a dict of microseconds per round (``numpy``, ``compiled``), their ``ratio``,
    and per-step microseconds: ``step_grads_hessian`` (compiled gradient + Hessian),
    ``step_hessian`` (its Hessian part: weights and the n d^2 Gram product),
    ``step_update`` (compiled VITS-II update), ``step`` (a whole compiled step: the round is
    one compiled body, so the parts, each timed through its own Python call, add up to
    more), ``numpy_step_gram`` (NumPy's Gram product line alone) and ``numpy_step`` (a
    whole NumPy step).
    """
    X, y = logistic_problem(dim, n_obs, seed)
    eng = logistic_engine(X, y, seed=seed)
    lib, ref = EngineRound(eng), NumpyRound(eng)
    lib()  # compile (or load the cache) outside the timing
    K = eng.n_steps
    gh, g_only, update, _ = _step_parts(eng)
    update()
    w = np.random.default_rng(3).random(n_obs) * 0.25
    t_ref, t_lib, t_gh, t_g, t_up, t_gram = median_times(
        [ref, lib, gh, g_only, update, lambda: X.T @ (w[:, None] * X)], repeats)
    us = 1e6
    return {"numpy": us * t_ref, "compiled": us * t_lib, "ratio": t_ref / t_lib,
            "step_grads_hessian": us * t_gh, "step_hessian": us * (t_gh - t_g),
            "step_update": us * t_up, "step": us * t_lib / K,
            "numpy_step": us * t_ref / K, "numpy_step_gram": us * t_gram,
            "n_steps": K, "dim": dim, "n_obs": n_obs}


def mlp_round_stats(n_obs=1000, input_dim=20, hidden=(20, 20), repeats=3, seed=0):
    """MLP VITS-II round (10 steps, one draw each): library vs NumPy, and the parts.

    Returns a dict of seconds per round (``numpy``, ``compiled``) and their ``ratio``;
    per-step seconds: ``step_gauss_newton`` (the Hessian part of the compiled
    ``grads_hessian``: Jacobian rows and ``J^T J`` by dsyrk), ``step_grads`` (forward and
    back-propagation only), ``step_update`` (compiled VITS-II update), ``step_products``
    (the update's three d x d x d products alone, by SciPy's dgemm: ``C^T C``, ``H B``,
    ``C (C^T C - H)``); and the fractions of the compiled round spent in the products
    (``frac_products``), in the Gauss-Newton matrix (``frac_gauss_newton``) and in the
    update (``frac_update``). Raises NotImplementedError when ``vits_ref.models.MLP``
    cannot be imported.
    """
    X, r = mlp_problem(input_dim, n_obs, seed)
    eng = mlp_engine(X, r, hidden=hidden, seed=seed)
    lib, ref = EngineRound(eng), NumpyRound(eng)
    lib()  # compile (or load the cache) outside the timing
    K = eng.n_steps
    gh, g_only, update, (_, _, H, _, B, C) = _step_parts(eng)
    update()
    D = C.T @ C - H
    Ct, Bt, Dt = C.T, B.T, D.T  # F-ordered views: dgemm reads them without copies
    out = np.empty_like(Ct)          # F-ordered: written in place, as the kernel's scratch

    def products():  # the update's three products, by BLAS dgemm
        dgemm(1.0, Ct, Ct, trans_b=1, c=out, overwrite_c=1)   # C^T C
        dgemm(1.0, Bt, H, c=out, overwrite_c=1)               # (H B)^T, H symmetric
        dgemm(1.0, Dt, Ct, c=out, overwrite_c=1)              # (C D)^T

    t_ref, t_lib, t_gh, t_g, t_up, t_prod = median_times(
        [ref, lib, gh, g_only, update, products], repeats)
    return {"numpy": t_ref, "compiled": t_lib, "ratio": t_ref / t_lib,
            "step_gauss_newton": t_gh - t_g, "step_grads": t_g, "step_update": t_up,
            "step_products": t_prod, "frac_products": K * t_prod / t_lib,
            "frac_gauss_newton": K * (t_gh - t_g) / t_lib, "frac_update": K * t_up / t_lib,
            "n_steps": K, "dim": eng.dim, "n_obs": n_obs}


def irls_problem(dim=20, n_obs=1000, seed=0):
    """``(X, y, P0, b0)``: the unpenalised logistic MLE (``P0 = 0``) on :func:`logistic_problem`."""
    X, y = logistic_problem(dim, n_obs, seed)
    return X, y, np.zeros((dim, dim)), np.zeros(dim)


def irls_compiled(X, y, P0, b0, tol=1e-8, max_iter=100, eta=1.0):
    """The compiled IRLS from ``theta = 0``: ``(status, iterations, theta, H)``.

    ``cpu.newton`` on the logistic potential's likelihood (``lam = 0``, no prior in the
    potential) plus the prior term ``1/2 theta^T P0 theta - b0^T theta``, as
    :class:`vits_ref.Laplace` runs it.
    """
    n, d = X.shape
    data = (X, y, float(eta), 0.0, False, np.zeros((1, 1)), np.zeros(1))
    scratch = potential_scratch(n, d)
    theta, H, L = np.zeros(d), np.empty((d, d)), np.empty((d, d))
    status, it = cpu.newton(klog.POTENTIAL)(data, P0, b0, theta, tol, max_iter, H, L, scratch)
    return status, it, theta, H


def irls_stats(dim=20, n_obs=1000, repeats=15, seed=0):
    """IRLS to convergence (unpenalised logistic MLE): compiled vs NumPy vs statsmodels.

    Both vits_ref versions start at ``theta = 0`` with ``tol = 1e-8``; statsmodels'
    ``GLM(y, X, family=Binomial()).fit()`` runs its own IRLS with its defaults (deviance
    change ``tol = 1e-8``). Returns microseconds: ``compiled``, ``numpy``, ``statsmodels``
    (``fit()`` only, the model built outside the timing) and ``statsmodels_build_fit``
    (``GLM(...)`` and ``fit()``), the ratios ``ratio_numpy`` and ``ratio_statsmodels``
    (statsmodels / compiled, fit only), the iteration counts and the largest coefficient
    difference. The statsmodels entries are None when it is not installed.
    """
    X, y, P0, b0 = irls_problem(dim, n_obs, seed)
    status, it, theta, _ = irls_compiled(X, y, P0, b0)  # compile outside the timing
    if status != CONVERGED:
        raise RuntimeError(f"IRLS did not converge (status {status})")
    fns = [lambda: irls_compiled(X, y, P0, b0),
           lambda: reference.logistic.irls(X, y, 1.0, P0, b0, np.zeros(dim))]
    try:
        import statsmodels.api as sm
    except ImportError:
        sm = None
    if sm is not None:
        family = sm.families.Binomial()
        glm = sm.GLM(y, X, family=family)
        res = glm.fit()
        fns += [glm.fit, lambda: sm.GLM(y, X, family=family).fit()]
    times = median_times(fns, repeats)
    us = [1e6 * t for t in times]
    out = {"compiled": us[0], "numpy": us[1], "ratio_numpy": times[1] / times[0],
           "iterations": it, "statsmodels": None, "statsmodels_build_fit": None,
           "ratio_statsmodels": None, "statsmodels_iterations": None,
           "max_abs_diff_statsmodels": None, "dim": dim, "n_obs": n_obs}
    if sm is not None:
        out.update(statsmodels=us[2], statsmodels_build_fit=us[3],
                   ratio_statsmodels=times[2] / times[0],
                   statsmodels_iterations=int(res.fit_history["iteration"]),
                   max_abs_diff_statsmodels=float(np.max(np.abs(res.params - theta))))
    return out


# --------------------------------------------------------------------------- report


def main(quick=False):
    """Print the non-linear section of ``python -m vits_ref bench``."""
    threads = ", ".join(f"{k} {v}" for k, v in blas_threads().items())
    print(f"non-linear models: medians of interleaved calls; VITS-II, 10 inner steps, one "
          f"draw per step; BLAS threads: "
          f"{threads}")
    s = logistic_round_stats(repeats=7 if quick else 21)
    print(f"logistic VITS-II round d={s['dim']}, n={s['n_obs']}: NumPy {s['numpy']:7.1f} us, "
          f"compiled {s['compiled']:7.1f} us, ratio {ratio_text(s['ratio'])}")
    print(f"  per step: compiled grads+Hessian {s['step_grads_hessian']:5.1f} us (Hessian "
          f"part {s['step_hessian']:5.1f}), update {s['step_update']:4.1f} us (each timed "
          f"alone), whole step {s['step']:4.1f} us; NumPy step {s['numpy_step']:5.1f} us, of "
          f"which the Gram product line {s['numpy_step_gram']:5.1f} us")
    if mlp_available() is None:
        print("MLP VITS-II round: skipped (vits_ref.models.MLP not available)")
    else:
        for n in ((100,) if quick else (100, 1000)):
            m = mlp_round_stats(n_obs=n, repeats=2 if quick else 3)
            print(f"MLP VITS-II round d={m['dim']}, n={n}: NumPy {m['numpy']:6.3f} s, compiled "
                  f"{m['compiled']:6.3f} s, ratio {ratio_text(m['ratio'])}; of the "
                  f"compiled round: three d^3 products {100 * m['frac_products']:4.1f}%, "
                  f"Gauss-Newton J^T J {100 * m['frac_gauss_newton']:4.1f}%, whole update "
                  f"{100 * m['frac_update']:4.1f}%")
    i = irls_stats(repeats=7 if quick else 21)
    line = (f"IRLS to convergence d={i['dim']}, n={i['n_obs']} (unpenalised): compiled "
            f"{i['compiled']:7.1f} us ({i['iterations']} Newton steps), NumPy {i['numpy']:7.1f} "
            f"us (ratio {ratio_text(i['ratio_numpy'])})")
    if i["statsmodels"] is None:
        print(line + "; statsmodels not installed")
    else:
        print(line + f"; statsmodels GLM fit {i['statsmodels']:7.1f} us "
              f"({i['statsmodels_iterations']} iterations; with GLM() "
              f"{i['statsmodels_build_fit']:7.1f} us), statsmodels / compiled "
              f"{ratio_text(i['ratio_statsmodels'], other='statsmodels')}, max |coef diff| "
              f"{i['max_abs_diff_statsmodels']:.1e}")
