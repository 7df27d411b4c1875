"""Beyond the papers: every method of the library on shared environments.

- :mod:`~vits_ref.experiments.showdown.experiment` (``showdown``): the runs and the page;
- :mod:`~vits_ref.experiments.showdown.catalogue`: its environments and methods;
- :mod:`~vits_ref.experiments.showdown.versus_best`: paired differences with the best
  method of each environment;
- :mod:`~vits_ref.experiments.showdown.combine`: one page from runs of the same runs (a
  method added later beside the earlier ones).

``MODULES`` lists the experiment modules, in the order of the registry
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import experiment

MODULES = (experiment,)

__all__ = ["MODULES", "experiment"]
