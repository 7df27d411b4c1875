"""Numba's compiler flags as vits_ref/_numba_faster.py hashes and compares them give
Numba's own answers, and a Numba whose source it does not know is left alone."""

import itertools
import os
import subprocess
import sys

import pytest
from numba.core import targetconfig
from numba.core.compiler import Flags

import vits_ref  # noqa: F401  (its import installs the change)
from vits_ref import _numba_faster

CONFIG = targetconfig.TargetConfig


def _planted():
    """Flags that differ, agree, or agree only in effect (an option set to its default
    against the same option not set), and a config of another class with the same
    values."""
    class Other(targetconfig.TargetConfig):
        nrt = targetconfig.Option(type=bool, default=False, doc="")

    made = []
    for nrt, boundscheck, fastmath in itertools.product((None, False, True), (None, True),
                                                        (None, False)):
        f = Flags()
        if nrt is not None:
            f.nrt = nrt
        if boundscheck is not None:
            f.boundscheck = boundscheck
        if fastmath is not None:
            f.fastmath = fastmath
        made.append(f)
    made.append(Flags(made[-1]))  # a copy: equal values, another object
    for nrt in (None, False, True):
        o = Other()
        if nrt is not None:
            o.nrt = nrt
        made.append(o)
    return made


def test_installed_at_import():
    assert CONFIG.__hash__._by_class
    assert _numba_faster.install_flags()  # once: a second call changes nothing
    assert CONFIG.__hash__ is Flags.__hash__


def test_the_answers_are_numbas():
    numbas_hash, numbas_eq = CONFIG.__hash__.numba_hash, CONFIG.__eq__.numba_eq
    made = _planted()
    for a in made:
        assert hash(a) == numbas_hash(a)
        for b in made:
            assert (a == b) == numbas_eq(a, b), (a, b)
    # equal in effect, set apart: the fast path does not decide, Numba's comparison does
    unset, at_default = Flags(), Flags()
    at_default.nrt = Flags.options["nrt"].default
    assert unset._values != at_default._values and unset == at_default
    assert unset in {at_default: 1}
    assert Flags() != 3  # NotImplemented from both sides, as before


def test_an_unknown_numba_is_left_alone(monkeypatch):
    monkeypatch.setattr(CONFIG, "__hash__", CONFIG.__hash__.numba_hash)
    monkeypatch.setattr(CONFIG, "__eq__", CONFIG.__eq__.numba_eq)
    monkeypatch.setattr(_numba_faster, "_KNOWN", {"values": "return something else"})
    assert not _numba_faster.install_flags()
    assert not getattr(CONFIG.__hash__, "_by_class", False)


@pytest.mark.parametrize("as_is, inliner, flags", [("flags", True, False),
                                                   ("all", False, False)])
def test_the_environment_can_leave_numba_as_it_is(as_is, inliner, flags):
    """``VITS_REF_NUMBA_AS_IS`` names the changes not made (a fresh process: they are made
    at import)."""
    code = ("import vits_ref; from numba.core import inline_closurecall as icc, "
            "targetconfig as t; print(hasattr(icc.InlineWorker.inline_ir, '_one_memo'), "
            "hasattr(t.TargetConfig.__hash__, '_by_class'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, _numba_faster.AS_IS: as_is}, check=True)
    assert out.stdout.split() == [str(inliner), str(flags)]


@pytest.fixture(autouse=True)
def _kept():
    """Each test leaves the installed methods in place for the rest of the session."""
    saved = CONFIG.__hash__, CONFIG.__eq__
    yield
    CONFIG.__hash__, CONFIG.__eq__ = saved
