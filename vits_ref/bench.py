"""Speed ratios against the plain NumPy reference, measured in one process.

``python -m vits_ref bench`` prints them (the asv suite in ``asv_benchmarks/`` tracks the
same quantities over commits). Set ``OPENBLAS_NUM_THREADS=1`` for single-thread figures;
the command sets Numba's thread count itself. Each figure is the median of interleaved
repeats, so the machine's drift affects both sides alike.
"""

import ctypes
import os
import subprocess
import sys
import time

import numba
import numpy as np

from . import reference
from ._seeding import child
from .envs import pool
from .kernels import bandit as kb
from .simulate import _fused_spec, draw_policy_noise, make_policy


def problem(policy, n_rounds=1000, dim=20, n_arms=50, zeta=0.1, seed=0, n_runs=1):
    """Arrays of ``n_runs`` runs of ``policy`` (a name) on the pool environment."""
    env = pool(dim=dim, n_arms=n_arms, zeta=zeta, seed=seed)
    spec = _fused_spec(make_policy(policy, dim))
    root = np.random.SeedSequence(seed)
    runs = []
    for r in range(n_runs):
        rs = child(root, r)
        real = env.realise(n_rounds, np.random.Generator(np.random.PCG64(child(rs, 0))))
        runs.append((real.contexts, real.means, real.rewards)
                    + draw_policy_noise(spec, child(rs, 1), n_rounds, dim))
    return spec, runs


def _args(spec):
    return (spec["policy"], spec["variant"], spec["symmetrize"], spec["schedule"], spec["eta"],
            spec["lam"], spec["h0_mu"], spec["h0"], spec["ucb_alpha"])


def run_compiled(spec, run, kl_rounds=None):
    """The fused loop on one run's arrays; returns the regret."""
    T = run[0].shape[0]
    kl_rounds = np.zeros(0, np.int64) if kl_rounds is None else kl_rounds
    regret, arms, kl = np.empty(T), np.empty(T, np.int64), np.zeros(kl_rounds.size)
    status = kb.run_one(*_args(spec), *run, kl_rounds, regret, arms, kl)
    if status:
        raise FloatingPointError(f"diverged at round {status}")
    return regret


def run_many_compiled(spec, runs):
    """The prange driver over the stacked runs."""
    R, T = len(runs), runs[0][0].shape[0]
    stacked = [np.stack([run[i] for run in runs]) for i in range(6)]
    regret, arms = np.empty((R, T)), np.empty((R, T), np.int64)
    kl, status = np.zeros((R, 0)), np.zeros(R, np.int64)
    kb.run_many(*_args(spec), *stacked, np.zeros(0, np.int64), regret, arms, kl, status)
    return regret


_SET_THREADS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
                "scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_")
_GET_THREADS = tuple(name.replace("set_", "get_") for name in _SET_THREADS)


