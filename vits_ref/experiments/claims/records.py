"""Judged claims as plain records: what the report prints and ``claims.json`` holds."""

import json
import math

from .judging import (
    AS_IMPLEMENTED,
    CONFIDENCE,
    CONTRADICTED,
    INCONCLUSIVE,
    KINDS,
    LIBRARY_READING,
    REPRODUCED,
    VERDICTS,
    Interval,
    judge,
)


def _num(v):
    return f"{v:+.3g}"


def _region_text(lo, hi):
    if math.isinf(lo):
        return f"< {_num(hi)}"
    if math.isinf(hi):
        return f"> {_num(lo)}"
    return f"[{_num(lo)}, {_num(hi)}]"


def _finite_or_none(v):
    return v if v is not None and math.isfinite(v) else None


def seed_record(claim, s):
    """One seed's entry of a claim's record (JSON-ready)."""
    out = {"seed": s.seed, "size": s.size, "verdict": s.verdict,
           "runs_needed": s.runs_needed, "missing": s.missing or None}
    i = s.interval
    if i is None:
        return {**out, "estimate": None, "ci": None, "n": None, "sd": None, "scale": None,
                "region": None, "method": None, "spread": None}
    lo, hi = claim.region(i.scale)
    return {**out, "estimate": i.estimate, "ci": [i.low, i.high] if i.has_interval else None,
            "n": i.n, "sd": i.sd, "scale": i.scale, "method": i.method,
            "region": [_finite_or_none(lo), _finite_or_none(hi)],
            "spread": None if i.spread is None else dict(zip(("min", "median", "max"),
                                                             i.spread, strict=True))}


def _seed_text(claim, s):
    head = f"seed {s.seed} ({s.size})" if s.size else f"seed {s.seed}"
    i = s.interval
    if i is None:
        return f"{head}: not measured ({s.missing})"
    lo, hi = claim.region(i.scale)
    got = (f"{_num(i.estimate)} [{_num(i.low)}, {_num(i.high)}]" if i.has_interval
           else f"{_num(i.estimate)} (no interval: {i.method})")
    if i.spread is not None:
        got += (f" ({i.n} repeats: from {i.spread[0]:.3g} to {i.spread[2]:.3g}, median "
                f"{i.spread[1]:.3g})")
    tail = f", about {s.runs_needed} runs would decide it" if s.runs_needed else ""
    return f"{head}: {got}, claimed {_region_text(lo, hi)}: {s.verdict}{tail}"


def record(judgement):
    """A :class:`~vits_ref.experiments.claims.judging.Judgement` as a dict: the claim's
    fields, the verdict, the per-seed intervals, runs and sizes; ``id``, ``section``,
    ``quote``, ``verdict``, ``measured`` and ``why`` are what the report page prints."""
    c, seeds = judgement.claim, judgement.seeds
    measured = (f"{c.quantity}, {c.measure.comparison} ({100 * CONFIDENCE:g}% "
                f"{_methods(seeds)} interval): " + "; ".join(_seed_text(c, s) for s in seeds))
    why = c.rule()
    if judgement.reason:
        why += f" Here: {judgement.reason}"
        if judgement.runs_needed:
            why += (f"; about {judgement.runs_needed} runs in all (the seeds pooled) would "
                    "decide it")
        why += "."
    if c.substitute:
        why += f" Judged on substitute data: {c.data}."
    if c.reconstructed:
        why += (" Judged on a reconstructed problem (redrawn from the paper's figures or "
                f"taken from the authors' code): {c.data}.")
    if c.implementation:
        why += f" Timing judged {c.implementation}" + (
            f" (the library's optimisation: {c.optimisation})." if c.optimisation else
            ": the paper's algorithm, without the library's optimisations.")
    if c.note:
        why += " " + c.note
    return {"id": c.id, "paper": c.paper, "experiment": c.experiment,
            "section": c.where, "quote": c.words,
            "library_reading": c.where == LIBRARY_READING,
            "quantity": c.quantity, "comparison": c.measure.comparison,
            "claimed": c.claimed, "size_word": c.size, "margin": c.margin,
            "threshold": c.threshold,
            "relative": c.relative, "rule": c.rule(), "data": c.data,
            "substitute": c.substitute, "reconstructed": c.reconstructed,
            "kind": c.kind, "basis": c.basis, "note": c.note,
            "implementation": c.implementation or None,
            "optimisation": c.optimisation or None, "twin": c.twin or None,
            "caused_by_optimisation": None,
            "verdict": judgement.verdict, "reason": judgement.reason or None,
            "runs_needed": judgement.runs_needed,
            "seeds": [seed_record(c, s) for s in seeds],
            "runs": sum(s.interval.n for s in seeds if s.interval is not None),
            "sizes": [s.size for s in seeds], "measured": measured, "why": why}


