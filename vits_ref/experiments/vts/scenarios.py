"""Figures 2 and 3 of the VTS paper: scenarios A and B with K = 1, 2, 3 mixture components.

Setup (Urteaga & Wiggins, section 4, eqs. 18-19; :func:`vits_ref.envs.vts_scenario`): two arms, a
context ``x ~ U(0, 1)^2`` shared by the arms each round, every arm's reward a mixture of
two linear-Gaussian experts with unit variances. VTS (:class:`vits_ref.VTS`) models each
arm with ``K`` experts, ``K`` in {1, 2, 3}; ``K = 1`` is NIG Thompson sampling, the exact
conjugate posterior (the paper: "VTS with K = 1 is equivalent to a vanilla Thompson
sampling approach with a linear contextual Gaussian model assumption"), and is the
reference of the paired differences.

The paper reports means over 2000 realisations of 500 rounds (the defaults here) and, at
``t = 500``, a cumulative-regret reduction of ``K = 2`` against ``K = 1`` of 14% (A) and
28% (B). Every ``K`` meets the same contexts and rewards run by run (common random numbers,
the seeding of :func:`vits_ref.bandit.simulate`), so the per-run differences give paired 95%
intervals (:func:`vits_ref.experiments._paired.paired_difference`); the relative reduction
``1 - mean(K = 2)/mean(K = 1)`` gets a paired BCa bootstrap interval (resampling runs).

Figure 3: the per-arm mean squared error of the expected reward (eq. 21),
``MSE_a(t) = 1/t sum_{s <= t} (mu_hat_as - mu_as)^2``, with ``mu_hat_as`` the variational
posterior mean of arm ``a``'s expected reward, ``sum_k E_q[pi_k] x_s u_k``, before the draw
of round ``s`` (the authors' code plotted its one-sample Monte Carlo average of the
Thompson score instead; the posterior mean is the estimate without the sampling noise).

Hyperparameters (the paper states none; the authors' code,
``scripts/evaluate_VariationalContextualBanditsSampling.py`` of iurteaga/bandits):
``gamma0 = 1``, ``alpha0 = beta0 = 1``, ``V0 = I``, ``u0_k = k (1, 1)``; scoring by sampled
proportions (eq. 16) with ``(w, s2)`` drawn from the factors. CAVI stops at a relative
ELBO improvement of ``1e-5`` or 100 iterations, warm-started from the previous round
(:data:`vits_ref.inference.vts.DEFAULT_TOL`).

Findings at the paper size (seed 0; the report judges them with the claim table,
:mod:`vits_ref.experiments.claims`): in B,
K = 2 cuts the regret of K = 1 by 31% [26, 36] (the paper: 28%); in A it *raises* it by
12% [8, 15] (the paper: a 14% cut). In A each arm's two experts are close (slopes 0 and 1,
2 and 3 against unit noise), so one linear-Gaussian expert is nearly the true model (the
mean is linear in ``x`` in both scenarios), and the mixture's extra parameters cost
exploration. A sensitivity run (1000 runs, K = 2 against K = 1, same seeds) found no
variant that beats K = 1 in A: eq. (17) scoring +3% [-1, +7], symmetric priors ``u0 = 0``
-9% [-14, -4], ``u0 = (-1.5, +1.5)`` -16%, ``tol = 1e-4`` -11%, ``V0 = 10 I`` -111%;
in B all but one cut the regret (eq. 17 25%, ``tol = 1e-4`` 28%, ``V0 = 10 I`` 18%,
symmetric ``u0`` 5% [-7, +16]). Eq. (15) (a sampled expert's mean, not the arm's) is far
worse in both (regret +140% and +133%), against the paper's "no significant
differences between the three approaches". The MSE panels also depend on the prior:
``u0_k = k (1, 1)`` puts K = 2's prior experts exactly on scenario A's arm 0.

The scoring rules: the paper scores by eq. (16) and reports "no significant cumulative
regret differences between the three approaches" (eqs. 15-17); ``run`` also runs ``K = 2``
with eqs. (15) and (17) on the same runs (:data:`OTHER_SCORINGS`; entries ``"K = 2, eq.
(15)"`` and ``"K = 2, eq. (17)"``, in the summary and the tables, not the figures), which
the claim table judges against eq. (16).

Cost: every run is compiled (:func:`vits_ref.bandit.vts.simulate_vts`, ``prange`` over runs). The
paper size, 2000 runs x 500 rounds x 3 K x 2 scenarios (6 million rounds), took 148 s on
the 2-core development machine, 17 s of it the first call's compilation, while another
process held one of the two cores (146 s of CPU time: the runs had one core): K = 1
2.4 s per scenario (closed form), K = 2 23 s and K = 3 35 s (CAVI, 2.7-3.5 iterations
per round on average, the 100-iteration cap reached in fewer than 3 rounds in 10 000).
``summary.json`` records each method's time.

Execution: every scenario and ``K`` runs in resumable chunks of runs
(:func:`vits_ref.experiments._chunks.map_runs`, ``out/chunks/<scenario>-K<K>`` and
``out/manifest.json``; :func:`run_block` computes a block with the seeds
:func:`vits_ref.bandit.vts.simulate_vts` gives those runs): rerunning the same command reuses
the finished chunks, and the results are bit-identical whatever the chunking or the
executor (``--jobs``, Dask).
"""

