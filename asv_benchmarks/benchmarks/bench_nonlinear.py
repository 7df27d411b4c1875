"""Non-linear models: logistic and MLP VITS-II rounds, IRLS to convergence.

Every figure compares the library's path with a plain NumPy implementation of the same
algorithm (``vits_ref.reference``, which ``tests/test_reference.py`` checks computes the
same numbers; the helpers are ``vits_ref._bench.nonlinear``), run in the same process:

- Logistic VITS-II round: ``VITS(20, model="logistic", variant="II")`` with ``n_obs``
  observations in its history; one round = the engine's ``_refit`` (the inner steps of one
  ``update``): 10 steps, one draw per step, each a compiled gradient + Hessian
  (``X^T diag(sigmoid'(X theta)) X``, an n d^2 Gram product, recomputed every step because
  its weights depend on the draw) and a compiled VITS-II update. The state is restored
  before each call (per step = time / 10). Goal (d = 20, n = 1000): ratio >= 10.
- MLP VITS-II round: ``VITS(861, model=MLP(20, hidden=(20, 20)))``, 10 steps of the
  Gauss-Newton ``eta (J^T J + lam I)`` at the draw (n d^2, dsyrk) and the VITS-II update
  (three 861 x 861 products: ``C^T C``, ``H B``, ``C (C^T C - H)``). A round takes about a
  second, so ``number = 1`` and few repeats. Goal: ratio >= 5; the ``track_fraction_*``
  figures say where the compiled round's time goes.
- IRLS: ``vits_ref.drivers.cpu.newton`` on the logistic potential (Newton form of IRLS
  with step halving, tol 1e-8) from ``theta = 0`` to convergence on the unpenalised
  logistic MLE, d = 20, n = 1000, against the same iteration in NumPy and statsmodels'
  ``GLM(y, X, family=Binomial()).fit()`` (its IRLS, its defaults; ``fit()`` only, the model
  built in ``setup``). Goal: ``track_ratio_irls_vs_statsmodels`` >= 1. Skipped without
  statsmodels.

MLP benchmarks are skipped (``NotImplementedError`` in ``setup``) when
``vits_ref.models.MLP`` cannot be imported.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vits_ref import reference  # noqa: E402
from vits_ref._bench import nonlinear as bn  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

LOGISTIC_DIM = 20
LOGISTIC_N = (100, 1000)
MLP_N = (100, 1000)
IRLS_DIM, IRLS_N = 20, 1000


_single_thread = single_thread


def _require_mlp():
    if bn.mlp_available() is None:
        raise NotImplementedError("vits_ref.models.MLP is not available")


# --------------------------------------------------------------------------- logistic


class TimeLogisticRound:
    """One logistic VITS-II round (10 steps), d = 20: compiled engine vs NumPy.

    Per step = time / 10. ``time_compiled`` includes restoring the state (O(d^2)).
    """

    params = (LOGISTIC_N,)
    param_names = ["n_obs"]
    timeout = TIMEOUT

    def setup(self, n_obs):
        _single_thread()
        X, y = bn.logistic_problem(LOGISTIC_DIM, n_obs)
        eng = bn.logistic_engine(X, y)
        self.compiled, self.reference = bn.EngineRound(eng), bn.NumpyRound(eng)
        self.compiled()  # compile (or load the cache) untimed

    def time_compiled(self, n_obs):
        """``VITS._refit``: 10 steps of compiled grads/Hessian + update."""
        self.compiled()

    def time_reference(self, n_obs):
        """The same 10 steps in NumPy (``vits_ref.reference.vits_ii_round``)."""
        self.reference()


class TrackLogisticRound:
    """NumPy / compiled per logistic round (d = 20, n = 1000), interleaved medians of 21.

    ``track_fraction_hessian``: share of the compiled round spent on the Hessian (weights
    and the n d^2 Gram product) at the 10 draws. Goal: ratio >= 10.
    """

    timeout = TIMEOUT

    def setup_cache(self):
        _single_thread()
        return bn.logistic_round_stats(LOGISTIC_DIM, 1000, repeats=21)

    def track_ratio_logistic_vits_ii_round(self, stats):
        return stats["ratio"]

    track_ratio_logistic_vits_ii_round.unit = "ratio"

    def track_logistic_round_us(self, stats):
        return stats["compiled"]

    track_logistic_round_us.unit = "us"

    def track_fraction_hessian(self, stats):
        return stats["n_steps"] * stats["step_hessian"] / stats["compiled"]

    track_fraction_hessian.unit = "fraction"


# --------------------------------------------------------------------------- MLP


class TimeMLPRound:
    """One MLP VITS-II round (861 parameters, 10 steps): compiled engine vs NumPy.

    About a second per call: one call per sample, three samples at most. Per step =
    time / 10.
    """

    params = (MLP_N,)
    param_names = ["n_obs"]
    timeout = 600
    number = 1
    repeat = (1, 3, 10.0)
    rounds = 1
    warmup_time = 0.0

    def setup(self, n_obs):
        _require_mlp()
        _single_thread()
        X, r = bn.mlp_problem(20, n_obs)
        eng = bn.mlp_engine(X, r)
        self.compiled, self.reference = bn.EngineRound(eng), bn.NumpyRound(eng)
        self.compiled()  # compile (or load the cache) untimed

    def time_compiled(self, n_obs):
        """``VITS._refit``: 10 steps of compiled gradient + Gauss-Newton + update."""
        self.compiled()

    def time_reference(self, n_obs):
        """The same 10 steps in NumPy (``vits_ref.reference.mlp.grads_gauss_newton``)."""
        self.reference()


class TrackMLPRound:
    """MLP VITS-II round: ratio, seconds, and where the compiled round's time goes.

    ``vits_ref._bench.nonlinear.mlp_round_stats`` (interleaved medians of 3), computed once for all
    ``n_obs`` in ``setup_cache``. ``track_fraction_dxd_products``: 10 x (the three d x d
    products timed alone in NumPy, ``C^T C`` by dsyrk) / compiled round;
    ``track_fraction_gauss_newton``: 10 x (the Hessian part of the compiled
    ``grads_hessian``: Jacobian rows and ``J^T J``) / compiled round. Goal: ratio >= 5.
    """

    params = (MLP_N,)
    param_names = ["n_obs"]
    timeout = 600

    def setup_cache(self):
        if bn.mlp_available() is None:
            return {}
        _single_thread()
        return {n: bn.mlp_round_stats(n_obs=n, repeats=3) for n in MLP_N}

    def setup(self, stats, n_obs):
        _require_mlp()
        if n_obs not in stats:
            raise NotImplementedError("no MLP statistics")

    def track_ratio_mlp_vits_ii_round(self, stats, n_obs):
        return stats[n_obs]["ratio"]

    track_ratio_mlp_vits_ii_round.unit = "ratio"

    def track_mlp_round_seconds(self, stats, n_obs):
        return stats[n_obs]["compiled"]

    track_mlp_round_seconds.unit = "seconds"

    def track_fraction_dxd_products(self, stats, n_obs):
        return stats[n_obs]["frac_products"]

    track_fraction_dxd_products.unit = "fraction"

    def track_fraction_gauss_newton(self, stats, n_obs):
        return stats[n_obs]["frac_gauss_newton"]

    track_fraction_gauss_newton.unit = "fraction"


# --------------------------------------------------------------------------- IRLS


class TimeIRLS:
    """IRLS to convergence from theta = 0, d = 20, n = 1000 (unpenalised logistic MLE)."""

    timeout = TIMEOUT

    def setup(self):
        _single_thread()
        self.X, self.y, self.P0, self.b0 = bn.irls_problem(IRLS_DIM, IRLS_N)
        bn.irls_compiled(self.X, self.y, self.P0, self.b0)  # compile (or load the cache)

    def time_irls_compiled(self):
        """``cpu.newton(logistic POTENTIAL)`` (7 Newton steps on this problem)."""
        bn.irls_compiled(self.X, self.y, self.P0, self.b0)

    def time_irls_numpy(self):
        """The same iteration in NumPy (``vits_ref.reference.logistic.irls``)."""
        reference.logistic.irls(self.X, self.y, 1.0, self.P0, self.b0, np.zeros(IRLS_DIM))


class TimeIRLSStatsmodels:
    """statsmodels ``GLM(y, X, family=Binomial()).fit()`` on the same data (skipped if absent)."""

    timeout = TIMEOUT

    def setup(self):
        try:
            import statsmodels.api as sm
        except ImportError as exc:
            raise NotImplementedError("statsmodels is not installed") from exc
        _single_thread()
        X, y, _, _ = bn.irls_problem(IRLS_DIM, IRLS_N)
        self.glm = sm.GLM(y, X, family=sm.families.Binomial())
        self.glm.fit()  # the first fit imports and caches (hundreds of ms): untimed

    def time_irls_statsmodels(self):
        """``GLM.fit()``: statsmodels' IRLS with its defaults (deviance tol 1e-8)."""
        self.glm.fit()


