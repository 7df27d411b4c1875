"""Linear-bandit rounds: the fused compiled loop against the NumPy reference and the floor.

Pool environment (``vits_ref.envs.pool``), the policies' documented defaults, one run.
The compiled side is the fused loop of :func:`vits_ref.drivers.cpu.bandit_run` over the
policy's piece; the NumPy side is :func:`vits_ref.reference.linear_bandit_run` on the same
pre-drawn arrays (``tests/test_simulate.py`` checks they give the same regret).

The floor of a VITS-II round (:func:`floor_rounds`) is the BLAS work the algorithm cannot
avoid: per inner step three d x d products (``C^T C``, ``A B``, ``C (C^T C - A)``), and
scoring the K arms (one (K, d) x (d,) product), each ``np.dot`` into a preallocated
buffer inside one compiled function, as :func:`vits_ref.kernels.linalg.gemm_nn` makes
them. ``compiled round / floor`` says how far the fused loop is from it (docs/performance.md:
the products are about half of the round).
"""

import os
import subprocess
import sys

import numba
import numpy as np

from .. import reference
from .._seeding import env_rng, policy_seed, run_seeds
from .._threads import numba_threads
from ..bandit.simulate import draw_policy_noise, fused_spec, make_policy
from ..config import cpu_jit
from ..drivers import cpu
from ..envs import pool
from .timing import median_times, ratio_text

#: the policies of the linear section of ``python -m vits_ref bench``, in print order
POLICIES = ("vits-ii", "lints", "vits-i", "vits-hf", "lmc", "linucb")


def problem(policy, n_rounds=1000, dim=20, n_arms=50, zeta=0.1, seed=0, n_runs=1,
            **overrides):
    """``(spec, runs)``: ``n_runs`` runs of ``policy`` (a name, with ``overrides`` of its
    defaults) on the pool environment.

    ``spec`` is the policy's :class:`vits_ref.drivers.fused.FusedSpec`; each run is the tuple
    ``(contexts, means, rewards, init_noise, sel_noise, step_noise)`` that the fused loop
    and the NumPy reference consume.
    """
    env = pool(dim=dim, n_arms=n_arms, zeta=zeta, seed=seed)
    spec = fused_spec(make_policy(policy, dim, **overrides))
    runs = []
    for rs in run_seeds(seed, 0, n_runs):
        real = env.realise(n_rounds, env_rng(rs))
        runs.append((real.contexts, real.means, real.rewards)
                    + draw_policy_noise(spec, policy_seed(rs), n_rounds, dim))
    return spec, runs


def run_compiled(spec, run, kl_rounds=None):
    """The fused loop on one run's arrays; returns the regret (T,)."""
    T = run[0].shape[0]
    kl_rounds = np.zeros(0, np.int64) if kl_rounds is None else kl_rounds
    regret, arms, kl = np.empty(T), np.empty(T, np.int64), np.zeros(kl_rounds.size)
    status = cpu.bandit_run(spec.piece)(spec.params, *run, kl_rounds, regret, arms, kl)
    if status:
        raise FloatingPointError(f"diverged at round {status}")
    return regret


def stack_runs(runs):
    """The six per-run arrays of ``runs``, each stacked with the runs on the leading axis."""
    return [np.stack([run[i] for run in runs]) for i in range(6)]


def run_many_compiled(spec, runs, stacked=None):
    """The ``prange`` driver over the runs (``stacked``: :func:`stack_runs`, if at hand)."""
    stacked = stack_runs(runs) if stacked is None else stacked
    R, T = stacked[0].shape[:2]
    regret, arms = np.empty((R, T)), np.empty((R, T), np.int64)
    kl, status = np.zeros((R, 0)), np.zeros(R, np.int64)
    cpu.bandit_runs(spec.piece)(spec.params, *stacked, np.zeros(0, np.int64), regret, arms,
                                kl, status)
    if status.any():
        raise FloatingPointError(f"a run diverged (status {status.tolist()})")
    return regret


# --------------------------------------------------------------------------- the floor


