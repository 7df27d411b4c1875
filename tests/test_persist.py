"""Save and load without pickle (vits_ref/inference/persist.py).

Every engine and policy of the library is saved mid-run (after some updates), loaded, and
then driven alongside the original: the next draws, selects, updates and diagnostics must
be equal bit for bit (``np.array_equal``, no tolerance: the loaded object must be the
saved one). Damaged files (truncated, of a newer format, with sizes that do not match)
must give a one-line ValueError naming the file before any array is read; objects that
cannot be described without pickle a TypeError.
"""

import json
import os
import zipfile

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.diffusion import DiffusionPrior, GaussianDiffusionPrior
from vits_ref.inference import persist
from vits_ref.inference.base import Engine
from vits_ref.inference.mixts import TunedTS
from vits_ref.models import MLP, BNNClassifier, BNNRegression, Linear, Logistic, WellingTeh
from vits_ref.models.mixture_prior import MixturePrior

# -- data of each model's kind -------------------------------------------------------------


def linear_data(rng, n, d):
    X = rng.standard_normal((n, d))
    return X, X @ np.linspace(1.0, -1.0, d) + 0.1 * rng.standard_normal(n)


def binary_data(rng, n, d):
    return rng.standard_normal((n, d)), (rng.random(n) < 0.5).astype(float)


def welling_teh_data(rng, n, d):
    return np.empty((n, 0)), rng.standard_normal(n)


def label_data(rng, n, d):
    return rng.standard_normal((n, d)), rng.integers(0, 2, n).astype(float)


def _gaussian_prior(d=2):
    return GaussianDiffusionPrior(np.zeros(d), np.eye(d), n_stages=5)


def _learned_prior():
    samples = np.random.default_rng(3).standard_normal((64, 2)) + [1.0, -1.0]
    return DiffusionPrior(2, n_stages=5, hidden=(4, 4), seed=0).fit(samples, epochs=1,
                                                                    progress=False)


def _prior_samples():
    return np.random.default_rng(4).normal([1.0, -1.0], 0.5, size=(50, 2))


_mlp = MLP(3, hidden=(4,), capacity=2)  # capacity 2: the history buffers grow mid-run
_bnn = BNNRegression(2, hidden=3, capacity=2)
_clf = BNNClassifier(2, hidden=3)
_mix = MixturePrior(2, means=[[0.0, 0.0], [1.0, 1.0]], variances=[[1.0, 1.0], [0.5, 0.5]],
                    weights=[0.3, 0.7])

