"""Numba compilation, said while it happens and timed.

On a cold cache (the first run, or after an upgrade) the first call of each kernel compiles
it: minutes on two cores, during which a call would otherwise print nothing. Numba sends
``"numba:compile"`` events when a dispatcher compiles (not when it loads from its disk
cache); this module listens to them in two ways.

- Process-wide, from the import of :mod:`vits_ref` on (:func:`install`, one listener
  registered with Numba's event system: a warm call sends no event and pays nothing): the
  time of every outermost compilation is added to a total for the process
  (:func:`seconds`, :func:`kernels`), and when a burst of compilations (outermost
  compilations less than :data:`BURST_GAP_S` apart) of the library's own kernels has gone
  on for :data:`SAY_AFTER_S` seconds, one ``WARNING`` record of the logger
  ``"vits_ref.compile"`` (:data:`logger`) names the kernel being compiled. A timer says
  it while the compilation runs, so that a single kernel compiling for 30 s is said
  after 2 s, not when it ends. ``WARNING`` because Python shows warnings on stderr
  without any logging configuration (its ``logging.lastResort`` handler) and nothing
  below; silence it with ``logging.getLogger("vits_ref").setLevel(logging.ERROR)`` (or
  ``"vits_ref.compile"``). Nothing is logged while a :func:`watch` is open: the command
  line says it itself (or was asked to be quiet).
- :func:`watch`, for the command line: says once that kernels are compiling, with an
  estimate measured on this machine by an earlier run of the same experiment
  (:func:`estimate`, kept in :func:`times_path`; "no estimate yet" before one), then how
  many and for how long every :data:`INTERVAL_S` seconds, and at the end the total, which
  is what ``summary.json`` records (``environment.numba_compile_s``,
  :func:`vits_ref.experiments._common.finish_timing`). The measurement is recorded for
  the next run.

The experiments' ``warmup_s`` measures only the throw-away warm-up runs, while kernels
also compile before them (timing probes, tuning, the first chunk in this process).
Compilations in other processes (the workers of ``--jobs`` or a Dask cluster) are not
counted here.
"""

import contextlib
import datetime
import itertools
import json
import logging
import os
import threading
import time

from numba.core import event

#: The library's logger for compilation (a child of ``"vits_ref"``).
logger = logging.getLogger("vits_ref.compile")
#: Seconds a burst of compilations of the library's kernels goes on before
#: :data:`logger` says so (once per burst).
SAY_AFTER_S = 2.0
#: Outermost compilations less than this many seconds apart form one burst.
BURST_GAP_S = 5.0
#: Seconds between two progress lines of :func:`watch` while compiling.
INTERVAL_S = 15.0
#: The file of measured compile times, in the cache folder (:func:`times_path`).
TIMES_FILE = "compile_times.json"

_LOCK = threading.RLock()
_TOTAL = {"seconds": 0.0, "kernels": 0}
_WATCHES = []  # the open watch listeners


def _name(ev):
    """The qualified name of the function of a ``numba:compile`` event's dispatcher."""
    disp = (ev.data or {}).get("dispatcher")
    fn = getattr(disp, "py_func", None)
    if fn is None:
        return str(disp), ""
    return (f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn.__name__)}",
            getattr(fn, "__module__", "") or "")


def _cached(ev):
    """Whether the event's dispatcher keeps its compilations in Numba's disk cache."""
    cache = getattr((ev.data or {}).get("dispatcher"), "_cache", None)
    return cache is not None and type(cache).__name__ != "NullCache"


def identity(ev):
    """What a ``numba:compile`` event compiles, named the same in every process that
    compiles it into the same disk cache: the dispatcher's cache index file, its closure's
    digest (:func:`vits_ref._compile_lock.closure_digest`) and the argument types. An
    uncached function (every process compiles its own) gets a name of this process's own.
    Two processes' compilations of one cached kernel (a nested one: only the outermost take
    the compile lock) are one kernel, as :func:`vits_ref.experiments._precompile.compile_units`
    counts them."""
    data = ev.data or {}
    disp = data.get("dispatcher")
    name, _ = _name(ev)
    index = getattr(getattr(getattr(disp, "_cache", None), "_cache_file", None),
                    "_index_path", None)
    if index is None or not _cached(ev):
        return f"uncached {name} {data.get('args')} in {os.getpid()}:{_serial(disp)}"
    from ._compile_lock import closure_digest

    return f"{index}|{closure_digest(disp.py_func)}|{data.get('args')}"


