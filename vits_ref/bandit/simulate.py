"""Many seeded runs of a (policy, environment) pair.

Seeding: ``SeedSequence(seed)`` gives run ``r`` the child ``r``; the run's child 0 drives
the environment's draws (so every policy meets the same contexts and noise for the same
``seed``: common random numbers), child 1 seeds the policy, child 2 the problem instance
when ``new_instance_per_run``. Results are bit-identical for the same seed whatever the
number of threads: runs are independent and each is computed by one thread.

A policy whose ``fused(kl=...)`` returns a :class:`vits_ref.drivers.fused.FusedSpec` runs in the
fused compiled loop (:mod:`vits_ref.kernels.bandit`, generic over the policy's piece):
today LinTS, LinUCB, random, and Thompson sampling over VITS or Langevin on the linear
model with the ``constant`` or ``decayed`` schedule. Their per-run randomness is drawn in
bulk in the same order as the engines draw it online, so the fused loop and the Python
loop give the same regret (``tests/test_simulate.py``). With ``stream="philox"`` the fused
loop generates its randomness itself from counter-based streams under each run's key
(:mod:`vits_ref.bandit._streams`, docs/streams.md): other numbers, the same distributions,
nothing pre-drawn.
"""

import dataclasses
import importlib
import math
import time

import numpy as np

from .. import _validate as val
from .._seeding import delay_rng, instance_seed, policy_seed, run_seed, run_seeds
from .._threads import blas_single_thread, numba_threads
from ..drivers import cpu
from ..envs import Environment
from ..errors import (
    DegenerateCovarianceError,
    DivergenceError,
    raise_first_divergence,
    record_first_divergence,
)
from ..inference import VITS, Langevin, LinTS
from ..inference.base import GaussianEngine
from ..kernels.bandit import late_queue_size
from . import _plan, backends
from ._fused_draws import batch_chunks  # shared with the CUDA path
from ._fused_draws import realise_chunks as _realise_chunks
from .delivery import delivery_schedule, drawn_lag
from .policies import LinUCB, RandomPolicy, ThompsonSampling
from .result import SimulationResult

__all__ = ["POLICY_DEFAULTS", "POLICY_NAMES", "SimulationResult", "has_kl", "make_policy",
           "simulate"]

#: Documented defaults of the named policies: the point of the VITS paper's appendix E grid
#: (:mod:`vits_ref.experiments.vits.grid`) used by ``vits-fig1``. ``eta = 10``,
#: ``lam = 10`` for every method: the smallest ``eta`` of the grid (the closest to the
#: true noise precision ``1/(1 + zeta^2)``, which the grid does not contain), and the point
#: at which LinTS and VITS-II scored best or within a standard error of best on the 20
#: tuning runs (seed 10 000) of both panels. Steps ``h_t = h0/(eta t)`` (the authors'
#: decay) with ``h0 = 0.01`` for VITS-I/II and LMC-TS: ``h0 = 0.1`` diverges at round 1
#: for VITS (``h0 |x|^2`` is 2-4 on the pool environment) and within a few hundred rounds
#: for LMC-TS, ``h0 = 0.001`` is too slow to follow the posterior (regret 1.4-2x). The
#: paper's Hessian-free variant (Algorithm 3: unsymmetrised ``A``, one step for the mean
#: and the square root) diverges at ``h0 = 0.01`` everywhere on the grid and at
#: ``h0 = 0.001`` for every ``eta >= 100``; ``h0 = 0.001`` with ``eta = 10`` is the only
#: grid point stable in both panels, so it is its default. Two Hessian-free variants that
#: are not in the paper are labelled extras: ``"vits-hf-sym"`` (symmetrised ``A``, square
#: root step ``h0/2``) and ``"vits-hf-cv"`` (also the control variate ``grad U(mu)``,
#: see ``VITS(control_variate=...)``), both stable at ``h0 = 0.01``. LinUCB explores at the
#: Thompson samplers' temperature, ``alpha = 1/sqrt(eta)`` (as the authors' code does).
#: ``vits-fig1 --tune`` searches the whole grid instead (docs in
#: :mod:`vits_ref.experiments.vits.fig1`).
POLICY_DEFAULTS = {
    "lints": {"eta": 10.0, "lam": 10.0},
    "linucb": {"alpha": 1.0 / math.sqrt(10.0), "lam": 10.0},
    "vits-i": {"variant": "I", "eta": 10.0, "lam": 10.0, "step_size": 0.01, "n_steps": 10},
    "vits-ii": {"variant": "II", "eta": 10.0, "lam": 10.0, "step_size": 0.01, "n_steps": 10},
    "vits-hf": {"variant": "hessian_free", "eta": 10.0, "lam": 10.0, "step_size": 0.001,
                "cov_step_size": 0.001, "n_steps": 10, "n_mc": 20, "symmetrize": False},
    "vits-hf-sym": {"variant": "hessian_free", "eta": 10.0, "lam": 10.0, "step_size": 0.01,
                    "cov_step_size": 0.005, "n_steps": 10, "n_mc": 20, "symmetrize": True},
    "vits-hf-cv": {"variant": "hessian_free", "eta": 10.0, "lam": 10.0, "step_size": 0.01,
                   "cov_step_size": 0.005, "n_steps": 10, "n_mc": 20, "symmetrize": True,
                   "control_variate": True},
    "lmc": {"eta": 10.0, "lam": 10.0, "step_size": 0.01, "n_steps": 10},
    "random": {},
}
POLICY_NAMES = tuple(POLICY_DEFAULTS)

