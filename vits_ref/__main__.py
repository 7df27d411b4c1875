"""Command line: ``python -m vits_ref list | run NAME | compile NAME... | sweep NAME |
report PAPER | bench``.

Every error is one line on stderr, without a traceback (``--debug`` shows it): exit code
2 for a bad command line or output path (found before any computation), 1 for a failure
while running.
"""

import argparse
import inspect
import os
import sys
import tempfile
import time

#: Largest ``--runs`` and ``--rounds`` accepted (larger values cannot be held in memory).
MAX_COUNT = 10 ** 9

#: The experiments whose ``--rounds`` is a cap on steps per run, not bandit rounds.
STEP_CAPPED = {"vits-figF": "the cap on VITS steps per run (paper: 50 000)",
               "vits-figI": "the steps per run (paper: 10 000)"}


class CLIError(Exception):
    """A one-line command-line error (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), exit code 2."""

    def error(self, message):
        # one line, whatever the arguments echoed in the message hold
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def _process_start():
    """The :func:`time.perf_counter` reading at this process's start (Linux: from
    ``/proc``, so that Python's start and the imports count), else now."""
    now = time.perf_counter()
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0.0 <= age < 86400.0 * 365 else now


def _progress(name):
    start = time.perf_counter()

    def report(msg):
        print(f"[{name} {time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return report


def check_out(path, option="--out"):
    """Make sure ``path`` is a usable output folder before any computation: not empty,
    not a file, creatable and writable (a probe file is written and removed), and holding
    no symlink at a name this tool writes (:func:`vits_ref.experiments._outputs.
    planted_links`: writes replace such a link, but ``--force`` and resuming must not
    act on what it points to). Creates the folder. Raises :class:`CLIError` with a
    one-line message."""
    from .experiments import _outputs

    if path is not None and not str(path).strip():
        raise CLIError(f"{option} must not be empty (leave it out for the default folder)")
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise CLIError(f"{option} {path!r} is an existing file, not a folder")
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise CLIError(f"{option} {path!r} is not a writable folder: {reason}") from None
    links = _outputs.planted_links(path)
    if links:
        raise CLIError(f"{option} {path!r} holds symlinks where vits_ref writes its files "
                       f"({_outputs.name_some(links)}); remove them or write to another "
                       f"folder")
    return path


def _finished(folder):
    """Whether ``folder`` holds a finished result (its ``summary.json`` or report page)."""
    return any(os.path.isfile(os.path.join(folder, f))
               for f in ("summary.json", "report.md"))


def _default_out(folder, force):
    """The default output folder, refusing to overwrite a finished result silently."""
    if _finished(folder) and not force:
        raise CLIError(f"{folder} already holds a finished result (summary.json); pass "
                       f"--force to overwrite it, or --out DIR to write elsewhere")
    return folder


def _count(value, option, minimum=1):
    if not minimum <= value <= MAX_COUNT:
        raise CLIError(f"{option} must be in [{minimum}, {MAX_COUNT}], got {value}")
    return value


def _execution_options(p):
    """The options of how chunks run and report (results do not depend on them)."""
    g = p.add_argument_group("execution (results do not depend on these)")
    g.add_argument("--jobs", type=int, default=None,
                   help="run the chunks in N worker processes")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the chunks on your own Dask distributed scheduler (dask "
                        "extra), connecting with the TLS settings of your Dask "
                        "configuration: anyone who can submit work to that scheduler can "
                        "run code in this process, so secure it (tls:// with client "
                        "certificates)")
    g.add_argument("--dask-local", type=int, default=None, metavar="N",
                   help="run the chunks on a Dask LocalCluster of N workers (dask extra), "
                        "on loopback, TLS with temporary credentials, no dashboard")
    g.add_argument("--chunk-runs", type=int, default=None, metavar="N",
                   help="runs per chunk (default 10); finished chunks are stored in "
                        "OUT/chunks and reused when the same command runs again")
    g.add_argument("--quiet", action="store_true",
                   help="no progress bar and no status lines")


def _sizes(experiments):
    """The epilog of ``run --help``: each experiment's default size, and its ``--paper``
    size where that differs."""
    lines = ["sizes (runs x rounds; --paper where it differs from the default):"]
    for name, mod in sorted(experiments.items()):
        d = mod.DEFAULTS
        paper = {**d, **getattr(mod, "PAPER_SIZE", {})}
        line = f"  {name:18s} {d['runs']} x {d['rounds']}"
        if (paper["runs"], paper["rounds"]) != (d["runs"], d["rounds"]):
            line += f" (--paper: {paper['runs']} x {paper['rounds']})"
        lines.append(line)
    fixed = [(name, mod.FIXED_COST) for name, mod in sorted(experiments.items())
             if getattr(mod, "FIXED_COST", None)]
    if fixed:
        lines.append("")
        lines.append("what does not shrink with --runs/--rounds (said on stderr too):")
        lines += [f"  - {name}: {note}" for name, note in fixed]
    return "\n".join(lines)


def _say_fixed_cost(mod, opts, progress):
    """Say on stderr, for a request below the experiment's default size, what of its work
    does not shrink with it (the module's ``FIXED_COST``, also in ``run --help``)."""
    note = getattr(mod, "FIXED_COST", None)
    d = mod.DEFAULTS
    if progress is None or not note or opts.get("runs") is None or opts.get("rounds") is None:
        return
    if d.get("runs") and d.get("rounds") and \
            opts["runs"] * opts["rounds"] < d["runs"] * d["rounds"]:
        progress(f"not scaled with --runs/--rounds: {note}")


def _build_parser(experiments, papers):
    from . import __version__

    parser = _Parser(prog=PROG,
                     description="Thompson sampling with approximate posteriors")
    parser.add_argument("--version", action="version", version=f"vits_ref {__version__}")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show the traceback of an error")
    # --debug is also accepted after the command (SUPPRESS keeps the top-level value)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments with their default size (runs x rounds)",
                   parents=[common])
    p_run = sub.add_parser("run", help="run an experiment and write CSV, JSON and PNG",
                           parents=[common], epilog=_sizes(experiments),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    p_run.add_argument("name", choices=sorted(experiments))
    p_run.add_argument("--runs", type=int, default=None,
                       help="independent runs (default: the experiment's own, listed below)")
    p_run.add_argument("--rounds", type=int, default=None,
                       help="rounds per run (default: the experiment's own, listed below); "
                            "for " + "; for ".join(f"{k}: {v}"
                                                   for k, v in STEP_CAPPED.items()))
    p_run.add_argument("--seed", type=int, default=None, help="root seed (default 0)")
    p_run.add_argument("--out", default=None,
                       help="output folder (default results/NAME; a finished result there "
                            "is not overwritten without --force)")
    p_run.add_argument("--force", action="store_true",
                       help="discard a finished result or chunks of other options in the "
                            "folder: removes only the files its manifest.json lists, and "
                            "names any other file it leaves")
    _execution_options(p_run)
    p_run.add_argument("--no-precompile", action="store_true",
                       help="on a cold kernel cache, do not compile the experiment's kernels "
                            "on every core first (python -m vits_ref compile), only as the "
                            "run meets them; results do not depend on it")
    p_run.add_argument("--paper", action="store_true",
                       help="the paper's size (runs and rounds) instead of the default; "
                            "cannot be combined with --runs/--rounds")
    p_run.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                       help="where the fused loops run (cuda: a GPU with numba-cuda, or "
                            "Numba's CUDA simulator); policies without a fused loop stay on "
                            "the CPU")
    p_run.add_argument("--tune", action="store_true",
                       help="choose each method's hyperparameters on the paper's whole "
                            "appendix E grid first, on 20 separate tuning runs; diverging "
                            "points are left out and listed in the JSON (vits-fig1, "
                            "vits-figG)")
    p_run.add_argument("--data", default=None,
                       help="a data file for experiments that take one (vits-movielens: a "
                            "MovieLens ratings.dat; default: the synthetic stand-in)")
    p_comp = sub.add_parser(
        "compile", help="fill the kernel cache with experiments' kernels on every core",
        parents=[common],
        description="Compile the Numba kernels of the experiments into Numba's disk cache, in "
        "parallel worker processes (one per core by default), so that the first run loads "
        "them instead of compiling them one after another. Each worker runs a share of an "
        "experiment's independent units (vits-fig1: its methods) at a tiny size, under a "
        "compile lock that lets one process compile a kernel two units need while the "
        "other waits and loads it. An experiment without a list of units (every one but "
        "vits-fig1 for now) is one unit: one worker runs it at 2 runs x 20 rounds. "
        "'run' does this by itself on a cold cache with more than one core "
        "(--no-precompile turns it off).")
    p_comp.add_argument("names", nargs="*", metavar="EXPERIMENT",
                        help="experiments to compile (python -m vits_ref list)")
    p_comp.add_argument("--all", action="store_true", help="every experiment")
    p_comp.add_argument("--jobs", type=int, default=None,
                        help="worker processes (default: the cores this process may use)")
    p_comp.add_argument("--quiet", action="store_true",
                        help="no progress bar and no per-unit lines")
    from .experiments.sweep import SWEEPS

    p_sw = sub.add_parser("sweep", help="score a hyperparameter grid (resumable chunks)",
                          description="Score every point of a grid by the mean final regret "
                          "over runs; " + "; ".join(f"{k}: {v[1]}" for k, v in SWEEPS.items()),
                          parents=[common])
    p_sw.add_argument("name", choices=sorted(SWEEPS))
    p_sw.add_argument("--runs", type=int, default=None, help="runs per point (default 20)")
    p_sw.add_argument("--rounds", type=int, default=None, help="rounds per run (default 1000)")
    p_sw.add_argument("--seed", type=int, default=None, help="root seed (default 0)")
    p_sw.add_argument("--methods", nargs="+", default=None, metavar="POLICY",
                      help="policy names to sweep (default: all with a grid)")
    p_sw.add_argument("--out", default=None, help="output folder (default results/sweep-NAME)")
    p_sw.add_argument("--force", action="store_true",
                      help="discard a finished result or chunks of other options in the "
                           "folder (only the files its manifest.json lists)")
    _execution_options(p_sw)
    p_rep = sub.add_parser("report", help="run a paper's experiments and write its "
                                          "reproduction report (Markdown and HTML)",
                           parents=[common])
    p_rep.add_argument("paper", choices=[*sorted(papers), "all"],
                       help="a paper, or all: the five papers' pages one after another "
                            "(into OUT/PAPER), then the index of every claim (OUT/index.md)")
    p_rep.add_argument("--size", choices=["paper", "small"], default="paper",
                       help="paper: every experiment at its defaults (the paper's sizes "
                            "where this machine allows); small: a few runs, to check the "
                            "page builds (default: paper)")
    p_rep.add_argument("--out", default=None, help="output folder (default "
                                                   "results/report-PAPER; a finished report "
                                                   "there is not overwritten without "
                                                   "--force)")
    p_rep.add_argument("--force", action="store_true",
                       help="overwrite a finished report in the default folder")
    p_rep.add_argument("--only", nargs="+", default=None, metavar="NAME",
                       help="run only these experiments (e.g. vits-fig1 vits-figG)")
    p_rep.add_argument("--seeds", nargs="+", type=int, default=None, metavar="SEED",
                       help="root seeds of the experiments whose claims are in the claim "
                            "table; a verdict that differs between seeds is inconclusive "
                            "(default: 0 1)")
    p_bench = sub.add_parser("bench", help="print speed ratios against the NumPy reference",
                             description="Time the compiled kernels against their plain-NumPy "
                             "references in this process (calls interleaved). ratio = NumPy time "
                             "/ compiled time: above 1 the compiled kernel is faster, below 1 "
                             "NumPy is faster at that size. Takes several minutes (--quick: "
                             "about a minute with a warm kernel cache).", parents=[common])
    p_bench.add_argument("--quick", action="store_true",
                         help="fewer repeats and rounds; the cold compile is not timed")
    p_bench.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                         help="cuda: rounds per second of the fused loop on the GPU against "
                              "the all-core CPU and the JAX peer, and the fraction of the "
                              "GPU's float64 peak (says so and exits when there is no GPU)")
    p_bench.add_argument("--policies", default=None, metavar="NAME,NAME",
                         help="--device cuda: the fused policies to time, comma-separated "
                              "(default: all)")
    p_bench.add_argument("--runs", default=None, metavar="N,N",
                         help="--device cuda: the numbers of runs to time, comma-separated, "
                              "one table each (default: 16384; --quick 2048)")
    p_bench.add_argument("--no-logistic", action="store_true",
                         help="--device cuda: leave out the logistic model's rows")
    p_bench.add_argument("--json", default=None, metavar="FILE",
                         help="--device cuda: also write the rows as JSON to FILE")
    p_bench.add_argument("--share-gpu", default=None, metavar="LOCK",
                         help="--device cuda, for processes sharing one GPU: compile every "
                              "kernel first, wait for the file LOCK.go, then time while "
                              "holding an exclusive lock on LOCK")
    return parser