import csv
import functools
import os
import time

import numpy as np

from ...bandit.vts import VTSSimulationResult, simulate_vts
from ...envs import vts_scenario
from ...inference.vts import VTS
from .. import _chunks
from .._chunks import check_progress
from .._common import environment_info, regret_table, write_curves_csv, write_json
from .._outputs import text_output
from .._paired import (
    _bootstrap_rng,
    compare,
)
from ..plotting import paper_title

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("vts", "Figure 2: scenarios A and B"),
          "mse.png": paper_title("vts", "Figure 3: MSE of the expected reward")}

NAME = "vts-scenarios"
DESCRIPTION = "VTS paper Figures 2-3: scenarios A and B, K = 1, 2, 3 experts (2 arms, d = 2)"
DEFAULTS = {"runs": 2000, "rounds": 500, "seed": 0}
SCENARIOS = ("A", "B")
COMPONENTS = (1, 2, 3)
REFERENCE = "K = 1"
#: The paper's reductions of the cumulative regret at t = 500, K = 2 against K = 1.
PAPER_REDUCTION = {"A": 0.14, "B": 0.28}
DIM, N_ARMS = 2, 2
#: The scoring rules other than the paper's eq. (16), run at K = 2 (``run(other_scorings=)``):
#: eq. (15) scores an arm with a sampled expert's mean, eq. (17) with the expected mixture.
OTHER_SCORINGS = {"sample_z": "eq. (15)", "expected_pi": "eq. (17)"}


def label(K):
    """The method label of ``K`` components (``"K = 2"``)."""
    return f"K = {K}"


def scoring_label(K, eq):
    """The label of ``K`` components scored by another rule (``"K = 2, eq. (15)"``)."""
    return f"{label(K)}, {eq}"


def panel_title(scenario):
    """``"scenario A"``."""
    return f"scenario {scenario}"


def reduction(x_ref, x, confidence=0.95, n_resamples=9999, seed=0):
    """``1 - mean(x)/mean(x_ref)`` over paired runs, with a paired BCa bootstrap interval.

    Returns ``{"value", "ci"}`` (``ci`` None with fewer than 2 runs).
    """
    from scipy import stats

    x_ref, x = np.asarray(x_ref, float), np.asarray(x, float)
    value = float(1.0 - x.mean() / x_ref.mean())
    if x.size < 2 or np.ptp(x - x_ref) == 0.0:
        return {"value": value, "ci": None if x.size < 2 else [value, value]}

    def stat(a, b, axis=-1):
        return 1.0 - np.mean(b, axis=axis) / np.mean(a, axis=axis)

    boot = stats.bootstrap((x_ref, x), stat, paired=True, vectorized=True,
                           confidence_level=confidence, n_resamples=n_resamples,
                           method="BCa", **_bootstrap_rng(stats, seed))
    return {"value": value, "ci": [float(boot.confidence_interval.low),
                                   float(boot.confidence_interval.high)]}


