"""Shared output writing of the experiments: CSV of curves, JSON summary, PNG plot; and
:class:`Experiment`, what the registry's experiments are."""

import contextlib
import csv
import dataclasses
import json
import os
import platform
import re
import time
from typing import Protocol, runtime_checkable

import numba
import numpy as np

from . import _chunks, _outputs
from ._paired import compare, format_difference


@runtime_checkable
class Experiment(Protocol):
    """An experiment of the registry (:data:`vits_ref.experiments.EXPERIMENTS`): a module
    that reproduces one figure or table of a paper.

    ``python -m vits_ref run NAME`` (:mod:`vits_ref.__main__`), ``list`` and the report
    (:mod:`vits_ref.experiments.report`) use only these members.

    Attributes
    ----------
    NAME : str
        The registry's key, e.g. ``"vits-fig1"``.
    DESCRIPTION : str
        One line for ``python -m vits_ref list``.
    DEFAULTS : dict
        ``{"runs": int, "rounds": int, "seed": int}``: the size of a default run (the CLI
        overrides them with ``--runs``, ``--rounds``, ``--seed``). An optional
        ``PAPER_SIZE`` dict gives the paper's size (``--paper``).

    Notes
    -----
    ``run(runs, rounds, seed, out, progress, **options) -> dict``
        Runs the experiment, writes its CSV, JSON summary and plots into the folder
        ``out`` and returns the summary (``result["files"]``: what was written,
        ``result["total_wall_time_s"]``). The first five parameters are these, by name;
        the others have defaults (the CLI passes ``path`` for ``--data`` and ``tune`` for
        ``--tune`` when ``run`` takes them).
    ``table(result) -> str``
        The summary as a table for the terminal.

    The claims an experiment tests are not a member: they are the claim table's records
    whose ``experiment`` is ``NAME`` (:func:`vits_ref.experiments.claims.claims_of`).

    ``isinstance(module, Experiment)`` checks that the members exist;
    ``tests/test_protocols.py`` also checks the signatures of every registered one.

    Examples
    --------
    >>> from vits_ref.experiments import EXPERIMENTS, Experiment
    >>> all(isinstance(mod, Experiment) for mod in EXPERIMENTS.values())
    True
    """

    NAME: str
    DESCRIPTION: str
    DEFAULTS: dict

    def run(self, runs, rounds, seed, out, progress=None, **options):
        """Run, write the outputs into ``out``, return the JSON summary (a dict)."""

    def table(self, result):
        """The summary ``result`` as a terminal table (a str)."""


def write_curves_csv(path, rows):
    """``rows``: iterable of dicts with keys panel, method, round, mean, stderr. Written
    atomically and recorded in the folder's manifest
    (:func:`vits_ref.experiments._outputs.text_output`)."""
    with _outputs.text_output(path) as fh:
        w = csv.writer(fh)
        w.writerow(["panel", "method", "round", "mean_cumulative_regret", "stderr"])
        for r in rows:
            for t, (m, s) in enumerate(zip(r["mean"], r["stderr"], strict=True), start=1):
                # an undefined standard error (one run) is an empty field
                w.writerow([r["panel"], r["method"], t, f"{m:.6g}",
                            f"{s:.6g}" if np.isfinite(s) else ""])


