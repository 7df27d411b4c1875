"""Figure 2's MLP methods batched over runs: cost model, measured rates, paper-size projection.

The VITS paper's Figure 2 (:mod:`vits_ref.experiments.vits.fig2`): the 861-parameter MLP,
50 runs x 1000 rounds x 2 panels, VITS-II, VITS-II Hessian-free (20 draws) and LMC-TS on
the MLP (LinTS, the fourth method, is the fused linear loop: seconds). The batched path
(:mod:`vits_ref.bandit._batched_mlp`) runs a chunk of runs in lockstep with NumPy or CuPy.

Cost model (:func:`vits_ref.bandit._batched_mlp.flops_per_round`, per run and round at ``t``
observations, ``d = 861``, 10 steps):

- VITS-II: three d x d products per step (``C^T C``, ``A B``, ``C (C^T C - A)``: ``6 d^3
  = 3.83 GFLOP``) plus the Gauss-Newton ``J^T J`` over the history, ``2 t d^2`` (1.48
  GFLOP at ``t = 1000``: 39% on top of the products there, 19% averaged over the 1000
  rounds), plus the network's passes (``3 x 2 t x 820`` per draw: 5 MFLOP at t = 1000);
- Hessian-free: the same three products, ``4 d^2 M`` for ``A`` from the 20 draws' offsets
  and gradients, and the passes of 20 draws (2% of the products at ``t = 1000``);
- LMC-TS: the passes only (10 gradients over the history: 49 MFLOP per round at
  ``t = 1000``).

Besides the flops, the Hessian-free method draws ``10 x 20 x 861`` normals per run and
round on the host (NumPy's generators, as the engines draw them): 8.6 M normals per
round for 50 runs, about 0.26 s on one core of this machine (33 M normals/s), more than
the GPU's 47 ms of products at 42 TFLOP/s; the GPU path draws them in a thread pool, a
round ahead (:func:`vits_ref.bandit._batched_mlp.run_block`).

Run::

    python -m vits_ref._bench.mlp_gpu            # R = 2 and 8 runs, 2 rounds each
    python -m vits_ref._bench.mlp_gpu --quick    # R = 2, 1 round
    OPENBLAS_NUM_THREADS=2 python -m vits_ref._bench.mlp_gpu

It prints the cost model, the projection of the paper-size figure from the measured
42 TFLOP/s (CuPy's batched 861 x 861 float64 product over 400 matrices on an H100), the
per-run Python loop against the batched NumPy path here (seconds per round and GFLOP/s),
and the same on a GPU through CuPy when one is present (else one line saying so).
"""

import sys
import time

import numpy as np

from ..bandit import _batched_mlp as bm
from ..bandit.policies import ThompsonSampling
from ..bandit.simulate import simulate
from ..envs import pool
from ..inference import VITS, Langevin
from ..models import MLP
from .timing import blas_threads

#: The measured rate of CuPy's batched 861 x 861 float64 product (H100, 400
#: matrices; docs/performance.md), in flop/s.
H100_BATCHED_GEMM = 42e12
#: The paper's size.
RUNS, ROUNDS, PANELS = 50, 1000, 2


#: fig2's problem and hyperparameters (:mod:`vits_ref.experiments.vits.fig2`; restated
#: here because the experiments import the benchmarks, so the benchmarks cannot import
#: them: ``tests/test_batched_mlp.py`` checks that :func:`methods` equals fig2's).
DIM, N_ARMS, HIDDEN = 20, 50, (20, 20)
ETA, LAM, STEP, HF_COV_STEP = 1.0, 10.0, 1e-3, 1e-4


def methods():
    """``{label: policy}`` of fig2's three MLP methods, with fig2's hyperparameters."""
    net = MLP(DIM, hidden=HIDDEN)
    common = {"model": net, "eta": ETA, "lam": LAM, "step_size": STEP, "n_steps": 10}
    return {"VITS-II": ThompsonSampling(VITS(net.dim, variant="II", **common)),
            "VITS-II HF (20 draws)": ThompsonSampling(
                VITS(net.dim, variant="hessian_free", n_mc=20, symmetrize=True,
                     cov_step_size=HF_COV_STEP, **common)),
            "LMC-TS": ThompsonSampling(Langevin(net.dim, **common))}


def _net_and_flop_args(policy):
    eng = policy.engine
    net = bm.Net(eng.model)
    vits = hasattr(eng, "n_mc")
    n_mc = eng.n_mc if vits else 0
    hessian = vits and eng.variant == "II"
    return net, dict(n_mc=n_mc, n_steps=eng.n_steps, hessian=hessian, net=net)


def flops(policy, t):
    """Flops of one round of one run at ``t`` observations."""
    net, kw = _net_and_flop_args(policy)
    return bm.flops_per_round(net.d, t, **kw)


def flops_rounds(policy, rounds, first=1):
    """Flops of rounds ``first .. first + rounds - 1`` of one run."""
    return sum(flops(policy, t) for t in range(first, first + rounds))


