"""Cooperative CUDA kernels: the fused bandit loop with one block of threads per run.

The VITS round is run by a block of threads per run, which split the products of the
O(d^3) round while "the body stays the one the CPU compiles" (docs/cuda.md,
"Cooperative kernels"):

* :func:`rebind` rebuilds a kernel body, and every body it calls, with the cooperative
  primitives (:func:`default_replacements`: :mod:`vits_ref.kernels.coop_linalg`'s, and
  ``kernels.coop_philox``'s when it exists) in place of the serial ones (new function
  objects over the same code, their globals and closure cells swapped): no body is
  duplicated in the source, and the CPU's bodies are untouched.
* :func:`serial_shared_writes` lists the array stores a body's call graph makes *outside*
  the primitives. Run redundantly by every thread of a block on shared state, such a
  store races: an in-place ``mu[i] -= h g[i]`` done by thread 0 is read again by a later
  thread and applied twice; a plain store can overwrite a value another thread has yet
  to read. :func:`block_safe` is that list for a piece's chunked loop less the loop's own
  outputs (``regret``, ``arms``, ``kl_out``: the same value stored by every thread, never
  read back); every fused piece passes it today.
* :class:`BlockRounds` runs a piece's chunked loop
  (:func:`vits_ref.kernels.bandit.make_bandit_rounds`) rebuilt by :func:`rebind`, one
  block per run, the run's state in the block's dynamic
  shared memory when it fits (else in global memory): the interface of
  :class:`vits_ref.drivers.cuda.BanditRounds`, so
  :func:`vits_ref.bandit._cuda_simulate.run_fused_cuda` drives either
  (:func:`vits_ref.bandit._cuda_simulate.layout_for` chooses).

Verified on Numba's CUDA simulator (``tests/test_coop_design.py``,
``tests/test_cuda_coop_driver.py``) and compiled to sm_90 PTX without a GPU
(``tests/test_cuda_ptx.py``); not yet run on a GPU. Imports
``numba.cuda`` (the optional ``cuda`` extra).
"""

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import sys
import textwrap
import types
import warnings

from numba import cuda, float64

from ..config import _code_names, _simulator, body_inline, cuda_jit, kernel, mark_body, rebuild
from ..kernels import coop_linalg
from ..kernels.bandit import make_bandit_rounds
from .cuda import BanditRounds, BanditStreams, _check_rounds, _to_device

_KERNEL_MODULES = ("vits_ref.kernels",)


def default_replacements():
    """The primitives :func:`rebind` swaps by default: :data:`.coop_linalg.REPLACEMENTS`
    and, when the module exists, ``kernels.coop_philox.REPLACEMENTS`` (the cooperative
    fills of the counter-based streams), as one dict ``{serial: cooperative}``."""
    reps = dict(coop_linalg.REPLACEMENTS)
    if importlib.util.find_spec("vits_ref.kernels.coop_philox") is not None:
        reps.update(importlib.import_module("vits_ref.kernels.coop_philox").REPLACEMENTS)
    return reps


#: The serial primitives (:func:`default_replacements`' keys): :func:`serial_shared_writes`
#: does not look inside them.
PRIMITIVES = frozenset(default_replacements())


def _in(fn, modules):
    mod = getattr(fn, "__module__", None) or ""
    return any(mod == m or mod.startswith(m + ".") for m in modules)


def rebind(fn, replacements=None, modules=_KERNEL_MODULES, _memo=None):
    """``fn`` rebuilt with ``replacements`` (default: :func:`default_replacements`).

    Walks the global names and closure cells of ``fn`` and of every function they reach
    that is defined in ``modules`` (the kernel bodies); a function that reaches a replaced
    primitive is copied (same code, new globals and cells) and recorded as a kernel body
    (:func:`vits_ref.config.mark_body`, inlined when the original is), the others are
    returned as they are. The originals are not modified. The copies are registered with
    no target: :func:`vits_ref.config.cuda_jit` compiles a CUDA copy of what a kernel
    reaches (:func:`vits_ref.config.rebuild` does both walks).
    """
    reps = default_replacements() if replacements is None else replacements
    memo = {} if _memo is None else _memo

    def finish(f, new):
        return mark_body(new, bool(body_inline(f)))

    return rebuild(fn, reps.get, lambda f: _in(f, modules), finish, False, memo)


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


