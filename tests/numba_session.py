"""Numba in a test session: each cached function compiled once across processes, and an
optional log of every compilation.

Installed by ``tests/conftest.py`` in the pytest workers, and by
``tests/subprocess_site/sitecustomize.py`` in the processes the tests start (the command
line, the notebooks' kernels, the simulator's scripts), which find it on the
``PYTHONPATH`` that conftest sets. ``VITS_REF_COMPILE_LOCK=0`` leaves Numba's compiling as
it is.
"""

import fcntl
import functools
import hashlib
import json
import os
import tempfile
import threading
import time


def _compile_lock_dir():
    return os.path.join(tempfile.gettempdir(), "vits_ref-compile-locks")


def _lock_path(key):
    return os.path.join(_compile_lock_dir(), hashlib.sha1(key.encode()).hexdigest() + ".lock")


def compile_lock_path(dispatcher):
    """The lock file that :func:`install_compile_lock` holds while ``dispatcher``
    (a cached Numba dispatcher) compiles: one per cache index file and closure (a factory's
    closures share an index file, each is its own function); None for an uncached one."""
    index = getattr(getattr(dispatcher._cache, "_cache_file", None), "_index_path", None)
    if index is None:
        return None
    return _lock_path(index + "|" + _closure(dispatcher.py_func))


def save_lock_path(index_path):
    """The lock file held while an entry is saved to the cache index ``index_path``."""
    return _lock_path(index_path + "|save")


def install_compile_lock():
    """Make concurrent pytest-xdist workers compile each cached function once.

    The workers share Numba's on-disk cache, but a dispatcher looks there only when it
    starts compiling: two workers whose first tests need the same fused loop both compiled
    it side by side (the VITS-II loop, about 100 s each on the loaded 2-core machine, at
    every cold start). Each outermost compilation of a cached function now holds an
    exclusive ``flock`` keyed by its cache index file and its closure
    (:func:`compile_lock_path`); a worker that waits on it then finds the other's result
    in the cache (``Dispatcher.compile`` loads before it compiles). Other closures of the
    same factory (the fused loop of another policy) compile meanwhile: they were
    serialised behind one lock per index file, 105 s of waiting in a cold run.
    Saving to an index file takes a second lock, per index file (:func:`save_lock_path`),
    for as long as the save: Numba rewrites the whole index and numbers the new data file
    from it, so two processes saving at once could drop each other's entries or write one
    data file. A save holds no other lock of its own while it runs, and only outermost
    compilations take the compile lock (nested ones run under their caller's), so no
    process waits for another in a cycle. The process's compiler lock is taken before
    the file lock, so a thread that holds a file lock never waits for another thread of
    its own process. Uncached functions (``NullCache``) compile without the lock: nobody
    else can reuse them.
    """

    from numba.core import caching, dispatcher
    from numba.core.compiler_lock import global_compiler_lock

    compile_ = dispatcher.Dispatcher.compile
    if getattr(compile_, "_vits_ref_locked", False):
        return
    if os.environ.get("VITS_REF_COMPILE_LOCK") == "0":
        return
    try:
        os.makedirs(_compile_lock_dir(), exist_ok=True)
    except OSError:  # no writable temporary folder: compile as Numba does
        return
    depth = threading.local()

    log = _compile_log()

    @functools.wraps(compile_)
    def compile_locked(self, sig):
        path = compile_lock_path(self)
        if path is None:
            return log(compile_, self, sig, depth)
        # the process's compiler lock first (Dispatcher.compile takes it anyway): a thread
        # holding a file lock then never waits for another thread of its own process
        with global_compiler_lock:
            if getattr(depth, "n", 0):
                return log(compile_, self, sig, depth)
            try:
                fh = open(path, "a")
            except OSError:
                return log(compile_, self, sig, depth)
            depth.n = 1
            try:
                with fh:
                    waited = time.perf_counter()
                    fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
                    waited = time.perf_counter() - waited
                    return log(compile_, self, sig, depth, waited)
            finally:
                depth.n = 0

    save_ = caching.IndexDataCacheFile.save

    @functools.wraps(save_)
    def save_locked(self, key, data):
        try:
            fh = open(save_lock_path(self._index_path), "a")
        except OSError:
            return save_(self, key, data)
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            return save_(self, key, data)

    compile_locked._vits_ref_locked = True
    dispatcher.Dispatcher.compile = compile_locked
    caching.IndexDataCacheFile.save = save_locked


def _compile_log():
    """``log(compile_, dispatcher, sig, depth, waited=0.0)``: runs the compilation and,
    when ``VITS_REF_COMPILE_LOG`` names a folder, appends one JSON line per compilation
    to a file of this process there (function, signature, seconds, whether it came from
    the cache, the seconds waited on another worker's lock, nesting depth, the test).
    ``python .ci/compile_profile.py FOLDER`` sums them: where a cold run's time goes."""

    folder = os.environ.get("VITS_REF_COMPILE_LOG")
    if not folder:
        return lambda compile_, self, sig, depth, waited=0.0: compile_(self, sig)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{os.getpid()}.jsonl")
    nest = threading.local()

    def log(compile_, self, sig, depth, waited=0.0):  # noqa: ARG001 (one signature)
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
                py = self.py_func
                row = {"fn": f"{py.__module__}.{py.__qualname__}", "closure": _closure(py),
                       "sig": str(sig), "s": time.perf_counter() - start,
                       "miss": sum(self._cache_misses.values()) != misses,
                       "waited": waited, "depth": level,
                       "test": os.environ.get("PYTEST_CURRENT_TEST", "")}
                with open(path, "a") as fh:
                    fh.write(json.dumps(row) + "\n")

    return log


def _closure(py_func):
    """A digest of ``py_func``'s closure, as Numba's cache key has it: two closures of one
    factory with other cells are other functions."""
    if not py_func.__closure__:
        return ""
    try:
        from numba.core.serialize import dumps

        return hashlib.sha1(dumps(tuple(c.cell_contents for c in py_func.__closure__))
                            ).hexdigest()[:12]
    except Exception:  # noqa: BLE001 (an unpicklable cell: Numba does not cache it either)
        return "?"
