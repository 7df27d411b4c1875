"""One contract for every backend that computes many seeded bandit runs.

The runs of an experiment can be computed by several backends: the fused compiled CPU loop
of :func:`vits_ref.bandit.simulate` (linear and logistic pieces), its Python loop
(``fused=False``), its counter-based streams (``stream="philox"``), its CUDA path
(``device="cuda"``, numpy or philox stream, here on Numba's CUDA simulator in one
subprocess), VTS's compiled driver (:func:`vits_ref.bandit.vts.simulate_vts`), the DiffTS
chains (``simulate(..., backend="diffts-chain")``,
:func:`vits_ref.experiments.diffts._shared.simulate_method`) and the batched MLP path
(:func:`vits_ref.bandit._batched_mlp.simulate`, NumPy). Each gets a small adapter
(:class:`Backend`: its tiny instances, how to call it and its reference, how to make it
diverge, its plans, how to give it bad arguments) and every test below is parametrised
over the adapters:

1. *Same seed, same numbers* (:func:`test_same_numbers_as_the_reference`): the arms of the
   backend's reference loop (the Python loop over ``select``/``update``; for the Python
   loop itself, a select/update loop written here from the documented seeding rule; for
   ``stream="philox"``, the pre-drawn fused loop fed :mod:`vits_ref.reference.streams`'
   arrays) and its regret. Every backend is compared exactly: the regret is a look-up of
   the realisation's expected rewards at the played arm (``max_a mean - mean[arm]``, the
   same IEEE operations on every path), so equal arms give bit-identical regret even where
   a fast path sums its states in another order (the batched MLP's BLAS products, the CUDA
   loops: their states differ by rounding, ``tests/test_batched_mlp.py`` and
   ``tests/test_simulate_cuda.py`` bound that; no argmax flips at these sizes).
2. *Divergence* (:func:`test_divergence_names_the_lowest_diverging_run`,
   :func:`test_divergence_is_the_references_error`): in a block where the first run
   survives and several later runs diverge, a later one earlier than the lowest (so "first
   in time" and "lowest index" differ), the DivergenceError names the lowest diverging run
   at the round it diverges at alone, and the engine; the reference raises the same
   (engine, run, round, step size). Provoked by a constant step too large for some runs
   (LMC-TS, VITS-II on the logistic model), or, for the engines without a step size (VTS,
   DiffTS), by :class:`BombEnv`, which gives chosen runs one round of extreme features.
3. *Plans* (:func:`test_plan_does_not_change_the_rows`, ``..._the_divergence``,
   :func:`test_thread_count_does_not_change_the_rows`, ``..._the_divergence``): blocks of
   runs (``first_run``),
   the backend's batches of runs and chunks of rounds (its budgets shrunk so that each
   plan is in force, checked by counting the driver's calls), and 1 against 2 threads give
   the same rows bit for bit, and the same divergence error.
4. *Arguments* (:func:`test_bad_arguments_fail_fast`): ``n_rounds=0``, ``n_runs=-1``, an
   environment of the wrong dimension and a seed of a wrong type raise ValueError or
   TypeError naming the argument, before any work (every environment draw and compiled
   driver of the backends is replaced by one that raises :class:`WorkStarted`).
5. *Data bound* (:func:`test_data_beyond_the_bound_is_the_references_error`): an
   environment that draws features and rewards beyond the largest magnitude the library
   accepts (1e150, :data:`vits_ref._validate.MAX_ABS_DATA`) in a later run raises the
   reference's ValueError (the same message: the run's realisation is checked as the
   Python loop checks it), for the backends whose divergence case is a :class:`BombEnv`.

A backend without an option (no ``first_run``, no thread count) has that parameter skipped
with the reason. Where the library does not meet the contract the parameter is a strict
xfail stating the defect: it fails as soon as the defect is fixed, and the mark goes then.
"""

import dataclasses
import functools
import importlib
import json
import re
import textwrap
from collections.abc import Callable

import numba
import numpy as np
import pytest

import vits_ref as vr
from vits_ref._seeding import child
from vits_ref._threads import numba_threads
from vits_ref._validate import MAX_ABS_DATA
from vits_ref.bandit import _batched_mlp as bm
from vits_ref.bandit import _cuda_simulate, _streams, backends
from vits_ref.bandit import _diffts_chain as diffts_backend
from vits_ref.bandit.simulate import make_policy
from vits_ref.bandit.vts import simulate_vts
from vits_ref.diffusion import GaussianDiffusionPrior
from vits_ref.drivers import cpu
from vits_ref.envs.base import Environment
from vits_ref.errors import DivergenceError
from vits_ref.experiments.diffts import _shared
from vits_ref.models import MLP
from vits_ref.reference import streams as ref_streams

sim = importlib.import_module("vits_ref.bandit.simulate")  # the name is also the function
vts_mod = importlib.import_module("vits_ref.bandit.vts")

# --------------------------------------------------------------------------- small instances


def _pool(dim=3, n_arms=4, **kw):
    """The pool environment of tests/test_simulate_cuda.py and test_streams.py's divergence
    test (d = 3, K = 4, zeta = 1)."""
    return vr.envs.pool(dim=dim, n_arms=n_arms, **{"zeta": 1.0, "seed": 1, **kw})


#: LMC-TS with a constant step too large for some runs of :func:`_pool` (the step of
#: tests/test_streams.py's divergence test): measured, runs alone (30 rounds), numpy stream
#: seed 3: runs 4 (round 29) and 5 (round 28) of 0..5 diverge, fused and Python loop alike;
#: philox seed 5: runs 1 (30), 2 (29), 4 (29), 5 (30).
def _lmc_too_large(dim=3):
    return make_policy("lmc", dim, step_size=0.02, schedule="constant")


