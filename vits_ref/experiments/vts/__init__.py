"""Variational Thompson sampling (Urteaga and Wiggins): one module per figure.

- :mod:`~vits_ref.experiments.vts.scenarios` (``vts-scenarios``): Figures 2 and 3,
  scenarios A and B with K = 1, 2, 3 mixture components.

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import scenarios

MODULES = (scenarios,)

__all__ = ["MODULES", "scenarios"]
