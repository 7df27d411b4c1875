"""A cold Numba cache is said, shown and timed: "compiling kernels (first run only, about N
s)" on stderr when the first kernel compiles (nothing under --quiet), and the seconds spent
compiling in ``summary.json`` (``environment.numba_compile_s``). Each check compiles a
new small function (``cache=False``: it compiles whatever the disk cache holds)."""

import importlib.util
import io
import json
import logging
import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest
from fake_runs import Policy as _Policy
from fake_runs import fake_simulate as _fake_simulate

import vits_ref.experiments as experiments
import vits_ref.experiments.report  # noqa: F401  (reads the registry before get is patched)
from vits_ref import _compile_watch, _terminal
from vits_ref.__main__ import main as cli_main
from vits_ref.experiments import _chunks
from vits_ref.experiments._common import TIMING_NOTE, environment_info, run_panels, write_json


def _new_function():
    @numba.njit(cache=False)
    def f(x):
        return np.sum(x * x)

    return f


def test_compiling_is_said_once_and_timed():
    lines = []
    before = _compile_watch.seconds()
    t0 = time.perf_counter()
    with _compile_watch.watch(lines.append) as w:
        f = _new_function()
        assert f(np.arange(3.0)) == 5.0
        f(np.arange(3.0))  # compiled already: nothing more is said
    wall = time.perf_counter() - t0
    # no experiment named: no measurement to quote, and no number made up
    assert lines[0] == "compiling kernels (first run on this machine; no estimate yet)"
    assert lines[-1] == (f"compiled {w.kernels} kernels in {w.seconds:.0f} s (cached on "
                         f"disk for the next runs)") and len(lines) == 2
    assert 0.0 < w.seconds <= wall and w.kernels >= 1  # nested compilations counted
    # the process-wide listener timed the same compilation: the same events, each listener
    # reading its own clock (microseconds apart; its total is a difference of two sums
    # hundreds of seconds large in a long test process), so equal to 1 ms, not to the bit
    # (1.19628469600 against 1.19628469599 failed once)
    process = _compile_watch.seconds() - before
    assert abs(process - w.seconds) <= 1e-3 and process <= wall + 1e-3
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
    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(tmp_path / "times.json"))
    out = tmp_path / "out"
    argv = ["run", "vits-figI", "--out", str(out)] + (["--quiet"] if quiet else [])
    assert cli_main(argv) == 0
    cap = capsys.readouterr()
    assert "compiling kernels" not in cap.out
    assert ("compiling kernels (first run on this machine; no estimate yet)"
            in cap.err) is not quiet
    summary = json.loads((out / "summary.json").read_text())
    assert summary["environment"]["numba_compile_s"] > 0


# -------------------------------------------------------------- the library's own logger


def _library_function(name="kernel_under_test"):
    """A new function that the process-wide listener takes for one of the library's
    kernels (its module is under vits_ref); not cached, so it compiles every time."""
    def py(x):
        return np.sum(x * x)

    py.__module__, py.__name__, py.__qualname__ = "vits_ref._test_only", name, name
    return numba.njit(cache=False)(py)


class _SlowCompile(numba.core.event.Listener):
    """Makes each outermost compilation last at least ``delay`` seconds (for the timer)."""

    def __init__(self, delay):
        self.delay = delay

    def on_start(self, ev):
        time.sleep(self.delay)

    def on_end(self, ev):
        pass


@pytest.fixture
def say_at_once(monkeypatch):
    """The logger says a burst after 0 s instead of 2 s; a new burst starts at once."""
    monkeypatch.setattr(_compile_watch, "SAY_AFTER_S", 0.0)
    monkeypatch.setattr(_compile_watch, "BURST_GAP_S", 0.0)
    monkeypatch.setattr(_compile_watch._PROCESS, "last_end", None)
    with numba.core.event.install_listener("numba:compile", _SlowCompile(0.2)):
        yield
    time.sleep(0.05)  # a timer that lost its race says nothing into the next test


def _records(caplog):
    return [r for r in caplog.records if r.name == "vits_ref.compile"]


def test_a_long_compilation_is_logged_once_naming_the_kernel(say_at_once, caplog,
                                                             monkeypatch):
    # the first compilation of a burst starts the timer; the second of the same burst
    # (less than BURST_GAP_S later) is not said again
    monkeypatch.setattr(_compile_watch, "BURST_GAP_S", 60.0)
    with caplog.at_level(logging.INFO, logger="vits_ref"):
        f, g = _library_function("first_kernel"), _library_function("second_kernel")
        f(np.arange(2.0))
        g(np.arange(2.0))
        time.sleep(0.05)
    recs = _records(caplog)
    assert len(recs) == 1, [r.getMessage() for r in recs]
    assert recs[0].levelno == logging.WARNING  # shown without configuring logging
    msg = recs[0].getMessage()
    assert "vits_ref._test_only.first_kernel" in msg and "compiling" in msg
    assert "not cached" in msg  # cache=False: honest about what a later run does