class BombEnv(vr.envs.PoolEnvironment):
    """The pool environment (linear rewards) whose runs ``r`` of ``bombs`` (run -> 1-based
    round) meet, at that round, features and rewards rescaled to just below the largest
    magnitude the library accepts (1e150): the sufficient statistics of the played arm
    (``x x^T``, ``r x``, ``r^2`` ~ 1e300) overflow and the run diverges there, whatever
    the engine, while the other runs are the plain pool's. ``scale``: the largest of the
    features or expected rewards of that round (0.99e150; beyond 1e150 the realisation is
    refused before the run).

    A run is recognised by its realisation's generator, ``env_rng(child(root, r))``, whose
    seed sequence's spawn key ends in ``(r, 0)`` (the seeding rule of
    :mod:`vits_ref._seeding`). Overriding ``realise`` makes the environment not chunk-safe,
    so every path realises each run whole (and slices it).
    """

    def __init__(self, bombs=(), scale=0.99e150, **kw):
        self.bombs = dict(bombs)
        self.scale = float(scale)
        super().__init__(**kw)

    def _params(self):
        return {**super()._params(), "bombs": tuple(sorted(self.bombs.items())),
                "scale": self.scale}

    def realise(self, n_rounds, rng=None):
        seq = getattr(getattr(rng, "bit_generator", None), "seed_seq", None)
        key = getattr(seq, "spawn_key", ())
        real = super().realise(n_rounds, rng)
        t = self.bombs.get(key[-2]) if len(key) >= 2 else None
        if t is not None and t <= n_rounds:
            # linear rewards: features and expected rewards scale together; the largest
            # of either at 0.99e150 (a margin for the rounding of the rescaled products),
            # the round's rewards noise-free
            x, m = real.contexts[t - 1], real.means[t - 1]
            x *= self.scale / max(np.abs(x).max(), np.abs(m).max())
            real.means[t - 1] = self.expected_reward(x)
            real.rewards[t - 1] = real.means[t - 1]
        return real


#: Runs 1 and 2 of every :class:`BombEnv` below diverge, run 2 earlier; run 0 survives.
BOMBS = {1: 9, 2: 4}


def _diffusion_prior():
    """``small_prior`` of tests/test_diffts.py (d = 2, 12 stages)."""
    return GaussianDiffusionPrior([0.5, -0.5], [[1.0, 0.4], [0.4, 0.8]], n_stages=12)


def _mlp_policies():
    """fig2's MLP methods on the tiny MLP ``3 -> 4 -> 3 -> 1`` (tests/test_batched_mlp.py):
    VITS-II (stable, decayed steps) and LMC-TS with a constant step of 0.1 and lam = 1,
    which diverges in runs 1 (round 40) and 2 (round 28) of runs 0..3 at seed 4."""
    net = MLP(3, hidden=(4, 3))
    vits = vr.ThompsonSampling(vr.VITS(net.dim, model=net, variant="II", eta=1.0, lam=10.0,
                                       step_size=1e-3, n_steps=10))
    lmc = vr.ThompsonSampling(vr.Langevin(net.dim, model=net, eta=1.0, lam=1.0,
                                          step_size=0.1, n_steps=10, schedule="constant"))
    return vits, lmc


def _mlp_env(zeta=0.1):
    return vr.envs.pool(dim=3, n_arms=4, zeta=zeta, reward="quadratic", seed=0)


def _logistic(**kw):
    """VITS-II on the logistic model (tests/test_logistic_bandit.py's ``eta != lam``)."""
    return vr.ThompsonSampling(vr.VITS(3, model="logistic", eta=2.0, lam=0.5, variant="II",
                                       **kw))


# --------------------------------------------------------------------------- references


def _rows(res):
    return np.asarray(res.regret), np.asarray(res.arms)


def _python_loop(policy, env, T, R, seed, first_run=0, **kw):
    """``simulate``'s Python loop (on one Numba thread: the engines' per-draw ``prange``
    launches are what a 2-core machine pays for otherwise; results do not depend on it)."""
    with numba_threads(1):
        return _rows(vr.simulate(policy, env, T, R, seed=seed, first_run=first_run,
                                 fused=False, **kw))


def _hand_loop(policy, env, T, R, seed, first_run=0):
    """The Python loop written out from the documented seeding rule: run ``r`` is seeded
    by child ``r`` of ``SeedSequence(seed)``; its child 0 realises the environment (PCG64)
    and its child 1 seeds ``policy.fresh``. A DivergenceError names the run."""
    root = np.random.SeedSequence(seed)
    regret, arms = np.empty((R, T)), np.empty((R, T), dtype=np.int64)
    with numba_threads(1):
        for i in range(R):
            rs = child(root, first_run + i)
            real = env.realise(T, np.random.Generator(np.random.PCG64(child(rs, 0))))
            pol = policy.fresh(child(rs, 1))
            for t in range(T):
                X = real.contexts[t]
                try:
                    a = pol.select(X)
                    regret[i, t] = real.means[t].max() - real.means[t, a]
                    arms[i, t] = a
                    pol.update(X, a, real.rewards[t, a])
                except DivergenceError as err:
                    raise err.in_run(first_run + i) from None
    return regret, arms


def _predrawn_streams(policy, env, T, R, seed, first_run=0):
    """The reference of ``stream="philox"`` (tests/test_streams.py): the pre-drawn fused
    loop (``cpu.bandit_rounds``) fed the arrays of :mod:`vits_ref.reference.streams` for the
    same runs' keys. A diverging run raises the DivergenceError of the lowest one (its
    status is the 1-based round), with the spec's step size at that round."""
    spec = policy.fused()
    dims = _streams.noise_dims(spec, env.dim, env.n_arms)
    root = np.random.SeedSequence(seed)
    arrays = [ref_streams.run_arrays(env, ref_streams.run_key(child(root, first_run + r)), T,
                                     dims, spec.piece.select_noise) for r in range(R)]
    stacked = [np.stack([a[i] for a in arrays]) for i in range(6)]
    regret, arms = np.empty((R, T)), np.empty((R, T), dtype=np.int64)
    status = np.zeros(R, dtype=np.int64)
    bufs = np.empty((R, spec.piece.state_size(env.dim, env.n_arms, dims[5], T)))
    cpu.bandit_rounds(spec.piece)(spec.params, bufs, 0, *stacked, np.zeros(0, np.int64),
                                  regret, arms, np.zeros((R, 0)), status)
    bad = np.flatnonzero(status)
    if bad.size:
        rnd = int(status[bad[0]])
        h = spec.step_size(rnd) if callable(spec.step_size) else spec.step_size
        raise DivergenceError(policy.engine.name, rnd, h, run=first_run + int(bad[0]))
    return regret, arms


# --------------------------------------------------------------------------- the adapter


@dataclasses.dataclass(frozen=True)
class Case:
    """A configuration of a backend: ``make()`` gives ``(policy, env)`` (built anew per
    call), ``T`` rounds, ``seed``, and the block of runs ``first_run .. first_run +
    n_runs - 1`` that the tests compute."""

    make: Callable
    T: int
    seed: int
    n_runs: int
    first_run: int = 0
    label: str = ""


