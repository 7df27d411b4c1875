"""Gaussian-target studies (appendices F and I): the traced KL is the right number."""

import numpy as np
import pytest
from vits_ref.kernels import target as kt
from vits_ref.kernels.vits import VARIANT_II

import vits_ref as vr
from vits_ref import reference
from vits_ref.drivers import cpu
from vits_ref.experiments.vits import figF, figI
from vits_ref.experiments.vits.target import METHODS, gaussian_target


@pytest.fixture
def target():
    P, Pm, m = gaussian_target(4, 5.0, np.random.default_rng(0))
    return P, Pm, m


def _gaussian_target_before_issue_7(dim, kappa, rng):
    """The function as it was (precision eigenvalues in [1, kappa]), for the legacy check."""
    Q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    lam = np.geomspace(1.0, kappa, dim)
    P = (Q * lam) @ Q.T
    P = 0.5 * (P + P.T)
    m = rng.standard_normal(dim)
    return P, P @ m, m


def test_target_has_the_requested_condition_number(target):
    P, Pm, m = target
    ev = np.linalg.eigvalsh(P)
    assert ev[-1] / ev[0] == pytest.approx(5.0, rel=1e-12)
    np.testing.assert_allclose(np.linalg.solve(P, Pm), m, rtol=1e-12)


@pytest.mark.parametrize("kappa", [2.5, 10.0, 20.0])
def test_target_covariance_spans_one_to_kappa(kappa):
    """The default scale: Sigma* eigenvalues log-spaced in [1, kappa], so lmax(P) = 1 and
    the paper's absolute steps (h < 1) are stable at every kappa."""
    P, _, _ = gaussian_target(10, kappa, np.random.default_rng(3))
    cov_ev = np.linalg.eigvalsh(np.linalg.inv(P))
    np.testing.assert_allclose(cov_ev, np.geomspace(1.0, kappa, 10), rtol=1e-12)
    assert np.linalg.eigvalsh(P)[-1] == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_array_equal(P, P.T)


@pytest.mark.parametrize("kappa", [2.5, 10.0])
def test_target_legacy_scale_is_bit_identical(kappa):
    old = _gaussian_target_before_issue_7(10, kappa, np.random.default_rng(7))
    new = gaussian_target(10, kappa, np.random.default_rng(7), scale="precision")
    for a, b in zip(old, new, strict=True):
        np.testing.assert_array_equal(a, b)
    # the same draws in the same order: the two scales share eigenvectors and mean
    cov = gaussian_target(10, kappa, np.random.default_rng(7))
    np.testing.assert_array_equal(cov[2], old[2])
    np.testing.assert_allclose(np.linalg.inv(cov[0]), old[0], rtol=1e-10, atol=1e-12)


def test_target_rejects_an_unknown_scale():
    with pytest.raises(ValueError, match="scale"):
        gaussian_target(3, 2.0, np.random.default_rng(0), scale="variance")


def test_vi_trace_equals_kl_of_the_engine_iterates(target):
    """The traced KL after step k equals gaussian.kl of VITS-II run k steps by the engine
    kernel from the same start with the same noise (Numba's generator, same seed)."""
    P, Pm, m = target
    h = 0.1 / np.linalg.eigvalsh(P)[-1]
    rec = np.full(30, np.inf)
    n = cpu.trace_one(VARIANT_II, True, P, Pm, h, 1, 30, 0, 0.0, 7, rec)
    assert n == 30
    # replay: the driver draws one (n, 1, d) block from np.random seeded inside Numba,
    # so recompute the iterates with the same kernel step by step from a NumPy replay of
    # the exact-arithmetic recursion (reference.vits_step) on the same noise.
    from numba import njit

    @njit
    def draw(seed, n, d):
        np.random.seed(seed)  # noqa: NPY002 - replays Numba's generator
        return np.random.standard_normal((n, 1, d))  # noqa: NPY002

    eps = draw(7, 30, 4)
    mu, B, C = np.zeros(4), np.eye(4), np.eye(4)
    for k in range(30):
        mu, B, C = reference.vits_step(VARIANT_II, mu, B, C, P, Pm, eps[k], h, h)
        want = vr.gaussian.kl(mu, B @ B.T, m, np.linalg.inv(P))
        # kernel (BLAS) and reference (NumPy) differ by rounding only; KL values are O(1)
        assert rec[k] == pytest.approx(want, rel=1e-8, abs=1e-10)