def _execution(args):
    """Check the execution options: ``(executor kwargs, session kwargs)``."""
    ex = {}
    for opt, key in (("--jobs", "jobs"), ("--dask-local", "dask_local")):
        value = getattr(args, key)
        if value is not None:
            _count(value, opt)
            ex[key] = value
    if args.scheduler is not None:
        if not args.scheduler.strip():
            raise CLIError("--scheduler must not be empty")
        ex["scheduler"] = args.scheduler
    if len(ex) > 1:
        raise CLIError("give at most one of --jobs, --scheduler, --dask-local")
    sess = {"quiet": args.quiet}
    if args.chunk_runs is not None:
        sess["chunk_runs"] = _count(args.chunk_runs, "--chunk-runs")
    if ex.get("scheduler") is not None or ex.get("dask_local") is not None:
        import importlib.util

        # the local cluster's TLS credentials need cryptography (_chunks._local_cluster)
        needed = ("distributed",) + (("cryptography",) if ex.get("dask_local") else ())
        if any(importlib.util.find_spec(m) is None for m in needed):
            raise CLIError("Dask execution needs the dask extra: pip install "
                           "'vits_ref[dask]'")
    sess["workers"] = ex.get("jobs") or ex.get("dask_local") or 1
    return ex, sess


def check_needs(mod, with_data=False):
    """Raise :class:`CLIError` naming the extra and its pip command if a package that
    experiment ``mod`` imports is missing (its ``NEEDS``: ``(module, distribution, extra,
    needed with --data)``), before any work and before the output folder is made."""
    import importlib.util

    for module, dist, extra, with_data_too in getattr(mod, "NEEDS", ()):
        if (with_data_too or not with_data) and importlib.util.find_spec(module) is None:
            raise CLIError(f"{mod.NAME} needs {dist}, which is not installed (the {extra} "
                           f"extra): pip install 'vits_ref[{extra}]'")