#: name -> (engine factory, data of its model, features' size)
ENGINES = {
    "LinTS": (lambda: vr.LinTS(3, seed=1), linear_data, 3),
    "LinTS-general-prior": (lambda: vr.LinTS(3, model=Linear(3, prior_cov=[1.0, 2.0, 0.5]),
                                             seed=1), linear_data, 3),
    "VITS-I": (lambda: vr.VITS(3, variant="I", n_steps=3, seed=1), linear_data, 3),
    "VITS-II": (lambda: vr.VITS(3, n_steps=3, n_mc=2, seed=1), linear_data, 3),
    "VITS-HF-cv": (lambda: vr.VITS(3, variant="hessian_free", n_steps=3, n_mc=2,
                                   step_size=1e-3, symmetrize=True, control_variate=True,
                                   seed=1), linear_data, 3),
    "VITS-II-theoretical": (lambda: vr.VITS(3, schedule="theoretical", horizon=20,
                                            max_steps=5, seed=1), linear_data, 3),
    "VITS-logistic": (lambda: vr.VITS(3, model=Logistic(3, capacity=2), n_steps=3, seed=1),
                      binary_data, 3),
    "VITS-mlp": (lambda: vr.VITS(_mlp.dim, model=_mlp, lam=10.0, step_size=1e-3,
                                 n_steps=2, seed=1), linear_data, 3),
    "Langevin": (lambda: vr.Langevin(3, n_steps=3, seed=1), linear_data, 3),
    "Langevin-logistic": (lambda: vr.Langevin(3, model="logistic", n_steps=3, seed=1),
                          binary_data, 3),
    "Laplace": (lambda: vr.Laplace(3, seed=1), linear_data, 3),
    "Laplace-logistic": (lambda: vr.Laplace(3, model="logistic", seed=1), binary_data, 3),
    "RenyiVI": (lambda: vr.RenyiVI(3, n_mc=8, n_steps=3, seed=1), linear_data, 3),
    "RenyiVI-mixture-prior": (lambda: vr.RenyiVI(2, model=_mix, n_mc=8, n_steps=3, seed=1),
                              linear_data, 2),
    "SVGD": (lambda: vr.SVGD(3, n_particles=5, n_steps=3, seed=1), linear_data, 3),
    "SVGD-bnn-classifier": (lambda: vr.SVGD(_clf.dim, model=_clf, n_particles=4, n_steps=2,
                                            seed=1), label_data, 2),
    "OPVI": (lambda: vr.OPVI(3, n_particles=5, seed=1), linear_data, 3),
    "OPVI-logistic": (lambda: vr.OPVI(3, model="logistic", n_particles=5, bandwidth=0.5,
                                      seed=1), binary_data, 3),
    "SGLD": (lambda: vr.SGLD(3, model="logistic", n_particles=3, n_steps=2, batch_size=2,
                             schedule="polynomial", seed=1), binary_data, 3),
    "SGLD-welling-teh": (lambda: vr.SGLD(2, model=WellingTeh(capacity=2), n_particles=3,
                                         step_size=1e-2, seed=1), welling_teh_data, 0),
    "SGLD-bnn": (lambda: vr.SGLD(_bnn.dim, model=_bnn, n_particles=2, step_size=1e-4,
                                 seed=1), linear_data, 2),
    "DiffTS": (lambda: vr.DiffTS(_gaussian_prior(), sigma=0.5, seed=1), linear_data, 2),
    "DiffTS-logistic": (lambda: vr.DiffTS(_gaussian_prior(), model="logistic", seed=1),
                        binary_data, 2),
    "DiffTS-learned-prior": (lambda: vr.DiffTS(_learned_prior(), sigma=0.5, seed=1),
                             linear_data, 2),
    "DPS": (lambda: vr.DPS(_gaussian_prior(), seed=1), linear_data, 2),
    "MixTS": (lambda: vr.MixTS([0.3, 0.7], [[-1.0, 0.0], [1.0, 0.0]],
                               [np.eye(2) * 0.5] * 2, sigma=0.5, seed=1), linear_data, 2),
    "TunedTS": (lambda: TunedTS(_prior_samples(), sigma=2.0, seed=1), linear_data, 2),
    "TunedTS-standard": (lambda: TunedTS.standard(2, sigma=2.0, seed=1), linear_data, 2),
    "TunedTS-logistic": (lambda: TunedTS(_prior_samples(), model="logistic", seed=1),
                         binary_data, 2),
}


