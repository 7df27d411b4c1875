"""The library's shared interfaces: pieces, factories, engine signatures, clear errors.

- every policy's fused-loop piece carves exactly ``state_size`` entries from its buffer;
- steps are built once per (step, potential) and loops once per piece (cached factories);
- every engine's constructor reads ``(dim, model="linear", eta=1.0, lam=1.0, ..., seed=None)``;
- ``kl_to_posterior`` names the model when no closed form exists; ``model="mlp"`` works.
"""

import inspect

import numpy as np
import pytest
from vits_ref.kernels import bandit, langevin, lints, linucb, logistic_bandit, vits
from vits_ref.kernels.linear import POTENTIAL as LINEAR
from vits_ref.kernels.logistic import POTENTIAL as LOGISTIC

import vits_ref as vr
from vits_ref.drivers import cpu

PIECES = (vits.PIECE, lints.PIECE, linucb.PIECE, langevin.PIECE, bandit.RANDOM,
          logistic_bandit.VITS_PIECE, logistic_bandit.LANGEVIN_PIECE,
          logistic_bandit.LAPLACE_PIECE)


def _arrays(state):
    """The arrays of a state tuple, nested tuples (the logistic pieces' scratch) included."""
    for a in state:
        if isinstance(a, tuple):
            yield from _arrays(a)
        else:
            yield a


@pytest.mark.parametrize("piece", PIECES, ids=lambda p: p.name)
@pytest.mark.parametrize("d, K, M, T", [(1, 1, 1, 1), (3, 7, 2, 5), (20, 50, 20, 30)])
def test_views_use_exactly_state_size(piece, d, K, M, T):
    n = piece.state_size(d, K, M, T)
    buf = np.arange(float(n))
    state, used = piece.views(buf, d, K, M, T)
    assert used == n
    # the views tile the buffer: every entry belongs to exactly one array
    seen = np.concatenate([np.ravel(a) for a in _arrays(state)]) if n else np.zeros(0)
    assert np.array_equal(np.sort(seen), buf)


def test_factories_build_once_per_potential_and_piece():
    assert cpu.vits_steps(LINEAR) is cpu.vits_steps(LINEAR)
    assert cpu.vits_steps(LINEAR) is not cpu.vits_steps(LOGISTIC)
    assert cpu.newton(LOGISTIC) is cpu.newton(LOGISTIC)
    assert cpu.bandit_runs(vits.PIECE) is cpu.bandit_runs(vits.PIECE)
    assert cpu.bandit_runs(vits.PIECE) is not cpu.bandit_runs(lints.PIECE)


ENGINES = (vr.LinTS, vr.VITS, vr.Langevin, vr.Laplace, vr.RenyiVI)


@pytest.mark.parametrize("cls", ENGINES, ids=lambda c: c.__name__)
def test_engine_constructors_share_their_order_and_defaults(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    names = [p.name for p in params]
    assert names[:4] == ["dim", "model", "eta", "lam"]
    assert names[-1] == "seed" and params[-1].default is None
    assert [p.default for p in params[1:4]] == ["linear", 1.0, 1.0]


def test_policies_take_no_ignored_argument():
    assert "seed" not in inspect.signature(vr.LinUCB).parameters


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_kl_to_posterior_names_the_model_without_closed_form(model):
    eng = vr.VITS(3, model=model, seed=0)
    with pytest.raises(ValueError, match=f"'{model}' model has none"):
        eng.kl_to_posterior()


def test_mlp_by_name():
    eng = vr.VITS(4, model="mlp", lam=10.0, step_size=1e-3, n_steps=2, seed=0)
    assert eng.model.input_dim == 4 and eng.dim == eng.model.dim == 4 * 20 + 20 + 400 + 20 + 21
    rng = np.random.default_rng(0)
    eng.update(rng.standard_normal((5, 4)), rng.standard_normal(5))
    pol = vr.ThompsonSampling(eng)
    assert 0 <= pol.select(rng.standard_normal((6, 4))) < 6


def test_fused_only_where_it_exists():
    assert vr.VITS(3).fused() is not None
    assert vr.VITS(3, model="logistic").fused().piece.name == "vits-logistic"
    assert vr.VITS(3, model="mlp").fused() is None
    assert vr.VITS(3, schedule="theoretical", horizon=10).fused() is None
    assert vr.Laplace(3).fused() is None  # linear Laplace is LinTS, which has its own
    assert vr.Laplace(3, model="logistic").fused().piece.name == "laplace-logistic"
    assert vr.Langevin(3, model="logistic").fused().piece.name == "lmc-logistic"
    general = vr.models.Logistic(3, prior_mean=np.ones(3), prior_cov=np.eye(3))
    assert vr.VITS(3, model=general).fused() is None
    assert vr.Laplace(3, model=general).fused() is None
    prior = vr.models.Linear(3, prior_mean=np.ones(3), prior_cov=np.eye(3))
    assert vr.LinTS(3, model=prior).fused() is None
