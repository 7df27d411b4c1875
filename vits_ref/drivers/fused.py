"""What a policy hands the fused compiled bandit loop: its piece, parameters and noise.

A policy (or the engine behind a Thompson-sampling policy) that has a fused loop returns
a :class:`FusedSpec` from ``fused(kl=...)``; :func:`vits_ref.bandit.simulate` runs any of them
through one generic driver (:func:`vits_ref.drivers.cpu.bandit_rounds`), with no list of
policies anywhere. The randomness a run consumes is drawn in bulk with NumPy, in the
order the online ``select``/``update`` API draws it, so the fused loop, the Python loop
and the NumPy reference give the same regret. For long runs it is drawn a chunk of rounds
at a time (:func:`draw_chunks`, the same rows bit for bit), so a run's memory does not
grow with the horizon.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .._seeding import engine_streams


@dataclass(frozen=True)
class FusedSpec:
    """A policy's part of the fused loop.

    Attributes
    ----------
    piece : vits_ref.kernels.bandit.BanditPiece
        The policy's kernel bodies (state layout, init, select, update, KL).
    params : typing.NamedTuple
        The hyperparameters the bodies read: an instance of the piece's NamedTuple
        (``piece.params_type``, defined beside the piece in its kernel module, e.g.
        :class:`vits_ref.kernels.lints.LinTSParams`,
        :class:`vits_ref.kernels.vits.VITSParams`,
        :class:`vits_ref.kernels.langevin.LangevinParams`,
        :class:`vits_ref.kernels.linucb.LinUCBParams`,
        :class:`vits_ref.kernels.logistic_bandit.LaplaceParams`,
        :class:`vits_ref.kernels.bandit.RandomParams`), built by field name. Numba compiles
        it as a tuple with named fields (one compiled loop per piece, as for a plain
        tuple). Checked on construction: a piece with a ``params_type`` refuses anything
        else (``TypeError``).
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
    draw_chunks : callable or None
        ``draw_chunks(policy_seed, n_rounds, dim, chunk)``: an iterator over the same
        randomness a chunk of rounds at a time, ``(init, sel (n, ·), steps (n, S, M, d))``
        for rounds ``[t0, t0 + n)`` with ``n = min(chunk, n_rounds - t0)``, each chunk's
        rows equal, bit for bit, to those rows of ``draw``'s arrays (``init`` is the same
        array in every chunk). None: the policy's randomness cannot be drawn by chunks and
        :func:`draw_chunks` slices one whole draw (memory then grows with the horizon).
    binary_rewards : bool
        Whether the piece's model takes rewards 0 or 1 only (the logistic model's
        Bernoulli rewards): the drawn rewards are checked before each chunk runs
        (:func:`vits_ref.bandit._fused_draws.checked`), and ``stream="philox"`` needs an
        environment with ``reward="logistic"``.
    divergence_detail : str
        What a run's failed update means beyond a non-finite state (the piece's other
        checks), appended to the :class:`~vits_ref.errors.DivergenceError` the fused
        paths raise; empty when the piece checks only finiteness.
    """

    piece: object
    params: tuple
    draw: Callable
    step_size: Callable | None = None
    gaussian: bool = False
    n_draws_per_round: int = 1
    draw_chunks: Callable | None = None
    binary_rewards: bool = False
    divergence_detail: str = ""

    def __post_init__(self):
        want = getattr(self.piece, "params_type", None)
        if want is not None and type(self.params) is not want:
            raise TypeError(f"params of the {self.piece.name!r} piece must be a "
                            f"{want.__module__}.{want.__qualname__} (build it by field name: "
                            f"{want.__qualname__}({', '.join(f'{f}=...' for f in want._fields)})"
                            f"), got {type(self.params).__name__}")


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


def thompson_noise_chunks(policy_seed, n_rounds, dim, chunk, init=True, select=True,
                          n_steps=0, n_mc=1):
    """:func:`thompson_noise` a chunk of rounds at a time (the ``draw_chunks`` of a spec).

    Yields ``(init (d,) or (0,), sel (n, d) or (n, 0), steps (n, n_steps, n_mc, d))`` for
    rounds ``[t0, t0 + n)``, ``n = min(chunk, n_rounds - t0)``. The rows equal those of
    :func:`thompson_noise`'s arrays bit for bit, with no extra pass: the Thompson draws are
    the whole sampling stream, and the update stream holds the initial state then the
    steps' normals, so each stream is consumed in the same order as by the whole draw (a
    Generator's normals and uniforms drawn ``n`` rows at a time are the rows of one draw;
    ``tests/test_chunked_rounds.py``). A :class:`vits_ref._seeding.Streams` as
    ``policy_seed`` continues its two Generators, with its ``init`` (if any) as the
    initial normals, drawn earlier. Contrast
    :meth:`vits_ref.envs.Environment.realise_chunks`, whose two draws share one stream.
    """
    rng_sample, rng_update = engine_streams(policy_seed)
    T, d = n_rounds, dim
    given = getattr(policy_seed, "init", None)  # streams continued: drawn already
    init_noise = ((rng_update.standard_normal(d) if given is None else given) if init
                  else np.zeros(0))
    for t0 in range(0, T, chunk):
        n = min(chunk, T - t0)
        sel = rng_sample.standard_normal((n, d)) if select else np.zeros((n, 0))
        steps = (rng_update.standard_normal((n, n_steps, n_mc, d)) if n_steps
                 else np.zeros((n, 0, 1, d)))
        yield init_noise, sel, steps


def draw_chunks(spec, policy_seed, n_rounds, dim, chunk) -> Iterator[tuple]:
    """The run's randomness for ``spec`` by chunks of ``chunk`` rounds (see
    :attr:`FusedSpec.draw_chunks`); a spec without ``draw_chunks`` is drawn whole and
    sliced, which gives the same rows but does not bound the memory."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if spec.draw_chunks is not None:
        yield from spec.draw_chunks(policy_seed, n_rounds, dim, chunk)
        return
    init, sel, steps = spec.draw(policy_seed, n_rounds, dim)
    for t0 in range(0, n_rounds, chunk):
        yield init, sel[t0:t0 + chunk], steps[t0:t0 + chunk]