_MEMORY_BUDGET = 256 * 2 ** 20  # bytes of pre-drawn randomness held at once
#: Bytes of a run's realisation the Python loop holds at once (a chunk of rounds).
PYTHON_CHUNK_BYTES = 16 * 2 ** 20


def make_policy(name, dim, seed=None, **overrides):
    """A policy by name with the documented defaults of :data:`POLICY_DEFAULTS`.

    Parameters
    ----------
    name : {"lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-sym", "vits-hf-cv", \
            "lmc", "random"}
    dim : int
    seed : int, SeedSequence, Generator or None
    **overrides
        Hyperparameters replacing the defaults (e.g. ``step_size=0.005``, ``n_steps=50``).

    Examples
    --------
    >>> from vits_ref.bandit.simulate import make_policy
    >>> make_policy("vits-hf", 20).engine.n_mc
    20
    """
    name = val.choice(name, "policy", POLICY_NAMES)
    params = {**POLICY_DEFAULTS[name], **overrides}
    if name == "lints":
        return ThompsonSampling(LinTS(dim, seed=seed, **params))
    if name == "linucb":
        return LinUCB(dim, **params)
    if name.startswith("vits"):
        return ThompsonSampling(VITS(dim, seed=seed, **params))
    if name == "lmc":
        return ThompsonSampling(Langevin(dim, seed=seed, **params))
    return RandomPolicy(dim, seed=seed, **params)


def has_kl(policy):
    """Whether :func:`simulate` can record ``KL(q_t || p_t)`` for ``policy`` (a name or a
    policy object): Thompson sampling over a Gaussian engine on the linear model."""
    if isinstance(policy, str):
        name = val.choice(policy, "policy", POLICY_NAMES)
        return name not in ("linucb", "lmc", "random")
    engine = getattr(policy, "engine", None)
    return isinstance(engine, GaussianEngine) and engine.model.name == "linear"


def _policy_name(policy):
    return getattr(policy, "name", type(policy).__name__)


def fused_spec(policy, kl=False):
    """The policy's :class:`vits_ref.drivers.fused.FusedSpec`, or None if it has no fused loop."""
    fused = getattr(policy, "fused", None)
    return fused(kl=kl) if fused is not None else None


def draw_policy_noise(spec, policy_seed, n_rounds, dim):
    """The randomness a fused run consumes, in the order the engines draw it online.

    Returns ``(init_noise (d,), sel_noise (T, d) or (T, 1), step_noise (T, S, M, d))``.
    """
    return spec.draw(policy_seed, n_rounds, dim)


def _validate_kl_rounds(kl_rounds, n_rounds):
    if kl_rounds is None:
        return np.zeros(0, dtype=np.int64)
    if isinstance(kl_rounds, (str, bytes)):
        raise TypeError("kl_rounds must be a 1-D sequence of integers (1-based rounds)")
    arr = np.asarray(kl_rounds)
    if arr.ndim == 1 and arr.size == 0:  # no rounds requested: the same as None
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError("kl_rounds must be a 1-D sequence of integers (1-based rounds)")
    arr = np.unique(arr.astype(np.int64))
    if arr.size and (arr[0] < 1 or arr[-1] > n_rounds):
        raise ValueError(f"kl_rounds must lie in [1, n_rounds={n_rounds}], got {kl_rounds}")
    return arr


