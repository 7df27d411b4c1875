"""A kernel body compiles once a process for each argument types, whoever calls it.

Numba's overload template keys a compiled implementation by the caller's compile flags
too; the library's templates (:func:`vits_ref.config.cpu_overload`) leave out the flags
that shape only the caller's wrappers (``nogil``, the CPython wrapper), so that a body
called by a driver and by another body is not compiled twice, while a flag the body
inherits from its caller (``error_model`` here) still gets a compilation of its own.
"""

import numba
import numpy as np
import pytest
from numba.core import event

import vits_ref as vr
from vits_ref import config


class _Count(event.Listener):
    """Counts the compilations of one Python function (each dispatcher it is built into)."""

    def __init__(self, fn):
        self.fn, self.n = fn, 0

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        if getattr((ev.data or {}).get("dispatcher"), "py_func", None) is self.fn:
            self.n += 1


def _compiles(fn, calls):
    count = _Count(fn)
    with event.install_listener("numba:compile", count):
        calls()
    return count.n


def test_a_body_called_by_a_driver_and_by_another_body_compiles_once():
    @config.kernel
    def inner(x):
        x[0] += 1.0

    @config.kernel
    def outer(x):
        inner(x)

    # a driver's flags (nogil, a CPython wrapper), uncached
    @numba.njit(nogil=True, fastmath=config.FASTMATH, error_model=config.ERROR_MODEL)
    def driver(x):
        outer(x)  # compiles inner inside outer (no wrapper, the GIL held)
        inner(x)  # and here, under the driver's flags: before, a second compilation

    x = np.zeros(1)
    assert _compiles(inner, lambda: driver(x)) == 1
    assert x[0] == 2.0


def test_a_flag_the_body_inherits_still_keys_its_compilation():
    def body(x):
        return x / 0.0  # inf under NumPy's error model, ZeroDivisionError under Python's

    def typer(x):
        return body

    config.cpu_overload(body)(typer)  # no jit options: error_model comes from the caller

    @numba.njit(error_model="numpy")
    def numpy_model(x):
        return body(x)

    @numba.njit(error_model="python", nogil=True)
    def python_model(x):
        return body(x)

    assert _compiles(body, lambda: numpy_model(1.0)) == 1
    assert numpy_model(1.0) == np.inf
    with pytest.raises(ZeroDivisionError):  # not the numpy caller's compilation
        python_model(1.0)


def test_a_read_only_or_strided_input_compiles_nothing_new():
    """Numba types a read-only or a strided array apart from a writeable C-ordered one: the
    library's checks hand the compiled calls the one type (``float_array`` copies the
    others), so such an input runs what the first call compiled, where it compiled (or
    loaded) every function it reaches again for another type."""
    from vits_ref.drivers import cpu

    pol = vr.LinUCB(3)
    X = np.random.default_rng(0).standard_normal((4, 3))
    want = pol.scores(X)  # compiled, or loaded from the cache
    types = set(cpu.linucb_scores.signatures)
    frozen = X.copy()
    frozen.flags.writeable = False
    for Z in (frozen, np.asfortranarray(X), np.hstack([X, X])[:, :3]):
        np.testing.assert_array_equal(pol.scores(Z), want)
    assert set(cpu.linucb_scores.signatures) == types


def test_a_context_shared_by_one_arm_compiles_nothing_new():
    """VTS given one context ``(d,)`` shared by its arms: with one arm the broadcast was
    already C-ordered but read-only, and VTS's select compiled again for it."""
    from vits_ref.drivers import cpu

    pol = vr.VTS(2, 1, n_components=2, seed=0)
    x = np.array([0.3, 0.9])
    pol.select(x[None])  # one row per arm: compiled, or loaded from the cache
    types = set(cpu.vts_select().signatures)
    pol.select(x)
    pol.update(x, 0, 1.0)
    assert set(cpu.vts_select().signatures) == types
