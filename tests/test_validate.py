"""vits_ref._validate.float_array: the conversion every door's checks start with.

An input that is already a native-order, C-contiguous float64 ndarray is returned as it
is, without the dtype checks; every other input is converted as ``np.asarray(x, float64,
order="C")`` converts it (the reference here), or refused. The rank, shape and
finiteness checks apply to both.
"""

import numpy as np
import pytest

from vits_ref._validate import float_array

_BASE = np.arange(12.0).reshape(3, 4) - 5.5


class _Subclass(np.ndarray):
    """An ndarray subclass: converted to a plain ndarray, never passed through."""


def _frozen(a):
    out = a.copy()
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("value", [
    _BASE,                                   # returned as it is
    _BASE[:, ::2],                           # strided: copied
    _BASE.T,                                 # Fortran order: copied
    _BASE.astype(">f8"),                     # byte-swapped float64: another dtype object
    _BASE.astype(np.float32),
    _BASE.astype(np.int64),
    _BASE > 0,                               # bool
    _BASE.tolist(),
    np.float64(2.5),                         # 0-D stays 0-D
    _BASE.view(_Subclass),                   # a subclass: converted to a plain ndarray
    _frozen(_BASE),                          # read-only: copied, writeable
    np.broadcast_to(_BASE[0], (2, 4)),       # zero strides, read-only: copied
], ids=["c-float64", "strided", "fortran", "byteswapped", "float32", "int64", "bool",
        "list", "scalar", "subclass", "read-only", "broadcast"])
def test_float_array_is_the_reference_conversion(value):
    got = float_array(value, "x", finite=False)
    want = np.asarray(np.asarray(value), dtype=np.float64, order="C")
    assert type(got) is np.ndarray and got.dtype == np.float64 and got.flags.c_contiguous
    assert got.flags.writeable  # the one array type the compiled calls take
    assert got.shape == want.shape and np.array_equal(got, want)
    if value is _BASE:
        assert got is value  # no copy of data already in the library's form


def test_the_checks_apply_to_data_already_in_form():
    bad = _BASE.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        float_array(bad, "x")
    assert float_array(bad, "x", finite=False) is bad
    with pytest.raises(ValueError, match="x must be 1-D"):
        float_array(_BASE, "x", ndim=1)
    with pytest.raises(ValueError, match=r"x must have shape \(3, 5\)"):
        float_array(_BASE, "x", shape=(3, 5))


@pytest.mark.parametrize("value, match", [
    (_BASE.astype(complex), "must be real"),
    (np.array(["a", "b"]), "numeric array"),
    (np.array([1.0, None], dtype=object), "numeric array"),
])
def test_non_real_data_are_refused(value, match):
    with pytest.raises(TypeError, match=match):
        float_array(value, "x", finite=False)