def _methods(seeds):
    found = sorted({s.interval.method for s in seeds
                    if s.interval is not None and s.interval.has_interval})
    return "/".join(found) if found else "no"


def size_of(result):
    """``"50 runs x 1000 rounds"``: a summary's size in words (steps for a study of
    iterations, ``steps at most`` for one capped at ``cap``)."""
    runs = result.get("runs", "?")
    for key, unit in (("rounds", "rounds"), ("steps", "steps"), ("cap", "steps at most")):
        if key in result:
            return f"{runs} runs x {result[key]} {unit}"
    return f"{runs} runs"


def judged(claims, results):
    """Records of ``claims`` judged on ``results``, one summary per root seed (its
    ``seed`` key names it)."""
    if not results:
        raise ValueError("results must hold at least one summary")
    return label_optimisations(
        [record(judge(c, [(r.get("seed"), c.measure.measure(r), size_of(r))
                          for r in results])) for c in claims])


#: What the page prints after a contradiction that an optimisation causes.
CAUSED_TEXT = "caused by an optimisation of the library"


def label_optimisations(records):
    """Label each :data:`~vits_ref.experiments.claims.judging.AS_IMPLEMENTED` record that
    is contradicted while its twin (the paper's algorithm as written) is reproduced: the
    contradiction is caused by the library's optimisation, named in the record's
    ``caused_by_optimisation`` and its ``why``. Any other record's label is cleared.
    Returns ``records`` (changed in place)."""
    verdicts = {r["id"]: r["verdict"] for r in records}
    for r in records:
        caused = (r.get("implementation") == AS_IMPLEMENTED and r["verdict"] == CONTRADICTED
                  and verdicts.get(r.get("twin")) == REPRODUCED)
        r["caused_by_optimisation"] = r.get("optimisation") if caused else None
        if caused:
            r["why"] += (f" This contradiction is {CAUSED_TEXT}: the paper's algorithm as "
                         f"written is reproduced ({r['twin']}); the sentence is judged on it.")
    return records


def write_claims_json(path, records, **meta):
    """Write ``claims.json``: ``meta`` (paper, size, seeds, command, ...), the rule's
    confidence and one record per claim. Strict JSON (an open end of a region is null)."""
    doc = {**meta, "confidence": CONFIDENCE,
           "verdicts": "reproduced / contradicted / inconclusive, one rule "
                       "(docs/reproduction/judging.md); kind: (a) the paper's sentence on "
                       "the paper's problem, (b) on substitute or reconstructed data, (c) "
                       "the library's reading",
           "claims": list(records)}
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1, allow_nan=False)
        fh.write("\n")
    return path


def stored_measurements(rec):
    """A stored record's per-seed measurements, as :func:`judge` takes them: ``(seed,
    Interval or the reason it is missing, size)``, rebuilt from its ``seeds`` entries."""
    out = []
    for s in rec["seeds"]:
        if s.get("estimate") is None:
            out.append((s["seed"], s.get("missing") or "not measured", s.get("size", "")))
            continue
        ci = s.get("ci") or (None, None)
        spread = s.get("spread")
        out.append((s["seed"], Interval(
            s["estimate"], ci[0], ci[1], s["n"], s.get("sd"), s.get("scale", 1.0),
            s.get("method") or "paired t",
            None if spread is None else (spread["min"], spread["median"], spread["max"])),
            s.get("size", "")))
    return out


