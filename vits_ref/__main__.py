"""Command line: ``python -m vits_ref list | run NAME | report PAPER | bench``."""

import argparse
import inspect
import sys
import time


def _progress(name):
    start = time.perf_counter()

    def report(msg):
        print(f"[{name} {time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return report


def main(argv=None):
    """Entry point of ``python -m vits_ref`` and the ``vits-ref`` script."""
    from .experiments import EXPERIMENTS, get
    from .report import PAPERS as REPORT_PAPERS

    parser = argparse.ArgumentParser(prog="python -m vits_ref",
                                     description="Thompson sampling with approximate posteriors")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments")
    p_run = sub.add_parser("run", help="run an experiment and write CSV, JSON and PNG")
    p_run.add_argument("name", choices=sorted(EXPERIMENTS))
    p_run.add_argument("--runs", type=int, default=None, help="independent runs (paper: 50)")
    p_run.add_argument("--rounds", type=int, default=None, help="rounds per run (paper: 1000)")
    p_run.add_argument("--seed", type=int, default=None, help="root seed (default 0)")
    p_run.add_argument("--out", default=None, help="output folder (default results/NAME)")
    p_run.add_argument("--jobs", type=int, default=None,
                       help="worker processes for policies without a fused loop (logistic, "
                            "MLP, per-arm); results do not depend on it")
    p_run.add_argument("--tune", action="store_true",
                       help="choose each method's hyperparameters on the paper's whole "
                            "appendix E grid first, on 20 separate tuning runs; diverging "
                            "points are left out and listed in the JSON (vits-fig1, "
                            "vits-figG)")
    p_run.add_argument("--data", default=None,
                       help="a data file for experiments that take one (vits-movielens: a "
                            "MovieLens ratings.dat; default: the synthetic stand-in)")
    p_rep = sub.add_parser("report", help="run a paper's experiments and write its "
                                          "reproduction report (Markdown and HTML)")
    p_rep.add_argument("paper", choices=sorted(REPORT_PAPERS))
    p_rep.add_argument("--size", choices=["paper", "small"], default="paper",
                       help="paper: every experiment at its defaults (the paper's sizes "
                            "where this machine allows); small: a few runs, to check the "
                            "page builds (default: paper)")
    p_rep.add_argument("--out", default=None, help="output folder (default "
                                                   "results/report-PAPER)")
    p_rep.add_argument("--only", nargs="+", default=None, metavar="NAME",
                       help="run only these experiments (e.g. vits-fig1 vits-figG)")
    p_bench = sub.add_parser("bench", help="print speed ratios against the NumPy reference")
    p_bench.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, mod in sorted(EXPERIMENTS.items()):
            print(f"{name:18s} {mod.DESCRIPTION}")
        return 0
    if args.command == "bench":
        from ._bench import main as bench_main

        bench_main(quick=args.quick)
        return 0
    if args.command == "report":
        from .report import build

        try:
            rep = build(args.paper, size=args.size, out=args.out or None,
                        progress=_progress(f"report {args.paper}"), only=args.only)
        except ValueError as exc:
            parser.error(str(exc))
        for c in rep["claims"]:
            print(f"{c['verdict']:>18}  {c['id']}")
        print(f"wrote {', '.join(rep['files'])}")
        return 0
    mod = get(args.name)
    opts = {**mod.DEFAULTS}
    for key in ("runs", "rounds", "seed"):
        value = getattr(args, key)
        if value is not None:
            if value < (0 if key == "seed" else 1):
                parser.error(f"--{key} must be {'>= 0' if key == 'seed' else '>= 1'}")
            opts[key] = value
    if args.jobs is not None:
        if "n_jobs" not in inspect.signature(mod.run).parameters:
            parser.error(f"{args.name} takes no --jobs (it parallelises over seeds itself)")
        if args.jobs < 1:
            parser.error("--jobs must be >= 1")
        opts["n_jobs"] = args.jobs
    if args.tune:
        if "tune" not in inspect.signature(mod.run).parameters:
            parser.error(f"{args.name} takes no --tune")
        opts["tune"] = True
    if args.data is not None:
        if "path" not in inspect.signature(mod.run).parameters:
            parser.error(f"{args.name} takes no --data")
        opts["path"] = args.data
    out = args.out or f"results/{args.name}"
    result = mod.run(out=out, progress=_progress(args.name), **opts)
    print(mod.table(result))
    print(f"wrote {', '.join(result['files'])} ({result['total_wall_time_s']:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
