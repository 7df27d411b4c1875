"""MovieLens: loader, alternating least squares, synthetic stand-in, per-arm environment.

Statistical checks use fixed seeds; each tolerance is stated where it is asserted (z-tests
at 5 standard errors: a false alarm of 5.7e-7 per tested quantity for Gaussian-like
estimators; chi-square tests at p > 1e-4). The environments use a small stand-in
(``SMALL``) so that the file runs in a few seconds; one test builds the full-size default.
"""

import math
import os

import numpy as np
import pytest
from scipy import stats

import vits_ref as vr
from vits_ref import data as ml  # the MovieLens data: loader, stand-in, ALS
from vits_ref.data import als

SMALL = {"n_users": 300, "n_movies": 200, "n_ratings": 6000}


def small_env(**kw):
    return vr.envs.movielens(**{"n_movies": 8, "seed": 0, "synthetic_kwargs": SMALL, **kw})


# ---------------------------------------------------------------------------------------
# loader
# ---------------------------------------------------------------------------------------

DAT = """\
1::1193::5::978300760
1::661::3::978302109

10::1193::4::978300000
7::48::1::978824351
"""

CSV = """\
userId,movieId,rating,timestamp
1,1,4.0,964982703
1,3,4.0,964981247
6,3,0.5,964982224
3,50,5.0,964982931
"""


def test_load_dat(tmp_path):
    p = tmp_path / "ratings.dat"
    p.write_text(DAT)
    r = ml.load_ratings(p)                      # PathLike accepted
    assert r.user_ids.tolist() == [1, 7, 10]
    assert r.movie_ids.tolist() == [48, 661, 1193]
    u, m, y = r                                  # unpacks as the three arrays
    assert u.tolist() == [0, 0, 2, 1]
    assert m.tolist() == [2, 1, 2, 0]
    assert y.tolist() == [5.0, 3.0, 4.0, 1.0]
    assert u.dtype == m.dtype == np.int64 and y.dtype == np.float64
    # the id maps invert the indices
    assert (r.user_ids[u].tolist(), r.movie_ids[m].tolist()) == (
        [1, 1, 10, 7], [1193, 661, 1193, 48])
    assert (r.n_users, r.n_movies, r.n_ratings) == (3, 3, 4)
    assert r.source == os.path.abspath(p)
    assert r.true_user_vectors is None


