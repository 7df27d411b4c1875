"""The fused bandit loops: one whole run (:func:`bandit_run`), and chunks of rounds of
independent runs (:func:`bandit_rounds`; :func:`bandit_runs`, the whole horizon as one
chunk) of any bandit piece (:mod:`vits_ref.drivers.fused`), over pre-drawn randomness;
the streamed loops are in :mod:`.streams`.

One driver per piece, cached in the process and closing over the piece's
``fingerprint``; the run drivers are serial loops over the runs, split over threads in
blocks of runs (:func:`._runs.over_runs`: one copy of the round's body in the machine
code, where a ``prange`` loop compiled it into four more libraries), each run from its own
arrays, so the results do not depend on the number of threads.
"""

import functools
import typing

import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic

from ...config import cpu_jit, kernel
from ...kernels.bandit import make_bandit_rounds, make_bandit_rounds_late
from ...kernels.linalg import copy_vec
from ._runs import over_runs


@functools.cache
def bandit_run(piece):
    """``run(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
    regret, arms, kl_out) -> status``: one run (allocates its state buffer).

    :func:`bandit_runs` with one run (every array a view with a leading axis of one), the
    whole horizon as one chunk of :func:`bandit_rounds`: the loop :func:`vits_ref.simulate`
    runs, so that a policy's round is compiled once for both (a loop of its own per piece
    cost a cold test run about 140 s of compilation). One run is run in the calling
    thread.
    """
    runs = bandit_runs(piece)

    def call(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out):
        status = np.zeros(1, dtype=np.int64)
        runs(params, contexts[None], means[None], rewards[None], init_noise[None],
             sel_noise[None], step_noise[None], kl_rounds, regret[None], arms[None],
             kl_out[None], status)
        return int(status[0])

    return call


@functools.cache
def bandit_runs(piece):
    """``call(params, contexts, ..., kl_out, status)``: independent whole runs, split over
    threads (:func:`._runs.over_runs`).

    Every per-run array has the runs on its leading axis (``contexts`` (R, T, K, d), ...,
    ``status`` (R,)); each run is computed by one thread from its own arrays, so the results
    do not depend on the number of threads. The whole horizon is one chunk of
    :func:`bandit_rounds` (``t0 = 0``): the loop :func:`vits_ref.simulate` runs, compiled
    once for both (``tests/test_chunked_rounds.py`` checks chunks of every size against it,
    bit for bit, and ``tests/test_simulate.py`` its one-run form against the plain NumPy
    loop of :mod:`vits_ref.reference`).
    """
    run = bandit_rounds(piece)
    size = piece.state_size

    def call(params, contexts, means, rewards, init_noise, sel_noise, step_noise, kl_rounds,
             regret, arms, kl_out, status):
        R, T, K, d = contexts.shape
        bufs = np.empty((R, size(d, K, step_noise.shape[3], T)))
        run(params, bufs, 0, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status)

    return call


@functools.cache
def bandit_rounds(piece):
    """``run(params, bufs, t0, contexts, ..., kl_out, status)``: rounds ``[t0, t0 + n)`` of
    independent runs, blocks of runs in threads (:func:`._runs.over_runs`) over a serial
    loop with the round's body inlined (:func:`vits_ref.kernels.bandit.make_bandit_rounds`).

    ``bufs`` (R, ``piece.state_size(d, K, M, T)``) are the runs' state buffers, kept by the
    caller between calls (initialised by the call with ``t0 == 0``); ``contexts`` (R, n, K,
    d), ``means``, ``rewards`` (R, n, K), ``sel_noise`` (R, n, ·), ``step_noise`` (R, n, S,
    M, d) the chunk's rows; ``init_noise`` (R, ·); ``regret``, ``arms`` (R, T) and
    ``kl_out`` (R, n_kl) the whole runs' outputs, written at the global rounds; ``status``
    (R,) set to each run's status for the chunk. Each run is computed by one thread from its
    own arrays, so the results depend neither on the number of threads nor on the chunks;
    a single run (or one thread) is computed in the calling thread.
    """
    body = make_bandit_rounds(piece, inline=True)  # one copy of it: in this loop
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(params, bufs, t0, contexts, means, rewards, init_noise, sel_noise, step_noise,
            kl_rounds, regret, arms, kl_out, status):
        _ = fp
        for r in range(contexts.shape[0]):
            status[r] = body(params, bufs[r], t0, contexts[r], means[r], rewards[r],
                             init_noise[r], sel_noise[r], step_noise[r], kl_rounds,
                             regret[r], arms[r], kl_out[r])

    # every argument but params, t0 and kl_rounds has the runs on its leading axis
    return over_runs(run, (1, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13))


