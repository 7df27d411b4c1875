"""A batch update and the same observations one by one end at the same posterior.

An engine's ``update`` with ``n`` rows runs one step schedule for the batch; the rows one
at a time run ``n`` (``Engine.update``'s notes). On the linear model the posterior of the
observations is known in closed form (:func:`vits_ref.gaussian.linear_posterior`), so each
side is checked against it and against the other, and each check is shown to fail when
the batch drops one observation.
"""

import numpy as np
import pytest
from scipy import stats

import vits_ref as vr
from vits_ref.gaussian import kl, linear_posterior

D, N, ETA, LAM = 3, 12, 1.0, 1.0


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D)) / np.sqrt(D)  # |x|^2 about 1: steps stable at t = 1
    y = X @ np.array([1.0, -0.5, 0.3]) + 0.5 * rng.standard_normal(N)
    return X, y


def _one_by_one(engine, X, y):
    for i in range(len(y)):
        engine.update(X[i:i + 1], y[i:i + 1])
    return engine


# VITS at the default decayed schedule h_t = h0/(eta t), h0 = 0.2: h_1 lmax(eta V_1) < 1 at
# the first observation, h_12 = 0.017 at the last. 1000 steps an update: the slowest mode
# contracts by (1 - h_12 lmin)^1000 < 1e-11 (lmin(eta V_12) = 1.5). 100 Monte Carlo draws a
# step keep the mean's noise floor (below) at 0.00044, 1/40 of what dropping the last
# observation moves the posterior (KL 0.018).
VITS_KW = {"eta": ETA, "lam": LAM, "step_size": 0.2, "n_steps": 1000, "n_mc": 100}
SEEDS = range(10)


def _vits_floor(h, A, n_mc):
    """The mean's Monte Carlo noise floor, as E KL(q || p) when the covariance has
    converged: the mean step ``mu <- mu - h A (mu - m) - h A B eps_bar`` (``B B^T = A^-1``,
    ``eps_bar`` the mean of ``n_mc`` normals) is an AR(1) whose stationary covariance ``S``
    solves ``S = (I - hA) S (I - hA) + h^2 A / n_mc``, i.e. ``S = h (2I - hA)^-1 / n_mc``;
    the KL's mean term is ``(mu - m)^T A (mu - m) / 2``, of expectation ``tr(A S) / 2``."""
    S = h * np.linalg.inv(2.0 * np.eye(len(A)) - h * A) / n_mc
    return 0.5 * np.trace(A @ S)


def _mean_kl(ps, qs):
    """The mean over the seeds of KL(p || q)."""
    return np.mean([kl(p.mean, p.cov, q.mean, q.cov) for p, q in zip(ps, qs, strict=True)])


@pytest.mark.parametrize("variant", ["II", "I"])
def test_vits_batch_and_one_by_one_reach_the_posterior(data, variant):
    X, y = data
    m, S = linear_posterior(X, y, eta=ETA, lam=LAM)
    floor = _vits_floor(VITS_KW["step_size"] / (ETA * N), np.linalg.inv(S), VITS_KW["n_mc"])
    batch = [vr.VITS(D, variant=variant, seed=s, **VITS_KW).update(X, y) for s in SEEDS]
    one = [_one_by_one(vr.VITS(D, variant=variant, seed=100 + s, **VITS_KW), X, y)
           for s in SEEDS]
    dropped = [vr.VITS(D, variant=variant, seed=s, **VITS_KW).update(X[:-1], y[:-1])
               for s in SEEDS]
    assert all(q.n_obs == N for q in batch + one)

    def to_exact(qs):
        return np.mean([kl(q.mean, q.cov, m, S) for q in qs])

    # The covariance converges deterministically on the linear model (its Hessian is
    # exact), to rounding; the mean keeps the noise floor. Per seed the KL's mean term is
    # a quadratic form of a Gaussian, of mean ``floor``; measured over 200 seeds (batch
    # and one by one alike) its mean over 10 seeds lies in [0.36, 1.9] floor, and
    # between a batch and one by one (two floors) in [0.8, 3.5] floor; a batch without
    # the last observation in [38, 47] floor. Tolerances 3 and 6 floor.
    for qs in (batch, one):
        for q in qs:
            np.testing.assert_allclose(q.cov, S, rtol=1e-9, atol=1e-12)
        assert to_exact(qs) < 3 * floor
    assert _mean_kl(batch, one) < 6 * floor
    # it can fail: a batch missing the last observation fails both checks by 4x and more
    assert to_exact(dropped) > 4 * 3 * floor
    assert _mean_kl(dropped, one) > 4 * 6 * floor