def test_load_csv_with_and_without_header(tmp_path):
    p = tmp_path / "ratings.csv"
    p.write_text(CSV)
    r = ml.load_ratings(str(p))
    assert r.user_ids.tolist() == [1, 3, 6]
    assert r.movie_ids.tolist() == [1, 3, 50]
    assert r.user_idx.tolist() == [0, 0, 2, 1]
    assert r.movie_idx.tolist() == [0, 1, 1, 2]
    assert r.ratings.tolist() == [4.0, 4.0, 0.5, 5.0]   # half stars kept
    q = tmp_path / "noheader.csv"
    q.write_text(CSV.split("\n", 1)[1])
    s = ml.load_ratings(q)
    for a, b in zip(r, s, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("bad,why", [
    ("3::4::5", "3 fields"),
    ("3::4::5::6::7", "5 fields"),
    ("x::4::5::6", "ids"),
    ("3::-4::5::6", "ids"),
    ("3::4::five::6", "rating"),
    ("3::4::7::6", "rating"),
    ("3::4::0::6", "rating"),
    ("3::4::nan::6", "rating"),
    ("3::4::5::t", "timestamp"),
    ("3,4,5,6", "fields"),
])
def test_load_malformed_line_names_line_number(tmp_path, bad, why):
    p = tmp_path / "ratings.dat"
    p.write_text("1::1::5::1\n\n" + bad + "\n2::2::3::4\n")   # the bad line is line 3
    with pytest.raises(ValueError, match=r"line 3\b") as exc:
        ml.load_ratings(p)
    assert why in str(exc.value) and str(p) in str(exc.value)


def test_load_malformed_csv_line(tmp_path):
    p = tmp_path / "ratings.csv"
    p.write_text(CSV + "4,7,4.5\n")
    with pytest.raises(ValueError, match=r"line 6: 3 fields.*userId,movieId"):
        ml.load_ratings(p)


def test_load_missing_and_empty_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.dat.*grouplens"):
        ml.load_ratings(tmp_path / "nope.dat")
    with pytest.raises(FileNotFoundError, match="not found"):
        ml.load_ratings(tmp_path)                        # a directory is not a file
    (tmp_path / "empty.dat").write_text("\n\n")
    with pytest.raises(ValueError, match="no ratings"):
        ml.load_ratings(tmp_path / "empty.dat")
    (tmp_path / "head.csv").write_text("userId,movieId,rating,timestamp\n")
    with pytest.raises(ValueError, match="no ratings"):
        ml.load_ratings(tmp_path / "head.csv")
    (tmp_path / "other.txt").write_text("1 2 3 4\n")
    with pytest.raises(ValueError, match="line 1 is neither"):
        ml.load_ratings(tmp_path / "other.txt")
    with pytest.raises(TypeError, match="path"):
        ml.load_ratings(3)


# ---------------------------------------------------------------------------------------
# alternating least squares
# ---------------------------------------------------------------------------------------

def naive_half_step(idx_a, idx_b, y, B, n_a, lam):
    """One ridge solve per row, from the observations of that row (a Python loop)."""
    out = np.zeros((n_a, B.shape[1]))
    for a in range(n_a):
        sel = idx_a == a
        Bs = B[idx_b[sel]]
        out[a] = np.linalg.solve(Bs.T @ Bs + lam * np.eye(B.shape[1]), Bs.T @ y[sel])
    return out


def random_observations(rng, n_users, n_movies, n_obs):
    keys = rng.choice(n_users * n_movies, n_obs, replace=False)
    return keys // n_movies, keys % n_movies


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_half_step_matches_naive_solves(rank):
    rng = np.random.default_rng(rank)
    nu, nm = 40, 30
    u, m = random_observations(rng, nu - 3, nm, 300)     # users 37..39 have no ratings
    y = rng.standard_normal(u.size)
    U, V = rng.standard_normal((nu, rank)), rng.standard_normal((nm, rank))
    got_u = als._als_half_step(u, m, y, V, nu, 0.7)
    got_m = als._als_half_step(m, u, y, U, nm, 0.7)
    assert np.allclose(got_u, naive_half_step(u, m, y, V, nu, 0.7), rtol=1e-10, atol=1e-12)
    assert np.allclose(got_m, naive_half_step(m, u, y, U, nm, 0.7), rtol=1e-10, atol=1e-12)
    assert np.all(got_u[nu - 3:] == 0.0)                # no data: the ridge solution is 0


def test_als_recovers_planted_low_rank_matrix():
    # ratings = 3 + U V^T + N(0, 0.1^2) on 30% of a 300 x 200 matrix (~18 000 entries),
    # rank 5. With p = (300 + 200) 5 = 2500 parameters and n observations, a least-squares
    # fit leaves a training RMSE of about sigma sqrt(1 - p/n) = 0.093 and misestimates the
    # full matrix by about sigma sqrt(p/n) = 0.037 (measured: 0.0932 and 0.039), against
    # entries of standard deviation 1. A wrong half-step (or a missing mean) gives errors
    # of the order of 1.
    rng = np.random.default_rng(0)
    nu, nm, k, sigma = 300, 200, 5, 0.1
    U = rng.standard_normal((nu, k)) / k ** 0.25
    V = rng.standard_normal((nm, k)) / k ** 0.25
    truth = U @ V.T
    mask = rng.random((nu, nm)) < 0.3
    u, m = np.nonzero(mask)
    y = 3.0 + truth[u, m] + sigma * rng.standard_normal(u.size)
    Uh, Vh, info = ml.factorize(u, m, y, rank=k, lam=0.1, seed=0, return_info=True)
    assert info["global_mean"] == pytest.approx(y.mean(), rel=1e-14)
    assert 0.85 * sigma < info["rmse"][-1] < 1.05 * sigma
    pred = Uh @ Vh.T + info["global_mean"] - 3.0
    err = pred - truth
    assert np.sqrt(np.mean(err ** 2)) < 0.08
    assert np.sqrt(np.mean(err[~mask] ** 2)) < 0.08    # unobserved entries too
    assert info["rmse"][0] > 2 * info["rmse"][-1]      # it did iterate


def test_factorize_fixed_point_shift_invariance_and_reproducibility():
    r = ml.synthetic_ratings(n_users=80, n_movies=60, n_ratings=1500, seed=1)
    sweeps = []
    U, V, info = ml.factorize(*r, rank=4, seed=3, n_iter=200, return_info=True,
                              progress=lambda i, e: sweeps.append((i, e)))
    # the last half-step of a sweep is the movie solve given the final users
    yc = r.ratings - r.ratings.mean()
    assert np.array_equal(V, als._als_half_step(r.movie_idx, r.user_idx, yc, U, 60, 1.0))
    assert [s[0] for s in sweeps] == list(range(1, info["n_sweeps"] + 1))
    assert np.array_equal([s[1] for s in sweeps], info["rmse"])
    assert info["converged"] and info["n_sweeps"] < 200       # measured: 55 sweeps
    assert 0 <= info["rmse"][-2] - info["rmse"][-1] < 1e-6 * info["rmse"][-1]
    # the same seed gives the same vectors; adding a constant to every rating changes
    # only the global mean (the vectors model the centred ratings)
    U2, V2, info2 = ml.factorize(r.user_idx, r.movie_idx, r.ratings + 0.5, rank=4, seed=3,
                                 n_iter=200, return_info=True)
    assert np.allclose(U2, U, rtol=0, atol=1e-12) and np.allclose(V2, V, rtol=0, atol=1e-12)
    assert info2["global_mean"] == pytest.approx(info["global_mean"] + 0.5, rel=1e-14)
    U3, _ = ml.factorize(*r, rank=4, seed=4, n_iter=200)
    assert not np.array_equal(U3, U)
    U4, _ = ml.factorize(*r, rank=4, seed=3, n_iter=3, tol=0)
    assert not np.array_equal(U4, U)


def test_factorize_extra_rows_get_zero_vectors():
    rng = np.random.default_rng(0)
    u, m = random_observations(rng, 20, 15, 120)
    U, V = ml.factorize(u, m, rng.random(u.size), rank=2, n_users=25, n_movies=18, seed=0)
    assert U.shape == (25, 2) and V.shape == (18, 2)
    assert np.all(U[20:] == 0) and np.all(V[15:] == 0)


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"user_idx": np.array([0.0, 1.0])}, TypeError, "user_idx"),
    ({"movie_idx": np.array([0, -1])}, ValueError, "movie_idx"),
    ({"ratings": np.array([1.0])}, ValueError, "same length"),
    ({"ratings": np.array([1.0, np.nan])}, ValueError, "ratings"),
    ({"rank": 0}, ValueError, "rank"),
    ({"lam": 0.0}, ValueError, "lam"),
    ({"n_iter": 0}, ValueError, "n_iter"),
    ({"tol": -1.0}, ValueError, "tol"),
    ({"n_users": 1}, ValueError, "n_users"),
    ({"progress": 3}, TypeError, "progress"),
])
def test_factorize_bad_arguments(kwargs, exc, match):
    args = {"user_idx": np.array([0, 1]), "movie_idx": np.array([0, 1]),
            "ratings": np.array([1.0, 2.0]), **kwargs}
    with pytest.raises(exc, match=match):
        ml.factorize(**args)


