"""Fill Numba's disk cache with an experiment's kernels on every core
(``python -m vits_ref compile``, and ``run`` on a cold cache).

A cold run compiles its kernels one after another in one process (vits-fig1: about 120 s
of its first 3.5 minutes on two cores). The kernels of an experiment's independent units
(vits-fig1: its methods) compile in parallel instead: each of ``jobs`` worker processes
(``spawn``: Numba and ``fork`` do not mix) runs a disjoint share of the units at a tiny
size (:data:`TINY`), under the library's compile lock (:mod:`vits_ref._compile_lock`), so
that a kernel two units need (LinTS's loop, which every unit runs as the reference) is
compiled by one worker while the other waits and then loads it, and Numba's cache index is
never written by two at once. What they compile lands in Numba's disk cache, where the
real run finds it. Nothing of a unit's output is kept (each writes into a temporary folder
that is removed), so results cannot depend on it.

The units of an experiment: its module's ``warmup_units()`` hook when it has one, a list
of ``(label, fn, kwargs)`` with ``fn`` a module-level function (sent to the workers by
reference) called as ``fn(out=FOLDER, **kwargs)``; each unit should run the experiment's
own code for that unit at a tiny size, so that it compiles exactly the signatures the real
run needs. Without a hook the whole experiment is one unit, run at :data:`TINY` by one
worker (:func:`tiny_run`): no parallel gain, but the cache is filled.

Units whose kernels inline the same large bodies can be kept in one worker
(``WARMUP_TOGETHER`` of the experiment's module: tuples of unit labels, :func:`together`):
only a driver is kept in the disk cache, not the bodies it inlines, so a body is compiled
again in every process whose drivers need it (vits-fig1: LinTS's and VITS-II's loops share
the KL diagnostic, the Cholesky factor and solves and the products, about 4 s of CPU).
"""

import concurrent.futures
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

#: The size of the fallback run of an experiment without a ``warmup_units`` hook (capped
#: at the experiment's own defaults).
TINY = {"runs": 2, "rounds": 20}
#: ``VITS_REF_PRECOMPILE=0`` turns off ``run``'s compiling on every core first (the test
#: suite sets it; ``--no-precompile`` does it for one command).
ENV = "VITS_REF_PRECOMPILE"


class UnitError(RuntimeError):
    """A unit failed in a worker (the message names it and the worker's error)."""


def cores():
    """The cores this process may run on (``os.sched_getaffinity``, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def has_hook(mod):
    """Whether experiment module ``mod`` lists its warm-up units (``warmup_units``)."""
    return callable(getattr(mod, "warmup_units", None))


def units(mod):
    """The warm-up units of experiment module ``mod``: ``[(label, fn, kwargs)]``, from its
    ``warmup_units()`` hook, else the whole experiment at :data:`TINY` (:func:`tiny_run`)."""
    if has_hook(mod):
        return [(f"{mod.NAME}: {label}", fn, dict(kwargs))
                for label, fn, kwargs in mod.warmup_units()]
    return [(mod.NAME, tiny_run, {"name": mod.NAME})]


def together(work):
    """The groups of the units ``work`` that one worker runs, in order: for each experiment
    named in the units' labels (``"NAME: label"``), its module's ``WARMUP_TOGETHER``
    (tuples of labels), as tuples of full labels present in ``work``."""
    from . import EXPERIMENTS

    labels = {u[0] for u in work}
    groups = []
    for name in dict.fromkeys(u[0].split(": ", 1)[0] for u in work):
        mod = EXPERIMENTS.get(name)
        for group in getattr(mod, "WARMUP_TOGETHER", ()):
            full = tuple(f"{name}: {label}" for label in group if f"{name}: {label}" in labels)
            if len(full) > 1:
                groups.append(full)
    return groups


def tasks(work, groups=()):
    """The units ``work`` as the workers' tasks, lists of units that one worker runs in
    order: the units of a group of ``groups`` (tuples of labels, :func:`together`) form
    one task, in the group's order, where the first of them stands in ``work``; every
    other unit is a task of its own."""
    by_label = {u[0]: u for u in work}
    group_of = {label: g for g in groups for label in g}
    out, placed = [], set()
    for unit in work:
        if unit[0] in placed:
            continue
        group = group_of.get(unit[0], (unit[0],))
        out.append([by_label[label] for label in group if label in by_label])
        placed.update(group)
    return out


def tiny_run(name, out):
    """Run experiment ``name`` at :data:`TINY` (capped at its defaults) into ``out``."""
    from . import get

    mod = get(name)
    d = mod.DEFAULTS
    mod.run(runs=min(TINY["runs"], d["runs"]), rounds=min(TINY["rounds"], d["rounds"]),
            seed=d.get("seed", 0), out=out, progress=None)


def _init():
    """A worker's start: the compile lock, and no compile warnings (the parent reports)."""
    from .. import _compile_lock

    _compile_lock.install()
    logging.getLogger("vits_ref.compile").setLevel(logging.ERROR)