def rejudge(stored, claims):
    """Re-judge stored records (a ``claims.json``'s ``claims``) by the claims of the table,
    from their stored per-seed intervals: nothing is run again.

    Each claim of ``claims`` is judged on the stored record with its id, or, for a claim
    the record predates, on the stored record of the same experiment and comparison (the
    same measurement). A stored record that no claim of the table has any more is dropped
    (one rule: nothing is kept judged by another).

    Returns
    -------
    list of dict
        The new records, in the stored order, a new claim after the last record of its
        experiment that precedes it in ``claims``.
    """
    by_id = {r["id"]: r for r in stored}
    by_comparison = {}
    for r in stored:
        by_comparison.setdefault((r["experiment"], r.get("comparison")), r)
    new = {}
    for c in claims:
        src = by_id.get(c.id) or by_comparison.get((c.experiment, c.measure.comparison))
        same = next((r for r in stored if r["experiment"] == c.experiment), None)
        if src is None and same is not None and hasattr(c.measure, "needs_run"):
            # a cost count: computed from the paper's setting alone, judged anew once per
            # stored seed; one that reads the run, not measured on a page that predates it
            got = (c.measure.measure({}) if not c.measure.needs_run else
                   "the page predates this measurement: its report command regenerates it")
            new[c.id] = record(judge(c, [(s["seed"], got, s.get("size", ""))
                                         for s in same["seeds"]]))
            continue
        if src is None or (c.id not in by_id and same is None):
            continue
        new[c.id] = record(judge(c, stored_measurements(src)))
    out, placed = [], set()
    order = [c.id for c in claims]
    for r in stored:
        if r["id"] in new:
            out.append(new[r["id"]])
        placed.add(r["id"])
        # claims the stored page lacks, right after their predecessor in the table
        k = order.index(r["id"]) + 1 if r["id"] in order else len(order)
        while k < len(order) and order[k] in new and order[k] not in by_id \
                and order[k] not in placed:
            out.append(new[order[k]])
            placed.add(order[k])
            k += 1
    return label_optimisations(out)


def sentences(records):
    """The judged records grouped into sentences: one per paper, kind and quoted words (a
    sentence split into several tests, one per panel or comparison, counts once).

    A sentence's verdict is its tests' common verdict, and :data:`INCONCLUSIVE` when they
    disagree: a sentence is reproduced only if every test of it is, contradicted only if
    every test is. A test whose contradiction an optimisation of the library causes
    (``caused_by_optimisation``, :func:`label_optimisations`) is listed but not counted: the
    sentence is judged on the paper's algorithm as written there. A sentence tested both
    on the paper's problem and on a substitute or reconstructed one is one sentence of each
    kind, each on its own tests.

    Returns
    -------
    list of dict
        ``{"paper", "kind", "quote", "sections", "ids", "verdicts", "verdict"}`` in the
        records' order (``verdicts``: each test's, by id).
    """
    groups = {}
    for r in records:
        key = (r["paper"], r["kind"], r["quote"])
        g = groups.setdefault(key, {"paper": r["paper"], "kind": r["kind"],
                                    "quote": r["quote"], "sections": [], "ids": [],
                                    "verdicts": {}})
        if r["section"] not in g["sections"]:
            g["sections"].append(r["section"])
        g["ids"].append(r["id"])
        g["verdicts"][r["id"]] = r["verdict"]
        if r.get("caused_by_optimisation"):
            g.setdefault("optimised", []).append(r["id"])
    for g in groups.values():
        found = {v for i, v in g["verdicts"].items() if i not in g.get("optimised", ())}
        g["verdict"] = found.pop() if len(found) == 1 else INCONCLUSIVE
    return list(groups.values())


def tallies(records):
    """``{kind: {verdict: sentences}}`` over :func:`sentences`, every kind of
    :data:`~vits_ref.experiments.claims.judging.KINDS` and every verdict present (0 when
    none)."""
    out = {k: dict.fromkeys(VERDICTS, 0) for k in KINDS}
    for g in sentences(records):
        out[g["kind"]][g["verdict"]] += 1
    return out


def tallies_text(records):
    """The page's count line: per kind, the sentences by verdict, then the tests."""
    parts = []
    for k, counts in tallies(records).items():
        n = sum(counts.values())
        got = ", ".join(f"{v} {w}" for w, v in counts.items() if v) or "none"
        parts.append(f"({k}) {KINDS[k]}: {n} sentence{'s' * (n != 1)}"
                     + (f" ({got})" if n else ""))
    tests = {w: sum(r["verdict"] == w for r in records) for w in VERDICTS}
    return ("Claims: " + "; ".join(parts) + ". A sentence split into several tests counts "
            "once, reproduced or contradicted only if all its tests agree. Tests: "
            + (", ".join(f"{v} {w}" for w, v in tests.items() if v) or "none") + ".")
