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
import types
import weakref
from importlib import metadata

from numba import njit
from numba.extending import overload

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
#
# A kernel body compiled as a function of its own (``kernel(inline=False)``) is cached on
# its own as well, so that a process compiling one driver loads the bodies another process
# compiled for another: a module-level body has no closure to carry the stamp, so the
# stamp goes into its index's source stamp instead (:class:`_StampedLocator`).


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


def own_name(fn):
    """Give ``fn``, defined in a factory, a qualified name of its own closure's.

    Numba names a compiled function's machine-code symbol after its qualified name and a
    counter of the compiling process (``bandit_online.<locals>.learn_many`` with ``v1``),
    and a function loaded from the on-disk cache keeps the names of the process that
    compiled it. Two closures of one factory (LinTS's and VITS's online update) compiled
    in two processes (two test workers, ``python -m vits_ref compile --jobs 2``) can
    carry the same symbol; loaded into one process, the second is linked to the first's
    code, and runs another policy's update on its state. A suffix hashed from the
    closure's cells (as Numba's cache key pickles them: the same in every process) makes
    the names differ wherever the code does. Cells still empty when the factory decorates
    ``fn`` are left out of the hash (tests/test_cache.py checks the factories' names).
    """
    cells = fn.__closure__
    if not cells or "<locals>" not in fn.__qualname__:
        return fn
    from numba.core.serialize import dumps

    _file_names_as_loaded(fn)
    contents = []
    for cell in cells:
        try:
            contents.append(cell.cell_contents)
        except ValueError:  # empty until the factory assigns it
            contents.append(None)
    digest = hashlib.sha256(dumps(tuple(contents))).hexdigest()[:16]
    fn.__qualname__ = f"{fn.__qualname__}_{digest}"
    return fn


#: What :func:`_closure_values` gives for a cell not filled yet.
_EMPTY = object()


def _closure_values(fn, seen=None):
    """Every value ``fn``'s closure reaches: its cells' contents, the items of the tuples
    and lists among them and, recursively, what the closures of the functions among them
    reach, each once (:data:`_EMPTY` for a cell still empty)."""
    seen = set() if seen is None else seen
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # empty until the factory assigns it
            yield _EMPTY
            continue
        stack = [value]
        while stack:
            value = stack.pop()
            if id(value) in seen:
                continue
            seen.add(id(value))
            yield value
            if isinstance(value, (tuple, list)):
                stack.extend(value)
            elif isinstance(value, types.FunctionType):
                yield from _closure_values(value, seen)


def _by_value(value):
    """Whether ``value`` is a function that cloudpickle pickles by value (with its code
    and the globals it reads): one defined in a factory."""
    return isinstance(value, types.FunctionType) and "<locals>" in value.__qualname__


def _file_names_as_loaded(fn):
    """Make ``fn`` and the functions pickled by value that its closure reaches pickle to
    the same bytes whether their module was compiled from source or loaded from bytecode:
    their code's file name becomes their module's ``__file__`` object.

    cloudpickle writes such a function's code with its file name and its module's
    ``__file__``, one string object (a pickle reference) when Python compiled the module
    from source, two equal strings when it loaded its bytecode (``_fix_co_filename``). The
    pickles, and so Numba's cache keys and :func:`own_name`'s suffixes, differed, and every
    process after the first one of an install without bytecode (``pip install -e``,
    ``--no-compile``) compiled everything again (tests/test_cache.py).
    """
    for value in (fn, *_closure_values(fn)):
        if not _by_value(value):
            continue
        name = value.__globals__.get("__file__")
        if isinstance(name, str):
            code = _code_file_name(value.__code__, name)
            if code is not value.__code__:
                value.__code__ = code


