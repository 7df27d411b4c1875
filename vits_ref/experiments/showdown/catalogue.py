"""What the showdown runs: its environments and its methods, each at one stated point.

Every method runs at one point on every environment, never tuned per environment (a
tuned showdown would need a tuning budget per method and environment; the table reads as
"the library's defaults"): the VITS paper's grid point of ``vits-fig1``
(:data:`vits_ref.bandit.simulate.POLICY_DEFAULTS`: ``eta = 10``, ``lam = 10``, decayed
steps), the particle engines at the points of ``vits-fig1`` (linear model) and
``vits-figG`` (logistic model), the other engines at their own defaults with the same
``eta`` and ``lam``. On an environment whose rewards are 0 or 1 every engine that has
the logistic model uses it; LinTS and LinUCB keep their linear-Gaussian model
(misspecified there, as in ``vits-figG``), VTS its Gaussian mixtures.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...bandit.policies import ThompsonSampling
from ...bandit.simulate import POLICY_DEFAULTS, make_policy
from ...envs import hard_instance, pool, sklearn_bandit, wheel

__all__ = ["DIFFTS_GAUSSIAN", "ENVIRONMENTS", "ETA", "LAM", "LINFULLPOST", "LINFULLPOST_POINT",
           "METHODS", "SIZES", "UNIFORM", "WHEELS", "WHEEL_DELTAS", "Method", "NotApplicable",
           "Setting", "model_for"]

#: The temperature and ridge of every method (the grid point of ``vits-fig1``).
ETA = POLICY_DEFAULTS["lints"]["eta"]
LAM = POLICY_DEFAULTS["lints"]["lam"]
#: Stages of DiffTS's reverse chain (Kveton et al. use 100; the chain's cost grows with
#: them, and with an exact Gaussian prior the chain samples the prior exactly at any number
#: of stages, :class:`vits_ref.diffusion.GaussianDiffusionPrior`).
DIFFTS_STAGES = 20
#: The wheel's exploration parameters in Riquelme, Tucker and Snoek's wheel comparison
#: (Section 5.4), the values the wheel benchmarks built on their code use (Edward2's
#: ``experimental/attentive_uncertainty/contextual_bandits`` wheel script).
WHEEL_DELTAS = (0.5, 0.7, 0.9, 0.95, 0.99)
#: The label of the uniformly random policy, the reference of the wheel's normalised table.
UNIFORM = "Uniform"
#: The label of Kveton et al.'s DiffTS chain as the showdown runs it: over the exact
#: diffusion model of the other engines' Gaussian prior, not over a learned prior.
DIFFTS_GAUSSIAN = "DiffTS chain (Gaussian prior)"
#: The label of Riquelme et al.'s exact linear baseline: per-arm Bayesian linear regression
#: with the noise variance learned (normal-inverse-gamma), their ``LinFullPost``.
LINFULLPOST = "LinFullPost (NIG-TS)"
#: Its point in the authors' code (``example_main.py`` of
#: ``tensorflow/models/research/deep_contextual_bandits``: ``a0 = b0 = 6``,
#: ``lambda_prior = 0.25``): ``s2 ~ InvGamma(a0, b0)``, ``w | s2 ~ N(0, s2 I / lambda_prior)``.
LINFULLPOST_POINT = {"a0": 6.0, "b0": 6.0, "lambda_prior": 0.25}


@dataclass(frozen=True)
class Setting:
    """An environment of the showdown: ``make(seed)`` builds it; ``binary``: rewards are
    0 or 1 (the engines that have it use the logistic model, which has no closed-form
    posterior, so no KL); ``note``: what it is, for the page."""

    key: str
    title: str
    make: Callable
    binary: bool
    note: str


ENVIRONMENTS = {s.key: s for s in (
    Setting("pool", "linear pool (d = 20, K = 50, zeta = 0.1)",
            lambda seed: pool(dim=20, n_arms=50, zeta=0.1, reward="linear", seed=seed), False,
            "vits-fig1's ill-conditioned panel: shared theta*, linear rewards, a new instance "
            "per run"),
    Setting("logistic", "logistic hard instance (d = K = 10)",
            lambda seed: hard_instance(dim=10, n_arms=10, reward="logistic", seed=seed), True,
            "vits-figG's logistic panel: Bernoulli(sigmoid(x theta*)) rewards, fixed arms, a "
            "new instance per run"),
    *(Setting(f"wheel-{delta}", f"wheel (delta = {delta})",
              (lambda seed, delta=delta: wheel(delta=delta, seed=seed)), False,
              f"Riquelme et al.'s wheel at delta = {delta}: (x1, x2, 1) in the disjoint "
              "encoding, d = 15, K = 5")
      for delta in WHEEL_DELTAS),
    Setting("wine", "wine (K = 3)",
            lambda seed: sklearn_bandit("wine", seed=seed), True,
            "scikit-learn's wine: 13 standardised features + intercept, disjoint encoding, "
            "d = 42"),
    Setting("breast_cancer", "breast cancer (K = 2)",
            lambda seed: sklearn_bandit("breast_cancer", seed=seed), True,
            "scikit-learn's breast cancer: 30 standardised features + intercept, disjoint "
            "encoding, d = 62"),
    Setting("digits", "digits (K = 10, 10 principal components)",
            lambda seed: sklearn_bandit("digits", n_components=10, seed=seed), True,
            "scikit-learn's digits: the first 10 principal components of the standardised "
            "pixels + intercept, disjoint encoding, d = 110"),
)}
#: The environments of each size (``run(size=...)``): the small size has the wheel at
#: delta = 0.95 only; ``"wheel"`` is the five wheels of Riquelme et al.'s table.
WHEELS = tuple(f"wheel-{delta}" for delta in WHEEL_DELTAS)
SIZES = {"small": ("pool", "logistic", "wheel-0.95", "wine", "breast_cancer"),
         "wheel": WHEELS,
         "full": ("pool", "logistic", *WHEELS, "wine", "breast_cancer", "digits")}


class NotApplicable(Exception):
    """A method that cannot run on an environment; the message says why."""


def model_for(setting):
    """The reward model of the engines that have a choice: logistic on 0/1 rewards."""
    return "logistic" if setting.binary else "linear"


@dataclass(frozen=True)
class Method:
    """A method of the showdown: ``make(setting, env) -> (policy, hyperparameters)``, or
    :class:`NotApplicable` with the reason."""

    label: str
    make: Callable


def _named(name, tempered_model=True):
    def make(setting, env):
        over = {"model": model_for(setting)} if tempered_model else {}
        return (make_policy(name, env.dim, **over),
                {**POLICY_DEFAULTS[name], **over})
    return make


def _laplace(setting, env):
    from ...inference import Laplace

    hyper = {"model": model_for(setting), "eta": ETA, "lam": LAM}
    return ThompsonSampling(Laplace(env.dim, **hyper)), hyper


def _renyi(setting, env):
    from ...inference import RenyiVI

    hyper = {"model": model_for(setting), "eta": ETA, "lam": LAM}
    eng = RenyiVI(env.dim, **hyper)
    return ThompsonSampling(eng), {**hyper, "alpha": eng.alpha, "n_mc": eng.n_mc,
                                   "n_steps": eng.n_steps, "step_size": eng.step_size}


def _uniform(setting, env):
    from ...bandit.policies import RandomPolicy

    return RandomPolicy(env.dim), {"policy": "uniformly random arm"}


def _diffts(setting, env):
    from ...diffusion import GaussianDiffusionPrior
    from ...inference import DiffTS

    # Kveton et al.'s chain, but over the exact diffusion model of the other engines'
    # prior N(0, I/(eta lam)) (no learned diffusion model: nothing to learn it from), with
    # their tempered likelihood, sigma^-2 = eta. On the linear model it is an approximate
    # sampler of the Gaussian-prior posterior that LinTS samples exactly (the chain is not
    # the exact posterior in general: vits_ref.inference.DiffTS, Notes).
    d = env.dim
    prior = GaussianDiffusionPrior(np.zeros(d), np.full(d, 1.0 / (ETA * LAM)),
                                   n_stages=DIFFTS_STAGES)
    sigma = 1.0 / math.sqrt(ETA)
    model = model_for(setting)
    return (ThompsonSampling(DiffTS(prior, model=model, sigma=sigma)),
            {"model": model, "sigma": sigma, "prior": "GaussianDiffusionPrior(0, I/(eta lam))",
             "eta": ETA, "lam": LAM, "n_stages": DIFFTS_STAGES})


def _vts(setting, env):
    from ...inference.vts import VTS
    from ..vits.figG import VTS_PARAMS

    pol = VTS(env.dim, env.n_arms, **{k: v for k, v in VTS_PARAMS.items()
                                      if k not in ("u0", "V0")})
    return pol, dict(VTS_PARAMS)


def _linfullpost(setting, env):
    from ...inference.vts import NIGTS

    # Riquelme et al.'s LinFullPost is NIGTS: per arm, w | s2 ~ N(0, s2 I / lambda_prior),
    # s2 ~ InvGamma(a0, b0), both sampled each round. In the disjoint encoding an arm's
    # features are zero outside its block, so the posterior on the block is their per-arm
    # model on (context, 1); the off-block coordinates never score. Not reproduced: their
    # round-robin start (each arm played initial_pulls = 2 times first); here unplayed arms
    # are scored by prior draws, as every other method's are.
    pt = LINFULLPOST_POINT
    pol = NIGTS(env.dim, env.n_arms, V0=np.eye(env.dim) / pt["lambda_prior"],
                alpha0=pt["a0"], beta0=pt["b0"])
    return pol, {**pt, "u0": 0.0, "V0": "I / lambda_prior", "model": "linear",
                 "point_of": "Riquelme et al.'s example_main.py (LinFullPost)"}


def _particles(which):
    def make(setting, env):
        from ..vits import fig1, figG

        source = figG if setting.binary else fig1
        label, engine, params = source.PARTICLE_METHODS[which]
        params = dict(params)
        return fig1.particle_policy(engine, env.dim, **params), {"engine": engine, **params,
                                                                  "point_of": source.NAME}
    return make


#: The methods, in the table's order.
METHODS = (
    Method(UNIFORM, _uniform),
    Method("LinTS", _named("lints", tempered_model=False)),
    Method(LINFULLPOST, _linfullpost),
    Method("LinUCB", _named("linucb", tempered_model=False)),
    Method("LMC-TS", _named("lmc")),
    Method("Laplace", _laplace),
    Method("VITS-I", _named("vits-i")),
    Method("VITS-II", _named("vits-ii")),
    Method("VITS-HF", _named("vits-hf")),
    Method(DIFFTS_GAUSSIAN, _diffts),
    Method("VTS", _vts),
    Method("SVGD-TS", _particles(0)),
    Method("OPVI-TS", _particles(1)),
    Method("Renyi-VI", _renyi),
)
