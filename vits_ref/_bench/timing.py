"""Timing helpers of the benchmarks: interleaved medians and BLAS thread control.

The machine these benchmarks run on is shared and drifts by about 1.5x from minute to
minute (PERFORMANCE.md): every figure is a ratio of medians of calls interleaved in one
process, so drift hits both sides alike.
"""

import ctypes
import os
import time

import numpy as np

_SET_THREADS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
                "scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_")
_GET_THREADS = tuple(name.replace("set_", "get_") for name in _SET_THREADS)


def median_times(fns, repeats):
    """Median seconds of each function, calls interleaved so drift hits all alike."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def _loaded_openblas():
    """Paths of the OpenBLAS libraries loaded in this process (Linux; else empty)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def blas_threads():
    """``{library: threads}`` of every loaded OpenBLAS (NumPy's and SciPy's are separate)."""
    out = {}
    for path in _loaded_openblas():
        lib = ctypes.CDLL(path)
        for name in _GET_THREADS:
            if hasattr(lib, name):
                out[os.path.basename(path)] = int(getattr(lib, name)())
                break
    return out


def pin_blas_threads(n=1):
    """Set the thread count of every loaded OpenBLAS at run time; returns :func:`blas_threads`.

    ``OPENBLAS_NUM_THREADS`` is read once, when a library is loaded: a process that
    imported NumPy before the variable was set (asv 0.6's runner does, through pympler)
    keeps a multi-threaded NumPy BLAS, which slows the small products of the NumPy
    references and statsmodels on a busy machine. SciPy's OpenBLAS (the one the compiled
    kernels call) is a separate library with its own count; both are set here.
    """
    for path in _loaded_openblas():
        lib = ctypes.CDLL(path)
        for name in _SET_THREADS:
            if hasattr(lib, name):
                getattr(lib, name)(int(n))
                break
    return blas_threads()