def check_device(device):
    """Raise :class:`CLIError` (one line) unless ``device`` can run here: for ``"cuda"``,
    numba-cuda working with this NumPy and a visible GPU, or Numba's CUDA simulator
    (:func:`vits_ref.bandit._cuda_simulate.check_device`). Called before the output
    folder is made, so a failed ``--device cuda`` leaves nothing behind."""
    if device != "cuda":
        return
    from .bandit._cuda_simulate import check_device as check_cuda

    try:
        check_cuda()
    except RuntimeError as exc:
        raise CLIError(f"--device cuda: {exc}") from None


#: How messages name the program: as it was called (set by :func:`main`)
PROG = "python -m vits_ref"


def _prog_name():
    """``vits-ref`` when called through that script, else ``python -m vits_ref``."""
    called = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "")
    return "vits-ref" if called.startswith("vits-ref") else "python -m vits_ref"


def _say(message):
    """One line on stderr that is not an error (shown with --quiet too)."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _prepare_out(args, default, experiment, options):
    """The output folder, checked before any computation: writable, no symlinks at the
    names this tool writes, and not holding a finished result or chunks of other options
    (unless ``--force``, which removes the files the manifest lists and names any other
    file it leaves). A finished result some of whose files fail their check (missing,
    unparseable, another shape or checksum than the manifest records) is not finished:
    it is rebuilt from the chunks, with one line saying so."""
    from .experiments import _manifest, _outputs

    out = check_out(default if args.out is None else args.out)
    problem, man = None, None
    try:
        man = _manifest.read(out)
    except _manifest.ManifestError as exc:
        problem = f"an unreadable manifest.json ({exc})"
    if man is not None and not _manifest.ours(man):
        problem = _manifest.FOREIGN  # --force removes nothing it lists
    elif man is not None:
        why = _manifest.mismatch(man, experiment, options)
        if why is not None:
            problem = f"chunks of another run ({why})"
        elif "finished" in man:
            bad = _outputs.damaged(out, man)
            if not bad:
                problem = _outputs.FINISHED
            else:
                _say(f"{out}: the finished result is damaged ("
                     + _outputs.name_some([f"{n}: {reason}" for n, reason in bad], 3)
                     + "); rebuilding it from the chunks")
    elif problem is None and _finished(out):
        # written without a manifest (another version): nothing to check it against
        problem = _outputs.FINISHED
    elif problem is None and _outputs.unlisted(out):
        # no manifest: these are not this tool's, and a run would overwrite them
        problem = (f"files that vits_ref did not write and a run may overwrite "
                   f"({_outputs.name_some(_outputs.unlisted(out))})")
    if problem is not None:
        if not args.force:
            raise CLIError(f"{out} already holds {problem}; pass --force to discard it, or "
                           f"--out DIR to write elsewhere")
        left = _outputs.discard(out, man)
        if left:
            _say(_outputs.left_message(out, left))
    elif man is not None:
        # a resumed run: the temporary files of a write killed before its rename go
        _outputs.remove_temporaries(out)
        if "finished" in man:
            _outputs.unseal(out)  # a run killed from here on must not look finished
    return out


def _data_digest(path, out):
    """The SHA-256 of data file ``path``, reused from ``out``'s manifest while the file's
    size and modification time are those it was computed at."""
    from .experiments import _manifest

    try:
        man = _manifest.read(out)
    except _manifest.ManifestError:
        man = None
    cached = ((man or {}).get("inputs") or {}).get(os.path.abspath(path))
    try:
        return _manifest.data_digest(path, cached)
    except OSError as exc:
        raise CLIError(f"--data {path!r} is not readable: {exc.strerror or exc}") from None


def _record_input(out, path, digest):
    """Keep ``digest`` in ``out``'s manifest, for :func:`_data_digest` next time."""
    from .experiments import _manifest

    _manifest.update(out, lambda m: m.setdefault("inputs", {}).__setitem__(
        os.path.abspath(path), digest))