def test_factorize_full_size_stand_in_takes_seconds():
    # the brief's budget: seconds at MovieLens-1M's shape (a loose bound for slow CI;
    # measured 0.5-1 s for 100 000 ratings)
    r = ml.synthetic_ratings(seed=0)
    _, _, info = ml.factorize(*r, seed=0, return_info=True)
    assert info["seconds"] < 10.0


# ---------------------------------------------------------------------------------------
# synthetic stand-in
# ---------------------------------------------------------------------------------------

def test_synthetic_full_size_shapes_and_ranges():
    r = ml.synthetic_ratings(seed=0)
    assert (r.n_users, r.n_movies, r.n_ratings) == (6040, 3706, 100_000)
    assert r.true_user_vectors.shape == (6040, 5) and r.true_movie_vectors.shape == (3706, 5)
    assert set(np.unique(r.ratings)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    keys = r.user_idx * r.n_movies + r.movie_idx
    assert np.unique(keys).size == keys.size                    # no repeated pair
    per_user = np.bincount(r.user_idx, minlength=r.n_users)
    per_movie = np.bincount(r.movie_idx, minlength=r.n_movies)
    assert per_user.min() >= 1 and per_movie.min() >= 1        # every index has data
    # MovieLens-like marginals (mean 3.58, sd 1.12 in ML-1M); measured 3.57 and 0.98
    assert 3.3 < r.ratings.mean() < 3.9 and 0.8 < r.ratings.std() < 1.3
    # popularity skew: the top 10% of movies hold about half the ratings (measured 0.495;
    # uniform popularity would give ~0.15)
    top = np.sort(per_movie)[::-1][: r.n_movies // 10].sum() / r.n_ratings
    assert 0.35 < top < 0.65
    assert "stand-in" in r.source


def test_synthetic_reproducible_and_small_sizes():
    a = ml.synthetic_ratings(n_users=30, n_movies=20, n_ratings=200, rank=2, seed=5)
    b = ml.synthetic_ratings(n_users=30, n_movies=20, n_ratings=200, rank=2, seed=5)
    c = ml.synthetic_ratings(n_users=30, n_movies=20, n_ratings=200, rank=2, seed=6)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)
    assert np.array_equal(a.true_user_vectors, b.true_user_vectors)
    assert not np.array_equal(a.user_idx, c.user_idx)
    assert a.true_movie_vectors.shape == (20, 2)
    # densest allowed: half the matrix
    d = ml.synthetic_ratings(n_users=30, n_movies=20, n_ratings=300, seed=0)
    assert np.unique(d.user_idx * 20 + d.movie_idx).size == 300


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"n_ratings": 49}, ValueError, "n_ratings"),
    ({"n_ratings": 301}, ValueError, "n_ratings"),
    ({"n_users": 0}, ValueError, "n_users"),
    ({"rank": 1.5}, TypeError, "rank"),
    ({"noise": -1.0}, ValueError, "noise"),
])
def test_synthetic_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ml.synthetic_ratings(**{"n_users": 30, "n_movies": 20, "n_ratings": 100, **kwargs})


