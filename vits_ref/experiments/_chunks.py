"""Resumable, executor-independent execution of experiments in chunks.

An experiment's work is cut into independent **chunks** (for the regret experiments: a
method's candidate on a panel, for a block of runs). A chunk carries everything it needs,
including its seeds: run ``r`` of a panel is always seeded by child ``r`` of the
experiment's seed (:func:`vits_ref.bandit.simulate`'s ``first_run``), so the results do not
depend on how the runs are cut into chunks, nor on where the chunks run:

* in this process (the default),
* in a pool of worker processes (``--jobs N``:
  :class:`concurrent.futures.ProcessPoolExecutor`, spawned),
* on a Dask ``distributed`` cluster (``--scheduler ADDRESS``, or ``--dask-local N`` for a
  ``LocalCluster`` of N single-threaded workers; the ``dask`` extra, imported lazily).

Each finished chunk is written by this process (workers need no shared file system) into
``OUT/chunks/STAGE/KEY.npz`` atomically (:mod:`._atomic`: a temporary file in the same
folder, flushed, then renamed), and listed in ``OUT/manifest.json`` (:mod:`._manifest`:
experiment, options, versions, seed and the chunk list, each chunk with its size, SHA-256
and the shape and dtype of its arrays). Running the same command again reuses every
finished chunk that still matches its entry and computes the others, so an interrupted run
(even killed with SIGKILL) resumes and ends with results bit-identical to an uninterrupted
one (``tests/test_chunks.py``); a chunk file that was edited, truncated or replaced is
computed again, with one line on stderr naming it. A folder holding chunks of different
options or versions is refused (:class:`MixedRunError`) unless the session has
``force=True`` (``--force``: the files the manifest lists are removed, anything else in the
folder is left and named) or another folder is used.

The execution settings live in a :class:`Session`, set for a block of code with
:func:`session` (the command line does this) and read by
:func:`vits_ref.experiments._common.run_panels` and the tuning.
"""

import concurrent.futures
import contextlib
import contextvars
import hashlib
import heapq
import io
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import _atomic, _manifest, _outputs

#: Format of ``manifest.json`` (raised when its layout changes).
MANIFEST_FORMAT = _manifest.FORMAT
#: The versions that must match for chunks to be mixed.
versions = _manifest.versions
#: Default runs per chunk: small enough to lose little work to an interruption, large
#: enough for the fused loop's threads to share runs.
CHUNK_RUNS = 10


class MixedRunError(ValueError):
    """The output folder holds chunks of another run (other options or versions)."""


@dataclass
class Session:
    """How the chunks of an experiment are run.

    Attributes
    ----------
    executor : concurrent.futures.Executor or None
        Where chunks run; None runs them one by one in this process.
    force : bool
        Discard a run of other options found in the output folder (the files its manifest
        lists) instead of refusing.
    quiet : bool
        No progress bar and no status lines.
    chunk_runs : int
        Runs per chunk.
    device : {"cpu", "cuda"}
        Device of the fused loops (:func:`vits_ref.bandit.simulate`).
    options : dict or None
        The command's options, stored in the manifest and compared on resume.
    executor_name : str
        How the executor is described in the summaries.
    workers : int
        The executor's parallel workers (for the cost estimate).
    stats : dict
        Chunks computed and reused so far in the session.
    """

    executor: object = None
    force: bool = False
    quiet: bool = False
    chunk_runs: int = CHUNK_RUNS
    device: str = "cpu"
    options: dict | None = None
    executor_name: str = "in-process"
    workers: int = 1
    stats: dict = field(default_factory=lambda: {"computed": 0, "reused": 0})


_SESSION = contextvars.ContextVar("vits_ref_chunk_session", default=None)


def current():
    """The session in force (a default in-process :class:`Session` outside
    :func:`session`)."""
    s = _SESSION.get()
    return s if s is not None else Session()


@contextlib.contextmanager
def session(**settings):
    """Run the experiments of the ``with`` block under a :class:`Session` of ``settings``.

    Examples
    --------
    >>> from vits_ref.experiments import _chunks
    >>> with _chunks.session(chunk_runs=5, quiet=True) as s:
    ...     _chunks.current().chunk_runs
    5
    """
    s = Session(**settings)
    if not isinstance(s.chunk_runs, int) or isinstance(s.chunk_runs, bool) or s.chunk_runs < 1:
        raise ValueError(f"chunk_runs must be an integer >= 1, got {s.chunk_runs!r}")
    token = _SESSION.set(s)
    try:
        yield s
    finally:
        _SESSION.reset(token)