def _run(args, experiments):
    from . import _compile_watch
    from .experiments import _chunks, _outputs, get
    from .experiments._common import finish_timing

    mod = get(args.name)
    params = inspect.signature(mod.run).parameters
    opts = {**mod.DEFAULTS}
    if args.paper:
        if args.runs is not None or args.rounds is not None:
            raise CLIError("--paper sets the runs and rounds: give either --paper or "
                           "--runs/--rounds")
        opts.update(getattr(mod, "PAPER_SIZE", {}))
    for key in ("runs", "rounds", "seed"):
        value = getattr(args, key)
        if value is not None:
            if key == "seed":
                if value < 0:
                    raise CLIError("--seed must be >= 0")
            else:
                _count(value, f"--{key}")
            opts[key] = value
    ex, sess = _execution(args)
    check_needs(mod, with_data=args.data is not None)
    if args.device != "cpu":
        check_device(args.device)
        sess["device"] = args.device
    if args.tune:
        if "tune" not in params:
            raise CLIError(f"{args.name} takes no --tune")
        opts["tune"] = True
    if args.data is not None:
        if "path" not in params:
            raise CLIError(f"{args.name} takes no --data")
        if not args.data.strip():
            raise CLIError("--data must not be empty")
        if not os.path.exists(args.data):
            raise CLIError(f"--data {args.data!r}: no such file")
        if not os.path.isfile(args.data):
            raise CLIError(f"--data {args.data!r} is not a file")
        if not os.access(args.data, os.R_OK):
            raise CLIError(f"--data {args.data!r} is not readable")
        opts["path"] = args.data
    options = {"experiment": args.name, **opts, "device": args.device}
    digest = None
    if "path" in opts:
        # the data's content, not its size, decides whether chunks may be reused
        digest = _data_digest(opts["path"], check_out(
            f"results/{args.name}" if args.out is None else args.out))
        options["data_sha256"] = digest["sha256"]
    out = _prepare_out(args, f"results/{args.name}", args.name, options)
    if digest is not None:
        _record_input(out, opts["path"], digest)
    progress = None if args.quiet else _progress(args.name)
    _say_fixed_cost(mod, opts, progress)
    _precompile_cold(args, mod, progress)
    with _chunks.executor(**ex) as (executor, ex_name), _chunks.session(
            executor=executor, executor_name=ex_name, options=options, **sess), \
            _compile_watch.watch(progress, name=args.name) as compiled:
        result = mod.run(out=out, progress=progress, **opts)
    finish_timing(result, args.started, compiled.seconds)
    _outputs.seal(out, result["files"])
    print(mod.table(result))
    print(f"wrote {', '.join(result['files'])} ({result['total_wall_time_s']:.1f} s)")
    return 0


