"""The first run, in seconds: cold compilation of the main job's kernels and the first
online decision of a new process, each in a fresh interpreter (``sys.executable``).

Every figure comes from a child process with ``OPENBLAS_NUM_THREADS=1``, ``VITS_REF_CACHE=1``
and ``NUMBA_CACHE_DIR`` set to a temporary folder made for the benchmark (removed after);
the rest of the environment is inherited. The child prints one line ``RESULT {json}``;
its compilations are counted and timed by the library's own process-wide listener
(:func:`vits_ref._compile_watch.kernels`: Numba's ``"numba:compile"`` events, nested ones
included, since ``import vits_ref``; :func:`~vits_ref._compile_watch.seconds`: the
outermost compilations' time). Each class measures once, in ``setup_cache`` (asv runs it
once per class and hands the figures to every ``track_*``), so one cold compilation feeds
the time and the count; nothing compiles when the module is imported.

- :class:`ColdCompile`: ``vr.simulate(vr.make_policy(policy, 20), vr.envs.pool(seed=0),
  20 rounds, 2 runs)`` on an empty cache, for LinTS and VITS-II: the fused-loop drivers of
  two of the main job's lines (``python -m vits_ref run vits-fig1``: the exact posterior
  and the paper's VITS-II), the cheapest and a typical iterative engine. The whole of
  vits-fig1 compiles about 2 minutes on the idle 2-core machine (README; 279 s at load
  2-3), too long to hide in a quick check; :class:`ColdMainJob` is that, as a separate,
  slower benchmark.
  ``track_cold_simulate_s`` is the child's wall time (interpreter start-up, import,
  compilation and the 40 run-rounds: what a user waits for), ``track_cold_compile_s`` the
  compilation's part and ``track_cold_compilations`` the number of compilations (a
  kernel that starts compiling once per signature more, or a driver no longer shared,
  shows here before it shows in seconds).
- :class:`ColdMainJob`: the main job's command itself, ``python -m vits_ref run vits-fig1
  --runs 2 --rounds 20 --quiet --no-precompile`` into a temporary folder, on an empty
  cache, compiling in its own process (not on every core first): every kernel
  of vits-fig1 (its 5 lines, the labelled extras, VTS and the particle extras) compiles
  as in the full run, the runs themselves are tiny. Wall seconds, and the command's own
  compile seconds and compilations (``compile_times.json``, which the command records
  for its next start-up estimate, :func:`vits_ref._compile_watch.record`).
- :class:`FirstOnlineDecision`: a new process with a warm cache (``setup_cache`` fills a
  dedicated cache with one child first): ``import vits_ref`` (``track_import_s``), then
  ``vr.Online(policy, n_arms=50, dim=20, seed=0)`` with its first ``select`` and
  ``update`` (``track_first_online_decision_s``), medians of 3 children, and the most
  compilations in any of them (``track_warm_compilations``; must be 0: a driver whose
  cache key changes per process compiles again in every process, as the online choose
  did before 9b4862e: 8.7 s of a warm first decision then, 0.4 s after). The child that
  fills the cache is the first decision on a cold cache, tracked too
  (``track_cold_first_decision_s``, ``..._cpu_s``, ``..._compilations``).

- :class:`DecisionAfterSimulate`: on one empty cache, a child runs ``simulate`` of the
  policy (``_COLD``), then a second child makes its first ``Online`` decision
  (``_FIRST_DECISION``): the second loads the kernel bodies the first compiled (the
  policy's update, draws and checks), and compiles only its own drivers
  (``track_decision_after_simulate_cpu_s``, ``..._compilations``).

The cold figures come with the child's CPU seconds (``track_*_cpu_s``: user + system of
the child and its children, :func:`resource.getrusage`): compiling is single-threaded, so
on a shared machine they are what an idle one would wait, where the wall seconds drift
with the load.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

#: Policies of :class:`ColdCompile` and :class:`FirstOnlineDecision`.
POLICIES = ("lints", "vits-ii")
#: The main job and the size of :class:`ColdMainJob` (every kernel compiles, tiny runs).
#: ``--no-precompile``: compiled in the command's own process, one kernel after another, as
#: the series began (``run`` compiles on every core first on a cold cache otherwise, and
#: its workers' compilations are then what ``compile_times.json`` records).
MAIN_JOB = ("run", "vits-fig1", "--runs", "2", "--rounds", "20", "--quiet",
            "--no-precompile")

_COLD = """\
import json, sys, time
t0 = time.perf_counter()
import vits_ref as vr
from vits_ref import _compile_watch
t1 = time.perf_counter()
vr.simulate(vr.make_policy(sys.argv[1], 20), vr.envs.pool(dim=20, n_arms=50, seed=0),
            20, n_runs=2, seed=0)
t2 = time.perf_counter()
print("RESULT " + json.dumps({"import_s": t1 - t0, "run_s": t2 - t1,
                              "compile_s": _compile_watch.seconds(),
                              "compilations": _compile_watch.kernels()}))