class TrackIRLS:
    """NumPy / compiled for IRLS to convergence, same iteration, interleaved medians of 21.

    ``vits_ref._bench.nonlinear.irls_stats``; also the number of Newton steps taken.
    """

    timeout = TIMEOUT

    def setup_cache(self):
        _single_thread()
        return bn.irls_stats(IRLS_DIM, IRLS_N, repeats=21)

    def track_ratio_irls_vs_numpy(self, stats):
        return stats["ratio_numpy"]

    track_ratio_irls_vs_numpy.unit = "ratio"

    def track_irls_iterations(self, stats):
        return stats["iterations"]

    track_irls_iterations.unit = "steps"


class TrackIRLSStatsmodels:
    """statsmodels ``GLM.fit()`` / compiled IRLS, interleaved medians of 21 (goal >= 1).

    Skipped without statsmodels.
    """

    timeout = TIMEOUT
    unit = "ratio"

    def setup_cache(self):
        _single_thread()
        return bn.irls_stats(IRLS_DIM, IRLS_N, repeats=21)

    def setup(self, stats):
        if stats["ratio_statsmodels"] is None:
            raise NotImplementedError("statsmodels is not installed")

    def track_ratio_irls_vs_statsmodels(self, stats):
        return stats["ratio_statsmodels"]
