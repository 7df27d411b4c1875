"""Numba made faster where it is slow for this library's kernels, doing the same work:
an inlined body's IR copied with one deep-copy memo or not at all, and the compiler flags
hashed and compared without listing every option's value (the same code compiled); and,
under Numba's CUDA simulator, a block's barriers released when the last thread reaches
them instead of by a polling thread (the same threads run, in the same order of barriers).

Each is installed by :func:`install` (from ``vits_ref/__init__.py``, before any kernel
compiles), only where Numba's source is the one it knows (found by its exact text;
elsewhere Numba does as it does). ``VITS_REF_NUMBA_AS_IS`` in the environment leaves
Numba as it is: ``inliner``, ``flags``, ``simulator`` (comma-separated) or ``all`` (also
``1``), for a comparison of times or should a Numba release misbehave with a change.

The inliner
-----------
The library's glue is inlined before typing (:func:`vits_ref.config.kernel`,
``inline="always"``): Numba's ``InlineWorker.inline_ir`` copies the callee's IR twice per
call site (numba 0.68: once to mutate, once to return unmutated), each block with a fresh
``copy.deepcopy``. Every block holds the function's one ``Scope`` (every variable of the
function, with its location), so each block copied the whole scope again: the copying grew
with blocks x variables and was the largest single cost in a profile of compiling a bandit
driver (deep copies: 7.3 of 30 s under ``cProfile``; reported to Numba as
https://github.com/numba/numba/issues/8989).

:func:`install_inliner` makes two changes:

- ``inline_ir``'s ``copy_ir`` copies all the blocks of one copy with one memo, which is
  what ``copy.deepcopy(the_ir.blocks)`` would do: the blocks of the copy share one copy of
  the scope, as the blocks of the function did, and each copy is still independent of the
  callee's IR and of every other copy (:func:`_install_one_memo`). This is what the
  typed passes' inlining of overloads gets.
- ``inline_function``, which builds the callee's IR afresh for each call site, inlines it
  without copying it (:func:`_install_uncopied`): the one copy that matters there is the
  one that ``inline_ir`` mutates, of an IR nothing else holds.

The same code (``tests/test_inline_copy.py`` compares the optimised LLVM IR with Numba's
own; ``tests/test_golden.py``, bits included). Measured on the 2-core machine (an EPYC
of the ``znver1`` generation, 2026-11-30), idle, a cold ``python -m vits_ref compile
vits-fig1``, twice each way, alternating, its compiling
(summed over its two processes, as the command prints it) and its CPU (user + sys):
Numba's copies 71.8 and 72.4 s, 94.7 and 95.7 s; one memo 64.5 and 63.7 s, 87.8 and 86.7
s; and no copy in ``inline_function`` (64.0 and 63.3 -> 60.7 and 61.0 s, 87.3 and 86.1 ->
83.7 and 84.5 s in the second pair of runs).

The flags
---------
Numba looks an overload's implementation up by a key that holds the compiler flags in
force (``_OverloadFunctionTemplate._get_impl``, numba 0.68), and so hashes and compares a
``TargetConfig`` (``Flags``) at every typing of a call to one of its own functions:
thousands of times in one driver's compile. Each hash and each comparison built the dict
of all the options' values (``TargetConfig.values``: about 30 property reads): about 7% of
a ``cProfile`` of compiling the VTS unit of vits-fig1 on an empty cache (``__eq__`` 6.5 s
and ``__hash__`` 2.7 s of 135 s).

:func:`install_flags` gives the two methods the same answers, faster:

- the hash, ``hash(tuple(sorted(self.values())))``, is that of the sorted option *names*
  (sorting a dict sorts its keys), which are fixed per class: computed once per class,
  the same value;
- two configs of one class whose set values are equal (``_values``, what every option's
  getter reads, with the class's default for an option not set) have equal values: equal
  without listing them. Any other pair is compared by Numba's own ``__eq__``.

So every lookup finds what it found before (``tests/test_flags_compare.py`` checks both
answers against Numba's on planted configs). Measured as above
(``VITS_REF_NUMBA_AS_IS=flags`` for Numba's own), six runs each way, alternating, with the
inliner's change in place, on the project's machine of 2026-11-30 (an EPYC of the
``znver3`` generation): compiling 50.7-58.7 s (median 54.6) against Numba's comparisons'
54.9-65.2 s (median 59.6); CPU 71.5-79.8 s (median 75.4) against 75.5-85.7 s (median
80.3).

The simulator
-------------
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``; numba-cuda 0.30) runs each thread of
a block as a Python thread, and its ``BlockManager.run`` releases a barrier
(``syncthreads``) from the calling thread, which polls every thread of the block in a
loop (``is_alive``, and whether it waits at the barrier) until they all do. The poller
never sleeps: it holds Python's lock about half the time the block's threads could run,
and spends a core doing so. In a ``cProfile`` of ``tests/test_simulate_cuda.py``'s
simulator run, the polling loop was 40 of 50 s.

:func:`install_simulator` lets the threads release their barrier themselves, as a
barrier does: under one condition variable per block, a thread that reaches a barrier, or
ends, releases it if every thread still running waits there (Numba's rule,
``_release_if_all_wait``), and the manager only waits for the threads to end
(``_event_manager_run``). An error in a thread aborts the others and is raised, as
before. The threads, their barriers and their writes are Numba's own, so a kernel's
results are the same (``tests/test_simulator_barriers.py`` runs kernels with every kind
of barrier, an early return and a raising thread both ways). Installed only when the
simulator is on. Measured: docs/cuda.md ("On the simulator").
"""

import inspect
import os
import re
import textwrap
import threading

import numpy as np

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


#: The environment variable naming the changes not to make (:func:`install`).
AS_IS = "VITS_REF_NUMBA_AS_IS"


