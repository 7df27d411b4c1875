"""The ``device="cuda"`` path of :func:`vits_ref.simulate` (imported lazily).

:func:`run_fused_cuda` mirrors :func:`vits_ref.simulate._run_fused`: per batch of runs, the
realisations and the policy's noise are drawn on the host from the same seeds (run ``r``
of ``root``: child 0 for the environment, child 1 for the policy), then the fused loop of
:mod:`vits_ref.kernels.bandit` runs one run per GPU thread
(:func:`vits_ref.drivers.cuda.run_fused`), the same body the CPU prange driver compiles.

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

Memory: a batch of runs holds its pre-drawn contexts, means, rewards and noise on the
host and on the device. The batch is sized by both budgets: :data:`HOST_BUDGET` bytes of
host arrays and :data:`DEVICE_FRACTION` of the device's free memory (the simulator has no
device memory: the host budget alone).
"""

import importlib.util

import numpy as np

from . import _validate as val
from ._seeding import child
from .errors import DivergenceError

#: Bytes of pre-drawn randomness held on the host at once by one batch. Larger than the CPU
#: path's budget: a GPU needs thousands of runs in flight (one per thread), and the runs
#: are whole (drivers.cuda.bandit_runs has no chunks of rounds yet), so at d = 20, K = 50
#: and 1000 rounds (VITS-II: 11 MB a run) a batch holds about 800 runs.
HOST_BUDGET = 8 * 2 ** 30
#: Fraction of the device's free memory one batch may use (its inputs, outputs and state).
DEVICE_FRACTION = 0.5
#: Threads per block of the one-run-per-thread launch.
THREADS_PER_BLOCK = 64

_INSTALL = "pip install 'vits_ref[cuda]'"


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
    from .config import check_cuda_stack

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
    from .drivers import cuda as driver

    return driver


def _realise(env, run_seed, T):
    """The run's realisation from its child 0, checked as ``simulate`` checks it (the same
    draws and message as :func:`vits_ref.simulate._realise`, which this module does not
    import: simulate imports this module)."""
    real = env.realise(T, np.random.Generator(np.random.PCG64(child(run_seed, 0))))
    for name, arr in (("contexts", real.contexts), ("rewards", real.rewards)):
        try:
            val.bounded_data(arr, name)
        except ValueError as err:
            raise ValueError(f"the environment {env!r} drew {err}: its scale is too large "
                             f"for the sufficient statistics") from None
    return real


def bytes_per_run(spec, T, d, K, n_kl=0):
    """Bytes one run holds on the device: realisation, noise, state, outputs."""
    n_state = spec.piece.state_size(d, K, max(1, spec.n_draws_per_round))
    inputs = T * K * (d + 2) + d + T * d * (1 + spec.n_draws_per_round)
    return 8 * (inputs + n_state + 2 * T + n_kl + 1)


def batch_size(spec, T, d, K, n_runs, n_kl=0, free_device_bytes=None):
    """Runs per batch: within :data:`HOST_BUDGET` and ``DEVICE_FRACTION`` of the free
    device memory (``None``: no device limit, as under the simulator)."""
    per_run = bytes_per_run(spec, T, d, K, n_kl)
    budget = HOST_BUDGET
    if free_device_bytes is not None:
        budget = min(budget, int(DEVICE_FRACTION * free_device_bytes))
    return int(max(1, min(n_runs, budget // per_run)))


def _free_device_bytes():
    from numba import cuda

    try:
        free, _ = cuda.current_context().get_memory_info()
    except Exception:  # no memory information: the host budget alone
        return None
    # the simulator reports infinite memory: the host budget alone
    return int(free) if np.isfinite(free) else None


def run_fused_cuda(spec, policy, env_for, root, T, n_runs, kl_rounds, regret, arms, kl,
                   progress, first_run=0, threads_per_block=THREADS_PER_BLOCK):
    """The fused runs ``first_run, ..., first_run + n_runs - 1`` on the GPU, into rows
    ``0..n_runs-1`` of ``regret``, ``arms`` and ``kl`` (as ``_run_fused`` on the CPU).

    Raises RuntimeError before any work when the CUDA path cannot run
    (:func:`check_device`), DivergenceError naming the engine, run, round and step size
    when a run's state becomes non-finite (the first such run of a batch, as on the CPU).
    """
    driver = check_device()
    first = env_for(child(root, first_run))
    d, K = first.dim, first.n_arms
    batch = batch_size(spec, T, d, K, n_runs, len(kl_rounds), _free_device_bytes())
    name = getattr(policy, "name", type(policy).__name__)
    for lo in range(0, n_runs, batch):
        hi = min(n_runs, lo + batch)
        reals, noises = [], []
        for r in range(lo, hi):
            run_seed = child(root, first_run + r)
            reals.append(_realise(env_for(run_seed), run_seed, T))
            noises.append(spec.draw(child(run_seed, 1), T, d))
        reg, arm, k, status = driver.run_fused(spec, reals, noises, kl_rounds,
                                               threads_per_block=threads_per_block)
        del reals, noises
        regret[lo:hi], arms[lo:hi], kl[lo:hi] = reg, arm, k
        bad = np.flatnonzero(status)
        if bad.size:
            r, rnd = first_run + lo + int(bad[0]), int(status[bad[0]])
            h = spec.step_size(rnd) if spec.step_size is not None else None
            raise DivergenceError(name, rnd, h, run=r)
        if progress:
            progress(hi, n_runs)
