"""Paper reproductions, registered by name for ``python -m vits_ref run NAME``.

One subpackage per paper (:mod:`vits_ref.experiments.vits`: the VITS paper;
:mod:`~vits_ref.experiments.vts`: variational Thompson sampling;
:mod:`~vits_ref.experiments.renyi`: Rényi VI; :mod:`~vits_ref.experiments.diffts`:
diffusion priors), one module per figure or table, and
:mod:`~vits_ref.experiments.showdown`: every method on shared environments (no paper's);
:mod:`vits_ref.experiments._common` holds what they share. Each experiment module defines
``NAME``, ``DESCRIPTION``, ``DEFAULTS`` (runs, rounds, seed), ``run(runs, rounds, seed,
out, progress)`` which writes a CSV, a JSON summary and a PNG plot into ``out`` and
returns the summary dict (its ``files`` lists what was written), ``table(result)`` for the
terminal. The claims an experiment tests are the claim table's records with its name
(:func:`vits_ref.experiments.claims.claims_of`), judged by one rule and gathered by
:mod:`vits_ref.experiments.report`.
That contract is written down as the protocol :class:`Experiment`
(``isinstance(module, Experiment)``; ``tests/test_protocols.py`` checks every registered
module against it).
"""

from . import diffts, opvi, renyi, showdown, vits, vts
from ._common import Experiment as Experiment  # re-exported: vits_ref.experiments.Experiment

PAPERS = (vits, vts, renyi, diffts, opvi, showdown)
#: name -> experiment module (each an :class:`Experiment`)
EXPERIMENTS = {m.NAME: m for paper in PAPERS for m in paper.MODULES}


def get(name):
    """The experiment module registered as ``name``."""
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; available: "
                         f"{', '.join(sorted(EXPERIMENTS))}") from None