@dataclasses.dataclass(frozen=True)
class Backend:
    """How the contract drives one backend.

    ``call(case, n_runs, first_run, plan, n_threads)`` runs the backend on the runs
    ``first_run ..`` of ``case`` with plan ``plan`` (a label of ``plans``, None: the
    default) and ``n_threads`` threads (None: the default), returning ``(regret, arms)``
    or raising its DivergenceError; ``reference(case, n_runs, first_run)`` the same of its
    reference. ``ok`` and ``diverge`` are its cases (``diverge``: the first run survives,
    several later ones diverge). ``alone(r)``, if given, makes run ``r`` of ``diverge``
    diverge alone (default: ``call(diverge, 1, first_run=r)``).

    ``plans``: its batch and chunk plans, ``{label: (what is counted, least calls)}``
    (:func:`_planned` checks that each is in force); ``blocks``: whether it takes
    ``first_run``; ``threads``: what its thread count is (None: no such option,
    ``no_threads`` says why). ``bad(kind, value)``: the call with one bad argument;
    ``arg``: the backend's names of ``n_rounds`` and ``n_runs``. ``xfail``: the contract
    items the library does not meet here, with the defect. ``registered``: the name of the
    runner's backend (:mod:`vits_ref.bandit.backends`) it drives.
    """

    name: str
    call: Callable
    reference: Callable
    ok: Case
    diverge: Case
    engine: str
    bad: Callable
    alone: Callable | None = None
    plans: dict = dataclasses.field(default_factory=dict)
    blocks: bool = True
    threads: str | None = "n_threads"
    no_threads: str = ""
    arg: dict = dataclasses.field(default_factory=lambda: {"n_rounds": "n_rounds",
                                                            "n_runs": "n_runs"})
    xfail: dict = dataclasses.field(default_factory=dict)
    cuda: bool = False
    registered: str = ""


# --------------------------------------------------------------------------- spies


class WorkStarted(Exception):  # noqa: N818 (an event, not an error of the library)
    """Raised by the stand-ins of every environment draw and compiled driver while a test
    checks that bad arguments fail before any work."""


def _spy(monkeypatch, owner, name):
    """Count the calls of the drivers the factory ``owner.name`` makes; returns the list
    the calls are appended to."""
    calls = []
    orig = getattr(owner, name)

    def make(*a, **k):
        body = orig(*a, **k)

        def run(*args, **kw):
            calls.append(1)
            return body(*args, **kw)

        return run

    monkeypatch.setattr(owner, name, make)
    return calls


def _spy_chunks(monkeypatch, env):
    """Count the chunks of rounds ``env.realise_chunks`` yields (all runs together)."""
    calls = []
    orig = env.realise_chunks

    def chunks(*a, **k):
        for real in orig(*a, **k):
            calls.append(1)
            yield real

    monkeypatch.setattr(env, "realise_chunks", chunks)
    return calls


# --------------------------------------------------------------------------- simulate()


def _simulate_backend(name, ok, diverge, reference, plans, registered,
                      thread_arg="n_threads", threads="n_threads", **kw):
    """An adapter of ``vr.simulate`` with the options ``kw`` (``fused``, ``stream``,
    ``new_instance_per_run``); ``plans``: ``{label: (setup(mp, policy, env), what is
    counted, least calls)}``; its thread count is the argument ``thread_arg``."""

    def call(case, n_runs, first_run=0, plan=None, n_threads=None):
        pol, env = case.make()
        opts = dict(kw)
        if n_threads is not None:
            opts[thread_arg] = n_threads
        with pytest.MonkeyPatch.context() as mp:
            if plan is not None:
                plans[plan][0](mp, pol, env)
            # the Python loop on one Numba thread (see _python_loop)
            with numba_threads(1 if kw.get("fused") is False else None):
                return _rows(vr.simulate(pol, env, case.T, n_runs, seed=case.seed,
                                         first_run=first_run, **opts))

    def bad(kind, value):
        pol, env = ok.make()
        args = {"n_rounds": ok.T, "n_runs": 2, "env": env, "seed": 0}
        if kind == "env":
            value = _pool(dim=env.dim + 1, n_arms=env.n_arms)
        args[kind] = value
        return lambda: vr.simulate(pol, args["env"], args["n_rounds"], args["n_runs"],
                                   seed=args["seed"], **kw)

    return Backend(name, call, reference, ok, diverge, diverge.make()[0].engine.name, bad,
                   plans={k: v[1:] for k, v in plans.items()}, threads=threads,
                   registered=registered)


def _budget_plan(rounds):
    """``simulate``'s fused plan forced to chunks of about ``rounds`` rounds (its memory
    budget shrunk to ``rounds`` rounds of one run; 1: chunks of one round, batches of
    ``n_threads`` runs, tests/test_chunked_rounds.py)."""

    def setup(mp, pol, env):
        per_round = sim._bytes_per_round(sim.fused_spec(pol), env.dim, env.n_arms)
        mp.setattr(sim, "_MEMORY_BUDGET", 1 if rounds == 1 else rounds * per_round)
        _PLAN_CALLS.append(_spy(mp, cpu, "bandit_rounds"))

    return setup


#: The driver-call counters of the plan in force (the last one is the current call's).
_PLAN_CALLS = []


def _fused_cpu():
    ok = Case(lambda: (make_policy("vits-ii", 3), _pool()), T=20, seed=7, n_runs=3)
    div = Case(lambda: (_lmc_too_large(), _pool()), T=30, seed=3, n_runs=3, first_run=3)
    # a budget of one round: chunks of one round (20 calls of the driver at least); of 7
    # rounds of one run: chunks of 7 // n_threads rounds (the batch takes n_threads runs)
    plans = {"chunks-of-1-round": (_budget_plan(1), "bandit_rounds", 20),
             "budget-of-7-rounds": (_budget_plan(7), "bandit_rounds", 3)}
    return _simulate_backend("fused-cpu", ok, div,
                             lambda c, R, f=0: _python_loop(*c.make(), c.T, R, c.seed, f),
                             plans, "fused-cpu", fused=True)


