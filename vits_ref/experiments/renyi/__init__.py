"""Rényi-divergence variational inference (seed 004): one module per experiment.

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import mab

MODULES = (mab,)
