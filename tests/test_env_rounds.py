"""The one description of a round (vits_ref/envs/rounds.py) and the realisations derived from it.

Every check is exact (``assert_array_equal``). Blocks are made small here
(``BLOCK_VALUES`` patched) so that a horizon of 23 rounds spans several blocks and the
chunk boundaries (chunks of 1, 7, 23 and 33 rounds) fall inside blocks and across them.
The environments are those of ``tests/test_chunked_rounds.py`` (every kind the library
has).
"""

import numpy as np
import pytest
from test_chunked_rounds import ENVS, T
from vits_ref.kernels import bandit_streams as ks

import vits_ref as vr
from vits_ref._seeding import env_rng
from vits_ref.bandit import _fused_draws
from vits_ref.envs import rounds
from vits_ref.reference import streams as ref

CHUNKS = (1, 7, T, T + 10)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of about 5 rounds for every environment of ENVS (at least 1)."""
    def set_for(env):
        per_round = rounds.values_per_round(env.round_draws(), env.n_arms, env.dim)
        monkeypatch.setattr(rounds, "BLOCK_VALUES", 5 * per_round)
        return rounds.block_rounds(env.round_draws(), env.n_arms, env.dim)
    return set_for


def _by_hand(env, n_rounds, rng, block):
    """The description's blocks one after the other: each block's rows of every draw in
    stream order (one call per draw), built by the description's builders."""
    desc = env.round_draws()
    out = []
    for b0 in range(0, n_rounds, block):
        n = min(block, n_rounds - b0)
        ctx = [d.numpy(rng, n) for d in desc.context_draws]
        rew = [d.numpy(rng, n) for d in desc.reward_draws]
        contexts = desc.contexts(ctx, n)
        means = env.expected_reward(contexts)
        out.append((contexts, means, desc.rewards(contexts, means, rew)))
    return [np.concatenate([b[i] for b in out]) for i in range(3)]


@pytest.mark.parametrize("name", sorted(ENVS))
def test_whole_and_chunked_realisations_are_the_description(name, small_blocks):
    env = ENVS[name]()
    block = small_blocks(env)
    assert 1 <= block < T  # several blocks, the last one short unless block divides T
    want = _by_hand(env, T, np.random.default_rng(9), block)
    after = np.random.default_rng(9)
    _by_hand(env, T, after, block)
    rng = np.random.default_rng(9)
    whole = env.realise(T, rng)
    assert rng.bit_generator.state == after.bit_generator.state
    for got, field in zip(want, ("contexts", "means", "rewards"), strict=True):
        np.testing.assert_array_equal(getattr(whole, field), got)
    for chunk in CHUNKS:
        rng = np.random.default_rng(9)
        parts = list(env.realise_chunks(T, rng, chunk))
        assert [p.contexts.shape[0] for p in parts] == [min(chunk, T - t0)
                                                        for t0 in range(0, T, chunk)]
        for got, field in zip(want, ("contexts", "means", "rewards"), strict=True):
            np.testing.assert_array_equal(np.concatenate([getattr(p, field) for p in parts]),
                                          got)
        assert rng.bit_generator.state == after.bit_generator.state


@pytest.mark.parametrize("chunk", (1, 7, T))
def test_a_chunked_realisation_draws_each_number_once(monkeypatch, small_blocks, chunk):
    # one pass: every draw's rows are drawn for T rounds in all (the two-pass scheme drew
    # all but the last draw twice), and a chunked run holds one block at most
    env = ENVS["pool"]()
    block = small_blocks(env)
    drawn = []
    numpy_rows = rounds.Draw.numpy

    def counting(self, rng, n, out=None):
        drawn.append((self.kind, n))
        assert n <= block
        return numpy_rows(self, rng, n, out)

    monkeypatch.setattr(rounds.Draw, "numpy", counting)
    list(env.realise_chunks(T, np.random.default_rng(0), chunk))
    assert sum(n for kind, n in drawn if kind == "integers") == T
    assert sum(n for kind, n in drawn if kind == "normal") == 2 * T  # features, reward


def test_the_pool_by_its_formula():
    # an independent statement of the pool's round (appendix H of the VITS paper): K pool
    # indices, K d normals, one reward normal per round, drawn for all rounds one draw
    # after the other (a horizon within one block: the numbers the library always drew)
    env = vr.envs.pool(dim=5, n_arms=4, zeta=0.3, seed=2)
    T_ = 40
    assert T_ <= rounds.block_rounds(env.round_draws(), 4, 5)
    rng = np.random.default_rng(3)
    idx = rng.integers(env.pool_size, size=(T_, 4))
    g = rng.standard_normal((T_, 4, 5))
    eps = rng.standard_normal((T_, 1))
    X = env.pool[idx] + env.zeta * g
    means = X @ env.theta_star
    real = env.realise(T_, 3)
    np.testing.assert_array_equal(real.contexts, X)
    np.testing.assert_array_equal(real.means, means)
    np.testing.assert_array_equal(real.rewards, means + env.noise_scale * eps)


