"""Run-time control of the thread counts of the loaded OpenBLAS libraries.

``OPENBLAS_NUM_THREADS`` is read once, when a library is loaded; NumPy's and SciPy's
OpenBLAS (the one the compiled kernels call through SciPy's BLAS) are separate libraries
with their own counts. These helpers find every OpenBLAS mapped into the process (Linux
``/proc/self/maps``; elsewhere none is found and they do nothing) and get or set its count
through its exported ``*_get_num_threads``/``*_set_num_threads``. Other BLAS libraries are
left alone. Used by the library (:mod:`vits_ref.diffusion.learned`) and the benchmarks
(:mod:`vits_ref._bench.timing`).
"""

import contextlib
import ctypes
import os

_SET_THREADS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
                "scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_")


def _loaded_openblas():
    """Paths of the OpenBLAS libraries loaded in this process (Linux; else empty)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def openblas_controls():
    """``[(path, set_num_threads, get_num_threads)]`` of every loaded OpenBLAS exporting
    both functions (one pair per library, the first of the known symbol names)."""
    out = []
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SET_THREADS:
            get = name.replace("set_", "get_")
            if hasattr(lib, name) and hasattr(lib, get):
                out.append((path, getattr(lib, name), getattr(lib, get)))
                break
    return out


def blas_threads():
    """``{library file name: threads}`` of every loaded OpenBLAS."""
    return {os.path.basename(path): int(get()) for path, _, get in openblas_controls()}


def pin_blas_threads(n=1):
    """Set the thread count of every loaded OpenBLAS to ``n``; returns :func:`blas_threads`.

    A process that imported NumPy before ``OPENBLAS_NUM_THREADS`` was set (asv 0.6's
    runner does, through pympler) keeps a multi-threaded NumPy BLAS, which slows the small
    products of the NumPy references and statsmodels on a busy machine; this sets it (and
    SciPy's) at run time.
    """
    for _, setter, _ in openblas_controls():
        setter(int(n))
    return blas_threads()


@contextlib.contextmanager
def blas_single_thread():
    """Every loaded OpenBLAS at one thread for the block, each count restored after."""
    saved = []
    for _, setter, get in openblas_controls():
        saved.append((setter, int(get())))
        setter(1)
    try:
        yield
    finally:
        for setter, n in saved:
            setter(n)
