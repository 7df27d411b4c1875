"""The reproduction report: a paper's claims, each with measured numbers and a verdict.

``python -m vits_ref report vits`` runs every experiment of the VITS paper at a stated size
and writes one page, ``report.md`` and a self-contained ``report.html`` (figures embedded),
into ``results/report-vits``. For each claim of the paper the page gives the claim quoted
with its section, the measured numbers with paired 95% intervals, and a verdict
with the rule that gave it and, where a claim fails or cannot be tested, the likely cause.
The report also writes ``claims.json``, one record per claim
(:func:`vits_ref.experiments.claims.write_claims_json`).

One rule judges: the claims of the claim table (:mod:`vits_ref.experiments.claims`;
``docs/reproduction/judging.md``) get one of reproduced / contradicted / inconclusive, from
every root seed of :data:`SEEDS` (each seed's interval is on the page; seeds that disagree
give inconclusive). An experiment with no entry in the table has no claims on a page. The
counts keep three kinds apart (the papers' sentences on the papers' problems, on substitute
or reconstructed data, and the library's readings), a sentence split into several tests
counted once; a run below the paper's size is named with its size. This module only runs,
gathers and writes; :func:`index_page` lists every claim of the papers whose
``claims.json`` lies under a folder (``docs/reproduction``).

Sizes (:data:`SIZES`): ``paper`` runs every experiment at its defaults, which are the
paper's sizes where this machine allows (each module's docstring says where not), except
the MLP figure (``vits-fig2``): its paper size is about 28 CPU-hours here, so the report
runs 2 runs of 20 rounds, whose claims come out inconclusive; ``small`` runs a few
runs of a few rounds (what CI builds, to check that the
page builds and that every claim gets a verdict; its verdicts rest on too few runs to mean
much, and the page says so).
"""

import base64
import datetime
import html
import json
import os
import time

from .. import _compile_watch
from . import claims, get
from ._common import finish_timing
from ._outputs import write_output
from .claims.records import sentences, tallies, tallies_text

#: Every verdict word a page can carry: the claim table's (one rule)
VERDICTS = claims.VERDICTS
#: size -> root seeds of the experiments whose claims are in the claim table
SEEDS = {"paper": (0, 1), "small": (0, 1)}

PAPERS = {"vits": "VITS: Variational Inference Thompson Sampling for contextual bandits "
                  "(Clavier, Huix and Durmus, ICML 2024)",
          "vts": "Variational inference for the multi-armed contextual bandit (Urteaga and "
                 "Wiggins, AISTATS 2018)",
          "renyi": "The Rényi-divergence appendix (appendices A-C, \"A Note on divergences "
                   "indexed by alpha\"; the text names no authors, most likely Sajid et al., "
                   "\"Bayesian brains and the Rényi divergence\", Neural Computation 2022): "
                   "the divergence identities, the linear-Gaussian bound of B.2 and its "
                   "errata, the multi-armed bandit of appendix C"}

#: size -> experiment name -> keyword arguments of its ``run`` (besides ``out``, ``progress``)
SIZES = {
    "paper": {
        "vits-fig1": {},
        # the paper's size is about 28 CPU-hours here (an 861-parameter VITS step costs three
        # 861^3 products); below it the claims' intervals are too wide to decide, so a
        # short run illustrates the experiment (the GPU path, docs/cuda.md, is the way to
        # the paper's size)
        "vits-fig2": {"runs": 2, "rounds": 20},
        "vits-figF": {},
        "vits-figG": {},
        "vits-figI": {},
        "vits-movielens": {},
        "vts-scenarios": {},
        "renyi-mab": {"n_jobs": 2},
        "renyi-appendix": {},
    },
    "small": {
        "vits-fig1": {"runs": 4, "rounds": 100},
        # one round: the page's check (every claim judged, the figure drawn), not an
        # estimate; a round of the 861-parameter MLP costs about 17 s of CPU here
        "vits-fig2": {"runs": 1, "rounds": 1},
        "vits-figF": {"runs": 2, "rounds": 2000, "kappas": (2.5, 10.0)},
        "vits-figG": {"runs": 3, "rounds": 100},
        "vits-figI": {"runs": 3, "rounds": 1500},
        "vits-movielens": {"runs": 2, "rounds": 50, "n_movies": 8,
                           "synthetic_kwargs": {"n_users": 60, "n_movies": 40,
                                                "n_ratings": 800}},
        "vts-scenarios": {"runs": 20, "rounds": 60},
        "renyi-mab": {"runs": 2, "rounds": 60},
        "renyi-appendix": {"runs": 1, "rounds": 2000},
    },
}
EXPERIMENTS = {"vits": ("vits-fig1", "vits-fig2", "vits-figG", "vits-movielens",
                        "vits-figF", "vits-figI"),
               "vts": ("vts-scenarios",),
               "renyi": ("renyi-mab", "renyi-appendix")}

