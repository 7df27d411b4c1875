"""Hypothesis strategies and oracles shared by the fuzz suite (tests/test_fuzz_*.py).

Inputs are drawn as values *with a tag*: arrays of random shapes and dtypes (int, bool,
float32, float64, complex, object, str), with NaN/inf, huge (up to 1.8e308) and tiny
(down to 5e-324) magnitudes, empty, non-contiguous, Fortran-ordered, broadcast
(zero-stride) and read-only; and hyperparameters that are valid, plainly bad, or
borderline. The oracles (:func:`valid_array`, :func:`state`, :func:`assert_same_state`)
decide independently of the library what a valid input is and what an engine's whole
observable state is.

Every example a fuzz test runs is counted by :func:`counted` (per test, in
:data:`COUNTS`): tests/conftest.py prints the counts in pytest's terminal summary and
writes them to the JSON file named by ``VITS_REF_FUZZ_COUNTS``.
"""

import collections
import fractions
import functools
import math
import os
import signal

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vits_ref as vr
from vits_ref import _validate as val

#: examples executed per test (name -> count), for the terminal summary
COUNTS = collections.Counter()

#: the errors a public call may raise on bad input or a diverging state
DOCUMENTED = (ValueError, TypeError, vr.DivergenceError)

#: seconds one example may take before the hang guard fails it (SIGALRM; Python-level
#: hangs). A hang inside compiled code is caught by the per-test faulthandler guard of
#: tests/conftest.py, which ends the process with a traceback instead of freezing CI.
EXAMPLE_TIMEOUT = int(os.environ.get("VITS_REF_FUZZ_EXAMPLE_TIMEOUT", "300"))


def n_examples(weight=1.0):
    """``weight`` times the active profile's ``max_examples`` (at least 1): the expensive
    tests run fewer examples, and the large profile scales all of them."""
    return max(1, int(settings().max_examples * weight))


class ExampleTimeout(Exception):
    """An example ran longer than :data:`EXAMPLE_TIMEOUT` (a hang)."""


