"""Each cached Numba function compiled once across processes that share a disk cache.

Processes that share Numba's on-disk cache (the workers of ``python -m vits_ref compile``,
pytest-xdist workers, the processes the tests start) look into it only when a dispatcher
starts compiling: two processes whose first calls need the same fused loop both compiled
it side by side (the VITS-II loop, about 100 s each on a loaded 2-core machine).
:func:`install` makes each outermost compilation of a cached function hold an exclusive
``flock`` keyed by its cache index file and its closure (:func:`compile_lock_path`); a
process that waits on it then finds the other's result in the cache
(``Dispatcher.compile`` loads before it compiles). Other closures of the same factory (the
fused loop of another policy) compile meanwhile: one lock per index file serialised them
(105 s of waiting in a cold test run). Saving to an index file takes a second lock, per
index file (:func:`save_lock_path`), for as long as the save: Numba rewrites the whole
index and numbers the new data file from it, so two processes saving at once could drop
each other's entries or write one data file.

No process waits for another in a cycle: a save holds no other lock of its own while it
runs, and only outermost compilations take the compile lock (nested ones run under their
caller's). The process's compiler lock is taken before the file lock, so a thread that
holds a file lock never waits for another thread of its own process. Uncached functions
(``NullCache``) compile without the lock: nobody else can reuse them.

The lock files live in ``vits_ref-compile-locks`` under :func:`tempfile.gettempdir`
(:func:`lock_dir`); ``VITS_REF_COMPILE_LOCK=0`` leaves Numba's compiling as it is. This
module imports nothing of vits_ref, so the test session loads it by its path at the
start-up of every process it starts (``tests/numba_session.py``) without importing the
library.
"""

import fcntl
import functools
import hashlib
import os
import tempfile
import threading
import time

#: The attribute that marks Numba's ``Dispatcher.compile`` as wrapped by :func:`install`
#: (whichever copy of this module installed it).
MARK = "_vits_ref_locked"
#: The attribute of the wrapped ``Dispatcher.compile`` that holds the seconds this process
#: has waited on other processes' locks (:func:`waited`), a one-element list.
WAITED = "_vits_ref_waited"


def lock_dir():
    """The folder of the lock files (created by :func:`install`)."""
    return os.path.join(tempfile.gettempdir(), "vits_ref-compile-locks")


def _lock_path(key):
    return os.path.join(lock_dir(), hashlib.sha1(key.encode()).hexdigest() + ".lock")


def closure_digest(py_func):
    """A digest of ``py_func``'s closure, as Numba's cache key has it: two closures of one
    factory with other cells are other functions ("" without a closure, "?" for a cell
    that cannot be pickled, which Numba does not cache either)."""
    if not py_func.__closure__:
        return ""
    try:
        from numba.core.serialize import dumps

        return hashlib.sha1(dumps(tuple(c.cell_contents for c in py_func.__closure__))
                            ).hexdigest()[:12]
    except Exception:  # noqa: BLE001 (an unpicklable cell)
        return "?"


def compile_lock_path(dispatcher):
    """The lock file that :func:`install` holds while ``dispatcher`` (a cached Numba
    dispatcher) compiles: one per cache index file and closure (a factory's closures share
    an index file, each is its own function); None for an uncached one."""
    index = getattr(getattr(dispatcher._cache, "_cache_file", None), "_index_path", None)
    if index is None:
        return None
    return _lock_path(index + "|" + closure_digest(dispatcher.py_func))


def save_lock_path(index_path):
    """The lock file held while an entry is saved to the cache index ``index_path``."""
    return _lock_path(index_path + "|save")


def installed():
    """Whether Numba's compiling is wrapped by :func:`install` in this process."""
    from numba.core import dispatcher

    return bool(getattr(dispatcher.Dispatcher.compile, MARK, False))


def waited():
    """Seconds this process has waited on other processes' compile locks since
    :func:`install` (whichever copy of this module installed it; 0 without the locks): a
    kernel that another process was compiling, then loaded from the cache. A unit of
    ``python -m vits_ref compile`` that compiled nothing may have waited that long."""
    from numba.core import dispatcher

    return getattr(dispatcher.Dispatcher.compile, WAITED, [0.0])[0]


def _plain(compile_, dispatcher, sig, waited=0.0):  # noqa: ARG001 (the wrap signature)
    return compile_(dispatcher, sig)


def install(wrap=None):
    """Wrap Numba's ``Dispatcher.compile`` and the cache index's ``save`` with the locks
    (once per process; a second call, from this or another copy of the module, does
    nothing). Returns whether the locks are in force.

    Parameters
    ----------
    wrap : callable, optional
        ``wrap(compile_, dispatcher, sig, waited)`` runs every compilation
        (``compile_(dispatcher, sig)``) and returns its result; ``waited`` is the seconds
        spent waiting on another process's lock (0 for nested and uncached compilations).
        The test session logs compilations with it (``VITS_REF_COMPILE_LOG``).

    Notes
    -----
    Nothing is done with ``VITS_REF_COMPILE_LOCK=0`` or without a writable temporary
    folder (Numba then compiles as it does without the lock).

    Examples
    --------
    >>> from vits_ref import _compile_lock
    >>> _compile_lock.install() in (True, False)
    True
    """
    from numba.core import caching, dispatcher
    from numba.core.compiler_lock import global_compiler_lock

    compile_ = dispatcher.Dispatcher.compile
    if getattr(compile_, MARK, False):
        return True
    if os.environ.get("VITS_REF_COMPILE_LOCK") == "0":
        return False
    try:
        os.makedirs(lock_dir(), exist_ok=True)
    except OSError:  # no writable temporary folder: compile as Numba does
        return False
    run = wrap or _plain
    depth = threading.local()
    total_waited = [0.0]

    @functools.wraps(compile_)
    def compile_locked(self, sig):
        path = compile_lock_path(self)
        if path is None:
            return run(compile_, self, sig, 0.0)
        # the process's compiler lock first (Dispatcher.compile takes it anyway): a thread
        # holding a file lock then never waits for another thread of its own process
        with global_compiler_lock:
            if getattr(depth, "n", 0):
                return run(compile_, self, sig, 0.0)
            try:
                fh = open(path, "a")
            except OSError:
                return run(compile_, self, sig, 0.0)
            depth.n = 1
            try:
                with fh:
                    waited = time.perf_counter()
                    fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
                    waited = time.perf_counter() - waited
                    total_waited[0] += waited
                    return run(compile_, self, sig, waited)
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

    setattr(compile_locked, MARK, True)
    setattr(compile_locked, WAITED, total_waited)
    dispatcher.Dispatcher.compile = compile_locked
    caching.IndexDataCacheFile.save = save_locked
    return True
