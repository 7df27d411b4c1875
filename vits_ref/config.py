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

import os

from numba import njit
from numba.extending import register_jitable

FASTMATH = os.environ.get("VITS_REF_FASTMATH", "0") == "1"
CACHE = os.environ.get("VITS_REF_CACHE", "1") != "0"
# "numpy" keeps division by zero as inf/nan (which our divergence checks catch)
# instead of raising from deep inside a kernel.
ERROR_MODEL = "numpy"


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