def run(runs=2000, rounds=500, seed=0, out="results/vts-scenarios", progress=None,
        components=COMPONENTS, scoring="sample_pi", n_threads=None, other_scorings=True):
    """Run both scenarios for every ``K``; write ``curves.csv``, ``mse.csv``,
    ``summary.json``, ``regret.png`` and ``mse.png``.

    Parameters
    ----------
    runs, rounds, seed, out, progress
        As every experiment's ``run`` (:class:`~vits_ref.experiments.Experiment`); ``out``
        is created, ``progress(message)`` (or None) takes the status lines.
    components : sequence of int
        The ``K`` to run (1, the reference, is always run).
    scoring : {"sample_pi", "sample_z", "expected_pi"}
        Urteaga & Wiggins eq. (16), (15) or (17).
    n_threads : int or None
        Numba threads of the driver over runs (results do not depend on it).
    other_scorings : bool, default True
        With the paper's scoring (eq. 16) and ``K = 2``, also run ``K = 2`` with eqs. (15)
        and (17) (:data:`OTHER_SCORINGS`, entries ``"K = 2, eq. (15)"``, ...) on the same
        runs, for the paper's "no significant cumulative regret differences between the
        three approaches"; in the summary and the tables, not in the figures.

    Runs in resumable chunks of runs (``out/chunks``; see the module docstring).

    Returns
    -------
    dict
        The JSON summary: per scenario and ``K`` the final regrets of every run, their
        paired difference against ``K = 1`` (``paired_vs_reference``) and, for ``K > 1``,
        the relative ``reduction`` with its interval; the per-arm MSE curves and final
        per-run MSEs; CAVI iterations; wall times. ``claims`` evaluates the paper's claims.
    """
    check_progress(progress)
    from ..plotting import plotted, regret_panels

    Ks = sorted(set(components) | {1})
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    results, rows, curves, mse_curves = [], [], {}, {}
    for scen in SCENARIOS:
        panel = panel_title(scen)
        curves[panel], mse_curves[panel] = {}, {}
        for K in Ks:
            entry, mean, se, mse = _method_entry(scen, K, scoring, runs, rounds, seed, out,
                                                 progress, n_threads, label(K))
            rows.append({"panel": panel, "method": label(K), "mean": mean, "stderr": se})
            curves[panel][label(K)] = (mean, se)
            mse_curves[panel][label(K)] = mse
            results.append(entry)
        # the other two scoring rules at K = 2: in the summary and the tables, not in the
        # figures (the paper leaves them out of Fig. 2 "to avoid unnecessary clutter")
        if other_scorings and scoring == "sample_pi" and 2 in Ks:
            for other, eq in OTHER_SCORINGS.items():
                entry, *_ = _method_entry(scen, 2, other, runs, rounds, seed, out, progress,
                                          n_threads, scoring_label(2, eq))
                results.append({**entry, "plotted": False})
        entries = [e for e in results if e["panel"] == panel]
        for lab, diff in compare(entries, REFERENCE).items():
            e = next(e for e in entries if e["method"] == lab)
            e["paired_vs_reference"] = {"reference": REFERENCE, **diff}
            ref = next(e for e in entries if e["method"] == REFERENCE)
            e["reduction"] = reduction(ref["final_regrets"], e["final_regrets"])
    pol = VTS(DIM, N_ARMS, seed=0)  # tol and max_iter: the same for every K and scoring
    files = [os.path.join(out, f) for f in ("curves.csv", "mse.csv", "summary.json",
                                           "regret.png", "mse.png")]
    write_curves_csv(files[0], rows)
    _write_mse_csv(files[1], mse_curves)
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "rounds": rounds,
              "seed": seed, "reference": REFERENCE, "scoring": scoring,
              "hyperparameters": {"gamma0": 1.0, "u0": "u0_k = k (1, 1)", "V0": "I",
                                  "alpha0": 1.0, "beta0": 1.0, "tol": pol.tol,
                                  "max_iter": pol.max_iter, "sample_params": True},
              "paper_reduction": PAPER_REDUCTION, "results": results, "files": files,
              "total_wall_time_s": time.perf_counter() - t0,
              "environment": environment_info()}
    def draw():
        regret_panels(curves, files[3], title=f"{TITLES['regret.png']} ({runs} runs)")
        mse_panels(mse_curves, files[4], title=f"{TITLES['mse.png']} ({runs} runs)")

    if not plotted(draw, progress):
        result["files"] = files[:3]
    result["total_wall_time_s"] = time.perf_counter() - t0
    write_json(files[2], result)
    return result


