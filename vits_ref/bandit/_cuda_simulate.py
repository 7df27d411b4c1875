"""The ``device="cuda"`` path of :func:`vits_ref.bandit.simulate` (imported lazily).

:func:`run_fused_cuda` mirrors :func:`vits_ref.bandit.simulate._run_fused`: per batch of runs and
chunk of rounds, the realisations and the policy's noise are drawn on the host from the
same seeds and by the same chunked draws (run ``r`` of ``root``: child 0 for the
environment, child 1 for the policy), then the fused loop of
:mod:`vits_ref.kernels.bandit` runs the chunk's rounds, the same body the CPU prange
driver compiles, in the launch layout :func:`layout_for` chooses by size: one run per GPU
thread (:class:`vits_ref.drivers.cuda.BanditRounds`) for the O(K d + d^2) rounds, one
block of threads per run (:class:`vits_ref.drivers.cuda_coop.BlockRounds`, the body
rebuilt with cooperative primitives) for the O(S d^3) VITS rounds. Both layouts give the
same results.

Agreement with ``device="cpu"`` on the same seeds (``tests/test_simulate_cuda.py``):

* ``arms`` and the divergence status (run, round) are equal;
* ``regret`` is then bit-identical: it is a look-up of the pre-realised means at the
  played arm (no arithmetic on the device's side beyond ``best - means[arm]``, the same
  IEEE subtraction on both targets);
* ``kl`` agrees to 1e-10 relative: the CPU compiles the products of
  :mod:`vits_ref.kernels.linalg` to BLAS (another summation order) and the GPU compiler
  contracts ``a * b + c`` into FMAs, so the Gaussian states differ by rounding (measured
  about 1e-15 at d <= 4 over 10 rounds). Only the random policy has no arithmetic at all.

Equal arms rest on the rounding never flipping an argmax: a near-tie between two arms'
scores within 1e-15 could choose another arm on the device; the tests would show it.

Memory: the runs of a batch advance together a chunk of rounds at a time
(:class:`vits_ref.drivers.cuda.BanditRounds`: the state buffers and the outputs stay on
the device between chunks), each chunk's realisations and noise drawn on the host by the
CPU path's chunked draws (:func:`vits_ref.bandit._fused_draws.batch_chunks`), so the host holds
two chunks (the one on the device and the next, drawn meanwhile by a helper thread) and
the device one batch's state and outputs plus two chunks. :func:`plan` sizes the batch
(as many runs as fit, so that 16 384 runs, the size the GPU path is built for, make one
batch) and the chunk (as many rounds as then fit); see its docstring for the formulas and the
16 384 x 1000 plan. The results do not depend on the plan.
"""

import importlib.util
import logging
import os

import numpy as np

from .._seeding import run_seed, run_seeds
from ..errors import raise_first_divergence, record_first_divergence
from . import _plan
from ._fused_draws import batch_chunks
from ._fused_draws import realise as _realise  # noqa: F401 (the benchmark's inputs)

