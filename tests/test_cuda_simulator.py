"""The fused loop's body runs unchanged under Numba's CUDA simulator (one body, two targets).

The simulator must be enabled before Numba is imported, so the check runs in a subprocess:
a one-thread CUDA kernel calls ``kernels.bandit.linear_bandit_run`` (the same body the CPU
driver compiles) and must reproduce the CPU driver's regret and KL. Skips cleanly when
``numba-cuda`` (the ``cuda`` extra) is absent.
"""

import textwrap

from conftest import max_diff_under_cuda_simulator

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    from numba import cuda
    warnings.simplefilter("ignore")
    from vits_ref.kernels import bandit as kb
    from vits_ref import bench

    @cuda.jit
    def one_run(args, contexts, means, rewards, init, sel, steps, kl_rounds, regret, arms,
                kl, bufs, status):
        if cuda.grid(1) == 0:
            (V, F, bvec, etaV, eta_b, mu, B, C, mats, work2d, Z, G, vecs, scores, VX) = bufs
            status[0] = kb.linear_bandit_run(*args, contexts, means, rewards, init, sel, steps,
                                             kl_rounds, regret, arms, kl, V, F, bvec, etaV,
                                             eta_b, mu, B, C, mats, work2d, Z, G, vecs,
                                             scores, VX)

    worst = 0.0
    for name in ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "lmc", "random"):
        spec, (run,) = bench.problem(name, n_rounds=6, dim=3, n_arms=4)
        T, K, d = run[0].shape
        M = run[5].shape[2]
        kl_rounds = np.array([3, 6])
        ref_kl = np.zeros(2)
        ref = np.empty(T)
        kb.run_one(*bench._args(spec), *run, kl_rounds, ref, np.empty(T, np.int64), ref_kl)
        bufs = (np.empty((d, d)), np.empty((d, d)), np.empty(d), np.empty((d, d)),
                np.empty(d), np.empty(d), np.empty((d, d)), np.empty((d, d)),
                np.empty((5, d, d)), np.empty((d, 2 * d)), np.empty((M, d)),
                np.empty((M, d)), np.empty((6, d)), np.empty(K), np.empty((K, d)))
        regret, kl, status = np.empty(T), np.zeros(2), np.zeros(1, np.int64)
        one_run[1, 1](bench._args(spec), *run, kl_rounds, regret, np.empty(T, np.int64), kl,
                      bufs, status)
        assert status[0] == 0, name
        worst = max(worst, np.abs(regret - ref).max(), np.abs(kl - ref_kl).max())
    print("MAXDIFF", worst)
""")


def test_fused_body_under_cuda_simulator():
    worst = max_diff_under_cuda_simulator(SCRIPT)
    # The simulator runs the loop bodies in Python (loop products, Gauss-Jordan inverse)
    # while the CPU driver uses BLAS/LAPACK: same algorithm, different summation order,
    # so agreement is to rounding accumulated over 6 rounds of d = 3 (~1e-15 relative).
    assert worst < 1e-10