def _fused_logistic():
    def ok_make():
        return (_logistic(step_size=0.5, n_steps=3),
                vr.envs.hard_instance(3, 4, reward="logistic", seed=0))

    def div_make():
        # measured, runs alone (30 rounds, new instance per run, seed 8): of runs 0..4,
        # 1 (round 24), 3 (29) and 4 (22) diverge: the block 2..4 has run 2 surviving, run
        # 3 diverging at 29 and run 4 earlier, at 22
        return (_logistic(schedule="constant", step_size=0.3, n_steps=1),
                vr.envs.hard_instance(3, 4, reward="logistic", seed=0))

    ok = Case(ok_make, T=30, seed=5, n_runs=3)
    div = Case(div_make, T=30, seed=8, n_runs=3, first_run=2)
    plans = {"chunks-of-1-round": (_budget_plan(1), "bandit_rounds", 30),
             "budget-of-7-rounds": (_budget_plan(7), "bandit_rounds", 3)}

    def reference(c, R, f=0):
        return _python_loop(*c.make(), c.T, R, c.seed, f, new_instance_per_run=True)

    return _simulate_backend("fused-logistic", ok, div, reference, plans, "fused-cpu",
                             fused=True,
                             new_instance_per_run=True)


def _python_backend():
    ok = Case(lambda: (make_policy("vits-ii", 3), _pool()), T=20, seed=7, n_runs=3)
    div = Case(lambda: (_lmc_too_large(), _pool()), T=30, seed=3, n_runs=3, first_run=3)
    return _simulate_backend(
        "python-loop", ok, div, lambda c, R, f=0: _hand_loop(*c.make(), c.T, R, c.seed, f),
        {}, "python", thread_arg="n_jobs", threads="n_jobs (worker processes: the Python loop's "
                                         "parallelism; n_threads is the fused loop's)",
        fused=False)


def _philox_cpu():
    ok = Case(lambda: (make_policy("vits-ii", 3), _pool()), T=20, seed=7, n_runs=3)
    # runs 1 (30) and 2 (29) of 0..2 diverge (philox, seed 5)
    div = Case(lambda: (_lmc_too_large(), _pool()), T=30, seed=5, n_runs=3)

    def batches(size):
        def setup(mp, pol, env):
            mp.setattr(_streams, "CPU_BATCH", size)
            _PLAN_CALLS.append(_spy(mp, cpu, "bandit_streams"))

        return setup

    plans = {"batches-of-1-run": (batches(1), "bandit_streams", 3),
             "batches-of-2-runs": (batches(2), "bandit_streams", 2)}

    def reference(c, R, f=0):
        return _predrawn_streams(*c.make(), c.T, R, c.seed, f)

    return _simulate_backend("philox-cpu", ok, div, reference, plans, "philox-cpu",
                             stream="philox")


# --------------------------------------------------------------------------- CUDA (simulator)

#: The CUDA cases: LMC-TS (one run per GPU thread: fast on the simulator; the VITS block
#: layout takes seconds a call there, tests/test_simulate_cuda.py covers it).
CUDA_CASES = {
    "ok": {"policy": "lmc", "kw": {}, "T": 20, "seed": 7, "n_runs": 3, "first_run": 0},
    "diverge-numpy": {"policy": "lmc", "kw": {"step_size": 0.02, "schedule": "constant"},
                      "T": 30, "seed": 3, "n_runs": 3, "first_run": 3},
    "diverge-philox": {"policy": "lmc", "kw": {"step_size": 0.02, "schedule": "constant"},
                       "T": 30, "seed": 5, "n_runs": 3, "first_run": 0},
}
#: Plans of the CUDA paths: host budgets for batches of 2 runs in chunks of 3 rounds and
#: for 1 run in chunks of 1 round (numpy stream); launches of 5 rounds and a device holding
#: one run a batch (philox).
CUDA_PLANS = {"cuda": ("batches-of-2-chunks-of-3", "batches-of-1-chunks-of-1"),
              "cuda-philox": ("launches-of-5-rounds", "batches-of-1-run")}

_CUDA_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import vits_ref as vr
    from vits_ref.bandit import _cuda_simulate as cs, _streams
    from vits_ref.bandit.simulate import make_policy

    cases, requests = json.loads(sys.argv[1])
    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    saved = {"MIN_CHUNK": cs.MIN_CHUNK, "HOST_BUDGET": cs.HOST_BUDGET,
             "DRAW_THREADS": cs.DRAW_THREADS, "_free_device_bytes": cs._free_device_bytes}
    launch = _streams.CHUNK_ROUNDS
    out = {}
    for key, (backend, case, n_runs, first_run, plan, n_threads) in requests.items():
        c = cases[case]
        pol = make_policy(c["policy"], 3, **c["kw"])
        spec = pol.fused()
        stream = "philox" if backend == "cuda-philox" else "numpy"
        bpr = cs.bytes_per_round(spec, 3, 4)
        dims = _streams.noise_dims(spec, 3, 4)
        if plan == "batches-of-2-chunks-of-3":
            cs.MIN_CHUNK, cs.HOST_BUDGET = 3, 2 * 2 * 3 * bpr
        elif plan == "batches-of-1-chunks-of-1":
            cs.MIN_CHUNK, cs.HOST_BUDGET = 1, 2 * 1 * 1 * bpr
        elif plan == "launches-of-5-rounds":
            _streams.CHUNK_ROUNDS = 5
        elif plan == "batches-of-1-run":
            one = _streams.bytes_per_run(spec, dims, c["T"])
            cs._free_device_bytes = lambda one=one: int(one / cs.DEVICE_FRACTION) + 1
        if n_threads is not None:
            cs.DRAW_THREADS = n_threads
        if stream == "numpy":
            used = cs.plan(spec, c["T"], 3, 4, n_runs, 0, cs._free_device_bytes())
        else:
            used = _streams.plan(spec, dims, c["T"], n_runs, 0, cs._free_device_bytes())
        try:
            res = vr.simulate(pol, env, c["T"], n_runs, seed=c["seed"], first_run=first_run,
                              device="cuda", stream=stream)
            got = {"regret": res.regret.tolist(), "arms": res.arms.tolist()}
        except vr.DivergenceError as err:
            got = {"error": [err.engine, err.round, err.step_size, err.run, err.detail,
                             str(err)]}
        got["plan"] = [int(x) for x in used]
        out[key] = got
        for k, v in saved.items():
            setattr(cs, k, v)
        _streams.CHUNK_ROUNDS = launch
    print("RESULT" + json.dumps(out))
