"""Input validation at the public boundary (Numba does no bounds checking)."""

import numbers
import warnings

import numpy as np

#: Largest magnitude accepted for features and rewards: a product of two stays below
#: 1e300, so a rank-one term ``x x^T`` or ``r x`` of the sufficient statistics cannot
#: overflow (the largest float is 1.8e308; ``|x| ~ 1.4e154`` already overflows ``x^2``).
MAX_ABS_DATA = 1e150

#: Range of ``eta``, ``lam`` and their product ``eta lam`` (the prior precision): inside
#: it the prior variance ``1/(eta lam)`` is at most 1e100, a draw's scale at most 1e50, and
#: their squares stay finite; outside it engines returned inf or NaN draws and covariances.
HYPER_RANGE = (1e-100, 1e100)


def positive_int(value, name, minimum=1):
    """Return ``value`` as an int >= ``minimum`` or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def positive_float(value, name, allow_zero=False):
    """Return ``value`` as a finite float > 0 (or >= 0) or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def hyperparameter(value, name):
    """``eta`` or ``lam``: a finite float within :data:`HYPER_RANGE`, or raise naming it."""
    value = positive_float(value, name)
    lo, hi = HYPER_RANGE
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo:g}, {hi:g}] (outside it the prior "
                         f"covariance I/(lam eta) or its square over- or underflows), "
                         f"got {value!r}")
    return value


def eta_lam(eta, lam):
    """Validated ``(eta, lam)``: each and their product ``eta lam`` in :data:`HYPER_RANGE`."""
    eta, lam = hyperparameter(eta, "eta"), hyperparameter(lam, "lam")
    lo, hi = HYPER_RANGE
    if not lo <= eta * lam <= hi:
        raise ValueError(f"eta * lam (the prior precision) must be in [{lo:g}, {hi:g}] "
                         f"(outside it the prior covariance I/(lam eta) or its square over- "
                         f"or underflows), got eta={eta!r}, lam={lam!r}")
    return eta, lam


def noise_sd(value, name="sigma"):
    """A reward-noise standard deviation: a finite float > 0 whose precision ``1/value^2``
    (passed on to the model as ``eta``) lies in :data:`HYPER_RANGE`, or raise naming
    ``name``. (1e-200 raised a ZeroDivisionError, 1e50 an error naming eta.)"""
    value = positive_float(value, name)
    lo, hi = HYPER_RANGE
    var = value * value
    if not (var > 0.0 and lo <= 1.0 / var <= hi):
        raise ValueError(f"{name} must be about 1e-50 to 1e+50: the noise precision "
                         f"1/{name}^2 must be in [{lo:g}, {hi:g}], got {name}={value!r}")
    return value


def bounded_data(arr, name):
    """Raise unless every entry of the float array ``arr`` has ``|x| <= MAX_ABS_DATA``."""
    if _within_by_squares(arr):
        return arr
    # min and max: no temporary (a realisation of T K d entries is checked per run); a
    # NaN propagates into both and fails the comparison too
    if arr.size and not -MAX_ABS_DATA <= arr.min() <= arr.max() <= MAX_ABS_DATA:
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or inf")
        raise ValueError(f"{name} must have entries of magnitude <= {MAX_ABS_DATA:g} (their "
                         f"squares and products must not overflow), got "
                         f"{float(np.abs(arr).max()):.3g}")
    return arr


#: ``MAX_ABS_DATA^2`` as rounded: the bound of :func:`_within_by_squares`.
_MAX_SQUARE = MAX_ABS_DATA * MAX_ABS_DATA
#: Fewest entries checked by :func:`_within_by_squares`: below about a thousand, min and
#: max cost no more than the error state the BLAS pass enters (a feature row of 20: 5.0
#: against 5.8 us).
_ONE_PASS_SIZE = 1024


def _within_by_squares(arr):
    """Whether a contiguous float64 ``arr`` of at least :data:`_ONE_PASS_SIZE` entries is
    shown within :data:`MAX_ABS_DATA` by one BLAS pass, ``sum x^2 < fl(MAX_ABS_DATA^2)``
    (False: not shown, check entry by entry).

    The sum of squares is no smaller than any of its terms, in any order of summation and
    with or without fused multiply-adds (nonnegative terms, monotone rounding), and a term
    ``|x| > MAX_ABS_DATA`` rounds to at least ``fl(MAX_ABS_DATA^2)``; NaN and inf fail the
    comparison. One pass instead of min and max: on the features of a fused run's
    realisation (:func:`realisation`, every chunk) 2.5% of the cost of drawing them
    instead of 4.4% (docs/performance.md, "An environment round").
    """
    if (arr.size < _ONE_PASS_SIZE or arr.dtype != np.float64
            or not arr.flags.c_contiguous):
        return False
    flat = arr.reshape(-1)
    with np.errstate(over="ignore"):  # an overflowing sum is only "not shown"
        return bool(np.dot(flat, flat) < _MAX_SQUARE)


