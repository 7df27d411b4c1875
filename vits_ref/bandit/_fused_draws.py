"""The host-side draws of the fused loop, shared by the CPU and CUDA paths of ``simulate``.

A run ``r`` of a root seed is seeded by child ``r``; its child 0 drives the environment's
realisation, its child 1 the policy's randomness (:mod:`vits_ref.bandit.simulate`). The helpers
here draw them whole (:func:`realise`) or a chunk of rounds at a time
(:func:`realise_chunks`, :func:`batch_chunks`), the chunks equal to the rows of the whole
draws bit for bit (:meth:`vits_ref.envs.Environment.realise_chunks`,
:func:`vits_ref.drivers.fused.draw_chunks`), so both devices see the same inputs whatever their
plans of batches and chunks. This module exists so that :mod:`vits_ref.bandit._cuda_simulate`
can use the same code without importing :mod:`vits_ref.bandit.simulate` (which imports it: an
import cycle).
"""

import numpy as np

from .. import _validate as val
from .._seeding import env_rng, policy_seed
from ..drivers.fused import draw_chunks
from ..envs.base import Environment


def checked(env, real, binary=False):
    """``real``, after checking that its features and rewards are within
    :data:`vits_ref._validate.MAX_ABS_DATA` (whose squares would overflow the sufficient
    statistics, silently in the fused loop) and, with ``binary``, that every reward is 0
    or 1 (the logistic model's Bernoulli rewards, which the Python loop's model checks
    on every observation); a ValueError naming the environment if not
    (:func:`vits_ref._validate.realisation`, which the DiffTS chains also apply)."""
    return val.realisation(env, real, binary)


def realise(env, run_seed, n_rounds):
    """The run's draws of the environment, from the run's child 0, checked
    (:func:`checked`) before the run."""
    real = env.realise(n_rounds, env_rng(run_seed))
    return checked(env, real)


def realise_chunks(env, run_seed, n_rounds, chunk, binary=False, out=None):
    """:func:`realise` by chunks of rounds (:meth:`vits_ref.envs.Environment.realise_chunks`:
    the same rows, bit for bit), each chunk checked as :func:`realise` checks the run
    (and its rewards in {0, 1} with ``binary``, see :func:`checked`).

    ``out(t0, n)``, if given, returns the buffer ``(n, K, d)`` that the features of rounds
    ``[t0, t0 + n)`` are bound for (or None): where a block of the realisation is exactly
    such a chunk, its features are drawn and built in that buffer
    (:func:`vits_ref.envs.rounds.realise_blocks`), and the chunk's ``contexts`` are it.
    """
    n_rounds = val.positive_int(n_rounds, "n_rounds")
    chunk = val.positive_int(chunk, "chunk")
    rng = env_rng(run_seed)
    # an environment that redefines realise_chunks draws its own way: call it (the
    # in-place path is the base class's)
    in_place = out is not None and type(env).realise_chunks is Environment.realise_chunks
    reals = (env._realise_chunks(n_rounds, rng, chunk, out) if in_place
             else env.realise_chunks(n_rounds, rng, chunk))
    for real in reals:
        yield checked(env, real, binary)


def _put(dst, src):
    """``dst[...] = src`` unless ``src`` is ``dst`` already (drawn in place)."""
    if not (src.shape == dst.shape and src.ctypes.data == dst.ctypes.data):
        dst[...] = src


def batch_chunks(spec, envs, run_seeds, n_rounds, chunk, n_threads=1):
    """A batch of runs' inputs to the fused loop, stacked, a chunk of rounds at a time.

    Yields ``(contexts (R, n, K, d), means (R, n, K), rewards (R, n, K), init_noise (R, ·),
    sel_noise (R, n, ·), step_noise (R, n, S, M, d))`` for rounds ``[t0, t0 + n)``,
    ``n = min(chunk, n_rounds - t0)``: run ``i``'s rows are those of its whole realisation
    (:func:`realise_chunks` of ``envs[i]`` and ``run_seeds[i]``) and its policy's randomness
    (:func:`vits_ref.drivers.fused.draw_chunks` from child 1 of ``run_seeds[i]``), bit for bit.
    The stacked arrays are filled run by run, so one run's chunk (per thread) is held twice
    at most (a lone run's chunk is yielded as drawn); each yield allocates new arrays (a
    consumer may keep the previous chunk while the next is drawn).

    ``n_threads`` > 1 fills each chunk's rows with that many threads, each a contiguous
    range of runs. Each run's streams are its own and each thread advances only its runs'
    streams, so the rows do not depend on ``n_threads``; NumPy releases the GIL in its
    bulk fills and copies, which are most of the work.
    """
    R = len(run_seeds)
    d, K = envs[0].dim, envs[0].n_arms
    binary = spec.binary_rewards  # the logistic pieces take rewards 0 or 1 only
    # the stacked features of the chunk being filled: a run whose realisation block is
    # exactly the chunk draws its features straight into its row (no copy)
    stack = {}

    def into(i):
        def out(t0, n):
            ctx = stack.get("contexts")
            if ctx is not None and stack["t0"] == t0 and ctx.shape[1] == n:
                return ctx[i]
            return None
        return out

    reals = [realise_chunks(e, s, n_rounds, chunk, binary, out=into(i) if R > 1 else None)
             for i, (e, s) in enumerate(zip(envs, run_seeds, strict=True))]
    noises = [draw_chunks(spec, policy_seed(s), n_rounds, d, chunk) for s in run_seeds]
    n_threads = max(1, min(int(n_threads), R))
    pool = None
    if n_threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(n_threads)
    try:
        for t0 in range(0, n_rounds, chunk):
            n = min(chunk, n_rounds - t0)
            if R == 1:  # the run's chunk itself, not a stacked copy: half the memory
                real = next(reals[0])
                yield tuple(np.ascontiguousarray(a)[None] for a in (
                    real.contexts, real.means, real.rewards, *next(noises[0])))
                del real
                continue
            out = [np.empty((R, n, K, d)), np.empty((R, n, K)), np.empty((R, n, K))]
            stack.update(contexts=out[0], t0=t0)

            def fill(lo, hi, out=out):
                for i in range(lo, hi):
                    real = next(reals[i])
                    for dst, src in zip(out[:3], (real.contexts, real.means, real.rewards),
                                        strict=True):
                        _put(dst[i], src)
                    del real
                    for arr, x in zip(out[3:], next(noises[i]), strict=True):
                        arr[i] = x

            # the first run gives the noise's shapes
            real = next(reals[0])
            for dst, src in zip(out[:3], (real.contexts, real.means, real.rewards),
                                strict=True):
                _put(dst[0], src)
            del real
            noise = next(noises[0])
            out += [np.empty((R,) + np.shape(x)) for x in noise]
            out[3][0], out[4][0], out[5][0] = noise
            del noise
            if pool is None:
                fill(1, R)
            else:
                bounds = np.linspace(1, R, n_threads + 1).astype(int).tolist()
                jobs = [pool.submit(fill, bounds[k], bounds[k + 1]) for k in range(n_threads)]
                for job in jobs:
                    job.result()
            stack.clear()
            yield tuple(out)
    finally:
        if pool is not None:
            pool.shutdown()