def _precompile_cold(args, mod, progress):
    """``run``'s first step on a cold cache: the experiment's kernels compiled on every
    core (:func:`vits_ref.experiments._precompile.precompile_jobs` decides whether and with how many
    workers: not with ``--no-precompile``, on a GPU or a Dask scheduler). A failure there
    is said in one line and the run goes on (it compiles what it needs itself). Returns
    the compile result or None."""
    from .experiments import _precompile

    if args.device != "cpu" or args.scheduler is not None or args.dask_local is not None:
        return None
    jobs = _precompile.precompile_jobs(mod, jobs=args.jobs, enabled=not args.no_precompile)
    if not jobs:
        return None
    if progress is not None:
        progress(f"cold kernel cache: compiling the kernels in {jobs} processes first "
                 f"(--no-precompile: only as the run meets them)")
    try:
        res = _precompile.compile_units(_precompile.units(mod), jobs, say=progress)
    except _precompile.UnitError as exc:
        _say(f"compiling in parallel failed ({exc}); the run compiles what it needs")
        return None
    _precompile.record([mod.NAME], res)
    if progress is not None:
        progress(f"compiled {res['kernels']} kernels in {res['wall_s']:.0f} s "
                 f"({res['seconds']:.0f} s of compiling in {res['jobs']} processes"
                 f"{_twice(res)})")
    return res


