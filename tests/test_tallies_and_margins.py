"""Every claim has a justified margin (its basis named and explained in judging.md); the
pages count sentences in three kinds; the Rényi appendix's computed checks are judged.
Planted data only: no test asserts what a verdict on real data is."""

import math
import pathlib
import re

import pytest

from vits_ref.experiments import claims, report
from vits_ref.experiments.claims import judging
from vits_ref.experiments.claims.judging import (
    CONTRADICTED,
    EQUAL,
    HIGHER,
    INCONCLUSIVE,
    LIBRARY_READING,
    REPRODUCED,
    Claim,
    percentage_margin,
)
from vits_ref.experiments.claims.measures import Computed
from vits_ref.experiments.claims.records import judged, sentences, tallies, tallies_text

JUDGING_MD = pathlib.Path(__file__).parent.parent / "docs" / "reproduction" / "judging.md"


def _claim(**kw):
    base = dict(id="x", paper="p", experiment="renyi-appendix", where="s 1", words="w",
                quantity="q", measure=Computed(("v",), "v"), claimed=EQUAL, margin=0.1,
                data="d")
    return Claim(**{**base, **kw})


def test_every_claim_names_a_basis_that_judging_md_justifies():
    headings = set(re.findall(r"^### `([A-Z_]+)`", JUDGING_MD.read_text(), re.M))
    used = {c.basis for c in claims.CLAIMS}
    assert used <= judging.BASES
    assert used <= headings, f"bases without a reason in judging.md: {used - headings}"


def test_a_claim_without_a_justified_margin_is_refused():
    # a margin that is no word's and names no basis
    with pytest.raises(ValueError, match="basis"):
        _claim(margin=0.2, relative=True)
    with pytest.raises(ValueError, match="basis"):  # a threshold that is no word's
        _claim(claimed=HIGHER, margin=None, threshold=0.7)
    with pytest.raises(ValueError, match="basis"):
        _claim(margin=0.2, basis="MADE_UP")
    # the words' margins are inferred; a named one is kept
    assert _claim(relative=True).basis == "SIMILAR"
    assert _claim(claimed=HIGHER, margin=None).basis == judging.DIRECTION
    assert _claim(margin=0.014, threshold=0.14, basis="PERCENTAGE").basis == "PERCENTAGE"


def test_a_paper_percentage_is_judged_relative_to_itself():
    # 14%: +-1.4 points (10% of the value), not +-10 points
    assert percentage_margin(0.14, 0) == pytest.approx(0.014)
    # never tighter than the printed precision: 0.1% printed as "0.1%" is +-0.05 points
    assert percentage_margin(0.001, 1) == pytest.approx(0.0005)
    for bad, match in (((0.0, 0), "value"), ((math.inf, 0), "value"), ((0.1, -1), "decimals"),
                       ((0.1, 1.5), "decimals")):
        with pytest.raises(ValueError, match=match):
            percentage_margin(*bad)
    c = _claim(threshold=0.14, margin=percentage_margin(0.14, 0), basis="PERCENTAGE")
    at = {v: judging.verdict(c, judging.Interval(v, v - 0.003, v + 0.003, 50))
          for v in (0.14, 0.20, 0.04)}
    # the old +-0.10 would pass 4% and 20% as "14%"
    assert at == {0.14: REPRODUCED, 0.20: CONTRADICTED, 0.04: CONTRADICTED}


def _records(planted):
    """Judged records of planted computed values: {id: (words, kind flags, value)}."""
    out = []
    for cid, (words, flags, value) in planted.items():
        c = _claim(id=cid, words=words, margin=1e-8, basis="NUMERICAL", **flags)
        out += judged([c], [{"v": value, "runs": 1, "seed": 0}])
    return out