# --------------------------------------------------------------------------- executors


@contextlib.contextmanager
def _local_cluster(local_cluster, n_workers):
    """A ``LocalCluster`` that only this process can use: any client may submit code to a
    Dask scheduler and its workers, and the results are unpickled here, so the cluster
    speaks TLS with temporary credentials held by this process alone (``security=True``,
    the ``cryptography`` package), on the loopback interface only. The scheduler's
    and workers' HTTP servers (dashboard, metrics, the proxy to the workers) serve no
    route and listen on a free loopback port: ``dashboard_address=None`` alone still
    serves them on 127.0.0.1:8787."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise ImportError("a Dask LocalCluster needs the cryptography package for its TLS "
                          "credentials (in the dask extra): pip install "
                          "'vits_ref[dask]'") from None
    import dask

    # the workers are spawned with this configuration (the nannies pass it on)
    with dask.config.set({"distributed.scheduler.http.routes": [],
                          "distributed.worker.http.routes": []}), \
            local_cluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", security=True, dashboard_address="127.0.0.1:0",
                          scheduler_kwargs={"dashboard": False}) as cluster:
        yield cluster


@contextlib.contextmanager
def executor(jobs=None, scheduler=None, dask_local=None):
    """The executor of the command-line options, closed on exit: ``(executor, name)``.

    ``jobs``: a process pool of that many spawned workers (each with an equal share of
    Numba's and OpenBLAS's threads, :func:`vits_ref._threads.init_worker`);
    ``scheduler``: a Dask ``distributed`` scheduler address;
    ``dask_local``: a Dask ``LocalCluster`` of that many single-threaded workers. At most
    one may be given; none: ``(None, "in-process")``.
    """
    given = [k for k, v in (("--jobs", jobs), ("--scheduler", scheduler),
                            ("--dask-local", dask_local)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give at most one of {', '.join(given)}")
    if jobs is not None:
        import multiprocessing

        from .._threads import init_worker, worker_share

        # spawn, not fork: forking a process with Numba's threads running is unsafe
        with concurrent.futures.ProcessPoolExecutor(
                jobs, mp_context=multiprocessing.get_context("spawn"),
                initializer=init_worker, initargs=(worker_share(jobs),)) as ex:
            yield ex, f"process pool ({jobs} workers)"
        return
    if scheduler is not None or dask_local is not None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ImportError("Dask execution needs the dask extra: pip install "
                              "'vits_ref[dask]'") from None
        if scheduler is not None:
            # the user's cluster, with the security of the Dask configuration
            # (distributed.comm.tls.*): README "Running experiments" says what it needs
            with Client(scheduler) as client:
                yield client.get_executor(pure=False), f"dask ({scheduler})"
            return
        with _local_cluster(LocalCluster, dask_local) as cluster, Client(cluster) as client:
            yield client.get_executor(pure=False), f"dask LocalCluster ({dask_local} workers)"
        return
    yield None, "in-process"


# --------------------------------------------------------------------------- storage


def fingerprint(obj):
    """A short stable hash of a JSON-able description (what a stage's results depend
    on)."""
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def printable(text, most=160):
    """``text`` fit for one line of a terminal: a bytes literal of an exception's message
    (``b'\\x93NUMPY'``) as ``<bytes>``, escapes (``\\x1b``) and characters that are not
    printable ASCII as ``?``, at most ``most`` characters."""
    text = re.sub(r"""(?<![\w])b(['"])(?:\\.|(?!\1).)*\1""", "<bytes>", str(text))
    text = re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})", "?", text)
    text = "".join(c if c.isprintable() and c.isascii() else "?" for c in text)
    return text if len(text) <= most else text[:most - 3] + "..."


def notice(message):
    """One line on stderr about the output folder (a damaged chunk, files left by
    ``--force``), shown even in a quiet session: it says the folder was not as left."""
    print(f"vits_ref: {message}", file=sys.stderr, flush=True)


def _encode(result):
    """A chunk result (dict of arrays, numbers, strings, None) as arrays for ``np.savez``."""
    arrays, nones = {}, []
    for k, v in result.items():
        if v is None:
            nones.append(k)
        else:
            arrays[k] = np.asarray(v)
    arrays["__none__"] = np.array(nones, dtype=str)
    return arrays