def simulate(policy, env, n_rounds, n_runs=1, seed=None, kl_rounds=None,
             new_instance_per_run=False, fused=None, n_threads=None, progress=None,
             n_jobs=1, first_run=0, device="cpu", stream="numpy", backend=None, delay=0,
             batch=1):
    """Run ``n_runs`` independent seeded simulations of ``policy`` on ``env``.

    Parameters
    ----------
    policy : str or policy object
        A name of :data:`POLICY_NAMES` (documented defaults, see :func:`make_policy`) or a
        policy object; an object serves as a specification: every run starts from its
        prior (``policy.fresh(seed)``), so its current state is not used.
    env : Environment
        From :mod:`vits_ref.envs`.
    n_rounds, n_runs : int
    seed : int, SeedSequence or None
    kl_rounds : sequence of int, optional
        1-based rounds after which to record ``KL(q_t || p_t)``: only for Thompson sampling
        over a Gaussian engine on the linear model (:func:`has_kl`); other policies raise a
        ValueError. None or an empty sequence: no KL (``kl`` is then an empty
        ``(n_runs, 0)`` array for those engines, None for the others).
    new_instance_per_run : bool, default False
        Draw a new problem instance (``theta_star``, pool, arms) for every run.
    fused : bool or None
        None: use the fused compiled loop when the pair has one; True: require it;
        False: the Python loop over ``select``/``update``.
    n_threads : int or None
        Numba threads for the fused loop (default: Numba's current setting). OpenBLAS
        runs on one thread during the call (its count restored after), whatever
        ``OPENBLAS_NUM_THREADS`` says: its threads change the bits of larger products and
        do not speed up these loops.
    progress : callable or None
        Called as ``progress(runs_done, n_runs)``.
    n_jobs : int, default 1
        Worker processes (an int >= 1, validated on every path) for policies without a
        fused loop (the Python loop: logistic, MLP, per-arm, ...); the fused loop ignores
        it (it uses Numba threads, ``n_threads``). Each worker gets its share of Numba's
        threads (:func:`vits_ref._threads.init_worker`). Each run keeps its own seeds, so the
        results are bit-identical whatever ``n_jobs``; workers are spawned (each imports
        vits_ref and loads Numba's cache, about a second), so this pays off for runs of a
        second or more.
    first_run : int, default 0
        Index of the first run: runs ``first_run, ..., first_run + n_runs - 1`` of the
        seed's sequence are computed (run ``r`` is seeded by child ``r`` of ``seed``), so
        a block of runs equals the same rows of one call over all runs, bit for bit. The
        resumable chunks of :mod:`vits_ref.experiments._chunks` are such blocks.
    device : {"cpu", "cuda"}, default "cpu"
        Where the fused loop runs. ``"cuda"`` needs a policy with a fused loop and a GPU
        (or Numba's CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``).
    stream : {"numpy", "philox"}, default "numpy"
        Where the fused loop's randomness comes from. ``"numpy"``: drawn on the host by
        NumPy's generators (run ``r``: child ``r`` of ``seed``; its child 0 for the
        environment, child 1 for the policy) and fed to the loop a chunk at a time.
        ``"philox"``: generated inside the compiled loop, on either device, from
        counter-based Philox4x64-10 streams under the run's 128-bit key (from child ``r``
        of ``seed``), so nothing is pre-drawn and a run holds only its state and outputs
        (docs/streams.md: the layout, the memory and the NumPy reference,
        :mod:`vits_ref.reference.streams`). Other numbers than ``"numpy"``'s, from the
        same distributions. Needs a fused loop and an environment with a counter piece
        (:meth:`vits_ref.envs.Environment.counter_piece`: the pool environment and the
        hard instance), and ``new_instance_per_run=False``; a ValueError otherwise.
    backend : str or None
        Which backend computes the runs (:mod:`vits_ref.bandit.backends`: ``"fused-cpu"``,
        ``"python"``, ``"vts"``, ``"diffts-chain"``, ``"batched-mlp"``, ...). None: the first
        that takes the block and gives the Python loop's numbers bit for bit, so a policy
        with a compiled fast path (the fused loop, VTS's and DiffTS's drivers over runs)
        gets it. A named backend that cannot run the block raises a ValueError saying why.
    delay : int or callable, default 0
        Feedback that arrives late: round ``t``'s reward is learnt only after ``delay``
        more decisions (an int >= 0), or after ``delay(rng)`` more (a callable drawing an
        int >= 0 per round from the run's own generator, child 3 of the run's seed:
        :func:`vits_ref._seeding.delay_rng`; e.g. ``lambda rng: rng.poisson(5)``).
        Feedback is learnt in the order of the rounds it belongs to; what is still due at
        the horizon is never learnt. The CPU's fused loop plays it with a queue of
        pending feedback in each run's state, in the order
        :func:`vits_ref.bandit.delivery.delivery_schedule` computes before the run, with
        the Python loop's numbers bit for bit (a policy's draws are those of its
        ``select`` and ``update`` calls in that order); the other compiled backends (CUDA,
        ``stream="philox"``, VTS, DiffTS's chains, the batched MLP) decline, naming it.
    batch : int, default 1
        Feedback delivered in batches: what has arrived is learnt at the end of every
        ``batch``-th round (with ``delay``, what is due by then).

    Returns
    -------
    SimulationResult
        A subclass where the backend records more (VTS:
        :class:`vits_ref.bandit.vts.VTSSimulationResult`). ``fused`` says whether a compiled
        backend ran.

    Raises
    ------
    DivergenceError
        If an engine's state becomes non-finite (names engine, run, round, step size).

    Examples
    --------
    >>> import vits_ref as vr
    >>> env = vr.envs.pool(dim=5, n_arms=10, zeta=1.0, seed=0)
    >>> res = vr.simulate("lints", env, n_rounds=50, n_runs=2, seed=0)
    >>> res.cumulative_regret.shape
    (2, 50)
    """
    if not isinstance(env, Environment):
        raise TypeError(f"env must be a vits_ref environment, got {type(env).__name__}")
    n_rounds = val.positive_int(n_rounds, "n_rounds")
    n_runs = val.positive_int(n_runs, "n_runs")
    if isinstance(policy, str):
        policy = make_policy(policy, env.dim)
    if not all(hasattr(policy, a) for a in ("select", "update", "fresh")):
        raise TypeError("policy must be a name or an object with select, update and fresh")
    if getattr(policy, "dim", env.dim) not in (None, env.dim):
        raise ValueError(f"policy dim {policy.dim} does not match env.dim {env.dim}")
    kl_rounds = _validate_kl_rounds(kl_rounds, n_rounds)
    n_jobs = val.positive_int(n_jobs, "n_jobs")
    first_run = val.positive_int(first_run, "first_run", minimum=0)
    if fused is not None and not isinstance(fused, (bool, np.bool_)):
        raise TypeError(f"fused must be None, True or False, got {fused!r}")
    device = val.choice(device, "device", ("cpu", "cuda"))
    stream = val.choice(stream, "stream", ("numpy", "philox"))
    if n_threads is not None:
        n_threads = val.positive_int(n_threads, "n_threads")
    if kl_rounds.size and not has_kl(policy):
        raise ValueError(f"kl_rounds needs a Gaussian posterior on the linear model (Thompson "
                         f"sampling over LinTS, VITS, Laplace, ...); policy "
                         f"{_policy_name(policy)!r} has none: pass kl_rounds=None")
    batch = val.positive_int(batch, "batch")
    if not callable(delay):
        delay = val.positive_int(delay, "delay", minimum=0)
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"backend must be a backend's name or None, got {backend!r}")
    if getattr(policy, "n_arms", None) not in (None, env.n_arms):
        raise ValueError(f"policy has {policy.n_arms} arms but env has {env.n_arms} "
                         f"(env.n_arms must match)")
    root = val.as_seed_sequence(seed)
    spec = fused_spec(policy, kl=bool(kl_rounds.size))
    if stream == "philox":
        from ._streams import check as _check_streams

        _check_streams(spec if fused is not False else None, _policy_name(policy), env,
                       new_instance_per_run)
    block = backends.RunBlock(policy, env, n_rounds, n_runs, root, first_run, kl_rounds,
                              bool(new_instance_per_run), spec, n_threads, n_jobs, device,
                              stream, progress, delay, batch)
    chosen = backends.choose(block, backend, fused)
    if chosen is None and spec is not None and not block.immediate:
        # the reason, not "no fused loop": the policy has one, on the CPU's NumPy streams
        raise ValueError(f"delay={delay!r} and batch={batch!r} are played by the CPU's fused "
                         f"loop and the Python loop only (device='cpu', stream='numpy'); "
                         f"{block.name} was asked for device={device!r}, "
                         f"stream={stream!r}")
    if chosen is None and device == "cuda":
        raise ValueError(f"device='cuda' needs a fused loop; {block.name} has none "
                         "on this model/schedule (use device='cpu')")
    if chosen is None:
        raise ValueError(f"{block.name} has no fused loop on this model/schedule; "
                         "use fused=None or False")
    engine = getattr(policy, "engine", None)
    # the KL diagnostic needs the exact posterior: Gaussian engines on the linear model
    gaussian = isinstance(engine, GaussianEngine) and engine.model.name == "linear"
    rows = backends.Rows.empty(block)
    # OpenBLAS's threads change the bits of its larger products (Rényi VI's draws times
    # the history, M x n x d), and they buy nothing here: the kernels parallelise over
    # runs themselves, and a second OpenBLAS thread took the same wall time for Rényi VI
    # on wine on an idle 2-core machine, twice the CPU (three times the wall time with
    # the cores busy). One thread for every run: the same bits whatever the environment.
    with numba_threads(n_threads) as threads, blas_single_thread():
        block = dataclasses.replace(block, n_threads=threads)
        start = time.perf_counter()
        chosen.run(block, rows)
        wall = time.perf_counter() - start
    if gaussian and not np.all(np.isfinite(rows.kl)):  # the compiled loops' failed Cholesky
        r, j = np.argwhere(~np.isfinite(rows.kl))[0]
        raise _kl_error(first_run + int(r), int(kl_rounds[j]))
    return chosen.result_type(block.name, repr(env), rows.regret, rows.arms, kl_rounds,
                              rows.kl if gaussian else None, wall, chosen.compiled, seed,
                              **rows.extras)