# --------------------------------------------------------------------------- block safety

#: The fused loop's own outputs: stores that no thread reads back (see :func:`block_safe`).
LOOP_OUTPUTS = ("regret", "arms", "kl_out")
#: The modules whose factory-made bodies are the fused loop (its rounds and its round).
LOOP_MODULES = ("vits_ref.kernels.bandit", "vits_ref.kernels.bandit_streams")


def _stored_name(src):
    """The array a store's source line writes (``"regret"`` for ``regret[tg] = ...``)."""
    return src.split("[", 1)[0].strip()


def _benign(store, outputs):
    # the qualified name is "<module>.<factory>.<locals>.<body>"
    name, _, src = store
    in_loop = any(name.startswith(m + ".") and ".<locals>." in name for m in LOOP_MODULES)
    return in_loop and _stored_name(src) in outputs


def unsafe_stores(body, outputs=LOOP_OUTPUTS):
    """:func:`serial_shared_writes` of ``body`` less the benign ones: the fused loop's own
    stores (bodies made by the factories of :data:`LOOP_MODULES`, such as
    ``make_round.<locals>.one_round``) into its outputs ``outputs``, which the loop never
    reads back."""
    return [w for w in serial_shared_writes(body) if not _benign(w, outputs)]


@functools.cache
def block_safe(piece):
    """``(safe, stores)`` for a :class:`~vits_ref.kernels.bandit.BanditPiece`: whether its
    chunked loop (:func:`~vits_ref.kernels.bandit.make_bandit_rounds`) can run one block per
    run with several threads, and the racing stores when it cannot (:func:`unsafe_stores`).

    Computed once per piece (it parses the sources of the call graph: about 10 ms)."""
    stores = unsafe_stores(make_bandit_rounds(piece))
    return not stores, stores


# --------------------------------------------------------------------------- block per run

#: Dynamic shared memory (bytes) a block may use without opting in: CUDA's portable limit.
SHARED_DEFAULT = 48 * 1024
#: Whether :class:`BlockRounds` raises a kernel's dynamic shared memory limit above
#: :data:`SHARED_DEFAULT` (up to the device's ``MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``, 227 KB
#: on an H100) when a run's state needs it. numba-cuda 0.30 has no public API for it
#: (github.com/NVIDIA/numba-cuda/issues/94, open): :func:`_opt_in` calls the driver's
#: ``cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`` on the
#: compiled kernel, the call numba-cuda itself makes for the shared-memory carveout, and
#: falls back to global memory when that fails. Not run on a GPU yet (docs/cuda.md).
OPT_IN = True
#: Blocks launched at most; more runs are taken by a grid-stride loop.
MAX_BLOCKS = 2 ** 20