@functools.cache
def bandit_rounds_late(piece):
    """``run(params, bufs, t0, k0, contexts, ..., step_noise, order, learnt, kl_rounds,
    regret, arms, kl_out, status)``: :func:`bandit_rounds` with late or batched feedback
    (:func:`vits_ref.kernels.bandit.make_bandit_rounds_late`), blocks of runs in threads.

    Per run, beside :func:`bandit_rounds`'s arrays: ``k0`` (R,) the updates made before the
    chunk, ``step_noise`` (R, L, S, M, d) and ``order`` (R, L) the step noise and learnt
    round of updates ``k0 .. k0 + L - 1`` (rows past a run's last update of the chunk are
    not read), ``learnt`` (R, n) the updates made by the end of each round of the chunk;
    ``bufs`` (R, ``piece.state_size(d, K, M, T)`` + the queue's
    :func:`vits_ref.kernels.bandit.late_queue_size`). One run is computed in the calling
    thread, as in :func:`bandit_rounds`.
    """
    body = make_bandit_rounds_late(piece, inline=True)
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(params, bufs, t0, k0, contexts, means, rewards, init_noise, sel_noise,
            step_noise, order, learnt, kl_rounds, regret, arms, kl_out, status):
        _ = fp
        for r in range(contexts.shape[0]):
            status[r] = body(params, bufs[r], t0, k0[r], contexts[r], means[r], rewards[r],
                             init_noise[r], sel_noise[r], step_noise[r], order[r],
                             learnt[r], kl_rounds, regret[r], arms[r], kl_out[r])

    # every argument but params, t0 and kl_rounds has the runs on its leading axis
    return over_runs(run, (1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16))


#: Entries of an online call's ``meta`` array (:func:`online_meta`) before the piece's
#: parameters: arms, dimension, draws per step, history length, the data's bound, whether
#: rewards must be 0 or 1, the length of the state kept for a roll-back (0: none).
_K, _D, _M, _T, _BOUND, _BINARY, _KEEP, _N_META = range(8)

#: The Numba type of each annotation a piece's ``params_type`` may use.
_FIELD_TYPES = {float: types.float64, int: types.int64, bool: types.boolean}


def online_meta(params, K, d, M, T, bound, binary, keep=0):
    """The float64 array an online call reads its sizes and the piece's parameters from:
    ``(K, d, M, T, bound, binary, keep, *params)``.

    ``keep``: the length of the state an update copies before it runs, into the buffer's
    second half, and puts back if the state becomes non-finite (the buffer then holds
    ``2 keep`` entries); 0 for none (a state with a history, whose copy would cost
    O(horizon) an update).

    One array instead of a tuple and five numbers: Numba's dispatcher types every argument
    of every call, and a tuple goes through its slow path (about 0.15 us against 0.04 for
    an array on this machine; an int or float costs about as much as an array). The
    parameters are read back as the types their ``params_type`` annotates
    (:func:`_params_from`); every value must survive the trip through float64.
    """
    fields = typing.get_type_hints(type(params))
    values = [K, d, M, T, bound, binary, keep, *params]
    meta = np.array(values, dtype=np.float64)
    for name, v, back in zip(("K", "d", "M", "T", "bound", "binary", "keep", *fields), values,
                             meta, strict=True):
        if not (back == v and (isinstance(v, float) or abs(v) < 2 ** 53)):
            raise ValueError(f"{name} = {v!r} is not exactly a float64: the online loop "
                             "cannot carry it")
    return meta