class PythonLoop:
    """The backend of every policy: its ``select``/``update`` round by round, run by run
    (``n_jobs`` worker processes, spawned, each run with its own seeds)."""

    name, order, compiled, exact, result_type = "python", 100, False, True, SimulationResult

    def declines(self, block):
        if block.device != "cpu" or block.stream != "numpy":
            return "the Python loop runs on the CPU with NumPy's streams"
        return None

    def run(self, block, rows):
        engine = getattr(block.policy, "engine", None)
        gaussian = isinstance(engine, GaussianEngine) and engine.model.name == "linear"
        jobs = [(block.policy, block.env, block.new_instance_per_run, block.root,
                 block.first_run + r, block.n_rounds, block.kl_rounds, gaussian, block.delay,
                 block.batch) for r in range(block.n_runs)]
        n_jobs = min(block.n_jobs, block.n_runs)
        if n_jobs > 1:
            import multiprocessing

            from .._threads import init_worker, worker_share

            # spawn, not fork: forking a process with Numba's threads running is unsafe
            with multiprocessing.get_context("spawn").Pool(
                    n_jobs, initializer=init_worker, initargs=(worker_share(n_jobs),)) as pool:
                _collect(pool.imap(_python_job, jobs), rows, block)
        else:
            _collect(map(_python_job, jobs), rows, block)