def test_laplace_batch_and_one_by_one_are_the_exact_posterior(data):
    """Newton on a quadratic potential stops at its minimum after one step: the same
    posterior to rounding (relative 1e-10 is a few hundred ulps at this conditioning)."""
    X, y = data
    m, S = linear_posterior(X, y, eta=ETA, lam=LAM)
    batch = vr.Laplace(D, eta=ETA, lam=LAM).update(X, y)
    one = _one_by_one(vr.Laplace(D, eta=ETA, lam=LAM), X, y)
    for q in (batch, one):
        np.testing.assert_allclose(q.mean, m, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(q.cov, S, rtol=1e-10, atol=1e-14)
    dropped = vr.Laplace(D, eta=ETA, lam=LAM).update(X[:-1], y[:-1])
    assert not np.allclose(dropped.mean, m, rtol=1e-3)


# LMC-TS: the chain's state is one draw, so its law is measured over draws: CHAINS
# independent chains, each continued by DRAWS updates without data after its observations
# (each runs the update's steps on the same data: the chain moves on in its law), a draw
# after each. Constant step h = 0.02 (h lmax(eta V) = 0.12) and 400 steps an update: a
# chain forgets its state by (1 - h lmin)^400 < 1e-5 (lmin(eta V) = 1.5), so the draws are
# independent.
LMC_KW = {"eta": ETA, "lam": LAM, "step_size": 0.02, "n_steps": 400, "schedule": "constant"}
CHAINS, DRAWS = 200, 20


def _draws(X, y, batch, n=N, seed=0):
    out = np.empty((CHAINS, DRAWS, D))
    none_x, none_y = np.empty((0, D)), np.empty(0)
    for c in range(CHAINS):
        eng = vr.Langevin(D, seed=seed + c, **LMC_KW)
        eng = eng.update(X[:n], y[:n]) if batch else _one_by_one(eng, X[:n], y[:n])
        for j in range(DRAWS):
            out[c, j] = eng.update(none_x, none_y).theta
    return out.reshape(-1, D)


def _ula_law(X, y):
    """The unadjusted chain's stationary law on the linear model, in closed form: with
    ``A = eta V`` the chain ``theta <- theta - h A (theta - m) + sqrt(2h) z`` has mean ``m``
    and covariance ``S`` solving ``S = (I - hA) S (I - hA) + 2h I``:
    ``S = (A - h A^2 / 2)^-1`` (the exact posterior's ``A^-1`` to O(h))."""
    m, Sp = linear_posterior(X, y, eta=ETA, lam=LAM)
    A = np.linalg.inv(Sp)
    return m, np.linalg.inv(A - 0.5 * LMC_KW["step_size"] * A @ A)


def _mean_stat(draws, m, S):
    """Hotelling's statistic of the draws' mean against ``m``, the covariance known:
    chi2 with D degrees of freedom when their law has mean ``m``."""
    e = draws.mean(axis=0) - m
    return len(draws) * e @ np.linalg.solve(S, e)


def test_lmc_batch_and_one_by_one_reach_the_chains_law(data):
    X, y = data
    m, S = _ula_law(X, y)
    crit = stats.chi2.ppf(0.999, D)  # 16.3: each comparison fails by chance 1 in 1000
    batch, one = _draws(X, y, True), _draws(X, y, False, seed=10_000)
    n = len(batch)
    for draws in (batch, one):
        assert _mean_stat(draws, m, S) < crit
        # the sample covariance of n = 4000 draws: KL(N(0, S_hat) || N(0, S)) has mean
        # about D (D + 1) / (4 n) = 0.00075 and a standard deviation about as large;
        # 0.006 is 7 of them
        assert kl(np.zeros(D), np.cov(draws.T), np.zeros(D), S) < 0.006
    # to each other: the difference of two independent means has covariance 2 S / n
    e = batch.mean(axis=0) - one.mean(axis=0)
    assert n / 2 * e @ np.linalg.solve(S, e) < crit
    # it can fail: without the last observation the mean moves by 0.034 in the metric of
    # S, a statistic of about 0.034 n = 136 (non-central chi2_3: below 2 crit with
    # probability < 1e-4)
    assert _mean_stat(_draws(X, y, True, n=N - 1), m, S) > 2 * crit


def test_logistic_laplace_batch_and_one_by_one_reach_the_same_map():
    """IRLS runs to its tolerance in each update (relative step <= 1e-8), warm-started:
    whatever the grouping it stops at the MAP of all the observations, where Newton
    converges quadratically, so both agree far inside 1e-6; one observation fewer moves
    the MAP by O(1/n), far outside it."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, D))
    y = (rng.random(40) < 1.0 / (1.0 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))).astype(float)
    kw = {"model": "logistic", "eta": ETA, "lam": LAM}
    batch = vr.Laplace(D, **kw).update(X, y)
    one = _one_by_one(vr.Laplace(D, **kw), X, y)
    np.testing.assert_allclose(one.mean, batch.mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(one.cov, batch.cov, rtol=1e-6, atol=1e-9)
    dropped = vr.Laplace(D, **kw).update(X[:-1], y[:-1])
    assert not np.allclose(dropped.mean, batch.mean, rtol=1e-3)
