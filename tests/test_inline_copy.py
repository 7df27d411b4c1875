"""Numba's inliner as vits_ref/_numba_faster.py changes it (one memo per copy, no copy of
an IR built for the call) compiles the same code as Numba's own, and a Numba whose
source it does not know is left alone."""

import re

import numba
import numpy as np
from numba.core import inline_closurecall as icc

import vits_ref  # noqa: F401  (its import installs the change)
from vits_ref import _numba_faster


def _caller():
    """A fresh caller of a body with nested loops and branches (many blocks, many
    variables), inlined at two sites."""
    @numba.njit(inline="always")
    def body(x, n):
        s = 0.0
        for i in range(n):
            if x[i] > 0:
                s += x[i] * 2.0
            else:
                for j in range(3):
                    s -= x[i] / (j + 1.0)
        return s

    @numba.njit
    def caller(x):
        t = 0.0
        for _ in range(2):
            t += body(x, x.shape[0]) + body(x[::-1].copy(), 3)
        return t

    return caller


def _code(caller, x):
    """``(result, optimised LLVM IR)``, the IR with its block labels and its functions'
    version numbers masked (both count up with every compilation in the process)."""
    out = caller(x)
    llvm = caller.inspect_llvm(caller.signatures[0])
    return out, re.sub(r"v\d+", "v#", re.sub(r"B\d+", "B#", llvm))


def test_installed_at_import():
    worker = icc.InlineWorker
    assert worker.inline_ir._one_memo and worker.inline_function._uncopied
    assert _numba_faster.install_inliner()  # once: a second call changes nothing
    assert not hasattr(worker.inline_ir.numba_inline_ir, "_one_memo")
    assert not hasattr(worker.inline_function.numba_inline_function, "_uncopied")


def test_the_copy_compiles_what_numbas_own_compiles(monkeypatch):
    x = np.linspace(-1.0, 1.0, 7)
    ours = _code(_caller(), x)
    worker = icc.InlineWorker
    monkeypatch.setattr(worker, "inline_ir", worker.inline_ir.numba_inline_ir)
    monkeypatch.setattr(worker, "inline_function",
                        worker.inline_function.numba_inline_function)
    numbas = _code(_caller(), x)
    assert ours[0] == numbas[0]
    assert ours[1] == numbas[1]


def test_a_numba_whose_source_differs_is_left_alone(monkeypatch):
    def inline_ir(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs=None):
        return None  # no copy loop of the known text

    def inline_function(self, caller_ir, block, i, function, arg_typs=None):
        return None  # does not build the callee's IR

    worker = icc.InlineWorker
    monkeypatch.setattr(worker, "inline_ir", inline_ir)
    monkeypatch.setattr(worker, "inline_function", inline_function)
    assert not _numba_faster.install_inliner()
    assert worker.inline_ir is inline_ir and worker.inline_function is inline_function
    assert not _numba_faster._install_uncopied(icc)
    assert worker.inline_function is inline_function
