"""Deterministic seed derivation (no hidden global state, no mutation of the caller's seeds)."""

import numpy as np

from ._validate import as_seed_sequence


def child(ss, i):
    """The ``i``-th child of ``ss``, derived without mutating ``ss`` (unlike ``spawn``)."""
    return np.random.SeedSequence(entropy=ss.entropy, spawn_key=tuple(ss.spawn_key) + (int(i),),
                                  pool_size=ss.pool_size)


# --------------------------------------------------------------------------- run seeds
#
# The one rule of every many-runs path (:func:`vits_ref.bandit.simulate` and its fused,
# CUDA, streamed, VTS, MLP and DiffTS fast paths, the benchmarks, the experiments): run
# ``r`` of a root seed is seeded by child ``r`` of the root; the run's child 0 draws the
# environment's realisation, child 1 seeds the policy, child 2 draws the problem instance
# (``new_instance_per_run``). Every path derives them here, so that the same run gets the
# same numbers on every path (tests/test_plumbing.py).

#: Children of a run's seed: the environment's draws, the policy, the problem instance,
#: the delays of the feedback (``simulate(delay=...)``).
ENV_CHILD, POLICY_CHILD, INSTANCE_CHILD, DELAY_CHILD = 0, 1, 2, 3


def _root(root):
    # None is refused: each call would draw a new entropy, so the runs of two calls (two
    # blocks of one experiment, say) would not be those of one root
    if root is None:
        raise TypeError("root must be an int or a numpy.random.SeedSequence, got None "
                        "(validate the user's seed once, as_seed_sequence, and pass that)")
    return as_seed_sequence(root, "root")


def run_seed(root, r):
    """Run ``r``'s seed: child ``r`` of ``root`` (an int or a ``SeedSequence``)."""
    return child(_root(root), r)


def run_seeds(root, first_run, n_runs):
    """The seeds of runs ``first_run, ..., first_run + n_runs - 1`` of ``root`` (a list of
    :func:`run_seed`): a block of runs gets the same seeds as the same rows of one call
    over all runs."""
    root = _root(root)
    return [child(root, first_run + i) for i in range(n_runs)]


def env_seed(seed):
    """The seed of the run's environment draws (the run's child 0)."""
    return child(seed, ENV_CHILD)


def env_rng(seed):
    """The Generator of the run's environment draws: PCG64 of :func:`env_seed`."""
    return np.random.Generator(np.random.PCG64(env_seed(seed)))


def policy_seed(seed):
    """The seed of the run's policy (the run's child 1: ``policy.fresh(policy_seed(s))``)."""
    return child(seed, POLICY_CHILD)


def instance_seed(seed):
    """The seed of the run's problem instance (the run's child 2:
    ``env.new_instance(instance_seed(s))``)."""
    return child(seed, INSTANCE_CHILD)


def delay_rng(seed):
    """The Generator of the run's feedback delays: PCG64 of the run's child 3 (drawn only
    by a random ``delay``, so the other streams are the same with or without one)."""
    return np.random.Generator(np.random.PCG64(child(seed, DELAY_CHILD)))


class Streams:
    """An engine's two Generators ``(sample, update)``, given as they are: the streams of
    a state that has already drawn (a saved :class:`vits_ref.Online`), continued by
    :func:`engine_streams`. ``init``: the initial state's normals already drawn from the
    update stream, handed back instead of drawn again (None: draw them)."""

    def __init__(self, sample, update, init=None):
        self.sample, self.update, self.init = sample, update, init


def engine_streams(seed):
    """The two independent Generators of an engine: ``(sampling, optimisation)``.

    Thompson draws (``sample``) and the inner steps of ``update`` use separate streams, so
    drawing extra samples (for a plot, say) never changes the optimisation trajectory, and
    the fused simulation loop can pre-draw each stream in bulk.

    ``seed`` may be an int, None, a ``SeedSequence`` (its children 0 and 1 are used, the
    object is not mutated), a ``Generator`` (spawned, which advances its seed sequence) or
    :class:`Streams` (its two Generators, used as they are).
    """
    if isinstance(seed, Streams):
        return seed.sample, seed.update
    if isinstance(seed, np.random.Generator):
        a, b = seed.spawn(2)
        return a, b
    ss = as_seed_sequence(seed)
    return (np.random.Generator(np.random.PCG64(child(ss, 0))),
            np.random.Generator(np.random.PCG64(child(ss, 1))))
