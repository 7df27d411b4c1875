"""The VITS paper (Clavier, Huix and Durmus, ICML 2024): one module per figure or section.

- :mod:`~vits_ref.experiments.vits.fig1` (``vits-fig1``): figure 1, linear pool bandit;
- :mod:`~vits_ref.experiments.vits.fig2` (``vits-fig2``): figure 2, quadratic pool bandit
  with an MLP;
- :mod:`~vits_ref.experiments.vits.figF` (``vits-figF``): appendix F, steps to a KL
  threshold against the condition number of a Gaussian target;
- :mod:`~vits_ref.experiments.vits.figG` (``vits-figG``): appendix G, the hard instance;
- :mod:`~vits_ref.experiments.vits.figI` (``vits-figI``): appendix I, KL against time;
- :mod:`~vits_ref.experiments.vits.movielens` (``vits-movielens``): section 5, MovieLens;
- :mod:`~vits_ref.experiments.vits.target`: the Gaussian targets of appendices F and I.

``MODULES`` lists the experiment modules, in the order of the registry
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import fig1, fig2, figF, figG, figI, movielens

MODULES = (fig1, fig2, figF, figG, figI, movielens)

__all__ = ["MODULES", "fig1", "fig2", "figF", "figG", "figI", "movielens"]
