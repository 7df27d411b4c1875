"""Compilation settings and the one decorator factory per target.

Every compiled function in the library is built here, so the numerical contract
(``fastmath`` off by default, NumPy's error model, on-disk caching) is stated once.

Environment variables (read at import):

``VITS_REF_FASTMATH=1``
    allow LLVM's fast-math reassociation (off by default: a reference implementation
    must reproduce the closed forms; results then differ in the last bits).
``VITS_REF_CACHE=0``
    disable Numba's on-disk cache.

The cache lives where Numba puts it: ``NUMBA_CACHE_DIR`` if set, else ``__pycache__``
next to the sources if writable, else the user-wide cache directory (``~/.cache/numba``).
An edit of any kernel or driver source invalidates every cached function that inlines it
(:func:`sources_stamp`).
"""

import functools
import hashlib
import importlib.util
import os
import re
from importlib import metadata

from numba import njit
from numba.extending import register_jitable

FASTMATH = os.environ.get("VITS_REF_FASTMATH", "0") == "1"
CACHE = os.environ.get("VITS_REF_CACHE", "1") != "0"
# "numpy" keeps division by zero as inf/nan (which our divergence checks catch)
# instead of raising from deep inside a kernel.
ERROR_MODEL = "numpy"


# Numba keys a cached function by the source file that defines it and, for a closure, by
# the contents of its cells (numba PR #6097, since 0.51). Kernel bodies are inlined across
# files (a driver of drivers/cpu/engines.py embeds bodies of kernels/linalg.py), so an edit of a
# body in another file would leave a stale compiled driver. Every cached function of the
# library therefore closes over :func:`sources_stamp`, directly (``_ = stamp``, built by
# :func:`stamped` at module level or in a factory) or through a bodies' fingerprint that
# includes it (:func:`vits_ref.kernels.potential.fingerprint`): an edit of any kernel or
# driver source, of this file, or a change of the compile options gives it a new key.
#
# The key hashes the closure's cells as pickled (cloudpickle), so no cached function may
# close over a compiled dispatcher, directly or through a body pickled by value: a
# dispatcher pickles with a uuid drawn anew in each process, so its caller's key would
# change with every process and the cache would never load it (SVGD's steps were compiled
# again by every worker process of a parallel run). Call another compiled function as a
# module-level global, or inline its body (tests/test_cache.py checks every driver).


def _stamp_sources():
    """``(folders, files)`` whose sources make the stamp: every ``.py`` under each folder,
    subfolders included (``vits_ref.kernels``, installed from the top-level ``kernels/``,
    and ``vits_ref/drivers/`` with its package ``drivers/cpu/``), then this file (the
    compile options live here). Missing ones are skipped."""
    here = os.path.dirname(os.path.abspath(__file__))
    # find_spec, not an import: vits_ref.kernels imports this module
    spec = importlib.util.find_spec("vits_ref.kernels")
    folders = [os.path.join(here, "drivers")]
    if spec is not None and spec.origin:
        folders.insert(0, os.path.dirname(os.path.abspath(spec.origin)))
    return folders, [os.path.abspath(__file__)]


def _sources_hash(folders, files, options):
    """A 63-bit hash of the ``.py`` files under ``folders`` (subfolders included), of
    ``files`` and of ``options`` (each file labelled by its path from its folder's name,
    ``drivers/cpu/bandit.py``, not by where it is installed)."""
    paths = []
    for folder in folders:
        for sub, dirs, names in os.walk(folder):  # nothing when the folder is missing
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            rel = os.path.relpath(sub, folder).replace(os.sep, "/")
            label = os.path.basename(folder) + ("" if rel == "." else "/" + rel)
            paths += [(label + "/" + name, os.path.join(sub, name))
                      for name in sorted(names) if name.endswith(".py")]
    paths += [(os.path.basename(f), f) for f in files if os.path.isfile(f)]
    digest = hashlib.sha256(repr(options).encode() + b"\0")
    for label, path in paths:
        with open(path, "rb") as fh:
            digest.update(label.encode() + b"\0" + fh.read() + b"\0")
    return int.from_bytes(digest.digest()[:8], "little") >> 1


@functools.cache
def sources_stamp():
    """The stamp of the library's compiled code: a 63-bit hash of every kernel and driver
    source (:func:`_stamp_sources`) and of the compile options (``fastmath``, the error
    model), computed once per process. Every cached compiled function closes over it, so
    Numba's on-disk cache recompiles it after an edit of a body in any of those files."""
    folders, files = _stamp_sources()
    return _sources_hash(folders, files, (FASTMATH, ERROR_MODEL))


def stamped(build):
    """``build(sources_stamp())``: a module-level compiled function keyed by the stamp.

    Numba keys a cached function by its closure's contents, and a module-level function
    has no closure; ``build(stamp)`` defines the function with ``_ = stamp`` in its body
    and returns it::

        @stamped
        def chol_update_rows(stamp):
            @cpu_jit
            def chol_update_rows(L, X):
                _ = stamp
                ...

            return chol_update_rows
    """
    return build(sources_stamp())