""")


def _cuda_key(backend, case, n_runs, first_run, plan, n_threads):
    return json.dumps([backend, case, n_runs, first_run, plan, n_threads])


def _cuda_requests():
    """Every call the tests make of the two CUDA backends (what the subprocess runs)."""
    keys = {}
    for backend in ("cuda", "cuda-philox"):
        div = "diverge-philox" if backend == "cuda-philox" else "diverge-numpy"
        for case in ("ok", div):
            c = CUDA_CASES[case]
            R, f = c["n_runs"], c["first_run"]
            calls = [(R, f, None, None), (1, f, None, None), (R - 1, f + 1, None, None)]
            calls += [(R, f, plan, None) for plan in CUDA_PLANS[backend]]
            if backend == "cuda":  # host threads drawing the chunks
                calls += [(R, f, None, 1), (R, f, None, 2)]
            if case != "ok":
                calls += [(1, r, None, None) for r in range(f, f + R)]
            for call in calls:
                args = (backend, case) + call
                keys[_cuda_key(*args)] = list(args)
    return keys


@functools.cache
def _cuda_results():
    """Every CUDA call of the tests, computed in one subprocess under the simulator."""
    from conftest import result_under_cuda_simulator

    return result_under_cuda_simulator(_CUDA_SCRIPT, json.dumps([CUDA_CASES,
                                                                 _cuda_requests()]))


def _cuda_backend(name):
    div_name = "diverge-philox" if name == "cuda-philox" else "diverge-numpy"

    def case(key):
        c = CUDA_CASES[key]
        return Case(lambda: (make_policy(c["policy"], 3, **c["kw"]), _pool()), T=c["T"],
                    seed=c["seed"], n_runs=c["n_runs"], first_run=c["first_run"], label=key)

    ok, div = case("ok"), case(div_name)

    def call(c, n_runs, first_run=0, plan=None, n_threads=None):
        key = _cuda_key(name, c.label, n_runs, first_run, plan, n_threads)
        got = _cuda_results().get(key)
        assert got is not None, f"not computed under the simulator: {key}"
        if plan is not None:  # the plan was in force: not the default's whole batch
            _PLAN_CALLS.append(got["plan"])
        if "error" in got:
            engine, rnd, h, run, detail, msg = got["error"]
            err = DivergenceError(engine, rnd, h, run=run, detail=detail)
            assert str(err) == msg  # the fields carry the whole error
            raise err
        return np.array(got["regret"]), np.array(got["arms"], dtype=np.int64)

    if name == "cuda-philox":
        def reference(c, R, f=0):
            return _predrawn_streams(*c.make(), c.T, R, c.seed, f)
    else:
        def reference(c, R, f=0):
            return _python_loop(*c.make(), c.T, R, c.seed, f)

    stream = "philox" if name == "cuda-philox" else "numpy"

    def bad(kind, value):
        pol, env = ok.make()
        args = {"n_rounds": ok.T, "n_runs": 2, "env": env, "seed": 0}
        if kind == "env":
            value = _pool(dim=4)
        args[kind] = value
        return lambda: vr.simulate(pol, args["env"], args["n_rounds"], args["n_runs"],
                                   seed=args["seed"], device="cuda", stream=stream)

    threads = "DRAW_THREADS (host threads drawing the chunks)" if name == "cuda" else None
    return Backend(name, call, reference, ok, div, "LMC-TS", bad,
                   plans={p: ("plan", 0) for p in CUDA_PLANS[name]}, threads=threads,
                   no_threads="no thread option: each run's numbers are generated on the "
                              "device from its key (one run per GPU thread), nothing is "
                              "drawn on the host", cuda=True,
                   registered="philox-cuda" if name == "cuda-philox" else "fused-cuda")


# --------------------------------------------------------------------------- VTS


def _vts_backend():
    ok = Case(lambda: (vr.VTS(2, 2, n_components=2, seed=0), vr.envs.vts_scenario("B")),
              T=30, seed=4, n_runs=3)
    div = Case(lambda: (vr.VTS(2, 2, n_components=2, seed=0),
                        BombEnv(BOMBS, dim=2, n_arms=2, zeta=1.0, seed=1)),
               T=12, seed=4, n_runs=3)

    def call(c, n_runs, first_run=0, plan=None, n_threads=None):
        pol, env = c.make()
        with pytest.MonkeyPatch.context() as mp:
            if plan is not None:  # the memory budget of one run's realisation: batches of 1
                mp.setattr(vts_mod, "_MEMORY_BUDGET", 1)
                _PLAN_CALLS.append(_spy(mp, cpu, "vts_runs"))
            return _rows(simulate_vts(pol, env, c.T, n_runs, seed=c.seed, first_run=first_run,
                                      n_threads=n_threads))

    def bad(kind, value):
        args = {"n_rounds": 5, "n_runs": 2, "env": vr.envs.vts_scenario("B"), "seed": 0}
        if kind == "env":
            value = _pool(dim=3, n_arms=2)
        args[kind] = value
        return lambda: simulate_vts(vr.VTS(2, 2), args["env"], args["n_rounds"],
                                    args["n_runs"], seed=args["seed"])

    return Backend("vts", call, lambda c, R, f=0: _python_loop(*c.make(), c.T, R, c.seed, f),
                   ok, div, div.make()[0].name, bad, plans={"batches-of-1-run": ("vts_runs", 3)},
                   registered="vts")


# --------------------------------------------------------------------------- DiffTS chains

def _diffts_chain():
    prior = _diffusion_prior()
    sigma = 0.7

    def ok_make():
        return vr.ThompsonSampling(vr.DiffTS(prior, sigma=sigma)), _pool(2, 6, seed=2)

    def div_make(bombs=BOMBS):
        return (vr.ThompsonSampling(vr.DiffTS(prior, sigma=sigma)),
                BombEnv(bombs, dim=2, n_arms=6, zeta=1.0, seed=2))

    ok = Case(ok_make, T=25, seed=11, n_runs=3)
    div = Case(div_make, T=12, seed=4, n_runs=3)

    def call(c, n_runs, first_run=0, plan=None, n_threads=None):
        pol, env = c.make()
        with pytest.MonkeyPatch.context() as mp:
            if plan is not None:  # a budget below one run's realisation: batches of 1
                mp.setattr(diffts_backend, "MEMORY_BUDGET", 1)
                _PLAN_CALLS.append(_spy(mp, cpu, "diffts_linear_runs"))
            return _rows(vr.simulate(pol, env, c.T, n_runs, seed=c.seed, first_run=first_run,
                                     n_threads=n_threads, backend="diffts-chain"))

    def bad(kind, value):
        args = {"n_rounds": 5, "n_runs": 2, "env": _pool(2, 6), "seed": 0}
        if kind == "env":
            value = _pool(3, 6)
        args[kind] = value
        return lambda: vr.simulate(ok_make()[0], args["env"], args["n_rounds"],
                                   args["n_runs"], seed=args["seed"], backend="diffts-chain")

    return Backend(
        "diffts-chain", call, lambda c, R, f=0: _python_loop(*c.make(), c.T, R, c.seed, f),
        ok, div, "DiffTS", bad, plans={"batches-of-1-run": ("diffts_linear_runs", 3)},
        registered="diffts-chain")


def _diffts_method():
    prior = _diffusion_prior()

    def ok_make():
        return vr.ThompsonSampling(vr.DiffTS(prior, sigma=0.7)), _pool(2, 6, seed=2)

    def div_make(bombs=BOMBS):
        return (vr.ThompsonSampling(vr.DiffTS(prior, sigma=0.7)),
                BombEnv(bombs, dim=2, n_arms=6, zeta=1.0, seed=2))

    ok = Case(ok_make, T=15, seed=1, n_runs=3)
    div = Case(div_make, T=12, seed=4, n_runs=3)

    def call(c, n_runs, first_run=0, plan=None, n_threads=None):
        assert plan is None
        pol, env = c.make()
        with numba_threads(n_threads):
            return _rows(_shared.simulate_method(pol, env, c.T, n_runs, c.seed,
                                                 first_run=first_run))

    def reference(c, R, f=0):
        return _python_loop(*c.make(), c.T, R, c.seed, f, new_instance_per_run=True)

    def bad(kind, value):
        args = {"n_rounds": 5, "n_runs": 2, "env": _pool(2, 6), "seed": 0}
        if kind == "env":
            value = _pool(3, 6)
        args[kind] = value
        return lambda: _shared.simulate_method(ok_make()[0], args["env"], args["n_rounds"],
                                               args["n_runs"], args["seed"])

    return Backend(
        "diffts-method", call, reference, ok, div, "DiffTS", bad,
        threads="n_threads (simulate's, around the prange driver)",
        arg={"n_rounds": "rounds", "n_runs": "runs"}, registered="diffts-chain")


# --------------------------------------------------------------------------- batched MLP


def _batched_mlp():
    ok = Case(lambda: (_mlp_policies()[0], _mlp_env()), T=6, seed=3, n_runs=3)
    # runs 1 (40) and 2 (28) of 0..3 diverge alone (tests/test_batched_mlp.py)
    div = Case(lambda: (_mlp_policies()[1], _mlp_env(zeta=1.0)), T=40, seed=4, n_runs=4)

    def call(c, n_runs, first_run=0, plan=None, n_threads=None):
        pol, env = c.make()
        with pytest.MonkeyPatch.context() as mp:
            if plan is not None:  # realisations drawn 2 rounds at a time
                mp.setattr(bm, "REAL_CHUNK", 2)
                _PLAN_CALLS.append(_spy_chunks(mp, env))
            if n_threads is None:
                return _rows(bm.simulate(pol, env, c.T, n_runs, seed=c.seed,
                                         first_run=first_run))
            # the thread option is run_block's (the runs' draws filled by a thread pool;
            # simulate uses one thread with NumPy): the runs as simulate builds them
            root = np.random.SeedSequence(c.seed)
            seeds = [child(root, first_run + r) for r in range(n_runs)]
            return bm.run_block(pol, [env] * n_runs, seeds, c.T, first_index=first_run,
                                draw_threads=n_threads)

    def bad(kind, value):
        args = {"n_rounds": 5, "n_runs": 2, "env": _mlp_env(), "seed": 0}
        if kind == "env":
            value = vr.envs.pool(dim=4, n_arms=4, reward="quadratic", seed=0)
        args[kind] = value
        return lambda: bm.simulate(_mlp_policies()[0], args["env"], args["n_rounds"],
                                   args["n_runs"], seed=args["seed"])

    return Backend(
        "batched-mlp", call, lambda c, R, f=0: _python_loop(*c.make(), c.T, R, c.seed, f),
        ok, div, "LMC-TS", bad, plans={"realisations-in-chunks-of-2": ("realise_chunks", 9)},
        threads="run_block's draw_threads (threads filling the runs' draws)",
        registered="batched-mlp")


BACKENDS = [_fused_cpu(), _fused_logistic(), _python_backend(), _philox_cpu(),
            _cuda_backend("cuda"), _cuda_backend("cuda-philox"), _vts_backend(),
            _diffts_chain(), _diffts_method(), _batched_mlp()]


def _params(item, skip=None):
    """``BACKENDS`` as parameters of contract ``item``: a backend that lacks what the item
    needs (``skip(backend)`` gives why) is skipped; a known defect is a strict xfail."""
    out = []
    for b in BACKENDS:
        marks = []
        why = skip(b) if skip else None
        if why:
            marks.append(pytest.mark.skip(reason=why))
        elif item in b.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=b.xfail[item]))
        out.append(pytest.param(b, id=b.name, marks=marks))
    return out


def _assert_same(got, want, what):
    np.testing.assert_array_equal(got[1], want[1], err_msg=f"{what}: arms")
    np.testing.assert_array_equal(got[0], want[0], err_msg=f"{what}: regret")


def _error(fn, *args, **kw):
    with pytest.raises(DivergenceError) as info:
        fn(*args, **kw)
    return info.value


def _fields(err):
    return err.engine, err.run, err.round, err.step_size


# --------------------------------------------------------------------------- 1. numbers


@pytest.mark.parametrize("backend", _params("numbers"))
def test_same_numbers_as_the_reference(backend):
    c = backend.ok
    got = backend.call(c, c.n_runs, c.first_run)
    want = backend.reference(c, c.n_runs, c.first_run)
    assert got[0].shape == got[1].shape == (c.n_runs, c.T)
    _assert_same(got, want, backend.name)
    # not a trivial comparison: the runs differ and the policy plays several arms
    assert len({tuple(a) for a in got[1]}) > 1 and len(np.unique(got[1])) > 1
    assert np.all(np.isfinite(got[0])) and np.all(got[0] >= 0)


# --------------------------------------------------------------------------- 2. divergence


def _alone(backend):
    """``{run: round}`` of the diverge case's runs that diverge alone."""
    c = backend.diverge
    out = {}
    for r in range(c.first_run, c.first_run + c.n_runs):
        try:
            if backend.alone is not None:
                backend.alone(r)
            else:
                backend.call(c, 1, r)
        except DivergenceError as err:
            assert err.run == r, (r, str(err))
            out[r] = err.round
    return out


