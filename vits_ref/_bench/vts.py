"""One VTS CAVI round, compiled against the plain-NumPy reference, in one process.

The round is what :class:`vits_ref.VTS` does after an observation: the played arm has
``t = 500`` observations (``K = 2`` experts, ``d = 2``: scenario B's arm 1,
``0.3 N(x (0, 0), 1) + 0.7 N(x (3, 3), 1)``, contexts ``U(0, 1)^2``), and CAVI runs from
the factors converged on the first 499 (the warm start) until the ELBO's relative
improvement is at most ``1e-5`` (:data:`vits_ref.inference.vts.DEFAULT_TOL`). Both sides run the
same iterations (checked) from the same factors:

- compiled: :func:`vits_ref.drivers.cpu.cavi_fit` (kernels/cavi.py), called from Python
  on kept buffers as the policy calls it (the call's overhead, about 4 us, included);
- NumPy: :func:`vits_ref.reference.cavi.cavi`, whole-array operations over the
  observations, SciPy's digamma and log-sum-exp, explicit inverses.

A second figure times a fixed 20 iterations from the prior (the per-iteration cost, no
stopping rule). Medians of interleaved calls (:func:`vits_ref._bench.timing.median_times`),
one Numba thread. ``python -m vits_ref._bench.vts`` prints them.
"""

import numpy as np

from .._threads import numba_threads
from ..drivers import cpu
from ..inference.vts import DEFAULT_MAX_ITER, DEFAULT_TOL, _covariance, _factors, _Prior
from ..reference import cavi as ref
from .timing import median_times, pin_blas_threads, ratio_text


def problem(n=500, d=2, K=2, seed=0, tol=DEFAULT_TOL):
    """The round's data and warm start; a dict with ``X``, ``y``, ``prior`` (kernel tuple),
    ``prior_ref`` (the reference's dict), ``warm`` (kernel factors), ``warm_ref``, ``tol``."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    z = rng.random(n) < 0.3
    y = np.where(z, 0.0, X @ np.full(d, 3.0)) + rng.standard_normal(n)
    prior = _Prior(d, K, 1.0, None, None, 1.0, 1.0, "spread")
    fac, st = _factors(1, K, d)
    fac, st = tuple(a[0] for a in fac), tuple(a[0] for a in st)
    cpu.cavi_init()(prior.kernel, fac, st)
    resp, trace = np.empty((n, K)), np.empty(10_000)
    # the previous round: the first n - 1 observations, converged
    cpu.cavi_fit()(X, y, n - 1, prior.kernel, fac, st, resp, 1e-12, 10_000, trace)
    warm_ref = {"gamma": fac[0].copy(), "u": fac[1].copy(), "V": _covariance(fac[2]),
                "alpha": fac[3].copy(), "beta": fac[4].copy()}
    prior_ref = ref.vts_prior(d, K)
    return {"X": X, "y": y, "prior": prior.kernel, "prior_ref": prior_ref,
            "warm": tuple(a.copy() for a in fac), "warm_ref": warm_ref, "tol": tol, "K": K}


def round_compiled(p, tol=None, max_iter=DEFAULT_MAX_ITER, from_prior=False):
    """One round with the compiled driver on buffers kept between calls (as the policy
    keeps its own): restore the warm start (five small copies, timed too), then CAVI.
    Returns the iterations."""
    X, y = p["X"], p["y"]
    if "buffers" not in p:
        n, d = X.shape
        fac, st = _factors(1, p["K"], d)
        p["buffers"] = (tuple(a[0] for a in fac), tuple(a[0] for a in st),
                        np.empty((n, p["K"])), np.empty(10_000))
    fac, st, resp, trace = p["buffers"]
    if from_prior:
        cpu.cavi_init()(p["prior"], fac, st)
    else:
        for dst, src in zip(fac, p["warm"], strict=True):
            np.copyto(dst, src)
    it, _, ok = cpu.cavi_fit()(X, y, X.shape[0], p["prior"], fac, st, resp,
                               p["tol"] if tol is None else tol, max_iter, trace)
    assert ok
    return it


def round_numpy(p, tol=None, max_iter=DEFAULT_MAX_ITER, from_prior=False):
    """The same round with the NumPy reference; returns the iterations."""
    _, _, trace = ref.cavi(p["X"], p["y"], p["prior_ref"],
                           factors=None if from_prior else p["warm_ref"],
                           tol=p["tol"] if tol is None else tol, max_iter=max_iter)
    return len(trace)


def measure(repeats=30, n=500):
    """``{"iterations", "compiled_s", "numpy_s", "ratio", "per_iteration": {...}}``."""
    p = problem(n=n)
    it_c, it_n = round_compiled(p), round_numpy(p)  # compiles (or loads the cache)
    if it_c != it_n:
        raise AssertionError(f"compiled and NumPy rounds ran {it_c} and {it_n} iterations")
    pin_blas_threads(1)
    with numba_threads(1):
        tc, tn = median_times([lambda: round_compiled(p), lambda: round_numpy(p)], repeats)
        fixed = 20
        ic, inp = median_times([lambda: round_compiled(p, 0.0, fixed, True),
                                lambda: round_numpy(p, 0.0, fixed, True)],
                               max(3, repeats // 5))
    return {"n": n, "iterations": it_c, "compiled_s": tc, "numpy_s": tn, "ratio": tn / tc,
            "per_iteration": {"compiled_s": ic / fixed, "numpy_s": inp / fixed,
                              "ratio": inp / ic}}


def main(quick=False):
    """Print the compiled-against-NumPy ratio of one CAVI round (K = 2, d = 2, t = 500)."""
    m = measure(repeats=10 if quick else 40)
    print("VTS: one CAVI round (K = 2, d = 2, t = 500 observations, warm start, tol 1e-5), "
          "one thread")
    print(f"  iterations (both)          {m['iterations']:d}")
    print(f"  compiled (kernels/cavi.py) {1e6 * m['compiled_s']:9.1f} us")
    print(f"  NumPy reference            {1e6 * m['numpy_s']:9.1f} us")
    print(f"  ratio NumPy / compiled     {ratio_text(m['ratio'], '9.1f')}")
    pi = m["per_iteration"]
    print(f"  per iteration (20 from the prior): compiled {1e6 * pi['compiled_s']:.1f} us, "
          f"NumPy {1e6 * pi['numpy_s']:.1f} us, ratio {ratio_text(pi['ratio'], '.1f')}")
    return m


if __name__ == "__main__":
    main()