# the OPVI paper (online particle VI): its experiments and sizes
PAPERS["opvi"] = ("Online particle-based variational inference (the OPVI paper: OPVI, Algorithm 1; "
                  "the Welling-Teh mixture, BNN regression and classification)")
# the classifier's default (5 splits) is cut for time; the report runs the paper-like 10
SIZES["paper"].update({"opvi-mixture": {}, "opvi-bnn": {},
                       "opvi-classifier": {"runs": 10, "rounds": 500}})
SIZES["small"].update({"opvi-mixture": {"runs": 2, "rounds": 60, "n_data": 2000},
                       # 3 runs: the fewest a bootstrap interval (the improvement over
                       # LD's size) takes
                       "opvi-bnn": {"runs": 3, "rounds": 40},
                       "opvi-classifier": {"runs": 2, "rounds": 30, "hidden": 20}})
EXPERIMENTS["opvi"] = ("opvi-mixture", "opvi-bnn", "opvi-classifier")

# Kveton et al. (diffusion-model priors): its experiments and sizes
PAPERS["diffts"] = ("Online posterior sampling with a diffusion prior (Kveton et al.: DiffTS / "
                    "LaplaceDPS, DPS, TunedTS and MixTS; synthetic priors, ablation, "
                    "MovieLens, digits)")
SIZES["paper"].update({"diffts-synthetic": {}, "diffts-ablation": {},
                       "diffts-movielens": {}, "diffts-digits": {}})
_DIFFTS_TINY = {"n_stages": 10, "train_kwargs": {"epochs": 2}}
SIZES["small"].update({
    "diffts-synthetic": {"runs": 3, "rounds": 30, "n_train": 1000, "n_energy": 300,
                         **_DIFFTS_TINY},
    "diffts-ablation": {"runs": 3, "rounds": 30, "stages": (1, 5, 25), "ref_stages": 10,
                        "train_sizes": (100, 3000), "ref_train": 1000,
                        "train_kwargs": {"epochs": 2}, "time_repeats": 3},
    "diffts-movielens": {"runs": 2, "rounds": 30, "n_energy": 100,
                         "synthetic_kwargs": {"n_users": 200, "n_movies": 150,
                                              "n_ratings": 3000}, **_DIFFTS_TINY},
    "diffts-digits": {"runs": 2, "rounds": 30, "n_energy": 200,
                      "data_kwargs": {"n_thetas": 1000, "max_iter": 50}, **_DIFFTS_TINY}})
EXPERIMENTS["diffts"] = ("diffts-synthetic", "diffts-ablation", "diffts-movielens",
                         "diffts-digits")

#: The papers whose claims are in the claim table, in the index's order (``report all``).
CLAIM_PAPERS = ("vits", "vts", "renyi", "opvi", "diffts")

# beyond the papers: every method on shared environments (no claims: a comparison)
PAPERS["showdown"] = ("Showdown: every method of the library on shared environments, paired "
                      "against the best (no paper's)")
SIZES["paper"]["showdown"] = {**get("showdown").PAPER_SIZE, "size": "full"}
SIZES["small"]["showdown"] = {}  # its defaults are its small size
EXPERIMENTS["showdown"] = ("showdown",)


#: The papers whose claims the index lists, by short name (the showdown has none: it is a
#: comparison, not a paper's claims).
SHORT_NAMES = {"vits": "VITS (Clavier, Huix and Durmus)", "vts": "VTS (Urteaga and Wiggins)",
               "renyi": "the Rényi appendix (most likely Sajid et al. 2022)",
               "opvi": "OPVI (online particle-based variational inference)",
               "diffts": "DiffTS (Kveton et al.)"}


