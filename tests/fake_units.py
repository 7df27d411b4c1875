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
