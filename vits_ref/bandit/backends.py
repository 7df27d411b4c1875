"""The backends of the bandit runner: one typed interface, one registry, one rule of choice.

:func:`vits_ref.bandit.simulate` owns everything around a block of seeded runs: it checks
the arguments, derives the run seeds (:mod:`vits_ref._seeding`), sets Numba's thread count
for the block (:func:`vits_ref._threads.numba_threads`), allocates the rows and assembles
the :class:`~vits_ref.bandit.result.SimulationResult`. What computes the rows is a
*backend*: an object satisfying :class:`Backend`, registered here with :func:`register`.
The library registers

========================  ========  =====  =================================================
backend                   compiled  exact  runs
========================  ========  =====  =================================================
``philox-cuda``           yes       yes    fused loop on CUDA, counter-based streams
``philox-cpu``            yes       yes    fused loop on the CPU, counter-based streams
``fused-cuda``            yes       yes    fused loop on CUDA, pre-drawn NumPy streams
``fused-cpu``             yes       yes    fused loop on the CPU, pre-drawn NumPy streams
``vts``                   yes       yes    VTS (Urteaga & Wiggins), one ``prange`` over runs
``diffts-chain``          yes       yes    linear DiffTS (Kveton et al.), ``prange`` over runs
``batched-mlp``           no        no     VITS/LMC-TS on an MLP, runs in lockstep (NumPy/CuPy)
``python``                no        yes    the policy's ``select``/``update``, run by run
========================  ========  =====  =================================================

*exact*: the same numbers as the Python loop, bit for bit (``tests/test_runner_conformance.py``
checks every backend against its reference). ``simulate(..., backend=None)`` takes the
first exact backend, in the order of the table (:attr:`Backend.order`), that does not
decline the block (:meth:`Backend.declines`): so a policy with a fast path gets it, and
every other policy the Python loop. A backend that is not exact (its sums in another
order: the batched MLP's BLAS products) runs only when named, ``backend="batched-mlp"``.
``fused=True`` asks for a compiled backend, ``fused=False`` for the Python loop.

A backend computes runs ``block.first_run, ...`` into rows ``0, ...`` of :class:`Rows`, in
place. Its contract (the conformance test): the numbers do not depend on its batches of
runs, chunks of rounds or the thread count; a DivergenceError names the lowest diverging
run (:func:`vits_ref.errors.raise_first_divergence`); it calls ``block.progress(done,
n_runs)`` as runs complete. ``docs/architecture.md`` has the recipe for adding one.
"""

import dataclasses
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from .._seeding import instance_seed, policy_seed, run_seeds
from ._fused_draws import realise

__all__ = ["Backend", "RunBlock", "Rows", "choose", "cpu_driver_declines", "names",
           "register", "registered", "realise_block"]


@dataclasses.dataclass(frozen=True)
class RunBlock:
    """A block of seeded runs, its arguments checked by :func:`vits_ref.bandit.simulate`.

    Attributes
    ----------
    policy, env
        The policy (a specification: each run starts from ``policy.fresh(seed)``) and the
        environment.
    n_rounds, n_runs, first_run : int
        Runs ``first_run, ..., first_run + n_runs - 1`` of ``n_rounds`` rounds each.
    root : numpy.random.SeedSequence
        Run ``r`` is seeded by its child ``r`` (:func:`vits_ref._seeding.run_seed`).
    kl_rounds : (n_kl,) int array
        1-based rounds after which to record ``KL(q_t || p_t)`` (may be empty).
    new_instance_per_run : bool
    spec : FusedSpec or None
        The policy's fused loop (:func:`vits_ref.bandit.simulate.fused_spec`), if it has one.
    n_threads : int
        Numba's thread count while the backend runs (set by the runner).
    n_jobs : int
        Worker processes (the Python loop's parallelism).
    device, stream : str
        ``"cpu"``/``"cuda"`` and ``"numpy"``/``"philox"``.
    progress : callable or None
        ``progress(runs_done, n_runs)``.
    delay, batch
        When feedback arrives (:func:`vits_ref.bandit.simulate`): round ``t``'s reward
        after ``delay`` more decisions, delivered at the end of every ``batch``-th round.
    """

    policy: object
    env: object
    n_rounds: int
    n_runs: int
    root: np.random.SeedSequence
    first_run: int = 0
    kl_rounds: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    new_instance_per_run: bool = False
    spec: object = None
    n_threads: int = 1
    n_jobs: int = 1
    device: str = "cpu"
    stream: str = "numpy"
    progress: Callable | None = None
    delay: object = 0
    batch: int = 1

    @property
    def immediate(self):
        """Whether each round's reward is learnt before the next round's decision (no
        ``delay``, batches of one): what the compiled loops play."""
        return isinstance(self.delay, int) and self.delay == 0 and self.batch == 1

    @property
    def name(self):
        """The policy's label, as results and errors name it."""
        return getattr(self.policy, "name", type(self.policy).__name__)

    def env_for(self, seed):
        """Run ``seed``'s environment: ``env``, or a new instance drawn from the run's
        child 2 (:func:`vits_ref._seeding.instance_seed`) with ``new_instance_per_run``."""
        return self.env.new_instance(instance_seed(seed)) if self.new_instance_per_run \
            else self.env

    def seeds(self, lo=0, hi=None):
        """The seeds of rows ``lo .. hi - 1`` (runs ``first_run + lo ..``)."""
        hi = self.n_runs if hi is None else hi
        return run_seeds(self.root, self.first_run + lo, hi - lo)

    def report(self, done):
        """Tell ``progress`` that rows ``0 .. done - 1`` are computed."""
        if self.progress is not None:
            self.progress(done, self.n_runs)