@pytest.mark.parametrize("backend", _params("divergence"))
def test_divergence_names_the_lowest_diverging_run(backend):
    c = backend.diverge
    alone = _alone(backend)
    # the case shows something: the block's first run survives, several later runs
    # diverge, and one after the lowest diverges earlier than it
    assert c.first_run not in alone and len(alone) >= 2, alone
    low = min(alone)
    assert any(alone[r] < alone[low] for r in alone if r > low), alone
    err = _error(backend.call, c, c.n_runs, c.first_run)
    assert (err.run, err.round) == (low, alone[low]), (str(err), alone)
    assert err.engine == backend.engine
    assert f"round {err.round} in run {err.run}" in str(err) and backend.engine in str(err)


@pytest.mark.parametrize("backend", _params("reference-error"))
def test_divergence_is_the_references_error(backend):
    c = backend.diverge
    got = _error(backend.call, c, c.n_runs, c.first_run)
    want = _error(backend.reference, c, c.n_runs, c.first_run)
    assert _fields(got) == _fields(want), (str(got), str(want))


# --------------------------------------------------------------------------- 3. plans


def _no_plan(b):
    if not b.plans and not b.blocks:
        return (f"{b.name} has no first_run and no batch or chunk plan: every call "
                f"computes all its runs in one prange over runs")
    return None