#: Bytes of host memory the chunks of one batch may hold: two chunks at once (the one on
#: the device and the next, drawn meanwhile). At d = 20, K = 50 (VITS-II) a run's round
#: holds 21 KB there, so 16 384 runs advance 24 rounds a chunk (:func:`plan`).
HOST_BUDGET = 8 * 2 ** 30
#: Fraction of the device's free memory (when the call starts) one batch may use: its
#: state buffers and outputs, and two chunks of inputs (the one running and the previous,
#: whose memory Numba frees lazily).
DEVICE_FRACTION = 0.5
#: Rounds a chunk holds at least (or the whole horizon when shorter): the batch of runs
#: shrinks before the chunk does, since each chunk costs a launch, a copy and a Python
#: pass over the batch's runs on the host: about 25 us a run per chunk against 35 us a
#: run per round of drawing (LinTS and VITS-II at d = 20, K = 50, chunks of 1 and 24
#: rounds, measured on this 2-core machine), so 4 rounds keep that pass under a fifth
#: of the drawing while 16 384 runs of every policy still fit one batch.
MIN_CHUNK = 4
#: Host threads drawing a chunk's runs (:func:`vits_ref.bandit._fused_draws.batch_chunks`: the
#: rows do not depend on it). The host's drawing, about 35 us a run per round on one core
#: at d = 20, K = 50, is likely the bottleneck of a large batch (docs/cuda.md).
DRAW_THREADS = min(16, os.cpu_count() or 1)
#: Threads per block of the one-run-per-thread launch.
THREADS_PER_BLOCK = 64
#: Override of the launch layout (:func:`layout_for`): None (by size: the default),
#: ``"thread"`` (one run per thread for every policy) or ``"block"`` (one block per run for
#: every policy). For tests and the benchmark.
LAYOUT = None
#: Override of the block layout's threads per block (None: :func:`block_threads` of ``d``).
BLOCK_THREADS = None
#: Pieces whose round is O(S d^3) (a chain of d x d products each inner step): one block
#: per run when they are block-safe. The others keep one run per thread: LinTS, LinUCB,
#: random (O(K d + d^2)), LMC (O(S (K d + d^2)) matrix-vector work), and the logistic
#: pieces (:mod:`vits_ref.kernels.logistic_bandit`), whose rounds are dominated by the
#: potential's O(n d) sums over the history, which store outside the cooperative
#: primitives (not block-safe).
BLOCK_PIECES = frozenset({"vits"})
#: Most threads of a run's block (:func:`block_threads`).
MAX_BLOCK_THREADS = 256
#: Threads of a run's block under Numba's CUDA simulator, which runs each thread as a
#: Python thread: two, so that the barriers and the split of every primitive are
#: exercised, and no more, since the simulator's block layout is slow (VITS-II, 2 runs x
#: 6 rounds at d = 3: 1.3 s with 2 threads, 1.7 s with 4, 0.15 s one run per thread;
#: ``tests/test_cuda_coop_driver.py`` runs blocks of 1, 3 and 5 threads explicitly).
SIMULATOR_BLOCK_THREADS = 2
#: Bytes of dynamic shared memory a run's state may take in the block layout (None: the
#: driver's default, :class:`vits_ref.drivers.cuda_coop.BlockRounds`); 0 forces the state
#: into global memory.
SHARED_BUDGET = None
#: What the last :func:`run_fused_cuda` call launched (policy, layout, threads per block,
#: whether the block layout's state was in shared memory, and why that layout).
last_layout = None

_INSTALL = "pip install 'vits_ref[cuda]'"
_log = logging.getLogger("vits_ref.cuda")

def simulator_enabled():
    """Whether Numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1`` when Numba was
    imported: Numba reads it once, at import)."""
    import numba

    return bool(getattr(numba.config, "ENABLE_CUDASIM", 0))


def _numba_cuda_installed():
    return importlib.util.find_spec("numba_cuda") is not None


def check_device():
    """Raise a clear error unless the CUDA path can run here; returns the driver module.

    ``RuntimeError`` when numba-cuda (the ``cuda`` extra) is missing, when the installed
    numba-cuda and NumPy do not work together (:func:`vits_ref.config.check_cuda_stack`),
    or when no GPU is visible and the simulator is off. Does no work on the device.
    """
    from ..config import check_cuda_stack

    if not _numba_cuda_installed():
        raise RuntimeError("device='cuda' needs numba-cuda (the 'cuda' extra), which is not "
                           f"installed: {_INSTALL}")
    try:
        check_cuda_stack()
    except ImportError as err:
        raise RuntimeError(f"device='cuda' cannot run: {err}") from None
    from numba import cuda

    if not cuda.is_available():
        raise RuntimeError(
            "device='cuda' found no usable CUDA GPU (numba.cuda.is_available() is False: no "
            f"GPU, no driver or no CUDA runtime; {_INSTALL} brings the runtime). To run the "
            "CUDA path on the CPU at small sizes, set NUMBA_ENABLE_CUDASIM=1 in the "
            "environment before Python starts (Numba's CUDA simulator: for tests, not speed)")
    from ..drivers import cuda as driver

    return driver



def _n_state(spec, d, K, T):
    # the state's size for the step noise's M, read from one round of the spec's draw
    return _plan.state_words(spec, _plan.run_dims(spec, d, K), T)


