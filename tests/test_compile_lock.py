"""The test session's compile lock (tests/numba_session.py, ``install_compile_lock``):
a process that needs a cached function another process is compiling waits for it and
loads the result from Numba's cache instead of compiling it a second time."""

import fcntl
import os
import subprocess
import sys
import textwrap

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))

MODULE = textwrap.dedent("""
    from numba import njit

    @njit(cache=True)
    def twice(x):
        return 2 * x
""")

#: Calls ``twice`` and prints how many times this process compiled it (Numba's
#: ``numba:compile`` event fires on a compile, not on a load from the cache).
CALLER = textwrap.dedent("""
    import sys
    sys.path[:0] = sys.argv[1:3]
    if sys.argv[3] == "locked":
        import numba_session
        numba_session.install_compile_lock()
    from numba.core import event
    import twice_mod

    compiles = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiles.append(1)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())
    print("READY", flush=True)
    assert twice_mod.twice(21) == 42
    print("COMPILES", len(compiles))
""")


def _start(tmp_path, mode):
    # "plain": as Numba is, without the lock that tests/subprocess_site installs in the
    # test session's subprocesses
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "VITS_REF_COMPILE_LOCK": "0" if mode == "plain" else "1"}
    return subprocess.Popen([sys.executable, "-c", CALLER, str(tmp_path), TESTS, mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _compiles(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return int(out.split("COMPILES")[1])


def test_a_waiting_process_loads_what_the_other_compiled(tmp_path, monkeypatch):
    (tmp_path / "twice_mod.py").write_text(MODULE)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    # the lock file of ``twice`` as the subprocesses see it (same source, same cache folder)
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path[:0] = sys.argv[1:3]; import numba_session, "
         "twice_mod; print('PATH' + numba_session.compile_lock_path(twice_mod.twice))",
         str(tmp_path), TESTS], capture_output=True, text=True, timeout=600)
    assert probe.returncode == 0, probe.stderr[-3000:]
    path = probe.stdout.split("PATH")[1].strip()
    with open(path, "a") as held:
        # as a worker compiling ``twice``: the locked caller must wait while an unlocked
        # one compiles it and saves it to the cache
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = _start(tmp_path, "locked")
        assert waiting.stdout.readline().strip() == "READY"
        # without the lock it would compile ``twice`` (a fraction of a second) and exit
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=5)
        assert _compiles(_start(tmp_path, "plain")) == 1
    assert _compiles(waiting) == 0  # loaded from the cache after the lock was released


FACTORY = textwrap.dedent("""
    from numba import njit

    def make(k):
        @njit(cache=True)
        def times(x):
            return k * x
        return times

    double, triple = make(2), make(3)
""")


def test_closures_of_one_factory_lock_apart_and_save_under_one_lock(tmp_path):
    """Two closures of one factory share a cache index file but are two functions: each
    compiles under its own lock (neither waits for the other), and both saves go through
    the index file's save lock, so that neither entry is lost."""
    (tmp_path / "factory_mod.py").write_text(FACTORY)
    script = textwrap.dedent("""
        import sys
        sys.path[:0] = sys.argv[1:3]
        import numba_session
        numba_session.install_compile_lock()
        import factory_mod as f
        a, b = (numba_session.compile_lock_path(g) for g in (f.double, f.triple))
        again = numba_session.compile_lock_path(f.make(2))
        index = f.double._cache._cache_file._index_path
        assert index == f.triple._cache._cache_file._index_path
        print("PATHS", a, b, again, numba_session.save_lock_path(index))
        assert f.double(4) == 8 and f.triple(4) == 12
        print("SAVED", sorted(len(g.stats.cache_misses) for g in (f.double, f.triple)))
    """)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "VITS_REF_COMPILE_LOCK": "1"}
    res = subprocess.run([sys.executable, "-c", script, str(tmp_path), TESTS],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    a, b, again, save = res.stdout.split("PATHS")[1].split()[:4]
    assert a != b and a == again and save not in (a, b)
    # a second process finds both entries in the index: it loads, compiles nothing
    res = subprocess.run([sys.executable, "-c", script, str(tmp_path), TESTS],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split("SAVED")[1].split("\n")[0].strip() == "[0, 0]"