@dataclasses.dataclass
class Rows:
    """The rows a backend fills in place: ``regret``, ``arms`` ``(n_runs, n_rounds)``, ``kl``
    ``(n_runs, n_kl)``, and ``extras``: more arrays a backend records, passed to its
    :attr:`Backend.result_type` by keyword (VTS's per-arm error and CAVI iterations)."""

    regret: np.ndarray
    arms: np.ndarray
    kl: np.ndarray
    extras: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def empty(cls, block):
        R, T = block.n_runs, block.n_rounds
        return cls(np.empty((R, T)), np.empty((R, T), dtype=np.int64),
                   np.zeros((R, block.kl_rounds.size)))


@runtime_checkable
class Backend(Protocol):
    """What computes the rows of a :class:`RunBlock`.

    Attributes
    ----------
    name : str
        How ``simulate(..., backend=name)`` asks for it.
    order : int
        Rank when the runner chooses (lower first).
    compiled : bool
        A compiled fast path (``SimulationResult.fused``; what ``fused=True`` asks for).
    exact : bool
        The Python loop's numbers bit for bit; only exact backends are chosen unasked.
    result_type : type
        The :class:`~vits_ref.bandit.result.SimulationResult` (sub)class the runner builds,
        with :attr:`Rows.extras` as keywords.

    Notes
    -----
    ``declines(block) -> str or None``
        None if it computes ``block``; else why not, in words that finish "cannot run
        this block: ..." (cheap: no work, no allocation).
    ``run(block, rows) -> None``
        Fill ``rows``; raise :class:`vits_ref.DivergenceError` naming the lowest diverging
        run, or a ValueError/TypeError naming an argument before any work.
    """

    name: str
    order: int
    compiled: bool
    exact: bool
    result_type: type

    def declines(self, block: RunBlock) -> str | None: ...

    def run(self, block: RunBlock, rows: Rows) -> None: ...


_REGISTRY: dict[str, Backend] = {}


def register(backend):
    """Add ``backend`` (a :class:`Backend`) to the runner's choices, replacing any of the
    same name; returns it."""
    if not isinstance(backend, Backend):
        raise TypeError(f"backend must satisfy vits_ref.bandit.backends.Backend (name, order, "
                        f"compiled, exact, result_type, declines, run), got "
                        f"{type(backend).__name__}")
    if not isinstance(backend.name, str) or not backend.name:
        raise ValueError(f"a backend's name must be a non-empty string, got {backend.name!r}")
    _REGISTRY[backend.name] = backend
    return backend


def registered():
    """The registered backends, in the order the runner tries them."""
    return sorted(_REGISTRY.values(), key=lambda b: (b.order, b.name))


def names():
    """The registered backends' names, in order."""
    return tuple(b.name for b in registered())


def choose(block, name=None, fused=None):
    """The backend that computes ``block``: the one named ``name`` (a ValueError saying why
    if it declines, or if ``fused`` asks otherwise), else the first exact one in order
    that does not decline it, compiled if ``fused`` is True, the Python loop's kind if
    False. None when no backend takes it (the caller says why)."""
    if name is not None:
        if name not in _REGISTRY:
            raise ValueError(f"backend must be one of {', '.join(names())} or None, got "
                             f"{name!r}")
        backend = _REGISTRY[name]
        why = backend.declines(block)
        if why is None and fused is not None and bool(fused) != backend.compiled:
            why = f"fused={fused} asks for {'a' if fused else 'no'} compiled loop"
        if why is not None:
            raise ValueError(f"backend {name!r} cannot run this block ({block.name}): {why}")
        return backend
    for backend in registered():
        if not backend.exact or (fused is not None and bool(fused) != backend.compiled):
            continue
        if backend.declines(block) is None:
            return backend
    return None


def cpu_driver_declines(block, what):
    """Why ``what``, a CPU driver fed NumPy's streams that learns each round's reward at
    once, cannot run ``block``; None if it can (the device, stream and feedback half of a
    :meth:`Backend.declines`)."""
    if (block.device, block.stream) != ("cpu", "numpy"):
        return f"{what} runs on the CPU with NumPy's streams"
    if not block.immediate:
        return f"{what} learns each round's reward at once (no delay or batch)"
    return None


def realise_block(block, lo, hi):
    """The realisations of rows ``lo .. hi - 1`` stacked, and their policies' seeds:
    ``(contexts (n, T, K, d), means (n, T, K), rewards (n, T, K), seeds)``, run ``r``
    realised from its child 0 (on its own instance with ``new_instance_per_run``) and
    checked as the Python loop checks it (:func:`vits_ref.bandit._fused_draws.realise`),
    its policy seeded by child 1. For the backends that take whole realisations."""
    reals, seeds = [], []
    for seed in block.seeds(lo, hi):
        reals.append(realise(block.env_for(seed), seed, block.n_rounds))
        seeds.append(policy_seed(seed))
    return (np.stack([x.contexts for x in reals]), np.stack([x.means for x in reals]),
            np.stack([x.rewards for x in reals]), seeds)
