"""``simulate(..., stream="philox")``: the fused runs fed by counter-based streams.

Nothing is pre-drawn: each round's contexts, expected rewards and rewards and the policy's
noise are generated inside the compiled loop (:mod:`vits_ref.kernels.bandit_streams`) from
Philox4x64-10 under the run's 128-bit key, :func:`run_keys` (run ``r`` of a root seed:
``child(root, r).generate_state(2, uint64)``), at counters ``(round, stream id, block,
0)``. So a run's numbers depend only on its key: not on the batches, the chunks of rounds,
the threads or the device. docs/streams.md gives the layout, the memory and the NumPy
reference (:mod:`vits_ref.reference.streams`).

:func:`run_streams_cpu` runs batches of runs, ``prange`` over the runs, the whole horizon a
call (:func:`vits_ref.drivers.cpu.bandit_streams`); :func:`run_streams_cuda` chunks of
:data:`CHUNK_ROUNDS` rounds a launch in the layout
:func:`vits_ref.bandit._cuda_simulate.layout_for_streams` chooses (one run per GPU thread,
:class:`vits_ref.drivers.cuda.BanditStreams`, or one block of threads per run for the
VITS rounds, :class:`vits_ref.drivers.cuda_coop.BlockStreams`), as many runs a batch as
:data:`vits_ref.bandit._cuda_simulate.DEVICE_FRACTION` of the device's free memory holds
(:func:`plan`). Both raise DivergenceError by the CPU path's rule: the lowest-numbered
diverging run of the first batch with one, at its first diverging round.
"""

import numpy as np

from .._seeding import run_seeds
from ..errors import raise_first_divergence, record_first_divergence
from ..kernels.bandit_streams import scratch_size
from . import _plan

#: Rounds a launch of the CUDA path runs (a kernel of bounded duration; progress and the
#: divergence status are read between launches). The results do not depend on it.
CHUNK_ROUNDS = 64
#: Runs a call of the CPU path runs (progress is reported after each batch).
CPU_BATCH = 1024


#: ``(d, K, n_init, n_sel, S, M)`` of a spec (:func:`vits_ref.bandit._plan.run_dims`).
noise_dims = _plan.run_dims


def check(spec, policy_name, env, new_instance_per_run):
    """``(env_round, env_params, dims)`` for ``stream="philox"``, or a ValueError naming
    what has no counter stream (checked before any work)."""
    if spec is None:
        raise ValueError(f"stream='philox' needs a fused loop; {policy_name} has none on "
                         f"this model/schedule (use stream='numpy')")
    if new_instance_per_run:
        raise ValueError("stream='philox' runs every run on the one instance of env; "
                         "new_instance_per_run=True needs stream='numpy'")
    if spec.binary_rewards and getattr(env, "reward", None) != "logistic":
        raise ValueError(f"{policy_name} on the logistic model takes rewards 0 or 1; the "
                         f"environment {env!r} has {getattr(env, 'reward', 'other')} "
                         f"rewards (use an environment with reward='logistic')")
    env_round, env_params = env.counter_piece()
    return env_round, env_params, noise_dims(spec, env.dim, env.n_arms)


def run_keys(root, first_run, n_runs):
    """The runs' keys (n_runs, 2) uint64: run ``r`` (``first_run <= r < first_run +
    n_runs``) gets ``child(root, r).generate_state(2, uint64)``."""
    keys = np.empty((n_runs, 2), dtype=np.uint64)
    for i, seed in enumerate(run_seeds(root, first_run, n_runs)):
        keys[i] = seed.generate_state(2, dtype=np.uint64)
    return keys


#: Length of a run's state buffer (:func:`vits_ref.bandit._plan.state_words`).
state_size = _plan.state_words


def bytes_per_run(spec, dims, T, n_kl=0):
    """Bytes a run holds on the device (or in the CPU's batch) for the whole horizon:
    state buffer, scratch (:func:`vits_ref.kernels.bandit_streams.scratch_size`), key
    (2 words), regret and arms (``T`` each), KL (``n_kl``) and status, 8 bytes each.
    Nothing grows with the number of runs but these; with ``T``, the outputs and the
    state of a piece that keeps the history (the logistic pieces: ``T`` rows)."""
    return _plan.bytes_per_run(state_size(spec, dims, T), T, n_kl,
                               extra=scratch_size(*dims) + 2)


