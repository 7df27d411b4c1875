"""Deterministic seed derivation (no hidden global state, no mutation of the caller's seeds)."""

import numpy as np

from ._validate import as_seed_sequence


def child(ss, i):
    """The ``i``-th child of ``ss``, derived without mutating ``ss`` (unlike ``spawn``)."""
    return np.random.SeedSequence(entropy=ss.entropy, spawn_key=tuple(ss.spawn_key) + (int(i),),
                                  pool_size=ss.pool_size)


def engine_streams(seed):
    """The two independent Generators of an engine: ``(sampling, optimisation)``.

    Thompson draws (``sample``) and the inner steps of ``update`` use separate streams, so
    drawing extra samples (for a plot, say) never changes the optimisation trajectory, and
    the fused simulation loop can pre-draw each stream in bulk.

    ``seed`` may be an int, None, a ``SeedSequence`` (its children 0 and 1 are used, the
    object is not mutated) or a ``Generator`` (spawned, which advances its seed sequence).
    """
    if isinstance(seed, np.random.Generator):
        a, b = seed.spawn(2)
        return a, b
    ss = as_seed_sequence(seed)
    return (np.random.Generator(np.random.PCG64(child(ss, 0))),
            np.random.Generator(np.random.PCG64(child(ss, 1))))