def _words_per_round(spec, d, K):
    # one run's inputs per round: contexts (K, d), means and rewards (K,), and the
    # policy's normals (at most d (1 + n_draws_per_round))
    return K * (d + 2) + d * (1 + spec.n_draws_per_round)


def bytes_per_run(spec, T, d, K, n_kl=0):
    """Bytes one whole run holds on the device when its inputs are all copied at once
    (realisation, noise, state, outputs): the benchmark's sizing of its whole-run calls
    (:func:`vits_ref.drivers.cuda.bandit_runs`)."""
    return _plan.bytes_per_run(_n_state(spec, d, K, T), T, n_kl,
                               extra=T * _words_per_round(spec, d, K) + d)


def resident_bytes_per_run(spec, T, d, K, n_kl=0):
    """Bytes one run keeps on the device for the whole batch: its state buffer, outputs
    (regret, arms, KL, status) and initial noise."""
    return _plan.bytes_per_run(_n_state(spec, d, K, T), T, n_kl, extra=d)


def bytes_per_round(spec, d, K):
    """Bytes of one run's inputs per round of a chunk: contexts (K, d), means and rewards
    (K,), and the policy's normals (at most ``d (1 + n_draws_per_round)``)."""
    return _plan.WORD * _words_per_round(spec, d, K)