def environment_info():
    """Versions and thread settings, stored in every JSON summary, with the seconds this
    process spent compiling kernels since vits_ref was imported
    (:func:`vits_ref._compile_watch.seconds`; the command line then records its run's
    total, :func:`finish_timing`)."""
    from .. import _compile_watch

    return {"python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "machine": platform.machine(), "numba_compile_s": _compile_watch.seconds()}


#: What the timing fields of a summary finished by :func:`finish_timing` cover.
TIMING_NOTE = (
    "total_wall_time_s: wall-clock seconds from the start of the run (of the command, for "
    "python -m vits_ref run/sweep; of the experiment, in a report) to the last writing of "
    "this summary: everything the run did (timing probes, tuning, warm-ups, candidates run "
    "again after a divergence, extra passes, plots) and the Numba compilation in it. "
    "environment.numba_compile_s: seconds this process spent compiling Numba kernels in the "
    "same span (the total the command line prints; kernels loaded from Numba's disk cache "
    "take no compile time; compilation in worker processes of --jobs or Dask is not "
    "counted).")


def finish_timing(result, t0, compile_s):
    """Make ``result``'s timing cover its whole run and write it into its ``summary.json``
    again (the one in ``result["files"]``, if any, read back: only the timing fields
    change): ``total_wall_time_s`` from ``t0`` (a :func:`time.perf_counter` reading at the
    run's start) to now, ``environment.numba_compile_s = compile_s`` (the run's compile
    seconds), and ``timing_note`` (:data:`TIMING_NOTE`). An experiment's own
    ``total_wall_time_s`` starts later (after its set-up) and its summary may be
    written before its last pass (e.g. vits-fig1's VTS extra). Returns ``result``."""
    fields = {"total_wall_time_s": time.perf_counter() - t0, "timing_note": TIMING_NOTE}
    path = next((f for f in result.get("files", ())
                 if os.path.basename(f) == "summary.json"), None)
    targets = [result]
    if path is not None and os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            targets.append(json.load(fh))
    for target in targets:
        target.update(fields)
        if isinstance(target.get("environment"), dict):
            target["environment"] = {**target["environment"], "numba_compile_s": compile_s}
    if len(targets) > 1:
        write_json(path, targets[1])
    return result


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
    plain numbers and lists; other objects their ``str``. Written atomically and recorded
    in the folder's manifest (:func:`vits_ref.experiments._outputs.write_output`)."""
    clean = _strict(obj, set())
    text = json.dumps(clean, indent=2, default=str, allow_nan=False)
    _outputs.write_output(path, text.encode("utf-8"))


def run_panels(name, description, panels, runs, rounds, seed, out, progress=None,
               title=None, extra=None, kl_rounds=None, n_jobs=1, reference=None,
               on_result=None, simulate_fn=None, plot=True, depends_on=None):
    """Run regret experiments panel by panel, in resumable chunks, and write
    ``curves.csv``, ``summary.json``, ``regret.png``; return the summary.

    ``panels``: a list of ``(panel_title, environment, methods, info)`` where ``methods``
    is a list of ``(label, policy)`` or ``(label, [(policy, entry_info), ...])`` (candidates
    tried in order: a candidate that diverges is recorded and the next one runs) and
    ``info`` a dict added to each result entry (e.g. ``{"zeta": 0.1}``). Every method of a
    panel meets the same runs (same ``seed``: the same environment draws) on new instances
    per run. A method all of whose candidates diverge is reported in the summary (and the
    table) instead of stopping the experiment. ``kl_rounds`` records the KL diagnostic of
    Gaussian engines on the linear model.

    Execution (:mod:`vits_ref.experiments._chunks`): each candidate's runs are cut into
    chunks of the session's ``chunk_runs`` runs (run ``r`` always seeded by child ``r``
    of ``seed``), run on the session's executor (in this process by default; with
    ``n_jobs > 1`` and no executor set, a pool of ``n_jobs`` processes), each written to
    ``out/chunks/panels/`` as it finishes and listed in ``out/manifest.json``: calling
    again with the same arguments reuses finished chunks, and the results are
    bit-identical whatever the chunking, the executor or the interruptions. Before
    computing, the planned work and an estimate from a short timed probe are reported
    through ``progress``.

    Each entry keeps the per-run final regrets (``final_regrets``). With ``reference`` (a
    method label, or ``{panel: label}``), every other entry of a panel also gets
    ``paired_vs_reference``: the paired difference of its final regret against the
    reference's on the same runs, with 95% intervals
    (:func:`vits_ref.experiments._paired.paired_difference`). ``on_result(panel, label,
    result)`` is called with each method's :class:`vits_ref.SimulationResult` (e.g. to
    count the arms played) before it is reduced to the summary. ``simulate_fn``: a
    module-level function with :func:`vits_ref.bandit.simulate`'s arguments used instead of it
    (e.g. the prior bandits' DiffTS driver); if it has a ``device_for(policy)`` attribute,
    that names the device it runs ``policy`` on (recorded in the summary and passed as
    ``device``; default ``"cpu"``); ``plot``: write ``regret.png``;
    ``depends_on``: JSON-able data the results also depend on that the policies' reprs
    do not show (e.g. a digest of learned priors), part of the chunks' fingerprint, so
    that chunks computed with other data are refused on resume.

    Timing: before a method's chunks, a throw-away warm-up (1 run x ``min(rounds, 2)``
    rounds) compiles or loads the kernels in the process that runs them; its wall time is
    recorded as ``warmup_s``, and ``wall_time_s`` (summed over chunks) and
    ``us_per_round`` measure the runs only. ``total_wall_time_s`` is the wall time of
    this call (with chunks reused from an earlier call, less than the work's cost); the
    command line and the report then make it, and ``environment.numba_compile_s``, cover
    the whole run (:func:`finish_timing`);
    ``execution`` says where the chunks ran and how many were reused.
    """
    t0 = time.perf_counter()
    plan, outcome, s = execute_panels(name, panels, runs, rounds, seed, out, progress,
                                      kl_rounds=kl_rounds, n_jobs=n_jobs,
                                      simulate_fn=simulate_fn, depends_on=depends_on)
    return _summarise(name, description, panels, plan, outcome, runs, rounds, seed, out,
                      title, extra, reference, on_result, None if s.quiet else progress,
                      plot, s, t0)


def execute_panels(name, panels, runs, rounds, seed, out, progress=None, kl_rounds=None,
                   n_jobs=1, simulate_fn=None, stage="panels", depends_on=None):
    """The chunked, resumable execution of :func:`run_panels` (same arguments; ``out``
    None keeps the chunks in memory), without the summary: returns ``(plan, outcome,
    session)`` where ``outcome[(p, m)]`` holds the chosen candidate ``"c"``, its chunk
    results ``"blocks"`` (absent if every candidate diverged), ``"diverged"`` and
    ``"warmup_s"``; ``stage`` names the chunk folder (``out/chunks/STAGE``)."""
    _chunks.check_progress(progress)
    s = _chunks.current()
    if out is not None:
        os.makedirs(out, exist_ok=True)
    plan = _panel_plan(panels, runs, rounds, seed, kl_rounds, simulate_fn, s)
    description = {**_stage_description(name, plan, runs, rounds, seed, kl_rounds),
                   "depends_on": depends_on}
    store = _chunks.Store(out, name, stage, description, force=s.force, options=s.options)
    say = None if s.quiet else progress
    pool = (_chunks.executor(jobs=n_jobs) if s.executor is None and n_jobs > 1
            else contextlib.nullcontext((None, None)))
    with pool as (ex, ex_name):
        if ex is not None:
            s = dataclasses.replace(s, executor=ex, executor_name=ex_name, workers=n_jobs)
        token = _chunks._SESSION.set(s)
        try:
            outcome = _run_plan(plan, store, runs, rounds, say)
        finally:
            _chunks._SESSION.reset(token)
    return plan, outcome, s


def _warm_key(p, m, c):
    return f"{p}/{m}/{c}"


def _panel_plan(panels, runs, rounds, seed, kl_rounds, simulate_fn, s):
    """Per panel and method, the candidates as chunk arguments (one per block of runs)."""
    from ..bandit.simulate import fused_spec, has_kl

    plan = []
    for p, (panel, env, methods, info) in enumerate(panels):
        for m, (label, candidates) in enumerate(methods):
            if not isinstance(candidates, list):
                candidates = [(candidates, {})]
            cands = []
            for c, (policy, cand_info) in enumerate(candidates):
                kl = kl_rounds if has_kl(policy) else None
                if simulate_fn is not None:
                    device = getattr(simulate_fn, "device_for", lambda _: "cpu")(policy)
                else:
                    device = s.device if (s.device != "cpu"
                                          and fused_spec(policy) is not None) else "cpu"
                base = {"policy": policy, "env": env, "rounds": rounds, "seed": seed,
                        "kl_rounds": kl, "device": device, "simulate_fn": simulate_fn,
                        "warm": _warm_key(p, m, c)}
                chunks = [_chunks.Chunk(key=f"p{p}-m{m}-c{c}-r{lo}-{hi}", fn=_panel_chunk,
                                        arg={**base, "first_run": lo, "n_runs": hi - lo},
                                        work=(hi - lo) * rounds,
                                        info={"panel": panel, "method": label,
                                              "candidate": c, "runs": [lo, hi]},
                                        group=f"p{p}-m{m}-c{c}")
                          for lo, hi in _chunks.run_blocks(runs, s.chunk_runs)]
                cands.append({"policy": policy, "info": cand_info, "base": base,
                              "chunks": chunks, "device": device})
            plan.append({"panel": panel, "p": p, "env": env, "info": info, "label": label,
                         "m": m, "candidates": cands})
    return plan


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _stage_description(name, plan, runs, rounds, seed, kl_rounds):
    """What the panels' results depend on, for the manifest's fingerprint."""
    return {"experiment": name, "runs": runs, "rounds": rounds, "seed": seed,
            "kl_rounds": None if kl_rounds is None else [int(k) for k in kl_rounds],
            "methods": [{"panel": e["panel"], "env": _ADDRESS.sub("", repr(e["env"])),
                         "info": e["info"], "label": e["label"],
                         "candidates": [{"policy": _ADDRESS.sub("", repr(c["policy"])),
                                         "info": c["info"], "device": c["device"],
                                         "simulate": getattr(c["base"]["simulate_fn"],
                                                             "__qualname__", None)}
                                        for c in e["candidates"]]}
                        for e in plan]}


#: Keys of the methods warmed up in this process (compiled or loaded from the cache).
_WARMED = set()


def _simulate_args(arg, n_rounds, n_runs, first_run, kl):
    return dict(n_rounds=n_rounds, n_runs=n_runs, seed=arg["seed"],
                new_instance_per_run=True, kl_rounds=kl, first_run=first_run,
                device=arg["device"])


def _warm_up(arg, sim):
    """One throw-away run of at most 2 rounds (compilation, Numba cache loading); a
    warm-up that diverges is ignored (the timed runs raise and record it). Every run
    starts from ``policy.fresh(seed)``, so the results are unchanged."""
    from ..errors import DivergenceError

    kl = arg["kl_rounds"]
    w0 = time.perf_counter()
    try:
        sim(arg["policy"], arg["env"], **_simulate_args(
            arg, min(arg["rounds"], 2), 1, 0,
            [min(arg["rounds"], 2)] if kl is not None and len(kl) else None))
    except DivergenceError:
        pass
    _WARMED.add(arg["warm"])
    return time.perf_counter() - w0


def _panel_chunk(arg):
    """Compute one chunk: a block of runs of one candidate (module level: picklable)."""
    from ..bandit.simulate import simulate
    from ..errors import DivergenceError

    sim = arg["simulate_fn"] or simulate
    warmup = 0.0 if arg["warm"] in _WARMED else _warm_up(arg, sim)
    try:
        res = sim(arg["policy"], arg["env"], **_simulate_args(
            arg, arg["rounds"], arg["n_runs"], arg["first_run"], arg["kl_rounds"]))
    except DivergenceError as err:
        return {"diverged": str(err), "engine": err.engine, "run": err.run,
                "round": err.round, "warmup_s": warmup, "wall_time_s": None}
    return {"regret": res.regret, "arms": res.arms, "kl_rounds": res.kl_rounds,
            "kl": res.kl, "wall_time_s": res.wall_time, "fused": res.fused,
            "warmup_s": warmup, "diverged": None}


def _probe(plan, store, runs, rounds, say):
    """Report the planned work and an estimate of its cost from a timed probe (a warm-up,
    then one run of :func:`_probe_rounds` rounds per pending method, in this process).

    A method with chunks already stored (a resumed run) is not probed: its pending
    chunks are costed at its stored chunks' median seconds per run-round. Those are
    the runs themselves, at their full horizon, where the probe's short calls can miss a
    cost that grows late: the DiffTS chain on digits at 2000 rounds, resumed with 13 of
    its 25 chunks of two runs to go, its twelve stored chunks having taken 470-620 s
    (two of them 1 050 s, on a shared machine). The probe said 14 min for the rest; the
    stored chunks' median rate says 58 min.

    Without ``say`` (no progress, or a quiet session) nothing reads the estimate: the
    warm-ups still run, the timed probe calls do not (each is a run of up to half the
    rounds of every pending method; results never depend on them, every run starting
    from ``policy.fresh(seed)``)."""
    from ..bandit.simulate import simulate
    from ..errors import DivergenceError

    s = _chunks.current()
    pending = [(e, e["candidates"][0]) for e in plan
               if not all(store.done(c.key) for c in e["candidates"][0]["chunks"])]
    n_chunks = sum(len(e["candidates"][0]["chunks"]) for e in plan)
    n_done = n_chunks - sum(sum(not store.done(c.key) for c in cand["chunks"])
                            for _, cand in pending)
    if say:
        say(f"planned: {len(plan)} panel-methods x {runs} runs x {rounds} rounds in "
            f"{n_chunks} chunks of <= {s.chunk_runs} runs ({n_done} already done"
            f"{'' if store.folder is None else ' in ' + store.folder}); executor: "
            f"{s.executor_name}")
    warm, costs, order, highs, unsure, resumed = {}, {}, [], [], [], []
    for e, cand in pending:
        base = cand["base"]
        sim = base["simulate_fn"] or simulate

        def call(n_rounds, base=base, sim=sim):
            return sim(base["policy"], base["env"], **_simulate_args(
                base, n_rounds, 1, 0, None))

        warm[base["warm"]] = _warm_up(base, sim)
        if not say:
            continue
        todo = [c for c in cand["chunks"] if not store.done(c.key)]
        # wall_time is None for a chunk not stored or stored without a time
        stored = [(t, c.work) for c in cand["chunks"]
                  if (t := store.wall_time(c.key)) is not None and c.work > 0]
        if stored:
            # the median rate: a few chunks slowed by a shared machine (two of the
            # chain's twelve took twice the others' 470-620 s) must not set the rest
            per_work = float(np.median([t / w for t, w in stored]))
            for c in todo:
                costs[c.key] = per_work * c.work
                highs.append(costs[c.key])
                order.append(c.key)
            resumed.append(e["label"])
            continue
        try:
            fixed, per_round, fused, high = _probe_cost(call, rounds,
                                                        sum(c.work for c in todo) / rounds)
        except DivergenceError:
            continue
        if high > UNSURE_GROWTH * per_round:
            unsure.append(e["label"])
        threads = _chunk_threads(sim, s) if fused and base["device"] == "cpu" else 1
        for c in todo:
            share = max(1, min(threads, c.work // rounds))  # the fused loop splits runs
            costs[c.key] = fixed + per_round * c.work / share
            highs.append(fixed + high * c.work / share)
            order.append(c.key)
    if say and pending:
        estimate = _chunks.makespan([costs[k] for k in order], s.workers)
        upper = _chunks.makespan(highs, s.workers)
        names = ", ".join(dict.fromkeys(unsure))
        say(f"estimate: about {_chunks._duration(estimate)}"
            + (f", or up to about {_chunks._duration(upper)} if the cost of a round of "
               f"{names} grows with the history (their probes' calls could not tell growth "
               f"from timing noise)" if upper > UNSURE_GROWTH * estimate else "")
            + " (" + _estimate_sources(resumed, len(pending))
            + f", the chunks scheduled on {s.workers} worker{'s' if s.workers > 1 else ''};"
            f" first candidates only)")
    return warm, costs


def _estimate_sources(resumed, n_pending):
    """Where the estimate's costs come from, for its line: the stored chunks' times of
    the ``resumed`` methods (labels, in order) and the probes of the others."""
    probes = ("timed one-run probes of each {}method after compilation, a fixed cost per "
              "chunk plus a cost per round that may grow with the history")
    if not resumed:
        return probes.format("")
    stored = (f"the median time a run-round of the chunks already stored for "
              f"{', '.join(dict.fromkeys(resumed))}")
    if len(resumed) == n_pending:
        return stored
    return f"{stored}; {probes.format('other ')}"


def _chunk_threads(sim, s):
    """The Numba threads a chunk's fused loop runs with: ``sim.n_threads`` where the
    simulate function fixes them (the showdown's one thread a run), else each worker's
    share of the cores under an executor (:func:`vits_ref._threads.worker_share`, what
    a process pool's workers are given), else this process's. Dividing by this process's
    threads, as the estimate once did, halved the fused methods' cost on two workers of a
    2-core machine, each of which runs on one thread."""
    fixed = getattr(sim, "n_threads", None)
    if fixed is not None:
        return fixed
    if s.executor is not None:
        from .._threads import worker_share

        return worker_share(s.workers)
    return numba.get_num_threads()


#: A probe call is lengthened (4x the rounds at a time) until it takes this long, so that
#: the method's compute, not the fixed cost of a call, is what the estimate extrapolates:
#: waking the worker threads costs milliseconds on a loaded machine, 100x a LinTS round.
PROBE_SECONDS = 0.05

#: The probe times a third size, to see whether a round's cost grows with the history,
#: only while that call is likely to cost at most this share of the method's planned work.
PROBE_SHARE = 0.02

#: A round's cost is taken to grow with the history only when the longest probe call
#: takes this many times what the line through the two before it predicts: timing noise
#: on a loaded machine (about 1.5x between minutes, less between calls a second apart)
#: must not turn a linear cost into a quadratic one extrapolated over a whole run.
PROBE_GROWTH = 1.25

#: Below :data:`PROBE_GROWTH`, growth and noise cannot be told apart, and a real growth
#: can hide there: the DiffTS chain on digits (d = 110) showed about 1.25 at 160 rounds,
#: on either side of the threshold from one probe to the next, and its runs of 2000
#: rounds cost four times the line. Where the parabola's reading exceeds the line by this
#: factor, the probe times one more size, and if that cannot tell either, the estimate
#: names the reading as an upper one.
UNSURE_GROWTH = 1.5


def _probe_rounds(rounds):
    """Rounds of the first timed probe: 10, or a fifth of a short run (so that the probe
    does not cost as much as the runs themselves)."""
    return max(1, min(10, rounds // 5))


def _probe_cost(call, rounds, runs=1):
    """``(fixed, per_round, fused, high)``: the cost of one call of a method (s), its
    average cost per run-round over a run of ``rounds`` rounds (s), whether it ran the
    fused loop, and an upper reading of ``per_round`` (below), from timed one-run calls
    ``call(n)`` of ``n`` rounds.

    The cost of a call of ``r`` rounds is modelled as ``t(r) = fixed + a r + b r^2``:
    a fixed cost (thread wake-ups, the loop's set-up), a cost per round, and a cost per
    round that grows linearly with the history (``b > 0``: engines that revisit every
    past observation at each round, such as Laplace's IRLS, Rényi VI or the DiffTS chain
    on a logistic model; their runs cost the square of the horizon).

    The first call has :func:`_probe_rounds` rounds; the rounds grow 4x at a time, up to
    half a run, until a call takes :data:`PROBE_SECONDS`. Then, while fewer than three
    sizes are timed and a further 4x call is likely (at four times the line's prediction)
    to cost at most :data:`PROBE_SHARE` of the ``runs`` planned runs, one more is timed.
    Where the last three cannot tell growth from noise (:func:`_unsure_growth`), one
    further 4x size is timed, once, if the parabola through them predicts it to cost at
    most that share: the DiffTS chain on digits showed 1.15-1.26 at 160 rounds and cost
    four times the line over 2000 rounds; at 640 rounds its growth is plain.
    With three sizes or more, the last three give the parabola: its ``b`` is used where the
    last call took more than :data:`PROBE_GROWTH` times the line through the two before it
    predicts (``per_round = a + b rounds``, the average over a run). Otherwise the line
    through the last two sizes: ``per_round = (t1 - t0) / (r1 - r0)``, ``fixed = t0 -
    per_round r0`` (:func:`_cost_line`); ``high`` is then the parabola's ``a + b rounds``
    where the three sizes show any growth (``b > 0``: real, or timing noise; the probe
    cannot tell), else ``per_round`` (as it is when the parabola is used). Dividing one
    short call's time by its rounds, as this once did, charged the fixed cost to every
    round: 19 min against the 4.3 min that ``vits-fig1``'s runs took on a 2-core machine
    at a load average of 5. A line alone, as it did next, said 7 min for Rényi VI's 50
    runs x 2000 rounds on wine on two workers, where its chunks of ten runs took 37 min
    each, two at a time (five chunks: nearly two hours); the parabola says 98 min.
    """
    def timed(n):
        t = time.perf_counter()
        res = call(n)
        return time.perf_counter() - t, res.fused

    half = max(1, rounds // 2)
    r, (t, fused) = _probe_rounds(rounds), timed(_probe_rounds(rounds))
    sizes = [(r, t)]
    looked = False  # the one further size allowed where three cannot tell growth
    while r < half:
        nxt = min(4 * r, half)
        budget = PROBE_SHARE * runs
        if t < PROBE_SECONDS or (len(sizes) < 3 and 4 * _line_at(sizes, nxt)
                                 <= budget * _line_at(sizes, rounds)):
            pass
        elif not looked and len(sizes) >= 3:
            weak = _unsure_growth(sizes, rounds)
            if weak is None or _parabola_at(weak, nxt) > budget * _parabola_at(weak, rounds):
                break
            looked = True
        else:
            break
        r = nxt
        t, _ = timed(r)
        sizes.append((r, t))
    fixed, per_round = _last_line(sizes)
    high = per_round
    if len(sizes) >= 3:
        growth = _cost_parabola(*sizes[-3:])
        if growth is not None:
            fixed, a, b = growth
            return fixed, a + b * rounds, fused, a + b * rounds
        weak = _cost_parabola(*sizes[-3:], threshold=0.0)  # None only for a zero cost
        if weak is not None:
            high = max(per_round, weak[1] + weak[2] * rounds)
    return fixed, per_round, fused, high


def _unsure_growth(sizes, rounds):
    """The parabola ``(fixed, a, b)`` through the last three timed ``sizes`` where they
    cannot tell growth from noise: their last call took less than :data:`PROBE_GROWTH`
    times what the line through the two before it predicts, yet the parabola's cost a
    round over ``rounds`` is :data:`UNSURE_GROWTH` times the line's (the case where the
    estimate would print an upper reading); else None."""
    if _cost_parabola(*sizes[-3:]) is not None:
        return None
    weak = _cost_parabola(*sizes[-3:], threshold=0.0)  # None only for a zero cost
    if weak is None or weak[1] + weak[2] * rounds <= UNSURE_GROWTH * _last_line(sizes)[1]:
        return None
    return weak


def _parabola_at(parabola, r):
    fixed, a, b = parabola
    return fixed + a * r + b * r * r


def _last_line(sizes):
    """``(fixed, per_round)`` of the line through the last two timed ``(rounds, seconds)``
    of ``sizes`` (:func:`_cost_line`; one size alone counts twice)."""
    (r0, t0), (r1, t1) = sizes[-2:] if len(sizes) > 1 else sizes * 2
    return _cost_line(r0, t0, r1, t1)


def _line_at(sizes, r):
    """The cost of a call of ``r`` rounds on the line through the last two sizes."""
    fixed, per_round = _last_line(sizes)
    return fixed + per_round * r


def _cost_line(r0, t0, r1, t1):
    """``(fixed, per_round)`` of the line through ``(r0, t0)`` and ``(r1, t1)``, or
    ``(0, t / r)`` of the longer call when the two do not give a rising line."""
    if r1 > r0 and t1 > t0:
        per_round = (t1 - t0) / (r1 - r0)
        return max(0.0, t0 - per_round * r0), per_round
    return 0.0, t1 / r1


def _cost_parabola(p0, p1, p2, threshold=None):
    """``(fixed, a, b)`` of ``t(r) = fixed + a r + b r^2`` through three timed sizes
    ``(r, t)`` (rounds increasing), or None unless the last call took more than
    ``threshold`` (default :data:`PROBE_GROWTH`) times what the line through the first two
    predicts (no detectable growth: the caller keeps a line). ``fixed`` and ``a`` are
    clipped at 0, so that a noisy fit can only raise the estimate of the runs' cost."""
    (r0, t0), (r1, t1), (r2, t2) = p0, p1, p2
    f, slope = _cost_line(r0, t0, r1, t1)
    if not t2 > (PROBE_GROWTH if threshold is None else threshold) * (f + slope * r2):
        return None
    # divided differences of Newton's form: exact for a parabola through the three points
    d01 = (t1 - t0) / (r1 - r0)
    d12 = (t2 - t1) / (r2 - r1)
    b = (d12 - d01) / (r2 - r0)
    a = d01 - b * (r0 + r1)
    fixed = t0 - a * r0 - b * r0 * r0
    return max(0.0, fixed), max(0.0, a), b


def _run_plan(plan, store, runs, rounds, say):
    """Run every method's candidates in turn (a candidate that diverges on any run gives
    way to the next); ``{(p, m): (candidate index, results by block, diverged list)}``."""
    probe_warm, costs = _probe(plan, store, runs, rounds, say)
    outcome = {(e["p"], e["m"]): {"c": 0, "diverged": [], "warmup_s": 0.0} for e in plan}
    active = list(plan)
    while active:
        chunks = [c for e in active
                  for c in e["candidates"][outcome[(e["p"], e["m"])]["c"]]["chunks"]]
        results = _chunks.run_chunks(store, chunks, progress=say, desc="runs", costs=costs)
        nxt = []
        for e in active:
            o = outcome[(e["p"], e["m"])]
            cand = e["candidates"][o["c"]]
            blocks = [results[c.key] for c in cand["chunks"]]
            o["warmup_s"] += probe_warm.get(cand["base"]["warm"], 0.0) + sum(
                b["warmup_s"] for b in blocks)
            bad = [b for b in blocks if b["diverged"] is not None]
            if not bad:
                o["blocks"] = blocks
                continue
            # the lowest diverging run's message: the one a single call over all runs gives
            o["diverged"].append({**cand["info"], "diverged": bad[0]["diverged"]})
            if say:
                say(f"{e['panel']}: {e['label']} diverged ({bad[0]['engine']}, run "
                    f"{bad[0]['run']}, round {bad[0]['round']})")
            o["c"] += 1
            if o["c"] < len(e["candidates"]):
                nxt.append(e)
        active = nxt
    return outcome


def _curve_labels(plan, outcome):
    """``{(p, m): label}`` of the curves: a method's label, followed by the
    hyperparameters that set its curves apart where they differ between panels or from its
    first candidate (a fallback after a divergence, a per-panel tuned point), e.g.
    ``"VITS-II (step_size = 0.001)"``: a figure's one legend entry per label must stand
    for one configuration."""
    used = {}
    for e in plan:
        o = outcome[(e["p"], e["m"])]
        if "blocks" in o:
            used.setdefault(e["label"], []).append(
                (e, e["candidates"][o["c"]]["info"], e["candidates"][0]["info"]))
    out = {}
    for label, items in used.items():
        points = [i.get("hyperparameters", i) for _, *infos in items for i in infos]
        differ = sorted(k for k in set().union(*points)
                        if len({repr(p.get(k)) for p in points}) > 1)
        for e, info, _ in items:
            point = info.get("hyperparameters", info)
            values = [f"{k} = {point.get(k):g}" if isinstance(point.get(k), float)
                      else f"{k} = {point.get(k)}" for k in differ]
            out[(e["p"], e["m"])] = f"{label} ({', '.join(values)})" if differ else label
    return out


def _summarise(name, description, panels, plan, outcome, runs, rounds, seed, out, title,
               extra, reference, on_result, say, plot, s, t0):
    from ..bandit.simulate import SimulationResult

    rows, summary, curves, methods = [], [], {}, {}
    for panel, _, _, _ in panels:
        curves[panel], methods[panel] = {}, {}
    legend = _curve_labels(plan, outcome)
    for k, e in enumerate(plan):
        panel, label, info = e["panel"], e["label"], e["info"]
        o = outcome[(e["p"], e["m"])]
        if "blocks" not in o:
            summary.append({**info, "panel": panel, "method": label,
                            "diverged_candidates": o["diverged"]})
        else:
            cand = e["candidates"][o["c"]]
            b = o["blocks"]
            kl = (None if b[0]["kl"] is None else np.concatenate([x["kl"] for x in b]))
            res = SimulationResult(
                getattr(cand["policy"], "name", type(cand["policy"]).__name__),
                repr(e["env"]), np.concatenate([x["regret"] for x in b]),
                np.concatenate([x["arms"] for x in b]), np.asarray(b[0]["kl_rounds"]), kl,
                float(sum(x["wall_time_s"] for x in b)), bool(b[0]["fused"]), seed)
            if on_result is not None:
                on_result(panel, label, res)
            mean, se = res.mean_and_stderr()
            if runs == 1:  # a standard error of one run is undefined, not 0
                se = np.full_like(mean, np.nan)
            rows.append({"panel": panel, "method": label, "mean": mean, "stderr": se})
            curves[panel][legend[(e["p"], e["m"])]] = (mean, se)
            methods[panel][legend[(e["p"], e["m"])]] = label
            entry = {**info, **cand["info"], "panel": panel, "method": label,
                     "final_regret_mean": float(mean[-1]),
                     "final_regret_stderr": float(se[-1]),  # NaN (null) for one run
                     "final_regrets": res.cumulative_regret[:, -1].tolist(),
                     "wall_time_s": res.wall_time, "fused": res.fused,
                     # one timing per chunk of runs: the same runs in every method's chunk
                     # (paired repeats of a time claim, claims.measures.RepeatedTimeRatio)
                     "chunk_wall_times_s": [float(x["wall_time_s"]) for x in b],
                     "us_per_round": 1e6 * res.wall_time / (runs * rounds),
                     "warmup_s": o["warmup_s"]}
            if cand["device"] != "cpu":
                entry["device"] = cand["device"]
            if res.kl is not None:
                entry["kl_rounds"] = res.kl_rounds
                entry["kl_mean"] = res.kl.mean(axis=0)
            if o["diverged"]:
                entry["diverged_candidates"] = o["diverged"]
            summary.append(entry)
        last = k + 1 == len(plan) or plan[k + 1]["panel"] != panel
        if last and reference is not None:
            ref = reference.get(panel) if isinstance(reference, dict) else reference
            if ref is not None:
                entries = [x for x in summary if x["panel"] == panel]
                for lab, diff in compare(entries, ref).items():
                    next(x for x in entries if x["method"] == lab)[
                        "paired_vs_reference"] = {"reference": ref, **diff}
    from .plotting import available

    drawn = plot and available()
    if plot and not drawn and say:
        say("no plot written: plotting needs matplotlib: pip install 'vits_ref[plot]'")
    names = ("curves.csv", "summary.json") + (("regret.png",) if drawn else ())
    files = [os.path.join(out, f) for f in names]
    result = {"experiment": name, "description": description, "runs": runs, "rounds": rounds,
              "seed": seed, "reference": reference, **(extra or {}), "results": summary,
              "files": files,
              "total_wall_time_s": time.perf_counter() - t0, "environment": environment_info(),
              "execution": {"executor": s.executor_name, "chunk_runs": s.chunk_runs,
                            "device": s.device, **s.stats}}
    write_curves_csv(files[0], rows)
    write_json(files[1], result)
    if drawn:
        try:
            from .plotting import regret_panels

            regret_panels(curves, files[2], title=title, methods=methods)
        except ImportError as exc:
            if say:
                say(f"no plot written: {exc}")
    elif not plot:
        result["curves"] = curves  # for the caller's own figure; not in the JSON
        result["curve_methods"] = methods
    return result


def regret_table(result, why=None):
    """Final regrets, one line per panel and method, with the paired difference against
    the reference method (mean and 95% t interval) where the experiment has one, and
    :func:`identical_notes` (``why``: the experiment's reason, if it knows a better one
    than the shared streams)."""
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
    lines += identical_notes(result["results"], why=why)
    return "\n".join(lines)


#: why methods that share their random streams pull the same arms (identical_notes)
SHARED_STREAMS = ("they share their random streams and their draws never chose apart at "
                  "this size")


def identical_notes(results, key="final_regrets", why=None, same="the same arms pulled "
                    "in every round"):
    """One line per group of methods of a panel whose final ``key`` (per run) are equal in
    every run, saying why that is not a copied result: ``same`` (what they share) and
    ``why``. By default the methods draw from the same random streams (common random
    numbers), so where their posteriors stay too close to change an argmax (VITS-I and
    VITS-II at a small size: ``C`` tracks ``inv(B)^T`` to first order in the step) they
    pull the same arms in every round, and the regret is a function of the arms pulled
    (:data:`SHARED_STREAMS`); an experiment that knows its own reason passes it (the
    Rényi bandit's alphas, the OPVI classifier's test counts)."""
    groups = {}
    for e in results:
        values = e.get(key)
        if values:
            groups.setdefault((e.get("panel"), tuple(values)), []).append(e["method"])
    why = SHARED_STREAMS if why is None else why
    return [f"{panel + ': ' if panel else ''}{' = '.join(methods)} in every run: {same} "
            f"({why}), not a copied result"
            for (panel, _), methods in groups.items() if len(methods) > 1]
