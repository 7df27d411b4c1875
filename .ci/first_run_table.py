"""The first run's table (docs/performance.md, "The first run"): each entry point of a new
user, run in a fresh interpreter on an empty Numba cache (a new ``NUMBA_CACHE_DIR``), then
again on the cache it filled. Usage::

    OPENBLAS_NUM_THREADS=1 python .ci/first_run_table.py [ENTRY ...] > table.jsonl

Entries (all by default): ``main`` (``python -m vits_ref run vits-fig1``, the README's
main job, default size), ``fig1-2x20`` (``run vits-fig1 --runs 2 --rounds 20
--no-precompile``: compiled in one process, as the compile-count goal counts it),
``snippet-N`` (the N-th ``.. code-block:: python`` of README.rst that runs without a GPU),
``online-lints`` and ``online-vits-ii`` (``vr.Online(policy, n_arms=50, dim=20, seed=0)``
and its first ``select`` and ``update``), ``bench-quick`` (``python -m vits_ref bench
--quick``), ``floor`` (NumPy, Numba and SciPy's ``linalg`` imported and Numba's CPU target
initialised, without the library: what any process of it pays first).

Each row's ``wall_s`` is the whole process, its exit included (the interpreter's
finalisation collects every object that Numba's registries and the kernels' dispatchers
made); ``result_s`` is the time from the start of the process to the end of the entry's
work, what a user waits for the first result; ``objects`` the objects the garbage
collector tracks then, which the exit goes through.

The machine may be shared, so beside the wall time each row gives the child's CPU time
(user + sys of the child and its own children: :func:`resource.getrusage` of the waited
children) and the load average before it started (``FIRST_RUN_LOG=FILE`` appends each
child's messages to FILE). Compiling is single-threaded: the CPU
seconds of a cold run less those of the warm run are the compiling's idle-equivalent.
The compilations are counted in the child by the library's own listener
(:func:`vits_ref._compile_watch.kernels`, nested ones included) plus the ``compiled N
kernels`` lines of ``run``'s workers, if it compiled on every core first.
"""

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: The child: runs ``argv[1]`` (Python source, or ``-m vits_ref ...`` arguments as JSON)
#: and prints its compilations and compile seconds on stderr when the process exits.
_CHILD = r"""
import atexit, gc, json, runpy, sys, time
t0 = time.perf_counter()
kind, what = sys.argv[1], sys.argv[2]
if kind != "bare":
    import vits_ref as vr
    from vits_ref import _compile_watch as w
t_import = time.perf_counter() - t0
def _done():
    counts = (w.kernels(), w.seconds()) if kind != "bare" else (0, 0.0)
    sys.stderr.write("FIRST_RUN " + json.dumps({
        "kernels": counts[0], "compile_s": counts[1], "import_s": t_import,
        "result_at": t_result, "objects": n_objects}) + "\n")
atexit.register(_done)
try:  # the command line's entries end with SystemExit
    if kind == "cli":
        sys.argv = ["vits_ref", *json.loads(what)]
        runpy.run_module("vits_ref", run_name="__main__", alter_sys=True)
    else:
        exec(compile(what, "<entry>", "exec"), {"__name__": "__entry__"})
finally:
    t_result = time.time()
    n_objects = len(gc.get_objects())
"""


def readme_snippets(path=os.path.join(ROOT, "README.rst")):
    """The ``.. code-block:: python`` blocks of README.rst that need no GPU, each with the
    imports of the first block (later blocks continue it)."""
    lines = open(path, encoding="utf-8").read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == ".. code-block:: python":
            i += 1
            body = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                body.append(lines[i][4:])
                i += 1
            blocks.append("\n".join(body).strip() + "\n")
        else:
            i += 1
    cpu = [b for b in blocks if "cuda" not in b]
    head = "import numpy as np\nimport vits_ref as vr\n"
    return [b if b.startswith("import") else head + b for b in cpu]


def entries():
    out = {"main": ("cli", ["run", "vits-fig1"]),
           "fig1-2x20": ("cli", ["run", "vits-fig1", "--runs", "2", "--rounds", "20",
                                 "--no-precompile"])}
    for k, code in enumerate(readme_snippets(), 1):
        out[f"snippet-{k}"] = ("code", code)
    for policy in ("lints", "vits-ii"):
        out[f"online-{policy}"] = ("code", (
            "import numpy as np\nimport vits_ref as vr\n"
            "X = np.random.default_rng(0).standard_normal((50, 20))\n"
            f"online = vr.Online({policy!r}, n_arms=50, dim=20, seed=0)\n"
            "online.update(X, online.select(X), 1.0)\n"))
    out["bench-quick"] = ("cli", ["bench", "--quick"])
    # what every process of the library pays before any of the library's own work:
    # NumPy, Numba and SciPy's linalg (the BLAS the kernels call) imported, and Numba's
    # CPU target initialised as the first load of a cached kernel initialises it
    out["floor"] = ("bare", (
        "import numpy, numba, scipy.linalg\n"
        "from numba.core.registry import cpu_target\n"
        "cpu_target.typing_context.refresh()\ncpu_target.target_context.refresh()\n"))
    return out


def run_once(kind, what, cache, workdir):
    """One child on ``cache``: wall and CPU seconds, compilations, compile seconds."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "NUMBA_CACHE_DIR": cache,
           "VITS_REF_COMPILE_TIMES": os.path.join(cache, "compile_times.json")}
    arg = what if kind != "cli" else json.dumps(
        what[:1] + (["--out", os.path.join(workdir, "out"), "--force"]
                    if what[0] == "run" else []) + what[1:])
    load = os.getloadavg()[0]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    started = time.time()
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, arg], env=env, cwd=workdir,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {str(what)[:60]} failed:\n{proc.stderr[-3000:]}")
    rec = json.loads(proc.stderr.split("FIRST_RUN ")[-1].splitlines()[0])
    # run's workers, when it compiled on every core first (its own count is rec's)
    workers = [int(m) for m in re.findall(
        r"compiled (\d+) kernels in \d+ s \(\d+ s of compiling in", proc.stderr)]
    if os.environ.get("FIRST_RUN_LOG"):  # the child's messages, for the record
        with open(os.environ["FIRST_RUN_LOG"], "a", encoding="utf-8") as fh:
            fh.write(f"== {kind} {str(what)[:80]!r} load {load:.2f}\n{proc.stderr[-6000:]}\n")
    return {"wall_s": round(wall, 1),
            "cpu_s": round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 1),
            "load": round(load, 2), "kernels": rec["kernels"] + sum(workers),
            "compile_s": round(rec["compile_s"], 1), "import_s": round(rec["import_s"], 2),
            "result_s": round(rec["result_at"] - started, 2), "objects": rec["objects"]}


def main(names):
    table = entries()
    for name in names or list(table):
        kind, what = table[name]
        tmp = tempfile.mkdtemp(prefix=f"first_run_{name}_")
        try:
            cache = os.path.join(tmp, "cache")
            os.mkdir(cache)
            cold = run_once(kind, what, cache, tmp)
            warm = run_once(kind, what, cache, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        row = {"entry": name, "cold": cold, "warm": warm,
               "compile_cpu_s": round(cold["cpu_s"] - warm["cpu_s"], 1),
               "date": time.strftime("%Y-%m-%d %H:%M")}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