def realisation(env, real, binary=False):
    """``real`` (a realisation: ``contexts``, ``rewards``), after checking that its features
    and rewards are within :data:`MAX_ABS_DATA` (whose squares would overflow the
    sufficient statistics, silently in a compiled loop) and, with ``binary``, that every
    reward is 0 or 1 (the logistic model's Bernoulli rewards); a ValueError naming the
    environment ``env`` that drew it if not. The one check of every many-runs path
    (:func:`vits_ref.bandit._fused_draws.checked`, the DiffTS chains)."""
    for name, arr in (("contexts", real.contexts), ("rewards", real.rewards)):
        try:
            bounded_data(arr, name)
        except ValueError as err:
            raise ValueError(f"the environment {env!r} drew {err}: its scale is too large "
                             f"for the sufficient statistics") from None
    if binary:
        try:
            bernoulli_rewards(real.rewards)
        except ValueError as err:
            raise ValueError(f"{err} (a flat index into the chunk's rounds x arms rewards "
                             f"drawn by the environment {env!r})") from None
    return real


def bernoulli_rewards(rewards):
    """Raise unless every entry of the float array ``rewards`` is 0 or 1 (the logistic
    model's Bernoulli rewards); the message gives the first other value and its index."""
    bad = (rewards != 0.0) & (rewards != 1.0)
    if np.any(bad):
        i = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"rewards must be 0 or 1 for the logistic model (Bernoulli "
                         f"rewards), got {float(rewards.ravel()[i])!r} at index {i}")
    return rewards


def contexts(contexts, dim):
    """``(K, dim)`` features, ``K >= 1``, finite and of magnitude at most
    :data:`MAX_ABS_DATA` (checked before any draw is used up)."""
    X = float_array(contexts, "contexts", ndim=2, shape=(None, dim), finite=False)
    if X.shape[0] == 0:
        raise ValueError(f"contexts must have at least one row (one per arm), got shape "
                         f"{X.shape}")
    return bounded_data(X, "contexts")


def logged_rounds(contexts, arms, rewards, dim=None):
    """``(X (n, K, d), arms (n,) int64, rewards (n,))``: ``n`` logged rounds, the arms'
    features of each round, the arm played (an integer in ``[0, K)``) and its reward,
    finite and within :data:`MAX_ABS_DATA`; checked whole before any is learnt."""
    X = float_array(contexts, "contexts", ndim=3, finite=False)
    n, K, d = X.shape
    if dim is not None and d != dim:
        raise ValueError(f"contexts must have d = {dim} features (the last axis), got shape "
                         f"{X.shape}")
    if K == 0:
        raise ValueError(f"contexts must have at least one arm (the second axis), got shape "
                         f"{X.shape}")
    bounded_data(X, "contexts")
    return (X, *logged_arms_rewards(X, arms, rewards))


def played_rows(X, arms):
    """The played arms' features ``X[i, arms[i]]`` (n, d), C-ordered, of rounds ``X``
    (n, K, d) and valid ``arms`` (n,): one row gather of the flattened rounds (``np.take``
    of rows: 0.7 ms for 10 000 rounds of K = 50, d = 20, where ``X[np.arange(n), arms]``
    takes 1.7 ms on this project's machine)."""
    n, K, d = X.shape
    if not X.flags.c_contiguous:  # a strided view: no flat rows to take
        return np.ascontiguousarray(X[np.arange(n), arms])
    return np.take(X.reshape(n * K, d), np.arange(n, dtype=np.int64) * K + arms, axis=0)


def logged_rows(rows, arms, rewards, dim=None, n_arms=None):
    """``(rows (n, d), arms (n,) int64, rewards (n,))``: ``n`` logged rounds given by the
    played arms' features only (one row each: what a learning door reads of a round), the
    arm played (an integer in ``[0, n_arms)``, or at least 0 when the number of arms is
    not known) and its reward, finite and within :data:`MAX_ABS_DATA`; checked whole
    before any is learnt. Only the rows are read, so a fit of them reads ``n d`` entries,
    where the rounds' form (:func:`logged_rounds`) checks all ``n K d``."""
    X = float_array(rows, "contexts", ndim=2, finite=False)
    n, d = X.shape
    if dim is not None and d != dim:
        raise ValueError(f"contexts must have d = {dim} features (the last axis), got shape "
                         f"{X.shape}")
    bounded_data(X, "contexts")
    return (X, *_arms_rewards(arms, rewards, n, n_arms))