_SERIALS = itertools.count()


def _serial(disp):
    """A number of this process's own for the dispatcher ``disp``, kept on it: not
    ``id(disp)``, which a later dispatcher reuses once this one is collected (two fresh
    functions compiled one after the other then read as one kernel)."""
    serial = getattr(disp, "_vits_ref_serial", None)
    if serial is None:
        serial = next(_SERIALS)
        try:
            disp._vits_ref_serial = serial
        except (AttributeError, TypeError):  # an object that takes no attribute
            return f"id{id(disp)}"
    return serial


def ours(module):
    """Whether a function of ``module`` is one of the library's kernels (only those are
    said by :data:`logger`; a user's own functions are timed, not said)."""
    return module == "vits_ref" or module.startswith("vits_ref.")


class _Process(event.Listener):
    """The process-wide listener: times the outermost compilations (nested ones run inside
    them), and says a long burst of the library's compilations once."""

    def __init__(self):
        self.depth, self.start, self.last_end = 0, None, None
        self.burst_s, self.burst, self.said, self.timer = 0.0, 0, False, None

    def on_start(self, ev):
        now = time.perf_counter()
        with _LOCK:
            self.depth += 1
            if self.depth > 1:
                return
            self.start = now
            if self.last_end is None or now - self.last_end > BURST_GAP_S:
                self.burst, self.burst_s, self.said = self.burst + 1, 0.0, False
            name, module = _name(ev)
            if self.said or not ours(module):
                return
            delay = max(0.0, SAY_AFTER_S - self.burst_s)
            self.timer = threading.Timer(delay, self._say, (self.burst, name, _cached(ev)))
            self.timer.daemon = True
            self.timer.start()

    def on_end(self, ev):
        now = time.perf_counter()
        with _LOCK:
            self.depth -= 1
            _TOTAL["kernels"] += 1
            if self.depth > 0:
                return
            _TOTAL["seconds"] += now - self.start
            self.burst_s += now - self.start
            self.last_end = now
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None

    def _say(self, burst, name, cached):
        with _LOCK:
            if self.said or burst != self.burst or self.depth == 0 or _WATCHES:
                return
            self.said = True
        later = ("later runs load it from Numba's disk cache" if cached
                 else "it is not cached: every process compiles it again")
        logger.warning("vits_ref: compiling %s (first use on this machine, or after an "
                       "upgrade; %s)...", name, later)


_PROCESS = _Process()
_INSTALLED = []


def install():
    """Register the process-wide listener with Numba (once; :mod:`vits_ref` does it when
    imported)."""
    with _LOCK:
        if not _INSTALLED:
            event.register("numba:compile", _PROCESS)
            _INSTALLED.append(_PROCESS)


# ------------------------------------------------------------------ measured estimates