def test_the_logger_is_silenced_by_its_level(say_at_once, caplog):
    lib = logging.getLogger("vits_ref")
    level = lib.level
    lib.setLevel(logging.ERROR)
    try:
        _library_function()(np.arange(2.0))
        time.sleep(0.05)
    finally:
        lib.setLevel(level)
    assert _records(caplog) == []


def test_no_log_while_the_command_line_watches(say_at_once, caplog):
    with caplog.at_level(logging.INFO, logger="vits_ref"), _compile_watch.watch():
        _library_function()(np.arange(2.0))
        time.sleep(0.05)
    assert _records(caplog) == []


def test_a_users_own_function_is_timed_not_said(say_at_once, caplog):
    before = _compile_watch.kernels()
    with caplog.at_level(logging.INFO, logger="vits_ref"):
        _new_function()(np.arange(2.0))  # defined in this test module, not the library's
        time.sleep(0.05)
    assert _records(caplog) == []
    assert _compile_watch.kernels() > before


def test_the_log_reaches_stderr_without_logging_configured():
    """In a fresh process nothing configures logging: Python's last-resort handler
    prints the WARNING on stderr (an INFO record would be dropped)."""
    code = (
        "import time, numpy as np, numba\n"
        "from vits_ref import _compile_watch as w\n"
        "w.SAY_AFTER_S = 0.0\n"
        "class Slow(numba.core.event.Listener):\n"
        "    def on_start(self, ev): time.sleep(0.2)\n"
        "    def on_end(self, ev): pass\n"
        "numba.core.event.register('numba:compile', Slow())\n"
        "def k(x): return x + 1.0\n"
        "k.__module__ = 'vits_ref._test_only'\n"
        "numba.njit(k)(1.0)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("vits_ref: compiling vits_ref._test_only.k") == 1, res.stderr
    assert res.stdout == ""


# -------------------------------------------------------------- the measured estimate


def test_times_path_follows_the_cache_folders(monkeypatch, tmp_path):
    monkeypatch.delenv("VITS_REF_COMPILE_TIMES", raising=False)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _compile_watch.times_path() == str(tmp_path / "xdg" / "vits_ref" /
                                              "compile_times.json")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nb"))
    assert _compile_watch.times_path() == str(tmp_path / "nb" / "vits_ref" /
                                              "compile_times.json")


def test_the_estimate_is_measured_not_fixed(tmp_path, capsys, monkeypatch):
    """The first run says there is no estimate yet and records what it measured; the
    next run quotes that measurement and its date; a corrupt file is no estimate."""
    times = tmp_path / "times.json"
    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(times))
    monkeypatch.setattr(experiments, "get", lambda name: _FakeExperiment)

    def run(folder):
        assert cli_main(["run", "vits-figI", "--out", str(tmp_path / folder)]) == 0
        return capsys.readouterr().err

    assert "no estimate yet" in run("a")
    rec = json.loads(times.read_text())["vits-figI"]
    assert rec["kernels"] >= 1 and rec["seconds"] >= 0
    err = run("b")
    assert "no estimate" not in err
    assert (f"about {rec['seconds']:.0f} s for {rec['kernels']} kernels when nothing is "
            f"cached, measured on this machine on {rec['date']}") in err
    times.write_text("{not json")
    assert "no estimate yet" in run("c")
    assert _compile_watch.estimate("vits-figI")["kernels"] >= 1  # written again


def test_a_partly_cached_run_does_not_lower_the_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(tmp_path / "t.json"))
    assert _compile_watch.record("x", 200.0, 150)
    assert not _compile_watch.record("x", 10.0, 3)
    assert _compile_watch.estimate("x")["seconds"] == 200.0
    assert _compile_watch.estimate("y") is None


# ------------------------------------------------------- progress in a 0-column console


class _TTY(io.StringIO):
    def isatty(self):
        return True

    def fileno(self):
        return 2


@pytest.mark.parametrize("how", ["terminal", "COLUMNS"])
def test_a_zero_column_console_gets_plain_progress_lines(monkeypatch, how):
    """tqdm draws nothing in a terminal of 0 columns: the chunks' status lines are said
    instead (they used to be switched off because a bar existed)."""
    pytest.importorskip("tqdm")
    fake_err = _TTY()
    monkeypatch.setattr(sys, "stderr", fake_err)
    cols = 0 if how == "terminal" else 80
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((cols, 24)))
    if how == "COLUMNS":
        monkeypatch.setenv("COLUMNS", "0")
    assert _terminal.columns() == 0
    said = []
    chunks = [_chunks.Chunk(key=f"c{i}", fn=lambda arg: {"wall_time_s": 0.0}, arg=i, work=1,
                            info={}) for i in range(3)]
    with _chunks.session(quiet=False):
        store = _chunks.Store(None, "fake", "stage", {}, force=False, options=None)
        _chunks.run_chunks(store, chunks, progress=said.append, desc="stage")
    assert any(line.startswith("stage: 3/3 chunks done, ") and "elapsed" in line
               for line in said), said
    assert any("1/3 chunks done" in line and "left" in line for line in said), said