def _code_file_name(code, name):
    """``code`` with ``name`` (an equal string) as the file name of it and of the code
    objects nested in it; ``code`` itself when they have it already."""
    consts = tuple(_code_file_name(c, name) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    changed = any(a is not b for a, b in zip(consts, code.co_consts, strict=True))
    if code.co_filename == name and (code.co_filename is not name or changed):
        return code.replace(co_filename=name, co_consts=consts)
    return code


def cpu_jit(fn=None, *, parallel=False, nogil=True):
    """Compile a CPU driver with the library's options (``numba.njit``).

    ``nogil=False`` is for a function holding an object-mode block only (which takes the
    GIL whatever the flag; Numba warns when it compiles one under ``nogil=True``); called
    from other compiled functions, its flag has no effect. A function defined in a factory
    is renamed first (:func:`own_name`).
    """
    deco = njit(cache=CACHE, fastmath=FASTMATH, error_model=ERROR_MODEL, parallel=parallel,
                nogil=nogil)

    def jit(f):
        return deco(own_name(f))

    return jit if fn is None else jit(fn)


#: Options of a caller's compilation that shape only the caller's own entry points (its
#: CPython and C wrappers, whether they release the GIL), never what its callees compile.
_WRAPPER_FLAGS = ("release_gil", "no_cpython_wrapper", "no_cfunc_wrapper")


class _ImplCache(dict):
    """An overload template's cache of compiled implementations, keyed without the
    caller's :data:`_WRAPPER_FLAGS`.

    Numba's template keys each implementation by the typing context, the argument types
    and the flags of the compilation that calls it (``_OverloadFunctionTemplate._get_impl``,
    numba 0.54-0.68), and builds a new dispatcher, compiled from scratch, for every new key.
    A kernel body called by a driver (``nogil=True``, with a CPython wrapper) and by another
    body (compiled as an overload: no wrapper, the GIL held) met two sets of flags, so it
    was compiled twice in every process (``solve_lower`` by LinTS's loop and by
    ``lints_draw``: about 4 s of CPU a process in a cold ``compile vits-fig1``). The
    implementation's own compilation reads from its caller's flags only those it
    inherits (``nrt``, ``fastmath``, ``error_model``, ``forceinline``:
    ``CPUTargetOptions.finalize``), and the wrapper flags are none of them: both callers
    get the same code, now compiled once (the results are the same bits).
    """

    @staticmethod
    def _key(key):
        if not (isinstance(key, tuple) and len(key) == 4 and hasattr(key[3], "copy")
                and hasattr(key[3], "options")):
            return key  # another numba's key: left as it is
        flags = key[3].copy()
        for name in _WRAPPER_FLAGS:
            if name in flags.options:
                setattr(flags, name, False)
        return key[:3] + (flags,)

    def __getitem__(self, key):
        return super().__getitem__(self._key(key))

    def __setitem__(self, key, value):
        super().__setitem__(self._key(key), value)

    def __contains__(self, key):
        return super().__contains__(self._key(key))


def cpu_overload(func, **options):
    """``numba.extending.overload(func, target="cpu", **options)`` whose template compiles
    each implementation once per argument types, whichever wrapper flags its callers have
    (:class:`_ImplCache`). Every CPU overload of the library is registered through it.

    The template is found in Numba's typing registry, where ``overload`` has just put it;
    where it is not (another Numba), the overload works as Numba's own, compiling more.
    """
    from numba.core.typing.templates import builtin_registry

    register = overload(func, target="cpu", **options)

    def deco(typer):
        out = register(typer)
        for value, fnty in reversed(builtin_registry.globals):
            if value is func:
                for template in getattr(fnty, "templates", ()):
                    if getattr(template, "_overload_func", None) is typer and isinstance(
                            template.__dict__.get("_impl_cache"), dict):
                        template._impl_cache = _ImplCache(template._impl_cache)
                break
        return out

    return deco


class _StampedLocator:
    """Numba's cache locator for the library's sources, with :func:`sources_stamp` in the
    source stamp.

    Numba keys a cached function by its own file's contents (and a closure's cells), so a
    kernel body cached on its own (:func:`kernel`) would stay stale after an edit of a body
    it calls in another file. Wrapping the locator Numba would use for a file under the
    stamped folders (:func:`_stamp_sources`), this one stamps the index with the library's
    sources as well: an edit of any of them makes every index of the library's stale, as
    the closures over the stamp make the drivers' keys new. Cache paths are the wrapped
    locator's (``NUMBA_CACHE_DIR``, ``__pycache__`` beside the source, the user-wide
    folder). Registered first in Numba's list by :func:`_register_locator`.
    """

    def __init__(self, inner):
        self._inner = inner

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    def get_source_stamp(self):
        return (self._inner.get_source_stamp(), sources_stamp())

    @staticmethod
    def covers(py_file):
        """Whether ``py_file`` is one of the stamped sources."""
        folders, files = _stamped_roots()
        path = os.path.abspath(py_file)
        return path in files or path.startswith(folders)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not cls.covers(py_file):
            return None
        for other in _cache_impl()._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None


@functools.cache
def _stamped_roots():
    """``(folder prefixes, files)`` of :func:`_stamp_sources`, found once per process (every
    kernel body and every cached function asks)."""
    folders, files = _stamp_sources()
    return tuple(os.path.join(f, "") for f in folders), tuple(files)


@functools.cache
def _register_locator():
    """Put :class:`_StampedLocator` first in Numba's locators (once per process). False,
    and kernel bodies then not cached on their own, where Numba's list is not where this
    Numba version keeps it or ``NUMBA_CACHE_LOCATOR_CLASSES`` replaces it."""
    from numba import config as nconfig
    from numba.core import caching

    impl = _cache_impl()
    if (impl is None or getattr(nconfig, "CACHE_LOCATOR_CLASSES", None)
            or not isinstance(getattr(impl, "_locator_classes", None), list)
            or not hasattr(caching, "_CacheLocator")):
        return False
    caching._CacheLocator.register(_StampedLocator)
    impl._locator_classes.insert(0, _StampedLocator)
    return True


def _cache_impl():
    """Numba's class that holds the list of cache locators (``CacheImpl`` in Numba 0.68,
    ``_CacheImpl`` in older ones), or None."""
    from numba.core import caching

    return getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)