def _shared_limit():
    """Bytes of dynamic shared memory a block may get here: the device's opt-in maximum on
    a GPU when :data:`OPT_IN`, else :data:`SHARED_DEFAULT` (also under the simulator)."""
    if not OPT_IN or _simulator():
        return SHARED_DEFAULT
    from numba import cuda

    try:
        return max(SHARED_DEFAULT,
                   int(cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    except Exception:  # an old driver without the attribute: the portable limit
        return SHARED_DEFAULT


def _opt_in(dispatcher, args, nbytes):
    """Raise the compiled kernel's dynamic shared memory limit to ``nbytes`` (compiling it
    for ``args`` first); True when done. Needs a GPU; see :data:`OPT_IN`."""
    try:
        from cuda.bindings import driver as binding  # numba-cuda's own driver bindings
        from numba.cuda.cudadrv.driver import driver

        argtypes = tuple(dispatcher.typeof_pyval(a) for a in args)
        cufunc = dispatcher.compile(argtypes)._codelibrary.get_cufunc()
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)
        return True
    except Exception:
        return False


#: Python's thread switch interval (seconds) while the simulator runs a block-per-run
#: kernel. The simulator runs a block's threads as Python threads and releases a barrier
#: from a polling thread, so every ``syncthreads`` waits about one switch interval (5 ms
#: by default): 2 runs x 6 rounds of VITS-II at d = 3 took 7.2 s with 1 thread per
#: block, 0.4 s at 10 us (measured on this 2-core machine). No effect on a GPU.
SIMULATOR_SWITCH_INTERVAL = 1e-5


@contextlib.contextmanager
def _simulator_switching():
    """Under the simulator, :data:`SIMULATOR_SWITCH_INTERVAL` for the duration (restored)."""
    if not _simulator():
        yield
        return
    old = sys.getswitchinterval()
    sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@contextlib.contextmanager
def _quiet_occupancy():
    """numba-cuda warns (NumbaPerformanceWarning) when a launch has fewer than 128 blocks;
    here a block is a run, and a batch of few runs is the caller's choice, not a mistake
    (the warning also turns into an error under this repository's pytest settings)."""
    from numba.core.errors import NumbaPerformanceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        yield


def _block_threads(threads_per_block, is_safe, what, check):
    """``threads_per_block`` as an int, after the checks of the block layout: at least 1,
    and more than 1 only when ``is_safe()`` (a body that is not block-safe races)."""
    n = int(threads_per_block)
    if n < 1:
        raise ValueError(f"threads_per_block must be >= 1, got {n}")
    if n > 1 and not is_safe():
        raise ValueError(f"{what} is not block-safe (stores outside the primitives race: "
                         f"cuda_coop.{check}); run it with threads_per_block=1 or one run "
                         "per thread")
    return n


class _BlockLayout:
    """What the block layout adds to a one-run-per-thread driver of :mod:`.cuda`: where
    the run's state lives during a launch, and the launch (one block per run)."""

    def _plan_shared(self, n_state, shared_budget):
        self.state_bytes = 8 * int(n_state)
        budget = _shared_limit() if shared_budget is None else int(shared_budget)
        self.shared = 0 < self.state_bytes <= budget
        self._opted_in = self.state_bytes <= SHARED_DEFAULT

    def _launch(self, kern, args, shared_at, n_runs):
        """Launch ``kern`` on ``args`` (whose entry ``shared_at`` is ``self.shared``), one
        block per run, opting in to more than 48 KiB of shared memory the first time (the
        global-memory path if that fails)."""
        if self.shared and not self._opted_in:
            self.shared = self._opted_in = _opt_in(kern, args, self.state_bytes)
            args = args[:shared_at] + (self.shared,) + args[shared_at + 1:]
        grid = max(1, min(n_runs, MAX_BLOCKS))
        with _quiet_occupancy():
            launch = kern[grid, self.threads_per_block, 0,
                          self.state_bytes if self.shared else 0]
        with _simulator_switching():
            launch(*args)


@kernel
def _copy_state(src, dst):
    """``dst[:] = src[:]``, the entries split over the block's threads; the caller puts
    the barriers around it (a run's state into shared memory and back)."""
    for i in range(cuda.threadIdx.x, src.shape[0], cuda.blockDim.x):
        dst[i] = src[i]


@functools.cache
def _block_rounds_kernel(piece):
    """The block-per-run kernel of ``piece``'s chunked loop, rebuilt with the cooperative
    primitives (:func:`rebind`)."""
    body = rebind(make_bandit_rounds(piece))

    @cuda_jit
    def kernel(params, bufs, use_shared, t0, contexts, means, rewards, init_noise, sel_noise,
               step_noise, kl_rounds, regret, arms, kl_out, status):
        sh = cuda.shared.array(0, float64)
        tid = cuda.threadIdx.x
        n_state = bufs.shape[1]
        r = cuda.blockIdx.x
        while r < contexts.shape[0]:
            g = bufs[r]
            buf = g
            if use_shared:
                buf = sh[:n_state]
                _copy_state(g, buf)
            cuda.syncthreads()  # the state is in place before any thread reads it
            s = body(params, buf, t0, contexts[r], means[r], rewards[r], init_noise[r],
                     sel_noise[r], step_noise[r], kl_rounds, regret[r], arms[r], kl_out[r])
            cuda.syncthreads()  # every thread is done with the state
            if use_shared:
                _copy_state(buf, g)
            if tid == 0:
                status[r] = s
            cuda.syncthreads()  # the next run's state may overwrite the shared buffer
            r += cuda.gridDim.x

    return kernel


class BlockRounds(_BlockLayout, BanditRounds):
    """``R`` fused runs of ``T`` rounds on the GPU, one block of threads per run, advanced
    a chunk of rounds at a time: the interface of :class:`vits_ref.drivers.cuda.BanditRounds`
    (so :func:`vits_ref.bandit._cuda_simulate.run_fused_cuda` drives either).

    The kernel runs ``piece``'s chunked loop (:func:`~vits_ref.kernels.bandit.make_bandit_rounds`,
    the body the CPU compiles) :func:`rebind`-ed with the cooperative primitives: every
    thread of a block runs the loop's scalar flow on its run, and the threads split the
    work of each primitive. Blocks take the runs by a grid-stride loop (``blockIdx.x``,
    stride ``gridDim.x``, at most :data:`MAX_BLOCKS` blocks).

    **State.** The runs' flat state buffers live in global memory between chunks, as with
    one run per thread. When a buffer fits the block's dynamic shared memory (``8 n_state``
    bytes at most ``shared_budget``; default: :data:`SHARED_DEFAULT`, or the device's
    opt-in maximum, see :data:`OPT_IN`) a chunk copies it into shared memory at its start
    and back at its end, each thread a stride of the entries, with barriers around the
    loop; otherwise the loop works on the global buffer directly (:attr:`shared` says
    which). The run's inputs (contexts, means, rewards, noise) stay in global memory: each
    is read a few times a round.

    **Outputs.** ``regret[t]``, ``arms[t]`` and ``kl_out[k]`` are stored by every thread of
    the block with the same value, since the store is the loop's own statement: the arm
    comes from an argmax over scores every thread reads from the same shared state, the
    KL from the same state by the same instructions, so the bits agree. Concurrent stores
    of one value to one address leave that value, and the loop never reads them back, so
    these are the benign exception of :func:`serial_shared_writes`. Restricting them to
    ``threadIdx.x == 0`` would need a branch in the body the CPU compiles. The run's
    status, stored by this driver's kernel, is written by thread 0 only.

    Correct with several threads only for a block-safe piece (:func:`block_safe`); with
    ``threads_per_block=1`` any piece runs (a block of one thread is the serial loop), and
    a piece that is not block-safe with more threads raises ValueError.

    Parameters
    ----------
    piece, params, n_runs, n_rounds, dim, n_arms, n_mc, kl_rounds
        As :class:`vits_ref.drivers.cuda.BanditRounds`.
    threads_per_block : int
        Threads of a run's block.
    shared_budget : int or None
        Bytes of dynamic shared memory the state may take (None: the default above); 0
        forces the global-memory path.
    """

    def __init__(self, piece, params, n_runs, n_rounds, dim, n_arms, n_mc, kl_rounds,
                 threads_per_block=32, shared_budget=None):
        tpb = _block_threads(threads_per_block, lambda: block_safe(piece)[0],
                             f"the {piece.name!r} piece", "block_safe")
        super().__init__(piece, params, n_runs, n_rounds, dim, n_arms, n_mc, kl_rounds,
                         threads_per_block=tpb)
        self._plan_shared(self.bufs.shape[1], shared_budget)

    def advance(self, contexts, means, rewards, init_noise, sel_noise, step_noise):
        """Run the next ``n = contexts.shape[1]`` rounds; returns the runs' status (R,)
        (0, or the 1-based round at which a run's state became non-finite)."""
        n = contexts.shape[1]
        _check_rounds(self, n)
        dev = _to_device((contexts, means, rewards, init_noise, sel_noise, step_noise))
        args = (self.params, self.bufs, self.shared, self.t0, *dev, self.kl_rounds,
                self.regret, self.arms, self.kl, self.status)
        self._launch(_block_rounds_kernel(self.piece), args, 2, contexts.shape[0])
        self.t0 += n
        return self.status.copy_to_host()


# --------------------------------------------------------------------------- streamed runs


@functools.cache
def block_safe_streams(piece, env_round):
    """``(safe, stores)`` as :func:`block_safe`, for the streamed loop of ``piece`` on the
    environment whose round body is ``env_round``
    (:func:`vits_ref.kernels.bandit_streams.make_bandit_streams`): the environment's round
    writes the round's inputs into the run's scratch, and those stores count too."""
    from ..kernels.bandit_streams import make_bandit_streams

    stores = unsafe_stores(make_bandit_streams(piece, env_round))
    return not stores, stores


@functools.cache
def _block_streams_kernel(piece, env_round):
    """The block-per-run kernel of the streamed loop, rebuilt with the cooperative
    primitives and Philox fills (:func:`rebind`)."""
    from ..kernels.bandit_streams import make_bandit_streams

    body = rebind(make_bandit_streams(piece, env_round))

    @cuda_jit
    def kernel(params, env, keys, dims, bufs, scratch, use_shared, t0, n, kl_rounds, regret,
               arms, kl_out, status):
        sh = cuda.shared.array(0, float64)
        tid = cuda.threadIdx.x
        n_state = bufs.shape[1]
        r = cuda.blockIdx.x
        while r < keys.shape[0]:
            g = bufs[r]
            buf = g
            if use_shared:
                buf = sh[:n_state]
                _copy_state(g, buf)
            cuda.syncthreads()
            s = body(params, env, keys[r], dims, buf, scratch[r], t0, n, kl_rounds,
                     regret[r], arms[r], kl_out[r])
            cuda.syncthreads()
            if use_shared:
                _copy_state(buf, g)
            if tid == 0:
                status[r] = s
            cuda.syncthreads()
            r += cuda.gridDim.x

    return kernel


class BlockStreams(_BlockLayout, BanditStreams):
    """``R`` streamed fused runs of ``T`` rounds, one block of threads per run: the
    interface of :class:`vits_ref.drivers.cuda.BanditStreams` (so
    :func:`vits_ref.bandit._streams.run_streams_cuda` can drive either).

    The streamed loop (:func:`vits_ref.kernels.bandit_streams.make_bandit_streams`)
    rebuilt by :func:`rebind`, the Philox fills and the linear algebra split over the
    block's threads; the state as in :class:`BlockRounds` (shared memory when it fits,
    else global), the run's scratch (each round's generated inputs) in global memory.

    Correct with several threads only when :func:`block_safe_streams` holds (it refuses
    more than one thread per block otherwise, with a ValueError). It holds for every fused
    piece on the pool and the hard instance: the environments' round bodies of
    :mod:`vits_ref.kernels.bandit_streams` store only through primitives with cooperative
    twins in :mod:`vits_ref.kernels.coop_philox` (``tests/test_streams_block.py``).

    Parameters: those of :class:`vits_ref.drivers.cuda.BanditStreams`, and
    ``shared_budget`` as in :class:`BlockRounds`.
    """

    def __init__(self, piece, params, env_round, env_params, keys, dims, n_rounds, kl_rounds,
                 n_state, n_scratch, threads_per_block=1, shared_budget=None):
        tpb = _block_threads(threads_per_block,
                             lambda: block_safe_streams(piece, env_round)[0],
                             f"the streamed loop of the {piece.name!r} piece on "
                             f"{env_round.__name__!r}", "block_safe_streams")
        super().__init__(piece, params, env_round, env_params, keys, dims, n_rounds,
                         kl_rounds, n_state, n_scratch, threads_per_block=tpb)
        self._plan_shared(n_state, shared_budget)

    def advance(self, n):
        """Run the next ``n`` rounds; returns the runs' status (R,) (0, or the 1-based
        round at which a run's state became non-finite)."""
        _check_rounds(self, n)
        args = (self.params, self.env, self.keys, self.dims, self.bufs, self.scratch,
                self.shared, self.t0, n, self.kl_rounds, self.regret, self.arms, self.kl,
                self.status)
        self._launch(_block_streams_kernel(self.piece, self.env_round), args, 6,
                     self.keys.shape[0])
        self.t0 += n
        return self.status.copy_to_host()
