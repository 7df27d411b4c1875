"""Timing helpers of the benchmarks: interleaved medians and BLAS thread control.

The machine these benchmarks run on is shared and drifts by about 1.5x from minute to
minute (PERFORMANCE.md): every figure is a ratio of medians of calls interleaved in one
process, so drift hits both sides alike.
"""

import time

import numpy as np

from .._threads import blas_threads, pin_blas_threads  # noqa: F401 (the benchmarks' names)


def median_times(fns, repeats):
    """Median seconds of each function, calls interleaved so drift hits all alike."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]
