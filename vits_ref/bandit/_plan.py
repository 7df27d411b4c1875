"""The memory arithmetic of the fused paths' planners: one place for what a run holds.

Three planners size batches of runs and chunks of rounds; they stay apart because they
plan different things for different machines, and share the arithmetic below:

* :func:`vits_ref.bandit.simulate._fused_plan` (CPU, pre-drawn inputs): bounds the host
  memory of one batch's pre-drawn chunk, ``batch x chunk x per_round`` bytes. Its
  parallelism is Numba's threads (one run each), so it keeps whole horizons (chunk ``T``:
  no per-chunk overhead) as long as at least one run per thread fits, and only then cuts
  the horizon into chunks for a batch of ``n_threads`` runs.
* :func:`vits_ref.bandit._cuda_simulate.plan` (CUDA, pre-drawn inputs): bounds the host
  (two chunks at once: the one on the device and the next, drawn meanwhile) and the device
  (each run's resident state and outputs plus two chunks). Its parallelism is the runs
  (one per GPU thread or block), so it keeps the batch as large as possible and shrinks
  the chunk first, down to ``MIN_CHUNK`` rounds.
* :func:`vits_ref.bandit._streams.plan` (counter-based streams): nothing is pre-drawn, so
  only the runs' resident bytes bound the batch; its chunk is a launch's length, not a
  memory bound.

Shared here: what one run holds (:func:`bytes_per_run`: state, outputs and the path's
own extra words; the state's size from the shapes of one round's draw,
:func:`run_dims`), the clamp of a count that fits a budget (:func:`fit`) and the evening
out of batches (:func:`even_batches`). The results never depend on a plan.
"""

import numpy as np

#: Bytes of a float64 or int64 word: every buffer of the fused paths is made of them.
WORD = 8


def run_dims(spec, d, K):
    """``(d, K, n_init, n_sel, S, M)``: the contexts' sizes and those of the policy's noise
    (initial, selection, steps ``(S, M, d)``), read from the shapes of one round of
    ``spec.draw`` (the arrays the pre-drawn loop takes)."""
    init, sel, steps = spec.draw(np.random.SeedSequence(0), 1, d)
    return (int(d), int(K), int(np.shape(init)[0]), int(np.shape(sel)[1]),
            int(np.shape(steps)[1]), int(np.shape(steps)[2]))


def state_words(spec, dims, T):
    """Length of a run's state buffer for a horizon of ``T`` rounds (``dims``:
    :func:`run_dims`)."""
    d, K, _, _, _, M = dims
    return spec.piece.state_size(d, K, M, T)


def output_words(T, n_kl=0):
    """Words of a run's outputs: regret and arms (``T`` each), KL (``n_kl``), status (1)."""
    return 2 * T + n_kl + 1


def bytes_per_run(state, T, n_kl=0, extra=0):
    """Bytes a run holds for the whole horizon: its state buffer (``state`` words), its
    outputs (:func:`output_words`) and ``extra`` words the path keeps besides (its inputs,
    its initial noise, its streams' scratch and key)."""
    return WORD * (state + output_words(T, n_kl) + extra)


def fit(count, cap):
    """``count`` (a budget over a cost, possibly 0 or negative) clamped to ``[1, cap]``:
    at least one run or round, whatever the budget."""
    return int(max(1, min(cap, count)))


def even_batches(n_runs, batch):
    """The batch size that takes as many batches of ``n_runs`` as ``batch`` does, evened
    out (16 384 runs in batches of at most 6000: three of 5462, not 6000, 6000, 4384)."""
    return -(-n_runs // -(-n_runs // batch))
