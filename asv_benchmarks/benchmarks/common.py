"""Helpers shared by the benchmark modules (no benchmarks here)."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402

from vits_ref._bench.timing import median_times, pin_blas_threads  # noqa: E402, F401

#: asv's time limit per benchmark (seconds). A fresh environment has an empty Numba
#: cache, so the first ``setup`` compiles the fused loop cold (3-12 s per large kernel).
TIMEOUT = 300


def single_thread():
    """One Numba thread, and every loaded OpenBLAS pinned to one thread at run time.

    asv 0.6's runner imports NumPy (through pympler) before this package sets
    ``OPENBLAS_NUM_THREADS``, so the variable alone left NumPy's BLAS with one thread per
    core in the NumPy references (statsmodels measured 4-6x slower that way).
    """
    numba.set_num_threads(1)
    pin_blas_threads(1)


def truncate(run, n_rounds):
    """The first ``n_rounds`` rounds of a run's arrays (``vits_ref._bench.linear.problem``).

    ``run`` is ``(contexts, means, rewards, init_noise, sel_noise, step_noise)``; the
    per-round arrays are cut, ``init_noise`` is kept.
    """
    contexts, means, rewards, init_noise, sel_noise, step_noise = run
    return (contexts[:n_rounds], means[:n_rounds], rewards[:n_rounds], init_noise,
            sel_noise[:n_rounds], step_noise[:n_rounds])


