"""The restructuring of issue 6 changed no result: every golden output is reproduced.

``tests/golden/golden.npz`` was written by ``tests/golden/make_golden.py`` on main before
the move (b6d5d19). Every entry must be bit-identical (the kernels run the same floating
point operations in the same order); an entry that may differ by a change of summation
order would be listed in ``ROUNDING`` with its reason. None is today.
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "golden"))
import make_golden  # noqa: E402

#: key prefix -> (rtol, reason); empty: every output is bit-identical
ROUNDING = {}


@pytest.fixture(scope="module")
def recomputed():
    return make_golden.compute()


@pytest.fixture(scope="module")
def golden():
    with np.load(make_golden.PATH) as data:
        return {k: data[k] for k in data.files}


def test_same_keys(golden, recomputed):
    assert sorted(recomputed) == sorted(golden)


def test_bit_identical(golden, recomputed):
    bad = []
    for key, want in golden.items():
        got = recomputed[key]
        rtol = next((r for p, (r, _) in ROUNDING.items() if key.startswith(p)), 0.0)
        same = (got.shape == want.shape and
                (np.array_equal(got, want, equal_nan=True) if rtol == 0.0
                 else np.allclose(got, want, rtol=rtol, atol=0.0)))
        if not same:
            bad.append(key)
    assert not bad, f"{len(bad)} golden outputs changed: {bad[:10]}"
