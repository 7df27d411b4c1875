"""Run-time control of the thread counts of the loaded OpenBLAS libraries.

``OPENBLAS_NUM_THREADS`` is read once, when a library is loaded; NumPy's and SciPy's
OpenBLAS (the one the compiled kernels call through SciPy's BLAS) are separate libraries
with their own counts. These helpers find every OpenBLAS mapped into the process (Linux
``/proc/self/maps``; elsewhere none is found and they do nothing) and get or set its count
through its exported ``*_get_num_threads``/``*_set_num_threads``. Other BLAS libraries are
left alone. Used by the library (:mod:`vits_ref.diffusion.learned`) and the benchmarks
(:mod:`vits_ref._bench.timing`).

Numba's thread count is set here and nowhere else (``tests/test_plumbing.py`` scans the
source): :func:`numba_threads` for a block (validated, restored on exit, exception or not),
:func:`set_numba_threads` for the life of a worker process.
"""

import contextlib
import ctypes
import numbers
import os
import sys

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


#: The last scan of :func:`openblas_controls`, and the number of imported modules then.
_SCANNED = {"modules": None, "controls": []}


def openblas_controls():
    """``[(path, set_num_threads, get_num_threads)]`` of every loaded OpenBLAS exporting
    both functions (one pair per library, the first of the known symbol names).

    Scanned again only when modules were imported since the last scan (NumPy's and SciPy's
    OpenBLAS come with their extension modules): reading ``/proc/self/maps`` takes 1-2 ms,
    and :func:`vits_ref.simulate` asks at every call."""
    if _SCANNED["modules"] != len(sys.modules):
        _SCANNED["controls"] = _scan_controls()
        _SCANNED["modules"] = len(sys.modules)
    return list(_SCANNED["controls"])


def _scan_controls():
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


def blas_to_one(n=1):
    """Set every loaded OpenBLAS that is not at ``n`` threads (default one) to ``n``;
    returns what :func:`blas_restore` puts back. A library already there is left alone:
    reading a count costs a fraction of a microsecond, setting one several (OpenBLAS takes
    its lock), and the engines on a history call this at every update and draw
    (:class:`vits_ref.inference.base.Engine`), mostly inside a :func:`vits_ref.simulate`
    that has pinned it already."""
    saved = []
    for _, setter, get in openblas_controls():
        m = int(get())
        if m != n:
            saved.append((setter, m))
            setter(n)
    return saved


def blas_restore(saved):
    """Put back the counts :func:`blas_to_one` changed."""
    for setter, n in saved:
        setter(n)


@contextlib.contextmanager
def blas_single_thread():
    """Every loaded OpenBLAS at one thread for the block, each count restored after."""
    saved = blas_to_one()
    try:
        yield
    finally:
        blas_restore(saved)


# --------------------------------------------------------------------------- Numba threads


def _numba_thread_count(n, name):
    """``n`` as an int in ``[1, NUMBA_NUM_THREADS]``, or raise naming ``name`` (the checks
    of :func:`vits_ref._validate.positive_int`, which this layer cannot import, and Numba's
    upper bound, whose own error does not name the argument)."""
    import numba

    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    top = numba.config.NUMBA_NUM_THREADS
    if n > top:
        raise ValueError(f"{name} must be <= {top} (NUMBA_NUM_THREADS, the threads Numba "
                         f"started with), got {n}")
    return int(n)


def set_numba_threads(n, name="n_threads"):
    """Set Numba's thread count to ``n`` (validated, see :func:`numba_threads`) for good;
    returns the previous count. For a worker process's initializer only: everywhere else
    use :func:`numba_threads`, which restores the count."""
    import numba

    n = _numba_thread_count(n, name)
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    return old


@contextlib.contextmanager
def numba_threads(n, name="n_threads"):
    """Numba's thread count set to ``n`` for the block and restored after it, exception or
    not; ``n=None`` leaves the count as it is (and still restores it, in case the block
    changes it). Yields the count in force inside the block.

    ``n`` must be an integer in ``[1, NUMBA_NUM_THREADS]``: a TypeError or ValueError naming
    ``name`` otherwise (raised before anything is changed).

    Examples
    --------
    >>> import numba
    >>> from vits_ref._threads import numba_threads
    >>> before = numba.get_num_threads()
    >>> with numba_threads(1) as n:
    ...     n == numba.get_num_threads() == 1
    True
    >>> numba.get_num_threads() == before
    True
    """
    import numba

    if n is not None:
        n = _numba_thread_count(n, name)
    old = numba.get_num_threads()
    try:
        if n is not None:
            numba.set_num_threads(n)
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(old)


def worker_share(jobs):
    """The threads of each of ``jobs`` worker processes sharing this machine: Numba's
    threads (``NUMBA_NUM_THREADS``, the cores it saw) over the workers, at least 1."""
    import numba

    return max(1, numba.config.NUMBA_NUM_THREADS // max(1, int(jobs)))


def init_worker(n_threads):
    """A worker process's initializer: Numba's threads and every OpenBLAS's at
    ``n_threads`` (its share, :func:`worker_share`) for the life of the process.

    OpenBLAS's threads must be shared too: each worker's library otherwise starts one per
    core, and its idle threads spin between calls. Measured on a 2-core machine with two
    workers busy, Rényi VI's logistic rounds on wine took 2.1-2.3 s for 40 rounds with two
    OpenBLAS threads a worker, 0.72-0.76 s with one. ``OPENBLAS_NUM_THREADS`` is set as
    well, for a library loaded after this call."""
    os.environ["OPENBLAS_NUM_THREADS"] = str(int(n_threads))
    set_numba_threads(n_threads)
    pin_blas_threads(n_threads)