def test_sentences_count_once_and_must_agree():
    recs = _records({
        "s1-a": ("one", {}, 0.0), "s1-b": ("one", {}, 1e-12),          # agree: reproduced
        "s2-a": ("two", {}, 0.0), "s2-b": ("two", {}, 1.0),            # disagree
        "s3": ("three", {"substitute": True}, 1.0),                     # (b) contradicted
        "s4": ("four", {"reconstructed": True}, 0.0),                   # (b) reproduced
        "s5": ("five", {"where": LIBRARY_READING}, 0.0),                # (c)
    })
    by = {g["quote"]: g for g in sentences(recs)}
    assert by["one"]["verdict"] == REPRODUCED and by["one"]["ids"] == ["s1-a", "s1-b"]
    assert by["two"]["verdict"] == INCONCLUSIVE
    assert by["three"]["kind"] == by["four"]["kind"] == "b" and by["five"]["kind"] == "c"
    t = tallies(recs)
    assert t["a"] == {REPRODUCED: 1, CONTRADICTED: 0, INCONCLUSIVE: 1}
    assert t["b"] == {REPRODUCED: 1, CONTRADICTED: 1, INCONCLUSIVE: 0}
    assert t["c"][REPRODUCED] == 1
    text = tallies_text(recs)
    assert text.startswith("Claims: (a)") and "2 sentences (1 reproduced, 1 inconclusive)" \
        in text and "Tests: 5 reproduced, 2 contradicted" in text


def test_substitute_and_reconstructed_are_exclusive():
    with pytest.raises(ValueError, match="reconstructed"):
        _claim(substitute=True, reconstructed=True)


def test_a_run_below_the_papers_size_is_named():
    fig2 = report.get("vits-fig2")
    runs, rounds = fig2.PAPER_SIZE["runs"], fig2.PAPER_SIZE["rounds"]
    recs = [{"experiment": "vits-fig2", "sizes": ["2 runs x 20 rounds"]},
            {"experiment": "vits-fig1", "sizes": ["50 runs x 1000 rounds"]}]
    assert report.below_paper_size(recs) == {"vits-fig2": ("2 runs x 20 rounds", runs, rounds)}
    assert report.below_paper_size(recs[1:]) == {}


def test_the_renyi_appendix_checks_run_and_are_judged(tmp_path):
    from vits_ref.experiments.renyi import appendix

    res = appendix.run(1, 2000, 0, str(tmp_path))
    found = claims.judged_claims(appendix.NAME, res)
    assert [c["id"] for c in found] == [c.id for c in claims.claims_of(appendix.NAME)]
    assert all(c["verdict"] in claims.VERDICTS for c in found)
    # planted: a typo-sized difference is contradicted, a rounding-sized one reproduced
    planted = {**res, "identities": {**res["identities"], "eq43": 1e-3, "eq44": 1e-14}}
    v = {c["id"]: c["verdict"] for c in claims.judged_claims(appendix.NAME, planted)}
    assert v["renyi-eq43-identity"] == CONTRADICTED and v["renyi-eq44-identity"] == REPRODUCED
    mc = dict(res["monte_carlo"][0], estimate=1.05, low=1.04, high=1.06)
    planted = {**res, "monte_carlo": [mc, *res["monte_carlo"][1:]]}
    v = {c["id"]: c["verdict"] for c in claims.judged_claims(appendix.NAME, planted)}
    assert v["renyi-b2-bound-monte-carlo-alpha-0.5"] == CONTRADICTED
    # planted: B.2 as printed off, the library's corrected form right: the appendix's
    # sentences (a) and the library's reading (c) are counted apart (judging.md)
    bound = dict(res["bound"], eq98_label=2.0, eq101_printed_n3=0.2, bound_quadrature=1e-15,
                 corrected=1e-15)
    mc = [dict(m, estimate=1.0, low=0.999, high=1.001) for m in res["monte_carlo"]]
    planted = {**res, "identities": dict.fromkeys(res["identities"], 1e-14), "bound": bound,
               "monte_carlo": mc}
    t = tallies(claims.judged_claims(appendix.NAME, planted))
    assert t["a"] == {REPRODUCED: 1, CONTRADICTED: 2, INCONCLUSIVE: 0}
    assert t["c"] == {REPRODUCED: 1, CONTRADICTED: 0, INCONCLUSIVE: 0}
    with pytest.raises(ValueError, match="rounds"):
        appendix.run(1, 10, 0, str(tmp_path))
