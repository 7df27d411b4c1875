"""The restructuring into layers changed no result: every golden output is reproduced.

``tests/golden/golden.npz`` was written by ``tests/golden/make_golden.py`` on main before
the move (b6d5d19). Two comparisons, each where it holds:

- **Within rounding, on any machine** (:func:`test_within_rounding`): every float entry
  agrees with the recorded one to 1e-12, relative and absolute, and every integer entry
  (the arms played) exactly. Numba compiles for the host CPU and OpenBLAS picks its
  kernels by CPU, so the last bits of a sum change from one CPU to another (an AVX2 AMD
  machine recomputes 65 entries differently from the AVX-512 machine that recorded them,
  by at most 7e-15 absolute, 6e-16 relative on values of order one, and 9e-16 on the
  LinTS KL traces, themselves rounding of about 1e-15). 1e-12 is a thousand times those
  differences and far below any change of an algorithm, and an arm that flips on
  rounding changes the regret at order one and is caught.
- **Bit for bit, on a recorded machine only** (:func:`test_bit_identical`): where
  ``golden_machine.json`` (written by ``make_golden.py`` beside the file) names this
  machine's compile target and BLAS kernels, the kernels run the same operations in the
  same order, so every entry is identical but those listed in ``ROUNDING``. golden.npz
  names no machine (it was recorded before machines were written down), so the bits are
  compared with a later record of the same outputs on this machine's kind of CPU, in
  ``tests/golden/bits/`` (``make_golden.py --bits``): one file per compile target and
  BLAS kernel family, compared bit for bit, every entry; each record is itself within
  rounding of golden.npz (:func:`test_bit_records_agree_with_the_golden_file`). Skipped
  on a machine with no record: no floating-point library promises identical bits across
  CPUs. Within one machine, the same bits whatever the threads, chunks, executor or
  backend are tested where those promises are made (tests/test_chunked_rounds.py,
  tests/test_simulate.py, tests/test_chunks.py).
"""

import glob
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "golden"))
import make_golden  # noqa: E402

#: key prefix -> (tolerance, reason) for the entries that are not bit-identical even on
#: the recording machine
ROUNDING = {
    # Laplace on the linear model: the MAP was fitted by a Newton iteration in NumPy
    # (LAPACK Cholesky and triangular solves); it is now the one compiled Newton kernel
    # (loops): the same iteration, another summation order (max difference 2.2e-16).
    "engine/linear/laplace/": (1e-12, "Newton kernel instead of NumPy/LAPACK"),
    # The logistic environments' expected rewards use the library's one stable sigmoid
    # (1/(1 + exp(-|z|)) forms, vits_ref.gaussian.special) instead of 0.5 (1 + tanh(z/2)): the
    # means differ in the last bits (max 2.2e-16), every arm played is the same.
    "perarm/": (1e-12, "one sigmoid for the environments and the kernels"),
    "logistic-bandit/": (1e-12, "one sigmoid for the environments and the kernels"),
}
#: The tolerance across machines (relative and absolute): see the module's docstring.
ACROSS_MACHINES = 1e-12


#: ``VITS_REF_GOLDEN_SECTIONS=engine,targets``: recompute and compare those sections of the
#: file only (.ci/run's run under another CPU target, where every kernel compiles again)
SECTIONS = tuple(s for s in os.environ.get("VITS_REF_GOLDEN_SECTIONS", "").split(",") if s
                 ) or tuple(make_golden.SECTIONS)


@pytest.fixture(scope="module")
def recomputed():
    return make_golden.compute(SECTIONS)


@pytest.fixture(scope="module")
def golden():
    with np.load(make_golden.PATH) as data:
        return {k: data[k] for k in data.files if make_golden.in_sections(k, SECTIONS)}


def test_same_keys(golden, recomputed):
    assert sorted(recomputed) == sorted(golden)


def _recorded_machine():
    try:
        with open(make_golden.MACHINE_PATH) as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None


