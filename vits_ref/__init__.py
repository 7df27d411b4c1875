"""vits_ref: Thompson sampling with approximate posteriors, fast and checked.

Engines (:mod:`vits_ref.inference`, one protocol: ``update``, ``sample``, ``fresh``,
``diagnostics``): :class:`LinTS` (exact), :class:`VITS` (variants "I", "II",
"hessian_free"), :class:`Langevin`, :class:`Laplace`, :class:`RenyiVI`; diffusion-model
priors (:mod:`vits_ref.diffusion`): :class:`DiffTS` (LaplaceDPS), :class:`DPS`, and the
baselines :class:`MixTS` (Gaussian-mixture prior, EM in :mod:`vits_ref.inference.gmm`) and
:func:`TunedTS`; particles: :class:`SVGD`, :class:`OPVI` (the direction in
:mod:`vits_ref.inference.svgd`), :class:`SGLD`; variational mixtures: :class:`VTS`, :class:`NIGTS`.
Policies: :class:`ThompsonSampling`, :class:`LinUCB`, :class:`EpsilonGreedy`,
:class:`RandomPolicy`, :class:`PerArm`; with scikit-learn's verbs (``fit``, ``partial_fit``,
``predict``, ``predict_expectations``): :class:`Bandit`; one decision at a time at the speed of the
compiled round: :class:`Online`. Save and load, without pickle: ``save(path)`` on any
engine, policy or :class:`Bandit`, and :func:`load`. Environments:
:mod:`vits_ref.envs`. Many seeded runs: :func:`simulate`. Closed forms:
:mod:`vits_ref.gaussian`. Data loaders: :mod:`vits_ref.data`.
"""

# _compile_watch first: its process-wide listener says a long compilation of the kernels
from . import (
    _compile_watch,  # noqa: F401
    _numba_faster,
    data,
    diffusion,
    envs,
    gaussian,
    models,
)
from .bandit.estimator import Bandit
from .bandit.online import Online
from .bandit.policies import EpsilonGreedy, LinUCB, PerArm, RandomPolicy, ThompsonSampling
from .bandit.simulate import POLICY_NAMES, SimulationResult, make_policy, simulate
from .bandit.vts import simulate_vts
from .errors import DegenerateCovarianceError, DivergenceError
from .inference import (
    DPS,
    OPVI,
    SGLD,
    SVGD,
    VITS,
    DiffTS,
    Langevin,
    Laplace,
    LinTS,
    MixTS,
    RenyiVI,
    TunedTS,
    gmm,
    schedules,
    svgd,
    vts,
)
from .inference.persist import load
from .inference.vts import NIGTS, VTS

# Numba's inliner copying an inlined body's IR with one memo, and its compiler flags
# hashed and compared without listing their values (vits_ref/_numba_faster.py): the same
# code, the main job's cold compiling 72 -> about 55 s. Installed on the import of any
# module of the package, before its first kernel compiles (none compiles at import)
_numba_faster.install()

__version__ = "0.1.0"

__all__ = ["Bandit", "DPS", "DegenerateCovarianceError", "DiffTS", "DivergenceError",
           "EpsilonGreedy", "Laplace", "LinTS", "LinUCB", "Langevin", "MixTS", "NIGTS", "OPVI",
           "Online", "POLICY_NAMES", "PerArm", "RandomPolicy", "RenyiVI",
           "SGLD", "SVGD", "SimulationResult", "ThompsonSampling", "TunedTS", "VITS", "VTS",
           "data", "diffusion", "envs", "gaussian", "gmm", "load", "make_policy", "models",
           "schedules", "simulate", "simulate_vts", "svgd", "vts"]