def _compile(args):
    """``compile``: fill Numba's disk cache with experiments' kernels in parallel
    processes (:mod:`vits_ref.experiments._precompile`)."""
    from .experiments import EXPERIMENTS, _precompile

    if args.all and args.names:
        raise CLIError("give experiments or --all, not both")
    if not args.all and not args.names:
        raise CLIError("name the experiments to compile (python -m vits_ref list), or "
                       "give --all")
    unknown = [n for n in args.names if n not in EXPERIMENTS]
    if unknown:
        raise CLIError(f"unknown experiment {unknown[0]!r}; python -m vits_ref list "
                       f"lists them")
    if os.environ.get("VITS_REF_CACHE", "").strip() == "0":
        raise CLIError("kernels are not cached on disk (VITS_REF_CACHE=0): nothing to fill")
    jobs = _precompile.cores() if args.jobs is None else _count(args.jobs, "--jobs")
    names = sorted(EXPERIMENTS) if args.all else list(dict.fromkeys(args.names))
    for name in list(names):
        try:
            check_needs(EXPERIMENTS[name])
        except CLIError as exc:
            if not args.all:
                raise
            _say(f"skipping {name}: {exc}")
            names.remove(name)
    work = [u for name in names for u in _precompile.units(EXPERIMENTS[name])]
    say = None if args.quiet else _progress("compile")
    if say is not None:
        say(f"{len(work)} units of {len(names)} experiment(s) in "
            f"{min(jobs, len(work))} processes")
    res = _precompile.compile_units(work, jobs, say=say)
    _precompile.record(names, res)
    print(f"compiled {res['kernels']} kernels in {res['wall_s']:.1f} s ({res['seconds']:.1f} "
          f"s of compiling in {res['jobs']} processes; {len(work)} units{_twice(res)})")
    return 0


