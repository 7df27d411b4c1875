"""Helpers shared by the benchmark modules (no benchmarks here)."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

#: asv's time limit per benchmark (seconds). A fresh environment has an empty Numba
#: cache, so the first ``setup`` compiles the fused loop cold (3-12 s per large kernel).
TIMEOUT = 300


def single_thread():
    """One Numba thread (OpenBLAS is pinned by the environment variable above)."""
    numba.set_num_threads(1)


def truncate(run, n_rounds):
    """The first ``n_rounds`` rounds of a run's arrays (``vits_ref.bench.problem``).

    ``run`` is ``(contexts, means, rewards, init_noise, sel_noise, step_noise)``; the
    per-round arrays are cut, ``init_noise`` is kept.
    """
    contexts, means, rewards, init_noise, sel_noise, step_noise = run
    return (contexts[:n_rounds], means[:n_rounds], rewards[:n_rounds], init_noise,
            sel_noise[:n_rounds], step_noise[:n_rounds])


def median_times(fns, repeats):
    """Median seconds of each function, calls interleaved so drift hits all alike."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]
