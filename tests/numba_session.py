"""Numba in a test session: each cached function compiled once across processes, and an
optional log of every compilation.

Installed by ``tests/conftest.py`` in the pytest workers, and by
``tests/subprocess_site/sitecustomize.py`` in the processes the tests start (the command
line, the notebooks' kernels, the simulator's scripts), which find it on the
``PYTHONPATH`` that conftest sets. The lock is the library's
(:mod:`vits_ref._compile_lock`, which ``python -m vits_ref compile`` uses too), loaded by
its path so that a process the tests start does not import vits_ref for it.
``VITS_REF_COMPILE_LOCK=0`` leaves Numba's compiling as it is.
"""

import importlib.util
import json
import os
import sys
import threading
import time


def _library_lock():
    """:mod:`vits_ref._compile_lock`, without importing vits_ref when it is not imported
    yet (the module imports nothing of vits_ref; whichever copy installs the lock first,
    the other sees it installed)."""
    if "vits_ref" in sys.modules:
        from vits_ref import _compile_lock

        return _compile_lock
    name = "vits_ref_tests_compile_lock"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("vits_ref")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    folders.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "vits_ref"))
    path = next(p for p in (os.path.join(f, "_compile_lock.py") for f in folders)
                if os.path.isfile(p))
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


_lock = _library_lock()
compile_lock_path = _lock.compile_lock_path
save_lock_path = _lock.save_lock_path
_closure = _lock.closure_digest


def install_compile_lock():
    """Make concurrent pytest-xdist workers (and the processes they start) compile each
    cached function once: :func:`vits_ref._compile_lock.install`, with the compile log of
    :func:`_compile_log` when ``VITS_REF_COMPILE_LOG`` is set."""
    _lock.install(wrap=_compile_log())


def _compile_log():
    """``log(compile_, dispatcher, sig, waited=0.0)`` or None: runs the compilation and,
    when ``VITS_REF_COMPILE_LOG`` names a folder, appends one JSON line per compilation
    to a file of this process there (function, signature, seconds, whether it came from
    the cache, the seconds waited on another worker's lock, nesting depth, the test).
    ``python .ci/compile_profile.py FOLDER`` sums them: where a cold run's time goes."""

    folder = os.environ.get("VITS_REF_COMPILE_LOG")
    if not folder:
        return None
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{os.getpid()}.jsonl")
    nest = threading.local()

    def log(compile_, self, sig, waited=0.0):
        misses = sum(self._cache_misses.values())
        known = len(self.overloads)
        level = getattr(nest, "n", 0)
        nest.n = level + 1
        start = time.perf_counter()
        try:
            return compile_(self, sig)
        finally:
            nest.n = level
            if len(self.overloads) != known:  # not a signature it already had
                from numba.core import config as numba_config

                py = self.py_func
                row = {"fn": f"{py.__module__}.{py.__qualname__}", "closure": _closure(py),
                       "sig": str(sig), "s": time.perf_counter() - start,
                       "miss": sum(self._cache_misses.values()) != misses,
                       "waited": waited, "depth": level,
                       "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                       # the CPU target (.ci/run's second run compiles for "generic"):
                       # Numba caches each target apart, so each compiles its own
                       "target": numba_config.CPU_NAME or "host"}
                with open(path, "a") as fh:
                    fh.write(json.dumps(row) + "\n")

    return log
