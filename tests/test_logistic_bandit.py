"""The logistic model's pieces of the fused bandit loop (:mod:`vits_ref.kernels.logistic_bandit`).

``vr.VITS(d, model="logistic")``, ``vr.Langevin(..., model="logistic")`` and
``vr.Laplace(d, model="logistic")`` return a :class:`vits_ref.drivers.fused.FusedSpec` whose piece
keeps the run's history in its state buffer and runs the engine's own step body on it, so:

* the fused loop equals the Python loop (``fused=False``) exactly: arms equal, regret
  bit-identical (``assert_array_equal``), for VITS-I, VITS-II, the Hessian-free variants,
  LMC-TS and Laplace, with the ``decayed`` and the ``constant`` schedule;
* the plan does not matter: threads, chunks of rounds (the history crosses chunks in the
  state buffer), blocks of runs (``first_run``) give the same rows;
* a divergence names the same engine, run, round and step size on both paths, whether
  the state became non-finite, left the VITS bound on ``max |B|`` while finite, or the
  Laplace fit met a Hessian that is not positive definite;
* rewards other than 0 or 1 are refused (fused, Python and ``stream="philox"``) before
  anything runs (the fused path: before the chunk that has them);
* ``stream="philox"`` equals the pre-drawn fused loop fed with the NumPy reference's
  arrays (:mod:`vits_ref.reference.streams`) bit for bit, whatever the threads;
* ``device="cuda"`` under Numba's CUDA simulator equals ``device="cpu"`` bit for bit, one
  run per thread (the pieces are not block-safe); at full size on a real GPU (gated).

Sizes are tiny (d = 3, K = 4, 3 runs x 30 rounds): the three pieces compile once each (the
float parameters change no types, so every VITS variant shares one compile) and the
runs take milliseconds.
"""

import importlib
import json
import textwrap

import numba
import numpy as np
import pytest
from conftest import requires_gpu, result_under_cuda_simulator
from vits_ref.kernels import logistic_bandit as klogb

import vits_ref as vr
from vits_ref._seeding import child
from vits_ref.bandit import _cuda_simulate, _streams
from vits_ref.bandit.simulate import make_policy
from vits_ref.drivers import cpu
from vits_ref.reference import streams as ref

sim = importlib.import_module("vits_ref.bandit.simulate")

D, K, T, R, SEED = 3, 4, 30, 3, 5
#: eta != lam (and != 1) so that a confusion of the two in a piece changes the bits
EL = {"eta": 2.0, "lam": 0.5}


def _env(reward="logistic", d=D, k=K):
    return vr.envs.hard_instance(d, k, reward=reward, seed=0)


def _vits(**kw):
    return vr.ThompsonSampling(vr.VITS(D, model="logistic", **EL, **kw))


def _lmc(**kw):
    return vr.ThompsonSampling(vr.Langevin(D, model="logistic", **EL, **kw))


def _laplace(**kw):
    return vr.ThompsonSampling(vr.Laplace(D, model="logistic", **{**EL, **kw}))


#: Stable step sizes (none diverges in 3 runs x 30 rounds; each run plays several arms).
#: The decayed steps are h0/(eta t); the constant ones keep h |grad^2 U| = h (eta/4 n +
#: eta lam) below 2 up to n = 30 rounds (unit-norm arms).
POLICIES = {
    "vits-i-decayed": lambda: _vits(variant="I", step_size=0.5, n_steps=3),
    "vits-i-constant": lambda: _vits(variant="I", schedule="constant", step_size=0.1,
                                     n_steps=3),
    "vits-ii-decayed": lambda: _vits(variant="II", step_size=0.5, n_steps=3),
    "vits-ii-constant": lambda: _vits(variant="II", schedule="constant", step_size=0.1,
                                      n_steps=3),
    "vits-hf": lambda: _vits(variant="hessian_free", step_size=0.2, n_steps=3, n_mc=3),
    "vits-hf-sym": lambda: _vits(variant="hessian_free", schedule="constant",
                                 step_size=0.05, cov_step_size=0.02, n_steps=3, n_mc=3,
                                 symmetrize=True),
    # by name, with the documented defaults (eta = lam = 10) but for the sizes
    "vits-hf-cv": lambda: make_policy("vits-hf-cv", D, model="logistic", n_steps=3, n_mc=3),
    "lmc-decayed": lambda: _lmc(step_size=0.5, n_steps=3),
    "lmc-constant": lambda: _lmc(schedule="constant", step_size=0.1, n_steps=3),
    "laplace": lambda: _laplace(),
}
#: One policy of each piece (and the Hessian-free control variate: n_mc > 1).
PIECES = ("vits-ii-decayed", "vits-hf-cv", "lmc-constant", "laplace")


