"""One compiled state behind every door: a policy's fused bodies, one call at a time.

:class:`vits_ref.ThompsonSampling` over LinTS, VITS or LMC-TS on the linear model (with
the default prior and the ``constant`` or ``decayed`` schedule) and :class:`vits_ref.LinUCB`
play ``select`` and ``update`` through :class:`Core`: the posterior in the flat state
buffer of the fused loop's piece (:mod:`vits_ref.kernels.bandit`), driven by the compiled
calls that :class:`vits_ref.Online` drives (:func:`vits_ref.drivers.cpu.bandit_online`).
They are the bodies of :func:`vits_ref.simulate`'s compiled loop, so the same draws give
the same arms and the same state, bit for bit; :class:`vits_ref.Bandit` plays the policy
objects, so it is the same state again.

One state: the engine's arrays (LinTS's factor ``L``, VITS's ``mu``, ``B``, ``C``, LMC's
``theta``, the linear model's ``V`` and ``b``; LinUCB's ``Vinv`` and ``b``) are rebound to
views of the buffer (:meth:`Core.attach`), so the engine object is current after every
call, whichever door played it, and its own methods (``mean``, ``sample``, ``update``)
read and write the same memory. Its counters (``n_obs``, the sum of squared rewards, the
diagnostics) are kept by each call. Only ``eta V`` and ``eta b``, which the fused bodies
keep beside the statistics, are the core's own: recomputed from ``V`` and ``b`` when the
engine learnt through its own ``update`` (the fused loop sums them observation by
observation, so from then on the numbers agree with an uninterrupted run to rounding, not
bit for bit).

The draws are the engine's own, from its two generators, so that the streams stand
where the engine's ``sample`` and ``update`` leave them. Where they are plain standard
normals (LinTS's and VITS's Thompson noise, VITS's and LMC-TS's step noise) they are
drawn ahead in blocks (:class:`HeldDraws`) and put back where the calls taken leave them
whenever anything else reads the stream; otherwise one call's worth at a time, in the
layout of the spec's ``draw_chunks`` (each stream alone, the other replaced by
:data:`_NULL`). A refused or diverging call takes no draw.
"""

import dataclasses

import numpy as np

from .. import _validate as val
from .._seeding import Streams
from .._validate import MAX_ABS_DATA
from ..drivers import cpu
from ..drivers.fused import draw_chunks
from ..errors import DivergenceError

_EMPTY = np.zeros(0)


class _Null:
    """A stand-in generator for the stream a call does not draw from: zeros, and nothing
    advanced (the layout of a spec's ``draw_chunks`` draws both streams at once)."""

    @staticmethod
    def standard_normal(size=None):
        return np.zeros(size)

    @staticmethod
    def random(size=None):
        return np.zeros(size)


_NULL = _Null()


