"""One showdown page from several runs of the same runs: a method added later, beside the
methods that ran before it, without running those again.

A showdown run's chunks are fingerprinted with its whole list of methods
(:mod:`vits_ref.experiments._chunks`), so a run with one more method computes every
method again. Every method of a panel meets the same runs whatever else runs (run ``r``
is seeded by child ``r`` of ``seed``: the same instance, contexts and reward noise), so
the runs of a method made on its own are the runs it would have had in the larger run.
:func:`combine` puts such summaries together and compares them afresh
(:func:`vits_ref.experiments.showdown.experiment.compare_methods`): the best of each
panel, the paired differences against it and the wheel's ratios to Uniform.

It checks that the summaries are of the same runs: the same runs, rounds and seed, and,
on every panel that two summaries share, the same final regrets for every method they
share (at least one; Uniform costs nothing to run again for this). A method in two
summaries keeps the first one's entry.

Example (docs/reproduction/showdown.md)::

    from vits_ref.experiments.showdown.combine import combine
    combine(["results/showdown-wheel-all/summary.json",
             "results/showdown-wheel-linfullpost/summary.json"],
            out="results/showdown-wheel-combined")
"""

import json
import os

import numpy as np

from .._common import write_json
from .._outputs import write_output
from .catalogue import METHODS
from .experiment import NAME, compare_methods, table

__all__ = ["combine"]

#: The fields that must agree for two summaries to hold the same runs.
SAME_RUNS = ("runs", "rounds", "seed")
_ORDER = {m.label: i for i, m in enumerate(METHODS)}


def _load(path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"paths must be paths of summary.json files, got {path!r}")
    if not os.path.isfile(path):
        raise ValueError(f"paths: {path!r} is not a file (a showdown run's summary.json)")
    with open(path, encoding="utf-8") as fh:
        try:
            summary = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"paths: {path!r} is not JSON ({exc})") from None
    if not isinstance(summary, dict) or summary.get("experiment") != NAME:
        raise ValueError(f"paths: {path!r} is not a showdown summary")
    return summary


def _regrets(entry):
    got = entry.get("final_regrets")
    return None if got is None else np.asarray(got, dtype=float)


def _check_same_runs(base, other, path):
    """Raise unless ``other`` holds the same runs as ``base`` on the panels they share."""
    for key in SAME_RUNS:
        if base.get(key) != other.get(key):
            raise ValueError(f"paths: {path!r} has {key} = {other.get(key)!r}, the first "
                             f"summary {base.get(key)!r}: not the same runs")
    mine = {(e["panel"], e["method"]): e for e in base["results"]}
    for panel in dict.fromkeys(e["panel"] for e in other["results"]):
        if not any(e["panel"] == panel for e in base["results"]):
            continue
        shared = 0
        for e in (x for x in other["results"] if x["panel"] == panel):
            twin = mine.get((panel, e["method"]))
            if twin is None:
                continue
            a, b = _regrets(twin), _regrets(e)
            if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b)):
                raise ValueError(f"paths: {path!r}: {e['method']} on {panel!r} has other "
                                 "final regrets than in the first summary: not the same "
                                 "runs (another version of the library or of the method?)")
            shared += a is not None
        if not shared:
            raise ValueError(f"paths: {path!r} shares no method that ran with the first "
                             f"summary on {panel!r}, so the runs cannot be checked to be "
                             "the same: run Uniform with it")


def combine(paths, out=None):
    """Put showdown summaries of the same runs together and compare them afresh.

    Parameters
    ----------
    paths : sequence of str
        Two or more ``summary.json`` files of showdown runs with the same ``runs``,
        ``rounds`` and ``seed``; on every panel two of them share, at least one method
        in both with the same final regrets (the check that they are the same runs).
    out : str, optional
        A folder to write the combined ``summary.json`` and ``showdown.md`` into.

    Returns
    -------
    dict
        The first summary, with the other summaries' entries added (each panel's entries
        in the catalogue's order of methods), ``hyperparameters``, ``environments`` and
        ``not_applicable`` merged, the comparisons of
        :func:`~vits_ref.experiments.showdown.experiment.compare_methods` recomputed, and
        ``combined_from`` (the paths). Timings stay those of each run.

    Raises
    ------
    ValueError
        Fewer than two paths, a file that is not a showdown summary, or summaries that
        are not of the same runs.
    """
    if isinstance(paths, (str, os.PathLike)) or len(paths) < 2:
        raise ValueError(f"paths must be two or more summary.json files, got {paths!r}")
    summaries = [_load(p) for p in paths]  # fresh from the files: extended in place
    result = summaries[0]
    for path, other in zip(paths[1:], summaries[1:], strict=True):
        _check_same_runs(result, other, path)
        have = {(e["panel"], e["method"]) for e in result["results"]}
        result["results"] += [e for e in other["results"]
                              if (e["panel"], e["method"]) not in have]
        for key in ("hyperparameters", "environments"):
            for panel, value in other.get(key, {}).items():
                merged = result.setdefault(key, {}).setdefault(panel, {})
                for name, item in value.items():
                    merged.setdefault(name, item)
        seen = {(s["panel"], s["method"]) for s in result.get("not_applicable", [])}
        result.setdefault("not_applicable", []).extend(
            s for s in other.get("not_applicable", []) if (s["panel"], s["method"]) not in seen)
    panels = list(dict.fromkeys(e["panel"] for e in result["results"]))
    result["results"] = sorted(result["results"], key=lambda e: (
        panels.index(e["panel"]), _ORDER.get(e["method"], len(_ORDER))))
    result["combined_from"] = [os.fspath(p) for p in paths]
    result.pop("files", None)
    compare_methods(result, panels)
    if out is not None:
        os.makedirs(out, exist_ok=True)
        result["files"] = [os.path.join(out, "summary.json"), os.path.join(out, "showdown.md")]
        write_json(result["files"][0], result)
        write_output(result["files"][1], (table(result) + "\n").encode("utf-8"))
    return result