def test_lmc_trace_uses_running_moments_after_burn_in(target):
    P, Pm, m = target
    h = 0.05 / np.linalg.eigvalsh(P)[-1]
    burn = 50
    rec = np.full(400, np.inf)
    cpu.trace_one(kt.METHOD_LMC, True, P, Pm, h, 1, 400, burn, 0.0, 3, rec)
    assert np.all(np.isinf(rec[:burn + 4]))  # burn-in, then until the covariance is PD

    from numba import njit

    @njit
    def draw(seed, n, d):
        np.random.seed(seed)  # noqa: NPY002 - replays Numba's generator
        return np.random.standard_normal((n, 1, d))  # noqa: NPY002

    eps = draw(3, 400, 4)
    theta, chain = np.zeros(4), []
    for k in range(400):
        theta = theta - h * (P @ theta - Pm) + np.sqrt(2 * h) * eps[k, 0]
        chain.append(theta.copy())
    kept = np.array(chain[burn:])
    want = vr.gaussian.kl(kept.mean(0), np.cov(kept.T, bias=True), m, np.linalg.inv(P))
    # Welford's running moments vs np.cov on the same 350 samples: rounding only
    assert rec[-1] == pytest.approx(want, rel=1e-8)


def test_stops_at_eps_and_counts_steps(target):
    P, Pm, _ = target
    h = 0.1 / np.linalg.eigvalsh(P)[-1]
    rec = np.full(5000, np.inf)
    n = cpu.trace_one(VARIANT_II, True, P, Pm, h, 1, 5000, 0, 0.5, 1, rec)
    assert rec[n - 1] <= 0.5 and np.all(rec[:n - 1] > 0.5)


def test_trace_many_is_independent_of_threads(target):
    import numba

    P, Pm, _ = target
    h = 0.1 / np.linalg.eigvalsh(P)[-1]
    seeds = np.arange(4, dtype=np.int64)
    out = []
    for n_threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(n_threads)
        rec = np.full((4, 200), np.inf)
        cnt = np.zeros(4, dtype=np.int64)
        cpu.trace_many(kt.METHOD_LMC, True, P, Pm, h, 1, 200, 20, 0.0, seeds, rec, cnt)
        out.append(rec)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert all(np.array_equal(out[0], o) for o in out)


def test_figF_small(tmp_path):
    res = figF.run(runs=2, rounds=3000, seed=1, out=str(tmp_path), kappas=(2.5, 10.0),
                   step_sizes=(0.1,))
    assert len(res["results"]) == 2 * len(METHODS)
    by = {(e["method"], e["kappa"]): e for e in res["results"]}
    # VI converges in far fewer steps than averaged LMC on the same targets (appendix F)
    for kappa in (2.5, 10.0):
        assert by[("VI-II", kappa)]["median_steps"] < by[("LMC", kappa)]["median_steps"]
        # VI-I and VI-II coincide to first order in h: same counts here
        assert abs(by[("VI-I", kappa)]["median_steps"]
                   - by[("VI-II", kappa)]["median_steps"]) <= 5
    assert (tmp_path / "steps.png").stat().st_size > 1000
    assert "VI-II" in figF.table(res) and "step size 0.1" in figF.table(res)


def test_figF_step_factors_run_the_earlier_study(tmp_path):
    """``step_factors`` (notebook 02): relative steps on precision-scaled targets."""
    res = figF.run(runs=1, rounds=500, seed=1, out=str(tmp_path), kappas=(5.0,),
                   step_factors=(0.1,), methods=("VI-II",))
    (e,) = res["results"]
    assert e["step_factor"] == 0.1 and res["target_scale"] == "precision"
    assert "0.1 / lmax" in figF.table(res)


def test_figI_small(tmp_path):
    res = figI.run(runs=2, rounds=1500, seed=1, out=str(tmp_path))
    assert res["step_size"] == 0.1 and res["kappa"] == 10.0
    costs = {e["method"]: e["us_per_step"] for e in res["results"]}
    # every method timed; which is cheaper (VI-I pays an inverse per step that VI-II
    # avoids) is the claim figI-vi-i-slower-than-vi-ii, judged over paired repeats by the
    # claim table: one wall-time comparison here flipped on a loaded CI machine (7.8 > 27.0)
    assert {"VI-I", "VI-II"} <= set(costs)
    assert all(np.isfinite(c) and c > 0 for c in costs.values())
    assert all(e["diverged_runs"] == 0 for e in res["results"])
    assert (tmp_path / "kl_vs_time.csv").exists() and "us/step" in figI.table(res)
