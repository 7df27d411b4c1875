"""Numba's inliner: an inlined body's IR copied with one deep-copy memo, or not at all.

The library's glue is inlined before typing (:func:`vits_ref.config.kernel`,
``inline="always"``): Numba's ``InlineWorker.inline_ir`` copies the callee's IR twice per
call site (numba 0.68: once to mutate, once to return unmutated), each block with a fresh
``copy.deepcopy``. Every block holds the function's one ``Scope`` (every variable of the
function, with its location), so each block copied the whole scope again: the copying grew
with blocks x variables and was the largest single cost in a profile of compiling a bandit
driver (deep copies: 7.3 of 30 s under ``cProfile``; reported to Numba as
https://github.com/numba/numba/issues/8989).

:func:`install` makes two changes, each only where Numba's source is the one it knows
(found by its exact text; elsewhere Numba copies as it does):

- ``inline_ir``'s ``copy_ir`` copies all the blocks of one copy with one memo, which is
  what ``copy.deepcopy(the_ir.blocks)`` would do: the blocks of the copy share one copy of
  the scope, as the blocks of the function did, and each copy is still independent of the
  callee's IR and of every other copy (:func:`_install_one_memo`). This is what the
  typed passes' inlining of overloads gets.
- ``inline_function``, which builds the callee's IR afresh for each call site, inlines it
  without copying it (:func:`_install_uncopied`): the one copy that matters there is the
  one that ``inline_ir`` mutates, of an IR nothing else holds.

The same code (``tests/test_inline_copy.py`` compares the optimised LLVM IR with Numba's
own; ``tests/test_golden.py``, bits included). Measured on the 2-core machine, idle, a
cold ``python -m vits_ref compile vits-fig1``, twice each way, alternating, its compiling
(summed over its two processes, as the command prints it) and its CPU (user + sys):
Numba's copies 71.8 and 72.4 s, 94.7 and 95.7 s; one memo 64.5 and 63.7 s, 87.8 and 86.7
s; and no copy in ``inline_function`` (64.0 and 63.3 -> 60.7 and 61.0 s, 87.3 and 86.1 ->
83.7 and 84.5 s in the second pair of runs).
"""

import inspect
import re
import textwrap

#: ``copy_ir``'s copy of the blocks in numba 0.68's ``InlineWorker.inline_ir``, dedented ...
_PER_BLOCK = """\
        kernel_copy.blocks = {}
        for block_label, block in the_ir.blocks.items():
            new_block = copy.deepcopy(the_ir.blocks[block_label])
"""
#: ... and the same with one memo (as many lines: Numba's line numbers stay right)
_ONE_MEMO = """\
        kernel_copy.blocks, memo = {}, {}
        for block_label, block in the_ir.blocks.items():
            new_block = copy.deepcopy(the_ir.blocks[block_label], memo)
"""


def install():
    """Replace ``InlineWorker.inline_ir`` by its copy with one memo per IR copy, and
    ``inline_function``'s copies by none (:func:`_install_uncopied`), once per process.
    True if the first is in place, False where this Numba's source differs."""
    from numba.core import inline_closurecall as icc

    if not _install_one_memo(icc):
        return False
    _install_uncopied(icc)
    return True


def _install_one_memo(icc):
    """Put in place of ``InlineWorker.inline_ir`` Numba's own source with
    :data:`_ONE_MEMO` for :data:`_PER_BLOCK`, compiled in Numba's module. True if in
    place."""
    worker = icc.InlineWorker
    if getattr(worker.inline_ir, "_one_memo", False):
        return True
    try:
        lines, first = inspect.getsourcelines(worker.inline_ir)
    except (OSError, TypeError):  # no source (a frozen or stripped install)
        return False
    src = textwrap.dedent("".join(lines))
    if src.count(_PER_BLOCK) != 1:
        return False
    # compiled at its lines of Numba's file: tracebacks point where they did
    code = compile("\n" * (first - 1) + src.replace(_PER_BLOCK, _ONE_MEMO), icc.__file__,
                   "exec")
    made = {}
    exec(code, vars(icc), made)
    inline_ir = made["inline_ir"]
    inline_ir._one_memo = True
    inline_ir.numba_inline_ir = worker.inline_ir  # Numba's own (tests compare the two)
    inline_ir.__qualname__ = worker.inline_ir.__qualname__
    worker.inline_ir = inline_ir
    return True


class _Uncopied:
    """Stands for the :mod:`copy` module in Numba's inliner while it inlines an IR made
    for the call: a "copy" is the object itself."""

    @staticmethod
    def deepcopy(x, memo=None):
        return x


def _install_uncopied(icc):
    """Let ``InlineWorker.inline_function`` inline without copying: it builds the
    callee's IR afresh for each call (``run_untyped_passes``), so the copy that
    ``inline_ir`` mutates need not be one, and its only caller (Numba's
    ``InlineInlinables`` pass) drops the unmutated copy ``inline_ir`` returns. Done only
    where Numba's source says both: ``inline_function`` builds the IR, and
    ``inline_ir``'s copy is the module's one use of :mod:`copy` (the one replaced while
    ``inline_function`` runs). True if in place."""
    worker = icc.InlineWorker
    numbas = worker.inline_function
    if getattr(numbas, "_uncopied", False):
        return True
    try:
        own, module = inspect.getsource(numbas), inspect.getsource(icc)
    except (OSError, TypeError):
        return False
    if ("callee_ir = self.run_untyped_passes(function)" not in own
            or len(re.findall(r"\bcopy\.", module)) != 1):
        return False

    def inline_function(self, *args, **kwargs):
        saved = icc.copy
        icc.copy = _Uncopied  # Numba compiles under its compiler lock: one at a time
        try:
            return numbas(self, *args, **kwargs)
        finally:
            icc.copy = saved

    inline_function._uncopied = True
    inline_function.__qualname__ = numbas.__qualname__
    inline_function.__doc__ = numbas.__doc__
    inline_function.numba_inline_function = numbas
    worker.inline_function = inline_function
    return True
