"""Approximate-posterior engines, one module each, sharing one protocol.

The protocol is that of :mod:`~vits_ref.inference.base`: the base class
:class:`~vits_ref.inference.base.Engine`, and :class:`~vits_ref.inference.base.Diagnostics`
for what an update did.
"""

from .base import Diagnostics, Engine, GaussianEngine
from .diffts import DPS, DiffTS
from .exact import LinTS
from .langevin import Langevin
from .laplace import Laplace
from .mixts import MixTS, TunedLaplace, TunedLinTS, TunedTS
from .renyi import RenyiVI
from .vits import VITS

__all__ = ["DPS", "DiffTS", "Diagnostics", "Engine", "GaussianEngine", "Laplace", "LinTS",
           "Langevin", "RenyiVI", "VITS"]
__all__ += ["MixTS", "TunedLaplace", "TunedLinTS", "TunedTS"]

from .sgld import SGLD  # noqa: E402

__all__ += ["SGLD"]
from .particles import OPVI, SVGD  # noqa: E402

__all__ += ["OPVI", "SVGD"]