def _in_blocks(backend, c):
    """The case's runs as two blocks (the first run, then the others): the rows, or the
    first block's DivergenceError."""
    parts = [backend.call(c, 1, c.first_run), backend.call(c, c.n_runs - 1, c.first_run + 1)]
    return tuple(np.concatenate([p[i] for p in parts]) for i in (0, 1))


def _plans(backend):
    """``[(label, run)]``: ``run(case)`` computes the case's runs under another plan."""
    runs = []
    if backend.blocks:
        runs.append(("blocks of runs", lambda c: _in_blocks(backend, c)))
    for plan, (_, least) in backend.plans.items():
        runs.append((plan, functools.partial(_planned, backend, plan=plan, least=least)))
    return runs


def _planned(backend, c, plan, least):
    """``backend.call`` under ``plan``, checking the plan was in force: its driver ran at
    least ``least`` times (once at least where a run diverged: the runs after it are not
    run), or, on CUDA, the (batch, chunk) it reported is not one whole launch."""
    _PLAN_CALLS.clear()
    out = None
    try:
        out = backend.call(c, c.n_runs, c.first_run, plan=plan)
        return out
    finally:
        assert _PLAN_CALLS, f"{plan}: no record of the plan"
        used = _PLAN_CALLS[-1]
        if backend.cuda:  # (runs a batch, rounds a chunk)
            assert tuple(used) != (c.n_runs, c.T) and 1 <= used[0] <= c.n_runs, used
        else:
            assert len(used) >= (least if out is not None else 1), (plan, len(used))


@pytest.mark.parametrize("backend", _params("plans", _no_plan))
def test_plan_does_not_change_the_rows(backend):
    ok = backend.ok
    whole = backend.call(ok, ok.n_runs, ok.first_run)
    for label, run in _plans(backend):
        _assert_same(run(ok), whole, f"{backend.name}, {label}")


@pytest.mark.parametrize("backend", _params("plans-divergence", _no_plan))
def test_plan_does_not_change_the_divergence(backend):
    div = backend.diverge
    whole = _error(backend.call, div, div.n_runs, div.first_run)
    for label, run in _plans(backend):
        err = _error(run, div)
        assert _fields(err) == _fields(whole) and str(err) == str(whole), (label, str(err))


def _no_threads(b):
    if b.threads is None:
        return f"{b.name}: {b.no_threads}"
    if numba.config.NUMBA_NUM_THREADS < 2 and "DRAW_THREADS" not in b.threads:
        return "needs NUMBA_NUM_THREADS >= 2"
    return None


@pytest.mark.parametrize("backend", _params("threads", _no_threads))
def test_thread_count_does_not_change_the_rows(backend):
    ok = backend.ok
    one = backend.call(ok, ok.n_runs, ok.first_run, n_threads=1)
    two = backend.call(ok, ok.n_runs, ok.first_run, n_threads=2)
    _assert_same(two, one, f"{backend.name}: {backend.threads} 2 against 1")
    _assert_same(one, backend.call(ok, ok.n_runs, ok.first_run), backend.name)


@pytest.mark.parametrize("backend", _params("threads-divergence", _no_threads))
def test_thread_count_does_not_change_the_divergence(backend):
    div = backend.diverge
    one, two = (_error(backend.call, div, div.n_runs, div.first_run, n_threads=n)
                for n in (1, 2))
    assert _fields(one) == _fields(two) and str(one) == str(two)


# --------------------------------------------------------------------------- 4. arguments

#: The bad arguments: (kind, value, error, what the message must name).
BAD = {"n_rounds": (0, ValueError), "n_runs": (-1, ValueError),
       "env": (None, ValueError), "seed": ("7", TypeError)}


@pytest.fixture
def no_work(monkeypatch):
    """Every environment draw and every backend's compiled driver raises WorkStarted."""

    def stop(*a, **k):
        raise WorkStarted("work started before the arguments were checked")

    classes, todo = [], [Environment]
    while todo:  # every environment class that defines a draw of its own
        cls = todo.pop()
        classes.append(cls)
        todo += cls.__subclasses__()
    for cls in classes:
        for name in ("realise", "realise_chunks", "new_instance"):
            if name in vars(cls):
                monkeypatch.setattr(cls, name, stop)
    for name in ("bandit_rounds", "bandit_run", "bandit_runs", "bandit_streams", "vts_runs",
                 "diffts_linear_runs"):
        monkeypatch.setattr(cpu, name, stop)
    monkeypatch.setattr(sim, "_python_job", stop)
    monkeypatch.setattr(bm, "run_block", stop)
    monkeypatch.setattr(_cuda_simulate, "run_fused_cuda", stop)
    for name in ("run_streams_cpu", "run_streams_cuda"):
        monkeypatch.setattr(_streams, name, stop)


def _bad_params():
    out = []
    for b in BACKENDS:
        for kind in BAD:
            marks = ([pytest.mark.xfail(strict=True, reason=b.xfail[kind])]
                     if kind in b.xfail else [])
            out.append(pytest.param(b, kind, id=f"{b.name}-{kind}", marks=marks))
    return out


