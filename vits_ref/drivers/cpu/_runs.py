"""Independent runs split over threads, each part run by one serial compiled loop.

The run drivers (:func:`vits_ref.drivers.cpu.bandit_rounds`, ...) were ``prange`` loops
over the runs. Numba compiles a ``prange`` loop into three more machine-code libraries
(the outlined loop, its gufunc wrapper and the parallel launcher), and each links in and
optimises again everything the loop calls: for a VITS-II loop, the round's whole body
went through LLVM five times, 4.7 s of the 12 s of LLVM time of the README's first
snippet on a cold cache (docs/performance.md, "The first run"). A serial loop over the
runs goes through it twice (its body's library and its own), and :func:`over_runs` runs
it on contiguous blocks of runs in a pool of threads instead (the loop releases the GIL,
:func:`vits_ref.config.cpu_jit`): each run is still computed by one thread from its own
arrays, so the results depend neither on the number of threads nor on the blocks.

The thread count is Numba's, :func:`numba.get_num_threads` in the calling thread (what a
``prange`` would use: ``NUMBA_NUM_THREADS``, :func:`vits_ref._threads.numba_threads`).
"""

import concurrent.futures
import threading

import numba

_LOCK = threading.Lock()
_POOL = []


def _pool():
    """The process's pool of run threads (created at first use, as many threads as
    Numba's ``NUMBA_NUM_THREADS``)."""
    with _LOCK:
        if not _POOL:
            _POOL.append(concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, numba.config.NUMBA_NUM_THREADS),
                thread_name_prefix="vits_ref-runs"))
        return _POOL[0]


def blocks(R, n):
    """The bounds of ``n`` contiguous blocks of ``R`` runs, as even as can be:
    ``[0, ..., R]`` (``n + 1`` entries)."""
    return [R * i // n for i in range(n + 1)]


def over_runs(serial, per_run):
    """``call(*args)``: ``serial(*args)``, a compiled loop over the runs on the leading
    axis of the arguments at the positions ``per_run``, run on blocks of runs in
    :func:`numba.get_num_threads` threads (the caller's own thread runs the first block).

    A per-run argument may be a tuple of arrays (scratch with a row per run): each array
    is cut alike. The other arguments are passed whole to every block. One block (one
    thread, or one run) calls ``serial`` directly. ``call.serial`` is the compiled loop.
    """
    per_run = tuple(sorted(per_run))
    lead = per_run[0]

    def call(*args):
        R = args[lead].shape[0]
        n = min(numba.get_num_threads(), R)
        if n <= 1:
            return serial(*args)
        if not serial.signatures:
            # compiled (or loaded from the cache) in this thread first, once: the blocks
            # then run at once, and a compile error is raised here
            serial.compile(tuple(numba.typeof(a) for a in args))
        bounds = blocks(R, n)

        def part(k):
            a, b = bounds[k], bounds[k + 1]
            out = list(args)
            for i in per_run:
                x = args[i]
                out[i] = tuple(e[a:b] for e in x) if isinstance(x, tuple) else x[a:b]
            return out

        pool = _pool()
        futures = [pool.submit(serial, *part(k)) for k in range(1, n)]
        try:
            serial(*part(0))
        finally:  # every block has finished (or failed) before the arrays are returned
            for fut in futures:
                fut.result()

    call.serial = serial
    return call