def _decode(arrays):
    """The chunk result of :func:`_encode` 's arrays (a dict name -> array)."""
    out = {k: v for k, v in arrays.items() if k != "__none__"}
    for k, v in out.items():
        if v.ndim == 0:
            out[k] = v.item()
    for k in arrays["__none__"].tolist():
        out[k] = None
    return out


class Store:
    """The chunks and the manifest of an output folder, for one stage of an experiment.

    Parameters
    ----------
    folder : str or None
        The experiment's output folder; None keeps the chunks in memory (no resume).
    experiment : str or None
        None for a part shared by experiments (the tuning), which adopts the folder's.
    stage : str
        A name for a part of the experiment (e.g. ``"panels"``, ``"tune"``).
    description : dict
        What the stage's results depend on (JSON-able); its :func:`fingerprint` must
        match the stored one for the chunks to be reused.
    force : bool
        Discard a mismatching run instead of raising :class:`MixedRunError`: the files
        its manifest lists are removed (:func:`vits_ref.experiments._outputs.discard`),
        any other file is left and named on stderr.
    options : dict or None
        The command's options (compared too when both runs give them).

    Notes
    -----
    Each chunk's manifest entry records its file's size and SHA-256 and the shape and
    dtype of each array; :meth:`load` checks all of them and computes a chunk that fails
    again, saying so in one line (:func:`notice`).
    """

    def __init__(self, folder, experiment, stage, description, force=False, options=None):
        self.folder = folder
        self.stage = stage
        if folder is None:  # in memory: nothing stored, nothing resumed
            self.manifest = {"stages": {stage: {"chunks": {}}}}
            self._memory = {}
            return
        self._memory = None
        self.dir = os.path.join(folder, _outputs.CHUNKS, stage)
        self.manifest_path = _manifest.path(folder)
        fp = fingerprint(description)
        try:
            man = _manifest.read(folder)
        except _manifest.ManifestError as exc:
            raise MixedRunError(f"{exc}; remove it or pass --force") from None
        problem = None
        if man is not None and not _manifest.ours(man):
            if not force:
                raise MixedRunError(f"{folder} holds {_manifest.FOREIGN}; pass --force to "
                                    f"replace it (no file it lists is removed), or write to "
                                    f"another folder")
            problem = _manifest.FOREIGN
        elif man is not None:
            problem = _manifest.mismatch(man, experiment, options)
            entry = (man.get("stages") or {}).get(stage)
            if problem is None and entry is not None and entry.get("fingerprint") != fp:
                problem = f"stage {stage!r} of other parameters"
        if problem is not None:
            if not force:
                raise MixedRunError(
                    f"{folder} holds chunks of another run ({problem}); pass --force to "
                    f"discard them (force=True), or write to another folder")
            left = _outputs.discard(folder, man)
            if left:
                notice(_outputs.left_message(folder, left))

        def adopt(man):
            if options is not None:
                man["options"] = options
            if experiment is not None:
                man["experiment"] = experiment
            entry = man["stages"].setdefault(stage, {"fingerprint": fp, "chunks": {}})
            entry["description"] = description

        os.makedirs(self.dir, exist_ok=True)
        self.manifest = _manifest.update(folder, adopt)

    def _chunks(self):
        return self.manifest["stages"][self.stage]["chunks"]

    def _path(self, key):
        return os.path.join(self.dir, f"{key}.npz")

    def done(self, key):
        """Whether chunk ``key`` is listed as finished (without reading it: :meth:`load`
        still recomputes a listed chunk whose file is damaged)."""
        if self._memory is not None:
            return key in self._memory
        return key in self._chunks() and os.path.isfile(self._path(key))

    def wall_time(self, key):
        """The seconds that finished chunk ``key`` took, as its result recorded them
        (``wall_time_s``), or None: not finished, not recorded (a diverged run), or not
        a positive number."""
        if not self.done(key):
            return None
        if self._memory is not None:
            t = self._memory[key].get("wall_time_s")
        else:
            t = self._chunks()[key].get("wall_time_s")
        return float(t) if isinstance(t, (int, float)) and t > 0 else None

    def _check(self, key, entry):
        """``(result, None)`` for chunk ``key`` matching its manifest ``entry``, else
        ``(None, why)``."""
        path = self._path(key)
        if os.path.islink(path):
            return None, "a symlink"
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return None, "missing"
        except OSError as exc:
            return None, f"unreadable ({exc.strerror or type(exc).__name__})"
        arrays = entry.get("arrays")
        if not isinstance(arrays, dict) or "sha256" not in entry:
            return None, "no checksum in the manifest"
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                found = {k: npz[k] for k in npz.files}
        except Exception as exc:  # a damaged file raises many types (numpy's header parser)
            return None, f"unreadable ({type(exc).__name__}: {exc})"
        if not all(isinstance(v, np.ndarray) for v in found.values()):
            return None, "unreadable (a member that is not an array)"
        if sorted(found) != sorted(arrays):
            return None, f"arrays {sorted(found)}, the manifest lists {sorted(arrays)}"
        for k, v in found.items():
            want = arrays[k]
            if list(v.shape) != want.get("shape") or v.dtype.str != want.get("dtype"):
                return None, (f"array {k!r} is {v.dtype.str} of shape {list(v.shape)}, the "
                              f"manifest records {want.get('dtype')} of shape "
                              f"{want.get('shape')}")
        if _outputs.sha256(data) != entry["sha256"]:
            return None, "its checksum differs from the manifest's"
        return _decode(found), None

    def load(self, key):
        """The stored result of chunk ``key``, or None if it is not finished or its file
        does not match its manifest entry (then one line on stderr says so)."""
        if self._memory is not None:
            return self._memory.get(key)
        entry = self._chunks().get(key)
        if entry is None:
            return None
        result, why = self._check(key, entry)
        if why is not None:
            notice(f"chunk {os.path.relpath(self._path(key), self.folder)} is damaged "
                   f"({printable(why)}); computing it again")
        return result

    def save(self, key, result, info):
        """Write chunk ``key`` atomically, then list it (with ``info``, its checksum and
        its arrays' shapes and dtypes) in the manifest."""
        if self._memory is not None:
            self._memory[key] = result
            return
        arrays = _encode(result)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        data = buf.getvalue()
        _atomic.write_bytes(self._path(key), data)
        entry = {**info, "file": os.path.relpath(self._path(key), self.folder),
                 "bytes": len(data), "sha256": _outputs.sha256(data),
                 "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str}
                            for k, v in arrays.items()}}

        def add(man):
            stage = man["stages"].setdefault(self.stage, self.manifest["stages"][self.stage])
            stage["chunks"][key] = entry

        self.manifest = _manifest.update(self.folder, add)


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Chunk:
    """One independent piece of work: ``fn(arg) -> dict`` (picklable, module level).

    ``key`` names the chunk file (letters, digits, ``-``, ``_``, ``.``); ``work`` is its
    size in run-rounds (for the progress bar); ``info`` is stored in the manifest;
    ``group`` names the chunks that do the same work per run-round (one method on one
    environment: blocks of its runs), so that one of them timed corrects the estimated
    cost of the others (:func:`run_chunks`); None: the chunk alone.
    """

    key: str
    fn: object
    arg: object
    work: int
    info: dict
    group: str | None = None