"""

_FIRST_DECISION = """\
import json, sys, time
t0 = time.perf_counter()
import vits_ref as vr
from vits_ref import _compile_watch
t1 = time.perf_counter()
import numpy as np
X = np.random.default_rng(0).standard_normal((50, 20))
t2 = time.perf_counter()
online = vr.Online(sys.argv[1], n_arms=50, dim=20, seed=0)
online.update(X, online.select(X), 1.0)
t3 = time.perf_counter()
print("RESULT " + json.dumps({"import_s": t1 - t0, "decision_s": t3 - t2,
                              "compile_s": _compile_watch.seconds(),
                              "compilations": _compile_watch.kernels()}))
"""


def _env(cache_dir):
    """The child's environment: this one, with one BLAS thread, the cache on and Numba's
    cache (and the command's compile-time record) in ``cache_dir``."""
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", "VITS_REF_CACHE": "1",
            "NUMBA_CACHE_DIR": cache_dir,
            "VITS_REF_COMPILE_TIMES": os.path.join(cache_dir, "compile_times.json")}


def _cpu():
    """CPU seconds (user + system) of this process's waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(args, cache_dir, cwd=None):
    """Run ``python *args`` in a fresh interpreter: ``(wall seconds, completed process,
    CPU seconds)``, the last of the child and its own children (compiling is
    single-threaded: on a shared machine its CPU seconds are what an idle one waits)."""
    t, c = time.perf_counter(), _cpu()
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         env=_env(cache_dir), cwd=cwd)
    wall, cpu = time.perf_counter() - t, _cpu() - c
    if out.returncode != 0:
        raise RuntimeError(f"{args[:2]} failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return wall, out, cpu


def child(code, arg, cache_dir):
    """Run ``code`` (a script printing ``RESULT {json}``) with ``arg`` in a fresh
    interpreter: its result, plus ``"wall_s"`` and ``"cpu_s"``, the child's wall and CPU
    time seen from here."""
    wall, out, cpu = _run(["-c", code, arg], cache_dir)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if len(lines) != 1:
        raise RuntimeError(f"expected one RESULT line, got:\n{out.stdout[-4000:]}")
    return {**json.loads(lines[0][len("RESULT "):]), "wall_s": wall, "cpu_s": cpu}


def cold(policy):
    """``_COLD`` for ``policy`` on an empty Numba cache (a new temporary folder)."""
    cache_dir = tempfile.mkdtemp(prefix="vits_ref_cold_")
    try:
        return child(_COLD, policy, cache_dir)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def main_job_cold():
    """:data:`MAIN_JOB` on an empty cache, its output in a temporary folder: ``{"wall_s",
    "cpu_s", "compile_s", "compilations"}`` (the last two as the command recorded them)."""
    tmp = tempfile.mkdtemp(prefix="vits_ref_main_job_")
    try:
        cache_dir = os.path.join(tmp, "cache")
        os.mkdir(cache_dir)
        wall, _, cpu = _run(["-m", "vits_ref", *MAIN_JOB, "--out",
                             os.path.join(tmp, "out")], cache_dir, cwd=tmp)
        with open(os.path.join(cache_dir, "compile_times.json"), encoding="utf-8") as fh:
            rec = json.load(fh)[MAIN_JOB[1]]
        return {"wall_s": wall, "cpu_s": cpu, "compile_s": float(rec["seconds"]),
                "compilations": int(rec["kernels"])}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def decision_after_simulate(policy):
    """``_COLD`` then ``_FIRST_DECISION`` for ``policy``, two fresh processes on one empty
    cache (a new temporary folder): the second's figures."""
    cache_dir = tempfile.mkdtemp(prefix="vits_ref_shared_")
    try:
        child(_COLD, policy, cache_dir)
        return child(_FIRST_DECISION, policy, cache_dir)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def first_decisions(policy, repeats=3):
    """``_FIRST_DECISION`` for ``policy`` in ``repeats`` fresh processes on a cache that a
    first child filled (a new temporary folder): medians of the times, the most
    compilations; and the first child's figures, the first decision on a cold cache
    (``"cold"``)."""
    cache_dir = tempfile.mkdtemp(prefix="vits_ref_warm_")
    try:
        first = child(_FIRST_DECISION, policy, cache_dir)  # fills the cache: cold
        runs = [child(_FIRST_DECISION, policy, cache_dir) for _ in range(repeats)]
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    return {"import_s": float(np.median([r["import_s"] for r in runs])),
            "decision_s": float(np.median([r["decision_s"] for r in runs])),
            "compilations": max(r["compilations"] for r in runs), "cold": first}


