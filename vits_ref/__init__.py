"""vits_ref: Thompson sampling with approximate posteriors, fast and checked.

Engines (:mod:`vits_ref.inference`): :class:`LinTS` (exact), :class:`VITS` (variants
"I", "II", "hessian_free"), :class:`Langevin`. Policies: :class:`ThompsonSampling`,
:class:`LinUCB`, :class:`RandomPolicy`. Environments: :mod:`vits_ref.envs`. Many seeded
runs: :func:`simulate`. Closed forms: :mod:`vits_ref.gaussian`.
"""

from . import diffusion, envs, gaussian, models, schedules
from .errors import DivergenceError
from .inference import DPS, VITS, DiffTS, Langevin, Laplace, LinTS, MixTS, RenyiVI, TunedTS
from .policies import LinUCB, PerArm, RandomPolicy, ThompsonSampling
from .simulate import POLICY_NAMES, SimulationResult, make_policy, simulate
from .vts import NIGTS, VTS

__version__ = "0.1.0"

__all__ = ["DPS", "DiffTS", "DivergenceError", "Laplace", "LinTS", "LinUCB", "Langevin", "NIGTS",
           "POLICY_NAMES",
           "PerArm",
           "RandomPolicy", "RenyiVI", "SimulationResult", "ThompsonSampling", "VITS", "diffusion",
           "envs",
           "gaussian", "make_policy", "models", "schedules", "simulate", "VTS"]
__all__ += ["MixTS", "TunedTS"]

from .inference import SGLD  # noqa: E402

__all__ += ["SGLD"]
from . import svgd  # noqa: E402
from .inference import OPVI, SVGD  # noqa: E402

__all__ += ["OPVI", "SVGD", "svgd"]