@cpu_jit
def floor_rounds(A, B, C, P, contexts, theta, scores, n_steps):
    """The BLAS work of ``contexts.shape[0]`` VITS-II rounds and nothing else.

    Per round: ``n_steps`` x three d x d products into the (3, d, d) buffer ``P``
    (``C^T C``, ``A B``, ``C (C^T C - A)`` in size), then the arms' scores
    ``contexts[t] @ theta``. Each is ``np.dot`` with an ``out`` buffer, as the kernels'
    :func:`~vits_ref.kernels.linalg.gemm_nn` and ``gemv`` compile on the CPU.
    """
    for t in range(contexts.shape[0]):
        for _ in range(n_steps):
            np.dot(C, C, P[0])
            np.dot(A, B, P[1])
            np.dot(C, P[0], P[2])
        np.dot(contexts[t], theta, scores)


def floor_call(contexts, n_steps, seed=0):
    """A callable that runs :func:`floor_rounds` over the rounds of ``contexts`` (T, K, d).

    The operands are fixed, well-scaled random matrices (BLAS time does not depend on
    the values; nothing is fed back, so nothing grows). Compiles on the first call.
    """
    T, K, d = contexts.shape
    rng = np.random.default_rng(seed)
    A, B, C = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    P, theta, scores = np.empty((3, d, d)), rng.standard_normal(d), np.empty(K)

    def call():
        floor_rounds(A, B, C, P, contexts, theta, scores, n_steps)

    return call


# --------------------------------------------------------------------------- ratios


def round_stats(policy, n_rounds_ref=200, n_rounds=1000, repeats=7, floor=False, **kw):
    """Microseconds per round of the NumPy reference and the fused loop, and their ratio.

    The reference runs the first ``n_rounds_ref`` rounds, the fused loop all
    ``n_rounds``; calls are interleaved (:func:`~.timing.median_times`). With ``floor``
    (for the VITS policies) :func:`floor_rounds` over the same ``n_rounds`` contexts, with
    the policy's number of inner steps, joins the interleaving. ``kw`` goes to
    :func:`problem`. Returns a dict: ``numpy``, ``compiled``, ``ratio`` (NumPy / compiled)
    and, with ``floor``, ``floor`` and ``floor_ratio`` (compiled / floor), ``n_steps``.
    """
    spec, (run,) = problem(policy, n_rounds=n_rounds, **kw)
    ref_run = tuple(a[:n_rounds_ref] for a in run[:3]) + (run[3],) + tuple(
        a[:n_rounds_ref] for a in run[4:])
    run_compiled(spec, run)  # compile (or load the cache) outside the timing
    fns = [lambda: reference.linear_bandit_run(spec, *ref_run),
           lambda: run_compiled(spec, run)]
    n_steps = run[5].shape[1]
    if floor:
        fns.append(floor_call(run[0], n_steps))
        fns[-1]()  # compile outside the timing
    times = median_times(fns, repeats)
    us_ref, us_jit = 1e6 * times[0] / n_rounds_ref, 1e6 * times[1] / n_rounds
    out = {"numpy": us_ref, "compiled": us_jit, "ratio": us_ref / us_jit}
    if floor:
        us_floor = 1e6 * times[2] / n_rounds
        out.update(floor=us_floor, floor_ratio=us_jit / us_floor, n_steps=n_steps)
    return out


def round_ratio(policy, n_rounds_ref=200, n_rounds=1000, repeats=7, **kw):
    """``(us per round NumPy reference, us per round compiled, ratio)`` for a named policy."""
    s = round_stats(policy, n_rounds_ref, n_rounds, repeats, **kw)
    return s["numpy"], s["compiled"], s["ratio"]


def floor_ratio(n_rounds=1000, repeats=7, dim=20, n_arms=50, **kw):
    """Compiled VITS-II round / its floor (d = 20, K = 50, 10 steps), interleaved medians.

    Times the fused loop and :func:`floor_rounds` only (no NumPy reference); returns
    ``(us per round compiled, us per round floor, ratio)``.
    """
    spec, (run,) = problem("vits-ii", n_rounds=n_rounds, dim=dim, n_arms=n_arms, **kw)
    floor = floor_call(run[0], run[5].shape[1])
    run_compiled(spec, run)
    floor()  # both compiled outside the timing
    t_jit, t_floor = median_times([lambda: run_compiled(spec, run), floor], repeats)
    return 1e6 * t_jit / n_rounds, 1e6 * t_floor / n_rounds, t_jit / t_floor