def progress_bar(total, desc, quiet, unit=" run-rounds"):
    """A tqdm bar on stderr (None when quiet, when no bar can be drawn there: not a
    terminal, or a terminal of 0 columns, :func:`vits_ref._terminal.columns`; or without
    tqdm: the callers then print plain lines)."""
    if quiet:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    from .._terminal import columns

    if not columns():
        return None
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, leave=False,
                file=sys.stderr, dynamic_ncols=True)


#: Without a progress bar, a status line is said when a chunk finishes this many seconds
#: after the last line, even between the tenths of the work.
LINE_EVERY_S = 30.0


def run_chunks(store, chunks, progress=None, desc="chunks", plan=False, costs=None):
    """Results of ``chunks`` (a dict ``key -> result``): reused from ``store`` where
    finished, else computed on the session's executor and saved as each finishes.

    ``progress(message)``: without a progress bar (:func:`progress_bar`: not a terminal,
    a terminal of 0 columns, no tqdm), status lines ``"k/N chunks done, elapsed ..., about
    ... left"`` (about ten, and at least one every :data:`LINE_EVERY_S` seconds when
    chunks finish), none when the session is quiet. With ``plan``, the planned work
    is reported first and, once the first chunk is done, an estimate of the time left
    from it (the probe: one chunk's time times the work left, over the workers).

    ``costs``: estimated seconds of each chunk (``{key: s}``, from a timed probe), to
    weigh the chunks in the progress bar and the time left where their costs differ
    (a uniformly random policy beside Rényi VI: the same run-rounds, a thousand times
    apart). Used when it covers every chunk to compute; else every run-round weighs the
    same. With costs, the time left is :func:`time_left_by_cost`: each chunk's measured
    time corrects the estimates of the chunks of its ``group``.
    """
    s = current()
    results, todo = {}, []
    for c in chunks:
        res = store.load(c.key)
        if res is None:
            todo.append(c)
        else:
            results[c.key] = res
    s.stats["reused"] += len(chunks) - len(todo)
    s.stats["computed"] += len(todo)
    weighed = bool(costs) and all(c.key in costs for c in todo)
    weight = {c.key: costs[c.key] if weighed else c.work for c in todo}
    total = sum(c.work for c in todo)
    total_weight = sum(weight.values())
    bar = progress_bar(total_weight if weighed else total, desc, s.quiet,
                       " s of work (est.)" if weighed else " run-rounds") if todo else None
    say = None if (s.quiet or bar is not None) else progress

    every = max(1, len(todo) // 10)  # without a bar: about ten status lines
    last_line, done, done_weight = [time.perf_counter()], [0], [0.0]
    timed = {}  # group -> [measured s, estimated s] of its finished chunks
    tell = None if s.quiet else progress
    if plan and tell is not None:
        tell(f"planned: {desc}: {len(chunks)} chunks, {sum(c.work for c in chunks)} "
             f"run-rounds ({len(chunks) - len(todo)} chunks already done"
             f"{'' if store.folder is None else ' in ' + store.folder}); executor: "
             f"{s.executor_name}")
    t_start = time.perf_counter()

    def finish(c, res, k):
        store.save(c.key, res, {**c.info, "wall_time_s": res.get("wall_time_s")})
        results[c.key] = res
        done[0] += c.work
        done_weight[0] += weight[c.key]
        if weighed and res.get("wall_time_s") is not None:
            acc = timed.setdefault(c.group or c.key, [0.0, 0.0])
            acc[0] += res["wall_time_s"]
            acc[1] += weight[c.key]
        if plan and tell is not None and k == 1 and len(todo) > 1 and c.work:
            per_work = (time.perf_counter() - t_start) / c.work
            left = (total - c.work) * per_work / max(1, s.workers)
            tell(f"estimate: at most about {_duration(left)} left for {desc} (from the first "
                 f"chunk's time, compilation included; {len(todo) - 1} chunks to go)")
        if bar is not None:
            bar.update(weight[c.key] if weighed else c.work)
        elif say is not None and (k % every == 0 or k == len(todo)
                                  or time.perf_counter() - last_line[0] >= LINE_EVERY_S):
            last_line[0] = now = time.perf_counter()
            where = ": ".join(str(c.info[x]) for x in ("panel", "method") if x in c.info)
            elapsed = now - t_start
            if weighed:
                left = time_left_by_cost(
                    [(c.group or c.key, weight[c.key]) for c in todo if c.key not in results],
                    timed, done_weight[0] >= 0.1 * total_weight, s.workers)
            else:
                left = _time_left(elapsed, done[0], total, len(todo) - k, k)
            eta = "" if k == len(todo) else f", about {_duration(left)} left"
            say(f"{desc}: {k}/{len(todo)} chunks done, {_duration(elapsed)} elapsed{eta}"
                + (f" (last: {where})" if where else ""))

    try:
        if s.executor is None:
            for k, c in enumerate(todo, start=1):
                finish(c, c.fn(c.arg), k)
        else:
            futures = {s.executor.submit(c.fn, c.arg): c for c in todo}
            try:
                for k, fut in enumerate(concurrent.futures.as_completed(futures), start=1):
                    finish(futures[fut], fut.result(), k)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    finally:
        if bar is not None:
            bar.close()
    return results


def check_progress(progress):
    """``progress`` as an experiment's ``run`` takes it: None, or a callable that takes
    one message (``print``, ``list.append``); else a TypeError naming it, before any work
    (``progress=True`` used to fail at the first message, after the set-up)."""
    if progress is not None and not callable(progress):
        raise TypeError("progress must be None or a callable taking one message (such as "
                        f"print), got {progress!r}")


def _time_left(elapsed, done, total, chunks_left, chunks_done):
    """Seconds left, from the run-rounds of the chunks done in ``elapsed`` seconds:
    ``elapsed (total - done) / done`` (by chunks where no run-round is done)."""
    if done:
        return elapsed * (total - done) / done
    return elapsed * chunks_left / chunks_done


def time_left_by_cost(pending, timed, trust_overall, workers):
    """Seconds left for the ``pending`` chunks ``[(group, estimated s)]`` (in the order
    they were submitted), from their estimated costs corrected by the chunks timed so far.

    ``timed``: ``{group: [measured s, estimated s]}`` of the finished chunks. A pending
    chunk's estimate is multiplied by its group's ratio (measured over estimated: the
    probe's error for that method, e.g. a cost growing with the history that its short
    calls did not show); a group not yet timed, by the ratio over every finished chunk
    when ``trust_overall`` (the caller's rule: they weigh a tenth of the work; a few cheap
    chunks' fixed costs say little of the rest), else by 1. The corrected costs are then
    scheduled on the ``workers`` (:func:`makespan`); chunks under way count in full, so
    the figure is high by at most what they have done."""
    measured = sum(m for m, _ in timed.values())
    estimated = sum(e for _, e in timed.values())
    overall = measured / estimated if trust_overall and estimated > 0 else 1.0

    def ratio(group):
        m, e = timed.get(group, (0.0, 0.0))
        return m / e if e > 0 else overall

    return makespan([cost * ratio(g) for g, cost in pending], workers)


def makespan(costs, workers):
    """Seconds until chunks of ``costs`` seconds are all done on ``workers`` workers when
    each worker takes the next chunk, in order, as it frees (a process pool's order): the
    total over the workers, plus the tail of a last chunk running alone.

    Examples
    --------
    >>> makespan([3.0, 3.0, 3.0], 2)  # two at once, then the third alone
    6.0
    >>> makespan([1.0, 1.0, 4.0], 2)
    5.0
    """
    free = [0.0] * max(1, int(workers))
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


def _duration(sec):
    """Seconds as a short human duration."""
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 7200:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def slug(text):
    """``text`` made safe as a file or folder name."""
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:80] or "_"