# ---------------------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------------------

def test_env_shapes_and_per_arm_contexts():
    env = small_env()
    assert env.source == "synthetic" and env.path is None
    assert (env.dim, env.n_arms, env.reward) == (5, 8, "logistic")
    assert env.theta_star.shape == (8, 5) and env.arm_params is env.theta_star
    assert np.array_equal(env.theta_star, env.movie_vectors[env.arm_movies])
    assert np.unique(env.arm_movies).size == 8
    assert env.user_vectors.shape == (300, 5) and env.movie_vectors.shape == (200, 5)
    real = env.realise(40, rng=1)
    assert real.contexts.shape == (40, 8, 5)
    assert real.means.shape == real.rewards.shape == (40, 8)
    assert real.contexts.flags.c_contiguous
    # every arm sees the same user vector, one of the pool's
    assert np.all(real.contexts == real.contexts[:, :1, :])
    x = real.contexts[:, 0, :]
    hit = (x[:, None, :] == env.user_vectors[None]).all(axis=2)
    assert np.all(hit.any(axis=1))
    z = x @ env.theta_star.T
    assert np.allclose(real.means, 1.0 / (1.0 + np.exp(-z)), rtol=1e-13, atol=0)
    assert np.array_equal(real.means, env.expected_reward(real.contexts))
    assert np.array_equal(env.expected_reward(x[0]), real.means[0])   # one user vector
    assert env.optimal_mean_reward(real.contexts[0]) == real.means[0].max()