def cost_model(runs=RUNS, rounds=ROUNDS, panels=PANELS, rate=H100_BATCHED_GEMM):
    """Per method: GFLOP per round at t = 1 and t = rounds, the ``J^T J`` share at
    t = rounds, the figure's total and its time at ``rate`` flop/s."""
    out = {}
    for label, pol in methods().items():
        net, kw = _net_and_flop_args(pol)
        products = kw["n_steps"] * 6.0 * net.d ** 3 if kw["n_mc"] else 0.0
        f_first, f_last = flops(pol, 1), flops(pol, rounds)
        total = runs * panels * flops_rounds(pol, rounds)
        jtj_last = (kw["n_steps"] * kw["n_mc"] * 2.0 * rounds * net.d ** 2
                    if kw["hessian"] else 0.0)
        out[label] = {"gflop_round_t1": f_first / 1e9, "gflop_round_tT": f_last / 1e9,
                      "products_gflop_round": products / 1e9,
                      "jtj_share_tT": jtj_last / products if products else 0.0,
                      "total_pflop": total / 1e15, "seconds_at_rate": total / rate}
    return out


def measure(R, rounds, array="numpy", labels=None, python=True):
    """Seconds per round of ``R`` runs: the per-run Python loop (``vr.simulate``, the
    default path) and the batched path (``array``); the batched path's GFLOP/s from the
    cost model. One warm-up round of each first (compilation, CuPy's kernels)."""
    env = pool(dim=DIM, n_arms=N_ARMS, zeta=0.1, reward="quadratic", seed=0)
    xp = bm.array_module(array)
    out = {}
    for label, pol in methods().items():
        if labels is not None and label not in labels:
            continue
        kw = dict(seed=0, new_instance_per_run=True)
        if python:
            simulate(pol, env, 1, n_runs=1, **kw)
        bm.simulate(pol, env, 1, n_runs=1, array=array, **kw)
        t_py = None
        if python:
            t0 = time.perf_counter()
            ref = simulate(pol, env, rounds, n_runs=R, **kw)
            t_py = (time.perf_counter() - t0) / rounds
        t0 = time.perf_counter()
        got = bm.simulate(pol, env, rounds, n_runs=R, array=array, **kw)
        if xp is not np:
            xp.cuda.Device().synchronize()
        t_b = (time.perf_counter() - t0) / rounds
        same = None if not python else bool(np.array_equal(got.arms, ref.arms)
                                            and np.array_equal(got.regret, ref.regret))
        gflops = R * flops_rounds(pol, rounds) / (t_b * rounds) / 1e9
        out[label] = {"python_s_per_round": t_py, "batched_s_per_round": t_b,
                      "speedup": None if t_py is None else t_py / t_b,
                      "batched_gflops": gflops, "same_arms_and_regret": same}
    return out


def main(quick=False):
    """Print the cost model, the projection, and the measured rates."""
    print("vits-fig2's MLP methods (861 parameters, 10 steps a round), batched over runs "
          "(vits_ref.bandit._batched_mlp)")
    print(f"Cost model, per run and round; the paper's figure = {RUNS} runs x {ROUNDS} "
          f"rounds x {PANELS} panels; time at {H100_BATCHED_GEMM / 1e12:.0f} TFLOP/s, the "
          f"rate measured for CuPy's batched 861^3 float64 products on an H100 "
          f"(2026-11-22):")
    total_s = 0.0
    for label, c in cost_model().items():
        total_s += c["seconds_at_rate"]
        print(f"  {label:22s} {c['gflop_round_t1']:8.2f} GFLOP/round at t=1, "
              f"{c['gflop_round_tT']:8.2f} at t={ROUNDS} (J^T J: +{100 * c['jtj_share_tT']:.0f}%"
              f" of the products there); figure {c['total_pflop']:6.2f} PFLOP -> "
              f"{c['seconds_at_rate']:6.0f} s")
    print(f"  projection of the figure's MLP methods on an H100: {total_s:.0f} s "
          f"({total_s / 60:.1f} min) of flops at that rate, if every batch reaches it "
          f"(a batch is a chunk of runs: --chunk-runs 50 for 50 matrices a product); "
          f"plus the host's draws and transfers, overlapped (module docstring)")
    sizes = [(2, 1)] if quick else [(2, 2), (8, 2)]
    print(f"Measured here: per-run Python loop (vr.simulate) against the batched NumPy "
          f"path, same runs (seed 0, zeta 0.1); BLAS threads {blas_threads() or 'unknown'}")
    for R, rounds in sizes:
        for label, m in measure(R, rounds).items():
            print(f"  R = {R} runs x {rounds} rounds  {label:22s} Python loop "
                  f"{m['python_s_per_round']:6.2f} s/round, batched "
                  f"{m['batched_s_per_round']:6.2f} s/round ({m['speedup']:.2f}x; "
                  f"{m['batched_gflops']:5.1f} GFLOP/s); same arms and regret: "
                  f"{m['same_arms_and_regret']}")
    try:
        bm.array_module("cupy")
    except RuntimeError as exc:
        print(f"GPU (CuPy): not measured here: {exc}")
        return
    for R in ((2, 50) if quick else (2, 10, 50)):
        for label, m in measure(R, 2, array="cupy", python=R <= 2).items():
            extra = ("" if m["speedup"] is None else
                     f" ({m['speedup']:.1f}x the Python loop; same arms and regret: "
                     f"{m['same_arms_and_regret']})")
            print(f"  GPU R = {R} runs x 2 rounds  {label:22s} batched "
                  f"{m['batched_s_per_round']:7.3f} s/round, "
                  f"{m['batched_gflops'] / 1e3:6.2f} TFLOP/s{extra}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
