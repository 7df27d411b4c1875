"""Numba compilation, said while it happens and timed.

On a cold cache (the first run, or after an upgrade) the first call of each kernel compiles
it: minutes on two cores, during which a run would otherwise print nothing. :func:`watch`
listens to Numba's ``"numba:compile"`` events (sent when a dispatcher compiles, not when
it loads from the cache), says once that kernels are compiling, then how many and for how
long every :data:`INTERVAL_S` seconds, and adds the time to a total kept for the process
(:func:`seconds`), which the JSON summaries record (``environment.numba_compile_s``). The
experiments' ``warmup_s`` measures only the throw-away warm-up runs, while kernels also
compile before them (timing probes, tuning, the first chunk in this process).
"""

import contextlib
import threading
import time

from numba.core import event

#: The cold-cache compile time quoted in the first message: vits-fig1 (the main job) from
#: a fresh ``NUMBA_CACHE_DIR`` on the project's 2-core machine, with other jobs running.
COLD_COMPILE_S = 240
#: Seconds between two progress lines while compiling.
INTERVAL_S = 15.0

_LOCK = threading.Lock()
_TOTAL = {"seconds": 0.0, "kernels": 0, "watched": False}


class _Listener(event.Listener):
    """Times the outermost compilations (nested ones run inside them) and reports."""

    def __init__(self, say, estimate_s):
        self.say, self.estimate_s = say, estimate_s
        self.depth, self.start, self.last = 0, None, None

    def on_start(self, ev):
        now = time.perf_counter()
        with _LOCK:
            self.depth += 1
            if self.depth > 1:
                return
            self.start = now
            if self.say is not None and self.last is None:
                self.last = now
                self.say(f"compiling kernels (first run only, about {self.estimate_s} s)")

    def on_end(self, ev):
        now = time.perf_counter()
        with _LOCK:
            self.depth -= 1
            _TOTAL["kernels"] += 1
            if self.depth == 0:
                _TOTAL["seconds"] += now - self.start
            if self.say is not None and now - self.last >= INTERVAL_S:
                self.last = now
                running = now - self.start if self.depth else 0.0
                self.say(f"compiling kernels: {_TOTAL['kernels']} compiled, "
                         f"{_TOTAL['seconds'] + running:.0f} s so far")


@contextlib.contextmanager
def watch(say=None, estimate_s=COLD_COMPILE_S):
    """Time Numba's compilations in the ``with`` block (into :func:`seconds`) and, with
    ``say`` (a callable taking a line; None: silent), report them as they happen.

    Examples
    --------
    >>> from vits_ref import _compile_watch
    >>> with _compile_watch.watch():
    ...     pass
    >>> _compile_watch.seconds() >= 0
    True
    """
    listener = _Listener(say, estimate_s)
    _TOTAL["watched"] = True
    with event.install_listener("numba:compile", listener):
        yield listener
    if say is not None and listener.last is not None:
        say(f"compiled {_TOTAL['kernels']} kernels in {_TOTAL['seconds']:.0f} s (cached "
            f"on disk for the next runs)")


def seconds():
    """Seconds spent compiling in this process under :func:`watch` so far; None if nothing
    was ever watched (the time is then unknown, not zero)."""
    return _TOTAL["seconds"] if _TOTAL["watched"] else None