def test_env_users_are_uniform():
    # 30 000 rounds over 300 users: chi-square goodness of fit to the uniform law
    env = small_env(n_movies=2)
    x = env.realise(30_000, rng=2).contexts[:, 0, :]
    idx = np.argmax((x[:, None, :] == env.user_vectors[None]).all(axis=2), axis=1)
    counts = np.bincount(idx, minlength=300)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_env_bernoulli_rewards_match_means():
    # per arm, z = sum_t (r_t - p_t) / sqrt(sum_t p_t (1 - p_t)) is ~N(0, 1); |z| < 5 per
    # arm. Power: over 20 000 rounds a bias of 0.02 in the success probability moves z by
    # about 0.02 * 20000 / sqrt(20000 / 4) = 5.7, so it would be caught.
    env = small_env()
    real = env.realise(20_000, rng=3)
    assert set(np.unique(real.rewards)) <= {0.0, 1.0}
    p = real.means
    z = (real.rewards - p).sum(axis=0) / np.sqrt((p * (1 - p)).sum(axis=0))
    assert np.all(np.abs(z) < 5)
    # calibration across arms and rounds: bins of p, frequency within 5 SE of the mean p
    r, q = real.rewards.ravel(), p.ravel()
    bins = np.digitize(q, [0.2, 0.4, 0.6, 0.8])
    for b in np.unique(bins):
        sel = bins == b
        if sel.sum() < 1000:
            continue
        se = math.sqrt((q[sel] * (1 - q[sel])).sum()) / sel.sum()
        assert abs(r[sel].mean() - q[sel].mean()) < 5 * se
    # the arms' rewards in a round are independent draws, not one shared coin: at
    # p ~ 0.5, a shared coin would make arm 0 and arm 1 agree far more often than
    # independence predicts
    agree = (real.rewards[:, 0] == real.rewards[:, 1]).mean()
    want = (p[:, 0] * p[:, 1] + (1 - p[:, 0]) * (1 - p[:, 1])).mean()
    assert abs(agree - want) < 5 * 0.5 / math.sqrt(real.rewards.shape[0])


def test_env_linear_variant():
    env = small_env(reward="linear", noise_scale=0.5)
    real = env.realise(20_000, rng=4)
    x = real.contexts[:, 0, :]
    assert np.allclose(real.means, x @ env.theta_star.T, rtol=1e-13, atol=1e-15)
    e = real.rewards - real.means
    assert np.allclose(e, e[:, :1])           # one noise draw per round, as elsewhere
    n = e.shape[0]
    assert abs(e[:, 0].mean()) < 5 * 0.5 / math.sqrt(n)
    assert abs(e[:, 0].var(ddof=1) - 0.25) < 5 * 0.25 * math.sqrt(2 / (n - 1))


def test_env_prior_is_movie_vector_moments():
    env = small_env()
    assert env.prior_mean.shape == env.prior_var.shape == (5,)
    V = env.movie_vectors                     # all 200 movies, not only the arms
    assert np.allclose(env.prior_mean, V.mean(axis=0), rtol=1e-14, atol=1e-16)
    assert np.allclose(env.prior_var, V.var(axis=0, ddof=0), rtol=1e-14)
    assert np.all(env.prior_var > 0)


def test_env_stand_in_is_the_documented_factorisation():
    # path=None: the stand-in synthetic_ratings(**SMALL) seeded by SeedSequence([data_seed,
    # 0]), factorised with the ALS seed SeedSequence([data_seed, 1])
    env = small_env(data_seed=2)
    r = ml.synthetic_ratings(**SMALL, seed=np.random.SeedSequence([2, 0]))
    U, V, info = ml.factorize(*r, seed=np.random.SeedSequence([2, 1]), return_info=True)
    assert np.array_equal(env.user_vectors, U) and np.array_equal(env.movie_vectors, V)
    assert env.data_info["n_ratings"] == 6000 and "stand-in" in env.data_info["source"]
    assert np.array_equal(env.data_info["rmse"], info["rmse"])


def test_env_seed_picks_the_movies_and_data_is_cached():
    a, b, c = small_env(seed=1), small_env(seed=1), small_env(seed=2)
    assert np.array_equal(a.arm_movies, b.arm_movies)
    assert not np.array_equal(a.arm_movies, c.arm_movies)
    assert a.movie_vectors is c.movie_vectors                  # one factorisation, cached
    assert not a.movie_vectors.flags.writeable                 # ... and protected
    d = a.new_instance(2)
    assert np.array_equal(d.arm_movies, c.arm_movies) and d.user_vectors is a.user_vectors
    assert repr(d) == repr(c)
    ss = np.random.SeedSequence(9)
    assert np.array_equal(a.new_instance(ss).arm_movies, small_env(seed=ss).arm_movies)
    # another data seed is another stand-in
    assert not np.array_equal(small_env(data_seed=1).movie_vectors, a.movie_vectors)