def parallel_speedup(policy="vits-ii", n_runs=8, n_rounds=500, repeats=3):
    """``(seconds on 1 thread, seconds on all threads, speed-up, threads)``, prange driver."""
    spec, runs = problem(policy, n_rounds=n_rounds, n_runs=n_runs)
    stacked = stack_runs(runs)
    n_max = numba.config.NUMBA_NUM_THREADS
    run_many_compiled(spec, runs, stacked)
    out = []
    for n in (1, n_max):
        with numba_threads(n):
            out.append(median_times([lambda: run_many_compiled(spec, runs, stacked)],
                                    repeats)[0])
    return out[0], out[1], out[0] / out[1], n_max


#: what a fresh interpreter runs to time ``import vits_ref`` and the first fused call
FIRST_CALL_CODE = (
    "import time; t = time.perf_counter(); import vits_ref; print(time.perf_counter() - t); "
    "from vits_ref._bench import linear; s, (r,) = linear.problem('vits-ii', n_rounds=5); "
    "t = time.perf_counter(); linear.run_compiled(s, r); print(time.perf_counter() - t)")


#: the labels and ``VITS_REF_CACHE`` values of :func:`import_and_compile_times`
CACHE_CASES = (("warm cache", "1"), ("cold, no cache", "0"))
#: what ``bench --quick`` prints instead of the cold figure
COLD_SKIPPED = ("first fused call (cold, no cache): not timed with --quick (compiling the "
                "VITS-II loop takes one to a few minutes whatever the repeats; "
                "python -m vits_ref bench times it)")


def import_and_compile_times(cold=True):
    """Seconds: ``import vits_ref``; first fused call with a warm cache; with no cache.

    Returns ``{label: (import seconds, first call seconds)}``, each from a fresh
    interpreter (``sys.executable``); ``cold=False`` leaves out the call with no cache
    (a whole compile: minutes on a loaded machine).
    """
    out = {}
    for label, cache in CACHE_CASES if cold else CACHE_CASES[:1]:
        env = {**os.environ, "VITS_REF_CACHE": cache}
        res = subprocess.run([sys.executable, "-c", FIRST_CALL_CODE], capture_output=True,
                             text=True, env=env, check=True)
        imp, first = (float(x) for x in res.stdout.split()[-2:])
        out[label] = (imp, first)
    return out


# --------------------------------------------------------------------------- report


def main(quick=False, policies=POLICIES, n_rounds=1000, n_rounds_ref=200, extras=True):
    """Print the linear section of ``python -m vits_ref bench``.

    ``quick``: fewer repeats, and the first fused call is timed with a warm cache only
    (:data:`COLD_SKIPPED`). ``policies``, ``n_rounds`` (fused loop and floor) and
    ``n_rounds_ref`` (NumPy reference) size the round ratios; ``extras=False`` skips the
    ``prange`` speed-up and the import / compile times (tests use small sizes).
    """
    with numba_threads(1):
        print(f"numba {numba.__version__}, numpy {np.__version__}, "
              f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
              f"numba threads 1 (pool env, d=20, K=50, 10 inner steps, zeta=0.1)")
        repeats = 3 if quick else 7
        n_steps = None
        for name in policies:
            s = round_stats(name, n_rounds_ref=n_rounds_ref, n_rounds=n_rounds, repeats=repeats,
                            floor=name == "vits-ii")
            line = (f"{name:8s} round: NumPy reference {s['numpy']:8.1f} us, compiled "
                    f"{s['compiled']:7.2f} us, ratio {ratio_text(s['ratio'], '6.1f')}")
            if "floor" in s:
                n_steps = s["n_steps"]
                line += (f"; floor {s['floor']:6.2f} us, compiled / floor "
                         f"{s['floor_ratio']:4.2f}x")
            print(line)
        if n_steps is not None:
            print(f"  floor of the VITS-II round: {n_steps} steps x 3 products of 20x20 matrices "
                  f"+ scoring 50 arms ((50,20) x (20,)), np.dot into preallocated buffers in one "
                  f"compiled function, timed interleaved with the two loops")
    if not extras:
        return
    t1, tn, sp, n = parallel_speedup(repeats=2 if quick else 3)
    print(f"prange over 8 VITS-II runs: 1 thread {t1:.3f} s, {n} threads {tn:.3f} s, "
          f"speed-up {sp:.2f}x")
    for label, (imp, first) in import_and_compile_times(cold=not quick).items():
        print(f"import vits_ref {imp:.2f} s; first fused call ({label}) {first:.2f} s")
    if quick:
        print(COLD_SKIPPED)