def _simulate(name, **kw):
    kw = {"new_instance_per_run": True, **kw}
    return vr.simulate(POLICIES[name](), _env(), T, kw.pop("n_runs", R), seed=SEED, **kw)


@pytest.fixture(scope="module")
def fused_runs():
    """``fused_runs(name)``: the default fused simulation of ``POLICIES[name]``, computed
    once per module (the reference of the plan tests)."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = _simulate(name)
        return cache[name]

    return get


# --------------------------------------------------------------------------- fused == Python


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_fused_loop_equals_python_loop(fused_runs, name):
    # Exact equality is expected, not equality to rounding: the piece runs the engine's
    # own compiled step body (make_vits_steps / make_langevin_steps / make_newton on the
    # logistic potential, the same bodies the engines' cpu.vits_steps, cpu.langevin_steps
    # and cpu.newton wrap) on the same data views (the first n rows of the history, stored
    # in the same order, so every sum runs in the same order), with the same scratch and
    # cache key, and the same noise (spec.draw draws the engine's streams in the order
    # the engine draws them online). No fastmath anywhere, so the compiler may not
    # reassociate or contract: the same operations give the same bits.
    fused = fused_runs(name)
    python = _simulate(name, fused=False)
    assert fused.fused is True and python.fused is False
    np.testing.assert_array_equal(fused.arms, python.arms)
    np.testing.assert_array_equal(fused.regret, python.regret)
    # the policy did learn and explore: several arms played, not a constant choice
    assert len(np.unique(fused.arms)) > 1 and fused.regret.shape == (R, T)
    assert np.all(np.isfinite(fused.regret)) and np.all(fused.regret >= 0)


def test_the_specs_are_the_logistic_pieces():
    specs = {name: sim.fused_spec(POLICIES[name]()) for name in POLICIES}
    pieces = {name: spec.piece for name, spec in specs.items()}
    assert {pieces[n].name for n in POLICIES if n.startswith("vits")} == {"vits-logistic"}
    assert pieces["lmc-decayed"] is klogb.LANGEVIN_PIECE
    assert pieces["laplace"] is klogb.LAPLACE_PIECE
    # no Gaussian with a closed-form target: no KL
    assert not any(spec.gaussian for spec in specs.values())
    with pytest.raises(ValueError, match="kl_rounds"):
        _simulate("vits-ii-decayed", kl_rounds=[3])


# --------------------------------------------------------------------------- the plan


@pytest.mark.parametrize("name", PIECES)
def test_threads_chunks_and_blocks_give_the_same_rows(fused_runs, monkeypatch, fused_plans,
                                                      name):
    whole = fused_runs(name)
    for n_threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        res = _simulate(name, n_threads=n_threads)
        np.testing.assert_array_equal(res.arms, whole.arms)
        np.testing.assert_array_equal(res.regret, whole.regret)
    # a block of runs (first_run) equals the same rows of one call
    block = _simulate(name, n_runs=2, first_run=1)
    np.testing.assert_array_equal(block.arms, whole.arms[1:])
    np.testing.assert_array_equal(block.regret, whole.regret[1:])
    # chunks of 1 and of 7 rounds (7 divides no horizon here: the last chunk is short and
    # the history in the state buffer crosses every boundary), one run at a time
    spec = sim.fused_spec(POLICIES[name]())
    planned = fused_plans
    for budget, chunk in ((1, 1), (7 * sim._bytes_per_round(spec, D, K), 7)):
        monkeypatch.setattr(sim, "_MEMORY_BUDGET", budget)
        res = _simulate(name, n_threads=1)
        assert planned[-1] == (1, chunk)
        np.testing.assert_array_equal(res.arms, whole.arms)
        np.testing.assert_array_equal(res.regret, whole.regret)


def test_fused_batch_by_chunks_of_seven(fused_runs):
    # the batch function itself, all runs of the batch together, chunks of 7 rounds
    name = "vits-ii-constant"
    whole = fused_runs(name)
    pol = POLICIES[name]()
    root = np.random.SeedSequence(SEED)
    seeds = [child(root, r) for r in range(R)]
    envs = [sim._run_env(_env(), True, s) for s in seeds]
    regret, arms = np.empty((R, T)), np.empty((R, T), dtype=np.int64)
    kl = np.zeros((R, 0))
    chunks = []
    sim._fused_batch(sim.fused_spec(pol), pol.name, envs, seeds, T, 7,
                     np.zeros(0, dtype=np.int64), regret, arms, kl, 0,
                     on_chunk=lambda t1, bufs, ctx: chunks.append(t1))
    assert chunks == [7, 14, 21, 28, 30]
    np.testing.assert_array_equal(arms, whole.arms)
    np.testing.assert_array_equal(regret, whole.regret)


# --------------------------------------------------------------------------- divergence

#: Measured on this instance and seed (3 runs x 30 rounds, first_run 0), the same on both
#: paths: (policy, what the Python engine reports, run, round). "bound": max |B| left the
#: engine's bound while the state was finite (VITS's own detail); "non-finite": the state
#: became non-finite (no detail); "not-spd": the Laplace fit failed.
DIVERGE = {
    # the huge constant step: the square root blows past the bound at once
    "vits-i-huge": (lambda: _vits(variant="I", schedule="constant", step_size=1e4,
                                  n_steps=1), "bound"),
    # run 0 survives: the lowest diverging run is run 1, late (round 28)
    "vits-ii-bound": (lambda: _vits(variant="II", schedule="constant", step_size=0.2,
                                    n_steps=1), "bound"),
    # the last round of the last run
    "vits-ii-last": (lambda: _vits(variant="II", schedule="constant", step_size=0.15,
                                   n_steps=3), "bound"),
    "vits-ii-nonfinite": (lambda: _vits(variant="II", schedule="constant", step_size=0.7,
                                        n_steps=3), "non-finite"),
    "vits-hf-nonfinite": (lambda: _vits(variant="hessian_free", schedule="constant",
                                        step_size=0.4, n_steps=3, n_mc=2), "non-finite"),
    # eta lam = 1 but eta/4 = 2.5e16: the Hessian eta lam I + eta X^T W X is, to rounding,
    # of rank the number of distinct arms played, so Cholesky meets a non-positive pivot
    # (a natural failure: both eta and lam pass the engine's validation)
    "laplace-not-spd": (lambda: _laplace(eta=1e17, lam=1e-17), "not-spd"),
}


# the Laplace case's fits stop at max_iter for a few rounds before the failing one (the
# Python engine warns, the fused loop cannot): expected here
@pytest.mark.filterwarnings("ignore:Laplace.*IRLS did not converge:RuntimeWarning")
@pytest.mark.parametrize("case", sorted(DIVERGE))
def test_divergence_names_the_same_run_and_round(case):
    make, kind = DIVERGE[case]
    pol = make()
    errors = []
    for fused in (None, False):
        with pytest.raises(vr.DivergenceError) as info:
            vr.simulate(pol, _env(), T, R, seed=SEED, new_instance_per_run=True, fused=fused)
        errors.append(info.value)
    f, p = errors
    assert (f.engine, f.run, f.round, f.step_size) == (p.engine, p.run, p.round, p.step_size)
    assert f.engine == pol.engine.name and f.run is not None and 1 <= f.round <= T
    if kind == "bound":  # the state was finite: the engine's bound on max |B| raised
        assert "left its stable range" in p.detail, p
    elif kind == "non-finite":
        assert p.detail == "", p
    else:
        assert "not positive definite" in p.detail and f.step_size is None, p
    if case == "vits-ii-bound":
        assert (f.run, f.round) == (1, 28)  # a later run, late in the run
    if case == "vits-ii-last":
        assert (f.run, f.round) == (2, T)


# --------------------------------------------------------------------------- bad input


def test_binary_rewards_flags_the_logistic_specs():
    logistic = [sim.fused_spec(POLICIES[n]()) for n in POLICIES]
    assert all(spec.binary_rewards for spec in logistic)
    linear = [sim.fused_spec(make_policy(n, D)) for n in sim.POLICY_NAMES]
    linear.append(vr.Langevin(D, schedule="constant").fused())
    assert all(spec is not None and not spec.binary_rewards for spec in linear)
    assert vr.Laplace(D).fused() is None  # no fused Laplace on the linear model


@pytest.fixture
def spy_rounds(monkeypatch):
    """The calls of the compiled fused loop (``cpu.bandit_rounds``, ``cpu.bandit_streams``)."""
    calls = []

    def spying(factory):
        def make(*pieces):
            body = factory(*pieces)

            def run(*args):
                calls.append(args[2] if len(args) > 2 else None)
                return body(*args)

            return run

        return make

    monkeypatch.setattr(cpu, "bandit_rounds", spying(cpu.bandit_rounds))
    monkeypatch.setattr(cpu, "bandit_streams", spying(cpu.bandit_streams))
    return calls


@pytest.mark.parametrize("name", ("vits-ii-decayed", "lmc-decayed", "laplace"))
def test_linear_rewards_are_refused_before_running(spy_rounds, name):
    env = _env("linear")
    pol = POLICIES[name]()
    for kw in ({"fused": True}, {"fused": False}, {"stream": "philox"}):
        got = None
        with pytest.raises(ValueError, match="0 or 1"):
            got = vr.simulate(pol, env, T, R, seed=SEED, **kw)
        assert got is None, kw
    assert spy_rounds == []  # neither compiled loop ran a round


def test_a_bad_reward_in_a_later_chunk_stops_before_that_chunk(spy_rounds, monkeypatch):
    # the check is per chunk: chunks of 7 rounds, the third chunk has a reward 0.5; the
    # two chunks before it ran, the third did not, and simulate returns nothing
    base = _env()

    class Boom(type(base)):
        def realise_chunks(self, n_rounds, rng=None, chunk=1024):
            for i, real in enumerate(super().realise_chunks(n_rounds, rng, chunk)):
                rewards = real.rewards.copy()
                if i == 2:
                    rewards[0, 0] = 0.5
                yield type(real)(real.contexts, real.means, rewards)

    pol = POLICIES["vits-ii-decayed"]()
    monkeypatch.setattr(sim, "_MEMORY_BUDGET",
                        7 * sim._bytes_per_round(pol.fused(), D, K))
    got = None
    with pytest.raises(ValueError, match="0 or 1") as info:
        got = vr.simulate(pol, Boom(**base._params()), T, 1, seed=SEED, n_threads=1)
    assert got is None and "0.5" in str(info.value)
    assert spy_rounds == [0, 7]  # the first rounds (t0) of the chunks that ran


# --------------------------------------------------------------------------- streams


def _predrawn(pol, env, seed, n_runs, first_run=0):
    """The pre-drawn fused loop fed with the reference's arrays of the same runs (the
    pattern of tests/test_streams.py, for a policy object)."""
    spec = pol.fused()
    dims = _streams.noise_dims(spec, env.dim, env.n_arms)
    root = np.random.SeedSequence(seed)
    arrays = [ref.run_arrays(env, ref.run_key(child(root, first_run + r)), T, dims,
                             spec.piece.select_noise) for r in range(n_runs)]
    stacked = [np.stack([a[i] for a in arrays]) for i in range(6)]
    assert set(np.unique(stacked[2])) == {0.0, 1.0}  # Bernoulli rewards
    regret, arms = np.empty((n_runs, T)), np.empty((n_runs, T), dtype=np.int64)
    kl = np.zeros((n_runs, 0))
    status = np.zeros(n_runs, dtype=np.int64)
    bufs = np.empty((n_runs, spec.piece.state_size(env.dim, env.n_arms, dims[5], T)))
    cpu.bandit_rounds(spec.piece)(spec.params, bufs, 0, *stacked,
                                  np.zeros(0, dtype=np.int64), regret, arms, kl, status)
    assert not status.any()
    return regret, arms


@pytest.mark.parametrize("name", PIECES)
def test_philox_equals_predrawn_loop_fed_the_reference(name):
    # bit for bit: both sides compute the normals with the C library's log/cos/sin and the
    # means with the same sigmoid (tests/test_streams.py's docstring)
    pol, env = POLICIES[name](), _env()
    res = vr.simulate(pol, env, T, R, seed=11, first_run=1, stream="philox")
    regret, arms = _predrawn(pol, env, 11, R, first_run=1)
    assert res.fused
    np.testing.assert_array_equal(res.arms, arms)
    np.testing.assert_array_equal(res.regret, regret)
    assert len(np.unique(res.arms)) > 1
    # the same rows whatever the threads, and as a block of one call
    one = vr.simulate(pol, env, T, R + 1, seed=11, stream="philox", n_threads=1)
    np.testing.assert_array_equal(one.arms[1:], res.arms)
    np.testing.assert_array_equal(one.regret[1:], res.regret)
    two = vr.simulate(pol, env, T, R + 1, seed=11, stream="philox",
                      n_threads=min(2, numba.config.NUMBA_NUM_THREADS))
    np.testing.assert_array_equal(two.arms, one.arms)
    np.testing.assert_array_equal(two.regret, one.regret)


# --------------------------------------------------------------------------- CUDA

#: The simulator's cases (policy kwargs per piece): d = 3, K = 3, 3 runs x 10 rounds,
#: 2 steps a round.
SIM = {"D": 3, "K": 3, "T": 10, "R": 3, "seed": 7, "policies": {
    "vits": ["VITS", {"variant": "II", "step_size": 0.5, "n_steps": 2, **EL}],
    "vits-hf-cv": ["VITS", {"variant": "hessian_free", "control_variate": True,
                            "symmetrize": True, "step_size": 0.2, "n_steps": 2, "n_mc": 2,
                            **EL}],
    "lmc": ["Langevin", {"schedule": "constant", "step_size": 0.1, "n_steps": 2, **EL}],
    "laplace": ["Laplace", {**EL}],
}}


def _sim_policy(cls, kw, d):
    return vr.ThompsonSampling(getattr(vr, cls)(d, model="logistic", **kw))


_SIM_SCRIPT = textwrap.dedent("""
    import json, sys, time, warnings
    warnings.simplefilter("ignore")
    import vits_ref as vr
    from vits_ref.bandit import _cuda_simulate

    cfg = json.loads(sys.argv[1])
    env = vr.envs.hard_instance(cfg["D"], cfg["K"], reward="logistic", seed=0)
    out, start = {}, time.perf_counter()
    for name, (cls, kw) in cfg["policies"].items():
        pol = vr.ThompsonSampling(getattr(vr, cls)(cfg["D"], model="logistic", **kw))
        for stream in ("numpy", "philox"):
            res = vr.simulate(pol, env, cfg["T"], cfg["R"], seed=cfg["seed"], first_run=1,
                              device="cuda", stream=stream)
            out[name + "/" + stream] = {"arms": res.arms.tolist(),
                                        "regret": res.regret.tolist(), "fused": res.fused,
                                        "layout": _cuda_simulate.last_layout["layout"],
                                        "piece": pol.fused().piece.name}
    out["seconds"] = time.perf_counter() - start
    print("RESULT" + json.dumps(out))