class HeldDraws:
    """Standard normals of one engine stream drawn ahead in blocks, taken a row at a time.

    A policy object's ``select`` and ``update`` each take one row of the engine's
    Thompson or step noise. Drawn call by call, a row costs a NumPy call and a save of
    the generator's state (to put it back when the compiled call refuses the data),
    about 8 us of a 25 us LinTS decision. Drawn ahead instead, a call reads row
    :attr:`used` of :attr:`rows` and takes it (``used += 1``) only if the compiled call
    accepted it: a refused or diverged call takes nothing. A block of ``n`` rows is the
    generator's next ``n`` rows in order (NumPy fills an array element by element), so
    the rows taken are those that the calls one by one would have drawn.

    The engine lists the blocks held on its streams (``engine._held_draws``, ``{which:
    HeldDraws}``); reading or replacing a stream (:attr:`vits_ref.inference.base.Engine.
    _rng_sample`, ``_rng_update``) first settles them (:meth:`settle`), which puts the
    generator where the rows taken leave it, so that every other reader (the engine's
    own methods, ``save``, a copy) finds it there, bit for bit. A settled block draws its
    next block from there. Blocks start at :attr:`FIRST` rows and double while they are
    used up, to :attr:`MOST` rows (and at most :attr:`MOST_VALUES` numbers), so that a
    door mixed with the engine's own draws redraws little.

    A call reads ``rows[used]`` while ``used < n`` without calling :meth:`block`: a
    settled block is empty (``n == 0``), so a block that a reader settled, or that another
    door's block on the same stream replaced (which settles it), draws again.

    Parameters
    ----------
    owner : object
        The engine: its streams in its ``__dict__`` under :data:`_RAW_STREAMS`, its blocks
        under ``"_held_draws"``.
    which : int
        0 for the sampling stream, 1 for the update stream.
    shape : tuple of int
        One row's shape.
    """

    __slots__ = ("owner", "which", "shape", "rows", "used", "n", "start", "n_next")
    FIRST, MOST, MOST_VALUES = 8, 256, 1 << 16

    def __init__(self, owner, which, shape):
        self.owner, self.which, self.shape = owner, which, tuple(shape)
        self.rows = np.zeros((0,) + self.shape)
        self.used = self.n = 0
        self.start = None  # the generator's state before the block
        self.n_next = self.FIRST

    def block(self):
        """``(rows, i)``: the block and the index of the next row; a new block when this
        one is used up or was settled."""
        owner = vars(self.owner)
        held = owner.get("_held_draws")
        if held is not None and held.get(self.which) is self:
            if self.used < self.n:
                return self.rows, self.used
        else:  # settled by a reader of the stream: listed again, and blocks small again
            if held is None:
                held = owner["_held_draws"] = {}
            other = held.get(self.which)
            if other is not None:  # another door's block on the same stream
                other.settle()
            held[self.which] = self
            self.n_next = self.FIRST
        rng = owner[_RAW_STREAMS[self.which]]
        self.start = rng.bit_generator.state
        n = self.n_next
        self.rows = rng.standard_normal((n,) + self.shape)
        self.used, self.n = 0, n
        per_row = max(1, int(np.prod(self.shape)))
        self.n_next = min(2 * n, self.MOST, max(self.FIRST, self.MOST_VALUES // per_row))
        return self.rows, 0

    def settle(self):
        """Put the generator where the rows taken so far leave it; the block is empty."""
        if self.used < self.n:
            rng = vars(self.owner)[_RAW_STREAMS[self.which]]
            rng.bit_generator.state = self.start
            if self.used:
                rng.standard_normal((self.used,) + self.shape)
        self.rows = self.rows[:0]
        self.used = self.n = 0


def _linear_stats(eng, st_V, st_b):
    """The linear model's statistics ``V`` and ``b``: where they live, and their views."""
    return (eng.model, "V", st_V), (eng.model, "b", st_b)


def _lints(eng, st):
    F, V, etaV, _mats, _work, vecs, _scores = st
    return ((eng, "L", F),) + _linear_stats(eng, V, vecs[0]), (V, etaV, vecs[0], vecs[1])


def _vits(eng, st):
    V, etaV, B, C, *_, vecs, _scores = st
    return (_linear_stats(eng, V, vecs[0])
            + ((eng, "mu", vecs[2]), (eng, "B", B), (eng, "C", C))), (V, etaV, vecs[0], vecs[1])


def _lmc(eng, st):
    V, etaV, _H, vecs, _scores = st
    return _linear_stats(eng, V, vecs[0]) + ((eng, "theta", vecs[2]),), (V, etaV, vecs[0],
                                                                           vecs[1])


def _linucb(pol, st):
    Vinv, vecs, _VX, _scores = st
    return ((pol, "Vinv", Vinv), (pol, "b", vecs[0])), None


#: The pieces whose state a holder's arrays make up (an engine's, or LinUCB's own):
#: ``piece name -> fn(holder, state) -> (((object, attribute, state view), ...),
#: (V, etaV, b, eta_b) or None)``. The pieces with a history (the logistic model's) are
#: not here: their engines keep their own state.
ENGINE_STATES = {"lints": _lints, "vits": _vits, "lmc": _lmc, "linucb": _linucb}


def _binding_check(bindings):
    """``attached() -> bool``: whether every binding ``(obj, attr, view)`` still holds,
    ``obj.attr is view``: whether the holder's arrays are still the state's views (a load
    or an assignment rebinds them; a deleted attribute reads as rebound).

    Every compiled call of a policy object checks it, so it is one expression generated
    for the bindings, as :mod:`dataclasses` generates its methods, and it reads plain
    attributes: an object whose ``__dict__`` has been taken (``vars``) reads and writes its
    attributes about three times slower in CPython 3.11 (0.16 against 0.05 us an
    increment), the model's counts and the policy's own included. LinTS's five bindings:
    0.30 us, against 0.49 us for a loop of ``vars(obj).get(attr)`` over them (the 2-core
    machine; the engine's ``__dict__`` is taken by :class:`HeldDraws`)."""
    names, terms = {}, []
    for i, (obj, attr, view) in enumerate(bindings):
        if not attr.isidentifier():
            raise ValueError(f"a binding's attribute must be a name, got {attr!r}")
        names[f"obj{i}"], names[f"view{i}"] = obj, view
        terms.append(f"obj{i}.{attr} is view{i}")
    exec("def attached():\n    try:\n        return " + (" and ".join(terms) or "True")
         + "\n    except AttributeError:\n        return False", names)
    return names["attached"]


class Core:
    """A policy's state in its piece's flat buffer, and the compiled calls on it.

    Parameters
    ----------
    spec : vits_ref.drivers.fused.FusedSpec
        The policy's part of the fused loop (a piece without a history).
    n_arms, dim : int
        The shape ``(K, d)`` of a round's contexts.
    """

    __slots__ = ("spec", "K", "d", "buf", "meta", "state", "choose", "learn",
                 "choose_many", "learn_many", "sel_width", "steps", "_steps_shape",
                 "steps_per_update", "_normal_sel", "_normal_steps", "_stats",
                 "n_seen", "_bindings", "holder", "held_sel", "held_steps", "counter",
                 "step_diagnostics", "attached")

    def __init__(self, spec, n_arms, dim):
        piece = spec.piece
        self.spec, self.K, self.d = spec, n_arms, dim
        K, d = n_arms, dim
        _, sel, steps = spec.draw(np.random.SeedSequence(0), 1, d)
        M = int(steps.shape[2])
        size = piece.state_size(d, K, M, 1)
        if size != piece.state_size(d, K, M, 2):
            raise TypeError(f"{piece.name} keeps a history: no one-call state")
        # the state, then its copy: an update that diverges is put back (cpu.online_meta)
        self.buf = np.zeros(2 * size)
        start, self.choose, self.learn, self.choose_many, self.learn_many = \
            cpu.bandit_online(piece)
        self.meta = cpu.online_meta(spec.params, K, d, M, 1, MAX_ABS_DATA,
                                    spec.binary_rewards, size)
        self.state = piece.views(self.buf, d, K, M, 1)[0]
        self.sel_width = int(sel.shape[1])
        self._steps_shape = steps.shape[1:]
        self.steps_per_update = int(steps.shape[1])
        # a policy whose update draws nothing passes the same empty block every time
        self.steps = (np.zeros((1,) + self._steps_shape) if steps.shape[1] == 0 else None)
        start(self.meta, self.buf, np.zeros(d))
        self._normal_sel, self._normal_steps = self._draws_are_normals()
        self.bind(())
        self.holder = self.held_sel = self.held_steps = None
        self._stats = None
        self.n_seen = -1
        # the object whose attribute ``n_obs`` counts the holder's observations
        # (CoreDoor._attach): read by every call
        self.counter = None
        # an iterative engine's diagnostics of its schedule, ``(h, callable(h), steps a
        # update)``, written by each update (CoreDoor._observe); None: no schedule
        h = spec.step_size
        self.step_diagnostics = (None if self.steps is not None
                                 else (h, callable(h), self.steps_per_update))

    # -- the holder's arrays ---------------------------------------------------------------
    def attach(self, holder, n_obs):
        """Copy ``holder``'s arrays into the state and rebind them to its views; the
        statistics' ``eta`` multiples from them. ``n_obs``: the holder's observations."""
        bound, stats = ENGINE_STATES[self.spec.piece.name](holder, self.state)
        for obj, attr, view in bound:
            arr = getattr(obj, attr)
            if arr.shape != view.shape:
                raise ValueError(f"{type(obj).__name__}.{attr} has shape {arr.shape}, "
                                 f"not {view.shape}")
            view[...] = arr
            setattr(obj, attr, view)
        if holder is not self.holder:
            self._hold_draws(holder)
        self._stats, self.holder = stats, holder
        # the objects the arrays live on, as the holder reaches them (``engine.model``),
        # are bindings too: a replaced model keeps its old arrays. Found in the holder's
        # __dict__ only when one lives elsewhere (the engines, whose dict HeldDraws reads
        # anyway; not LinUCB, which holds its own arrays and whose attributes every call
        # reads: see _binding_check)
        others = [o for o, _, _ in bound if o is not holder]
        reached = tuple((holder, attr, obj) for attr, obj in
                        (vars(holder).items() if others else ())
                        if any(obj is o for o in others))
        self.bind(reached + tuple(bound))
        self.sync(holder, n_obs)

    def _hold_draws(self, holder):
        """The :class:`HeldDraws` of ``holder``'s streams for the draws that are plain
        standard normals (else None: drawn call by call)."""
        self.held_sel = (HeldDraws(holder, 0, (self.sel_width,)) if self._normal_sel
                         else None)
        self.held_steps = (HeldDraws(holder, 1, self._steps_shape) if self._normal_steps
                           else None)

    def bind(self, bindings):
        """Hold the state through ``bindings``, ``(object, attr, view)`` triples, and make
        :attr:`attached` their check."""
        self._bindings = bindings
        self.attached = _binding_check(bindings)

    def sync(self, holder, n_obs):
        """``eta V`` and ``eta b`` from ``V`` and ``b`` (:func:`vits_ref.kernels.linear.
        stats_add` keeps them beside the statistics), after the holder learnt
        ``n_obs`` observations through its own methods."""
        if self._stats is not None:
            V, etaV, b, eta_b = self._stats
            np.multiply(holder.eta, V, out=etaV)
            np.multiply(holder.eta, b, out=eta_b)
        self.n_seen = n_obs

    # -- draws -----------------------------------------------------------------------------
    def draw_select(self, rng, n=1):
        """``n`` rounds' selection draws ``(n, width)`` from the sampling stream ``rng``."""
        if not self.sel_width:
            return np.zeros((n, 0))
        if self._normal_sel:
            return rng.standard_normal((n, self.sel_width))
        _, sel, _ = next(draw_chunks(self.spec, Streams(rng, _NULL, init=_EMPTY), n,
                                     self.d, n))
        return np.ascontiguousarray(sel, dtype=np.float64)

    def draw_steps(self, rng, n=1):
        """``n`` updates' step draws ``(n, S, M, d)`` from the update stream ``rng``."""
        if self.steps is not None:
            return self.steps if n == 1 else np.zeros((n,) + self._steps_shape)
        if self._normal_steps:
            return rng.standard_normal((n,) + self._steps_shape)
        _, _, steps = next(draw_chunks(self.spec, Streams(_NULL, rng, init=_EMPTY), n,
                                       self.d, n))
        return np.ascontiguousarray(steps, dtype=np.float64)

    def _draws_are_normals(self):
        """Whether the spec's selection and step draws are the stream's standard normals
        in row order (the Thompson noise of :func:`vits_ref.drivers.fused.thompson_noise`),
        found by drawing three rounds both ways from equal generators: then a call draws
        them directly, without the spec's chunk iterator (a few microseconds a call)."""
        def same(which, shape):
            a, b = (np.random.Generator(np.random.PCG64(20251129)) for _ in range(2))
            streams = Streams(a, _NULL, init=_EMPTY) if which == 1 else Streams(
                _NULL, a, init=_EMPTY)
            got = next(draw_chunks(self.spec, streams, 3, self.d, 3))[which]
            want = b.standard_normal((3,) + shape)
            return (got.shape == want.shape and np.array_equal(got, want)
                    and a.bit_generator.state == b.bit_generator.state)
        return (bool(self.sel_width) and same(1, (self.sel_width,)),
                self.steps is None and same(2, self._steps_shape))


def engine_core_spec(engine):
    """The fused spec of ``engine`` if a :class:`Core` can hold its state, else None:
    LinTS, VITS and LMC-TS on the linear model with the default prior and a ``constant``
    or ``decayed`` schedule. LinTS keeps ``V`` (``track``) so that its engine's model can
    be written back."""
    spec = engine.fused()
    if spec is None or spec.piece.name not in ENGINE_STATES:
        return None
    if spec.piece.name == "lints":
        spec = dataclasses.replace(spec, params=spec.params._replace(track=True))
    return spec


class CoreDoor:
    """``select``/``update`` of a policy object through a :class:`Core`.

    A subclass names the object whose arrays make up its state (:meth:`_holder`: the
    engine, or the policy itself), its spec (:meth:`_core_spec`), its generators
    (:meth:`_streams`), its count of observations (:meth:`_observed`), what its own
    update counts besides the arrays (:meth:`_observe`), and its reference path
    (``_select_reference``, ``_update_reference``: the engine's own NumPy methods), which
    plays when no core can hold the state and while :attr:`compiled` is False
    (:func:`vits_ref.simulate`'s Python loop: the independent implementation the
    compiled loop is tested against).
    """

    #: play through the compiled state when the policy has one
    compiled = True
    _core = None
    #: the attribute that holds the holder (None: the door holds its own state)
    _holder_attr = None

    def _ready(self):
        """The core if it holds the state (the holder's arrays are its views), else
        None: the caller checks its data, then attaches one (:meth:`_attach`), so that a
        refused first call leaves the policy as it was."""
        core = self._core
        if core is None:
            return None
        # its arrays rebound, or another holder (``policy.engine = other``: the door's own
        # binding, see _attach): attach again
        if not core.attached():
            return None
        if core.counter.n_obs != core.n_seen:  # the holder learnt through its own methods
            core.sync(self._holder(), self._observed())
        return core

    def _counter(self):
        """The object whose attribute ``n_obs`` is :meth:`_observed` (read by every call;
        the bindings check that it is still the holder's)."""
        raise NotImplementedError

    def _attach(self, K):
        """A core of ``K`` arms holding the holder's state (its arrays rebound to it)."""
        spec = self._core_spec()
        if spec is None:
            self.compiled = False  # no compiled state for this policy: its own path
            return None
        core = self._core
        if (core is None or core.K != K or core.spec.piece is not spec.piece
                or core.spec.params != spec.params):
            core = Core(spec, K, self.dim)
        core.attach(self._holder(), self._observed())
        core.counter = self._counter()
        if self._holder_attr is not None:  # the door's binding to its holder, checked too
            core.bind(core._bindings + ((self, self._holder_attr, core.holder),))
        # not self.__dict__.pop: the policy's attributes, read by every call, stay fast
        # (_binding_check)
        held = getattr(self, "_held_stats", None)
        if held is not None:
            del self._held_stats
        if held is not None and core._stats is not None:
            _V, etaV, _b, eta_b = core._stats
            if held.shape == (etaV.size + eta_b.size,):  # as saved: see core_stats
                etaV.ravel()[...] = held[:etaV.size]
                eta_b[...] = held[etaV.size:]
        self._core = core
        return core

    @property
    def core_stats(self):
        """``eta V`` and ``eta b`` as the compiled state summed them (flattened), for
        ``save`` (:func:`vits_ref.inference.persist.save`): a loaded policy continues with
        them, bit for bit (made again from ``V`` and ``b`` they would agree to rounding
        only); empty without a compiled state."""
        core = self._core
        if (core is None or core._stats is None or not core.attached()
                or core.n_seen != self._observed()):
            return np.zeros(0)
        _V, etaV, _b, eta_b = core._stats
        return np.concatenate([etaV.ravel(), eta_b])

    @core_stats.setter
    def core_stats(self, value):
        # put in place by the next call, once the loaded engine is attached
        self._held_stats = np.asarray(value, dtype=np.float64) if np.size(value) else None

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_core", None)  # compiled calls: made again where it is loaded
        return state

    # -- calls -----------------------------------------------------------------------------
    def select(self, contexts):
        """Index of the arm to play for the ``(K, d)`` features ``contexts``."""
        core = self._ready()
        if core is None:
            if not self.compiled:
                return self._select_reference(contexts)
            X = _compiled_form(val.contexts(contexts, self.dim))
            core = self._attach(X.shape[0])
            if core is None:
                return self._select_reference(X)
            contexts = X
        arm = self._choose(core, contexts)
        if arm >= 0:
            return arm
        X, core = self._checked(contexts)  # raises the policy objects' error
        arm = self._choose(core, X)
        if arm < 0:  # checked contexts refused: a bug, not the user's
            raise RuntimeError(f"{self.name}: the compiled select refused checked data")
        return arm

    def _choose(self, core, contexts):
        """The compiled select, or -1 (the stream put back as it was) if it refused
        ``contexts``."""
        held = core.held_sel
        rng = None
        i = 0
        if held is not None:
            i = held.used
            if i < held.n:  # HeldDraws.block's fast case, inlined
                sel = held.rows
            else:
                sel, i = held.block()
        elif not core.sel_width:
            sel = _NO_SEL
        else:
            rng = self._streams()[0]
            saved = rng.bit_generator.state
            sel = core.draw_select(rng)
        try:
            arm = core.choose(core.meta, core.buf, contexts, sel, i)
        except (TypeError, ValueError):  # not a C-ordered float64 2-d array (or, a
            # ValueError, not an array Numba can type: an empty list)
            arm = -1
        if arm >= 0:
            if held is not None:
                held.used = i + 1
        elif rng is not None:  # a refused call leaves the stream as it was
            rng.bit_generator.state = saved
        return arm

    def update(self, contexts, arm, reward):
        """Feed back the reward of ``contexts[arm]``. Returns self."""
        core = self._ready()
        if core is None:
            if not self.compiled:
                return self._update_reference(contexts, arm, reward)
            X = _compiled_form(val.contexts(contexts, self.dim))
            arm = val.arm_index(arm, X.shape[0])
            reward = val.reward_value(reward)
            core = self._attach(X.shape[0])
            if core is None:
                return self._update_reference(X, arm, reward)
            contexts = X
        if (type(arm) not in _INTS or type(reward) not in _FLOATS
                or self._learn(core, contexts, arm, reward) != 1):
            # checked as the policy objects check (raising their errors), on a core of
            # the contexts' number of arms
            X, core = self._checked(contexts)
            arm = val.arm_index(arm, X.shape[0])
            reward = val.reward_value(reward)
            if self._learn(core, X, arm, reward) != 1:  # checked data refused: a bug
                raise RuntimeError(f"{self.name}: the compiled update refused checked data")
        return self

    def _learn(self, core, contexts, arm, reward):
        """The compiled update: 1, or the code of a refusal (the stream put back as it
        was); raises :class:`~vits_ref.errors.DivergenceError` if the state diverged
        (put back as it was by the compiled call)."""
        if arm < 0:  # -1 means "a row of features" to the compiled call (Online's), not
            # an arm: with one arm it would be taken; refused here, checked by the caller
            return -3
        n_obs = core.n_seen + 1
        held = core.held_steps
        rng = None
        i = 0
        if held is not None:
            i = held.used
            if i < held.n:
                steps = held.rows
            else:
                steps, i = held.block()
        elif core.steps is not None:
            steps = core.steps
        else:
            rng = self._streams()[1]
            saved = rng.bit_generator.state
            steps = core.draw_steps(rng)
        try:
            code = core.learn(core.meta, core.buf, contexts, arm, reward, steps, i, n_obs)
        except (TypeError, ValueError, OverflowError):  # not a C-ordered float64 2-d
            code = -5  # array (or not typable), or an arm beyond int64: refused, checked
        if code == 1:
            if held is not None:
                held.used = i + 1
            core.n_seen = n_obs
            self._observe(1, reward * reward)
            return 1
        if rng is not None:  # a refused or diverged update leaves the stream as it was
            rng.bit_generator.state = saved
        if code == 0:
            raise self._diverged(core, n_obs)
        return code

    def _diverged(self, core, n_obs):
        h = core.spec.step_size
        return DivergenceError(self._engine_name(), n_obs, h(n_obs) if callable(h) else h,
                               detail=core.spec.divergence_detail)

    def _checked(self, contexts):
        """``(X, core)``: ``contexts`` checked (:func:`vits_ref._validate.contexts`: the
        policy objects' errors) in the compiled calls' form (:func:`_compiled_form`), and a
        core of their number of arms."""
        X = _compiled_form(val.contexts(contexts, self.dim))
        core = self._core
        if X.shape[0] != core.K:
            core = self._attach(X.shape[0])
        return X, core

    def _select_many(self, X):
        """The arms of the rounds ``X`` (n, K, d), already checked, as ``n`` calls of
        :meth:`select`, in one compiled call; None if no core plays this policy."""
        n = X.shape[0]
        if not n or not self.compiled:
            return None
        core = self._ready()
        if core is None or X.shape[1] != core.K:
            core = self._attach(X.shape[1])
            if core is None:
                return None
        rng = self._streams()[0] if core.sel_width else None
        saved = rng.bit_generator.state if rng is not None else None
        sel = core.draw_select(rng, n) if rng is not None else np.zeros((n, 0))
        out = np.empty(n, dtype=np.int64)
        done = cpu.online_compiled(core.choose_many, "choose_many")(
            core.meta, core.buf, _compiled_form(X), sel, 0, out)
        if done != n:  # checked rounds refused: a bug, not the user's
            if rng is not None:
                rng.bit_generator.state = saved
            raise RuntimeError(f"{self.name}: the compiled select refused checked data")
        return out

    def _update_many(self, contexts, arms, rewards):
        """``update_many`` of a policy with ``_learn_rounds`` and ``_learn_rows``: the rounds
        ``(n, K, d)`` or the played arms' features ``(n, d)``, with their arms and
        rewards, checked whole (:func:`vits_ref._validate.logged_rounds`,
        :func:`~vits_ref._validate.logged_rows`), then learnt. Returns self."""
        X = val.float_array(contexts, "contexts", finite=False)
        if X.ndim == 2:
            return self._learn_rows(*val.logged_rows(X, arms, rewards, self.dim))
        return self._learn_rounds(*val.logged_rounds(X, arms, rewards, self.dim))

    def _learn_many(self, X, arms, rewards, n_arms=None, rows=False):
        """Learn the rounds ``X`` (n, K, d), ``arms``, ``rewards`` (checked) in order in
        one compiled call, as ``n`` calls of :meth:`update`; all or nothing: a round that
        diverges leaves the policy as it was before the call. With ``rows``, ``X`` (n, 1,
        d) holds the played arms' features with ``arms`` -1, learnt by the attached core
        or, if none is, by a new one of ``n_arms`` arms (one if None: the arms count only
        for a select, which attaches a core of its own arms). False if no core plays this
        policy."""
        n = arms.shape[0]
        if not n or not self.compiled:
            return False
        core = self._ready()
        if not rows:
            K = X.shape[1]
        elif core is not None:
            K = core.K
        else:
            K = n_arms or 1
        if core is None or K != core.K:
            core = self._attach(K)
            if core is None:
                return False
        rng = self._streams()[1] if core.steps is None else None
        saved_rng = rng.bit_generator.state if rng is not None else None
        steps = core.draw_steps(rng, n)
        saved = core.buf.copy()
        codes = np.zeros(1, dtype=np.int64)
        n0 = core.n_seen + 1
        rs = _compiled_form(rewards)
        done = cpu.online_compiled(core.learn_many, "learn_many")(
            batch_meta(core.meta), core.buf, _compiled_form(X),
            np.require(arms, np.int64, ["C", "W"]), rs, steps, 0, n0, codes)
        if done == n:
            core.n_seen += n
            r2 = 0.0
            for r in rs.tolist():  # summed one by one, as n updates sum them
                r2 += r * r
            self._observe(n, r2)
            return True
        core.buf[...] = saved
        if rng is not None:
            rng.bit_generator.state = saved_rng
        if codes[0] == 0:
            raise self._diverged(core, n0 + done)
        raise RuntimeError(f"{self.name}: the compiled update refused checked data "
                           f"(code {int(codes[0])} at round {done})")


_NO_SEL = np.zeros((1, 0))


def batch_meta(meta):
    """``meta`` for a batch learnt in one compiled call whose caller copied the state
    once before it: the per-update copy off (``keep`` 0, :func:`vits_ref.drivers.cpu.
    online_meta`), which costs a state's length of memory traffic a row (LinTS at d = 20:
    about 3 of the 5 us of a row). A round that diverges then leaves the state NaN: the
    caller puts its copy back and, to keep the rounds before it, learns them again (the
    same draws: the same state, bit for bit)."""
    out = meta.copy()
    out[cpu.bandit._KEEP] = 0.0
    return out
#: where an engine keeps its sampling and update streams (behind the properties
#: ``_rng_sample`` and ``_rng_update``, which settle the held draws first)
_RAW_STREAMS = ("_sample_stream", "_update_stream")


def _compiled_form(X):
    """``X`` as the one type the compiled calls take: a C-ordered, writeable float64 array
    (a copy of a read-only or strided one; a read-only array is another Numba type)."""
    return np.require(X, np.float64, ["C", "W"])
#: the types an arm and a reward may have to go to the compiled call unconverted (it
#: checks their values)
_INTS, _FLOATS = (int, np.int64), (float, np.float64)
