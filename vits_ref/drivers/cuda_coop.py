"""Cooperative CUDA kernels, exploratory: rebuild a body with block-cooperative primitives.

Issue 11 item 2 asks for a block per run in which the threads split the products of the
O(d^3) VITS round while "the body stays the one the CPU compiles". This module holds what
the exploration found to work and the check that says where it cannot (docs/cuda.md):

* :func:`rebind` rebuilds a kernel body, and every body it calls, with the cooperative
  primitives of :mod:`vits_ref.kernels.coop_linalg` in place of :mod:`vits_ref.kernels.linalg`'s
  (new function objects over the same code, their globals and closure cells swapped): no
  body is duplicated in the source, and the CPU's bodies are untouched. Verified under the
  simulator (``tests/test_coop_design.py``); Numba's CUDA compiler resolves a function's
  globals the same way, but compiling a rebuilt whole body needs a GPU (unverified here).
* :func:`serial_shared_writes` lists the array stores a body's call graph makes *outside*
  the primitives. Run redundantly by every thread of a block on shared state, such a
  store races: an in-place ``mu[i] -= h g[i]`` done by thread 0 is read again by a later
  thread and applied twice; a plain store can overwrite a value another thread has yet
  to read. A body is block-safe only if this list is empty (stores of values that no
  thread reads back, such as the run's ``regret[t]``, are the benign exception). Today's
  VITS and LinTS bodies are not: docs/cuda.md lists their stores and the refactor that
  would make them so (every in-place loop a primitive).

Imports ``numba.cuda`` (the optional ``cuda`` extra) through :mod:`.coop_linalg`.
"""

import ast
import inspect
import textwrap
import types

from ..config import kernel
from ..kernels import coop_linalg

PRIMITIVES = frozenset(coop_linalg.REPLACEMENTS)
_KERNEL_MODULES = ("vits_ref.kernels",)


def _code_names(code):
    """Every global name ``code`` (and the code objects nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _in(fn, modules):
    mod = getattr(fn, "__module__", None) or ""
    return any(mod == m or mod.startswith(m + ".") for m in modules)


def rebind(fn, replacements=None, modules=_KERNEL_MODULES, _memo=None):
    """``fn`` rebuilt with ``replacements`` (default: :mod:`.coop_linalg`'s primitives).

    Walks the global names and closure cells of ``fn`` and of every function they reach
    that is defined in ``modules`` (the kernel bodies); a function that reaches a replaced
    primitive is copied (same code, new globals and cells) and registered as a kernel body,
    the others are returned as they are. The originals are not modified.
    """
    reps = coop_linalg.REPLACEMENTS if replacements is None else replacements
    memo = {} if _memo is None else _memo
    if not isinstance(fn, types.FunctionType):
        return fn
    if fn in reps:
        return reps[fn]
    if id(fn) in memo:
        return memo[id(fn)]
    if not _in(fn, modules):
        return fn
    memo[id(fn)] = fn  # provisional: a recursive reference resolves to the original
    swapped = {}
    for name in _code_names(fn.__code__):
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType):
            new = rebind(value, reps, modules, memo)
            if new is not value:
                swapped[name] = new
    cells = fn.__closure__
    new_cells = None
    if cells:
        contents = []
        for cell in cells:
            try:
                contents.append(cell.cell_contents)
            except ValueError:  # an empty cell
                contents.append(cell)
        rebuilt = [rebind(c, reps, modules, memo) if isinstance(c, types.FunctionType) else c
                   for c in contents]
        if any(a is not b for a, b in zip(rebuilt, contents, strict=True)):
            new_cells = tuple(cell if new is old else types.CellType(new)
                              for cell, new, old in zip(cells, rebuilt, contents, strict=True))
    if not swapped and new_cells is None:
        return fn
    glb = dict(fn.__globals__)
    glb.update(swapped)
    new = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__,
                             new_cells if new_cells is not None else cells)
    new.__module__, new.__qualname__, new.__doc__ = fn.__module__, fn.__qualname__, fn.__doc__
    new = kernel(new)
    memo[id(fn)] = new
    return new


def _reachable(fn, modules, seen):
    """The functions of ``modules`` that ``fn`` reaches (globals and closure cells),
    primitives excluded."""
    if not isinstance(fn, types.FunctionType) or fn in PRIMITIVES or id(fn) in seen:
        return
    if not _in(fn, modules):
        return
    seen[id(fn)] = fn
    for name in _code_names(fn.__code__):
        _reachable(fn.__globals__.get(name), modules, seen)
    for cell in fn.__closure__ or ():
        try:
            _reachable(cell.cell_contents, modules, seen)
        except ValueError:
            pass


def serial_shared_writes(*bodies, modules=_KERNEL_MODULES):
    """``[(qualified name, line, source), ...]``: the array stores (``a[i] = ...``,
    ``a[i] += ...``) in the functions the ``bodies`` reach, primitives excluded.

    Run by every thread of a block on shared arrays, each is a race unless the stored
    value is never read back by the body (see the module docstring). Stores into arrays
    that are thread-private are not distinguished: the list is what to review.
    """
    seen = {}
    for body in bodies:
        _reachable(body, modules, seen)
    out = []
    for fn in sorted(seen.values(), key=lambda f: (f.__module__, f.__qualname__)):
        try:
            src = textwrap.dedent(inspect.getsource(fn))
            first = fn.__code__.co_firstlineno
        except (OSError, TypeError):
            continue
        lines = src.splitlines()
        for node in ast.walk(ast.parse(src)):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Subscript) for t in targets):
                out.append((f"{fn.__module__}.{fn.__qualname__}", first + node.lineno - 1,
                            lines[node.lineno - 1].strip()))
    return out