def _twice(res):
    """``"; N compiled in two processes"`` when the workers of the compile step compiled
    some kernels more than once (nested ones compile without the lock), else ``""``."""
    extra = res.get("compilations", res["kernels"]) - res["kernels"]
    return f"; {extra} compiled again in another process" if extra > 0 else ""


def _sweep(args):
    from . import _compile_watch
    from .experiments import _chunks, _outputs
    from .experiments._common import finish_timing
    from .experiments.sweep import SWEEPS, table

    fn = SWEEPS[args.name][0]
    opts = {}
    for key in ("runs", "rounds"):
        value = getattr(args, key)
        if value is not None:
            opts[key] = _count(value, f"--{key}")
    if args.seed is not None:
        if args.seed < 0:
            raise CLIError("--seed must be >= 0")
        opts["seed"] = args.seed
    if args.methods is not None:
        opts["methods"] = list(args.methods)
    ex, sess = _execution(args)
    params = inspect.signature(fn).parameters
    options = {"sweep": args.name, **{k: opts.get(k, params[k].default)
                                      for k in ("runs", "rounds", "seed", "methods")}}
    out = _prepare_out(args, f"results/sweep-{args.name}", None, options)
    progress = None if args.quiet else _progress(args.name)
    try:
        with _chunks.executor(**ex) as (executor, ex_name), _chunks.session(
                executor=executor, executor_name=ex_name, options=options, **sess), \
                _compile_watch.watch(progress, name=f"sweep {args.name}") as compiled:
            result = fn(out=out, progress=progress, **opts)
    except ValueError as exc:
        if "methods" in str(exc):
            raise CLIError(f"--{exc}") from None
        raise
    finish_timing(result, args.started, compiled.seconds)
    _outputs.seal(out, result["files"])
    print(table(result))
    print(f"wrote {', '.join(result['files'])} ({result['total_wall_time_s']:.1f} s)")
    return 0


def _report(args):
    if args.paper == "all":
        return _report_all(args)
    from .experiments.report import build

    if args.out is None:
        out = check_out(_default_out(os.path.join("results", f"report-{args.paper}"),
                                     args.force))
    else:
        out = check_out(args.out)
    from .experiments.report import EXPERIMENTS as PAPER_EXPERIMENTS

    for name in PAPER_EXPERIMENTS[args.paper]:  # each experiment writes into OUT/NAME
        sub = os.path.join(out, name)
        if os.path.islink(sub):
            raise CLIError(f"--out {out!r} holds a symlink where vits_ref writes {name}/; "
                           f"remove it or write to another folder")
        if os.path.isdir(sub):
            check_out(sub)
    try:
        rep = build(args.paper, size=args.size, out=out,
                    progress=_progress(f"report {args.paper}"), only=args.only,
                    seeds=args.seeds)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    for c in rep["claims"]:
        print(f"{c['verdict']:>18}  {c['id']}")
    print(f"wrote {', '.join([*rep['files'], rep['claims_json']])}")
    return 0


