"""The showdown: every method of the library on shared environments, on one page.

Riquelme, Tucker and Snoek (2018, "Deep Bayesian Bandits Showdown") compare approximate
posteriors for Thompson sampling (exact linear, neural-linear, variational, dropout,
bootstrap, ...) on shared problems, the wheel bandit among them; the VITS paper's appendix
G compares LinTS, LMC-TS, VITS and VTS on its hard instance (``vits-figG``). Here every
method of the library (:data:`~vits_ref.experiments.showdown.catalogue.METHODS`: Uniform,
LinTS, LinUCB, LMC-TS, Laplace, VITS-I, VITS-II, VITS-HF, Kveton et al.'s DiffTS chain over
a Gaussian prior, VTS, SVGD-TS, OPVI-TS, Rényi VI) meets every environment
(:data:`~vits_ref.experiments.showdown.catalogue.ENVIRONMENTS`: the linear pool, the
logistic hard instance, the wheel bandit of Riquelme et al. at their five ``delta``, and
scikit-learn's wine and breast cancer data sets as classification bandits; digits too at
the full size) on the same runs: run ``r`` of every method has the same instance, contexts
and reward noise (the runner's seeds), so every method is compared with the best one of
its environment by the paired difference of their final regrets, and on the wheel with
the Uniform policy by the ratio of their mean regrets (:func:`versus_uniform`, the form
of Riquelme et al.'s wheel table).

For each environment and method the table gives the cumulative regret at ``T`` (mean and
standard error over the runs), its paired difference with the environment's best method
with a 95% t interval (:mod:`~vits_ref.experiments.showdown.versus_best`: how to read
it), the wall time per round, and ``KL(q_T || p_T)`` of the engine's Gaussian ``q`` to the
exact posterior of the linear-Gaussian model it fits where that posterior exists (Gaussian
engines on the linear model: the pool and the wheel). A method that cannot run on an
environment is listed as not applicable with the reason: with the disjoint encoding
(:mod:`vits_ref.envs.disjoint`) every method has a model for every environment, so none
is today.

Time per round: every run is simulated on one thread (``n_threads=1``, also for the
compiled loops that would otherwise spread the runs over the cores), so the times compare
the methods' own costs; ``--jobs N`` runs chunks of runs in parallel processes instead.
The compiled paths (the fused loop, VTS's and DiffTS's drivers) have no per-round Python
overhead; the others (Laplace on the linear model, Rényi VI, the particle engines, the
logistic DiffTS chain) run in the runner's Python loop.

Sizes: ``run`` (``python -m vits_ref run showdown``) defaults to the small size, 5 runs
of 200 rounds on the five environments of ``size="small"`` (the wheel at ``delta = 0.95``
only; a few minutes on 2 cores with the kernels compiled); ``size="wheel"`` is the five
wheels; ``--paper`` (:data:`PAPER_SIZE`) is the full size: 50 runs of 2000 rounds on every
environment, digits added, in resumable chunks of runs (``--chunk-runs``; a rerun of the
same command reuses the finished chunks). docs/reproduction/showdown.md shows the runs
made here, their sizes and commands, and the cost of the full one.
"""

import os

import numpy as np

from ...bandit.simulate import simulate
from .._chunks import check_progress
from .._common import run_panels, write_json
from .._outputs import write_output
from .._paired import format_difference
from ..plotting import paper_title
from .catalogue import ENVIRONMENTS, METHODS, SIZES, UNIFORM, WHEELS, NotApplicable, model_for
from .versus_best import versus_best

#: The figure's title by file (sizes are appended at run time).
TITLES = {"regret.png": paper_title("showdown", "every method on shared environments")}

NAME = "showdown"
DESCRIPTION = ("Showdown: every method of the library on shared environments, paired "
               "against the best")
DEFAULTS = {"runs": 5, "rounds": 200, "seed": 0}
#: The full size's runs and rounds (``--paper``); ``size="full"`` adds digits
#: (``python -m vits_ref report showdown --size paper`` runs both).
PAPER_SIZE = {"runs": 50, "rounds": 2000}
#: scikit-learn ships the classification data sets (the ``data`` extra), checked by the
#: command line before any work
NEEDS = (("sklearn", "scikit-learn", "data", True),)


def simulate_serial(policy, env, **kwargs):
    """:func:`vits_ref.bandit.simulate` on one thread, so that the wall time per round of
    every method measures its own cost (module docstring); the numbers do not depend on
    the threads."""
    return simulate(policy, env, n_threads=1, **kwargs)


#: read by the cost estimate (:func:`vits_ref.experiments._common._chunk_threads`)
simulate_serial.n_threads = 1