@intrinsic
def _params_from(typingctx, meta, cls):
    """``cls``'s fields from ``meta[_N_META:]``, each converted to the type its annotation
    names (float, int, bool), as a plain tuple for ``cls(*...)``."""
    hints = typing.get_type_hints(cls.instance_class)
    try:
        fts = [_FIELD_TYPES[hints[f]] for f in cls.instance_class._fields]
    except KeyError as err:
        raise TypeError(f"{cls.instance_class.__name__}: a field annotated {err} cannot "
                        "travel as a float64 (float, int or bool only)") from None
    ret = types.Tuple(fts)

    def codegen(context, builder, sig, args):
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        vals = []
        for i, ft in enumerate(fts):
            idx = context.get_constant(types.intp, _N_META + i)
            v = builder.load(cgutils.get_item_pointer(context, builder, sig.args[0], arr,
                                                      [idx]))
            vals.append(context.cast(builder, v, types.float64, ft))
        return context.make_tuple(builder, sig.return_type, vals)

    return ret(meta, cls), codegen


@kernel
def _params(meta, P):
    """The piece's parameters ``P`` rebuilt from ``meta`` (:func:`_params_from`).

    A module-level function, so that a driver's body pickled by value (Numba's cache key
    of a closure) names it by reference: the intrinsic itself pickles with a uuid drawn
    in each process (numba's ``_Intrinsic``), and a closure whose cells reached it got a
    new cache key in every process (``choose`` was compiled again by every new process).
    """
    return P(*_params_from(meta, P))


#: Every bit of a float64 but its sign.
_ABS_BITS = np.uint64(0x7FFFFFFFFFFFFFFF)


@kernel(inline=True)
def _within(X, meta):
    """Whether every entry of the C-contiguous float64 array ``X`` (every online call's
    contexts: :data:`_ONLINE_SIGNATURES`) is finite with magnitude at most
    ``meta[_BOUND]``.

    On the bit patterns: without its sign bit, a float64's bits order the magnitudes as
    integers, with inf and every NaN above all finite values, so one integer max answers
    for NaN, inf and the bound alike. An integer max vectorises; a float comparison that
    must see NaN does not, and a loop that returns at the first bad entry is slower still
    (about 0.06 against 0.35 and 0.85 us for 50 x 20 entries on this machine). A kernel
    body inlined before typing (:func:`vits_ref.config.kernel`), not an overload inlined
    after it, which compiled its implementation in full first only to throw it away
    (about 1.1 s of CPU in every process that compiles ``choose``).
    """
    v = X.reshape(-1).view(np.uint64)
    m = np.uint64(0)
    for k in range(v.size):
        m = max(m, v[k] & _ABS_BITS)
    return m <= meta.view(np.uint64)[_BOUND]


#: The one signature each online call is compiled for (:func:`bandit_online`).
_F1, _F2, _F3, _F4 = (types.Array(types.float64, n, "C") for n in (1, 2, 3, 4))
_ONLINE_SIGNATURES = {
    "start": (_F1, _F1, _F1),
    "choose": (_F1, _F1, _F2, _F2, types.int64),
    "learn": (_F1, _F1, _F2, types.int64, types.float64, _F4, types.int64, types.int64),
    "choose_many": (_F1, _F1, _F3, _F2, types.int64, types.Array(types.int64, 1, "C")),
    "learn_many": (_F1, _F1, _F3, types.Array(types.int64, 1, "C"), _F1, _F4, types.int64,
                   types.int64, types.Array(types.int64, 1, "C")),
}


