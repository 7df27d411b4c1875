"""Diffusion-model priors (Kveton et al., NeurIPS 2024).

:class:`Schedule` (the forward noise), :class:`DiffusionPriorBase` (what every prior
exposes to the compiled reverse chains), :class:`GaussianDiffusionPrior` (the exact
diffusion of a Gaussian, the tests' ground truth), :mod:`.chain` (the Python entry points
of the chains: prior sampling, LaplaceDPS, DPS, the linear DiffTS bandit driver). The
engines are :class:`vits_ref.DiffTS` and :class:`vits_ref.DPS`.
"""

from . import chain
from .base import DiffusionPriorBase
from .gaussian import GaussianDiffusionPrior
from .learned import DiffusionPrior
from .schedule import Schedule

__all__ = ["DiffusionPrior", "DiffusionPriorBase", "GaussianDiffusionPrior", "Schedule", "chain"]