def _work(label, fn, kwargs):
    """Run one unit in a worker: ``{"label", "seconds", "kernels", "compiled", "waited_s",
    "wall_s"}``: its compile seconds and compilations, as
    :func:`vits_ref._compile_watch.watch` counts them, the
    :func:`~vits_ref._compile_watch.identity` of each, and the seconds it waited for
    kernels that another worker was compiling (:func:`vits_ref._compile_lock.waited`)."""
    from .. import _compile_lock, _compile_watch
    from . import _chunks

    _compile_lock.install()  # a worker of another pool, or a unit run in this process
    waited = _compile_lock.waited()
    start = time.perf_counter()
    out = tempfile.mkdtemp(prefix="vits-ref-compile-")
    try:
        with _chunks.session(quiet=True), _compile_watch.watch() as w:
            fn(out=out, **kwargs)
    except Exception as exc:  # noqa: BLE001 (sent back as one line)
        msg = " ".join(str(exc).split()) or "(no message)"
        raise UnitError(f"{label}: {type(exc).__name__}: {msg}") from None
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"label": label, "seconds": w.seconds, "kernels": w.kernels,
            "compiled": list(w.compiled), "waited_s": _compile_lock.waited() - waited,
            "wall_s": time.perf_counter() - start}


def _work_all(task):
    """Run the units of one task (:func:`tasks`) in this worker, in order: their
    :func:`_work` results."""
    return [_work(*unit) for unit in task]


def unit_line(res):
    """The progress line of a finished unit (``res`` from :func:`_work`): its compilations
    and compile seconds, the seconds it waited for kernels another worker was compiling
    (a unit whose kernels another one compiled compiles nothing, and waits), and its
    wall seconds."""
    waited = res.get("waited_s", 0.0)
    wait = (f", {waited:.1f} s waiting for kernels another process compiled"
            if waited >= 0.05 else "")
    return (f"{res['label']}: {res['kernels']} kernels compiled, {res['seconds']:.1f} s "
            f"compiling{wait}, {res['wall_s']:.1f} s in all")


def distinct(units_):
    """The kernels that the units ``units_`` (results of :func:`_work`) compiled, each
    once: a kernel that two workers both compiled (a nested one, which compiles without
    the lock) is one kernel (:func:`vits_ref._compile_watch.identity`)."""
    return len({name for u in units_ for name in u.get("compiled", ())})


def _bar(total, say):
    """A tqdm bar over the units when tqdm is installed and stderr is a terminal with
    columns (:func:`vits_ref._terminal.columns`), else None (plain lines through
    ``say``)."""
    from .. import _terminal

    if say is None or not _terminal.columns():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="compiling", unit="unit", file=sys.stderr, leave=True)


