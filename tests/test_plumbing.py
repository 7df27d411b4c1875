"""The plumbing of the many-runs paths, each piece in one place.

* run seeds: :func:`vits_ref._seeding.run_seeds` and the run's children (environment,
  policy, instance) against ``SeedSequence.spawn`` directly;
* Numba's thread count: :func:`vits_ref._threads.numba_threads` validates, sets and
  restores (exception or not);
* divergence reports: :func:`vits_ref.errors.raise_first_divergence` names the lowest
  diverging run, its first round and its step size;
* a scan of ``vits_ref/``'s source that keeps each piece in its one place.
"""

import ast
from pathlib import Path

import numba
import numpy as np
import pytest

from vits_ref import _seeding
from vits_ref._threads import numba_threads, set_numba_threads
from vits_ref.errors import DivergenceError, raise_first_divergence, record_first_divergence

SRC = Path(__file__).resolve().parents[1] / "vits_ref"


def _state(ss):
    return ss.generate_state(4).tolist()


# --------------------------------------------------------------------------- run seeds


@pytest.mark.parametrize("root", [0, 12345, np.random.SeedSequence(2 ** 70 + 3),
                                  np.random.SeedSequence(9, spawn_key=(4, 1))])
@pytest.mark.parametrize("first_run, n_runs", [(0, 1), (0, 5), (3, 4)])
def test_run_seeds_are_the_roots_spawned_children(root, first_run, n_runs):
    def fresh_root():  # spawn advances its sequence: a new copy every time
        if isinstance(root, int):
            return np.random.SeedSequence(root)
        return np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key,
                                      pool_size=root.pool_size)

    spawned = fresh_root().spawn(first_run + n_runs)[first_run:]
    got = _seeding.run_seeds(root, first_run, n_runs)
    assert [_state(s) for s in got] == [_state(s) for s in spawned]
    assert [_state(_seeding.run_seed(root, first_run + i)) for i in range(n_runs)] == \
        [_state(s) for s in spawned]
    # the run's children: 0 the environment, 1 the policy, 2 the instance
    for mine, ref in zip(got, spawned, strict=True):
        kids = np.random.SeedSequence(ref.entropy, spawn_key=ref.spawn_key,
                                      pool_size=ref.pool_size).spawn(3)
        assert _state(_seeding.env_seed(mine)) == _state(kids[0])
        assert _state(_seeding.policy_seed(mine)) == _state(kids[1])
        assert _state(_seeding.instance_seed(mine)) == _state(kids[2])
        assert np.array_equal(_seeding.env_rng(mine).random(6),
                              np.random.Generator(np.random.PCG64(kids[0])).random(6))
    # nothing of the caller's root is mutated
    if not isinstance(root, int):
        assert root.n_children_spawned == 0


def test_run_seeds_blocks_equal_one_call():
    whole = _seeding.run_seeds(7, 0, 10)
    blocks = _seeding.run_seeds(7, 0, 4) + _seeding.run_seeds(7, 4, 6)
    assert [_state(s) for s in whole] == [_state(s) for s in blocks]


def test_run_seeds_refuse_none_and_bad_roots():
    with pytest.raises(TypeError, match="root"):
        _seeding.run_seeds(None, 0, 2)
    with pytest.raises(TypeError, match="root"):
        _seeding.run_seed(None, 0)
    with pytest.raises(ValueError, match="root"):
        _seeding.run_seeds(-1, 0, 2)
    with pytest.raises(TypeError, match="root"):
        _seeding.run_seeds(np.random.default_rng(0), 0, 2)


def test_stream_keys_follow_the_rule():
    from vits_ref.bandit._streams import run_keys

    keys = run_keys(np.random.SeedSequence(5), 2, 3)
    ref = np.random.SeedSequence(5).spawn(5)[2:]
    assert np.array_equal(keys, np.stack([s.generate_state(2, dtype=np.uint64) for s in ref]))


# --------------------------------------------------------------------------- threads


def _other_count():
    """A thread count other than the current one when Numba has more than one."""
    now = numba.get_num_threads()
    return 1 if now != 1 else numba.config.NUMBA_NUM_THREADS


def test_numba_threads_sets_and_restores():
    before = numba.get_num_threads()
    n = _other_count()
    with numba_threads(n) as inside:
        assert inside == n == numba.get_num_threads()
    assert numba.get_num_threads() == before
    with numba_threads(None) as inside:
        assert inside == before == numba.get_num_threads()
    assert numba.get_num_threads() == before


def test_numba_threads_restores_on_an_exception():
    before = numba.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"), numba_threads(_other_count()):
        raise RuntimeError("boom")
    assert numba.get_num_threads() == before
    # a count changed inside the block is restored too
    with numba_threads(None), numba_threads(_other_count()):
        pass
    assert numba.get_num_threads() == before


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-2, ValueError), (1.0, TypeError),
                                      (True, TypeError), ("2", TypeError),
                                      (numba.config.NUMBA_NUM_THREADS + 1, ValueError)])
def test_numba_threads_rejects_bad_counts_naming_the_argument(bad, exc):
    before = numba.get_num_threads()
    with pytest.raises(exc, match="n_threads"), numba_threads(bad):
        pass
    with pytest.raises(exc, match="workers"), numba_threads(bad, name="workers"):
        pass
    with pytest.raises(exc, match="n_threads"):
        set_numba_threads(bad)
    assert numba.get_num_threads() == before