def run_blocks(n_runs, chunk_runs):
    """The blocks ``(lo, hi)`` of runs of the chunks."""
    return [(lo, min(n_runs, lo + chunk_runs)) for lo in range(0, n_runs, chunk_runs)]


def map_runs(fn, runs, out, experiment, stage, description, progress=None, work_per_run=1,
             chunk_runs=None):
    """Blocks of runs of ``fn`` as resumable chunks, concatenated along the runs.

    For experiments with their own loop over runs (not :func:`run_panels
    <vits_ref.experiments._common.run_panels>`): ``fn(lo, hi)`` computes runs
    ``lo, ..., hi - 1`` (seeding run ``r`` from child ``r`` of the experiment's seed, so
    that the blocks equal one call over all runs) and returns a dict of arrays whose
    leading axis is those runs, or of numbers (which must not depend on the block, or are
    summed over blocks when their key ends in ``_s``: times). ``fn`` must be picklable for
    the process and Dask executors (a module-level function, or a
    :func:`functools.partial` of one). ``description`` (JSON-able) is what the results
    depend on; ``stage`` names the chunk folder; ``work_per_run`` sizes the progress bar.

    Returns
    -------
    dict
        The arrays concatenated over all runs, in run order.
    """
    check_progress(progress)
    s = current()
    store = Store(out, experiment, stage, description, force=s.force, options=s.options)
    chunk_runs = s.chunk_runs if chunk_runs is None else chunk_runs
    chunks = [Chunk(key=f"r{lo}-{hi}", fn=_call_block, arg=(fn, lo, hi),
                    work=(hi - lo) * work_per_run, info={"runs": [lo, hi]})
              for lo, hi in run_blocks(runs, chunk_runs)]
    results = run_chunks(store, chunks, progress=None if s.quiet else progress, desc=stage,
                         plan=True)
    blocks = [results[c.key] for c in chunks]
    out_ = {}
    for k, v in blocks[0].items():
        if isinstance(v, np.ndarray) and v.ndim >= 1:
            out_[k] = np.concatenate([b[k] for b in blocks])
        elif k.endswith("_s") and isinstance(v, (int, float)):
            out_[k] = float(sum(b[k] for b in blocks))
        else:
            out_[k] = v
    return out_


def _call_block(arg):
    fn, lo, hi = arg
    return fn(lo, hi)