def _cells_stable(fn):
    """Whether ``fn``'s closure pickles to the same bytes in every process, as Numba's
    cache key pickles it: no cell empty, and no compiled dispatcher in what it reaches (a
    dispatcher pickles with a uuid drawn anew in each process: config's rule for cached
    functions), nor among the globals of a function pickled by value."""
    from numba.core.dispatcher import Dispatcher

    for value in _closure_values(fn):
        if value is _EMPTY or isinstance(value, Dispatcher):
            return False
        if _by_value(value) and any(isinstance(value.__globals__.get(n), Dispatcher)
                                    for n in _code_names(value.__code__)):
            return False
    return True


def kernel(fn=None, *, inline=False):
    """Mark a kernel body: plain loops on arrays, no allocation.

    The body stays a Python function (so the CUDA simulator and tests can call it),
    and is compiled into whichever target calls it: CPU drivers built with
    :func:`cpu_jit`, or CUDA kernels built with :func:`cuda_jit`. This is the
    "one body, two targets" rule of docs/architecture.md, "Conventions".

    The function itself is registered with Numba's CPU target only; a CUDA kernel compiles
    a copy of it registered with numba-cuda only (:func:`cuda_jit`): no function object is
    known to both targets (docs/architecture.md, "One body, two targets").

    ``inline=True`` inlines the body into its caller at Numba's IR level. The glue of
    the generic steps and loops (a piece's select/update, a potential's hooks) is small
    and called once per round or step with tuples of arrays: as a separate function each
    call would pass every array's structure and reference count, which cost the fused
    LMC round 70% of its time; inlined, the generic loop compiles to the same code as a
    hand-fused body. The CUDA copy is inlined too.
    """
    opts = {"fastmath": FASTMATH, "error_model": ERROR_MODEL}

    def deco(f):
        jit_options = opts
        if not inline:  # compiled as a function of its own: a symbol (own_name)
            own_name(f)
            if (CACHE and _StampedLocator.covers(f.__code__.co_filename)
                    and _cells_stable(f) and _register_locator()):
                # one of the library's bodies, cached on its own (its index stamped with
                # the library's sources): a process compiling another driver that calls
                # it loads it. A user's body (a potential of their own) is not: a cached
                # copy would not see an upgrade of the library's bodies it calls
                jit_options = {**opts, "cache": True}
                _CACHED_BODIES.add(f)

        @cpu_overload(f, jit_options=jit_options, strict=False,
                      inline="always" if inline else "never")
        def _cpu(*args, **kwargs):
            return f

        _BODIES[f] = bool(inline)
        if inline:
            inline_before_typing(f)
        return f

    return deco if fn is None else deco(fn)


def inline_before_typing(f, body=None):
    """Have a CPU caller's call of ``f`` replaced by the IR of ``body`` (default ``f``)
    before typing, and typed with the caller.

    Numba's untyped InlineInlinables pass inlines a called global or closure variable
    whose ``targetoptions`` say ``inline="always"``, taking its ``py_func``. The typed
    inlining of an overload alone compiles the body in full first (numba's template
    resolves the signature through the body's dispatcher: type inference, lowering and
    LLVM) only to throw it away: a cold vits-fig1 --runs 2 --rounds 20 compiled 188
    functions, 68 of them such throw-away bodies (or compiled only inside one), in 10
    drivers. The same IR reaches the caller either way (the results are bit for bit the
    same). ``body`` differs from ``f`` where the CPU form is not the Python function's
    (``kernels/views.py``: a ``carray`` on the buffer's address, not a slice). The CUDA
    copies (:func:`cuda_copy`) are new function objects without these attributes:
    numba-cuda inlines them by their registration."""
    f.targetoptions = {"inline": "always"}
    f.py_func = f if body is None else body
    return f


