"""Numba's inliner copies the callee's IR with one deep-copy memo, not one per block.

The library's glue is inlined before typing (:func:`vits_ref.config.kernel`,
``inline="always"``): Numba's ``InlineWorker.inline_ir`` copies the callee's IR twice per
call site (numba 0.68: once to mutate, once to return unmutated), each block with a fresh
``copy.deepcopy``. Every block holds the function's one ``Scope`` (every variable of the
function, with its location), so each block copied the whole scope again: the copying grew
with blocks x variables and was the largest single cost in a profile of compiling a bandit
driver (deep copies: 7.3 of 30 s under ``cProfile``; reported to Numba as
https://github.com/numba/numba/issues/8989).

:func:`install` gives ``inline_ir``'s ``copy_ir`` one memo for all the blocks of one copy,
which is what ``copy.deepcopy(the_ir.blocks)`` would do: the blocks of the copy share one
copy of the scope, as the blocks of the function did, and each copy is still independent
of the callee's IR and of every other copy. Same IR, same machine code, same bits
(``tests/test_golden.py``). Measured on the 2-core machine, idle, a cold
``python -m vits_ref compile vits-fig1`` twice each way, alternating: its compiling (summed
over its two processes) 71.8 and 72.4 -> 64.5 and 63.7 s; CPU (user + sys) 94.7 and 95.7
-> 87.8 and 86.7 s; wall 49.6 and 50.3 -> 46.1 and 45.8 s.

The change is made on Numba's own source of ``inline_ir``, found by its exact text: with
another Numba whose text differs, nothing is changed (:func:`install` returns False) and
Numba copies as it does.
"""

import inspect
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
    """Replace ``InlineWorker.inline_ir`` by its copy with one memo per IR copy (once per
    process). True if it is in place, False where this Numba's source differs."""
    from numba.core import inline_closurecall as icc

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