def logged_arms_rewards(X, arms, rewards):
    """``(arms (n,) int64, rewards (n,))`` of the ``n`` rounds of contexts ``X`` (n, K, d),
    checked as :func:`logged_rounds` checks them (``X`` already checked)."""
    n, K = X.shape[:2]
    return _arms_rewards(arms, rewards, n, K)


def _arms_rewards(arms, rewards, n, n_arms):
    """:func:`logged_arms_rewards` for ``n`` rounds of ``n_arms`` arms (None: not known,
    any arm from 0 up)."""
    a = logged_arms(arms, n, n_arms)
    # finiteness checked by bounded_data, with the same message
    r = float_array(rewards, "rewards", ndim=1, finite=False)
    if r.shape[0] != n:
        raise ValueError(f"rewards must have shape ({n},) (one per round of contexts), got "
                         f"{r.shape}")
    bounded_data(r, "rewards")
    return a.astype(np.int64, copy=False), r


def logged_arms(arms, n, n_arms):
    """``arms`` of ``n`` logged rounds: a 1-D array of ``n`` integers in ``[0, n_arms)``
    (from 0 up where ``n_arms`` is None; not bools), as given (the caller converts it)."""
    a = np.asarray(arms)
    if a.shape != (n,):
        raise ValueError(f"arms must have shape ({n},) (one per round of contexts), got "
                         f"{a.shape}")
    if n and a.dtype.kind not in "iu":  # bools ("b") and objects refused too
        raise TypeError(f"arms must be integers, got dtype {a.dtype}")
    if n and n_arms is None and a.min() < 0:
        raise ValueError(f"arms must be at least 0, got values from {a.min()}")
    if n and n_arms is not None and (a.min() < 0 or a.max() >= n_arms):
        raise ValueError(f"arms must be in [0, {n_arms}), got values in [{a.min()}, "
                         f"{a.max()}]")
    return a


def arm_index(arm, n_arms):
    """An arm index in ``[0, n_arms)`` (a Python or NumPy integer, not a bool)."""
    if isinstance(arm, (bool, np.bool_)) or not isinstance(arm, (int, np.integer)):
        raise TypeError(f"arm must be an integer index, got {type(arm).__name__}")
    if not 0 <= arm < n_arms:
        raise ValueError(f"arm must be in [0, {n_arms}), got {arm}")
    return int(arm)


def reward_value(reward):
    """One finite real reward of magnitude at most :data:`MAX_ABS_DATA`, as a float."""
    if isinstance(reward, np.ndarray) and reward.ndim == 0 and reward.dtype.kind in "iuf":
        reward = reward.item()  # a 0-D real array is a number
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, numbers.Real):
        # float() of None, a list or a 1-element array raised a TypeError not naming it
        raise TypeError(f"reward must be a real number, got {type(reward).__name__}")
    try:
        reward = float(reward)
    except OverflowError:  # an int beyond the largest float (was an OverflowError)
        raise ValueError(f"reward must have magnitude <= {MAX_ABS_DATA:g}, got an "
                         f"integer of {len(str(abs(int(reward))))} digits") from None
    if not np.isfinite(reward):
        raise ValueError(f"reward must be finite, got {reward}")
    if abs(reward) > MAX_ABS_DATA:
        raise ValueError(f"reward must have magnitude <= {MAX_ABS_DATA:g}, got {reward!r}")
    return reward


def choice(value, name, options):
    """Return ``value`` if it is one of ``options`` (strings compared case-insensitively)."""
    if isinstance(value, str) and value.lower() in {o.lower() for o in options}:
        return next(o for o in options if o.lower() == value.lower())
    raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")


#: the dtype that :func:`float_array` returns (a native-order float64: a byte-swapped one
#: is another dtype object and is converted)
_FLOAT64 = np.dtype(np.float64)