@functools.cache
def bandit_online(piece):
    """``(start, choose, learn, choose_many, learn_many)``: a run of ``piece`` one decision
    at a time, or a batch of decisions or of feedback in one call, over a state buffer the
    caller keeps (:class:`vits_ref.bandit.online.Online`).

    Every call takes ``meta`` (:func:`online_meta`: the sizes, the data's ``bound``, the
    roll-back length ``keep``, and the piece's parameters rebuilt into its ``params_type``
    inside the call) and the state buffer ``buf``; the randomness comes as the caller's
    block of pre-drawn rows and the row's index ``i`` (no view built in Python). Fewer,
    cheaper arguments: Numba's dispatcher types each one on every call, which was most of
    a LinTS decision's cost. Each is compiled for one signature
    (:data:`_ONLINE_SIGNATURES`: C-ordered float64 arrays, int64 and float64 scalars) and
    then closed to compiling: an argument of another type raises a ``TypeError`` at once,
    never a compilation in the middle of a run, so the caller passes its data unchecked
    and converts them only on that error; the sizes are checked here.

    ``start(meta, buf, init_noise)`` initialises the state;
    ``choose(meta, buf, X, sel_noise, i) -> arm`` is the piece's ``select`` on the round's
    contexts ``X`` (K, d) with the draw ``sel_noise[i]``; -1 if an entry of ``X`` is not
    finite or exceeds ``bound`` in magnitude, -2 if ``X`` is not (K, d).
    ``learn(meta, buf, X, arm, r, step_noise, i, n_obs) -> code`` is its ``update`` on the
    played arm's features, ``X[arm]`` of the round's contexts ``X`` (K, d), or ``X[0]`` of
    ``X`` (1, d) with ``arm = -1``, and reward ``r`` with ``n_obs`` observations and the
    draws ``step_noise[i]``: 1, 0 if the state became non-finite (put back as it was when
    ``keep`` > 0), -1 if ``r`` is not finite or beyond ``bound``, -2 if an entry of ``X``
    is, -3 if ``arm`` is not in [0, K), -4 if ``r`` is not 0 or 1 where the model needs
    it, -5 if ``X`` has another shape. Every refusal comes before the state changes.
    ``choose_many(meta, buf, Xs, sel_noise, i0, out) -> n`` and
    ``learn_many(meta, buf, Xs, arms, rs, step_noise, i0, n_obs0, codes) -> n`` are those
    calls for consecutive rounds, in order, with the draws ``i0, i0 + 1, ...`` (and
    ``n_obs0, n_obs0 + 1, ...``): they stop at the first round refused (its code in
    ``codes[0]`` for ``learn_many``) and return how many were done.
    The same bodies as the fused loop's rounds (:func:`vits_ref.kernels.bandit.make_round`),
    so the same noise gives the same arms. The data are checked here (:func:`_within`), so
    that a call costs O(K d) and no NumPy reductions.
    """
    views, init, select, update = piece.views, piece.init, piece.select, piece.update
    fp = piece.fingerprint  # in the closure: Numba's cache key follows the bodies
    P = piece.params_type
    if P is None:
        raise TypeError(f"{piece.name}: the online loop needs a piece with a params_type")

    @cpu_jit
    def start(meta, buf, init_noise):
        _ = fp
        state, _o = views(buf, int(meta[_D]), int(meta[_K]), int(meta[_M]), int(meta[_T]))
        init(_params(meta, P), state, init_noise)

    # the bodies of choose and learn: compiled once a process, for the one-round and the
    # batch calls alike (kernel, not inlined: inlined twice, they cost 74 s more of a cold
    # test run's compilation). Closures pickled by value into their callers' cache keys:
    # they call module-level functions only (vits_ref/config.py)
    @kernel
    def choose_one(meta, buf, X, sel_noise, i):
        K, d = X.shape
        if K != int(meta[_K]) or d != int(meta[_D]):
            return -2
        if not _within(X, meta):
            return -1
        state, _o = views(buf, d, K, int(meta[_M]), int(meta[_T]))
        return select(_params(meta, P), state, X, sel_noise[i])

    @kernel
    def learn_one(meta, buf, X, arm, r, step_noise, i, n_obs):
        K, d = int(meta[_K]), int(meta[_D])
        if X.shape[1] != d or X.shape[0] != (1 if arm == -1 else K):
            return -5
        if arm != -1 and not 0 <= arm < K:
            return -3
        bound = meta[_BOUND]
        if not abs(r) <= bound:
            return -1
        if meta[_BINARY] != 0.0 and r != 0.0 and r != 1.0:
            return -4
        if not _within(X, meta):  # every arm's row, as the policy objects check them
            return -2
        x = X[max(arm, 0)]
        keep = int(meta[_KEEP])
        if keep > 0:
            copy_vec(buf[:keep], buf[keep:2 * keep])
        state, _o = views(buf, d, K, int(meta[_M]), int(meta[_T]))
        if update(_params(meta, P), state, x, r, n_obs, step_noise[i]):
            return 1
        if keep > 0:  # rolled back: a failed update leaves the state as it was
            copy_vec(buf[keep:2 * keep], buf[:keep])
        return 0

    @cpu_jit
    def choose(meta, buf, X, sel_noise, i):
        _ = fp
        return choose_one(meta, buf, X, sel_noise, i)

    @cpu_jit
    def learn(meta, buf, X, arm, r, step_noise, i, n_obs):
        _ = fp
        return learn_one(meta, buf, X, arm, r, step_noise, i, n_obs)

    @cpu_jit
    def choose_many(meta, buf, Xs, sel_noise, i0, out):
        """``choose`` for the ``n = out.size`` rounds' contexts ``Xs`` (n, K, d) with the
        draws ``sel_noise[i0:i0 + n]`` into ``out``; returns the index of the first round
        whose contexts are refused (nothing after it is chosen), or ``n``."""
        _ = fp
        for k in range(out.shape[0]):
            arm = choose_one(meta, buf, Xs[k], sel_noise, i0 + k)
            if arm < 0:
                return k
            out[k] = arm
        return out.shape[0]

    @cpu_jit
    def learn_many(meta, buf, Xs, arms, rs, step_noise, i0, n_obs0, codes):
        """``learn`` for the ``n = arms.size`` rounds' contexts ``Xs`` (n, K, d) or
        features (n, 1, d) (with arms -1), rewards ``rs`` and draws
        ``step_noise[i0:i0 + n]``; returns the index of the first round refused or
        diverged (its code in ``codes[0]``; nothing after it is learnt), or ``n``."""
        _ = fp
        for k in range(arms.shape[0]):
            code = learn_one(meta, buf, Xs[k], arms[k], rs[k], step_noise, i0 + k,
                             n_obs0 + k)
            if code != 1:
                codes[0] = code
                return k
        return arms.shape[0]

    # the one-round calls now; the batch calls at their first use (online_compiled), so
    # that a user who never calls them never waits for them on a cold cache
    for name, fn in (("start", start), ("choose", choose), ("learn", learn)):
        online_compiled(fn, name)
    return start, choose, learn, choose_many, learn_many


def online_compiled(fn, name):
    """``fn``, one of :func:`bandit_online`'s calls (``name`` its key in
    :data:`_ONLINE_SIGNATURES`), compiled (or loaded from the cache) for its one signature
    and closed to compiling; at once if it already is."""
    if not fn.overloads:  # not fn.signatures: its list of the keys hashes every type
        # (about 9 us, where a batch of two rounds learns in 60)
        fn.compile(_ONLINE_SIGNATURES[name])
        fn.disable_compile()
    return fn