def test_a_real_terminal_keeps_its_bar(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _TTY())
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((100, 24)))
    assert _terminal.columns() == 100
    if importlib.util.find_spec("tqdm") is not None:
        assert _chunks.progress_bar(10, "x", quiet=False) is not None


# ------------------------------------------------------------------- honest times


class _FallbackExperiment:
    """run_panels on the stand-in simulate (no kernel): the first candidate diverges on
    panel "A" and the fallback runs; then an extra pass (as vits-fig1's VTS extra) that
    takes EXTRA_S, compiles a new function and writes the summary again."""

    NAME = "vits-figI"
    DEFAULTS = {"runs": 2, "rounds": 5, "seed": 0}
    EXTRA_S = 0.4
    first_summary = None

    @classmethod
    def run(cls, runs, rounds, seed, out, progress=None):
        panels = [("A", "A", [("N", [(_Policy(0.01), {}), (_Policy(0.001), {})])], {})]
        res = run_panels("fake", "fake", panels, runs, rounds, seed, out, progress,
                         simulate_fn=_fake_simulate, plot=False)
        res.pop("curves", None)
        res.pop("curve_methods", None)  # in memory only, beside the curves
        cls.first_summary = json.loads(open(os.path.join(out, "summary.json")).read())
        time.sleep(cls.EXTRA_S)
        _new_function()(np.arange(2.0))
        res["extra_pass"] = {"done": True}
        write_json(os.path.join(out, "summary.json"), res)
        return res

    @staticmethod
    def table(result):
        return ""


TIMING_KEYS = {"total_wall_time_s", "timing_note", "wall_time_s", "chunk_wall_times_s",
               "us_per_round", "warmup_s"}


def _without_timing(obj):
    if isinstance(obj, dict):
        return {k: _without_timing(v) for k, v in obj.items()
                if k not in TIMING_KEYS and k != "numba_compile_s"}
    if isinstance(obj, list):
        return [_without_timing(v) for v in obj]
    return obj


def test_summary_times_cover_the_whole_run(tmp_path, capsys, monkeypatch):
    """total_wall_time_s runs from the command's start to the summary's last writing
    (the fallback candidate and the extra pass after the first writing included), and
    numba_compile_s is the total the command line prints; no result changes."""
    monkeypatch.setattr(experiments, "get", lambda name: _FallbackExperiment)
    out = tmp_path / "out"
    t0 = time.perf_counter()
    assert cli_main(["run", "vits-figI", "--out", str(out)]) == 0
    wall = time.perf_counter() - t0
    err = capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    first = _FallbackExperiment.first_summary
    entry = summary["results"][0]
    assert entry["diverged_candidates"] and entry["final_regret_mean"] == 5 * 0.001
    assert summary["extra_pass"] == {"done": True}
    # the experiment's own time stopped at its first summary, before the extra pass
    assert first["total_wall_time_s"] < _FallbackExperiment.EXTRA_S
    total, compile_s = summary["total_wall_time_s"], summary["environment"]["numba_compile_s"]
    assert _FallbackExperiment.EXTRA_S + compile_s <= total <= wall
    assert compile_s > 0
    said = next(x for x in err.splitlines() if "compiled " in x and " kernels in " in x)
    assert said.split(" kernels in ")[1].startswith(f"{compile_s:.0f} s")
    assert summary["timing_note"] == TIMING_NOTE
    # only the timing fields changed
    assert _without_timing({k: v for k, v in summary.items() if k != "extra_pass"}) == \
        _without_timing(first)


def test_an_inlined_kernel_body_is_not_compiled_on_its_own():
    """A body of ``kernel(inline=True)`` is inlined before typing: calling it from a
    compiled function (directly, through another inlined body, or as a closure variable,
    as the fused loops call a piece's select and update) compiles that function only. Under
    ``register_jitable(inline="always")`` alone, Numba compiled every body in full first
    (to type the call) and threw it away: three extra compilations here, 68 of the 188 of a
    cold ``vits-fig1 --runs 2 --rounds 20``. The result is the body's, computed as
    Python."""
    from vits_ref.config import kernel

    @kernel(inline=True)
    def inner(x, a, b=1.0):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * a * b
        return s

    @kernel(inline=True)
    def middle(x):
        return inner(x, 2.0) + inner(x, 3, b=0.5)

    def make(body):
        @kernel(inline=True)
        def outer(x):
            return body(x) * 2.0

        return outer

    outer = make(middle)

    @numba.njit(cache=False)
    def f(x):
        return outer(x)

    names = []

    class Names(numba.core.event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            names.append(ev.data["dispatcher"].py_func.__qualname__)

    x = np.array([0.5, -1.25, 3.0])
    with numba.core.event.install_listener("numba:compile", Names()):
        got = f(x)
    assert got == outer(x)  # the bodies run as Python too
    assert names == [f.py_func.__qualname__]