#: The kernel bodies cached on their own (:func:`kernel`): tests/test_cache.py checks that
#: each has one cache key in every process.
_CACHED_BODIES = weakref.WeakSet()
#: Every kernel body (:func:`kernel`, and the copies :func:`mark_body` records) and whether
#: it is inlined: the functions a CUDA kernel gets a copy of (:func:`cuda_jit`).
_BODIES = weakref.WeakKeyDictionary()
#: ``{original: (twin, typer)}``: what a CUDA kernel compiles in place of a function whose
#: CPU implementation differs (:func:`cuda_twin`).
CUDA_TWINS = {}


def body_inline(fn):
    """Whether ``fn`` is a kernel body inlined at Numba's IR level; None when it is not a
    kernel body (:func:`kernel`, :func:`mark_body`)."""
    try:
        return _BODIES.get(fn)
    except TypeError:  # not weak-referenceable: not a body
        return None


def mark_body(fn, inline):
    """Record ``fn`` (a copy of a body, registered with no target yet) as a kernel body,
    so that :func:`cuda_jit` copies and registers it like the others."""
    _BODIES[fn] = bool(inline)
    return fn


def cuda_twin(original, *, typer=None):
    """Decorator: what a CUDA kernel compiles in place of ``original``, a function whose CPU
    implementation (a Numba ``overload`` for the CPU target) differs from the loops CUDA
    runs (``kernels/views.py``, ``kernels/linalg.py``, ``kernels/philox.py``).

    :func:`cuda_jit` swaps ``original`` for a copy of the decorated function registered
    with numba-cuda alone (``typer``, when given, is an ``overload`` typing function for
    the copy instead: ``kernels/rows.py``). The simulator runs ``original`` itself.
    """
    def deco(twin):
        CUDA_TWINS[original] = (twin, typer)
        return twin

    return deco


def cuda_jit(fn=None, *, device=False):
    """Compile a CUDA kernel (or device function) with the library's options.

    Compiles a copy of ``fn`` whose kernel bodies are copies registered with numba-cuda
    alone, the functions of :data:`CUDA_TWINS` swapped for their twins
    (:func:`cuda_copy`): numba's CPU registrations (the
    ``carray`` views of ``kernels/views.py``, the BLAS products, the inlined bodies) are
    never visible to a CUDA compilation, and numba-cuda's never to a CPU one, whatever the
    process compiled before (docs/architecture.md, "One body, two targets").

    Imports ``numba.cuda`` lazily: it needs the optional ``numba-cuda`` extra.
    """
    from numba import cuda

    deco = cuda.jit(device=device, fastmath=FASTMATH)

    def wrap(f):
        return deco(cuda_copy(f))

    return wrap if fn is None else wrap(fn)


# --------------------------------------------------------------------------- CUDA copies


def _code_names(code):
    """Every global or attribute name ``code`` (and the code objects nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _simulator():
    """Whether Numba's CUDA simulator is on (read once, when Numba was imported)."""
    from numba import config as nconfig

    return bool(getattr(nconfig, "ENABLE_CUDASIM", 0))


def rebuild(fn, swap, walk, finish, always, memo):
    """``fn`` with the functions it reaches (globals, closure cells, attributes of the
    modules among its globals) rebuilt: the engine of :func:`cuda_copy` and of
    :func:`vits_ref.drivers.cuda_coop.rebind`.

    ``swap(f)`` is the function to put in place of ``f`` (or None), ``walk(f)`` whether to
    look inside ``f``, ``finish(f, new)`` registers ``new``, the copy of ``f`` (same code,
    new globals and cells). With ``always`` every function walked is copied, else only one
    that reaches a swapped function (the others are returned as they are). ``memo``
    (``{f: result}``) is shared across calls. The originals are not modified.
    """
    if not isinstance(fn, types.FunctionType):
        return fn
    twin = swap(fn)
    if twin is not None:
        if not always:
            return twin
        fn = twin  # copied below (a twin is walked whatever ``walk`` says)
    elif fn in memo:
        return memo[fn]
    elif not walk(fn):
        return fn
    if fn in memo:
        return memo[fn]
    if always:  # the copy first, filled in place: a cycle resolves to the copy
        new = _shell(fn)
        memo[fn] = new
        _fill(new, fn, lambda f: rebuild(f, swap, walk, finish, always, memo))
        return finish(fn, new)
    memo[fn] = fn  # provisional: a recursive reference resolves to the original
    new = _shell(fn)
    if not _fill(new, fn, lambda f: rebuild(f, swap, walk, finish, always, memo)):
        return fn
    memo[fn] = new = finish(fn, new)
    return new