def run(runs=5, rounds=200, seed=0, out="results/showdown", progress=None, size="small",
        environments=None, methods=None, n_jobs=1):
    """Run every method on every environment; write ``curves.csv``, ``summary.json``,
    ``regret.png`` and ``showdown.md``.

    Parameters
    ----------
    runs, rounds, seed, out, progress
        As every experiment's ``run`` (:class:`~vits_ref.experiments.Experiment`).
    size : {"small", "wheel", "full"}, default "small"
        Which environments (:data:`~vits_ref.experiments.showdown.catalogue.SIZES`).
    environments, methods : sequence of str, optional
        Keys of :data:`~vits_ref.experiments.showdown.catalogue.ENVIRONMENTS` and labels of
        :data:`~vits_ref.experiments.showdown.catalogue.METHODS` to run instead of all.
    n_jobs : int, default 1
        Worker processes for the chunks (results do not depend on it).

    Returns
    -------
    dict
        The summary of :func:`vits_ref.experiments._common.run_panels`; every entry that
        ran also has ``paired_vs_best`` (its paired difference with the best method of
        its environment; absent for the best) and ``kl_at_T`` or ``kl_note``; plus
        ``best`` (``{environment: method}``), ``not_applicable`` (``[{panel, method,
        reason}]``) and ``wheel_vs_uniform`` (:func:`versus_uniform`).
    """
    check_progress(progress)
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    keys = list(SIZES[size] if environments is None else environments)
    unknown = [k for k in keys if k not in ENVIRONMENTS]
    if unknown or not keys:
        raise ValueError(f"environments must be keys of {sorted(ENVIRONMENTS)}, got {keys!r}")
    labels = [m.label for m in METHODS]
    chosen = [m for m in METHODS if methods is None or m.label in methods]
    if methods is not None and (set(methods) - set(labels) or not chosen):
        raise ValueError(f"methods must be labels of {labels}, got {list(methods)!r}")
    panels, hyper, skipped = [], {}, []
    for key in keys:
        setting = ENVIRONMENTS[key]
        env = setting.make(seed)
        lines = []
        for m in chosen:
            try:
                policy, params = m.make(setting, env)
            except NotApplicable as why:
                skipped.append({"panel": setting.title, "method": m.label,
                                "reason": str(why)})
                continue
            hyper.setdefault(setting.title, {})[m.label] = params
            lines.append((m.label, [(policy, {"hyperparameters": params})]))
        panels.append((setting.title, env, lines,
                       {"environment": key, "model": model_for(setting)}))
    kl_rounds = sorted({max(1, rounds // 2), rounds})
    extra = {"size": size, "environments": {ENVIRONMENTS[k].title: {
                 "key": k, "note": ENVIRONMENTS[k].note, "dim": env.dim,
                 "n_arms": env.n_arms, "binary_rewards": ENVIRONMENTS[k].binary}
                 for k, (_, env, _, _) in zip(keys, panels, strict=True)},
             "hyperparameters": hyper, "not_applicable": skipped}
    result = run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                        title=f"{TITLES['regret.png']} ({runs} runs x {rounds} rounds)",
                        extra=extra,
                        kl_rounds=kl_rounds, n_jobs=n_jobs, simulate_fn=simulate_serial)
    compare_methods(result, [panel for panel, _, _, _ in panels])
    path = os.path.join(out, "showdown.md")
    write_output(path, (table(result) + "\n").encode("utf-8"))
    result["files"].append(path)
    write_json(result["files"][1], result)  # again, with the comparisons to the best
    return result


def compare_methods(result, panels=None):
    """The comparisons of a summary's entries, in place: ``best`` (``{panel: method}``),
    every entry's ``paired_vs_best`` (against its panel's best; absent for the best) and
    ``kl_at_T`` or ``kl_note``, and ``wheel_vs_uniform`` (:func:`versus_uniform`).

    ``panels``: the panels to compare, in order (default: those of the entries). Earlier
    comparisons are replaced, so a summary whose entries changed (e.g.
    :func:`vits_ref.experiments.showdown.combine.combine`) is compared afresh. Returns
    ``result``."""
    if panels is None:
        panels = list(dict.fromkeys(e["panel"] for e in result["results"]))
    result["best"] = {}
    for panel in panels:
        entries = [e for e in result["results"] if e["panel"] == panel]
        best, diffs = versus_best([e for e in entries if "final_regrets" in e])
        result["best"][panel] = best
        for e in entries:
            e.pop("paired_vs_best", None)
            if e["method"] in diffs:
                e["paired_vs_best"] = {"best": best, **diffs[e["method"]]}
            _kl_fields(e)
    result["wheel_vs_uniform"] = versus_uniform(result)
    return result


def versus_uniform(result):
    """The wheel's table as Riquelme et al. give it: every method's mean final regret over
    the Uniform policy's, on each wheel panel that ran with Uniform.

    The ratio is ``mean(a) / mean(Uniform) = 1 - reduction`` with the paired BCa bootstrap
    interval of :class:`vits_ref.experiments.claims.measures.PairedStatistic`
    (``"reduction"``: the runs resampled together, the same runs for both methods).

    Returns
    -------
    dict
        ``{panel: {method: {"ratio", "low", "high", "n"} or {"why"}}}``: ``low``/``high``
        the 95% interval of the ratio; ``why`` when there is none (fewer than 3 runs, a
        method that did not run).
    """
    from ..claims.measures import PairedStatistic

    wheels = {ENVIRONMENTS[k].title for k in WHEELS}
    out = {}
    for panel in dict.fromkeys(e["panel"] for e in result["results"]):
        entries = [e for e in result["results"] if e["panel"] == panel]
        if panel not in wheels or not any(e["method"] == UNIFORM and "final_regrets" in e
                                          for e in entries):
            continue
        out[panel] = {}
        for e in entries:
            if e["method"] == UNIFORM:
                continue
            got = PairedStatistic(panel, e["method"], UNIFORM, "reduction").measure(result)
            out[panel][e["method"]] = (
                {"why": got} if isinstance(got, str) else
                {"ratio": 1.0 - got.estimate, "low": 1.0 - got.high, "high": 1.0 - got.low,
                 "n": got.n})
    return out


def wheel_markdown(result):
    """The wheel's normalised table: one row per method, one column per delta; a cell is
    ``100 x mean(method) / mean(Uniform)`` of the final regrets with its 95% paired
    bootstrap interval (:func:`versus_uniform`). Uniform's row is 100 by definition."""
    table = result.get("wheel_vs_uniform") or {}
    panels = list(table)
    head = ["method", *panels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
             "| " + " | ".join([UNIFORM, *["100"] * len(panels)]) + " |"]
    methods = list(dict.fromkeys(m for p in panels for m in table[p]))
    for m in methods:
        cells = []
        for p in panels:
            c = table[p].get(m)
            cells.append("n/a" if c is None or "why" in c else
                         f"{100 * c['ratio']:.1f} [{100 * c['low']:.1f}, {100 * c['high']:.1f}]")
        lines.append("| " + " | ".join([m, *cells]) + " |")
    lines += ["", f"Final regret at T = {result['rounds']} over Uniform's, x 100 (Uniform = "
              f"100), mean over {result['runs']} runs with the 95% paired BCa bootstrap "
              "interval of the ratio of means."]
    return "\n".join(lines)


def _kl_fields(entry):
    """``kl_at_T`` (the KL at the last recorded round) or ``kl_note`` (why there is none)."""
    kl = entry.get("kl_mean")
    if kl is not None and len(kl):
        entry["kl_at_T"] = float(np.asarray(kl)[-1])
    elif "final_regrets" in entry:
        logistic = entry.get("hyperparameters", {}).get("model") == "logistic"
        entry["kl_note"] = ("no closed-form posterior (logistic model)" if logistic
                            else "no Gaussian q (not a Gaussian engine)")


def _cell(entry):
    if "final_regrets" not in entry:
        return ["diverged (summary.json)", "", "", ""]
    se = entry.get("final_regret_stderr")
    regret = (f"{entry['final_regret_mean']:.1f} ± {se:.1f}"
              if se is not None and np.isfinite(se) else f"{entry['final_regret_mean']:.1f}")
    diff = entry.get("paired_vs_best")
    vs = "**best**" if diff is None else format_difference(diff)
    if diff is not None and diff.get("verdict") == "higher":
        vs += " worse"
    kl = entry.get("kl_at_T")
    kl = f"{kl:.3g}" if kl is not None else "n/a"
    return [regret, vs, f"{entry['us_per_round']:.0f}", kl]


def markdown(result):
    """The showdown's table as Markdown: one row per environment and method."""
    head = ["environment", "method", f"regret at T = {result['rounds']} (mean ± se)",
            "− best (paired 95% CI)", "µs / round", "KL(q ‖ p) at T"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    skipped = {(s["panel"], s["method"]): s["reason"]
               for s in result.get("not_applicable", [])}
    panels = list(dict.fromkeys(e["panel"] for e in result["results"]))
    panels += [p for p, _ in skipped if p not in panels]
    for panel in panels:
        for e in (x for x in result["results"] if x["panel"] == panel):
            lines.append("| " + " | ".join([panel, e["method"], *_cell(e)]) + " |")
        for (p, m), why in skipped.items():
            if p == panel:
                lines.append(f"| {panel} | {m} | not applicable: {why} | | | |")
    notes = sorted({e["kl_note"] for e in result["results"] if "kl_note" in e})
    lines += ["", f"{result['runs']} runs x {result['rounds']} rounds, seed {result['seed']}; "
              "'worse': the paired interval lies above 0. KL n/a: " + "; ".join(notes) + "."]
    return "\n".join(lines)


def table(result):
    """The page's tables: :func:`markdown`, then :func:`wheel_markdown` where wheels ran
    with Uniform (also the report page's table)."""
    text = markdown(result)
    if result.get("wheel_vs_uniform"):
        text += "\n\n" + wheel_markdown(result)
    return text
