"""Approximate-posterior engines, one module each, sharing one protocol.

The protocol is that of :mod:`~vits_ref.inference.base`.
"""

from .base import Engine, GaussianEngine
from .diffts import DPS, DiffTS
from .exact import LinTS
from .langevin import Langevin
from .laplace import Laplace
from .mixts import MixTS, TunedLaplace, TunedLinTS, TunedTS
from .renyi import RenyiVI
from .vits import VITS

__all__ = ["DPS", "DiffTS", "Engine", "GaussianEngine", "Laplace", "LinTS", "Langevin",
           "RenyiVI", "VITS"]
__all__ += ["MixTS", "TunedLaplace", "TunedLinTS", "TunedTS"]

from .sgld import SGLD  # noqa: E402

__all__ += ["SGLD"]
from .particles import OPVI, SVGD  # noqa: E402

__all__ += ["OPVI", "SVGD"]