def test_a_pool_of_another_shape_is_refused_before_the_compiled_pass():
    # the features are built by a compiled pass that reads pool rows unchecked (Numba has
    # no bounds checks): a pool replaced by one of fewer rows or other columns would be
    # read out of bounds, so it is refused, naming it
    for shape in ((3, 5), (50, 4)):
        env = vr.envs.pool(dim=5, n_arms=4, seed=2)
        env.pool = np.zeros(shape)
        with pytest.raises(ValueError, match=r"^pool must have shape \(pool_size, dim\)"):
            env.realise(3, 0)


def test_block_rounds_bound_the_memory():
    env = vr.envs.pool(dim=20, n_arms=50, seed=0)
    desc = env.round_draws()
    per_round = 50 * 22 + 50 + 50 * 20 + 1  # built, then drawn numbers of a round
    assert rounds.values_per_round(desc, 50, 20) == per_round
    assert rounds.block_rounds(desc, 50, 20) == rounds.BLOCK_VALUES // per_round == 1949
    # a round larger than the budget is a block of its own
    big = rounds.RoundDraws((rounds.Draw("normal", (rounds.BLOCK_VALUES,)),), None, (), None)
    assert rounds.block_rounds(big, 1, 1) == 1


def test_features_drawn_into_the_callers_buffer():
    # the stacking of simulate's runs: a block that is exactly the chunk is drawn and built
    # in the caller's buffer, with the numbers of the plain realisation
    env = ENVS["pool"]()
    seed = np.random.SeedSequence(4)
    plain = env.realise(T, env_rng(seed))
    buf = np.full((T, env.n_arms, env.dim), np.nan)
    (real,) = list(_fused_draws.realise_chunks(env, seed, T, T, out=lambda t0, n: buf))
    assert real.contexts is buf or np.shares_memory(real.contexts, buf)
    np.testing.assert_array_equal(buf, plain.contexts)
    np.testing.assert_array_equal(real.rewards, plain.rewards)
    # no buffer for the block: drawn in the realisation's own memory, the same numbers
    parts = list(_fused_draws.realise_chunks(env, seed, T, 7, out=lambda t0, n: None))
    np.testing.assert_array_equal(np.concatenate([p.contexts for p in parts]), plain.contexts)


@pytest.mark.parametrize("name", ["pool", "pool-quadratic", "hard", "hard-logistic"])
def test_the_counter_draws_name_the_kernels_streams(name):
    # the description's draws are what the round bodies generate: the pool's indices and
    # perturbations and every reward draw on the kernels' stream ids
    env = ENVS[name]()
    desc = env.round_draws()
    streams = [d.stream for d in desc.draws]
    if name.startswith("pool"):
        assert streams == [ks.STREAM_CONTEXT_INDEX, ks.STREAM_CONTEXT_NOISE, ks.STREAM_REWARD]
    else:
        assert streams == [ks.STREAM_REWARD]
    body = env.counter_piece()[0]
    assert body is (ks.pool_round if name.startswith("pool") else ks.hard_round)
    # the reference built from the description: features from the streams' numbers
    key = np.array([3, 4], dtype=np.uint64)
    X, means, rewards = ref.env_rounds(env, key, np.arange(3))
    assert X.shape == (3, env.n_arms, env.dim) and means.shape == rewards.shape == (3, env.n_arms)
    if name == "hard-logistic":
        assert set(np.unique(rewards)) <= {0.0, 1.0}


def test_an_environment_without_a_counter_piece_has_no_counter_reference():
    env = ENVS["mixture"]()
    with pytest.raises(ValueError, match="not available"):
        ref.env_rounds(env, np.array([1, 2], dtype=np.uint64), np.arange(2))
    with pytest.raises(ValueError, match="no counter-based stream"):
        ref.draw_rows(rounds.Draw("choice", (), p=(0.5, 0.5)), np.zeros(2, np.uint64), [0])


def test_a_subclass_redrawing_its_round_has_no_counter_piece():
    class Twice(vr.envs.PoolEnvironment):
        def round_draws(self):
            desc = super().round_draws()
            return rounds.RoundDraws(desc.context_draws,
                                     lambda parts, n: 2.0 * desc.contexts(parts, n),
                                     desc.reward_draws, desc.rewards, desc.counter)

    env = Twice(dim=3, n_arms=4, seed=0)
    assert env.chunk_safe
    with pytest.raises(ValueError, match="counter-based stream.*Twice"):
        env.counter_piece()


def test_draw_validation():
    with pytest.raises(ValueError, match="kind"):
        rounds.Draw("gamma", (2,))
    with pytest.raises(ValueError, match="high"):
        rounds.Draw("integers", (2,))
    with pytest.raises(ValueError, match="distinct"):
        rounds.Draw("distinct", (5,), high=3)
    with pytest.raises(ValueError, match="probabilities"):
        rounds.Draw("choice", ())
    with pytest.raises(ValueError, match="into the contexts"):
        rounds.Draw("integers", (2,), high=3, into_contexts=True)
