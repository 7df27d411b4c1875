"""Warm-up units that cost almost nothing, for the tests of ``python -m vits_ref compile``
(tests/test_compile_command.py): each compiles one tiny uncached function (one
compilation, as ``vits_ref._compile_watch`` counts them) and writes a file naming itself
and its process, so that the test sees which units ran, where, and how often."""

import os


def unit(label, folder, out):
    """Compile and call a fresh tiny function; append ``label pid`` to ``folder/label``."""
    from numba import njit

    @njit
    def plus_one(x):
        return x + 1

    assert plus_one(1) == 2
    assert os.path.isdir(out)  # the temporary output folder the worker made
    with open(os.path.join(folder, label), "a") as fh:
        fh.write(f"{label} {os.getpid()}\n")


def fails(out):
    """A unit that fails."""
    raise ValueError("planted failure\nin two lines")


class _FakeCacheFile:
    _index_path = "/nonexistent/fake_units-shared.nbi"


class _FakeCache:  # a cached dispatcher's cache (any class but Numba's NullCache)
    _cache_file = _FakeCacheFile()


def _shared_kernel(x):
    return x


class _FakeDispatcher:
    """Looks, to ``vits_ref._compile_watch``, like one cached kernel: the same in every
    unit and process."""

    py_func = _shared_kernel
    _cache = _FakeCache()


def compiles_shared(out):
    """A unit that 'compiles' the one shared cached kernel: the ``numba:compile`` event
    Numba sends, without compiling anything (as a nested kernel that two workers both
    compile, outside the compile lock)."""
    from numba.core import event

    with event.trigger_event("numba:compile", data={"dispatcher": _FakeDispatcher(),
                                                    "args": ("float64",),
                                                    "return_type": None}):
        pass


def nothing(out):
    """A unit that compiles nothing."""