class ColdCompile:
    """``simulate`` of 2 runs x 20 rounds, d = 20, K = 50, on an empty Numba cache, in a
    fresh process, once per policy (one cold compilation each: minutes of noise-free
    work, so one sample)."""

    params = (POLICIES,)
    param_names = ["policy"]
    # both policies compile cold in setup_cache: 56 s (LinTS) and 123 s (VITS-II) of wall
    # time on the 2-core machine at load 2-3 (2026-11-29)
    timeout = 1200

    def setup_cache(self):
        return {policy: cold(policy) for policy in POLICIES}

    setup_cache.timeout = 1200

    def track_cold_simulate_s(self, results, policy):
        return results[policy]["wall_s"]

    track_cold_simulate_s.unit = "seconds"

    def track_cold_compile_s(self, results, policy):
        return results[policy]["compile_s"]

    track_cold_compile_s.unit = "seconds"

    def track_cold_compilations(self, results, policy):
        return results[policy]["compilations"]

    track_cold_compilations.unit = "compilations"

    def track_cold_simulate_cpu_s(self, results, policy):
        return results[policy]["cpu_s"]

    track_cold_simulate_cpu_s.unit = "seconds"


class ColdMainJob:
    """The main job's command (``python -m vits_ref run vits-fig1``) at 2 runs x 20 rounds
    on an empty Numba cache: every kernel of vits-fig1 compiles, once."""

    # vits-fig1 compiles 118 s on the idle 2-core machine (README); this benchmark took
    # 297 s (279 s compiling, 189 compilations) at load 2-3 (2026-11-29)
    timeout = 1800

    def setup_cache(self):
        return main_job_cold()

    setup_cache.timeout = 1800

    def track_main_job_cold_s(self, results):
        return results["wall_s"]

    track_main_job_cold_s.unit = "seconds"

    def track_main_job_compile_s(self, results):
        return results["compile_s"]

    track_main_job_compile_s.unit = "seconds"

    def track_main_job_compilations(self, results):
        return results["compilations"]

    track_main_job_compilations.unit = "compilations"

    def track_main_job_cold_cpu_s(self, results):
        return results["cpu_s"]

    track_main_job_cold_cpu_s.unit = "seconds"


class FirstOnlineDecision:
    """``import vits_ref`` and the first ``Online`` decision (construction, ``select``,
    ``update``; d = 20, K = 50) in a new process with a warm cache, medians of 3
    processes; the compilations there (goal: 0)."""

    params = (POLICIES,)
    param_names = ["policy"]
    # setup_cache fills a new cache per policy (a cold compilation of the online drivers:
    # 43 s with LinTS's 3 warm children, 108 s with VITS-II's, at load 2-3)
    timeout = 1200

    def setup_cache(self):
        return {policy: first_decisions(policy) for policy in POLICIES}

    setup_cache.timeout = 1200

    def track_import_s(self, results, policy):
        return results[policy]["import_s"]

    track_import_s.unit = "seconds"

    def track_first_online_decision_s(self, results, policy):
        return results[policy]["decision_s"]

    track_first_online_decision_s.unit = "seconds"

    def track_warm_compilations(self, results, policy):
        return results[policy]["compilations"]

    track_warm_compilations.unit = "compilations"

    def track_cold_first_decision_s(self, results, policy):
        return results[policy]["cold"]["decision_s"]

    track_cold_first_decision_s.unit = "seconds"

    def track_cold_first_decision_cpu_s(self, results, policy):
        return results[policy]["cold"]["cpu_s"]

    track_cold_first_decision_cpu_s.unit = "seconds"

    def track_cold_first_decision_compilations(self, results, policy):
        return results[policy]["cold"]["compilations"]

    track_cold_first_decision_compilations.unit = "compilations"


class DecisionAfterSimulate:
    """The first ``Online`` decision (d = 20, K = 50) in a new process whose cache holds
    only what a ``simulate`` of the same policy compiled in another process: the kernel
    bodies the two share load, the online drivers compile. Measured 2026-11-29 on the
    2-core machine (this class's functions, called directly, at load about 3 beside a CI
    run): 12.6 s of CPU for VITS-II and 9.8 s for LinTS, 17 compilations each; for
    VITS-II, one-off scripts gave 21.0 s before the kernel bodies were cached on their
    own and 11.7 s after."""

    params = (POLICIES,)
    param_names = ["policy"]
    # two cold children a policy: about 40 s (LinTS) and 70 s (VITS-II) of CPU
    timeout = 1200

    def setup_cache(self):
        return {policy: decision_after_simulate(policy) for policy in POLICIES}

    setup_cache.timeout = 1200

    def track_decision_after_simulate_cpu_s(self, results, policy):
        return results[policy]["cpu_s"]

    track_decision_after_simulate_cpu_s.unit = "seconds"

    def track_decision_after_simulate_compile_s(self, results, policy):
        return results[policy]["compile_s"]

    track_decision_after_simulate_compile_s.unit = "seconds"

    def track_decision_after_simulate_compilations(self, results, policy):
        return results[policy]["compilations"]

    track_decision_after_simulate_compilations.unit = "compilations"