def _run_kwargs(mod, size, name):
    """The experiment's defaults overridden by the size's settings."""
    return {**mod.DEFAULTS, **SIZES[size][name]}


def build(paper="vits", size="paper", out=None, progress=None, only=None, seeds=None):
    """Run a paper's experiments and write its reproduction report.

    Parameters
    ----------
    paper : {"vits", "vts", "renyi", "opvi", "diffts"}
    size : {"paper", "small"}
        :data:`SIZES`.
    out : str, optional
        Output folder (default ``results/report-PAPER``); each experiment writes into a
        subfolder named after it (``NAME-seedS`` for the root seeds after the first), the
        page and ``claims.json`` into ``out`` itself.
    progress : callable or None
        ``progress(message)`` for status lines.
    only : sequence of str, optional
        Experiment names to run (the others are left out of the page).
    seeds : sequence of int, optional
        Root seeds of the experiments whose claims are in the claim table (default
        :data:`SEEDS` of the size); the others run on the first.

    Returns
    -------
    dict
        ``{"paper", "size", "seeds", "files": [report.md, report.html], "claims_json",
        "claims": [...], "experiments": {name: summary of the first seed}}``.
    """
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; available: {', '.join(PAPERS)}")
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    seeds = tuple(SEEDS[size] if seeds is None else seeds)
    if not seeds or len(set(seeds)) != len(seeds) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds):
        raise ValueError(f"seeds must be distinct integers >= 0, got {seeds!r}")
    names = [n for n in EXPERIMENTS[paper] if only is None or n in only]
    if only is not None and not names:
        raise ValueError(f"only={only!r} names none of {EXPERIMENTS[paper]}")
    out = out or os.path.join("results", f"report-{paper}")
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    sections = []
    for name in names:
        mod = get(name)
        in_table = bool(claims.claims_of(name))
        results = []
        for i, seed in enumerate(seeds):
            kwargs = {**_run_kwargs(mod, size, name), "seed": seed}
            if progress:
                progress(f"{name}: {', '.join(f'{k}={v}' for k, v in kwargs.items())}")
            folder = os.path.join(out, name if i == 0 else f"{name}-seed{seed}")
            t_run, c_run = time.perf_counter(), _compile_watch.seconds()
            res = mod.run(out=folder, progress=progress, **kwargs)
            # the summary's times cover the whole experiment (finish_timing's note)
            results.append(finish_timing(res, t_run, _compile_watch.seconds() - c_run))
        found = claims.judged_claims(name, results) if in_table else []
        kwargs = {**_run_kwargs(mod, size, name), "seed": seeds[0]}
        sections.append({"name": name, "module": mod, "kwargs": kwargs, "result": results[0],
                         "results": results, "claims": found, "table": mod.table(results[0])})
    note = _SIZE_NOTE[size] + (_PAPER_EXCEPTIONS.get(paper, "") if size == "paper" else "")
    meta = {"paper": PAPERS[paper], "size": size, "size_note": note, "seeds": seeds,
            "command": f"python -m vits_ref report {paper} --size {size}"
                       + (f" --seeds {' '.join(map(str, seeds))}"
                          if seeds != SEEDS[size] else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "wall_time_s": time.perf_counter() - t0}
    md_path, html_path = os.path.join(out, "report.md"), os.path.join(out, "report.html")
    # atomically (a killed build never leaves a torn page) and recorded in the manifest
    write_output(md_path, to_markdown(meta, sections, out).encode("utf-8"))
    write_output(html_path, to_html(meta, sections).encode("utf-8"))
    found = [c for s in sections for c in s["claims"]]
    json_path = claims.write_claims_json(
        os.path.join(out, "claims.json"), found, paper=paper, size=size, seeds=list(seeds),
        command=meta["command"], date=meta["date"])
    return {"paper": paper, "size": size, "seeds": seeds, "files": [md_path, html_path],
            "claims_json": json_path, "claims": found,
            "experiments": {s["name"]: s["result"] for s in sections}}


def paper_size(experiment):
    """``(runs, rounds)`` of ``experiment`` at the paper's size: its module's
    ``PAPER_SIZE`` where it has one, else its defaults (the paper's where this machine
    allows, each module's docstring says); None for an experiment with no runs."""
    mod = get(experiment)
    size = {**mod.DEFAULTS, **getattr(mod, "PAPER_SIZE", {})}
    if "runs" not in size or "rounds" not in size:
        return None
    return size["runs"], size["rounds"]


def below_paper_size(found):
    """``{experiment: (size run, the paper's runs, rounds)}`` for every experiment of the
    records ``found`` whose run (any seed's) has fewer runs or rounds than the paper's."""
    import re

    out = {}
    for c in found:
        want = paper_size(c["experiment"]) if c["experiment"] in _registered() else None
        for size in c.get("sizes", []):
            got = re.match(r"(\d+) runs x (\d+) ", size or "")
            if want and got and (int(got[1]) < want[0] or int(got[2]) < want[1]):
                out.setdefault(c["experiment"], (size, *want))
    return out


def _registered():
    from . import EXPERIMENTS

    return EXPERIMENTS


def _below_text(found):
    below = below_paper_size(found)
    return "".join(f" Below the paper's size: {name} ran {size} (the paper's: {r} runs x {t} "
                   "rounds); its claims rest on that run." for name, (size, r, t)
                   in below.items())


def _counts_text(sections):
    """The count line: sentences per kind and verdict (:func:`claims.records.tallies_text`),
    then any run below the paper's size."""
    found = [c for s in sections for c in s["claims"]]
    return tallies_text(found) + _below_text(found)


def _seeds_text(meta):
    s = meta["seeds"]
    return (f"Root seeds: {', '.join(map(str, s))} (each seed judged on its own interval; "
            "seeds that disagree give inconclusive, docs/reproduction/judging.md).")


def _data_line(c):
    kind = claims.judging.KINDS[c["kind"]]
    sub = " (substitute data: the verdict is on it)" if c["substitute"] else ""
    sub += " (a reconstructed problem: the verdict is on it)" if c.get("reconstructed") else ""
    where = " The place is a library reading, not the paper's words." \
        if c["library_reading"] else ""
    return (f"- Kind ({c['kind']}): {kind}; margin basis {c['basis']} "
            f"(docs/reproduction/judging.md). Data: {c['data']}{sub}.{where}")


def _figures(result):
    return [f for f in result.get("files", []) if f.endswith(".png") and os.path.exists(f)]


_SIZE_NOTE = {"small": "**Small size**: a few runs of a few rounds, to check that the page "
                       "builds. The verdicts below rest on too few runs to mean anything; "
                       "run `--size paper` for the reproduction.",
              "paper": "**Paper size**: every experiment at its defaults (the paper's sizes "
                       "where this machine allows; each section states its size)."}
#: what the paper size leaves out, per paper
_PAPER_EXCEPTIONS = {"vits": " Except vits-fig2: 2 runs of 20 rounds, its paper size is about "
                             "28 CPU-hours here."}


def to_markdown(meta, sections, out):
    """The report as Markdown (figures linked relative to ``out``)."""
    lines = [f"# Reproduction report: {meta['paper']}", "",
             f"Generated {meta['date']} by `{meta['command']}` in "
             f"{meta['wall_time_s']:.0f} s.", "", meta["size_note"], "", _seeds_text(meta),
             "", _counts_text(sections), "",
             _TABLE_HEAD, "|---|---|---|---|"]
    for s in sections:
        for c in s["claims"]:
            lines.append(_table_row(c))
    for s in sections:
        res = s["result"]
        lines += ["", f"## {s['name']}: {res.get('description', '')}", "",
                  "Run with: " + ", ".join(f"`{k}={v}`" for k, v in s["kwargs"].items())
                  + f" ({res.get('total_wall_time_s', 0):.0f} s).", ""]
        for fig in _figures(res):
            lines += [f"![{s['name']}]({os.path.relpath(fig, out)})", ""]
        lines += ["```", s["table"], "```", ""]
        if not s["claims"]:
            lines += ["No claim of the paper is checked by this experiment.", ""]
        for c in s["claims"]:
            lines += _claim_lines(c)
    return "\n".join(lines) + "\n"


_TABLE_HEAD = "| claim | where | verdict | kind |"


def _verdict_text(c):
    """The verdict as the page prints it: a contradiction that an optimisation of the
    library causes says so, and a timing claim says which judgement it is."""
    from .claims.records import CAUSED_TEXT

    v = f"**{c['verdict']}**"
    if c.get("caused_by_optimisation"):
        v += f" ({CAUSED_TEXT})"
    if c.get("implementation"):
        v += f" [{c['implementation']}]"
    return v


def _table_row(c):
    return f"| {c['id']} | {c['section']} | {_verdict_text(c)} | ({c['kind']}) |"


def _claim_lines(c):
    """A claim's block of the Markdown page."""
    return [f"### {c['id']}: {_verdict_text(c)}", "",
            f"> {c['quote']}", f"> ({c['section']})", "",
            f"- Measured: {c['measured']}", f"- Rule and reading: {c['why']}",
            _data_line(c), ""]


def rejudge_page(folder):
    """Re-judge a written report (``folder/claims.json`` and ``folder/report.md``, as
    :func:`build` writes them) by the claim table's current rule, from the stored per-seed
    intervals (:func:`vits_ref.experiments.claims.records.rejudge`): nothing is run again.
    ``claims.json`` and the page's verdicts, counts and claim blocks are rewritten; the rest
    of the page (figures, tables, sizes) is kept. Returns ``{id: (old, new)}`` for every
    verdict that changed (``old`` None for a claim the page did not have)."""
    from .claims.records import rejudge

    json_path, md_path = os.path.join(folder, "claims.json"), os.path.join(folder, "report.md")
    with open(json_path) as fh:
        doc = json.load(fh)
    old = {c["id"]: c["verdict"] for c in doc["claims"]}
    found = rejudge(doc["claims"], claims.CLAIMS)
    meta = {k: v for k, v in doc.items() if k not in ("confidence", "verdicts", "claims")}
    with open(md_path, encoding="utf-8") as fh:
        page = fh.read()
    title = PAPERS.get(meta.get("paper"))
    write_output(md_path, _rejudged_markdown(page, found, title).encode("utf-8"))
    claims.write_claims_json(json_path, found, **meta)
    return {c["id"]: (old.get(c["id"]), c["verdict"]) for c in found
            if old.get(c["id"]) != c["verdict"]}


def _rejudged_markdown(page, found, title=None):
    """``page`` (a :func:`to_markdown` page) with its counts, verdict table and claim blocks
    rebuilt from the records ``found`` (and its title from ``title``, the paper's line of
    :data:`PAPERS`); the sections' other lines kept."""
    lines = (page[:-1] if page.endswith("\n") else page).split("\n")
    head = lines.index("|---|---|---|---|")
    end = head + 1
    while end < len(lines) and lines[end].startswith("| "):
        end += 1
    sections = [{"claims": found}]
    out = [_counts_text(sections) if ln.startswith("Claims: ") else
           f"# Reproduction report: {title}" if title and ln.startswith("# Reproduction") else
           _TABLE_HEAD if ln.startswith("| claim | where | verdict |") else ln
           for ln in lines[:head + 1]]
    out += [_table_row(c) for c in found]
    by_experiment = {}
    for c in found:
        by_experiment.setdefault(c["experiment"], []).append(c)
    name, skipping = None, False
    for ln in lines[end:]:
        if ln.startswith("## "):
            if skipping:
                out.append("")  # to_markdown's blank line before a section
            elif name is not None:
                out += [x for c in by_experiment.get(name, []) for x in _claim_lines(c)]
            name, skipping = ln[3:].split(":", 1)[0], False
        elif ln.startswith("### ") and name is not None:
            if not skipping:
                out += [x for c in by_experiment.get(name, []) for x in _claim_lines(c)]
            skipping = True
            continue
        if skipping and not ln.startswith("## "):
            continue
        out.append(ln)
    if name is not None and not skipping:
        out += [x for c in by_experiment.get(name, []) for x in _claim_lines(c)]
    return "\n".join(out) + "\n"


_CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.45}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}"
        "blockquote{color:#444;border-left:4px solid #ccc;margin:0;padding-left:1em}"
        "pre{background:#f6f6f6;padding:8px;overflow-x:auto}img{max-width:100%}"
        ".reproduced{color:#1a7f37}.not-reproduced{color:#b42318}"
        ".not-testable-here{color:#8a6d00}.contradicted{color:#b42318}"
        ".inconclusive{color:#8a6d00}")


