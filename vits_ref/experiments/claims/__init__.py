"""The claims of the papers, in one table, judged by one rule.

- :mod:`~vits_ref.experiments.claims.judging`: :class:`Claim`, :class:`Interval` and the rule
  (reproduced / contradicted / inconclusive), over one or more root seeds;
- :mod:`~vits_ref.experiments.claims.measures`: how a claim's quantity and its paired
  interval are read from an experiment's summary;
- :mod:`~vits_ref.experiments.claims.table`: the claims, as data;
- :mod:`~vits_ref.experiments.claims.records`: judged claims as records (the report's page,
  ``claims.json``).

The rule and the margins are explained in ``docs/reproduction/judging.md``.
"""

from .judging import (
    CONTRADICTED,
    INCONCLUSIVE,
    LIBRARY_READING,
    REPRODUCED,
    VERDICTS,
    Claim,
    Interval,
    judge,
    runs_needed,
    verdict,
)
from .records import judged, write_claims_json
from .table import CLAIMS

__all__ = ["CLAIMS", "CONTRADICTED", "INCONCLUSIVE", "LIBRARY_READING", "REPRODUCED",
           "VERDICTS", "Claim", "Interval", "claims_of", "judge", "judged",
           "judged_claims", "runs_needed", "verdict", "write_claims_json"]


def claims_of(experiment):
    """The table's claims measured by ``experiment`` (a registered name), in order."""
    return tuple(c for c in CLAIMS if c.experiment == experiment)


def judged_claims(experiment, results):
    """Records of ``experiment``'s claims judged on ``results`` (one summary per root seed,
    or one summary)."""
    if isinstance(results, dict):
        results = [results]
    found = claims_of(experiment)
    if not found:
        raise ValueError(f"the claim table has no claim of {experiment!r}")
    return judged(found, results)
