"""Variational Thompson sampling (Urteaga and Wiggins, seed 002): one module per figure.

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

MODULES = ()