def _loaded_openblas():
    """Paths of the OpenBLAS libraries loaded in this process (Linux; else empty)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def blas_threads():
    """``{library: threads}`` of every loaded OpenBLAS (NumPy's and SciPy's are separate)."""
    out = {}
    for path in _loaded_openblas():
        lib = ctypes.CDLL(path)
        for name in _GET_THREADS:
            if hasattr(lib, name):
                out[os.path.basename(path)] = int(getattr(lib, name)())
                break
    return out


def pin_blas_threads(n=1):
    """Set the thread count of every loaded OpenBLAS at run time; returns :func:`blas_threads`.

    ``OPENBLAS_NUM_THREADS`` is read once, when a library is loaded: a process that
    imported NumPy before the variable was set (asv 0.6's runner does, through pympler)
    keeps a multi-threaded NumPy BLAS, which slows the small products of the NumPy
    references and statsmodels on a busy machine. SciPy's OpenBLAS (the one the compiled
    kernels call) is a separate library with its own count; both are set here.
    """
    for path in _loaded_openblas():
        lib = ctypes.CDLL(path)
        for name in _SET_THREADS:
            if hasattr(lib, name):
                getattr(lib, name)(int(n))
                break
    return blas_threads()



def median_times(fns, repeats):
    """Median seconds of each function, calls interleaved so drift hits all alike."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def round_ratio(policy, n_rounds_ref=200, n_rounds=1000, repeats=7, **kw):
    """(us per round NumPy reference, us per round compiled, ratio) for a named policy."""
    spec, (run,) = problem(policy, n_rounds=n_rounds, **kw)
    ref_run = tuple(a[:n_rounds_ref] for a in run[:3]) + (run[3],) + tuple(
        a[:n_rounds_ref] for a in run[4:])
    run_compiled(spec, run)  # compile outside the timing
    t_ref, t_jit = median_times([lambda: reference.linear_bandit_run(spec, *ref_run),
                                  lambda: run_compiled(spec, run)], repeats)
    us_ref, us_jit = 1e6 * t_ref / n_rounds_ref, 1e6 * t_jit / n_rounds
    return us_ref, us_jit, us_ref / us_jit


def parallel_speedup(policy="vits-ii", n_runs=8, n_rounds=500, repeats=3):
    """(seconds on 1 thread, seconds on all threads, speed-up) of the prange driver."""
    spec, runs = problem(policy, n_rounds=n_rounds, n_runs=n_runs)
    n_max = numba.config.NUMBA_NUM_THREADS
    run_many_compiled(spec, runs)
    out = []
    for n in (1, n_max):
        numba.set_num_threads(n)
        out.append(median_times([lambda: run_many_compiled(spec, runs)], repeats)[0])
    numba.set_num_threads(n_max)
    return out[0], out[1], out[0] / out[1], n_max


def import_and_compile_times():
    """Seconds: ``import vits_ref``; first fused call with a warm cache; with no cache."""
    code = ("import time; t=time.perf_counter(); import vits_ref; print(time.perf_counter()-t);"
            "from vits_ref import bench; s, (r,) = bench.problem('vits-ii', n_rounds=5);"
            "t=time.perf_counter(); bench.run_compiled(s, r); print(time.perf_counter()-t)")
    out = {}
    for label, cache in (("warm cache", "1"), ("cold, no cache", "0")):
        env = {**os.environ, "VITS_REF_CACHE": cache}
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True)
        imp, first = (float(x) for x in res.stdout.split())
        out[label] = (imp, first)
    return out


def main(quick=False):
    """Print the ratios the foundation issue asks for."""
    numba.set_num_threads(1)
    print(f"numba {numba.__version__}, numpy {np.__version__}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
          f"numba threads 1 (pool env, d=20, K=50, 10 inner steps, zeta=0.1)")
    repeats = 3 if quick else 7
    for name in ("vits-ii", "lints", "vits-i", "vits-hf", "lmc", "linucb"):
        us_ref, us_jit, ratio = round_ratio(name, repeats=repeats)
        print(f"{name:8s} round: NumPy reference {us_ref:8.1f} us, compiled {us_jit:7.2f} us, "
              f"ratio {ratio:6.1f}x")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    t1, tn, sp, n = parallel_speedup(repeats=2 if quick else 3)
    print(f"prange over 8 VITS-II runs: 1 thread {t1:.3f} s, {n} threads {tn:.3f} s, "
          f"speed-up {sp:.2f}x")
    for label, (imp, first) in import_and_compile_times().items():
        print(f"import vits_ref {imp:.2f} s; first fused call ({label}) {first:.2f} s")

    # -- non-linear models (issue 3): logistic / MLP VITS-II rounds, IRLS -----------------
    # (vits_ref/bench_nonlinear.py; the asv module is asv_benchmarks/benchmarks/bench_nonlinear.py)
    from .bench_nonlinear import main as nonlinear_main

    numba.set_num_threads(1)
    nonlinear_main(quick=quick)
