"""Online posterior sampling with a diffusion prior (Kveton et al., NeurIPS 2024):
one module per experiment.

- :mod:`~vits_ref.experiments.diffts.synthetic` (``diffts-synthetic``): section 6.2 and
  appendix C.1, six 2-D priors (Figures 2 and 4);
- :mod:`~vits_ref.experiments.diffts.ablation` (``diffts-ablation``): appendix C.3, stages
  and training samples on "cross" (Figure 6);
- :mod:`~vits_ref.experiments.diffts.movielens` (``diffts-movielens``): section 6.3
  (Figure 3), the synthetic stand-in by default, ``--data`` for MovieLens;
- :mod:`~vits_ref.experiments.diffts.digits` (``diffts-digits``): appendix C.2 (Figure 5)
  on scikit-learn's digits, which replace MNIST.

Execution: in each of them the bandit runs go in resumable chunks of runs
(:func:`vits_ref.experiments.diffts._shared.run_panels`, ``out/chunks`` and
``out/manifest.json``): rerunning the same command reuses the finished chunks, and the
results do not depend on the chunking or the executor (``--jobs``, Dask); the trained
priors stay cached in ``out/priors``.

``MODULES`` lists the experiment modules registered in
:data:`vits_ref.experiments.EXPERIMENTS`.
"""

from . import ablation, digits, movielens, synthetic

MODULES = (synthetic, ablation, movielens, digits)

__all__ = ["MODULES", "ablation", "digits", "movielens", "synthetic"]
