"""The written-down contracts: policies, engines, experiments, pieces' parameters.

- every policy class (the library's, VTS and NIGTS included, and the Rényi experiment's)
  satisfies :class:`vits_ref.bandit.protocols.Policy`, with the documented signatures;
  those with a fused loop also :class:`~vits_ref.bandit.protocols.FusedPolicy`; an object
  missing a method does not;
- every engine class is an :class:`~vits_ref.inference.base.Engine` with the protocol's
  signatures, and its ``diagnostics`` is a :class:`~vits_ref.inference.base.Diagnostics`
  holding documented keys only; the old keys stay readable, with a DeprecationWarning;
- every registered experiment satisfies :class:`vits_ref.experiments.Experiment` and
  refuses a ``progress`` it cannot call before any work;
- every fused piece declares its parameters' NamedTuple and every spec carries one;
- DiffTS and DPS take the same arguments in the same order.
"""

import inspect
import types

import numpy as np
import pytest
from vits_ref.kernels import bandit as kbandit
from vits_ref.kernels import langevin as klangevin
from vits_ref.kernels import lints as klints
from vits_ref.kernels import linucb as klinucb
from vits_ref.kernels import logistic_bandit as klogb
from vits_ref.kernels import vits as kvits

import vits_ref as vr
from vits_ref.bandit.protocols import FusedPolicy, Policy
from vits_ref.drivers.fused import FusedSpec
from vits_ref.experiments import EXPERIMENTS, Experiment
from vits_ref.experiments.renyi.mab import RenyiArms, arm_engines
from vits_ref.inference.base import Diagnostics, Engine, GaussianEngine, ParticleEngine

# --------------------------------------------------------------------------- policies


def _policies():
    """label -> (policy, has a fused loop)."""
    return {
        "ThompsonSampling": (vr.ThompsonSampling(vr.LinTS(2, seed=0)), True),
        "LinUCB": (vr.LinUCB(2), True),
        "EpsilonGreedy": (vr.EpsilonGreedy(2, seed=0), False),
        "RandomPolicy": (vr.RandomPolicy(2, seed=0), True),
        "PerArm": (vr.PerArm(vr.LinTS(2), n_arms=3, seed=0), False),
        "VTS": (vr.VTS(2, n_arms=3, seed=0), False),
        "NIGTS": (vr.NIGTS(2, n_arms=3, seed=0), False),
        "RenyiArms": (RenyiArms(arm_engines(alpha=1.0, n_steps=1, n_mc=5), seed=0), False),
    }


POLICIES = _policies()