def _method_entry(scen, K, scoring, runs, rounds, seed, out, progress, n_threads, lab):
    """One method's runs in scenario ``scen`` (``K`` experts, ``scoring``), in resumable
    chunks; returns its summary entry, the mean and standard error of its cumulative
    regret, and its MSE curves."""
    env = vts_scenario(scen)
    panel = panel_title(scen)
    pol = VTS(DIM, N_ARMS, n_components=K, scoring=scoring, seed=0)
    if progress:
        progress(f"{panel}: {lab} ({runs} runs x {rounds} rounds)")
    # the chunks of the paper's rule keep their names (earlier outputs resume)
    stage = f"{scen}-K{K}" + ("" if scoring == "sample_pi" else f"-{scoring}")
    blocks = _chunks.map_runs(
        functools.partial(run_block, scen, K, scoring, rounds, seed, n_threads), runs,
        out, NAME, stage, {"scenario": scen, "K": K, "scoring": scoring,
                           "runs": runs, "rounds": rounds, "seed": seed},
        progress, work_per_run=rounds)
    res = VTSSimulationResult(
        pol.name, repr(env), blocks["regret"], blocks["arms"], np.zeros(0, np.int64),
        None, blocks["wall_time_s"], True, seed,
        reward_sq_error=blocks["reward_sq_error"],
        cavi_iterations=blocks["cavi_iterations"])
    mean, se = res.mean_and_stderr()
    if runs == 1:  # a standard error of one run is undefined, not 0: NaN (null,
        se = np.full_like(mean, np.nan)  # "n/a" in the table, no band drawn)
    mse = res.mse()
    final_mse = res.reward_sq_error.mean(axis=1)  # (runs, arms): MSE_a(T) per run
    it = res.cavi_iterations
    entry = {
        "panel": panel, "scenario": scen, "method": lab, "n_components": K,
        "final_regret_mean": float(mean[-1]), "final_regret_stderr": float(se[-1]),
        "final_regret_sd": float(res.cumulative_regret[:, -1].std(ddof=1))
        if runs > 1 else float("nan"),
        "final_regrets": res.cumulative_regret[:, -1].tolist(),
        "final_mse": final_mse.T.tolist(), "mse_final_mean": mse[-1].tolist(),
        "optimal_arm_fraction": float((res.arms == 1).mean()),
        "cavi_iterations_mean": float(it.mean()), "cavi_iterations_max": int(it.max()),
        "cavi_cap_reached_fraction": float((it >= pol.max_iter).mean()),
        "wall_time_s": res.wall_time,
        "us_per_round": 1e6 * res.wall_time / (runs * rounds)}
    if scoring != "sample_pi":
        entry["scoring"] = scoring
    return entry, mean, se, mse