def test_env_from_file_and_cache_invalidation(tmp_path):
    r = ml.synthetic_ratings(n_users=120, n_movies=90, n_ratings=2000, seed=7)
    p = tmp_path / "ratings.dat"
    lines = [f"{u + 1}::{m + 10}::{int(y)}::97830{i:04d}"
             for i, (u, m, y) in enumerate(zip(*r, strict=True))]
    p.write_text("\n".join(lines) + "\n")
    env = vr.envs.movielens(path=p, n_movies=5, seed=0)
    assert env.source == "file" and env.path == str(p)
    assert env.data_info["source"] == os.path.abspath(p)
    assert (env.data_info["n_users"], env.data_info["n_movies"]) == (120, 90)
    assert env.data_info["movie_ids"][0] == 10
    U, V = ml.factorize(*ml.load_ratings(p), seed=np.random.SeedSequence([0, 1]))
    assert np.array_equal(env.movie_vectors, V)
    again = vr.envs.movielens(path=str(p), n_movies=5, seed=1)
    assert again.movie_vectors is env.movie_vectors             # cache hit
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))  # "edited": refactorised
    fresh = vr.envs.movielens(path=p, n_movies=5, seed=1)
    assert fresh.movie_vectors is not env.movie_vectors
    assert np.array_equal(fresh.movie_vectors, env.movie_vectors)
    with pytest.raises(FileNotFoundError, match="grouplens"):
        vr.envs.movielens(path=tmp_path / "missing.dat")


def test_env_default_is_the_full_size_stand_in():
    env = vr.envs.movielens(seed=0)
    assert env.source == "synthetic" and env.n_arms == 100 and env.dim == 5
    assert env.user_vectors.shape == (6040, 5) and env.movie_vectors.shape == (3706, 5)
    assert env.data_info["n_ratings"] == 100_000 and env.data_info["converged"]


def test_env_runs_in_simulate():
    env = small_env()
    res = vr.simulate("random", env, n_rounds=30, n_runs=2, seed=0, new_instance_per_run=True,
                      fused=False)
    assert res.cumulative_regret.shape == (2, 30)
    assert np.all(np.diff(res.cumulative_regret, axis=1) >= 0)


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"reward": "quadratic"}, ValueError, "reward"),
    ({"n_movies": 201}, ValueError, "n_movies"),
    ({"n_movies": 0}, ValueError, "n_movies"),
    ({"rank": 0}, ValueError, "rank"),
    ({"noise_scale": 0.0}, ValueError, "noise_scale"),
    ({"data_seed": -1}, ValueError, "data_seed"),
    ({"data_seed": 1.5}, TypeError, "data_seed"),
    ({"synthetic_kwargs": {"n_user": 3}}, ValueError, "synthetic_kwargs"),
    ({"synthetic_kwargs": [1]}, TypeError, "synthetic_kwargs"),
    ({"path": 3}, TypeError, "path"),
    ({"path": "x.dat"}, ValueError, "synthetic_kwargs"),
    ({"seed": -1}, ValueError, "seed"),
])
def test_env_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        small_env(**kwargs)


@pytest.mark.parametrize("bad", [
    "99999999999999999999::4::5::6",   # beyond int64: OverflowError before
    "3::9223372036854775808::5::6",    # 2^63
    "\u00b2::4::5::6",                  # a superscript passes str.isdigit
    "3::" + "9" * 5000 + "::5::6",     # past int()'s 4300-digit limit
])
def test_load_ids_beyond_int64_are_a_clear_error(tmp_path, bad):
    p = tmp_path / "ratings.dat"
    p.write_text("1::1::5::1\n\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3: user and movie ids must be integers in "
                                         r"\[0, 9223372036854775807\]"):
        ml.load_ratings(p)
    p.write_text("1::1::5::1\n9223372036854775807::4::5::6\n")  # the largest id is read
    assert ml.load_ratings(p).user_ids.tolist() == [1, 2 ** 63 - 1]
