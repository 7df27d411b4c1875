"""The GPU benchmark: rounds per second of the fused bandit loop on the CPU, on CUDA and in JAX.

``main(quick=False)`` prints, in one run, for every fused policy at d = 20, K = 50 arms
(VITS: 10 inner steps), float64:

* the all-core CPU ``prange`` driver (:func:`vits_ref.drivers.cpu.bandit_runs`);
* the numba-cuda path, one run per thread (:func:`vits_ref.drivers.cuda.bandit_runs`, what
  ``simulate(..., device="cuda")`` launches): the whole call (host-to-device copies,
  kernel, copies back) and the device alone (the call less the measured host-to-device
  copy of the same inputs: an estimate);
* the JAX peer (:mod:`vits_ref._bench.jax_peer`, vmap over runs, ``lax.scan`` over rounds
  and steps) for VITS-II and LinTS on the same inputs, when JAX is installed, with the
  fraction of arms equal to the library's (1.0: the same algorithm);
* for the VITS policies, the same in the block layout (one block of threads per run,
  :class:`vits_ref.drivers.cuda_coop.BlockRounds`, what ``simulate(..., device="cuda")``
  launches for them once their piece is block-safe: a row ``<policy>/block``, labelled
  with its threads per block and where the run's state lives; a piece that is not
  block-safe runs there with 1 thread per block, labelled so);
* every policy through the public call with the device-side streams,
  ``simulate(..., device="cuda", stream="philox")`` (:func:`measure_streams`: nothing
  drawn on the host, the layout by size), the path the GPU goals are about;
* the logistic model's pieces (:mod:`vits_ref.kernels.logistic_bandit`: VITS-II, LMC-TS
  and Laplace at :mod:`vits_ref._bench.logistic_loop`'s points) on appendix G's hard
  instance with logistic rewards at d = K = 10 (:func:`measure_logistic`), one run per
  thread (they are not block-safe): CPU ``prange`` against numba-cuda, rows
  ``<policy>/logistic``;
* for the VITS policies, the fraction of the GPU's float64 peak the device loop reaches,
  counting the round's d x d products only (:func:`flops_per_round`) against the FMA peak
  of :data:`FP64_PEAK` (the tensor-core peak is printed too; the loops use no tensor core).

Sizes: 16 384 runs x 50 rounds (``quick``: 2048 x 20; ``runs=`` times several numbers of
runs, one table each, and ``policies=`` a subset: :func:`main`); the CPU times a slice of the runs
(its rounds per second do not depend on the number of runs beyond a few per thread). The
inputs of 512 distinct runs are drawn (``simulate``'s seeding) and tiled: run ``r`` gets
the inputs of run ``r mod 512``, the same work per run, and the host need not draw 16 384
runs of noise. A policy whose inputs exceed :data:`BENCH_BYTES` (host) or half the free
device memory runs on fewer runs (printed).

Without numba-cuda or without a GPU it says so and returns None. Under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) it runs 2 runs x 3 rounds at d = 3, K = 4, every
line labelled "simulator: not a timing" (a check that the benchmark runs, for CI).

Run with ``python -m vits_ref bench --device cuda`` or::

    python -c "from vits_ref._bench import cuda; cuda.main()"
"""

import contextlib
import time

import numpy as np

#: Documented float64 peaks in TFLOP/s: ``(FMA (CUDA cores), tensor core, source)``, matched
#: by substring of the device name (first match). Sources: NVIDIA H100 Tensor Core GPU
#: datasheet (SXM5: 34 / 67; PCIe: 26 / 51; NVL: 30 / 60), NVIDIA H200 Tensor Core GPU
#: datasheet (34 / 67), NVIDIA A100 Tensor Core GPU datasheet (9.7 / 19.5), NVIDIA V100
#: datasheet (SXM2 7.8, PCIe 7; no FP64 tensor core).
FP64_PEAK = (
    ("H100 PCIe", (26.0, 51.0, "NVIDIA H100 datasheet, PCIe")),
    ("H100 NVL", (30.0, 60.0, "NVIDIA H100 datasheet, NVL")),
    ("H100", (34.0, 67.0, "NVIDIA H100 datasheet, SXM5")),
    ("H200", (34.0, 67.0, "NVIDIA H200 datasheet")),
    ("A100", (9.7, 19.5, "NVIDIA A100 datasheet")),
    ("V100S", (8.2, None, "NVIDIA V100S datasheet")),
    ("V100", (7.8, None, "NVIDIA V100 datasheet, SXM2")),
)