def float_array(value, name, ndim=None, shape=None, finite=True):
    """Return ``value`` as a C-contiguous, writeable float64 array, checking rank, shape,
    finiteness.

    Writeable and C-ordered because that is the one array type the compiled calls take:
    Numba types a read-only or a strided array apart, and compiles every function it
    reaches again for it (VTS's update driver: about 12 s), so a read-only input (a NumPy
    ``mmap``, a broadcast, some DataFrames' ``.values``) is copied here instead."""
    if (type(value) is np.ndarray and value.dtype is _FLOAT64
            and value.flags.c_contiguous and value.flags.writeable):
        # already what the conversion below returns (itself): its dtype checks skipped,
        # a few microseconds of every call on data the library passes between its layers
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except Exception as exc:  # pragma: no cover - exotic objects
            raise TypeError(f"{name} must be array-like: {exc}") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                       or arr.dtype == np.bool_):
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
        if np.iscomplexobj(arr):
            raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
        # np.asarray with order="C", not np.ascontiguousarray: the latter turns a scalar
        # (0-D) into shape (1,), which passed every ndim=1 check (tests/test_fuzz_api.py)
        arr = np.asarray(arr, dtype=np.float64, order="C")
        if not arr.flags.writeable:
            arr = arr.copy()
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if shape is not None:
        wanted = tuple("any" if s is None else s for s in shape)
        for axis, (got, want) in enumerate(zip(arr.shape, shape, strict=True)):
            if want is not None and got != want:
                raise ValueError(f"{name} must have shape {wanted}, got {arr.shape} "
                                 f"(axis {axis})")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def spd_matrix(value, name, dim=None):
    """Return a symmetric positive definite float64 matrix, or raise naming ``name``."""
    arr = float_array(value, name, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {arr.shape}")
    if dim is not None and arr.shape[0] != dim:
        raise ValueError(f"{name} must be {dim} x {dim}, got shape {arr.shape}")
    if not np.allclose(arr, arr.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(arr).max())):
        raise ValueError(f"{name} must be symmetric")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be positive definite") from None
    return arr


def observations(features, rewards, dim):
    """Validate a batch of observations: features (n, dim), rewards (n,), finite and of
    magnitude at most :data:`MAX_ABS_DATA`."""
    features = float_array(features, "features", ndim=2, finite=False)
    if features.shape[1] != dim:
        raise ValueError(f"features must have {dim} columns (the model's input "
                         f"dimension), "
                         f"got shape {features.shape}")
    rewards = float_array(rewards, "rewards", ndim=1, finite=False)
    if rewards.shape[0] != features.shape[0]:
        raise ValueError(f"rewards has {rewards.shape[0]} entries but features has "
                         f"{features.shape[0]} rows")
    return bounded_data(features, "features"), bounded_data(rewards, "rewards")


def as_generator(seed, name="seed"):
    """A ``numpy.random.Generator`` from an int, a SeedSequence, a Generator or None."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(seed, (bool, np.bool_)):
            raise TypeError(f"{name} must be an int, a SeedSequence or a Generator, got bool")
        if isinstance(seed, numbers.Integral) and seed < 0:
            raise ValueError(f"{name} must be non-negative, got {seed}")
        return np.random.default_rng(seed)
    raise TypeError(f"{name} must be an int, a numpy.random.SeedSequence or a "
                    f"numpy.random.Generator, got {type(seed).__name__}")


def as_seed_sequence(seed, name="seed"):
    """A ``SeedSequence`` from an int, a SeedSequence or None (Generators are not accepted)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"{name} must be non-negative, got {seed}")
        return np.random.SeedSequence(seed)
    raise TypeError(f"{name} must be an int or a numpy.random.SeedSequence, "
                    f"got {type(seed).__name__}")


def mean_and_cov(dim, mean, cov, mean_name, cov_name, default):
    """Validated ``(mean, cov)`` of a Gaussian given by the user; ``(None, None)`` when
    neither is given (``default`` says, in the error, what is used then).

    ``cov`` may be a vector (a diagonal covariance) or a matrix; ``mean`` defaults to 0
    when only ``cov`` is given.
    """
    if cov is None:
        if mean is not None:
            raise ValueError(f"{mean_name} needs {cov_name} ({default})")
        return None, None
    cov = np.asarray(cov, dtype=float)
    if cov.ndim == 1:
        cov = np.diag(float_array(cov, cov_name, ndim=1, shape=(dim,)))
    cov = spd_matrix(cov, cov_name, dim=dim)
    mean = (np.zeros(dim) if mean is None
            else float_array(mean, mean_name, ndim=1, shape=(dim,)))
    return mean, cov


def renamed(value, old_value, name, old_name, default, stacklevel=3):
    """``value`` of the keyword ``name``, or ``old_value`` given under ``old_name``, its
    deprecated former name (accepted for one release, with a DeprecationWarning naming
    ``name``). ``old_value`` None: not given. Both given (``value`` not its ``default``):
    ``TypeError``.
    """
    if old_value is None:
        return value
    if value != default:
        raise TypeError(f"give {name} only: {old_name} is its deprecated former name")
    warnings.warn(f"{old_name} is deprecated and will be removed in the next release: use "
                  f"{name}", DeprecationWarning, stacklevel=stacklevel)
    return old_value