def _same(a, b, where):
    """Exact equality of draws, states and diagnostics (arrays, dicts, scalars)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(a, b), where
    else:
        assert a == b or (a != a and b != b), (where, a, b)


def _roundtrip(obj, tmp_path, name="saved.npz"):
    path = obj.save(tmp_path / name)
    assert path == tmp_path / name
    # the file is plain NumPy: every member reads without pickle, none is an object array
    with np.load(path, allow_pickle=False) as f:
        assert all(f[k].dtype != object for k in f.files)
    return vr.load(path)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_continues_bit_for_bit_after_load(name, tmp_path):
    make, data, p = ENGINES[name]
    eng = make()
    rng = np.random.default_rng(0)
    for _ in range(3):  # mid-run: updates and draws before the save
        eng.update(*data(rng, 2, p))
        eng.sample(2)
    copy = _roundtrip(eng, tmp_path)
    assert type(copy) is type(eng) and copy is not eng
    _same(dict(copy.diagnostics), dict(eng.diagnostics), "diagnostics")
    for step in range(3):
        batch = data(rng, 2, p)
        eng.update(*batch)
        copy.update(*batch)
        _same(copy.sample(3), eng.sample(3), f"draws after update {step}")
        _same(dict(copy.diagnostics), dict(eng.diagnostics), f"diagnostics {step}")
    assert copy.n_obs == eng.n_obs
    if hasattr(eng, "mean"):
        _same(copy.mean, eng.mean, "mean")


def _engine_classes():
    todo, out = [Engine], set()
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("vits_ref.") and not cls.__name__.startswith("_"):
            out.add(cls)
    # the abstract bases: no engine of their own
    return out - {Engine, vr.inference.GaussianEngine, vr.inference.base.ParticleEngine}


def test_every_engine_class_has_a_save_load_case():
    covered = {type(make()) for make, _, _ in ENGINES.values()}
    missing = sorted(c.__qualname__ for c in _engine_classes() - covered)
    assert not missing, f"engines without a case in ENGINES: {missing}"
    # and each is loadable by its name (the registry's names are unique: it raises if not)
    reg = persist.registry()
    assert all(reg[c.__qualname__] is c for c in covered)


# -- policies -------------------------------------------------------------------------------

POLICIES = {
    "ThompsonSampling-LinTS": lambda: vr.ThompsonSampling(vr.LinTS(3, seed=2)),
    "ThompsonSampling-VITS": lambda: vr.make_policy("vits-ii", 3, seed=2),
    "ThompsonSampling-Laplace-logistic": lambda: vr.ThompsonSampling(
        vr.Laplace(3, model="logistic", seed=2)),
    "LinUCB": lambda: vr.LinUCB(3, alpha=0.5, lam=2.0),
    "EpsilonGreedy": lambda: vr.EpsilonGreedy(3, epsilon=0.5, lam=2.0, seed=2),
    "RandomPolicy": lambda: vr.RandomPolicy(3, seed=2),
    "RandomPolicy-no-dim": lambda: vr.RandomPolicy(seed=np.random.SeedSequence(7)),
    "PerArm": lambda: vr.PerArm(vr.LinTS(3), n_arms=2, seed=2),
    "PerArm-VITS": lambda: vr.PerArm(vr.VITS(3, n_steps=2), n_arms=2, seed=2),
    "VTS": lambda: vr.VTS(3, n_arms=2, n_components=2, seed=2),
    "NIGTS": lambda: vr.NIGTS(3, n_arms=2, seed=2),
}
BINARY_POLICIES = {"ThompsonSampling-Laplace-logistic"}


def _rounds(rng, n, binary):
    X = rng.standard_normal((n, 2, 3))
    rewards = ((rng.random(n) < 0.5).astype(float) if binary
               else rng.standard_normal(n))
    return X, rewards


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_continues_bit_for_bit_after_load(name, tmp_path):
    pol = POLICIES[name]()
    rng = np.random.default_rng(0)
    binary = name in BINARY_POLICIES
    # 40 rounds of 2 arms: one of VTS's arms passes its first capacity (16 rows)
    X, r = _rounds(rng, 40, binary)
    for x, reward in zip(X, r, strict=True):
        pol.update(x, pol.select(x), reward)
    copy = _roundtrip(pol, tmp_path)
    assert type(copy) is type(pol)
    X, r = _rounds(rng, 10, binary)
    for t, (x, reward) in enumerate(zip(X, r, strict=True)):
        arm = pol.select(x)
        assert copy.select(x) == arm, f"round {t}"
        pol.update(x, arm, reward)
        copy.update(x, arm, reward)
    for attr in ("n_obs", "diagnostics"):
        if hasattr(pol, attr):
            _same(getattr(copy, attr), getattr(pol, attr), attr)


def test_policy_classes_are_covered():
    classes = {type(make()) for make in POLICIES.values()}
    assert classes >= {vr.ThompsonSampling, vr.LinUCB, vr.EpsilonGreedy, vr.RandomPolicy,
                       vr.PerArm, vr.VTS, vr.NIGTS}


def test_a_generator_seed_saves_its_streams(tmp_path):
    """A Generator given as the seed is not described (its seed sequence is not saved) but
    the streams' states are: the draws continue."""
    eng = vr.LinTS(2, seed=np.random.default_rng(5)).update(np.eye(2), np.ones(2))
    copy = _roundtrip(eng, tmp_path)
    assert copy.seed is None
    _same(copy.sample(4), eng.sample(4), "draws")


def test_fresh_keeps_a_model_given_by_name():
    """model="mlp": the engine's dim is the network's parameter count, the model is built
    from the features' size; fresh (and load) rebuild the same network."""
    eng = vr.VITS(3, model="mlp", seed=0)
    again = eng.fresh(1)
    assert (again.dim, again.model.input_dim, again.model.hidden) == (eng.dim, 3, (20, 20))


# -- damaged files ------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    eng = vr.LinTS(3, seed=1).update(np.eye(3), np.ones(3))
    return eng.save(tmp_path / "lints.npz")


def _rewrite(path, out, header=None, members=None):
    """Copy the zip at ``path`` to ``out``, editing the header JSON and replacing members'
    bytes."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "header.npy" and header is not None:
                with src.open(info.filename) as f:
                    head = json.loads(str(np.lib.format.read_array(f)[()]))
                header(head)
                buf = _npy(np.array(json.dumps(head)))
                data = buf
            if members and info.filename in members:
                data = members[info.filename]
            dst.writestr(info.filename, data)
    return out


def _npy(a):
    import io

    f = io.BytesIO()
    np.lib.format.write_array(f, a, allow_pickle=False)
    return f.getvalue()


def _member_of(path, what):
    """The member holding the LinTS's factor L (the array described at state.L)."""
    with zipfile.ZipFile(path) as z, z.open("header.npy") as f:
        head = json.loads(str(np.lib.format.read_array(f)[()]))
    return head["object"]["state"][what]["array"]


