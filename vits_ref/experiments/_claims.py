"""A paper's claims, checked against an experiment's results (the reproduction report).

Every experiment module may define ``claims(result)``: from the JSON summary its ``run``
returned, a list of :func:`claim` dicts, one per claim of the paper that the experiment
tests. :mod:`vits_ref.experiments.report` gathers them into one page.
"""

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTABLE = "not testable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE)


def claim(claim_id, section, quote, verdict, measured, why):
    """One claim of a paper with its verdict.

    Parameters
    ----------
    claim_id : str
        Short stable identifier (e.g. ``"fig1-vits-ii-like-lints"``).
    section : str
        Where the paper makes the claim (e.g. ``"section 4.1, Figure 1"``).
    quote : str
        The claim, quoted from the paper.
    verdict : {"reproduced", "not reproduced", "not testable here"}
    measured : str
        The measured numbers (Markdown), with paired intervals where there are two methods.
    why : str
        The rule that gave the verdict, and the likely cause when the claim does not hold
        or cannot be tested.

    Returns
    -------
    dict
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    for name, value in (("claim_id", claim_id), ("section", section), ("quote", quote),
                        ("measured", measured), ("why", why)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string")
    return {"id": claim_id, "section": section, "quote": quote, "verdict": verdict,
            "measured": measured, "why": why}