def times_path():
    """The file of measured compile times: ``$VITS_REF_COMPILE_TIMES`` when set (the test
    suite points it at a temporary file), else
    ``$NUMBA_CACHE_DIR/vits_ref/compile_times.json`` when Numba's cache folder is set (the
    measurement belongs to that cache), else ``$XDG_CACHE_HOME/vits_ref/compile_times.json``
    (``~/.cache`` by default)."""
    if os.environ.get("VITS_REF_COMPILE_TIMES"):
        return os.environ["VITS_REF_COMPILE_TIMES"]
    base = os.environ.get("NUMBA_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or \
        os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "vits_ref", TIMES_FILE)


def _versions():
    import sys

    import numba

    # vits_ref's version without importing the package (which imports this module)
    version = getattr(sys.modules.get("vits_ref"), "__version__", None)
    return {"vits_ref": version, "numba": numba.__version__}


def _read_times():
    try:
        with open(times_path(), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def estimate(name):
    """The measured cold compile time of run ``name`` on this machine: ``{"seconds",
    "kernels", "date"}`` from the run that compiled the most kernels with these versions
    of vits_ref and Numba, or None (never measured, another version, or an unreadable
    file)."""
    rec = _read_times().get(name)
    if not isinstance(rec, dict) or any(rec.get(k) != v for k, v in _versions().items()):
        return None
    try:
        return {"seconds": float(rec["seconds"]), "kernels": int(rec["kernels"]),
                "date": str(rec["date"])}
    except (KeyError, TypeError, ValueError):
        return None


def record(name, seconds_, kernels_):
    """Keep run ``name``'s compile time for :func:`estimate` (written atomically; a run
    that compiled fewer kernels than the one on record, partly cached, does not replace
    it). Returns whether it was written; an unwritable cache folder is ignored."""
    data = _read_times()
    if estimate(name) is not None and estimate(name)["kernels"] > kernels_:
        return False
    data[name] = {"seconds": round(float(seconds_), 1), "kernels": int(kernels_),
                  "date": datetime.date.today().isoformat(), **_versions()}
    path = times_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def first_line(name):
    """The line said when the first kernel of run ``name`` compiles: the measured estimate
    (:func:`estimate`) or that there is none yet, never a made-up number.

    With an estimate, run ``name`` has compiled into this cache before (a run, or
    ``python -m vits_ref compile``, recorded it), so what compiles now is missing from the
    cache (a kernel the run did not meet then, or sources changed since): the line says so,
    and quotes the estimate as what a cold cache would cost, not as what is coming."""
    est = None if name is None else estimate(name)
    if est is None:
        return "compiling kernels (first run on this machine; no estimate yet)"
    return (f"compiling kernels missing from the cache (the rest is cached; about "
            f"{est['seconds']:.0f} s for {est['kernels']} kernels when nothing is cached, "
            f"measured on this machine on {est['date']})")


# ------------------------------------------------------------------------ the CLI's watch


class _Listener(event.Listener):
    """Times the outermost compilations of a :func:`watch` and reports them."""

    def __init__(self, say, name):
        self.say, self.name = say, name
        self.depth, self.start, self.last = 0, None, None
        self.seconds, self.kernels = 0.0, 0
        self.compiled = []  # identity() of each compilation, nested ones included

    def on_start(self, ev):
        now = time.perf_counter()
        with _LOCK:
            self.depth += 1
            if self.depth > 1:
                return
            self.start = now
            if self.say is not None and self.last is None:
                self.last = now
                self.say(first_line(self.name))

    def on_end(self, ev):
        now = time.perf_counter()
        with _LOCK:
            self.depth -= 1
            self.kernels += 1
            self.compiled.append(identity(ev))
            if self.depth == 0:
                self.seconds += now - self.start
            if self.say is not None and now - self.last >= INTERVAL_S:
                self.last = now
                running = now - self.start if self.depth else 0.0
                self.say(f"compiling kernels: {self.kernels} compiled, "
                         f"{self.seconds + running:.0f} s so far")


@contextlib.contextmanager
def watch(say=None, name=None):
    """Time Numba's compilations in the ``with`` block and, with ``say`` (a callable
    taking a line; None: silent), report them as they happen. ``name`` (an experiment's)
    picks the measured estimate of the first line (:func:`first_line`), and a block that
    compiled is recorded under it (:func:`record`). Yields the listener: its ``seconds``
    and ``kernels`` are the block's totals, ``compiled`` the :func:`identity` of each
    compilation. While a watch is open, :data:`logger` says
    nothing.

    Examples
    --------
    >>> from vits_ref import _compile_watch
    >>> with _compile_watch.watch() as w:
    ...     pass
    >>> w.seconds, w.kernels
    (0.0, 0)
    """
    listener = _Listener(say, name)
    with _LOCK:
        _WATCHES.append(listener)
    try:
        with event.install_listener("numba:compile", listener):
            yield listener
    finally:
        with _LOCK:
            _WATCHES.remove(listener)
    if listener.kernels and name is not None:
        record(name, listener.seconds, listener.kernels)
    if say is not None and listener.last is not None:
        say(f"compiled {listener.kernels} kernels in {listener.seconds:.0f} s (cached "
            f"on disk for the next runs)")


def seconds():
    """Seconds this process spent compiling (outermost compilations) since vits_ref was
    imported."""
    return _TOTAL["seconds"]


def kernels():
    """Compilations (nested ones included) in this process since vits_ref was imported."""
    return _TOTAL["kernels"]


install()
