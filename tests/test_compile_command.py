"""``python -m vits_ref compile`` and ``run``'s compiling on every core first
(vits_ref/experiments/_precompile.py), and the library's compile lock (vits_ref/_compile_lock.py).

No library kernel is compiled here: the units are the stand-ins of tests/fake_units.py and
the experiment's run is replaced before it starts."""

import fcntl
import os
import subprocess
import sys
import textwrap

import fake_units
import pytest

from vits_ref.__main__ import main
from vits_ref.experiments import _precompile
from vits_ref.experiments.vits import fig1


@pytest.mark.parametrize("argv, message", [
    (["compile", "no-such-experiment"], "unknown experiment 'no-such-experiment'"),
    (["compile"], "name the experiments to compile"),
    (["compile", "vits-fig1", "--all"], "give experiments or --all, not both"),
    (["compile", "vits-fig1", "--jobs", "0"], "--jobs must be in [1,"),
])
def test_compile_argument_errors_are_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


# --------------------------------------------------------------- the library's compile lock

MODULE = textwrap.dedent("""
    from numba import njit

    @njit(cache=True)
    def twice(x):
        return 2 * x
""")

CALLER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from vits_ref import _compile_lock
    assert _compile_lock.install()
    from numba.core import event
    import twice_mod

    compiles = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiles.append(1)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())
    if sys.argv[2] == "path":
        print("PATH" + _compile_lock.compile_lock_path(twice_mod.twice))
        sys.exit(0)
    print("READY", flush=True)
    assert twice_mod.twice(21) == 42
    print("COMPILES", len(compiles))
