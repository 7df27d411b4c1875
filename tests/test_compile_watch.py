"""A cold Numba cache is said, shown and timed: "compiling kernels (first run only, about N
s)" on stderr when the first kernel compiles (nothing under --quiet), and the seconds spent
compiling in ``summary.json`` (``environment.numba_compile_s``). Each check compiles a
new small function (``cache=False``: it compiles whatever the disk cache holds)."""

import json
import os
import time

import numba
import numpy as np
import pytest

import vits_ref.experiments as experiments
from vits_ref import _compile_watch
from vits_ref.__main__ import main as cli_main
from vits_ref.experiments._common import environment_info, write_json


def _new_function():
    @numba.njit(cache=False)
    def f(x):
        return np.sum(x * x)

    return f


def test_compiling_is_said_once_and_timed():
    lines = []
    before = _compile_watch.seconds() or 0.0
    t0 = time.perf_counter()
    with _compile_watch.watch(lines.append, estimate_s=123):
        f = _new_function()
        assert f(np.arange(3.0)) == 5.0
        f(np.arange(3.0))  # compiled already: nothing more is said
    wall = time.perf_counter() - t0
    assert lines[0] == "compiling kernels (first run only, about 123 s)"
    assert lines[-1].startswith("compiled ") and len(lines) == 2
    spent = _compile_watch.seconds() - before
    assert 0.0 < spent <= wall
    assert environment_info()["numba_compile_s"] == _compile_watch.seconds()


def test_nothing_to_compile_says_nothing():
    f = _new_function()
    f(np.arange(2.0))
    lines = []
    with _compile_watch.watch(lines.append):
        f(np.arange(2.0))
    assert lines == []


class _FakeExperiment:
    """A registry entry whose run compiles one new function and writes a summary."""

    NAME = "vits-figI"
    DEFAULTS = {"runs": 1, "rounds": 1, "seed": 0}

    @staticmethod
    def run(runs, rounds, seed, out, progress=None):
        _new_function()(np.arange(2.0))
        path = os.path.join(out, "summary.json")
        result = {"environment": environment_info(), "files": [path],
                  "total_wall_time_s": 0.0}
        write_json(path, result)
        return result

    @staticmethod
    def table(result):
        return ""


@pytest.mark.parametrize("quiet", [False, True])
def test_cli_says_compiling_on_stderr_and_records_it(tmp_path, capsys, monkeypatch, quiet):
    monkeypatch.setattr(experiments, "get", lambda name: _FakeExperiment)
    out = tmp_path / "out"
    argv = ["run", "vits-figI", "--out", str(out)] + (["--quiet"] if quiet else [])
    assert cli_main(argv) == 0
    cap = capsys.readouterr()
    assert "compiling kernels" not in cap.out
    assert ("compiling kernels (first run only, about "
            f"{_compile_watch.COLD_COMPILE_S} s)" in cap.err) is not quiet
    summary = json.loads((out / "summary.json").read_text())
    assert summary["environment"]["numba_compile_s"] > 0