def _names(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("label", sorted(POLICIES))
def test_every_policy_satisfies_the_policy_protocol(label):
    pol, fused = POLICIES[label]
    assert isinstance(pol, Policy)
    assert isinstance(pol, FusedPolicy) is fused
    assert isinstance(pol.name, str) and pol.dim in (None, 1, 2)
    # the names matter: simulate and the docs call them by position, users by keyword
    assert _names(pol.select) == ["contexts"]
    assert _names(pol.update) == ["contexts", "arm", "reward"]
    fresh = inspect.signature(pol.fresh).parameters
    assert list(fresh) == ["seed"] and fresh["seed"].default is None
    if fused:
        kl = inspect.signature(pol.fused).parameters
        assert list(kl) == ["kl"] and kl["kl"].default is False
    # fresh gives the same kind of policy, which plays
    new = pol.fresh(1)
    assert type(new) is type(pol) and isinstance(new, Policy)
    X = np.ones((3, pol.dim or 2)) if label != "RenyiArms" else np.ones((3, 1))
    arm = new.select(X)
    assert 0 <= arm < 3 and new.update(X, arm, 1.0) is new


def test_vts_is_a_policy_not_an_engine():
    pol = vr.VTS(2, n_arms=2, seed=0)
    assert isinstance(pol, Policy) and not isinstance(pol, Engine)
    assert "Policy" in type(pol).__doc__
    assert isinstance(pol.diagnostics, Diagnostics)
    pol.update(np.ones(2), pol.select(np.ones(2)), 1.0)
    assert set(pol.diagnostics) <= set(Diagnostics.KEYS)


class _NoFresh:
    name, dim = "no fresh", 2

    def select(self, contexts):
        return 0

    def update(self, contexts, arm, reward):
        return self


class _Complete(_NoFresh):
    def fresh(self, seed=None):
        return self


def test_an_object_missing_a_member_is_not_a_policy():
    assert not isinstance(_NoFresh(), Policy)
    assert isinstance(_Complete(), Policy) and not isinstance(_Complete(), FusedPolicy)
    assert not isinstance(types.SimpleNamespace(select=len, update=len, fresh=len, dim=2),
                          Policy)
    assert not isinstance(vr.LinTS(2), Policy)  # an engine has no select


def test_simulate_plays_a_policy_of_ones_own():
    env = vr.envs.pool(dim=2, n_arms=3, zeta=1.0, seed=0)
    res = vr.simulate(_Complete(), env, n_rounds=3, n_runs=1, seed=0)
    assert res.arms.shape == (1, 3) and np.all(res.arms == 0)


# --------------------------------------------------------------------------- engines


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


# the abstract bases (a Gaussian, a particle cloud) are not engines
ENGINE_CLASSES = sorted({c for c in _subclasses(Engine)
                         if c.__module__.startswith("vits_ref.inference")
                         and not c.__name__.startswith("_")
                         and c not in (GaussianEngine, ParticleEngine)},
                        key=lambda c: c.__name__)


def test_engine_classes_found():
    names = {c.__name__ for c in ENGINE_CLASSES}
    assert {"LinTS", "VITS", "Langevin", "Laplace", "RenyiVI", "SGLD", "SVGD", "OPVI",
            "DiffTS", "DPS", "MixTS"} <= names
    assert "VTS" not in names  # a policy (see above)


@pytest.mark.parametrize("cls", ENGINE_CLASSES, ids=lambda c: c.__name__)
def test_every_engine_has_the_protocol_signatures(cls):
    assert _names(cls.update) == ["self", "features", "rewards"]
    sample = inspect.signature(cls.sample).parameters
    assert list(sample) == ["self", "n"] and sample["n"].default == 1
    fresh = inspect.signature(cls.fresh).parameters
    assert list(fresh) == ["self", "seed"] and fresh["seed"].default is None
    fused = inspect.signature(cls.fused).parameters
    assert list(fused) == ["self", "kl"] and fused["kl"].default is False
    init = inspect.signature(cls.__init__).parameters
    assert "seed" in init and init["seed"].default is None
    if issubclass(cls, GaussianEngine):
        assert isinstance(inspect.getattr_static(cls, "mean"), property)
        assert isinstance(inspect.getattr_static(cls, "cov"), property)


def _diffusion_prior():
    return vr.diffusion.GaussianDiffusionPrior(np.zeros(2), np.eye(2), n_stages=5)


#: label -> engine factory (tiny sizes: the point is the diagnostics' keys)
ENGINE_FACTORIES = {
    "LinTS": lambda: vr.LinTS(2, seed=0),
    "VITS": lambda: vr.VITS(2, n_steps=2, seed=0),
    "VITS-theoretical": lambda: vr.VITS(2, schedule="theoretical", horizon=10, max_steps=3,
                                        seed=0),
    "Langevin": lambda: vr.Langevin(2, n_steps=2, seed=0),
    "Laplace": lambda: vr.Laplace(2, model="logistic", seed=0),
    "RenyiVI": lambda: vr.RenyiVI(2, n_mc=5, n_steps=2, seed=0),
    "SGLD": lambda: vr.SGLD(2, model="logistic", n_steps=2, n_particles=2, seed=0),
    "SVGD": lambda: vr.SVGD(2, n_particles=3, n_steps=2, seed=0),
    "OPVI": lambda: vr.OPVI(2, n_particles=3, n_steps=2, seed=0),
    "DiffTS": lambda: vr.DiffTS(_diffusion_prior(), seed=0),
    "DiffTS-logistic": lambda: vr.DiffTS(_diffusion_prior(), "logistic", seed=0),
    "DPS": lambda: vr.DPS(_diffusion_prior(), seed=0),
    "MixTS": lambda: vr.MixTS([0.5, 0.5], np.array([[1.0, 0.0], [-1.0, 0.5]]),
                              np.stack([np.eye(2), 0.5 * np.eye(2)]), seed=0),
    "TunedTS": lambda: vr.TunedTS(np.random.default_rng(0).standard_normal((20, 2))),
}


def test_every_engine_class_has_a_factory():
    made = {type(f()).__name__ for f in ENGINE_FACTORIES.values()}
    assert {c.__name__ for c in ENGINE_CLASSES} - made <= {"StandardTS", "TunedLaplace"}


@pytest.mark.parametrize("label", sorted(ENGINE_FACTORIES))
def test_engines_set_documented_diagnostics_only(label):
    eng = ENGINE_FACTORIES[label]()
    assert isinstance(eng, Engine) and isinstance(eng.name, str)
    assert type(eng.diagnostics) is Diagnostics and eng.diagnostics["n_obs"] == 0
    assert set(eng.diagnostics) <= set(Diagnostics.KEYS)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    eng.update(X, np.array([1.0, 0.0, 1.0]))
    eng.sample(2)  # DiffTS sets its keys in sample
    assert type(eng.diagnostics) is Diagnostics and eng.diagnostics["n_obs"] == 3
    assert set(eng.diagnostics) <= set(Diagnostics.KEYS), set(eng.diagnostics)
    assert type(eng.fresh(1).diagnostics) is Diagnostics


def test_a_failed_update_restores_the_diagnostics():
    # the generic snapshot of Engine.update's transaction copies the Diagnostics dict
    eng = vr.SVGD(2, n_particles=3, n_steps=2, seed=0).update(np.eye(2), np.ones(2))
    before = dict(eng.diagnostics)
    eng.step_size = 1e300
    with pytest.raises(vr.DivergenceError):
        eng.update(np.eye(2), np.ones(2))
    assert eng.diagnostics == before and type(eng.diagnostics) is Diagnostics


def test_diagnostics_keys_are_documented():
    doc = Diagnostics.__doc__
    for key in Diagnostics.KEYS:
        assert f"``{key}``" in doc, key
    for old, new in Diagnostics.ALIASES.items():
        assert new in Diagnostics.KEYS and old not in Diagnostics.KEYS
        assert f"``{old}``" in doc
    assert "Diagnostics" in inspect.getmodule(Engine).__doc__


@pytest.mark.parametrize("old, new, make", [
    ("irls_iterations", "newton_iterations", ENGINE_FACTORIES["Laplace"]),
    ("steps", "total_steps", ENGINE_FACTORIES["SVGD"]),
    ("adam_steps", "total_steps", ENGINE_FACTORIES["RenyiVI"]),
])
def test_old_diagnostics_keys_stay_readable(old, new, make):
    eng = make().update(np.eye(2), np.ones(2))
    d = eng.diagnostics
    assert old in d and old not in set(d) and new in set(d)
    with pytest.warns(DeprecationWarning, match=f"read diagnostics\\['{new}'\\]"):
        assert d[old] == d[new]
    with pytest.warns(DeprecationWarning):
        assert d.get(old) == d[new]
    assert d.get("no such key", 7) == 7
    with pytest.raises(KeyError):
        d["no such key"]


# --------------------------------------------------------------------------- experiments


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_satisfies_the_experiment_protocol(name):
    mod = EXPERIMENTS[name]
    assert isinstance(mod, Experiment)
    assert mod.NAME == name and isinstance(mod.DESCRIPTION, str) and mod.DESCRIPTION
    assert {"runs", "rounds", "seed"} <= set(mod.DEFAULTS)
    params = list(inspect.signature(mod.run).parameters.values())
    assert [p.name for p in params[:5]] == ["runs", "rounds", "seed", "out", "progress"]
    # the CLI passes the DEFAULTS (or PAPER_SIZE) and out/progress; the rest need defaults
    assert all(p.default is not inspect.Parameter.empty or p.kind is p.VAR_KEYWORD
               for p in params[5:])
    assert set(getattr(mod, "PAPER_SIZE", {})) <= {"runs", "rounds", "seed"}
    # table(result): the CLI passes the result alone (a shared table may take options
    # with defaults, e.g. regret_table's ``why``)
    table_params = list(inspect.signature(mod.table).parameters.values())
    assert table_params[0].name == "result"
    assert all(p.default is not inspect.Parameter.empty for p in table_params[1:])
    # one rule: an experiment's claims are the claim table's, not a member of its module
    assert not hasattr(mod, "claims")


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_refuses_a_progress_it_cannot_call_before_any_work(name, tmp_path):
    """``progress=True`` (a flag where a callable is expected) is a TypeError naming it,
    raised before anything is computed or written (it used to fail at the first message,
    after a tuning or a prior's training for some)."""
    out = tmp_path / "out"
    with pytest.raises(TypeError, match="progress must be None or a callable"):
        EXPERIMENTS[name].run(1, 2, 0, str(out), True)
    assert not out.exists()


def test_a_module_missing_a_member_is_not_an_experiment():
    complete = types.SimpleNamespace(NAME="x", DESCRIPTION="x", DEFAULTS={}, run=len,
                                     table=len)
    assert isinstance(complete, Experiment)
    del complete.table
    assert not isinstance(complete, Experiment)


# --------------------------------------------------------------------------- fused pieces


PIECE_PARAMS = {
    klints.PIECE: klints.LinTSParams, klinucb.PIECE: klinucb.LinUCBParams,
    kvits.PIECE: kvits.VITSParams, klangevin.PIECE: klangevin.LangevinParams,
    kbandit.RANDOM: kbandit.RandomParams, klogb.VITS_PIECE: kvits.VITSParams,
    klogb.LANGEVIN_PIECE: klangevin.LangevinParams, klogb.LAPLACE_PIECE: klogb.LaplaceParams,
}


@pytest.mark.parametrize("piece", list(PIECE_PARAMS), ids=lambda p: p.name)
def test_every_piece_declares_its_params_namedtuple(piece):
    nt = PIECE_PARAMS[piece]
    assert piece.params_type is nt
    assert issubclass(nt, tuple) and nt._fields and nt.__doc__


@pytest.mark.parametrize("name", vr.POLICY_NAMES)
def test_every_fused_spec_carries_its_pieces_namedtuple(name):
    spec = vr.make_policy(name, 3).fused(kl=True)
    assert type(spec.params) is spec.piece.params_type
    # built by field name: the NamedTuple's fields are the values the engine holds
    assert spec.params == spec.piece.params_type(**spec.params._asdict())


@pytest.mark.parametrize("make", [
    lambda: vr.ThompsonSampling(vr.VITS(3, model="logistic", n_steps=1)),
    lambda: vr.ThompsonSampling(vr.Langevin(3, model="logistic", n_steps=1)),
    lambda: vr.ThompsonSampling(vr.Laplace(3, model="logistic")),
], ids=["vits-logistic", "lmc-logistic", "laplace-logistic"])
def test_logistic_specs_carry_their_namedtuple(make):
    spec = make().fused()
    assert type(spec.params) is spec.piece.params_type


def test_fused_spec_refuses_a_plain_tuple():
    spec = vr.LinUCB(2).fused()
    with pytest.raises(TypeError, match=r"LinUCBParams\(alpha=..., lam=...\)"):
        FusedSpec(spec.piece, tuple(spec.params), spec.draw)
    with pytest.raises(TypeError, match="NamedTuple class"):
        kbandit.BanditPiece("bad", *(lambda *a: 0,) * 6, params_type=tuple)


# --------------------------------------------------------------------------- DiffTS / DPS


def test_diffts_and_dps_take_the_same_arguments_in_the_same_order():
    a = inspect.signature(vr.DiffTS).parameters
    b = inspect.signature(vr.DPS).parameters
    assert list(a)[:3] == list(b)[:3] == ["prior", "model", "sigma"]
    assert list(a)[-1] == list(b)[-1] == "seed"
    for p in (a, b):
        assert p["model"].default == "linear" and p["sigma"].default == 1.0
        assert p["seed"].kind is inspect.Parameter.KEYWORD_ONLY
    assert [n for n in a if n not in b] == ["tol", "max_iter"]
    prior = _diffusion_prior()
    for cls in (vr.DiffTS, vr.DPS):
        eng = cls(prior, "linear", 0.5, seed=3)
        assert eng.sigma == 0.5 and eng.model.name == "linear"
        # the former DPS order (prior, sigma, ...) is refused, not misread
        with pytest.raises(TypeError, match=r"pass sigma by keyword"):
            cls(prior, 0.5)
