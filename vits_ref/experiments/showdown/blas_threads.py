"""OpenBLAS's threads inside ``simulate``: what running it on one thread costs and keeps.

:func:`vits_ref.bandit.simulate` runs every loaded OpenBLAS on one thread for the length of
the call (:func:`vits_ref._threads.blas_single_thread`; docs/performance.md, "One BLAS
thread"). Two reasons, both measured here:

* **bits.** Rényi VI's logistic rounds multiply the draws by the history (an ``M x n x d``
  product) through NumPy; at a few hundred rounds the product is large enough for
  OpenBLAS to split it over threads, and the split changes its rounding, so the regret of
  the same seed depended on the machine's core count;
* **time.** Within a process that already runs Numba's threads, or a worker of
  ``--jobs N``, an extra OpenBLAS thread only competes for the same cores.

:func:`main` runs one showdown method on one environment (default: Rényi VI on wine,
where both showed) at each OpenBLAS thread count, the pin replaced by that count for the
call, and prints wall time, CPU time of the process (every thread's), and the SHA-256 of
the regret array, marked where it differs from the first count's. The figures quoted in
docs/performance.md come from::

    python -m vits_ref.experiments.showdown.blas_threads
"""

import contextlib
import hashlib
import time

from ... import _threads


@contextlib.contextmanager
def _blas_at(n):
    """Every loaded OpenBLAS at ``n`` threads for the block, each count restored after."""
    saved = _threads.blas_to_one(n)
    try:
        yield
    finally:
        _threads.blas_restore(saved)


def measure(environment="wine", method="Renyi-VI", rounds=150, runs=2, threads=(1, 2),
            seed=0):
    """``[{"threads", "wall", "cpu", "sha256"}]``: one :func:`simulate_serial` call per
    OpenBLAS thread count of ``threads`` (the showdown's one Numba thread), after a
    3-round call that compiles. The library's own pin is replaced, for each call, by the
    count measured."""
    import importlib

    from .catalogue import ENVIRONMENTS, METHODS
    from .experiment import simulate_serial

    if environment not in ENVIRONMENTS:
        raise ValueError(f"environment: {environment!r} is not one of {sorted(ENVIRONMENTS)}")
    labels = [m.label for m in METHODS]
    if method not in labels:
        raise ValueError(f"method: {method!r} is not one of {labels}")
    if not _threads.openblas_controls():
        raise RuntimeError("no OpenBLAS is loaded in this process: nothing to measure")
    setting = ENVIRONMENTS[environment]
    env = setting.make(seed)
    make = next(m for m in METHODS if m.label == method).make

    def call(n_rounds):
        policy, _ = make(setting, env)
        return simulate_serial(policy, env, n_rounds=n_rounds, n_runs=runs, seed=seed,
                               new_instance_per_run=True)

    call(3)
    # the module, not the function that vits_ref.bandit exports under the same name
    sim_module = importlib.import_module("vits_ref.bandit.simulate")
    pin = sim_module.blas_single_thread
    rows = []
    try:
        for n in threads:
            sim_module.blas_single_thread = lambda n=n: _blas_at(n)
            t0, c0 = time.perf_counter(), time.process_time()
            res = call(rounds)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            rows.append({"threads": n, "wall": wall, "cpu": cpu,
                         "sha256": hashlib.sha256(res.regret.tobytes()).hexdigest()})
    finally:
        sim_module.blas_single_thread = pin
    return rows


def main(**kwargs):
    """Print :func:`measure`'s table; returns its rows."""
    opts = {"environment": "wine", "method": "Renyi-VI", "rounds": 150, "runs": 2, **kwargs}
    rows = measure(**opts)
    print(f"{opts['method']} on {opts['environment']}, {opts['runs']} runs x "
          f"{opts['rounds']} rounds, one Numba thread, OpenBLAS at each count:")
    print(f"{'OpenBLAS threads':>16s} {'wall s':>8s} {'CPU s':>8s} {'CPU/wall':>8s}  "
          "regret SHA-256 (first 16)")
    first = rows[0]["sha256"]
    for r in rows:
        same = "" if r["sha256"] == first else f"  differs from {rows[0]['threads']} thread"
        print(f"{r['threads']:16d} {r['wall']:8.2f} {r['cpu']:8.2f} "
              f"{r['cpu'] / r['wall']:8.2f}  {r['sha256'][:16]}{same}")
    return rows


if __name__ == "__main__":
    main()