def plan(spec, dims, T, n_runs, n_kl=0, free_device_bytes=None):
    """``(batch, chunk)`` of :func:`run_streams_cuda`: runs per batch, at most
    ``DEVICE_FRACTION x free_device_bytes // bytes_per_run`` (all of them when the free
    memory is unknown, as under the simulator), evened out over the batches, and
    :data:`CHUNK_ROUNDS` rounds a launch."""
    from ._cuda_simulate import DEVICE_FRACTION

    batch = n_runs
    if free_device_bytes is not None:
        batch = _plan.fit(int(DEVICE_FRACTION * free_device_bytes)
                          // bytes_per_run(spec, dims, T, n_kl), n_runs)
    return int(_plan.even_batches(n_runs, batch)), int(min(T, CHUNK_ROUNDS))


def run_streams_cpu(block, rows):
    """The streamed runs of ``block`` (runs ``first_run .. first_run + n_runs - 1``, a
    :class:`vits_ref.bandit.backends.RunBlock`) on the CPU into ``rows``, batches of
    :data:`CPU_BATCH` runs on the runner's Numba threads."""
    from ..drivers import cpu

    spec, name, root, first_run = block.spec, block.name, block.root, block.first_run
    T, n_runs, kl_rounds = block.n_rounds, block.n_runs, block.kl_rounds
    env_round, env_params, dims = check(spec, name, block.env, False)
    run = cpu.bandit_streams(spec.piece, env_round)
    for lo in range(0, n_runs, CPU_BATCH):
        hi = min(n_runs, lo + CPU_BATCH)
        R = hi - lo
        keys = run_keys(root, first_run + lo, R)
        bufs = np.empty((R, state_size(spec, dims, T)))
        scratch = np.empty((R, scratch_size(*dims)))
        status = np.zeros(R, dtype=np.int64)
        run(spec.params, env_params, keys, dims, bufs, scratch, 0, T, kl_rounds,
            rows.regret[lo:hi], rows.arms[lo:hi], rows.kl[lo:hi], status)
        raise_first_divergence(status, name, first_run + lo, spec.step_size,
                               spec.divergence_detail)
        block.report(hi)


def run_streams_cuda(block, rows, threads_per_block=None):
    """The streamed runs of ``block`` on the GPU into ``rows`` (:func:`plan`'s batches, chunks of
    :data:`CHUNK_ROUNDS` rounds a launch); the same rows as :func:`run_streams_cpu`.

    The launch layout is :func:`vits_ref.bandit._cuda_simulate.layout_for_streams`' choice, with
    its overrides (``_cuda_simulate.LAYOUT``, ``BLOCK_THREADS``, ``SHARED_BUDGET``): one
    run per thread (:class:`vits_ref.drivers.cuda.BanditStreams`, ``threads_per_block``
    to a block, default ``_cuda_simulate.THREADS_PER_BLOCK``) for the O(K d + d^2)
    rounds, one block of threads per run (:class:`vits_ref.drivers.cuda_coop.BlockStreams`)
    for the VITS rounds. The choice and its reason are left in
    ``_cuda_simulate.last_layout`` (with ``"stream": "philox"``) and logged, as
    :func:`vits_ref.bandit._cuda_simulate.run_fused_cuda` does. Both layouts give the same rows.
    """
    from . import _cuda_simulate as cs

    spec, name, root, first_run = block.spec, block.name, block.root, block.first_run
    T, n_runs, kl_rounds = block.n_rounds, block.n_runs, block.kl_rounds
    env_round, env_params, dims = check(spec, name, block.env, False)
    driver = cs.check_device()  # a clear RuntimeError before any work
    layout, tpb, why = cs.choose_layout_streams(spec, env_round, dims[0])
    if layout == "block":
        from ..drivers.cuda_coop import BlockStreams

        def make_runs(*args):
            return BlockStreams(*args, threads_per_block=tpb, shared_budget=cs.SHARED_BUDGET)
    else:
        tpb = cs.THREADS_PER_BLOCK if threads_per_block is None else threads_per_block

        def make_runs(*args):
            return driver.BanditStreams(*args, threads_per_block=tpb)
    cs.last_layout = {"policy": name, "layout": layout, "threads_per_block": tpb,
                      "shared": None, "reason": why, "stream": "philox"}
    cs._log.info("device='cuda' stream='philox' %s: %s layout, %d threads per block (%s)",
                 name, layout, tpb, why)
    batch, chunk = plan(spec, dims, T, n_runs, len(kl_rounds), cs._free_device_bytes())
    for lo in range(0, n_runs, batch):
        hi = min(n_runs, lo + batch)
        keys = run_keys(root, first_run + lo, hi - lo)
        runs = make_runs(spec.piece, spec.params, env_round, env_params, keys, dims, T,
                         kl_rounds, state_size(spec, dims, T), scratch_size(*dims))
        first_bad = np.zeros(hi - lo, dtype=np.int64)
        for t0 in range(0, T, chunk):
            status = runs.advance(min(chunk, T - t0))
            if layout == "block":
                cs.last_layout["shared"] = runs.shared
            record_first_divergence(first_bad, status)
            if first_bad.all():
                break
        rows.regret[lo:hi], rows.arms[lo:hi], rows.kl[lo:hi] = runs.results()
        del runs
        raise_first_divergence(first_bad, name, first_run + lo, spec.step_size,
                               spec.divergence_detail)
        block.report(hi)