""")


@pytest.fixture(scope="module")
def simulated():
    """Every simulator case, in one subprocess (NUMBA_ENABLE_CUDASIM=1): about 3 s with
    the start-up (2026-11-23, 2 shared cores; the eight simulations ~1.5 s, reported as
    ``seconds``), so it stays in the default set."""
    return result_under_cuda_simulator(_SIM_SCRIPT, json.dumps(SIM))


@pytest.mark.parametrize("stream", ("numpy", "philox"))
@pytest.mark.parametrize("name", sorted(SIM["policies"]))
def test_cuda_equals_cpu_under_simulator(simulated, name, stream):
    # bit for bit: the simulator runs the same bodies in Python with the same C library
    # (JSON carries floats exactly: repr round-trips a float64)
    cls, kw = SIM["policies"][name]
    env = vr.envs.hard_instance(SIM["D"], SIM["K"], reward="logistic", seed=0)
    cpu_res = vr.simulate(_sim_policy(cls, kw, SIM["D"]), env, SIM["T"], SIM["R"],
                          seed=SIM["seed"], first_run=1, stream=stream)
    got = simulated[name + "/" + stream]
    assert got["fused"] and cpu_res.fused
    np.testing.assert_array_equal(np.array(got["arms"]), cpu_res.arms)
    np.testing.assert_array_equal(np.array(got["regret"]), cpu_res.regret)
    # one run per thread: the logistic pieces are neither block pieces nor block-safe
    assert got["layout"] == "thread"
    assert got["piece"] not in _cuda_simulate.BLOCK_PIECES


@requires_gpu
@pytest.mark.parametrize("stream", ("numpy", "philox"))
@pytest.mark.parametrize("name", sorted(SIM["policies"]))
def test_cuda_equals_cpu_on_gpu(name, stream):
    # a real GPU at a larger size (d = 10, K = 10, 16 runs x 200 rounds). The arms must be
    # equal: the bodies are the same and nvcc's default (no fastmath) keeps IEEE
    # operations. The regret to 1e-12 relative: with stream="numpy" the means are drawn on
    # the host (bit-identical), with "philox" the GPU computes the means through
    # libdevice's exp/log1p/log/cos/sin, which may differ from the CPU's C library by an
    # ulp (and may contract multiply-adds); the atol floor is a few ulps of a mean in
    # (0, 1). Such an ulp could also flip a near-tie of two arms' scores and so an arm: if
    # this test ever fails on the arms, that is the reason to look for first (compare the
    # two scores at the first differing round), not a reason to loosen it.
    cls, kw = SIM["policies"][name]
    d = k = 10
    env = vr.envs.hard_instance(d, k, reward="logistic", seed=0)
    pol = _sim_policy(cls, kw, d)
    runs = {dev: vr.simulate(pol, env, 200, 16, seed=3, device=dev, stream=stream)
            for dev in ("cpu", "cuda")}
    np.testing.assert_array_equal(runs["cuda"].arms, runs["cpu"].arms)
    np.testing.assert_allclose(runs["cuda"].regret, runs["cpu"].regret, rtol=1e-12,
                               atol=1e-15)
    assert len(np.unique(runs["cpu"].arms)) > 1