def _report_all(args):
    """``report all``: every paper with claims (not the showdown, which has none) into
    ``OUT/PAPER`` in turn, then ``OUT/index.md``
    (:func:`vits_ref.experiments.report.index_page`)."""
    from .experiments.report import CLAIM_PAPERS, index_page

    if args.only:
        raise CLIError("--only names experiments of one paper; it cannot be used with all")
    out = os.path.join("results", "report-all") if args.out is None else args.out
    if args.out is None and os.path.exists(os.path.join(out, "index.md")) and not args.force:
        raise CLIError(f"{out} already holds a finished report (index.md); pass --force to "
                       f"overwrite it, or --out DIR to write elsewhere")
    out = check_out(out)
    for paper in CLAIM_PAPERS:
        one = argparse.Namespace(**{**vars(args), "paper": paper,
                                    "out": os.path.join(out, paper)})
        _report(one)
    index = os.path.join(out, "index.md")
    with open(index, "w", encoding="utf-8") as fh:
        fh.write(index_page(out))
    print(f"wrote {index}")
    return 0


def main(argv=None):
    """Entry point of ``python -m vits_ref`` and the ``vits-ref`` script."""
    started = time.perf_counter()
    from .experiments import EXPERIMENTS
    from .experiments.report import PAPERS as REPORT_PAPERS

    global PROG
    PROG = _prog_name()
    parser = _build_parser(EXPERIMENTS, REPORT_PAPERS)
    args = parser.parse_args(argv)
    # the runs' total_wall_time_s starts here: at the process's start for a command
    # (argv None), at this call's start for a call from Python with its own arguments
    args.started = _process_start() if argv is None else started
    prog = f"{parser.prog} {args.command}"
    try:
        if args.command == "list":
            for name, mod in sorted(EXPERIMENTS.items()):
                d = mod.DEFAULTS
                size = f"{d['runs']} x {d['rounds']}"
                print(f"{name:18s} {size:>11s}  {mod.DESCRIPTION}")
            sys.stdout.flush()  # here, so that a closed pipe is met below, not at exit
            return 0
        if args.command == "bench":
            if args.device == "cuda":
                from ._bench.cuda import check_options
                from ._bench.cuda import main as cuda_main

                runs = None
                if args.runs is not None:
                    try:
                        runs = [int(x) for x in args.runs.split(",")]
                    except ValueError:
                        raise CLIError(f"--runs: comma-separated integers expected, got "
                                       f"{args.runs!r}") from None
                policies = None if args.policies is None else args.policies.split(",")
                try:
                    check_options(policies, runs)
                except ValueError as exc:
                    raise CLIError(f"bench --device cuda: {exc}") from None
                cuda_main(quick=args.quick, policies=policies, runs=runs,
                          logistic=not args.no_logistic, json_path=args.json,
                          share_gpu=args.share_gpu)
                return 0
            cuda_only = [opt for opt, v in (("--policies", args.policies),
                                            ("--runs", args.runs),
                                            ("--no-logistic", args.no_logistic),
                                            ("--json", args.json),
                                            ("--share-gpu", args.share_gpu)) if v]
            if cuda_only:
                raise CLIError(f"{', '.join(cuda_only)}: only with bench --device cuda")
            from ._bench import main as bench_main

            bench_main(quick=args.quick)
            return 0
        if args.command == "report":
            return _report(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "compile":
            return _compile(args)
        return _run(args, EXPERIMENTS)
    except CLIError as exc:
        if args.debug:
            raise
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader stopped (``vits-ref list | head -3``): no traceback, and nothing more
        # is written to the closed pipe, at exit either
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, no traceback, unless --debug
        if args.debug:
            raise
        msg = " ".join(str(exc).split()) or "(no message)"
        print(f"{prog}: error: {type(exc).__name__}: {msg} (run with --debug for the "
              f"traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
