"""Rényi-divergence variational inference (Li & Turner): one module per experiment.

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import mab

MODULES = (mab,)
