"""Where a cold test run's compile time goes: sums the rows that ``tests/conftest.py``
writes when ``VITS_REF_COMPILE_LOG`` names a folder (one JSON line per compilation)::

    VITS_REF_COMPILE_LOG=/tmp/compile python -m pytest
    python .ci/compile_profile.py /tmp/compile [N]

Prints the outermost compilations' total (nested ones run inside their caller's time), the
functions that took longest, and the signatures that were compiled (not loaded from the
cache) by more than one process: each is time a shared cache should have saved.
"""

import collections
import glob
import json
import os
import sys


def rows(folder):
    out = []
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        pid = os.path.basename(path).split(".")[0]
        with open(path) as fh:
            out += [dict(json.loads(line), pid=pid) for line in fh]
    return out


def main(folder, n=30):
    rs = rows(folder)
    top = [r for r in rs if r["depth"] == 0]
    compiled = [r for r in top if r["miss"]]
    print(f"{len(rs)} compilations in {len({r['pid'] for r in rs})} processes; outermost: "
          f"{sum(r['s'] for r in top):.0f} s ({len(compiled)} compiled "
          f"{sum(r['s'] for r in compiled):.0f} s, {len(top) - len(compiled)} loaded "
          f"{sum(r['s'] for r in top if not r['miss']):.0f} s); waited on locks "
          f"{sum(r['waited'] for r in top):.0f} s")
    by_fn = collections.defaultdict(lambda: [0.0, 0, set()])
    for r in top:
        e = by_fn[r["fn"]]
        e[0] += r["s"]
        e[1] += 1
        e[2].add(r["test"].split("::")[0])
    print(f"\n{'seconds':>8s} {'sigs':>5s}  function (test files)")
    for fn, (s, k, files) in sorted(by_fn.items(), key=lambda kv: -kv[1][0])[:n]:
        print(f"{s:8.1f} {k:5d}  {fn}  ({', '.join(sorted(files))[:100]})")
    # per CPU target: Numba caches each apart, so a second target's compilations (.ci/run's
    # generic-CPU run) are its own, not a cache's miss (rows of older logs: one target)
    targets = collections.Counter(r.get("target", "host") for r in compiled)
    if len(targets) > 1:
        print("\nper CPU target, outermost compiled: " + ", ".join(
            f"{t} {k} ({sum(r['s'] for r in compiled if r.get('target', 'host') == t):.0f} s)"
            for t, k in targets.most_common()))
    twice = collections.defaultdict(list)
    for r in rs:
        if r["miss"]:
            twice[(r["fn"], r["sig"], r.get("target", "host"))].append(r)
    dup = {k: v for k, v in twice.items() if len({r["pid"] for r in v}) > 1}
    print(f"\ncompiled by more than one process for one target: {len(dup)} signatures, "
          f"{sum(sum(r['s'] for r in v[1:]) for v in dup.values()):.0f} s after the first")
    for (fn, sig, target), v in sorted(dup.items(),
                                       key=lambda kv: -sum(r["s"] for r in kv[1]))[:n]:
        print(f"  {sum(r['s'] for r in v):6.1f} s x{len(v)} {fn} {sig[:80]} ({target})")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