def _release(version):
    """Leading numeric release of a version string: ``"2.5.0rc1"`` -> ``(2, 5, 0)``."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match.group().split(".")) if match else ()


def check_cuda_stack():
    """Raise ``ImportError`` when the installed numba-cuda cannot work with NumPy.

    numba-cuda <= 0.30.4 registers ``np.row_stack`` when its CUDA target loads, and
    NumPy 2.5 removed it. Reads installed versions only (``importlib.metadata``): it
    imports neither ``numba.cuda`` nor ``numba_cuda``. Does nothing when either is absent.
    """
    try:
        numpy_version = metadata.version("numpy")
        numba_cuda_version = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        return
    if _release(numpy_version) >= (2, 5) and _release(numba_cuda_version) <= (0, 30, 4):
        raise ImportError(
            f"numba-cuda {numba_cuda_version} does not work with numpy {numpy_version} "
            f"(np.row_stack was removed in numpy 2.5); fix: pip install \"numpy<2.5\"")


def cpu_jit(fn=None, *, parallel=False, nogil=True):
    """Compile a CPU driver with the library's options (``numba.njit``).

    ``nogil=False`` is for a function holding an object-mode block only (which takes the
    GIL whatever the flag; Numba warns when it compiles one under ``nogil=True``); called
    from other compiled functions, its flag has no effect.
    """
    deco = njit(cache=CACHE, fastmath=FASTMATH, error_model=ERROR_MODEL, parallel=parallel,
                nogil=nogil)
    return deco if fn is None else deco(fn)


def kernel(fn=None, *, inline=False):
    """Mark a kernel body: plain loops on arrays, no allocation.

    The body stays a Python function (so the CUDA simulator and tests can call it),
    and is compiled into whichever target calls it: CPU drivers built with
    :func:`cpu_jit`, or CUDA kernels built with :func:`cuda_jit`. This is the
    "one body, two targets" rule of docs/architecture.md, "Conventions".

    ``inline=True`` inlines the body into its caller at Numba's IR level. The glue of
    the generic steps and loops (a piece's select/update, a potential's hooks) is small
    and called once per round or step with tuples of arrays: as a separate function each
    call would pass every array's structure and reference count, which cost the fused
    LMC round 70% of its time; inlined, the generic loop compiles to the same code as a
    hand-fused body. Such a body is registered for the CUDA target too
    (:func:`_register_inline_for_cuda`).
    """
    opts = {"fastmath": FASTMATH, "error_model": ERROR_MODEL}
    if inline:
        opts["inline"] = "always"

    def deco(f):
        f = register_jitable(**opts)(f)
        if inline:
            # Inlined before typing (numba's untyped InlineInlinables pass, which inlines
            # a called global or closure variable whose ``targetoptions`` say
            # ``inline="always"``): the call is replaced by the body's IR and typed with
            # the caller. The typed inlining of register_jitable alone compiles the body
            # in full first (numba's template resolves the signature through the body's
            # dispatcher: type inference, lowering and LLVM) only to throw it away: a
            # cold vits-fig1 --runs 2 --rounds 20 compiled 188 functions, 68 of them such
            # throw-away bodies (or compiled only inside one), in 10 drivers. The same IR
            # reaches the caller either way (the results are bit for bit the same).
            f.targetoptions = {"inline": "always"}
            f.py_func = f
            _INLINE_BODIES.append(f)
            if _CUDA_ON:
                _register_inline_for_cuda()
        return f

    return deco if fn is None else deco(fn)


#: Bodies of :func:`kernel` with ``inline=True``, in definition order; the CUDA target
#: gets them registered (:func:`_register_inline_for_cuda`) from the first
#: :func:`cuda_jit` on, so ``import vits_ref`` never imports ``numba.cuda``.
_INLINE_BODIES = []
_CUDA_REGISTERED = 0  # how many of _INLINE_BODIES are registered for the CUDA target
_CUDA_ON = False  # a cuda_jit has run: new inlined bodies are registered at once


def _register_inline_for_cuda():
    """Register the inlined kernel bodies for the CUDA target.

    numba's ``register_jitable(inline="always")`` (what :func:`kernel` uses) inlines
    ``numba.core.ir`` into the caller; numba-cuda (0.30.4) compiles with its own copy of
    the IR classes and fails on the mixture (an ``AssertionError`` in its
    ``postproc._patch_var_dels``, or ``mul(omitted, omitted)`` in typing), so every
    kernel calling an inlined body failed to compile for a GPU. numba-cuda's own
    ``register_jitable(inline="always")`` on the same function is what its typing finds
    for the CUDA target. Found by compiling the fused loop to sm_90 PTX without a GPU
    (``tests/test_cuda_ptx.py``, 2026-11-23). The simulator runs the bodies as Python
    and needs nothing.
    """
    global _CUDA_REGISTERED, _CUDA_ON
    _CUDA_ON = True
    if _CUDA_REGISTERED == len(_INLINE_BODIES):
        return
    from numba import config as nconfig

    if nconfig.ENABLE_CUDASIM:
        _CUDA_REGISTERED = len(_INLINE_BODIES)
        return
    from numba.cuda.extending import register_jitable as cuda_register_jitable

    pending = _INLINE_BODIES[_CUDA_REGISTERED:]
    _CUDA_REGISTERED = len(_INLINE_BODIES)
    for f in pending:
        cuda_register_jitable(inline="always")(f)


def cuda_jit(fn=None, *, device=False):
    """Compile a CUDA kernel (or device function) with the library's options.

    Imports ``numba.cuda`` lazily: it needs the optional ``numba-cuda`` extra.
    """
    from numba import cuda

    _register_inline_for_cuda()
    deco = cuda.jit(device=device, fastmath=FASTMATH)
    return deco if fn is None else deco(fn)