#: d x d products per inner step (2 d^3 flops each) that dominate a VITS round: VITS-I
#: ``A B`` and the Gauss-Jordan inverse (~2 d^3); VITS-II ``(eta V) B``, ``C^T C``,
#: ``C (C^T C - A)``; Hessian-free with M = 20 >= d draws: also ``Z = eps B^T``,
#: ``Z^T G``, ``(C^T C) D`` (2 M d^2 each, counted as 2 d^3 at M = d).
PRODUCTS_PER_STEP = {"vits-i": 2, "vits-ii": 3, "vits-hf": 6, "vits-hf-sym": 6,
                     "vits-hf-cv": 6}

#: Host bytes of (tiled) inputs one policy may hold.
BENCH_BYTES = 24 * 2 ** 30
N_UNIQUE = 512
FULL = {"d": 20, "K": 50, "R": 16384, "T": 50, "repeats": 3}
QUICK = {"d": 20, "K": 50, "R": 2048, "T": 20, "repeats": 3}
SIMULATOR = {"d": 3, "K": 4, "R": 2, "T": 3, "repeats": 1}
SIM_LABEL = "simulator: not a timing"
#: appendix G's size for the logistic rows (d = K)
LOGISTIC_DIM = 10
#: the logistic rows: ``(label in logistic_loop, row name)``
LOGISTIC_POLICIES = (("VITS-II", "vits-ii/logistic"), ("LMC-TS", "lmc/logistic"),
                     ("Laplace", "laplace/logistic"))
#: A timed call longer than this (seconds) is not repeated.
LONG_CALL_S = 5.0


def peak_fp64(name):
    """``(fma, tensor, source)`` TFLOP/s for a device name, or None when not documented."""
    for key, peak in FP64_PEAK:
        if key.lower() in name.lower():
            return peak
    return None


def flops_per_round(policy, d, n_steps=10):
    """Float64 flops of a VITS round's d x d products (:data:`PRODUCTS_PER_STEP`), else None."""
    p = PRODUCTS_PER_STEP.get(policy)
    return None if p is None else n_steps * p * 2 * d ** 3


def device_mode():
    """``("gpu" | "simulator" | None, text)``: what this machine can run."""
    import importlib.util

    if importlib.util.find_spec("numba_cuda") is None:
        return None, ("numba-cuda is not installed (pip install 'vits_ref[cuda]'): no CUDA "
                      "figures on this machine")
    from ..bandit._cuda_simulate import simulator_enabled

    if simulator_enabled():
        return "simulator", "Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): " + SIM_LABEL
    from numba import cuda

    try:
        ok = cuda.is_available()
    except Exception:  # a broken driver: no GPU either
        ok = False
    if not ok:
        return None, ("no CUDA GPU here (numba.cuda.is_available() is False): nothing to "
                      "measure; run this on a machine with an NVIDIA GPU")
    name = cuda.get_current_device().name
    return "gpu", name.decode() if isinstance(name, bytes) else str(name)


def _inputs(env, spec, R, T, d, root):
    """The runs' stacked inputs, ``N_UNIQUE`` distinct runs tiled to ``R``."""
    from .._seeding import policy_seed, run_seeds
    from ..bandit._cuda_simulate import _realise

    n = min(R, N_UNIQUE)
    reals, noises = [], []
    for seed in run_seeds(root, 0, n):
        reals.append(_realise(env, seed, T))
        noises.append(spec.draw(policy_seed(seed), T, d))
    arrays = [np.stack([getattr(x, f) for x in reals]) for f in ("contexts", "means",
                                                                 "rewards")]
    arrays += [np.stack([x[i] for x in noises]) for i in range(3)]
    idx = np.arange(R) % n
    return [np.ascontiguousarray(a[idx]) for a in arrays]


def dcuda_threads():
    """Threads per block of the one-run-per-thread launch."""
    from ..bandit._cuda_simulate import THREADS_PER_BLOCK

    return THREADS_PER_BLOCK


def _median(fn, repeats):
    """``(median seconds, last output)`` of up to ``repeats`` calls of ``fn``; a call longer
    than :data:`LONG_CALL_S` is not repeated (its own length dwarfs the timer's noise)."""
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if times[-1] > LONG_CALL_S:
            break
    return float(np.median(times)), out


