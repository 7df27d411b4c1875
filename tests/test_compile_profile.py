""".ci/compile_profile.py on a planted compile log: a signature compiled by two processes
for one CPU target is a cache's miss; the same signature compiled for another target
(.ci/run's generic-CPU run) is that target's own compilation, counted apart."""

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _profile():
    spec = importlib.util.spec_from_file_location(
        "compile_profile", os.path.join(ROOT, ".ci", "compile_profile.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(fn, s, target=None, sig="(int64,)"):
    row = {"fn": fn, "closure": "", "sig": sig, "s": s, "miss": True, "waited": 0.0,
           "depth": 0, "test": "tests/test_x.py::test_y (call)"}
    if target is not None:  # a log written before rows named their target: the host's
        row["target"] = target
    return row


def test_a_second_targets_compilations_are_not_counted_as_misses(tmp_path, capsys):
    logs = {"101": [_row("a.f", 2.0, "host"), _row("a.g", 1.0)],
            "102": [_row("a.f", 2.0, "host")],
            "103": [_row("a.f", 4.0, "generic"), _row("a.g", 1.5, "generic")]}
    for pid, rows in logs.items():
        (tmp_path / f"{pid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _profile().main(str(tmp_path))
    out = capsys.readouterr().out
    assert "per CPU target, outermost compiled: host 3 (5 s), generic 2 (6 s)" in out
    # a.f twice for the host (2 s each: 2 s after the first); a.g once per target
    assert "for one target: 1 signatures, 2 s after the first" in out
    assert "x2 a.f (int64,) (host)" in out and "a.g (int64,) (" not in out
