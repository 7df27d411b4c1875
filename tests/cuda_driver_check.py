"""The shipped CUDA drivers (vits_ref.drivers.cuda) against the CPU drivers.

Run as a script (under ``NUMBA_ENABLE_CUDASIM=1`` by tests/test_cuda_drivers.py, or on a
real GPU in process); prints ``MAXDIFF <max relative difference>`` over every check:
the fused bandit loop for every policy's piece, VITS steps (all variants) on the linear
and logistic potentials, Langevin on the logistic potential, and Newton/IRLS.
"""

import warnings

import numpy as np

warnings.simplefilter("ignore")

from vits_ref.kernels.linear import POTENTIAL as LINEAR  # noqa: E402
from vits_ref.kernels.logistic import POTENTIAL as LOGISTIC  # noqa: E402

import vits_ref as vr  # noqa: E402
from vits_ref.bandit.simulate import make_policy  # noqa: E402
from vits_ref.drivers import cpu, cuda  # noqa: E402


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b)))) if a.size else 0.0


def bandit(worst, R=2, T=6, d=3, K=4):
    env = vr.envs.pool(dim=d, n_arms=K, zeta=1.0, seed=1)
    kl_rounds = np.array([3, 6])
    for name in ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-sym",
                 "vits-hf-cv", "lmc", "random"):
        spec = make_policy(name, d).fused(kl=True)
        root = np.random.SeedSequence(5)
        reals = [env.realise(T, rng=np.random.default_rng(s)) for s in root.spawn(R)]
        noises = [spec.draw(s, T, d) for s in np.random.SeedSequence(6).spawn(R)]
        regret, arms, kl, status = cuda.run_fused(spec, reals, noises, kl_rounds)
        stack = [np.stack([getattr(x, f) for x in reals]) for f in ("contexts", "means",
                                                                     "rewards")]
        stack += [np.stack([n[i] for n in noises]) for i in range(3)]
        ref_r, ref_a = np.empty((R, T)), np.empty((R, T), np.int64)
        ref_kl, ref_s = np.zeros((R, 2)), np.zeros(R, np.int64)
        cpu.bandit_runs(spec.piece)(spec.params, *stack, kl_rounds, ref_r, ref_a, ref_kl,
                                    ref_s)
        assert (status == ref_s).all() and (arms == ref_a).all(), name
        worst = max(worst, rel(regret, ref_r), rel(kl, ref_kl))
    return worst


def logistic_model(rng, d=3, n=12, prior=False):
    kw = {"prior_mean": np.full(d, 0.2), "prior_cov": 0.5 * np.eye(d)} if prior else {}
    m = vr.models.Logistic(d, eta=1.3, lam=0.7, **kw)
    X = rng.standard_normal((n, d))
    m.add(X, (rng.random(n) < 0.5).astype(float))
    return m


def per_thread(scratch, R):
    return tuple(np.stack([a] * R) for a in scratch)


def steps(worst, R=2, d=3, S=3, M=2):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((10, d))
    V = np.eye(d) + X.T @ X
    b = X.T @ rng.standard_normal(10)
    logit = logistic_model(rng, d)
    logit_p = logistic_model(rng, d, prior=True)
    cases = [(LINEAR, (V, b), 0)]
    for m in (logit, logit_p):
        cases.append((LOGISTIC, m.kernel_data(), per_thread(m.kernel_scratch(M), R)))
    for pot, data, pscr in cases:
        for variant in range(4):
            mu = 0.1 * rng.standard_normal((R, d))
            B = np.stack([np.eye(d)] * R) * 0.5
            C = np.stack([np.eye(d)] * R) * 2.0
            eps = rng.standard_normal((R, S, M, d))
            got = cuda.vits_steps(pot, variant, True, mu, B, C, data, eps, 0.01, 0.005, pscr)
            for r in range(R):
                m, Bc, Cc = mu[r].copy(), B[r].copy(), C[r].copy()
                ok = cpu.vits_steps(pot)(variant, True, m, Bc, Cc, data, eps[r], 0.01, 0.005,
                                         cpu.vits_scratch(d, M),
                                         pscr if pscr == 0 else tuple(a[r] for a in pscr))
                assert ok == got[3][r]
                worst = max(worst, rel(got[0][r], m), rel(got[1][r], Bc), rel(got[2][r], Cc))
    # Langevin on the logistic potential
    theta = 0.1 * rng.standard_normal((R, d))
    eps = rng.standard_normal((R, S, d))
    pscr = per_thread(logit.kernel_scratch(1), R)
    got = cuda.langevin_steps(LOGISTIC, theta, logit.kernel_data(), eps, 0.01, pscr)
    for r in range(R):
        t = theta[r].copy()
        cpu.langevin_steps(LOGISTIC)(t, logit.kernel_data(), eps[r], 0.01, np.empty(d),
                                     np.empty((1, 1)), logit.kernel_scratch(1))
        worst = max(worst, rel(got[r], t))
    # Newton (IRLS with a Gaussian prior) from two starts
    P0 = 0.7 * np.eye(d)
    b0 = P0 @ np.full(d, 0.1)
    data = logit.kernel_data(prior=False)
    starts = 0.1 * rng.standard_normal((R, d))
    th, H, L, status, its = cuda.newton(LOGISTIC, data, P0, b0, starts, 1e-10, 50, pscr)
    for r in range(R):
        t, Hc, Lc = starts[r].copy(), np.empty((d, d)), np.zeros((d, d))
        s, it = cpu.newton(LOGISTIC)(data, P0, b0, t, 1e-10, 50, Hc, Lc,
                                     logit.kernel_scratch(1))
        assert s == status[r] == 1
        worst = max(worst, rel(th[r], t), rel(H[r], Hc), rel(L[r], Lc))
    return worst


if __name__ == "__main__":
    print("MAXDIFF", steps(bandit(0.0)))