def test_set_numba_threads_returns_the_previous_count():
    before = numba.get_num_threads()
    n = _other_count()
    try:
        assert set_numba_threads(n) == before
        assert numba.get_num_threads() == n
    finally:
        set_numba_threads(before)
    assert numba.get_num_threads() == before


def test_simulate_rejects_too_many_threads_naming_the_argument():
    import vits_ref as vr

    env = vr.envs.pool(dim=2, n_arms=3, seed=0)
    with pytest.raises(ValueError, match="n_threads"):
        vr.simulate("random", env, 2, 1, seed=0,
                    n_threads=numba.config.NUMBA_NUM_THREADS + 1)


# --------------------------------------------------------------------------- divergence


def test_raise_first_divergence_names_the_lowest_run():
    status = np.array([0, 0, 9, 4, 0, 2])
    with pytest.raises(DivergenceError) as info:
        raise_first_divergence(status, "VITS-II", first_run=10,
                               step_size=lambda t: 0.5 / t, detail="More words.")
    err = info.value
    assert (err.engine, err.run, err.round) == ("VITS-II", 12, 9)
    assert err.step_size == 0.5 / 9
    assert err.detail == "More words."
    assert "in run 12" in str(err) and "round 9" in str(err) and str(err).endswith("words.")
    # a fixed step size, or none
    with pytest.raises(DivergenceError) as info:
        raise_first_divergence(status, "LMC", step_size=0.25)
    assert (info.value.run, info.value.round, info.value.step_size) == (2, 9, 0.25)
    with pytest.raises(DivergenceError) as info:
        raise_first_divergence(status, "VTS")
    assert info.value.step_size is None and "step size" not in str(info.value)
    raise_first_divergence(np.zeros(4, dtype=np.int64), "VTS")  # nothing diverged


def test_record_first_divergence_keeps_each_runs_first_round():
    first = np.zeros(4, dtype=np.int64)
    record_first_divergence(first, np.array([0, 3, 0, 0]))
    record_first_divergence(first, np.array([5, 5, 0, 0]))  # run 1 again: ignored
    record_first_divergence(first, np.array([0, 0, 0, 7]))
    assert first.tolist() == [5, 3, 0, 7]


def test_in_run_keeps_everything_but_the_run():
    err = DivergenceError("VITS-I", 4, 0.1, detail="B left its range.")
    moved = err.in_run(6)
    assert (moved.engine, moved.round, moved.step_size, moved.detail, moved.run) == \
        ("VITS-I", 4, 0.1, "B left its range.", 6)
    assert err.run is None


# --------------------------------------------------------------------------- one place

#: Modules that may call ``_seeding.child`` besides :mod:`vits_ref._seeding`, and why:
#: their children are not a run's seeds (a run's seeds come from ``run_seeds`` and its
#: children from ``env_seed``/``env_rng``/``policy_seed``/``instance_seed``).
CHILD_ALLOWED = {
    "diffusion/learned.py": "a prior's training streams (initial weights, minibatches)",
    "inference/gmm.py": "EM's restarts",
    "bandit/policies.py": "per-arm engines of one policy",
    "experiments/renyi/mab.py": "per-arm engines of one policy",
    "experiments/diffts/_shared.py": "the data / training seeds of an experiment",
    "experiments/opvi/bnn.py": "a particle run's data split, start and stream",
    "experiments/opvi/mixture.py": "a particle run's start and stream; the data",
}


def _calls(name):
    """``{relative path: [line, ...]}`` of the calls of a function or method ``name``
    (``name(...)`` or ``x.name(...)``) in ``vits_ref/``'s source."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if called == name:
                    out.setdefault(path.relative_to(SRC).as_posix(), []).append(node.lineno)
    return out


def test_numba_threads_are_set_in_one_place():
    # every save/set/restore of Numba's thread count goes through vits_ref._threads
    assert set(_calls("set_num_threads")) == {"_threads.py"}


def test_run_seeds_are_derived_in_one_place():
    calls = _calls("child")
    others = {p: lines for p, lines in calls.items()
              if p != "_seeding.py" and p not in CHILD_ALLOWED}
    assert not others, (f"child() called outside vits_ref._seeding: {others}; derive a "
                        f"run's seeds with run_seeds/run_seed and its children with "
                        f"env_seed/env_rng/policy_seed/instance_seed")
    # and no allowed module derives a run's children by hand: child(child(...), k)
    for path in [SRC / "_seeding.py"] + [SRC / p for p in CHILD_ALLOWED]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "child"
                    and node.args and isinstance(node.args[0], ast.Call)
                    and getattr(node.args[0].func, "id", None) in ("child", "run_seed")):
                raise AssertionError(f"{path.name}:{node.lineno} derives a run's child by "
                                     f"hand; use env_seed/policy_seed/instance_seed")


def test_divergence_errors_name_their_run_in_one_place():
    # a DivergenceError naming a run (run=...) is built only by vits_ref.errors
    # (raise_first_divergence, DivergenceError.in_run)
    where = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", None))
                    == "DivergenceError"
                    and any(k.arg == "run" for k in node.keywords)):
                where.append(path.relative_to(SRC).as_posix())
    assert set(where) == {"errors.py"}, where