@pytest.mark.parametrize(("backend", "kind"), _bad_params())
def test_bad_arguments_fail_fast(backend, kind, no_work):
    value, error = BAD[kind]
    name = backend.arg.get(kind, kind)
    call = backend.bad(kind, value)
    with pytest.raises(error) as info:
        call()
    # the argument by name (a word: 'n_rounds' does not name 'rounds')
    assert re.search(rf"(?<![\w.]){re.escape(name)}\b", str(info.value)), str(info.value)


# --------------------------------------------------------------------------- 5. data bound


def _no_bomb(b):
    if not isinstance(b.diverge.make()[1], BombEnv):
        return (f"{b.name}'s divergence case is not a BombEnv, whose bombs can be scaled "
                f"beyond the bound (simulate's check: tests/test_limits.py, "
                f"tests/test_simulate_cuda.py)")
    return None


@pytest.mark.parametrize("backend", _params("data-bound", _no_bomb))
def test_data_beyond_the_bound_is_the_references_error(backend):
    c = backend.diverge

    def make():  # the bombs of the divergence case beyond the bound (run 1 the first)
        pol, env = c.make()
        env.scale = 10 * MAX_ABS_DATA
        return pol, env

    huge = dataclasses.replace(c, make=make)
    errors = []
    for fn in (backend.call, backend.reference):
        with pytest.raises(ValueError) as info:
            fn(huge, huge.n_runs, huge.first_run)
        errors.append(str(info.value))
    got, want = errors
    assert got == want
    assert f"must have entries of magnitude <= {MAX_ABS_DATA:g}" in got, got
    assert "too large for the sufficient statistics" in got, got


# --------------------------------------------------------------------------- 6. the registry


def test_every_registered_backend_is_held_to_the_contract():
    """A backend registered with the runner and driven by no adapter above would escape
    every test of this file."""
    assert set(backends.names()) <= {b.registered for b in BACKENDS}


def _mlp_vits():
    return _mlp_policies()[0], _mlp_env()


#: ``(what, make() -> (policy, env), simulate's options, the backend it must choose)``
CHOICES = [
    ("LinTS", lambda: (make_policy("lints", 3), _pool()), {}, "fused-cpu"),
    ("LinTS, fused=False", lambda: (make_policy("lints", 3), _pool()), {"fused": False},
     "python"),
    ("LinTS, philox", lambda: (make_policy("lints", 3), _pool()), {"stream": "philox"},
     "philox-cpu"),
    ("LinTS, CUDA", lambda: (make_policy("lints", 3), _pool()), {"device": "cuda"},
     "fused-cuda"),
    ("LinTS, CUDA philox", lambda: (make_policy("lints", 3), _pool()),
     {"device": "cuda", "stream": "philox"}, "philox-cuda"),
    ("VITS-II logistic", lambda: (_logistic(), vr.envs.hard_instance(3, 4, reward="logistic",
                                                                     seed=0)), {}, "fused-cpu"),
    ("VTS", lambda: (vr.VTS(2, 2, seed=0), vr.envs.vts_scenario("B")), {}, "vts"),
    ("VTS, fused=True", lambda: (vr.VTS(2, 2, seed=0), vr.envs.vts_scenario("B")),
     {"fused": True}, "vts"),
    ("VTS, fused=False", lambda: (vr.VTS(2, 2, seed=0), vr.envs.vts_scenario("B")),
     {"fused": False}, "python"),
    ("linear DiffTS", lambda: (vr.ThompsonSampling(vr.DiffTS(_diffusion_prior())),
                               _pool(2, 6)), {}, "diffts-chain"),
    ("DPS", lambda: (vr.ThompsonSampling(vr.DPS(_diffusion_prior())), _pool(2, 6)), {},
     "python"),
    # the batched MLP sums in another order than the Python loop: never chosen unasked
    ("VITS-II on an MLP", _mlp_vits, {}, "python"),
    ("VITS-II on an MLP, named", _mlp_vits, {"backend": "batched-mlp"}, "batched-mlp"),
]


@pytest.mark.parametrize("make, options, want", [pytest.param(*c[1:], id=c[0])
                                                 for c in CHOICES])
def test_the_runner_chooses_the_backend(make, options, want):
    pol, env = make()
    block = backends.RunBlock(pol, env, 5, 2, np.random.SeedSequence(0),
                              spec=sim.fused_spec(pol), device=options.get("device", "cpu"),
                              stream=options.get("stream", "numpy"))
    chosen = backends.choose(block, options.get("backend"), options.get("fused"))
    assert chosen is not None and chosen.name == want


def test_a_named_backend_that_cannot_run_says_why():
    pol, env = make_policy("lints", 3), _pool()
    with pytest.raises(ValueError, match=r"backend 'vts' cannot run this block \(LinTS\): "
                                         r"the policy is not a VTS"):
        vr.simulate(pol, env, 5, backend="vts")
    with pytest.raises(ValueError, match=r"backend must be one of philox-cuda, .*python"):
        vr.simulate(pol, env, 5, backend="numba")
    with pytest.raises(TypeError, match="backend must be a backend's name"):
        vr.simulate(pol, env, 5, backend=3)
    with pytest.raises(ValueError, match="fused=False asks for no compiled loop"):
        vr.simulate(pol, env, 5, backend="fused-cpu", fused=False)


class _Recorder:
    """A user's backend: the Python loop's rows, run by run, recording the runs it got."""

    name, order, compiled, exact, result_type = "recorder", 5, False, False, \
        sim.SimulationResult

    def __init__(self):
        self.blocks = []

    def declines(self, block):
        return None if block.policy.name == "LinTS" else "LinTS only"

    def run(self, block, rows):
        self.blocks.append((block.first_run, block.n_runs, block.n_threads))
        backends.registered()[-1].run(block, rows)  # the Python loop (order 100: last)


def test_a_users_backend_registers_and_runs_when_named(monkeypatch):
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))
    rec = backends.register(_Recorder())
    pol, env = make_policy("lints", 3), _pool()
    want = vr.simulate(pol, env, 6, 3, seed=2, first_run=1, fused=False)
    # not exact: the runner does not choose it unasked, though its order comes first
    assert vr.simulate(pol, env, 6, 3, seed=2, first_run=1).fused and not rec.blocks
    got = vr.simulate(pol, env, 6, 3, seed=2, first_run=1, n_threads=1, backend="recorder")
    assert rec.blocks == [(1, 3, 1)] and not got.fused
    _assert_same(_rows(got), _rows(want), "recorder")
    with pytest.raises(TypeError, match="must satisfy vits_ref.bandit.backends.Backend"):
        backends.register(object())