class Fused:
    """The fused compiled loop of a policy's :class:`~vits_ref.drivers.fused.FusedSpec` on
    one ``device`` with one ``stream``: ``loop(block, rows)`` is :func:`_run_fused` (the
    CPU, pre-drawn NumPy streams),
    :func:`vits_ref.bandit._cuda_simulate.run_fused_cuda`,
    :func:`vits_ref.bandit._streams.run_streams_cpu` or ``run_streams_cuda`` (counter-based
    streams), named ``"module:function"`` and imported when a block runs (the CUDA
    modules load Numba's CUDA target)."""

    compiled, exact, result_type = True, True, SimulationResult

    def __init__(self, name, order, device, stream, loop):
        self.name, self.order, self.device, self.stream = name, order, device, stream
        self.loop = loop

    def declines(self, block):
        return _fused_declines(block, self.device, self.stream)

    def run(self, block, rows):
        module, function = self.loop.split(":")
        getattr(importlib.import_module(module, __package__), function)(block, rows)


def _fused_declines(block, device, stream):
    if block.spec is None:
        return "the policy has no fused loop on this model/schedule"
    if (block.device, block.stream) != (device, stream):
        return f"it runs on device={device!r} with stream={stream!r}"
    if not block.immediate and (device, stream) != ("cpu", "numpy"):
        # the queue of pending feedback is in the CPU loop over pre-drawn randomness only
        return (f"delay={block.delay!r} and batch={block.batch!r} are played by the CPU's "
                f"fused loop ('fused-cpu') and the Python loop only")
    return None


for _backend in (PythonLoop(), Fused("fused-cpu", 40, "cpu", "numpy", ".simulate:_run_fused"),
                 Fused("fused-cuda", 30, "cuda", "numpy", "._cuda_simulate:run_fused_cuda"),
                 Fused("philox-cpu", 20, "cpu", "philox", "._streams:run_streams_cpu"),
                 Fused("philox-cuda", 10, "cuda", "philox", "._streams:run_streams_cuda")):
    backends.register(_backend)