def compile_units(work, jobs, say=None, groups=None):
    """Run the units ``work`` (``[(label, fn, kwargs)]``) in ``jobs`` worker processes.

    Parameters
    ----------
    work : list of (str, callable, dict)
        The units (:func:`units`); ``fn`` must be importable by the workers.
    jobs : int
        Worker processes (at most one per task: :func:`tasks`); 0 runs the units in this
        process, in the order given.
    say : callable, optional
        Takes the progress lines and the last one; a tqdm bar is drawn instead of the
        per-unit lines when the terminal allows (:func:`_bar`).
    groups : sequence of tuples of str, optional
        Units run by one worker, in order (:func:`tasks`); by default the experiments'
        own (:func:`together`).

    Returns
    -------
    dict
        ``kernels`` (the kernels compiled, each once: :func:`distinct`), ``compilations``
        (in all the workers: a kernel two workers compiled counts twice), ``seconds``
        (their compile seconds added up: what one process would have spent, or more when
        a kernel was compiled twice), ``wall_s``, ``jobs``, ``units`` (per unit: label,
        seconds, kernels, compiled, waited_s, wall_s, in the order given).

    Raises
    ------
    UnitError
        The first unit that failed, named, with its error in one line (the other workers
        are stopped).
    """
    start = time.perf_counter()
    todo = tasks(work, together(work) if groups is None else groups)
    jobs = max(0, min(int(jobs), len(todo)))
    done = {}
    bar = _bar(len(work), say)

    def finished(res):
        done[res["label"]] = res
        if bar is not None:
            bar.set_postfix_str(res["label"][-40:], refresh=False)
            bar.update(1)
        elif say is not None:
            say(f"[{len(done)}/{len(work)}] {unit_line(res)}")

    try:
        if jobs == 0:
            for label, fn, kwargs in work:
                finished(_work(label, fn, kwargs))
        else:
            ctx = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx,
                                                        initializer=_init) as pool:
                futures = [pool.submit(_work_all, task) for task in todo]
                try:
                    for fut in concurrent.futures.as_completed(futures):
                        for res in fut.result():
                            finished(res)
                except BaseException:
                    for fut in futures:
                        fut.cancel()
                    raise
    except concurrent.futures.process.BrokenProcessPool as exc:
        raise UnitError(f"a worker process died ({exc})") from None
    finally:
        if bar is not None:
            bar.close()
    per_unit = [done[label] for label, _, _ in work]
    return {"kernels": distinct(per_unit),
            "compilations": sum(u["kernels"] for u in per_unit),
            "seconds": sum(u["seconds"] for u in per_unit),
            "wall_s": time.perf_counter() - start, "jobs": jobs, "units": per_unit}


def record(names, result):
    """Keep the compile time of ``compile`` for each experiment of ``names`` (its units'
    compilations: :func:`vits_ref._compile_watch.record`), so that ``run`` knows the cache
    is warm (:func:`cold`) and says the measured estimate. Each kernel counts once
    (:func:`distinct`), however many workers compiled it."""
    from .. import _compile_watch

    for name in names:
        prefix = f"{name}: "
        mine = [u for u in result["units"] if u["label"] == name or u["label"].startswith(prefix)]
        kernels = distinct(mine)
        if kernels:
            _compile_watch.record(name, sum(u["seconds"] for u in mine), kernels)


def cold(name):
    """Whether experiment ``name`` looks cold: no compile time of it is recorded for this
    cache (``compile_times.json`` of :func:`vits_ref._compile_watch.times_path`, written by
    a run or a ``compile`` that compiled its kernels) with these versions of vits_ref and
    Numba. Cheap (one small file), and a guess: a cache emptied by hand, or kernels whose
    sources changed, are not noticed (the run then compiles them itself, as without this
    step)."""
    from .. import _compile_watch

    return _compile_watch.estimate(name) is None


def precompile_jobs(mod, jobs=None, enabled=True):
    """The workers ``run`` compiles experiment module ``mod`` with before its work, or 0
    for none: only when ``enabled`` (not ``--no-precompile``, not ``VITS_REF_PRECOMPILE=0``),
    the experiment lists its units (``warmup_units``; one unit gains nothing), the cache
    looks cold (:func:`cold`), and more than one core is available; ``jobs`` (``--jobs``)
    caps the workers, else the cores do."""
    if not enabled or os.environ.get(ENV, "").strip() == "0" or not has_hook(mod):
        return 0
    n = min(cores() if jobs is None else jobs, cores(), len(units(mod)))
    if n < 2 or not cold(mod.NAME):
        return 0
    return n