""")


def test_the_library_lock_has_one_of_two_processes_compile(tmp_path):
    """Two processes that need the same cached function while a third holds its lock: when
    it is released, one compiles it and the other loads it from the cache."""
    (tmp_path / "twice_mod.py").write_text(MODULE)
    # without the test session's sitecustomize: the lock is the library's own
    path_ = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and not p.endswith("subprocess_site")]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(path_), "VITS_REF_COMPILE_LOCK": "1"}

    def start(mode):
        return subprocess.Popen([sys.executable, "-c", CALLER, str(tmp_path), mode],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)

    probe = start("path")
    out, err = probe.communicate(timeout=600)
    assert probe.returncode == 0, err[-3000:]
    with open(out.split("PATH")[1].strip(), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        procs = [start("call"), start("call")]
        for p in procs:
            assert p.stdout.readline().strip() == "READY"
        with pytest.raises(subprocess.TimeoutExpired):
            procs[0].wait(timeout=3)  # waiting on the lock, not compiling
    counts = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        counts.append(int(out.split("COMPILES")[1]))
    assert sorted(counts) == [0, 1]


# ------------------------------------------------------------------------ the compile step

def _fake_units(folder, n):
    return [(f"vits-fig1: u{i}", fake_units.unit, {"label": f"u{i}", "folder": str(folder)})
            for i in range(n)]


def test_compile_runs_every_unit_once_in_two_workers_and_reports(tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(tmp_path / "times.json"))
    marks = tmp_path / "marks"
    marks.mkdir()
    work = _fake_units(marks, 5)
    # two of them named as vits-fig1's units kept together (WARMUP_TOGETHER): one worker
    work[1:3] = [("vits-fig1: VITS-II", *work[1][1:]), ("vits-fig1: LinTS", *work[2][1:])]
    monkeypatch.setattr(_precompile, "units", lambda mod: work)
    assert _precompile.cold("vits-fig1")
    assert main(["compile", "vits-fig1", "--jobs", "2"]) == 0
    out, err = capsys.readouterr()
    rows = [(p.name, p.read_text().split()) for p in marks.iterdir()]
    assert sorted(name for name, _ in rows) == [f"u{i}" for i in range(5)]
    assert all(len(words) == 2 for _, words in rows)  # each unit ran once
    pids = {words[1] for _, words in rows}
    assert str(os.getpid()) not in pids and 1 <= len(pids) <= 2  # in the workers
    assert dict(rows)["u1"][1] == dict(rows)["u2"][1]
    assert "compiled 5 kernels in " in out and "in 2 processes; 5 units" in out
    assert "[5/5]" in err or "compiling" in err
    # recorded: run now finds the cache warm
    assert not _precompile.cold("vits-fig1")


def test_units_kept_together_are_one_task_in_their_order(tmp_path):
    """vits-fig1's LinTS and VITS-II units (``WARMUP_TOGETHER``) are one task, LinTS first,
    where the first of them stands; the other units are tasks of their own (that one
    worker runs a task: the two-worker test above)."""
    work = [(f"vits-fig1: {label}", fake_units.nothing, {})
            for label in ("VITS-II", "extra: VTS", "LinTS")]
    groups = _precompile.together(work)
    assert groups == [("vits-fig1: LinTS", "vits-fig1: VITS-II")]
    assert [[u[0] for u in task] for task in _precompile.tasks(work, groups)] == [
        ["vits-fig1: LinTS", "vits-fig1: VITS-II"], ["vits-fig1: extra: VTS"]]
    assert _precompile.together(work[:2]) == []  # a group needs two of its units
    lines = []
    res = _precompile.compile_units(work, 0, say=lines.append)
    assert [u["label"] for u in res["units"]] == [u[0] for u in work]


def test_a_failing_unit_is_named_in_one_line(tmp_path, monkeypatch, capsys):
    work = [("fake: ok", fake_units.unit, {"label": "ok", "folder": str(tmp_path)}),
            ("fake: bad", fake_units.fails, {})]
    with pytest.raises(_precompile.UnitError, match="fake: bad: ValueError: planted failure "
                                                    "in two lines"):
        _precompile.compile_units(work, 0)

    def broken(work, jobs, say=None):
        raise _precompile.UnitError("fake: bad: ValueError: planted")

    monkeypatch.setattr(_precompile, "compile_units", broken)
    assert main(["compile", "vits-fig1", "--jobs", "2", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fake: bad: ValueError: planted" in err


def test_a_kernel_two_units_compiled_counts_once(tmp_path, monkeypatch, capsys):
    """Two workers may both compile one cached kernel (a nested one compiles without the
    lock): the compile step counts it once, and records it once for ``run``'s estimate
    (the step said 107 kernels for vits-fig1's 89)."""
    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(tmp_path / "times.json"))
    work = [(f"vits-fig1: shared {i}", fake_units.compiles_shared, {}) for i in range(2)]
    res = _precompile.compile_units(work, 0)
    assert [u["kernels"] for u in res["units"]] == [1, 1]
    assert res["kernels"] == 1 and res["compilations"] == 2
    _precompile.record(["vits-fig1"], res)
    from vits_ref import _compile_watch

    assert _compile_watch.estimate("vits-fig1")["kernels"] == 1
    # the command's last line says both (the units run in this process)
    monkeypatch.setattr(_precompile, "units", lambda mod: work)
    run_units = _precompile.compile_units
    monkeypatch.setattr(_precompile, "compile_units",
                        lambda work, jobs, say=None: run_units(work, 0, say))
    assert main(["compile", "vits-fig1", "--jobs", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "compiled 1 kernels in " in out and "1 compiled again in another process" in out


def test_a_unit_that_waited_for_another_says_so(monkeypatch):
    """A unit whose kernels another worker was compiling compiles nothing and waits on the
    lock: its line says how long it waited, not only "0 kernels compiled, 62 s in all"."""
    from vits_ref import _compile_lock

    clock = iter([3.0, 64.5])  # the seconds waited before and after the unit
    monkeypatch.setattr(_compile_lock, "waited", lambda: next(clock), raising=False)
    lines = []
    work = [("vits-fig1: waits", fake_units.nothing, {})]
    res = _precompile.compile_units(work, 0, say=lines.append)
    assert res["units"][0]["waited_s"] == pytest.approx(61.5)
    assert "0 kernels compiled, 0.0 s compiling, 61.5 s waiting for kernels another " \
           "process compiled" in lines[-1]


def test_a_warm_cache_is_not_called_a_first_run(tmp_path, monkeypatch):
    """Once an experiment's compilation is on record for this cache, a run that compiles a
    kernel missing from it says so; it used to say "first run on this machine; about 580 s
    for 107 kernels" for one small function."""
    from vits_ref import _compile_watch

    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(tmp_path / "times.json"))
    assert "first run on this machine" in _compile_watch.first_line("vits-fig1")
    _compile_watch.record("vits-fig1", 580.0, 89)
    line = _compile_watch.first_line("vits-fig1")
    assert "first run" not in line and line.startswith("compiling kernels missing from the "
                                                       "cache (the rest is cached; about 580 s")


class _Stop(Exception):
    pass


def _stop_run(**kwargs):
    raise _Stop("the run starts here")


@pytest.mark.parametrize("cold, flag, expected", [
    (True, [], True), (True, ["--no-precompile"], False), (False, [], False),
    (True, ["--jobs", "1"], False)])
def test_run_compiles_first_only_when_cold(cold, flag, expected, tmp_path, monkeypatch):
    monkeypatch.delenv(_precompile.ENV, raising=False)
    monkeypatch.setenv("VITS_REF_COMPILE_TIMES", str(tmp_path / "times.json"))
    monkeypatch.setattr(_precompile, "cores", lambda: 2)
    if not cold:
        from vits_ref import _compile_watch

        _compile_watch.record("vits-fig1", 10.0, 5)
    calls = []

    def fake_compile(work, jobs, say=None):
        calls.append((len(work), jobs))
        return {"kernels": 0, "seconds": 0.0, "wall_s": 0.0, "jobs": jobs, "units": []}

    monkeypatch.setattr(_precompile, "compile_units", fake_compile)
    monkeypatch.setattr(fig1, "run", _stop_run)
    argv = ["run", "vits-fig1", "--runs", "2", "--rounds", "5", "--quiet",
            "--out", str(tmp_path / "out"), *flag]
    assert main(argv) == 1  # the replaced run stops
    assert calls == ([(len(fig1.warmup_units()), 2)] if expected else [])


def test_precompile_needs_cores_a_unit_list_and_no_veto(monkeypatch):
    monkeypatch.delenv(_precompile.ENV, raising=False)
    monkeypatch.setattr(_precompile, "cold", lambda name: True)
    monkeypatch.setattr(_precompile, "cores", lambda: 16)
    assert _precompile.precompile_jobs(fig1) == 13 == len(fig1.warmup_units())
    assert _precompile.precompile_jobs(fig1, jobs=3) == 3
    assert _precompile.precompile_jobs(fig1, enabled=False) == 0
    from vits_ref.experiments import EXPERIMENTS

    no_hook = next(m for m in EXPERIMENTS.values() if not _precompile.has_hook(m))
    assert _precompile.precompile_jobs(no_hook) == 0
    assert [u[1] for u in _precompile.units(no_hook)] == [_precompile.tiny_run]
    monkeypatch.setattr(_precompile, "cores", lambda: 1)
    assert _precompile.precompile_jobs(fig1) == 0
    monkeypatch.setattr(_precompile, "cores", lambda: 2)
    monkeypatch.setenv(_precompile.ENV, "0")
    assert _precompile.precompile_jobs(fig1) == 0


def test_fig1_units_are_every_line_once_its_own_kernels_first():
    labels = [u[0] for u in fig1.warmup_units()]
    every = ([m[0] for m in fig1.METHODS] + [m[0] for m in fig1.PARTICLE_METHODS]
             + [fig1.VTS_EXTRA])
    assert sorted(labels) == sorted(every) and len(set(labels)) == len(labels)
    assert labels[:len(fig1.WARMUP_FIRST)] == list(fig1.WARMUP_FIRST)
    assert all(u[1] is fig1.warmup and u[2] == {"method": u[0]} for u in fig1.warmup_units())
