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
"""

import functools
import hashlib
import importlib.util
import os
import re
from importlib import metadata

from numba import njit
from numba.core import caching
from numba.extending import register_jitable

FASTMATH = os.environ.get("VITS_REF_FASTMATH", "0") == "1"
CACHE = os.environ.get("VITS_REF_CACHE", "1") != "0"
# "numpy" keeps division by zero as inf/nan (which our divergence checks catch)
# instead of raising from deep inside a kernel.
ERROR_MODEL = "numpy"


# Compiled functions defined in these modules are stamped with the hash of every source
# file below, not only their own: kernel bodies are inlined across files (a driver in
# drivers/cpu.py or kernels/bandit.py embeds a body of kernels/linalg.py), so an edit of
# any of them must invalidate every cached driver. ``__module__`` is the defining module,
# also for the closures that the kernel factories build.
_STAMPED_PACKAGES = ("vits_ref.kernels", "vits_ref.drivers")
_STAMPED_MODULES = ("vits_ref.gaussian.special",)


def _is_stamped(module):
    return module in _STAMPED_MODULES or any(
        module == pkg or module.startswith(pkg + ".") for pkg in _STAMPED_PACKAGES)


def _stamp_sources():
    """``(folders, files)`` whose sources stamp the cache: every ``.py`` of each folder
    (``vits_ref.kernels``, installed from the top-level ``kernels/``, and
    ``vits_ref/drivers/``), then ``vits_ref/special.py`` and this file (the compile
    options live here). Missing ones are skipped."""
    here = os.path.dirname(os.path.abspath(__file__))
    # find_spec, not an import: vits_ref.kernels imports this module
    spec = importlib.util.find_spec("vits_ref.kernels")
    folders = [os.path.join(here, "drivers")]
    if spec is not None and spec.origin:
        folders.insert(0, os.path.dirname(os.path.abspath(spec.origin)))
    return folders, [os.path.join(here, "special.py"), os.path.abspath(__file__)]


@functools.lru_cache(maxsize=8)
def _sources_hash(stamps):
    digest = hashlib.sha256()
    for label, path, _, _ in stamps:
        with open(path, "rb") as fh:
            digest.update(label.encode() + b"\0" + fh.read() + b"\0")
    return digest.digest()


def _all_sources_stamp():
    folders, files = _stamp_sources()
    paths = []  # (label, path): the label names the file independently of the install
    for folder in folders:
        if os.path.isdir(folder):
            paths += [(os.path.basename(folder) + "/" + name, os.path.join(folder, name))
                      for name in sorted(os.listdir(folder)) if name.endswith(".py")]
    paths += [(os.path.basename(f), f) for f in files if os.path.isfile(f)]
    stamps = []
    for label, path in paths:
        st = os.stat(path)  # mtime and size key the memo, as in Numba's own stamp
        stamps.append((label, path, st.st_mtime_ns, st.st_size))
    return _sources_hash(tuple(stamps))


class _AllSourcesStamp:
    def get_source_stamp(self):
        return _all_sources_stamp()


class _StampedUserProvidedLocator(_AllSourcesStamp, caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, when set and writable."""


class _StampedInTreeLocator(_AllSourcesStamp, caching.InTreeCacheLocator):
    """``__pycache__`` next to the source, when writable."""


class _StampedUserWideLocator(_AllSourcesStamp, caching.UserWideCacheLocator):
    """The user-wide cache directory (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``)."""


class _KernelsCacheLocator:
    """Numba cache locator for the compiled kernels: stamps with *all* kernel sources.

    Numba stamps a cached function with its own file only, so a driver would keep
    running a stale copy of a body edited in another file. For functions defined in
    ``vits_ref.kernels``, ``vits_ref.drivers`` and ``vits_ref.gaussian.special`` the stamp is the
    hash of every source file listed by :func:`_stamp_sources`, wherever the function
    lives. The directory is chosen as Numba chooses it: ``NUMBA_CACHE_DIR`` if set, else
    the in-tree ``__pycache__`` if writable, else the user-wide cache directory (a
    read-only install). Other functions, and a source that is no file (zip import), are
    left to Numba's own locators.
    """

    _candidates = (_StampedUserProvidedLocator, _StampedInTreeLocator,
                   _StampedUserWideLocator)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _is_stamped(getattr(py_func, "__module__", None) or ""):
            return None
        for candidate in cls._candidates:
            locator = candidate.from_function(py_func, py_file)
            if locator is not None:
                return locator
        return None


if _KernelsCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _KernelsCacheLocator)


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


def cpu_jit(fn=None, *, parallel=False):
    """Compile a CPU driver with the library's options (``numba.njit``)."""
    deco = njit(cache=CACHE, fastmath=FASTMATH, error_model=ERROR_MODEL, parallel=parallel,
                nogil=True)
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