def _run_env(env, new_instance, seed):
    """The run's environment: ``env``, or a new instance from the run's child 2
    (:func:`vits_ref._seeding.instance_seed` of the run's ``seed``)."""
    return env.new_instance(instance_seed(seed)) if new_instance else env


def _python_job(job):
    """One run of the Python loop (module level, so worker processes can import it).

    The run's realisation is drawn :data:`PYTHON_CHUNK_BYTES` at a time
    (:func:`vits_ref.bandit._fused_draws.realise_chunks`: the rows of the whole draw, bit
    for bit), so a long run holds its outputs and one chunk, not the whole horizon."""
    policy, env, new_instance, root, r, n_rounds, kl_rounds, gaussian, delay, batch = job
    seed = run_seed(root, r)
    run_env = _run_env(env, new_instance, seed)
    per_round = _plan.WORD * run_env.n_arms * (run_env.dim + 2)
    chunk = _plan.fit(PYTHON_CHUNK_BYTES // per_round, n_rounds)
    chunks = _realise_chunks(run_env, seed, n_rounds, chunk)
    pol = policy.fresh(policy_seed(seed))
    if getattr(pol, "compiled", False):
        # the engines' own select and update: the independent implementation that the
        # compiled loop, and the policy objects that play its bodies, are tested against
        pol.compiled = False
    regret, arms = np.empty(n_rounds), np.empty(n_rounds, dtype=np.int64)
    kl = np.zeros(kl_rounds.size)
    _run_python(pol, chunks, kl_rounds, regret, arms, kl, r, gaussian, delay, batch,
                delay_rng(seed) if callable(delay) else None)
    return regret, arms, kl


def _rounds(chunks):
    """``(t, contexts, means, rewards)`` of every round of a run's chunks, ``t`` global."""
    t = 0
    for real in chunks:
        for i in range(real.means.shape[0]):
            yield t, real.contexts[i], real.means[i], real.rewards[i]
            t += 1


def _collect(outcomes, rows, block):
    for r, (reg, arm, k) in enumerate(outcomes):
        rows.regret[r], rows.arms[r], rows.kl[r] = reg, arm, k
        block.report(r + 1)


def _run_python(pol, chunks, kl_rounds, regret, arms, kl, run, gaussian, delay=0, batch=1,
                rng=None):
    """A run of the policy's ``select``/``update`` over the rounds of ``chunks``.

    Round ``t``'s reward is due after round ``t + delay_t`` (``delay`` fixed, or
    ``delay(rng)`` per round) and what is due is learnt, in the order of its rounds, at the
    end of every ``batch``-th round: with the defaults, each round's reward right after its
    decision. The KL of a recorded round is that of the posterior after the round's
    deliveries. A pending round keeps its contexts (a view of its chunk) until learnt."""
    nk = 0
    due = []  # (round it is due after, contexts, arm, reward) in the order of the rounds
    for t, X, means, rewards in _rounds(chunks):
        try:
            arm = pol.select(X)
        except DivergenceError as err:
            # a failed draw of the round's select (DiffTS's Thompson draw, raised at its t
            # observations): the run and the 1-based bandit round t + 1 of the draw, as the
            # compiled chains (vits_ref.diffusion.chain) report it
            raise err.in_run(run, round=t + 1) from None
        regret[t] = means.max() - means[arm]
        arms[t] = arm
        lag = delay if rng is None else drawn_lag(delay, rng, t)
        due.append((t + lag, X, arm, rewards[arm]))
        if (t + 1) % batch == 0:
            ready = [p for p in due if p[0] <= t]
            due = [p for p in due if p[0] > t]
            for _, Xs, a, r in ready:
                try:
                    pol.update(Xs, a, r)
                except DivergenceError as err:
                    raise err.in_run(run) from None
        if nk < kl_rounds.size and kl_rounds[nk] == t + 1:
            if gaussian:
                try:
                    kl[nk] = pol.engine.kl_to_posterior()
                except DegenerateCovarianceError as err:
                    raise _kl_error(run, t + 1, err) from None
                except ValueError:
                    raise _kl_error(run, t + 1) from None
            nk += 1


def _kl_error(run, rnd, collapsed=None):
    """The one error of a KL diagnostic that double precision cannot give, on every path
    (the Python loop's closed forms raise, the compiled loops' Cholesky returns inf);
    ``collapsed``: the :class:`~vits_ref.errors.DegenerateCovarianceError` of an engine
    whose own ``q`` has collapsed, which the error then states instead of blaming ``V``."""
    if collapsed is not None:
        return DegenerateCovarianceError(
            f"the KL diagnostic at round {rnd} of run {run} cannot be computed in double "
            f"precision: {collapsed}")
    return ValueError(
        f"the KL diagnostic at round {rnd} of run {run} cannot be computed in double "
        f"precision: V = lam I + sum x x^T is not positive definite to rounding, or too "
        f"ill-conditioned for a reliable value (its eigenvalues span more than about "
        f"1e15: while fewer rounds than d have been seen, |x|^2 / lam must stay below "
        f"about 1e15); rescale the contexts, raise lam, or "
        f"take kl_rounds from round d on")


def _bytes_per_round(spec, d, K):
    """Bytes one run holds per round of a chunk in the fused loop: the batch's contexts
    (K, d), means and rewards (K,) and the policy's normals, plus the chunk being drawn
    (about two more copies of the contexts while an environment builds them). More than
    the CUDA path's :func:`vits_ref.bandit._cuda_simulate.bytes_per_round`, which counts
    the chunk's arrays alone (its 8 GiB host budget leaves room for the copies; the CPU's
    256 MB must hold them: ``tests/test_chunked_rounds.py`` measures the peak)."""
    return _plan.WORD * (3 * K * (d + 1) + d * spec.n_draws_per_round)


def _fused_plan(n_runs, T, per_round, n_threads):
    """``(batch, chunk)``: runs per batch and rounds per chunk whose pre-drawn randomness,
    ``batch * chunk * per_round`` bytes, stays within :data:`_MEMORY_BUDGET` (unless one
    round of ``n_threads`` runs exceeds it). Whole runs when they fit (as many as fit, so
    nothing is drawn twice); else a batch of ``n_threads`` runs (every thread busy) and the
    chunk of rounds that fits. Results do not depend on the plan. (Not the CUDA path's
    plan, which keeps the batch whole and shrinks the chunk first:
    :mod:`vits_ref.bandit._plan` says why they differ.)"""
    whole = _MEMORY_BUDGET // (T * per_round)
    if whole >= min(n_runs, n_threads):
        return _plan.fit(whole, n_runs), T
    batch = min(n_runs, n_threads)
    return batch, _plan.fit(_MEMORY_BUDGET // (batch * per_round), T)


def _run_fused(block, rows):
    """The fused runs of ``block`` (runs ``first_run, ..., first_run + n_runs - 1``) into
    ``rows``, by batches of runs and chunks of rounds sized by :data:`_MEMORY_BUDGET`
    (:func:`_fused_plan`), so the memory does not grow with the horizon; the chunks are
    bit-identical to one whole draw (:func:`_fused_batch`)."""
    spec, env_for, root, first_run = block.spec, block.env_for, block.root, block.first_run
    T, n_runs = block.n_rounds, block.n_runs
    first = env_for(run_seed(root, first_run))
    d, K = first.dim, first.n_arms
    batch, chunk = _fused_plan(n_runs, T, _bytes_per_round(spec, d, K), block.n_threads)
    for lo in range(0, n_runs, batch):
        hi = min(n_runs, lo + batch)
        seeds = run_seeds(root, first_run + lo, hi - lo)
        args = (spec, block.name, [env_for(s) for s in seeds], seeds, T, chunk,
                block.kl_rounds, rows.regret[lo:hi], rows.arms[lo:hi], rows.kl[lo:hi],
                first_run + lo)
        schedules = None if block.immediate else [
            delivery_schedule(T, block.delay, block.batch,
                              delay_rng(s) if callable(block.delay) else None)
            for s in seeds]
        _fused_batch(*args, schedules=schedules)
        block.report(hi)


def _fused_batch(spec, name, envs, run_seeds, T, chunk, kl_rounds, regret, arms, kl,
                 first_index, on_chunk=None, schedules=None):
    """A batch of fused runs, ``chunk`` rounds at a time.

    Each run's realisation and policy randomness are drawn a chunk at a time
    (:func:`vits_ref.bandit._fused_draws.batch_chunks`, shared with the CUDA path) from the same
    streams as one whole draw, and :func:`vits_ref.drivers.cpu.bandit_rounds` runs the chunk's
    rounds, the runs' state buffers carrying the state between chunks, so the results
    equal those of whole-horizon runs bit for bit. ``regret``, ``arms`` (R, T) and ``kl``
    (R, n_kl) are written in place; ``on_chunk(t1, bufs, contexts)``, if given, is called
    after rounds ``[t0, t1)`` with the state buffers (R, state_size) and the chunk's
    contexts (R, n, K, d) (the soak reads the state there). Raises DivergenceError naming
    the lowest diverging run ``first_index + r`` and its first diverging round, after the
    batch's last chunk, so that the error does not depend on the batches or chunks.

    With ``schedules`` (one :func:`vits_ref.bandit.delivery.delivery_schedule` per run),
    late or batched feedback: :func:`vits_ref.drivers.cpu.bandit_rounds_late` plays each
    run's schedule with a queue of pending feedback at the end of its state buffer. The
    policy's step noise is drawn a row per round and the ``k``-th update reads row ``k``;
    as an update lags its round, a run carries the rows of its updates still to come from
    one chunk to the next (:class:`_LateRows`), so the updates read the rows of the whole
    draw, bit for bit, whatever the chunks. A divergence is then reported at the number
    of observations of the update that failed, as the engines' own ``update`` raises it.
    """
    R = len(run_seeds)
    d, K = envs[0].dim, envs[0].n_arms
    late = None if schedules is None else _LateRows(schedules)
    rounds = cpu.bandit_rounds(spec.piece) if late is None else cpu.bandit_rounds_late(
        spec.piece)
    status = np.zeros(R, dtype=np.int64)
    first_bad = np.zeros(R, dtype=np.int64)
    bufs = None
    t0 = 0
    for contexts, means, rewards, init, sel, steps in batch_chunks(spec, envs, run_seeds, T,
                                                                    chunk):
        n = contexts.shape[1]
        if bufs is None:
            size = spec.piece.state_size(d, K, steps.shape[3], T)
            bufs = np.empty((R, size if late is None else size + late.queue_size(d)))
        if late is None:
            rounds(spec.params, bufs, t0, contexts, means, rewards, init, sel, steps,
                   kl_rounds, regret, arms, kl, status)
        else:
            k0, noise, order, learnt = late.chunk(t0, n, steps)
            rounds(spec.params, bufs, t0, k0, contexts, means, rewards, init, sel, noise,
                   order, learnt, kl_rounds, regret, arms, kl, status)
        # a run's first diverging round (later chunks of a diverged run diverge again at
        # once and are ignored)
        record_first_divergence(first_bad, status)
        if on_chunk is not None and not first_bad.any():
            on_chunk(t0 + n, bufs, contexts)
        del contexts, means, rewards, init, sel, steps
        t0 += n
    # the lowest diverging run of the batch, after all chunks: whatever the batches and
    # chunks of rounds, the error names the lowest-numbered diverging run (the one the
    # Python loop, which runs the runs in order, meets first)
    raise_first_divergence(first_bad, name, first_index, spec.step_size,
                           spec.divergence_detail)


class _LateRows:
    """The per-chunk inputs of :func:`vits_ref.drivers.cpu.bandit_rounds_late` for a batch
    of runs' delivery schedules: which updates each run makes in a chunk of rounds, which
    rounds they learn, and their rows of step noise, carried across chunks."""

    def __init__(self, schedules):
        self.schedules = schedules
        self.k0 = np.zeros(len(schedules), dtype=np.int64)  # updates made before a chunk
        self.carry = [None] * len(schedules)  # per run: step-noise rows of updates k0, ...

    def queue_size(self, d):
        """Entries of a run's queue: slots for the longest wait of any run."""
        return late_queue_size(d, max(s.span for s in self.schedules))

    def chunk(self, t0, n, steps):
        """``(k0 (R,), noise (R, L, S, M, d), order (R, L), learnt (R, n))`` for rounds
        ``[t0, t0 + n)``, whose step noise ``steps`` (R, n, S, M, d) holds a row per round
        (rows past a run's last update of the chunk are zeros, never read)."""
        learnt = np.stack([s.learnt[t0:t0 + n] for s in self.schedules])
        k0 = self.k0
        m = learnt[:, -1] - k0  # the updates each run makes in the chunk
        L = int(m.max())
        order = np.zeros((len(self.schedules), L), dtype=np.int64)
        noise = np.zeros((len(self.schedules), L) + steps.shape[2:])
        for r, s in enumerate(self.schedules):
            rows = steps[r] if self.carry[r] is None else np.concatenate((self.carry[r],
                                                                           steps[r]))
            noise[r, :m[r]] = rows[:m[r]]
            self.carry[r] = rows[m[r]:]
            order[r, :m[r]] = s.order[k0[r]:k0[r] + m[r]]
        self.k0 = learnt[:, -1].copy()
        return k0, noise, order, learnt