def _html_label(c):
    """:func:`_verdict_text`'s labels after the verdict, escaped."""
    return html.escape(_verdict_text(c)[len(f"**{c['verdict']}**"):])


def _verdict_html(verdict):
    return f'<b class="{verdict.replace(" ", "-")}">{html.escape(verdict)}</b>'


def _embed(path):
    with open(path, "rb") as fh:
        data = base64.b64encode(fh.read()).decode("ascii")
    return f'<img alt="{html.escape(os.path.basename(path))}" src="data:image/png;base64,{data}">'


def to_html(meta, sections):
    """The report as one self-contained HTML page (figures embedded as data URIs)."""
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Reproduction report"
             f"</title><style>{_CSS}</style></head><body>",
             f"<h1>Reproduction report: {esc(meta['paper'])}</h1>",
             f"<p>Generated {esc(meta['date'])} by <code>{esc(meta['command'])}</code> in "
             f"{meta['wall_time_s']:.0f} s.</p>",
             f"<p>{esc(meta['size_note']).replace('**', '')}</p>",
             f"<p>{esc(_seeds_text(meta))}</p>", f"<p>{esc(_counts_text(sections))}</p>",
             "<table><tr><th>claim</th><th>where</th><th>verdict</th><th>kind</th></tr>"]
    for s in sections:
        for c in s["claims"]:
            parts.append(f"<tr><td><a href='#{esc(c['id'])}'>{esc(c['id'])}</a></td>"
                         f"<td>{esc(c['section'])}</td><td>{_verdict_html(c['verdict'])}"
                         f"{_html_label(c)}</td>"
                         f"<td>({esc(c['kind'])})</td></tr>")
    parts.append("</table>")
    for s in sections:
        res = s["result"]
        run_with = ", ".join(f"<code>{esc(f'{k}={v}')}</code>" for k, v in s["kwargs"].items())
        parts += [f"<h2>{esc(s['name'])}: {esc(res.get('description', ''))}</h2>",
                  f"<p>Run with: {run_with} ({res.get('total_wall_time_s', 0):.0f} s).</p>"]
        parts += [_embed(f) for f in _figures(res)]
        parts.append(f"<pre>{esc(s['table'])}</pre>")
        if not s["claims"]:
            parts.append("<p>No claim of the paper is checked by this experiment.</p>")
        for c in s["claims"]:
            parts += [f"<h3 id='{esc(c['id'])}'>{esc(c['id'])}: {_verdict_html(c['verdict'])}"
                      f"{_html_label(c)}</h3>",
                      f"<blockquote>{esc(c['quote'])}<br>({esc(c['section'])})</blockquote>",
                      f"<ul><li>Measured: {esc(c['measured'])}</li>"
                      f"<li>Rule and reading: {esc(c['why'])}</li>"
                      f"<li>{esc(_data_line(c)[2:])}</li></ul>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _interval_text(seed):
    ci = seed.get("ci")
    if seed.get("estimate") is None:
        return f"seed {seed['seed']}: not measured"
    got = f"{seed['estimate']:+.3g}"
    spread = seed.get("spread")  # repeated timings: the repeats' range beside the interval
    tail = (f" (repeats {spread['min']:.3g} to {spread['max']:.3g})" if spread else "")
    return f"seed {seed['seed']}: {got} [{ci[0]:+.3g}, {ci[1]:+.3g}]{tail}" if ci else \
        f"seed {seed['seed']}: {got} (no interval)"


def _claimed_text(c):
    pct = (lambda v: f"{100 * v:g}%") if c["relative"] else (lambda v: f"{v:g}")
    if c["claimed"] == "equal":
        around = f" around {pct(c['threshold'])}" if c["threshold"] else ""
        return f"within +-{pct(c['margin'])}{around}"
    at = pct(c["threshold"]) if c["threshold"] else "0"
    side = "below" if c["claimed"] == "lower" else "above"
    word = c.get("size_word")
    if word is None:
        return f"{side} {at}"
    sign = "-" if c["claimed"] == "lower" else "+"
    if word == claims.judging.SMALL:
        return f"{side} {at}, by less than {pct(c['margin'])}"
    return f"{side} {at} {sign} {pct(c['margin'])}"


def index_page(docs):
    """The index of every judged claim of the papers whose ``claims.json`` lies in a
    subfolder of ``docs`` (``docs/PAPER/claims.json``, as :func:`build` writes it), as one
    Markdown page. Per paper: the sentences counted in three kinds (:func:`tallies`: (a)
    the paper's sentences on its problems, (b) on substitute or reconstructed data, (c)
    the library's readings; a sentence split into several tests counted once), any run
    below the paper's size, one row per sentence with its tests' verdicts, and one row per
    test: place, verdict, kind, the per-seed intervals, the claimed region, the margin's
    basis and the seeds' sizes. Papers without a ``claims.json`` are listed as such.

    Returns
    -------
    str
    """
    kinds = claims.judging.KINDS
    lines = ["# Every claim of the five papers", "",
             "Each paper's sentences are counted in three kinds, never mixed: **(a)** "
             + kinds["a"] + ", **(b)** " + kinds["b"] + " (a stand-in data set, or a problem "
             "the paper does not specify and the library rebuilt: redrawn from its figures "
             "or taken from its authors' code), **(c)** " + kinds["c"] + " (a figure, table "
             "or algorithm read by the library, not a sentence of the paper). A sentence "
             "split into several tests (per panel, per competitor) counts once: reproduced "
             "or contradicted only if all its tests agree, inconclusive otherwise. Then one "
             "row per test, from each paper's `claims.json` "
             "(docs/reproduction/judging.md states the rule, the margins and their bases). "
             "The interval is each root seed's 95% interval of the measured quantity; "
             "*claimed* is where the claim puts it (a margin in the reference's units when "
             "it is a percentage).", ""]
    missing = []
    for paper in (p for p in PAPERS if p in SHORT_NAMES):
        path = os.path.join(docs, paper, "claims.json")
        if not os.path.exists(path):
            missing.append(paper)
            continue
        with open(path) as fh:
            doc = json.load(fh)
        found = doc["claims"]
        below = below_paper_size(found)
        size = f"{doc.get('size', '?')} size"
        if below:
            size += ", except " + "; ".join(
                f"{name} at {got}, below the paper's {r} runs x {t} rounds"
                for name, (got, r, t) in below.items())
        lines += [f"## {PAPERS[paper]}", "",
                  f"From `{doc.get('command', '')}` ({size}; {doc.get('date', '')}).", ""]
        for k, counts in tallies(found).items():
            n = sum(counts.values())
            lines.append(f"- ({k}) {kinds[k]}: {n} sentence{'s' * (n != 1)}"
                         + (": " + ", ".join(f"{v} {w}" for w, v in counts.items() if v)
                            if n else "") + ".")
        lines += ["", "| sentence | kind | where | tests | verdict |", "|---|---|---|---|---|"]
        for g in sentences(found):
            quote = g["quote"] if len(g["quote"]) <= 160 else g["quote"][:157] + "..."
            tests = ", ".join(f"{i}: {v}" + (" (an optimisation's, not counted)"
                                             if i in g.get("optimised", ()) else "")
                              for i, v in g["verdicts"].items())
            lines.append(f"| {quote} | ({g['kind']}) | {'; '.join(g['sections'])} | {tests} "
                         f"| **{g['verdict']}** |")
        lines += ["", "| claim | where | verdict | kind | intervals per seed | claimed | "
                  "basis | runs |", "|---|---|---|---|---|---|---|---|"]
        for c in found:
            sizes = "; ".join(dict.fromkeys(c.get("sizes", [])))
            if c["experiment"] in below:
                sizes += " (below the paper's size)"
            lines.append(
                f"| {c['id']} | {c['section']} | {_verdict_text(c)} | ({c['kind']}) | "
                + "; ".join(_interval_text(s) for s in c["seeds"])
                + f" | {_claimed_text(c)} | {c['basis']} | {sizes} |")
        lines.append("")
    if missing:
        lines += ["## Papers without a `claims.json` here", "",
                  "; ".join(f"{SHORT_NAMES[p]} (`python -m vits_ref report {p}`)"
                            for p in missing)
                  + ". Each page predates `claims.json`: its command regenerates it and "
                  "lists its claims here.", ""]
    return "\n".join(lines) + "\n"