def _rate(x):
    if x is None:
        return "-"
    return f"{x / 1e6:8.3f} M" if x >= 1e5 else f"{x:10.0f}"


def measure(name, env, sizes, mode, root, cpu_runs=None, spec=None):
    """One policy's row: rounds/s of the CPU prange, the CUDA call, the device estimate and
    the JAX peer (dict; None where not measured). ``spec``: the fused spec to measure
    (default: the named policy's, at its documented defaults); ``name`` labels the row."""
    import numba

    from ..bandit import _cuda_simulate
    from ..bandit.simulate import make_policy
    from ..drivers import cpu
    from ..drivers import cuda as dcuda

    d, K, T = sizes["d"], sizes["K"], sizes["T"]
    spec = make_policy(name, d).fused() if spec is None else spec
    per_run = _cuda_simulate.bytes_per_run(spec, T, d, K)
    free = _cuda_simulate._free_device_bytes() if mode == "gpu" else None
    R = min(sizes["R"], max(1, BENCH_BYTES // per_run))
    if free is not None:
        R = min(R, max(1, int(0.5 * free) // per_run))
    C, M, W, i0, sel, st = _inputs(env, spec, R, T, d, root)
    kl_rounds = np.zeros(0, dtype=np.int64)
    row = {"policy": name, "runs": R, "rounds": T}

    # CPU prange over a slice of the runs (warm call on one run: compile or load the cache)
    n_thr = numba.get_num_threads()
    Rc = min(R, cpu_runs or max(2, 32 * n_thr))
    run_cpu = cpu.bandit_runs(spec.piece)

    def cpu_call(n):
        out = (np.empty((n, T)), np.empty((n, T), np.int64), np.zeros((n, 0)),
               np.zeros(n, np.int64))
        run_cpu(spec.params, C[:n], M[:n], W[:n], i0[:n], sel[:n], st[:n], kl_rounds, *out)
        return out

    cpu_call(1)
    t_cpu, cpu_out = _median(lambda: cpu_call(Rc), sizes["repeats"])
    row["cpu"], row["cpu_threads"] = Rc * T / t_cpu, n_thr

    # numba-cuda, one run per thread (warm call on two runs: compiles the kernel)
    def cuda_call(n):
        return dcuda.bandit_runs(spec.piece, spec.params, C[:n], M[:n], W[:n], i0[:n],
                                 sel[:n], st[:n], kl_rounds)

    cuda_call(min(R, 2))
    t_cuda, cuda_out = _median(lambda: cuda_call(R), sizes["repeats"])
    row["cuda"] = R * T / t_cuda
    # the call less the host-to-device copy of the same inputs: the device loop, estimated
    from numba import cuda as ncuda

    def h2d():
        arrays = [ncuda.to_device(a) for a in (C, M, W, i0, sel, st)]
        ncuda.synchronize()
        return arrays

    t_copy, _ = _median(h2d, sizes["repeats"])
    row["device"] = R * T / max(t_cuda - t_copy, 1e-12)
    row["cuda_vs_cpu_arms"] = float(np.mean(cuda_out[1][:Rc] == cpu_out[1]))
    row["diverged"] = int(np.count_nonzero(cuda_out[3]))

    row["jax"] = row["jax_arms"] = None
    row["_arms"] = cuda_out[1]  # for the JAX peer's comparison (measure_jax)
    row["block"] = None
    if spec.piece.name in _cuda_simulate.BLOCK_PIECES:
        row["block"] = measure_block(spec, (C, M, W, i0, sel, st), sizes, mode, t_copy,
                                     cpu_out[1])
    from ..bandit.simulate import POLICY_DEFAULTS

    row["flops_per_round"] = flops_per_round(
        name, d, POLICY_DEFAULTS.get(name, {}).get("n_steps", 0))
    return row


def logistic_sizes(sizes, mode):
    """The logistic rows' sizes: appendix G's hard instance, d = K = :data:`LOGISTIC_DIM`
    (on the simulator d = 3, K = 4), the runs, rounds and repeats of ``sizes``."""
    if mode == "simulator":
        return {**sizes, "d": 3, "K": 4}
    return {**sizes, "d": LOGISTIC_DIM, "K": LOGISTIC_DIM}


def measure_logistic(sizes, mode, root):
    """The logistic model's rows: VITS-II, LMC-TS and Laplace (IRLS) on the hard instance
    with logistic rewards (:mod:`vits_ref._bench.logistic_loop`'s policies: figG's points,
    Laplace at ``eta = lam = 10``; the pieces of :mod:`vits_ref.kernels.logistic_bandit`),
    one run per thread (the pieces are not block-safe), CPU ``prange`` against numba-cuda,
    as :func:`measure` (no JAX peer, no block row); a list of rows named
    ``"<policy>/logistic"`` with ``"sizes"``."""
    from .. import envs
    from . import logistic_loop

    ls = logistic_sizes(sizes, mode)
    env = envs.hard_instance(dim=ls["d"], n_arms=ls["K"], reward="logistic", seed=0)
    rows = []
    for label, name in LOGISTIC_POLICIES:
        spec = logistic_loop.policy(label, ls["d"]).fused()
        row = measure(name, env, ls, mode, root, spec=spec)
        row.pop("_arms")
        row["label"], row["sizes"] = label, ls
        rows.append(row)
    return rows


def block_threads(spec, d, mode):
    """``(threads, why)``: the block layout's threads per block in the benchmark: what
    :func:`vits_ref.bandit._cuda_simulate.layout_for` gives a block-safe piece (its
    :func:`~vits_ref.bandit._cuda_simulate.block_threads` on a GPU, ``SIMULATOR_BLOCK_THREADS``
    on the simulator), 1 for a piece that is not block-safe (correct, and slow: the loop
    of one thread, one run per block)."""
    from ..bandit import _cuda_simulate as cs
    from ..drivers.cuda_coop import block_safe

    if not block_safe(spec.piece)[0]:
        return 1, "not block-safe: 1 thread"
    n = cs.block_threads(d)
    if mode == "simulator":
        n = min(n, cs.SIMULATOR_BLOCK_THREADS)
    return n, f"{n} threads"


def measure_block(spec, inputs, sizes, mode, t_copy, cpu_arms):
    """The block layout's figures on the thread layout's inputs (one block per run,
    :class:`vits_ref.drivers.cuda_coop.BlockRounds` advancing the whole horizon in one
    chunk): the call (allocation, copies, kernel, copies back) and the device estimate
    (the call less ``t_copy``, the measured host-to-device copy of the inputs); dict."""
    from ..drivers.cuda_coop import BlockRounds

    C = inputs[0]
    R, T, K, d = C.shape
    n_mc = inputs[5].shape[3]
    tpb, why = block_threads(spec, d, mode)

    def call(n):
        rounds = BlockRounds(spec.piece, spec.params, n, T, d, K, n_mc, [],
                             threads_per_block=tpb)
        status = rounds.advance(*(a[:n] for a in inputs))
        return rounds.results() + (status, rounds.shared)

    call(min(R, 2))  # compile
    t, out = _median(lambda: call(R), sizes["repeats"])
    rate = R * T / t
    return {"threads": tpb, "why": why, "shared": out[4], "cuda": rate,
            "device": R * T / max(t - t_copy, 1e-12),
            "cpu_arms": float(np.mean(out[1][:len(cpu_arms)] == cpu_arms)),
            "diverged": int(np.count_nonzero(out[3]))}


def measure_streams(name, env, sizes, mode, cpu_rate):
    """The whole public call with the device-side streams: ``simulate(name, env, T, R,
    seed=0, device="cuda", stream="philox")`` (docs/streams.md), timed end to end (its
    launches, the copies of the outputs back, the layout by size of
    :func:`vits_ref.bandit._cuda_simulate.layout_for_streams`); nothing is drawn on the host, so
    this is the path the GPU goals are about. Compiled by a 2-run call first. Returns
    a dict (rounds/s, the layout used, the CPU prange rate of the same row for the ratio)
    or None when the environment has no counter stream."""
    from ..bandit import _cuda_simulate as cs
    from ..bandit.simulate import simulate

    R, T = sizes["R"], sizes["T"]
    try:
        simulate(name, env, T, 2, seed=0, device="cuda", stream="philox")
    except ValueError:
        return None
    t, res = _median(lambda: simulate(name, env, T, R, seed=0, device="cuda",
                                         stream="philox"), sizes["repeats"])
    layout = dict(cs.last_layout or {})
    return {"rate": R * T / t, "layout": layout.get("layout"),
            "threads": layout.get("threads_per_block"), "vs_cpu": R * T / t / cpu_rate,
            "mean_regret": float(res.regret.sum(axis=1).mean())}


def measure_jax(row, env, sizes, root):
    """The JAX peer's rounds/s on ``row``'s runs (VITS-II and LinTS), into ``row``.

    Run after every numba-cuda measurement: JAX keeps the device memory it has used, so
    measuring it in between would starve the next numba-cuda batch.
    """
    from ..bandit.simulate import make_policy
    from . import jax_peer

    name, R, T, d = row["policy"], row["runs"], sizes["T"], sizes["d"]
    if name not in ("vits-ii", "lints") or not jax_peer.available():
        return row
    spec = make_policy(name, d).fused()
    C, M, W, i0, sel, st = _inputs(env, spec, R, T, d, root)
    p = spec.params
    if name == "vits-ii":
        f = jax_peer.vits_ii_runs(p.eta, p.lam, p.h0_mu, p.h0)
        args = (C, M, W, i0, sel, st)
    else:
        f = jax_peer.lints_runs(p.eta, p.lam)
        args = (C, M, W, sel)
    import jax

    dev = [jax.device_put(a) for a in args]
    del C, M, W, i0, sel, st, args

    def jax_call():
        reg, arms = f(*dev)
        return np.asarray(reg.block_until_ready()), np.asarray(arms)

    jax_call()  # compile
    t_jax, jout = _median(jax_call, sizes["repeats"])
    row["jax"], row["jax_backend"] = R * T / t_jax, jax_peer.backend()
    row["jax_arms"] = float(np.mean(jout[1] == row["_arms"]))
    return row


def main(quick=False, policies=None, runs=None, logistic=True, json_path=None,
         share_gpu=None):
    """Print the GPU benchmark (see the module docstring); returns the rows, or None when
    there is no GPU (and no simulator).

    Parameters
    ----------
    quick : bool
        2048 runs x 20 rounds instead of 16 384 x 50.
    policies : sequence of str, optional
        The fused policies to time (names of :data:`vits_ref.bandit.simulate.POLICY_NAMES`;
        default all of them).
    runs : sequence of int, optional
        The numbers of runs to time, one table each (default the size's one). A policy
        whose inputs do not fit runs on fewer (printed).
    logistic : bool
        Also time the logistic model's rows (:func:`measure_logistic`).
    json_path : str, optional
        Write the rows, the device and the sizes there as JSON.
    share_gpu : str, optional
        A lock file, for benchmark processes that share one GPU (``.ci/gpu_check.sh``'s
        ``lease`` step): compile every kernel first (a pass at 2 runs, one call each, not
        printed), wait until the file ``share_gpu + ".go"`` exists, then time while holding
        an exclusive lock on ``share_gpu``. The processes compile side by side and time
        one at a time, each on an otherwise idle GPU and CPU.
    """
    import io

    import numba

    policies, runs = check_options(policies, runs)
    mode, text = device_mode()
    print("GPU benchmark: the fused bandit loop, rounds per second (float64)")
    if mode is None:
        print(text)
        return None
    if mode == "simulator":
        sizes = SIMULATOR
        print(text)
    else:
        sizes = QUICK if quick else FULL
        print(f"device: {text}; numba {numba.__version__}")
    label = f"  [{SIM_LABEL}]" if mode == "simulator" else ""
    peak = None if mode == "simulator" else peak_fp64(text)
    if mode == "gpu":
        print("float64 peak: " + (f"{peak[0]} TFLOP/s FMA, {peak[1]} TFLOP/s tensor core "
                                  f"({peak[2]})" if peak else
                                  f"not documented here for {text!r}: no fraction printed"))
    runs = (sizes["R"],) if runs is None else runs
    turn = contextlib.nullcontext()
    if share_gpu is not None:
        with contextlib.redirect_stdout(io.StringIO()):
            _measure_all(policies, {**sizes, "R": 2, "repeats": 1}, mode, logistic,
                         jax=False)
        print(f"compiled; waiting for {share_gpu}.go and the lock {share_gpu}", flush=True)
        _wait_for(share_gpu + ".go")
        turn = _exclusive(share_gpu)
    out = []
    with turn:
        for n_runs in runs:
            size = {**sizes, "R": int(n_runs)}
            rows, logistic_rows = _measure_all(policies, size, mode, logistic, jax=True)
            _report(rows, logistic_rows, size, peak, label)
            out += rows + logistic_rows
            if json_path is not None:  # after each size: a run stopped later keeps these
                _write_json(json_path, out, text, sizes, runs)
    return out


def check_options(policies, runs):
    """``(policies, runs)`` of :func:`main` checked, as tuples (``runs`` None stays None);
    a ValueError naming the argument otherwise."""
    from ..bandit.simulate import POLICY_NAMES

    policies = tuple(POLICY_NAMES if policies is None else policies)
    unknown = [p for p in policies if p not in POLICY_NAMES]
    if unknown or not policies:
        raise ValueError(f"policies: {unknown or 'none'} not among the fused policies "
                         f"{', '.join(POLICY_NAMES)}")
    if runs is not None:
        runs = tuple(runs)
        if not runs or any(isinstance(r, bool) or not isinstance(r, (int, np.integer))
                           or r < 1 for r in runs):
            raise ValueError(f"runs: positive integers expected, got {runs!r}")
    return policies, runs


def _measure_all(policies, sizes, mode, logistic, jax):
    """``(rows, logistic rows)`` of one size: every numba-cuda figure, then (``jax``) the
    JAX peer's (see :func:`measure_jax`)."""
    from .. import envs

    env = envs.pool(dim=sizes["d"], n_arms=sizes["K"], zeta=1.0, seed=0)
    root = np.random.SeedSequence(0)
    rows = [measure(name, env, sizes, mode, root) for name in policies]
    for row in rows:  # before JAX too
        row["streams"] = measure_streams(row["policy"], env, sizes, mode, row["cpu"])
    logistic_rows = measure_logistic(sizes, mode, root) if logistic else []
    if mode == "gpu":  # hand numba-cuda's freed buffers back before JAX allocates
        import gc

        from numba import cuda

        gc.collect()
        cuda.current_context().deallocations.clear()
    for row in rows:
        if jax:
            measure_jax(row, env, sizes, root)
        row.pop("_arms")
    return rows, logistic_rows


def _wait_for(path, poll_s=0.5):
    """Return once ``path`` exists."""
    import os

    while not os.path.exists(path):
        time.sleep(poll_s)


@contextlib.contextmanager
def _exclusive(path):
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block."""
    import fcntl

    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_json(path, rows, device, sizes, runs):
    """The rows (NumPy scalars as numbers), the device and the sizes, as JSON at ``path``."""
    import json

    import numba

    def plain(x):
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        if isinstance(x, np.generic):
            return x.item()
        return x

    doc = {"device": device, "numba": numba.__version__, "numpy": np.__version__,
           "sizes": sizes, "runs": list(runs), "rows": plain(rows)}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def _report(rows, logistic, sizes, peak, label):
    """Print one size's tables (see :func:`main`)."""
    d, K = sizes["d"], sizes["K"]
    print(f"d = {d}, K = {K} arms, {sizes['T']} rounds, up to {sizes['R']} runs (inputs of "
          f"{min(sizes['R'], N_UNIQUE)} runs tiled), VITS/LMC 10 inner steps; "
          + (f"median of up to {sizes['repeats']} calls (one if a call takes over "
             f"{LONG_CALL_S:g} s)" if sizes["repeats"] > 1 else "one call"))
    head = (f"{'policy':12s} {'runs':>6s} {'CPU prange':>12s} {'CUDA call':>12s} "
            f"{'CUDA device':>12s} {'dev/CPU':>8s} {'JAX peer':>12s} {'dev/JAX':>8s} "
            f"{'FP64 peak':>9s}")
    print(head + label)
    for row in rows:
        frac = None
        if peak and row["flops_per_round"]:
            frac = row["device"] * row["flops_per_round"] / (peak[0] * 1e12)
        row["peak_fraction"] = frac
        jax_ratio = f"{row['device'] / row['jax']:7.2f}x" if row["jax"] else f"{'-':>8s}"
        print(f"{row['policy']:12s} {row['runs']:6d} {_rate(row['cpu']):>12s} "
              f"{_rate(row['cuda']):>12s} {_rate(row['device']):>12s} "
              f"{row['device'] / row['cpu']:7.2f}x {_rate(row['jax']):>12s} {jax_ratio} "
              f"{'-' if frac is None else f'{100 * frac:.2f}%':>9s}" + label)
        b = row["block"]
        if b is not None:
            bfrac = None
            if peak and row["flops_per_round"]:
                bfrac = b["device"] * row["flops_per_round"] / (peak[0] * 1e12)
            b["peak_fraction"] = bfrac
            bjax = f"{b['device'] / row['jax']:7.2f}x" if row["jax"] else f"{'-':>8s}"
            state = "shared" if b["shared"] else "global"
            print(f"{row['policy'] + '/block':12s} {row['runs']:6d} {'':>12s} "
                  f"{_rate(b['cuda']):>12s} {_rate(b['device']):>12s} "
                  f"{b['device'] / row['cpu']:7.2f}x {'':>12s} {bjax} "
                  f"{'-' if bfrac is None else f'{100 * bfrac:.2f}%':>9s}"
                  f"  [block layout: {b['why']}, state in {state} memory]" + label)
    print("Device-side streams: simulate(..., device='cuda', stream='philox') end to end "
          "(contexts and noise generated in the kernel, layout by size):" + label)
    for row in rows:
        st = row["streams"]
        if st is None:
            continue
        sfrac = None
        if peak and row["flops_per_round"]:
            sfrac = st["rate"] * row["flops_per_round"] / (peak[0] * 1e12)
        st["peak_fraction"] = sfrac
        sjax = f"{st['rate'] / row['jax']:.2f}x JAX" if row["jax"] else "no JAX"
        print(f"  {row['policy'] + '/philox':16s} {_rate(st['rate']):>12s}  "
              f"{st['vs_cpu']:.2f}x CPU prange, {sjax}, "
              f"{'-' if sfrac is None else f'{100 * sfrac:.2f}%'} of FP64 peak  "
              f"[{st['layout']} layout, {st['threads']} threads a block]" + label)
    print(f"CPU prange: {rows[0]['cpu_threads']} Numba threads, a slice of the runs. CUDA "
          "call: copies to and from the device included; CUDA device: the call less the "
          "measured host-to-device copy of its inputs (an estimate).")
    print("Layouts: a row named after its policy runs one run per thread "
          f"({dcuda_threads()} threads a block, vits_ref.drivers.cuda.bandit_runs); a row "
          "'<policy>/block' one block per run (vits_ref.drivers.cuda_coop.BlockRounds, "
          "threads per block by vits_ref.bandit._cuda_simulate.block_threads) on the same inputs.")
    peers = [r for r in rows if r["jax"] is not None]
    if peers:
        print("JAX peer (vits_ref/_bench/jax_peer.py, vmap + lax.scan, backend "
              f"{peers[0]['jax_backend']}): fraction of arms equal to the library's: "
              + ", ".join(f"{r['policy']} {r['jax_arms']:.3f}" for r in peers))
    else:
        print("JAX peer: skipped (JAX is not installed: pip install jax)")
    print("CUDA vs CPU prange, fraction of equal arms: "
          + ", ".join(f"{r['policy']} {r['cuda_vs_cpu_arms']:.3f}" for r in rows))
    blocks = [r for r in rows if r["block"] is not None]
    if blocks:
        print("CUDA block layout vs CPU prange, fraction of equal arms: "
              + ", ".join(f"{r['policy']} {r['block']['cpu_arms']:.3f}" for r in blocks))
    if logistic:
        ls = logistic[0]["sizes"]
        print(f"Logistic model: appendix G's hard instance, logistic rewards, d = {ls['d']}, "
              f"K = {ls['K']}, {ls['T']} rounds (VITS-II and LMC-TS at figG's points, Laplace "
              "at eta 10, lam 10), one run per thread (the pieces are not block-safe):" + label)
        for row in logistic:
            print(f"  {row['policy']:18s} {row['runs']:6d} runs: CPU prange "
                  f"{_rate(row['cpu']).strip():>10s}, CUDA call {_rate(row['cuda']).strip():>10s}, "
                  f"CUDA device {_rate(row['device']).strip():>10s} rounds/s, dev/CPU "
                  f"{row['device'] / row['cpu']:.2f}x; arms equal to the CPU's "
                  f"{row['cuda_vs_cpu_arms']:.3f}" + label)
    bad = [r["policy"] for r in rows + logistic if r["diverged"]]
    bad += [r["policy"] + "/block" for r in blocks if r["block"]["diverged"]]
    if bad:
        print("WARNING: diverged runs (their timing measures nothing): " + ", ".join(bad))
    if peak:
        print("FP64 peak: the VITS rounds' d x d products only (vits_ref._bench.cuda."
              "PRODUCTS_PER_STEP) at the device rate, over the FMA peak.")


if __name__ == "__main__":
    main()