def install():
    """Every change, once per process (:func:`install_inliner`, :func:`install_flags`,
    :func:`install_simulator`), but those that :data:`AS_IS` names."""
    as_is = {w.strip() for w in os.environ.get(AS_IS, "").lower().split(",")}
    everything = bool(as_is & {"1", "all"})
    if not (everything or "inliner" in as_is):
        install_inliner()
    if not (everything or "flags" in as_is):
        install_flags()
    if not (everything or "simulator" in as_is):
        install_simulator()


def install_inliner():
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


#: The texts of Numba's methods that :func:`install_flags` knows how to answer faster.
_KNOWN = {
    "__hash__": "return hash(tuple(sorted(self.values())))",
    "__eq__": "return self.values() == other.values()",
    "values": "return {k: getattr(self, k) for k in self.options}",
}


def install_flags():
    """Give ``numba.core.targetconfig.TargetConfig`` the hash and equality above, once per
    process. True if in place, False where this Numba's source differs."""
    from numba.core import targetconfig

    config = targetconfig.TargetConfig
    if getattr(config.__hash__, "_by_class", False):
        return True
    try:
        known = all(text in inspect.getsource(getattr(config, name))
                    for name, text in _KNOWN.items())
    except (OSError, TypeError):  # no source (a frozen or stripped install)
        return False
    if not known:
        return False
    numbas_hash, numbas_eq = config.__hash__, config.__eq__
    by_class = {}

    def __hash__(self):
        cls = type(self)
        try:
            return by_class[cls]
        except KeyError:
            # the options are set on the class when it is made (Numba's metaclass)
            by_class[cls] = hash(tuple(sorted(self.options)))
            return by_class[cls]

    def __eq__(self, other):
        if type(other) is type(self) and self._values == other._values:
            return True
        return numbas_eq(self, other)

    __hash__._by_class = True
    __hash__.numba_hash, __eq__.numba_eq = numbas_hash, numbas_eq
    config.__hash__, config.__eq__ = __hash__, __eq__
    return True


#: The texts of the simulator's methods that :func:`install_simulator` replaces:
#: ``BlockManager.run``'s polling loop ...
_POLLING = "livethreads = set([t for t in livethreads if t.is_alive()])"
#: ... and ``BlockThread.syncthreads``'s wait at a barrier (numba-cuda 0.30)
_WAITING = "self.syncthreads_blocked = True\n        self.syncthreads_event.wait()"


def install_simulator():
    """Under Numba's CUDA simulator, release a block's barriers when its threads reach
    them (:func:`_event_manager_run`) instead of by polling, once per process. True if in
    place; False without the simulator or where its source differs."""
    from numba.core import config

    if not config.ENABLE_CUDASIM:
        return False
    try:
        from numba.cuda.simulator import kernel as sim
    except ImportError:  # no numba-cuda: the simulator is not there to run
        return False
    manager, thread = sim.BlockManager, sim.BlockThread
    if getattr(manager.run, "_event_driven", False):
        return True
    try:
        known = (_POLLING in inspect.getsource(manager.run)
                 and _WAITING in inspect.getsource(thread.syncthreads))
    except (OSError, TypeError):  # no source (a frozen or stripped install)
        return False
    if not known:
        return False
    numbas_thread_run = thread.run

    def run(self):
        try:
            numbas_thread_run(self)  # Numba's: the kernel, its error kept on the thread
        finally:
            with self._manager._barrier:
                self._finished = True
                if self.exception is None:  # else the others wait for the manager's abort
                    _release_if_all_wait(self._manager._threads)
                self._manager._barrier.notify()  # the manager waits for ends and errors

    def syncthreads(self):
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads call")
        with self._manager._barrier:
            self.syncthreads_blocked = True
            _release_if_all_wait(self._manager._threads)  # the last to arrive releases
        self.syncthreads_event.wait()
        self.syncthreads_event.clear()
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads clear")

    def manager_run(self, grid_point, *args):
        return _event_manager_run(sim.BlockThread, self, grid_point, *args)

    manager_run._event_driven = True
    manager_run.numba_run = manager.run
    thread.numba_run, thread.numba_syncthreads = thread.run, thread.syncthreads
    thread.run, thread.syncthreads = run, syncthreads
    manager.run = manager_run
    return True


def _release_if_all_wait(threads):
    """Release a block's barrier if every thread still running waits at it (Numba's rule),
    under the block's condition variable."""
    live = [t for t in threads if not t._finished]
    if live and all(t.syncthreads_blocked for t in live):
        for t in live:
            t.syncthreads_blocked = False
            t.syncthreads_event.set()


def _event_manager_run(block_thread, manager, grid_point, *args):
    """Run one block of the simulator's threads: Numba's ``BlockManager.run`` without its
    polling (:func:`install_simulator`). A thread that reaches a barrier, or ends, under
    the block's condition variable (``manager._barrier``), releases the barrier if every
    thread still running waits at it; the manager waits until every thread has ended, or
    aborts the others and raises the error of the first thread found with one."""
    manager._barrier = barrier = threading.Condition()
    manager._threads = threads = []
    for block_point in np.ndindex(*manager._block_dim):

        def target():
            manager._f(*args)

        t = block_thread(target, manager, grid_point, block_point, manager._debug)
        t._finished = False
        threads.append(t)
    with barrier:  # held until the first wait: no thread arrives before the list is whole
        for t in threads:
            t.start()
        while True:
            failed = next((t for t in threads if t.exception), None)
            if failed is not None:
                for t in threads:
                    t.abort = True
                    t.syncthreads_blocked = False
                    t.syncthreads_event.set()
                raise failed.exception[0].with_traceback(failed.exception[1])
            if all(t._finished for t in threads):
                return
            barrier.wait()
