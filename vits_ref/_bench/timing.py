"""Timing helpers of the benchmarks: interleaved medians and BLAS thread control.

The machine these benchmarks run on is shared and drifts by about 1.5x from minute to
minute (docs/performance.md): every figure is a ratio of medians of calls interleaved in one
process, so drift hits both sides alike.
"""

import time

import numpy as np

from .._threads import blas_threads, pin_blas_threads  # noqa: F401 (the benchmarks' names)


def interleaved_times(fns, repeats, clock=time.perf_counter):
    """Seconds of each of ``repeats`` calls of each function, the calls interleaved (repeat
    ``r`` calls every function once, in turn) so drift hits all alike: one list per
    function, repeat ``r`` of every list measured back to back (paired repeats).
    ``clock``: wall time by default; ``time.thread_time`` counts this thread's CPU time
    only (see :func:`least_cpu_times`)."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = clock()
            fn()
            times[i].append(clock() - t0)
    return times


def median_times(fns, repeats):
    """Median seconds of each function, calls interleaved so drift hits all alike."""
    return [float(np.median(t)) for t in interleaved_times(fns, repeats)]


def least_cpu_times(fns, repeats):
    """The least CPU seconds of this thread over ``repeats`` interleaved calls of each
    function: for a machine loaded by other work, where wall-time medians of
    microsecond calls swing by 2-5x (the thread is descheduled, its caches emptied).
    The CPU time leaves out the time descheduled, and the least of many calls the ones
    whose caches another process emptied; it counts one thread, so only for work on one
    thread (Numba and BLAS pinned to one)."""
    return [float(np.min(t)) for t in interleaved_times(fns, repeats, time.thread_time)]


#: What a ratio means, printed once at the top of ``python -m vits_ref bench``.
RATIO_MEANING = (
    "How to read these figures: ratio = NumPy time / compiled time, both measured in this "
    "process with their calls interleaved (so the machine's drift hits both alike).\n"
    "A ratio above 1 means the compiled kernel is faster; below 1, the NumPy version is "
    "faster at that size (it is not an error).\n"
    "'floor' is the BLAS work the algorithm cannot avoid (the same matrix products, "
    "nothing else); compiled / floor near 1 means little is left to gain.")


def ratio_text(ratio, fmt="5.2f", other="NumPy"):
    """A ratio ``other`` time / compiled time as text, ``"12.30x"``; below 1 it says so
    neutrally: ``"0.80x (NumPy faster here)"``."""
    text = f"{ratio:{fmt}}x"
    return text + f" ({other} faster here)" if ratio < 1 else text