def _error(path):
    with pytest.raises(ValueError) as info:
        vr.load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    return msg


def test_truncated_file(saved, tmp_path):
    data = open(saved, "rb").read()
    for cut in (len(data) // 2, len(data) - 10, 100):
        out = tmp_path / f"cut{cut}.npz"
        out.write_bytes(data[:cut])
        assert "truncated" in _error(out)


def test_not_a_save_file(tmp_path):
    out = tmp_path / "x.npz"
    out.write_bytes(b"not a zip at all")
    assert "truncated" in _error(out)
    np.savez(tmp_path / "y.npz", a=np.zeros(3))
    assert "header" in _error(tmp_path / "y.npz")


def test_newer_format(saved, tmp_path):
    out = _rewrite(saved, tmp_path / "v2.npz",
                   header=lambda h: h.update(version=persist.FORMAT_VERSION + 1))
    msg = _error(out)
    assert "newer" in msg and f"version {persist.FORMAT_VERSION + 1}" in msg


def test_array_that_differs_from_its_header(saved, tmp_path):
    key = _member_of(saved, "L")
    out = _rewrite(saved, tmp_path / "shape.npz", members={f"{key}.npy": _npy(np.eye(2))})
    assert "but its header says" in _error(out)


def test_member_whose_size_does_not_match(saved, tmp_path):
    key = _member_of(saved, "L")
    data = _npy(np.eye(3))
    out = _rewrite(saved, tmp_path / "size.npz", members={f"{key}.npy": data + b"\0" * 8})
    assert "bytes" in _error(out)


def test_huge_claimed_array_is_refused_before_allocation(saved, tmp_path):
    """A header (and .npy header) claiming 10^12 x 10^12 doubles: refused from the zip
    directory's sizes, never allocated (a MemoryError would be the failure)."""
    key = _member_of(saved, "L")
    huge = (10 ** 12, 10 ** 12)
    head = np.lib.format.header_data_from_array_1_0(np.eye(3))
    head["shape"] = huge
    import io

    f = io.BytesIO()
    np.lib.format.write_array_header_2_0(f, head)
    out = _rewrite(saved, tmp_path / "huge.npz",
                   header=lambda h: h["arrays"][key].__setitem__(1, list(huge)),
                   members={f"{key}.npy": f.getvalue() + np.eye(3).tobytes()})
    assert "bytes" in _error(out)


def test_state_that_does_not_fit_the_hyperparameters(saved, tmp_path):
    """The file is consistent with itself but its L is 4 x 4 for a dim-3 engine."""
    key = _member_of(saved, "L")
    out = _rewrite(saved, tmp_path / "dim.npz",
                   header=lambda h: h["arrays"][key].__setitem__(1, [4, 4]),
                   members={f"{key}.npy": _npy(np.eye(4))})
    assert "built from the saved hyperparameters" in _error(out)


def test_count_beyond_its_buffer(tmp_path):
    """n_obs larger than the history buffer would make the compiled kernels read past it."""
    eng = vr.Laplace(2, model="logistic", seed=0).update(np.eye(2), np.ones(2))
    path = eng.save(tmp_path / "lap.npz")

    def bump(h):
        h["object"]["state"]["model"]["state"]["n_obs"] = 10 ** 6

    msg = _error(_rewrite(path, tmp_path / "count.npz", header=bump))
    assert "n_obs" in msg and "does not fit" in msg


def test_unknown_class(saved, tmp_path):
    out = _rewrite(saved, tmp_path / "kind.npz",
                   header=lambda h: h["object"].update(object="os.system"))
    assert "unknown class" in _error(out)


# -- what cannot be saved -------------------------------------------------------------------


class UserLinear(Linear):
    """A user's model (outside the library): not describable without pickle."""


class UserPolicy:
    name, dim = "user", 2

    def select(self, contexts):
        return 0

    def update(self, contexts, arm, reward):
        return self

    def fresh(self, seed=None):
        return self


def test_user_objects_raise_type_error(tmp_path):
    with pytest.raises(TypeError, match="UserLinear.*without pickle"):
        vr.LinTS(2, model=UserLinear(2), seed=0).save(tmp_path / "a.npz")
    with pytest.raises(TypeError, match="UserPolicy.*without pickle"):
        vr.Bandit(UserPolicy()).save(tmp_path / "b.npz")
    eng = vr.LinTS(2, seed=0)
    eng.diagnostics["callback"] = print  # a callable in the state
    with pytest.raises(TypeError, match="callable"):
        eng.save(tmp_path / "c.npz")
    assert not os.listdir(tmp_path)  # nothing written, no temporary left behind