def counted(test):
    """Count each example of the Hypothesis ``test`` in :data:`COUNTS` and guard it with
    an alarm of :data:`EXAMPLE_TIMEOUT` seconds where SIGALRM exists. Put it below
    ``@given``."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        key = os.environ.get("PYTEST_CURRENT_TEST", test.__name__).rsplit(" (", 1)[0]
        COUNTS[key] += 1
        if not hasattr(signal, "SIGALRM"):
            return test(*args, **kwargs)

        def on_alarm(signum, frame):
            raise ExampleTimeout(f"{test.__name__}: one example ran over {EXAMPLE_TIMEOUT} s")

        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(EXAMPLE_TIMEOUT)
        try:
            return test(*args, **kwargs)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)

    return wrapper


# ---------------------------------------------------------------------------------------
# floats and arrays
# ---------------------------------------------------------------------------------------

#: magnitudes around every boundary of the library (MAX_ABS_DATA = 1e150, HYPER_RANGE,
#: sqrt/square overflow near 1.3e154, the largest and smallest doubles)
SPECIAL_MAGNITUDES = (0.0, 5e-324, 1e-308, 1e-300, 1e-150, 1e-100, 1e-10, 1e10, 1e100,
                      1e150, 1.0000000000000002e150, 1e151, 1.4e154, 1e200, 1e300,
                      1.7976931348623157e308)


@st.composite
def special_floats(draw):
    mag = draw(st.sampled_from(SPECIAL_MAGNITUDES))
    return -mag if draw(st.booleans()) else mag


def floats(bad=True):
    """Mostly moderate floats; with ``bad``, also special magnitudes, NaN and inf."""
    moderate = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
    if not bad:
        return moderate
    return st.one_of(moderate, moderate, moderate, special_floats(),
                     st.sampled_from([np.nan, np.inf, -np.inf]),
                     st.floats(allow_nan=True, allow_infinity=True))


#: how a float64 array is presented to the library: "plain" most of the time
PRESENTATIONS = ("plain",) * 8 + ("int", "bool", "float32", "complex", "complex0", "object",
                                  "str", "list", "noncontig", "fortran", "readonly",
                                  "broadcast", "extra_dim", "squeeze", "scalar", "none",
                                  "nested_ragged")


def present(arr, how):
    """``arr`` (a float64 array) converted the way ``how`` says (see PRESENTATIONS)."""
    with np.errstate(all="ignore"):
        if how == "plain":
            return arr
        if how == "int":
            return np.clip(np.nan_to_num(arr), -2.0 ** 62, 2.0 ** 62).astype(np.int64)
        if how == "bool":
            return arr > 0
        if how == "float32":
            return arr.astype(np.float32)
        if how == "complex":
            return arr + 1j
        if how == "complex0":
            return arr.astype(np.complex128)  # imaginary part exactly 0
        if how == "object":
            return arr.astype(object)
        if how == "str":
            return arr.astype(str)
        if how == "list":
            return arr.tolist()
        if how == "noncontig":
            if arr.ndim == 0:
                return arr
            big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],))
            big[..., ::2] = arr
            return big[..., ::2]
        if how == "fortran":
            return np.asfortranarray(arr)
        if how == "readonly":
            out = arr.copy()
            out.flags.writeable = False
            return out
        if how == "broadcast":  # zero strides, read-only
            if arr.size == 0:
                return arr
            return np.broadcast_to(arr.reshape(-1)[:1].reshape((1,) * arr.ndim), arr.shape)
        if how == "extra_dim":
            return arr[None]
        if how == "squeeze":
            return arr.reshape(-1)
        if how == "scalar":
            return float(arr.reshape(-1)[0]) if arr.size else 0.0
        if how == "none":
            return None
        if how == "nested_ragged":
            return [[1.0, 2.0], [3.0]]
    raise AssertionError(how)


def shapes(dim, rows=(0, 4)):
    """``(n, dim)`` shapes: mostly right, sometimes a column too many or too few."""
    n = st.integers(*rows)
    cols = st.sampled_from([dim] * 6 + [max(dim - 1, 0), dim + 1])
    return st.tuples(n, cols)


def arrays(shape, bad=True):
    """A float64 array of ``shape`` (a tuple or a strategy) with :func:`floats` entries."""
    return hnp.arrays(np.float64, shape, elements=floats(bad))


def presented(shape, bad=True):
    """A float64 array of ``shape`` in a random presentation: ``(value, how)``."""
    how = st.sampled_from(PRESENTATIONS) if bad else st.just("plain")
    return st.tuples(arrays(shape, bad), how).map(lambda t: (present(t[0], t[1]), t[1]))


def valid_array(value, shape):
    """Whether ``value`` is a valid real data array of ``shape`` (None: any size on that
    axis) by the library's documented rules: real numeric dtype (bool, int, float), the
    shape, finite entries of magnitude at most ``MAX_ABS_DATA``. Independent of
    ``vits_ref._validate``."""
    if value is None:
        return False
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged
        return False
    if arr.dtype.kind not in "biuf" or arr.ndim != len(shape):
        return False
    if any(w is not None and g != w for g, w in zip(arr.shape, shape, strict=True)):
        return False
    with np.errstate(all="ignore"):
        a = arr.astype(np.float64)
        return bool(np.all(np.isfinite(a)) and np.all(np.abs(a) <= val.MAX_ABS_DATA))


# ---------------------------------------------------------------------------------------
# hyperparameters: (value, tag) with tag "valid", "bad" or "maybe"
# ---------------------------------------------------------------------------------------

_BAD_REALS = (np.nan, np.inf, -np.inf, -1.0, "1.0", None, True, 1j, [1.0], np.array([1.0, 2.0]))


def real_hyper(lo, hi, allow_zero=False, extra_bad=()):
    """A real hyperparameter: valid in ``[lo, hi]`` (floats, ints, numpy scalars,
    Fractions), bad (NaN, inf, negative, strings, None, bool, complex, arrays, 0 unless
    allowed, ``extra_bad``), or borderline (Decimal, 0-D arrays)."""
    good = st.one_of(
        st.floats(lo, hi),
        st.integers(math.ceil(lo), math.floor(hi)) if math.ceil(lo) <= math.floor(hi)
        else st.floats(lo, hi),
        st.floats(lo, hi).map(np.float32),
        st.floats(lo, hi).map(fractions.Fraction).map(lambda f: f.limit_denominator(1000))
        .filter(lambda f: lo <= f <= hi),
    ).map(lambda v: (v, "valid"))
    bad = st.sampled_from(_BAD_REALS + tuple(extra_bad) + (() if allow_zero else (0.0,)))
    maybe = st.sampled_from([np.array(1.0), np.float16(1.0), 1e-50, 1e50])
    return st.one_of(good, good, good, bad.map(lambda v: (v, "bad")),
                     maybe.map(lambda v: (v, "maybe")))


def int_hyper(lo, hi, extra_bad=()):
    """A count: valid ints (and numpy ints) in ``[lo, hi]``; bad 0, negatives, floats,
    strings, None, bool; ``extra_bad``."""
    good = st.one_of(st.integers(lo, hi), st.integers(lo, hi).map(np.int64))
    bad = st.sampled_from((lo - 1, -1, float(lo), "2", None, True, 2.5) + tuple(extra_bad))
    return st.one_of(good.map(lambda v: (v, "valid")), good.map(lambda v: (v, "valid")),
                     good.map(lambda v: (v, "valid")), bad.map(lambda v: (v, "bad")))


def seeds():
    """Valid seeds (ints, None, SeedSequences) and bad ones (negative, float, str)."""
    good = st.one_of(st.integers(0, 2 ** 64), st.just(None),
                     st.integers(0, 100).map(np.random.SeedSequence))
    bad = st.sampled_from([-1, 1.5, "0", [0.5]])
    return st.one_of(good.map(lambda v: (v, "valid")), good.map(lambda v: (v, "valid")),
                     bad.map(lambda v: (v, "bad")))


def kwargs_of(**strategies):
    """``({name: value}, {name: tag})`` from ``name=strategy_of_(value, tag)``."""
    names = sorted(strategies)

    def split(values):
        return ({n: v for n, (v, _) in zip(names, values, strict=True)},
                {n: t for n, (_, t) in zip(names, values, strict=True)})

    return st.tuples(*(strategies[n] for n in names)).map(split)


# ---------------------------------------------------------------------------------------
# state oracles
# ---------------------------------------------------------------------------------------

#: scratch buffers (overwritten before they are read: the engines' kernel scratch, VTS's
#: E-step scratch ``_W``, ELBO trace buffer ``_trace`` and select's ``_scores`` and
#: ``_expected``, np.empty until used) and history buffers (compared as their first n_obs
#: rows, through the model's X, y)
_SKIP = frozenset({"_scratch", "_g", "_H", "_W", "_trace", "_scores", "_expected"})
_HISTORY = frozenset({"_X", "_y", "_r"})


def state(obj, depth=0):
    """A deep copy of everything observable of an engine or policy: arrays, scalars,
    strings, dicts, random generators' states, nested engines and models (histories as
    their ``n_obs`` rows).

    An engine's streams are taken where its own methods see them: draws that a policy
    object took ahead (``_held_draws``, see ``vits_ref.bandit._core.HeldDraws``) are
    settled first, which changes nothing a reader of the stream can observe."""
    out = {}
    if "_held_draws" in vars(obj):
        obj._settle_draws()
    for k, v in sorted(vars(obj).items()):
        if k in _SKIP:
            continue
        counts = getattr(obj, "counts", None)
        if (k in _HISTORY or k == "_resp") and isinstance(counts, np.ndarray) \
                and isinstance(v, np.ndarray) and v.ndim >= 2 and v.shape[0] == counts.size:
            # per-arm histories (VTS): arm a's first counts[a] rows; the rest is np.empty
            out[k] = [v[a, :c].copy() for a, c in enumerate(counts)]
            continue
        if k in _HISTORY and hasattr(obj, "n_obs") and isinstance(v, np.ndarray):
            out[k] = v[: int(obj.n_obs)].copy() if v.ndim and v.shape[0] >= obj.n_obs \
                else v.copy()
            continue
        out[k] = _value_state(v, depth)
    for name in ("X", "y"):
        prop = getattr(type(obj), name, None)
        if isinstance(prop, property):
            out["." + name] = np.array(getattr(obj, name), copy=True)
    return out


def _value_state(v, depth):
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, np.random.Generator):
        return repr(v.bit_generator.state)
    if isinstance(v, (int, float, str, bool, type(None), np.number, np.bool_)):
        return v
    if isinstance(v, dict):
        return {k: _value_state(x, depth) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value_state(x, depth) for x in v]
    if depth < 3 and hasattr(v, "__dict__") and type(v).__module__.startswith("vits_ref"):
        return state(v, depth + 1)
    return f"<{type(v).__name__} id={id(v)}>"  # the same object must stay bound


def assert_same_state(a, b, path="state"):
    """``a == b`` for two :func:`state` snapshots, arrays bit for bit (NaN equal NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), \
            f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            assert_same_state(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_state(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype \
            and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), f"{path} changed"
    else:
        same = (a == b) or (isinstance(a, float) and isinstance(b, float)
                            and np.isnan(a) and np.isnan(b))
        assert same, f"{path}: {a!r} -> {b!r}"


def names_an_argument(exc, names):
    """Whether the message of ``exc`` names one of ``names``."""
    msg = str(exc)
    return any(n in msg for n in names)