def _shell(fn):
    """A copy of ``fn``: same code, a copy of its globals, new cells with the same contents."""
    cells = None
    if fn.__closure__:
        cells = []
        for cell in fn.__closure__:
            try:
                cells.append(types.CellType(cell.cell_contents))
            except ValueError:  # an empty cell
                cells.append(types.CellType())
        cells = tuple(cells)
    new = types.FunctionType(fn.__code__, dict(fn.__globals__), fn.__name__, fn.__defaults__,
                             cells)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__module__, new.__qualname__, new.__doc__ = fn.__module__, fn.__qualname__, fn.__doc__
    return new


def _foreign(module):
    """Numba, NumPy and the standard library: modules whose attributes are never bodies."""
    top = module.__name__.partition(".")[0]
    return top in ("numba", "numpy", "llvmlite", "math", "cmath", "operator", "builtins")


def _fill(new, fn, rebuilt):
    """Put ``rebuilt(f)`` in ``new`` (:func:`_shell` of ``fn``) for every function ``f`` that
    ``fn`` reaches; modules among its globals whose attributes read by ``fn`` change are
    replaced by copies (``types.ModuleType``) with those attributes. True if any changed."""
    changed = False
    names = _code_names(fn.__code__)
    for name in names:
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType):
            other = rebuilt(value)
            if other is not value:
                new.__globals__[name] = other
                changed = True
        elif isinstance(value, types.ModuleType) and not _foreign(value):
            attrs = {}
            for attr in names:
                item = getattr(value, attr, None)
                if isinstance(item, types.FunctionType):
                    other = rebuilt(item)
                    if other is not item:
                        attrs[attr] = other
            if attrs:
                proxy = types.ModuleType(value.__name__, value.__doc__)
                proxy.__dict__.update(vars(value))
                proxy.__dict__.update(attrs)
                new.__globals__[name] = proxy
                changed = True
    for cell in new.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        other = rebuilt(value)
        if other is not value:
            cell.cell_contents = other
            changed = True
    return changed


#: ``{function: its CUDA copy}`` for the whole process (:func:`cuda_copy`).
_CUDA_COPIES = weakref.WeakKeyDictionary()
#: The CUDA copies made so far (what only numba-cuda may know): ``tests/test_cuda_targets.py``.
CUDA_COPIES = weakref.WeakSet()


def cuda_copy(fn):
    """``fn`` (a CUDA kernel's Python function) rebuilt for the CUDA target alone.

    Every kernel body it reaches (:func:`kernel`; globals, closure cells, module attributes,
    recursively) is replaced by a copy (same code, globals and cells pointing to copies)
    registered with numba-cuda alone (``numba.cuda.extending.register_jitable``, inlined
    when the body is), and every function of :data:`CUDA_TWINS` by a copy of its twin:
    numba's CPU registrations of the originals (the ``carray`` views of ``take2``, the
    inlined bodies' ``numba.core.ir``) can then never be picked by a CUDA compilation,
    whatever the process compiled before, and numba-cuda never registers an original (a
    later CPU compilation sees numba's templates only). Copies are made once per process.

    Under the simulator (no compilation, so no registration to keep apart) ``fn`` is
    returned as it is: the simulator swaps the ``cuda`` module in the globals of the
    functions it runs, which a copy's own globals would hide from the functions it calls
    (``module 'numba.cuda' has no attribute 'threadIdx'``).
    """
    sim = _simulator()
    if sim:
        return fn
    if not sim:
        from numba.cuda.extending import overload as cuda_overload
        from numba.cuda.extending import register_jitable as cuda_register_jitable

    twins = {} if sim else {f: twin for f, (twin, _) in CUDA_TWINS.items()}
    typers = {} if sim else {twin: typer for twin, typer in CUDA_TWINS.values() if typer}
    root = fn

    def walk(f):
        return f is root or body_inline(f) is not None

    def finish(f, new):
        CUDA_COPIES.add(new)
        _CUDA_COPIES[new] = new  # a copy reached again is its own copy
        if f is root:
            return new
        inline = bool(body_inline(f))
        mark_body(new, inline)
        if sim:
            return new
        opts = {"fastmath": True} if FASTMATH else {}
        if f in typers:
            cuda_overload(new, target="cuda")(typers[f])
        else:
            cuda_register_jitable(inline="always" if inline else "never", **opts)(new)
        return new

    return rebuild(fn, twins.get, walk, finish, True, _CUDA_COPIES)