def _differing(golden, recomputed, tolerance_of):
    """The keys whose recomputed entry differs from the golden one beyond
    ``tolerance_of(key)`` (0: bit for bit; integer entries always exactly)."""
    bad = []
    for key, want in golden.items():
        got = recomputed[key]
        tol = 0.0 if want.dtype.kind in "iub" else tolerance_of(key)
        same = (got.shape == want.shape and
                (np.array_equal(got, want, equal_nan=True) if tol == 0.0
                 else np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True)))
        if not same:
            bad.append(key)
    return bad


def test_within_rounding(golden, recomputed):
    bad = _differing(golden, recomputed, lambda key: ACROSS_MACHINES)
    assert not bad, f"{len(bad)} golden outputs changed beyond rounding: {bad[:10]}"


def _same_machine(recorded, here):
    return recorded is not None and all(recorded.get(k) == here[k]
                                        for k in ("cpu", "cpu_features", "blas_kernels"))


def _bit_record(here):
    """``(entries, machine)`` of the record in ``tests/golden/bits/`` made on a machine
    like this one, or None."""
    path = make_golden.bits_path(here)
    if not os.path.exists(path):
        return None
    with open(path[:-len(".npz")] + ".json") as fh:
        recorded = json.load(fh)
    if not _same_machine(recorded, here):  # a file name shared by two machines
        return None
    with np.load(path) as data:
        return ({k: data[k] for k in data.files if make_golden.in_sections(k, SECTIONS)},
                recorded)


def test_bit_identical(golden, recomputed):
    here = make_golden.machine()
    if _same_machine(_recorded_machine(), here):
        bad = _differing(golden, recomputed, lambda key: next(
            (t for p, (t, _) in ROUNDING.items() if key.startswith(p)), 0.0))
        assert not bad, f"{len(bad)} golden outputs changed: {bad[:10]}"
        return
    record = _bit_record(here)
    if record is None:
        pytest.skip(f"no record of this machine's bits (this one: {here['cpu']}, BLAS "
                    f"kernels {here['blas_kernels']}; make_golden.py --bits writes one): "
                    "compared within rounding only")
    bits, recorded = record
    assert sorted(bits) == sorted(recomputed)
    bad = _differing(bits, recomputed, lambda key: 0.0)
    assert not bad, (f"{len(bad)} outputs changed in their last bits since "
                     f"{recorded.get('commit')}: {bad[:10]}")


def test_bit_records_agree_with_the_golden_file(golden):
    """Each machine's record is the golden outputs within rounding: a record cannot
    carry a changed result into the bit-for-bit comparison."""
    paths = sorted(glob.glob(os.path.join(make_golden.BITS_DIR, "*.npz")))
    for path in paths:
        with np.load(path) as data:
            record = {k: data[k] for k in data.files if make_golden.in_sections(k, SECTIONS)}
        assert sorted(record) == sorted(golden), path
        bad = _differing(golden, record, lambda key: ACROSS_MACHINES)
        assert not bad, f"{os.path.basename(path)}: {bad[:10]}"


def test_the_comparison_catches_a_change():
    """The judging itself, on planted data: a change of one part in 1e9 in a float entry
    and one arm changed fail the comparison across machines; a last-bit change passes it
    and fails the bit-for-bit one."""
    golden = {"x/regret": np.array([1.0, 2.5, 1e-15]), "x/arms": np.array([0, 3, 1])}
    last_bit = {"x/regret": np.nextafter(golden["x/regret"], 3.0), "x/arms": golden["x/arms"]}
    assert _differing(golden, last_bit, lambda k: ACROSS_MACHINES) == []
    assert _differing(golden, last_bit, lambda k: 0.0) == ["x/regret"]
    changed = {"x/regret": golden["x/regret"] * (1 + 1e-9), "x/arms": np.array([0, 2, 1])}
    assert _differing(golden, changed, lambda k: ACROSS_MACHINES) == ["x/regret", "x/arms"]