def run_block(scenario, K, scoring, rounds, seed, n_threads, lo, hi):
    """Runs ``lo, ..., hi - 1`` of scenario ``scenario`` with ``K`` experts, in the
    compiled driver of :func:`vits_ref.bandit.vts.simulate_vts` and with its seeds (run
    ``r``: child ``r`` of ``seed``), so that the blocks equal one call over all runs, bit
    for bit (a chunk of :func:`vits_ref.experiments._chunks.map_runs`).

    Returns ``{"regret", "arms", "reward_sq_error", "cavi_iterations"}`` (leading axis the
    runs) and ``wall_time_s``. Raises :class:`vits_ref.DivergenceError` (with the run's
    index) as :func:`~vits_ref.bandit.vts.simulate_vts` does.
    """
    policy = VTS(DIM, N_ARMS, n_components=K, scoring=scoring, seed=0)
    res = simulate_vts(policy, vts_scenario(scenario), rounds, hi - lo, seed=seed,
                       n_threads=n_threads, first_run=lo)
    return {"regret": res.regret, "arms": res.arms, "reward_sq_error": res.reward_sq_error,
            "cavi_iterations": res.cavi_iterations, "wall_time_s": res.wall_time}


def _write_mse_csv(path, mse_curves):
    with text_output(path) as fh:
        w = csv.writer(fh)
        w.writerow(["panel", "method", "arm", "round", "mse"])
        for panel, by_method in mse_curves.items():
            for method, mse in by_method.items():
                for a in range(mse.shape[1]):
                    for t, m in enumerate(mse[:, a], start=1):
                        w.writerow([panel, method, a, t, f"{m:.6g}"])


def mse_panels(mse_curves, path, title=None):
    """Figure 3: one panel per scenario and arm, ``MSE_a(t)`` of every ``K`` (log scale)."""
    from ..plotting import figure, line_styles, outside_legend, save

    keys = [(panel, a) for panel, by_method in mse_curves.items()
            for a in range(next(iter(by_method.values())).shape[1])]
    fig, axes = figure(len(keys), width=4.2)
    styles = line_styles(m for by_method in mse_curves.values() for m in by_method)
    for ax, (panel, a) in zip(axes, keys, strict=True):
        for method, mse in mse_curves[panel].items():
            colour, ls = styles[method]
            ax.semilogy(np.arange(1, mse.shape[0] + 1), mse[:, a], label=method,
                        color=colour, ls=ls)
        ax.set_title(f"{panel}, arm {a}")
        ax.set_xlabel("round t")
        ax.set_ylabel("MSE of the expected reward")
        ax.grid(alpha=0.3)
    outside_legend(axes)  # one legend right of the last panel (no bands here)
    if title:
        fig.suptitle(title)
    save(fig, path)
    return fig


def table(result):
    """Final regrets with the paired difference against K = 1, the reductions against the
    paper's, the MSEs and CAVI iterations."""
    w = max([6] + [len(e["method"]) for e in result["results"]])
    lines = [regret_table(result), "",
             f"{'panel':12s} {'method':{w}s} {'reduction vs K=1 [95% CI]':>28} {'paper':>6}"
             f" {'MSE arm 0':>10} {'MSE arm 1':>10} {'CAVI it.':>9}"]
    for e in result["results"]:
        red = e.get("reduction")
        red_s = "(reference)" if red is None else _pct(red)
        paper = PAPER_REDUCTION[e["scenario"]] if e["method"] == label(2) else None
        paper_s = f"{100 * paper:.0f}%" if paper is not None else ""
        mse = e["mse_final_mean"]
        lines.append(f"{e['panel']:12s} {e['method']:{w}s} {red_s:>28} {paper_s:>6} "
                     f"{mse[0]:10.4f} {mse[1]:10.4f} {e['cavi_iterations_mean']:9.2f}")
    return "\n".join(lines)


def _pct(red):
    if red["ci"] is None:
        return f"{100 * red['value']:+.1f}%"
    lo, hi = red["ci"]
    return f"{100 * red['value']:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}]"
