"""The non-linear kernel bodies run unchanged under Numba's CUDA simulator.

Same approach as ``test_cuda_simulator.py``: a one-thread CUDA kernel calls the bodies
(logistic gradients and mean Hessian, IRLS, the generic VITS step) that the CPU drivers
compile, in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``, and must reproduce the CPU
results. Skips when ``numba-cuda`` is absent.
"""

import textwrap

from conftest import max_diff_under_cuda_simulator

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    from numba import cuda
    warnings.simplefilter("ignore")
    from vits_ref.kernels import logistic as kl, vits as kv

    rng = np.random.default_rng(0)
    n, d, M = 12, 3, 4
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 0.5).astype(float)
    thetas = rng.standard_normal((M, d))
    worst = 0.0

    @cuda.jit
    def grads(X, y, thetas, Z, w, Xw, G, H):
        if cuda.grid(1) == 0:
            kl.logistic_grads_hessian(X, y, thetas, 1.5, 0.7, True, Z, w, Xw, G, H)

    G, H = np.empty((M, d)), np.empty((d, d))
    grads[1, 1](X, y, thetas, np.empty((n, M)), np.empty(n), np.empty((n, d)), G, H)
    Gc, Hc = np.empty((M, d)), np.empty((d, d))
    kl.logistic_grads_hessian_cpu(X, y, thetas, 1.5, 0.7, True, np.empty(n),
                                  np.empty((n, d)), Gc, Hc)
    worst = max(worst, np.abs(G - Gc).max(), np.abs(H - Hc).max())

    @cuda.jit
    def irls(X, y, P0, b0, theta2, H, L, z2, w, Xw, g2, step, trial2, ztrial2, out):
        if cuda.grid(1) == 0:
            s, it = kl.irls_logistic(X, y, 1.0, P0, b0, theta2, 1e-10, 50, H, L, z2, w, Xw,
                                     g2, step, trial2, ztrial2)
            out[0] = s
            out[1] = it

    P0, b0 = np.eye(d), np.zeros(d)
    theta2, out = np.zeros((1, d)), np.zeros(2, np.int64)
    irls[1, 1](X, y, P0, b0, theta2, np.empty((d, d)), np.empty((d, d)), np.empty((n, 1)),
               np.empty(n), np.empty((n, d)), np.empty((1, d)), np.empty(d),
               np.empty((1, d)), np.empty((n, 1)), out)
    theta_c = np.zeros(d)
    status, it = kl.irls_logistic_cpu(X, y, 1.0, P0, b0, theta_c, 1e-10, 50,
                                      np.empty((d, d)), np.empty((d, d)))
    assert out[0] == status and out[1] == it, (out, status, it)
    worst = max(worst, np.abs(theta2[0] - theta_c).max())

    @cuda.jit
    def step(variant, mu, B, C, Zs, G, H, gmu, mats, work2d, g):
        if cuda.grid(1) == 0:
            kv.vits_model_step(variant, True, mu, B, C, Zs, G, H, gmu, 0.01, 0.02, mats[0],
                               mats[1], mats[2], mats[3], mats[4], work2d, g)

    for variant in (kv.VARIANT_I, kv.VARIANT_II, kv.VARIANT_HF, kv.VARIANT_HF_CV):
        mu, B = rng.standard_normal(d), np.eye(d) + 0.1 * rng.standard_normal((d, d))
        C = np.linalg.inv(B)
        Zs, Gs = rng.standard_normal((M, d)), rng.standard_normal((M, d))
        Hs, gmu = np.eye(d) * 2.0, rng.standard_normal(d)
        state = [a.copy() for a in (mu, B, C)]
        step[1, 1](variant, *state, Zs, Gs.copy(), Hs, gmu, np.empty((5, d, d)),
                   np.empty((d, 2 * d)), np.empty(d))
        ref = [a.copy() for a in (mu, B, C)]
        kv.model_step_cpu(variant, True, *ref, Zs, Gs.copy(), Hs, gmu, 0.01, 0.02,
                          np.empty((5, d, d)), np.empty((d, 2 * d)), np.empty(d))
        worst = max(worst, *(np.abs(a - b).max() for a, b in zip(state, ref)))
    print("MAXDIFF", worst)
""")


def test_nonlinear_bodies_under_cuda_simulator():
    worst = max_diff_under_cuda_simulator(SCRIPT)
    # loops (simulator) vs BLAS/LAPACK (CPU driver): same algorithm, other summation
    # order; O(1) values at d = 3, so agreement to ~1e-14 (IRLS converged to 1e-10 on both)
    assert worst < 1e-10