def plan(spec, T, d, K, n_runs, n_kl=0, free_device_bytes=None):
    """``(batch, chunk)``: runs per batch and rounds per chunk of :func:`run_fused_cuda`.

    With ``s`` = :func:`resident_bytes_per_run`, ``c`` = :func:`bytes_per_round`,
    ``H`` = :data:`HOST_BUDGET` and ``D`` = :data:`DEVICE_FRACTION` x
    ``free_device_bytes`` (no device limit when None, as under the simulator), a batch of
    ``B`` runs advancing ``n`` rounds a chunk holds ``2 B n c`` bytes on the host (the chunk
    on the device and the next one) and ``B (s + 2 n c)`` on the device (the state and
    outputs, the chunk running and the previous one). The batch is the largest with which
    a chunk of ``n0 = min(T, MIN_CHUNK)`` rounds fits both::

        B = min(n_runs, H // (2 n0 c), D // (s + 2 n0 c))

    evened out over the ``ceil(n_runs / B)`` batches, and the chunk the largest that then
    fits both, ``n = min(T, H // (2 B c), (D - B s) // (2 B c))`` (at least 1 round and 1
    run whatever the budgets). At d = 20, K = 50, VITS-II (``c`` = 10.7 KB, ``s`` = 71 KB
    at T = 1000) on an 80 GB GPU with 79 GB free, 16 384 runs x 1000 rounds is one batch of
    16 384 runs in chunks of 24 rounds (42 chunks): 8.4 GB on the host, 9.6 GB on the
    device, where whole-run batches held 11 MB a run (21 batches of about 800 runs). The
    Hessian-free VITS (201 normals a round, ``c`` = 41 KB) gets chunks of 6 rounds.
    """
    s = resident_bytes_per_run(spec, T, d, K, n_kl)
    c = bytes_per_round(spec, d, K)
    n0 = min(T, MIN_CHUNK)
    dev = None if free_device_bytes is None else int(DEVICE_FRACTION * free_device_bytes)
    batch = HOST_BUDGET // (2 * n0 * c)
    if dev is not None:
        batch = min(batch, dev // (s + 2 * n0 * c))
    batch = _plan.even_batches(n_runs, _plan.fit(batch, n_runs))
    chunk = HOST_BUDGET // (2 * batch * c)
    if dev is not None:
        chunk = min(chunk, (dev - batch * s) // (2 * batch * c))
    return int(batch), _plan.fit(chunk, T)


def block_threads(d):
    """Threads of a run's block in the block layout: the multiple of 32 nearest ``d^2 / 4``,
    between 32 and :data:`MAX_BLOCK_THREADS` (d = 20: 96; d <= 13: 32; d >= 32: 256).

    A VITS step is a chain of d x d products (d^2 output entries of d multiply-adds each)
    and vector updates (d entries), each closed by a barrier. With about d^2 / 4 threads
    every thread owns about 4 entries of a product, enough to amortise the two barriers
    of each primitive and the scalar flow every thread runs redundantly; more threads
    would idle in every vector primitive and add warps to each barrier. A block is whole
    warps (the unit the GPU schedules), so at least 32 threads, and at most 256, which
    keeps several blocks (runs) resident per SM beside their shared state (48.7 KiB at
    d = 20, K = 50). A first choice, to be tuned on a GPU (docs/cuda.md: still to
    measure).
    """
    n = 32 * int(round(d * d / 4 / 32))
    return int(min(MAX_BLOCK_THREADS, max(32, n)))


def _choose_layout(spec, d, safety=None):
    """``(layout, threads_per_block, reason)``; see :func:`layout_for`. ``safety``: the
    ``(safe, stores)`` of the loop to run (default: ``block_safe(spec.piece)``)."""
    if LAYOUT not in (None, "thread", "block"):
        raise ValueError(f"_cuda_simulate.LAYOUT must be None, 'thread' or 'block', got "
                         f"{LAYOUT!r}")
    piece = spec.piece
    if LAYOUT == "thread":
        return "thread", THREADS_PER_BLOCK, "LAYOUT='thread'"
    if LAYOUT is None and piece.name not in BLOCK_PIECES:
        return ("thread", THREADS_PER_BLOCK,
                f"the {piece.name!r} piece is not in BLOCK_PIECES (see there why)")
    if safety is None:
        from ..drivers.cuda_coop import block_safe

        safety = block_safe(piece)
    safe, stores = safety
    if BLOCK_THREADS is not None:
        return "block", int(BLOCK_THREADS), "BLOCK_THREADS set"
    if not safe:
        why = (f"the {piece.name!r} piece is not block-safe ({len(stores)} stores outside "
               "the primitives)")
        if LAYOUT == "block":
            return "block", 1, "LAYOUT='block'; " + why + ": 1 thread per block"
        return "thread", THREADS_PER_BLOCK, why + ": one run per thread"
    n = block_threads(d)
    if simulator_enabled():
        n = min(n, SIMULATOR_BLOCK_THREADS)
    why = "LAYOUT='block'" if LAYOUT == "block" else f"the {piece.name!r} round is O(S d^3)"
    return "block", n, why


def layout_for(spec, d):
    """The launch configuration of a fused policy at dimension ``d``: ``("thread",
    threads_per_block)`` (one run per thread, :class:`vits_ref.drivers.cuda.BanditRounds`)
    or ``("block", threads_per_block)`` (one block per run,
    :class:`vits_ref.drivers.cuda_coop.BlockRounds`).

    By size (``LAYOUT = None``): one run per thread, :data:`THREADS_PER_BLOCK` to a block,
    for the O(K d + d^2) rounds (LinTS, LinUCB, random) and LMC; one block of
    :func:`block_threads` ``(d)`` threads per run for the O(S d^3) VITS rounds
    (:data:`BLOCK_PIECES`), but only when the piece is block-safe
    (:func:`vits_ref.drivers.cuda_coop.block_safe`, computed once per piece): a piece
    that is not falls back to one run per thread. Under the simulator a block has at most
    :data:`SIMULATOR_BLOCK_THREADS` threads. :data:`LAYOUT` and :data:`BLOCK_THREADS`
    override the choice (a forced block layout runs a piece that is not block-safe with 1
    thread per block). Either layout gives the same results. The last call's choice and
    its reason are in :data:`last_layout`.
    """
    layout, n, _ = _choose_layout(spec, d)
    return layout, n


def layout_for_streams(spec, env_round, d):
    """:func:`layout_for` for the streamed loop (``simulate(..., stream="philox")``) on the
    environment whose round body is ``env_round``: the same rules, with block safety
    checked on the streamed loop (:func:`vits_ref.drivers.cuda_coop.block_safe_streams`,
    which counts the environment's round too); the block layout runs through
    :class:`vits_ref.drivers.cuda_coop.BlockStreams`, the interface of
    :class:`vits_ref.drivers.cuda.BanditStreams`. Every fused piece is block-safe on the
    pool and the hard instance, so the VITS policies run a block per run here too.
    """
    layout, n, _ = choose_layout_streams(spec, env_round, d)
    return layout, n


def choose_layout_streams(spec, env_round, d):
    """``(layout, threads_per_block, reason)``: :func:`layout_for_streams`' choice with
    the reason :func:`vits_ref.bandit._streams.run_streams_cuda` records."""
    from ..drivers.cuda_coop import block_safe_streams

    return _choose_layout(spec, d, block_safe_streams(spec.piece, env_round))


def _free_device_bytes():
    from numba import cuda

    try:
        free, _ = cuda.current_context().get_memory_info()
    except Exception:  # no memory information: the host budget alone
        return None
    # the simulator reports infinite memory: the host budget alone
    return int(free) if np.isfinite(free) else None


def run_fused_cuda(block, rows, threads_per_block=THREADS_PER_BLOCK):
    """The fused runs of ``block`` (a :class:`vits_ref.bandit.backends.RunBlock`: runs
    ``first_run, ..., first_run + n_runs - 1``) on the GPU, into ``rows`` (as
    ``_run_fused`` on the CPU).

    Batches of runs advance a chunk of rounds at a time (:func:`plan`) through
    :class:`vits_ref.drivers.cuda.BanditRounds` (one run per thread,
    ``threads_per_block`` to a block) or :class:`vits_ref.drivers.cuda_coop.BlockRounds`
    (one block per run), as :func:`layout_for` chooses (the choice is left in
    :data:`last_layout` and logged); each chunk's inputs are drawn on the host
    (:func:`vits_ref.bandit._fused_draws.batch_chunks`, the CPU path's chunked draws, on
    :data:`DRAW_THREADS` threads) by a helper thread while the device runs the previous
    chunk. ``block.report(runs_done)`` is called after each batch.

    Raises RuntimeError before any work when the CUDA path cannot run
    (:func:`check_device`), DivergenceError naming the engine, run, round and step size
    when a run's state becomes non-finite: the lowest-numbered diverging run of the first
    batch with one, at its first diverging round, after the batch's last chunk (the CPU's
    rule, so the error depends on neither plan).
    """
    from concurrent.futures import ThreadPoolExecutor

    global last_layout
    spec, env_for, root, first_run = block.spec, block.env_for, block.root, block.first_run
    T, n_runs, kl_rounds = block.n_rounds, block.n_runs, block.kl_rounds
    driver = check_device()
    first = env_for(run_seed(root, first_run))
    d, K = first.dim, first.n_arms
    batch, chunk = plan(spec, T, d, K, n_runs, len(kl_rounds), _free_device_bytes())
    name = block.name
    layout, tpb, why = _choose_layout(spec, d)
    if layout == "block":
        from ..drivers.cuda_coop import BlockRounds

        def make_rounds(*args):
            return BlockRounds(*args, threads_per_block=tpb, shared_budget=SHARED_BUDGET)
    else:
        tpb = threads_per_block

        def make_rounds(*args):
            return driver.BanditRounds(*args, threads_per_block=tpb)
    last_layout = {"policy": name, "layout": layout, "threads_per_block": tpb,
                   "shared": None, "reason": why}
    _log.info("device='cuda' %s: %s layout, %d threads per block (%s)", name, layout, tpb,
              why)
    for lo in range(0, n_runs, batch):
        hi = min(n_runs, lo + batch)
        seeds = run_seeds(root, first_run + lo, hi - lo)
        chunks = batch_chunks(spec, [env_for(s) for s in seeds], seeds, T, chunk,
                              n_threads=DRAW_THREADS)
        first_bad = np.zeros(hi - lo, dtype=np.int64)
        rounds = None
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(next, chunks, None)
            while (arrays := pending.result()) is not None:
                pending = pool.submit(next, chunks, None)  # drawn while the device runs
                if rounds is None:
                    rounds = make_rounds(spec.piece, spec.params, hi - lo, T, d, K,
                                         arrays[5].shape[3], kl_rounds)
                status = rounds.advance(*arrays)
                if layout == "block":
                    last_layout["shared"] = rounds.shared
                del arrays
                record_first_divergence(first_bad, status)
        rows.regret[lo:hi], rows.arms[lo:hi], rows.kl[lo:hi] = rounds.results()
        del rounds
        raise_first_divergence(first_bad, name, first_run + lo, spec.step_size,
                               spec.divergence_detail)
        block.report(hi)
