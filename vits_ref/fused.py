"""What a policy hands the fused compiled bandit loop: its piece, parameters and noise.

A policy (or the engine behind a Thompson-sampling policy) that has a fused loop returns
a :class:`FusedSpec` from ``fused(kl=...)``; :func:`vits_ref.simulate` runs any of them
through one generic driver (:func:`vits_ref.drivers.cpu.bandit_runs`), with no list of
policies anywhere. The randomness a run consumes is drawn in bulk with NumPy, in the
order the online ``select``/``update`` API draws it, so the fused loop, the Python loop
and the NumPy reference give the same regret.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._seeding import engine_streams


@dataclass(frozen=True)
class FusedSpec:
    """A policy's part of the fused loop.

    Attributes
    ----------
    piece : vits_ref.kernels.bandit.BanditPiece
        The policy's kernel bodies (state layout, init, select, update, KL).
    params : tuple
        The hyperparameters the bodies read (the piece's module documents the order).
    draw : callable
        ``draw(policy_seed, n_rounds, dim) -> (init (d,) or (0,), sel (T, ·), steps
        (T, S, M, d))``: the run's randomness from the policy's seed.
    step_size : callable or None
        ``step_size(round) -> float``: the step at a 1-based round (for the divergence
        message), None for policies without steps.
    gaussian : bool
        Whether the piece's ``kl`` is the KL of a Gaussian posterior to the exact one.
    n_draws_per_round : int
        Normals drawn per round (sizes the batches of pre-drawn randomness).
    """

    piece: object
    params: tuple
    draw: Callable
    step_size: Callable | None = None
    gaussian: bool = False
    n_draws_per_round: int = 1


def thompson_noise(policy_seed, n_rounds, dim, init=True, select=True, n_steps=0, n_mc=1):
    """The randomness of an engine with an update stream and a sampling stream.

    Drawn in the online order: the initial state from the update stream (when ``init``),
    the Thompson draws from the sampling stream (when ``select``), the inner steps' normals
    from the update stream. Returns ``(init (d,) or (0,), sel (T, d) or (T, 0), steps
    (T, n_steps, n_mc, d))``.
    """
    rng_sample, rng_update = engine_streams(policy_seed)
    T, d = n_rounds, dim
    init_noise = rng_update.standard_normal(d) if init else np.zeros(0)
    sel = rng_sample.standard_normal((T, d)) if select else np.zeros((T, 0))
    steps = (rng_update.standard_normal((T, n_steps, n_mc, d)) if n_steps
             else np.zeros((T, 0, 1, d)))
    return init_noise, sel, steps
