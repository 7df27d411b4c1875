"""Compilation settings and the one decorator factory per target.

Every compiled function in the library is built here, so the numerical contract
(``fastmath`` off by default, NumPy's error model, on-disk caching) is stated once.

Environment variables (read at import):

``VITS_REF_FASTMATH=1``
    allow LLVM's fast-math reassociation (off by default: a reference implementation
    must reproduce the closed forms; results then differ in the last bits).
``VITS_REF_CACHE=0``
    disable Numba's on-disk cache.
"""

import functools
import hashlib
import os

from numba import njit
from numba.core import caching
from numba.extending import register_jitable

FASTMATH = os.environ.get("VITS_REF_FASTMATH", "0") == "1"
CACHE = os.environ.get("VITS_REF_CACHE", "1") != "0"
# "numpy" keeps division by zero as inf/nan (which our divergence checks catch)
# instead of raising from deep inside a kernel.
ERROR_MODEL = "numpy"


@functools.lru_cache(maxsize=8)
def _kernel_sources_hash(folder, stamps):
    digest = hashlib.sha256()
    for name, _, _ in stamps:
        with open(os.path.join(folder, name), "rb") as fh:
            digest.update(name.encode() + b"\0" + fh.read())
    with open(__file__, "rb") as fh:  # the compile options live here
        digest.update(fh.read())
    return digest.digest()


class _KernelsCacheLocator(caching.InTreeCacheLocator):
    """Numba cache locator for ``vits_ref.kernels``: stamps with *all* kernel sources.

    Numba stamps a cached function with its own file only, so a driver in
    ``kernels/bandit.py`` would keep running a stale copy of a body edited in
    ``kernels/linalg.py``. The bodies are inlined across files here, so every cached
    kernel is stamped with the hash of every ``kernels/*.py`` and of this file.
    """

    @classmethod
    def from_function(cls, py_func, py_file):
        if not getattr(py_func, "__module__", "").startswith("vits_ref.kernels"):
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        folder = os.path.dirname(self._py_file)
        stamps = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                stamps.append((name, st.st_mtime_ns, st.st_size))
        return _kernel_sources_hash(folder, tuple(stamps))


if _KernelsCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _KernelsCacheLocator)


def cpu_jit(fn=None, *, parallel=False):
    """Compile a CPU driver with the library's options (``numba.njit``)."""
    deco = njit(cache=CACHE, fastmath=FASTMATH, error_model=ERROR_MODEL, parallel=parallel,
                nogil=True)
    return deco if fn is None else deco(fn)


def kernel(fn):
    """Mark a kernel body: plain loops on arrays, no allocation.

    The body stays a Python function (so the CUDA simulator and tests can call it),
    and is compiled into whichever target calls it: CPU drivers built with
    :func:`cpu_jit`, or CUDA kernels built with :func:`cuda_jit`. This is the
    "one body, two targets" rule of DESIGN.md.
    """
    return register_jitable(fastmath=FASTMATH, error_model=ERROR_MODEL)(fn)


def cuda_jit(fn=None, *, device=False):
    """Compile a CUDA kernel (or device function) with the library's options.

    Imports ``numba.cuda`` lazily: it needs the optional ``numba-cuda`` extra.
    """
    from numba import cuda

    deco = cuda.jit(device=device, fastmath=FASTMATH)
    return deco if fn is None else deco(fn)
