"""The Rényi appendix (most likely Sajid et al. 2022; docs/algorithms.md, section 6): one
module per experiment (the bandit of appendix C; the appendix's equations, computed).

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import appendix, mab

MODULES = (mab, appendix)
