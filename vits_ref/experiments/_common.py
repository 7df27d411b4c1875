"""Shared output writing of the experiments: CSV of curves, JSON summary, PNG plot."""

import csv
import json
import os
import platform

import numba
import numpy as np

from ._paired import compare, format_difference


def write_curves_csv(path, rows):
    """``rows``: iterable of dicts with keys panel, method, round, mean, stderr."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["panel", "method", "round", "mean_cumulative_regret", "stderr"])
        for r in rows:
            for t, (m, s) in enumerate(zip(r["mean"], r["stderr"], strict=True), start=1):
                # an undefined standard error (one run) is an empty field
                w.writerow([r["panel"], r["method"], t, f"{m:.6g}",
                            f"{s:.6g}" if np.isfinite(s) else ""])


def environment_info():
    """Versions and thread settings, stored in every JSON summary."""
    return {"python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "machine": platform.machine()}


_NONFINITE_NOTE = {
    "inf": "inf (e.g. a level never reached within the steps run, such as fewer steps "
           "than LMC's burn-in)",
    "-inf": "-inf",
    "nan": "NaN (undefined, e.g. a standard error of a single run)",
}


def _strict(obj, found):
    """``obj`` with NumPy values made plain and non-finite floats replaced by None;
    the kinds replaced ("inf", "-inf", "nan") outside nested dicts are added to the set
    ``found`` (a nested dict notes its own keys)."""
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        if obj != obj:
            found.add("nan")
            return None
        if obj in (float("inf"), float("-inf")):
            found.add("inf" if obj > 0 else "-inf")
            return None
        return obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            kinds = set()
            out[k] = _strict(v, kinds)
            if kinds:
                note = f"{k}_nulls"
                if note not in obj:
                    out[note] = ("null stands for " + " or ".join(
                        _NONFINITE_NOTE[x] for x in sorted(kinds))
                        + ": strict JSON has no Infinity/NaN")
        return out
    if isinstance(obj, (list, tuple)):
        return [_strict(v, found) for v in obj]
    return obj


def write_json(path, obj):
    """Write ``obj`` as strict JSON: no ``Infinity``/``NaN`` tokens. A non-finite value
    becomes null and its key gets a sibling ``KEY_nulls`` saying what the nulls stand for
    (inf, -inf or NaN, and why such values arise). NumPy scalars and arrays become
    plain numbers and lists; other objects their ``str``."""
    clean = _strict(obj, set())
    with open(path, "w") as fh:
        json.dump(clean, fh, indent=2, default=str, allow_nan=False)


def run_panels(name, description, panels, runs, rounds, seed, out, progress=None,
               title=None, extra=None, kl_rounds=None, n_jobs=1, reference=None,
               on_result=None):
    """Run regret experiments panel by panel and write ``curves.csv``, ``summary.json``,
    ``regret.png``; return the summary.

    ``panels``: a list of ``(panel_title, environment, methods, info)`` where ``methods``
    is a list of ``(label, policy)`` or ``(label, [(policy, entry_info), ...])`` (candidates
    tried in order: a candidate that diverges is recorded and the next one runs) and
    ``info`` a dict added to each result entry (e.g. ``{"zeta": 0.1}``). Every method of a
    panel meets the same runs (same ``seed``: the same environment draws) on new instances
    per run. A method all of whose candidates diverge is reported in the summary (and the
    table) instead of stopping the experiment. ``kl_rounds`` records the KL diagnostic of
    Gaussian engines on the linear model, and ``n_jobs`` spreads the runs of policies
    without a fused loop over processes (see :func:`vits_ref.simulate`).

    Each entry keeps the per-run final regrets (``final_regrets``). With ``reference`` (a
    method label, e.g. ``"LinTS"``), every other entry of a panel also gets
    ``paired_vs_reference``: the paired difference of its final regret against the
    reference's on the same runs, with 95% intervals
    (:func:`vits_ref.experiments._paired.paired_difference`). ``on_result(panel, label,
    result)`` is called with each method's :class:`vits_ref.SimulationResult` (e.g. to
    count the arms played) before it is reduced to the summary.

    Timing: before each method's timed call, a throw-away warm-up (1 run x
    ``min(rounds, 2)`` rounds) compiles or loads the kernels; its wall time is recorded as
    ``warmup_s`` (compilation and cache loading, plus 2 rounds), and ``wall_time_s`` and
    ``us_per_round`` measure the runs only. ``total_wall_time_s`` includes the warm-ups.
    """
    import time

    from ..errors import DivergenceError
    from ..simulate import has_kl, simulate

    os.makedirs(out, exist_ok=True)
    rows, summary, curves = [], [], {}
    t0 = time.perf_counter()
    for panel, env, methods, info in panels:
        curves[panel] = {}
        for label, candidates in methods:
            if not isinstance(candidates, list):
                candidates = [(candidates, {})]
            if progress:
                progress(f"{panel}: {label} ({runs} runs x {rounds} rounds)")
            diverged, res, warmup_s = [], None, 0.0
            for policy, cand_info in candidates:
                kl = kl_rounds if has_kl(policy) else None
                # warm-up outside the timing: one run of at most 2 rounds (compilation,
                # Numba cache loading), thrown away, so that wall_time_s and us_per_round
                # measure the runs only. Every run starts from policy.fresh(seed), so the
                # warm-up leaves the results bit-identical; a warm-up that diverges is
                # ignored here (the timed call below raises and records it).
                w0 = time.perf_counter()
                try:
                    simulate(policy, env, n_rounds=min(rounds, 2), n_runs=1, seed=seed,
                             new_instance_per_run=True,
                             kl_rounds=[min(rounds, 2)] if kl is not None and len(kl)
                             else None)
                except DivergenceError:
                    pass
                warmup_s += time.perf_counter() - w0
                try:
                    res = simulate(policy, env, n_rounds=rounds, n_runs=runs, seed=seed,
                                   new_instance_per_run=True,
                                   kl_rounds=kl, n_jobs=n_jobs)
                    break
                except DivergenceError as err:
                    diverged.append({**cand_info, "diverged": str(err)})
                    if progress:
                        progress(f"{panel}: {label} diverged ({err.engine}, run {err.run}, "
                                 f"round {err.round})")
            if res is None:
                summary.append({**info, "panel": panel, "method": label,
                                "diverged_candidates": diverged})
                continue
            if on_result is not None:
                on_result(panel, label, res)
            mean, se = res.mean_and_stderr()
            if runs == 1:  # a standard error of one run is undefined, not 0
                se = np.full_like(mean, np.nan)
            rows.append({"panel": panel, "method": label, "mean": mean, "stderr": se})
            curves[panel][label] = (mean, se)
            entry = {**info, **cand_info, "panel": panel, "method": label,
                     "final_regret_mean": float(mean[-1]),
                     "final_regret_stderr": float(se[-1]),  # NaN (null) for one run
                     "final_regrets": res.cumulative_regret[:, -1].tolist(),
                     "wall_time_s": res.wall_time, "fused": res.fused,
                     "us_per_round": 1e6 * res.wall_time / (runs * rounds),
                     "warmup_s": warmup_s}
            if res.kl is not None:
                entry["kl_rounds"] = res.kl_rounds
                entry["kl_mean"] = res.kl.mean(axis=0)
            if diverged:
                entry["diverged_candidates"] = diverged
            summary.append(entry)
        if reference is not None:
            panel_entries = [e for e in summary if e["panel"] == panel]
            for label, diff in compare(panel_entries, reference).items():
                next(e for e in panel_entries if e["method"] == label)[
                    "paired_vs_reference"] = {"reference": reference, **diff}
    files = [os.path.join(out, f) for f in ("curves.csv", "summary.json", "regret.png")]
    result = {"experiment": name, "description": description, "runs": runs, "rounds": rounds,
              "seed": seed, "reference": reference, **(extra or {}), "results": summary,
              "files": files,
              "total_wall_time_s": time.perf_counter() - t0, "environment": environment_info()}
    write_curves_csv(files[0], rows)
    write_json(files[1], result)
    try:
        from ..plotting import regret_panels

        regret_panels(curves, files[2], title=title)
    except ImportError as exc:
        if progress:
            progress(f"no plot written: {exc}")
    return result


def regret_table(result):
    """Final regrets, one line per panel and method, with the paired difference against
    the reference method (mean and 95% t interval) where the experiment has one."""
    width = max(6, *(len(e["method"]) for e in result["results"]))
    pw = max(18, *(len(e["panel"]) for e in result["results"]))
    ref = result.get("reference")
    head = f"{'panel':{pw}s} {'method':{width}s} {'regret(T)':>10} {'+-se':>7} {'us/round':>10}"
    lines = [head + (f"  {'- ' + ref + ' (paired, 95% CI)':>28}" if ref else "")]
    for e in result["results"]:
        if "final_regret_mean" not in e:
            lines.append(f"{e['panel']:{pw}s} {e['method']:{width}s}   diverged (see "
                         f"summary.json)")
            continue
        se = e.get("final_regret_stderr")
        se = f"{se:7.2f}" if se is not None and np.isfinite(se) else f"{'n/a':>7}"
        line = (f"{e['panel']:{pw}s} {e['method']:{width}s} {e['final_regret_mean']:10.2f} "
                f"{se} {e['us_per_round']:10.1f}")
        if ref:
            diff = e.get("paired_vs_reference")
            line += f"  {format_difference(diff) if diff else '(reference)':>28}"
        lines.append(line)
    return "\n".join(lines)
