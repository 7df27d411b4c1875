"""Online particle-based variational inference (the OPVI paper): one module per experiment.

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`: ``opvi-mixture`` (section 5.1, Figure 2),
``opvi-bnn`` (section 5.2, Table 1) and ``opvi-classifier`` (section 5.3, Figure 3).
"""

from . import bnn, classifier, mixture

MODULES = (mixture, bnn, classifier)
