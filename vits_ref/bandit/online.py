"""A policy deployed online at the speed of its compiled round: :class:`Online`.

A user who deploys a policy calls ``select`` when a request arrives and ``update`` when the
reward comes back. Through the policy objects (``ThompsonSampling(engine).select``) each
call validates in NumPy and updates the engine's Python state: about 50x the compiled
round for LinTS. :class:`Online` drives the policy's fused bodies instead (the
:class:`~vits_ref.drivers.fused.FusedSpec` that :func:`vits_ref.simulate`'s compiled
loop runs, :mod:`vits_ref.kernels.bandit`): one compiled call per ``select`` and one per
``update``, on a state buffer it keeps, with the data checked inside the compiled call
(finite, magnitude at most :data:`vits_ref._validate.MAX_ABS_DATA`) and no conversion of
arrays that are already float64.

Randomness: the policy's seed gives the same streams as ``policy.fresh(seed)`` and as the
fused loop's run with that policy seed (:func:`vits_ref._seeding.policy_seed` of the run's
seed), drawn ``block`` rounds ahead (:func:`vits_ref.drivers.fused.draw_chunks`: the same
rows whatever the block). So a run of ``select``/``update`` on a realisation's rounds
plays the arms of :func:`vits_ref.simulate`'s run (``tests/test_online.py``).
The ``t``-th ``select`` uses the ``t``-th selection draw and the ``t``-th ``update`` the
``t``-th update draws and ``n_obs = t``: feedback that arrives late is applied when it
arrives, in the order it arrives.
"""

import copy

import numpy as np

from .. import _validate as val
from .._seeding import Streams, engine_streams
from .._seeding import policy_seed as _policy_seed
from .._validate import MAX_ABS_DATA
from ..drivers import cpu
from ..drivers.fused import draw_chunks
from ..errors import DivergenceError
from ..inference.persist import Persistent
from ._core import _EMPTY, _NULL, ENGINE_STATES, batch_meta

__all__ = ["Online"]

_F64_SCALAR = np.float64  # a reward read from a float64 array: typed as a float by Numba

#: More rounds than any run is played for: the streams of a policy without a horizon.
_ENDLESS = 2 ** 62


def _n_obs(policy):
    """Observations the policy (or its engine) has learnt, as far as it says."""
    n = getattr(policy, "n_obs", None)
    if n is None:
        n = getattr(getattr(policy, "engine", None), "n_obs", 0)
    return int(n or 0)


class Online(Persistent):
    """``policy`` played one decision at a time by its compiled bodies.

    Parameters
    ----------
    policy : policy object or str
        A policy with a fused loop (``policy.fused()`` is not None: LinTS, LinUCB, random,
        Thompson sampling over VITS, LMC-TS or Laplace on the linear or logistic model
        with the ``constant`` or ``decayed`` schedule), or a name of
        :data:`vits_ref.bandit.simulate.POLICY_NAMES` (with ``dim``): the policy
        :func:`vits_ref.make_policy` builds, with the hyperparameters of
        :data:`vits_ref.bandit.simulate.POLICY_DEFAULTS` (``"lints"``: ``eta = lam = 10``,
        as in the simulations, not the engine's own defaults of 1) overridden by
        ``options``. A policy object at its prior is a specification: the state starts at
        the prior, with the streams of ``seed``. One that has learnt (LinTS, VITS, LMC-TS
        on the linear model, LinUCB) is taken over: its state, its observation count and
        copies of its generators, so that the ``Online`` makes the decisions the policy
        would make next (``seed`` must then be None); one whose state keeps a history
        (the logistic model's) is refused (save and load an ``Online`` instead:
        :meth:`save`).
    n_arms : int
        Arms per decision: ``select`` takes ``(n_arms, dim)`` contexts.
    seed : int, SeedSequence or None
        The policy's seed (as ``policy.fresh(seed)``).
    dim : int, optional
        The feature dimension, for a policy given by name.
    horizon : int, optional
        The most updates the state can take. Needed only by policies whose state keeps a
        history (the logistic model's pieces); others take any number.
    block : int, default 256
        Rounds of randomness drawn at a time (the numbers do not depend on it).
    **options
        Hyperparameters of a policy given by name (``eta``, ``lam``, ``step_size``, ...;
        :func:`vits_ref.make_policy`).

    Notes
    -----
    Bad data are refused with a ``ValueError`` or ``TypeError`` naming the argument before
    the state changes, as the policy objects refuse them. A diverging update raises
    :class:`~vits_ref.errors.DivergenceError` and leaves the state as it was before the
    call; for a state with a history (the logistic pieces: copying it would cost
    O(horizon) an update) the object refuses every later call instead.

    Examples
    --------
    >>> import numpy as np
    >>> import vits_ref as vr
    >>> online = vr.Online("lints", n_arms=3, dim=2, seed=0)
    >>> online
    Online('LinTS', eta=10.0, lam=10.0, n_arms=3, dim=2, n_selects=0, n_updates=0)
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> arm = online.select(X)
    >>> online.update(X, arm, 1.0).n_updates
    1
    """

    #: for vits_ref.load: the constructor's arguments (and seed) and the state
    _persist_params = {"policy": "policy", "n_arms": "n_arms", "horizon": "_horizon_arg",
                       "block": "_block"}
    _persist_state = ("_buf", "n_selects", "n_updates", "_n0", "_rng_sample", "_rng_update",
                      "_init_noise", "_drawn", "_held_first", "_held_sel", "_held_steps",
                      "_broken")
    #: the blocks of draws held when saved: as many rows as were held
    _persist_growing = ("_held_sel", "_held_steps")
    #: for vits_ref.load's size policy: the policy's hyperparameters that size the state
    _persist_nested = ("dim", "model", "n_mc")

    @staticmethod
    def _persist_cost(params):
        """vits_ref.load's size policy (:mod:`vits_ref.inference.persist`): the default
        share (the arms, a block of draws, a copy of the policy's state), and where the
        policy's compiled state keeps a history (the logistic model's pieces: a ``model``
        named ``"logistic"`` or a ``Logistic`` object) its state for ``horizon`` updates,
        the largest of those pieces' own ``state_size`` (``n_mc`` draws a step: the
        policy's, else the most of any named policy's defaults)."""
        from ..inference.persist import default_cost, size_ints
        from ..kernels import logistic_bandit as klogb
        from .simulate import POLICY_DEFAULTS

        own = default_cost(params)
        if params.get("model") not in ("logistic", "Logistic"):
            return own
        d, K, T, M = (size_ints(params.get(k)) for k in ("dim", "n_arms", "horizon", "n_mc"))
        if not (len(d) == len(K) == len(T) == 1):
            return own  # the constructor refuses it before allocating
        if len(M) != 1:
            M = [max(1, *(p.get("n_mc", 1) for p in POLICY_DEFAULTS.values()))]
        return own + max(p.state_size(d[0], K[0], M[0], T[0])
                         for p in (klogb.VITS_PIECE, klogb.LANGEVIN_PIECE,
                                   klogb.LAPLACE_PIECE))

    def __init__(self, policy, n_arms, seed=None, dim=None, horizon=None, block=256,
                 **options):
        if isinstance(policy, str):
            from .simulate import make_policy

            if dim is None:
                raise ValueError("dim is needed with a policy given by name")
            policy = make_policy(policy, val.positive_int(dim, "dim"), **options)
        elif options:
            raise TypeError(f"options {sorted(options)} apply to a policy name only; "
                            f"{type(policy).__name__} is already built")
        fused = getattr(policy, "fused", None)
        spec = fused() if fused is not None else None
        if spec is None:
            raise TypeError(f"{getattr(policy, 'name', type(policy).__name__)} has no "
                            "compiled round on this model/schedule: call its select and "
                            "update directly")
        learnt = _n_obs(policy)
        if learnt and spec.piece.name not in ENGINE_STATES:
            raise ValueError(f"policy has learnt {learnt} observations, and {spec.piece.name} "
                             "keeps a history that an Online does not take over: give it the "
                             "policy's specification (policy.fresh(seed)) and its feedback, "
                             "or save and load an Online")
        if learnt and seed is not None:
            raise ValueError("seed must be None for a policy that has learnt: the Online "
                             "continues the policy's own random streams")
        self.policy = policy
        self.spec = spec
        self.seed = seed
        self.name = getattr(policy, "name", type(policy).__name__)
        engine = getattr(policy, "engine", None)
        self.engine_name = getattr(engine, "name", self.name)
        self.dim = d = val.positive_int(policy.dim, "policy.dim")
        self.n_arms = K = val.positive_int(n_arms, "n_arms")
        self._block = block = val.positive_int(block, "block")
        _, sel, steps = spec.draw(np.random.SeedSequence(0), 1, d)
        self._M = M = int(steps.shape[2])
        size = spec.piece.state_size
        grows = size(d, K, M, 1) != size(d, K, M, 2)
        if horizon is None and grows:
            raise ValueError(f"horizon is needed for {self.name}: its state keeps a history "
                             "of every update (give the most updates it will take)")
        self._horizon_arg = None if horizon is None else val.positive_int(horizon, "horizon")
        self.horizon = _ENDLESS if horizon is None else self._horizon_arg
        self._T = self.horizon if grows else 1
        n = size(d, K, M, self._T)
        # a state without a history is copied before each update and put back if the
        # update diverges (the second half of the buffer); zeros: a saved buffer holds no
        # leftover bytes
        keep = 0 if grows else n
        self._buf = np.zeros(2 * n if keep else n)
        (self._start, self._choose, self._learn, self._choose_many,
         self._learn_many) = cpu.bandit_online(spec.piece)
        # sizes, bound and parameters in one array: see cpu.online_meta
        self._meta = cpu.online_meta(spec.params, K, d, M, self._T, MAX_ABS_DATA,
                                     spec.binary_rewards, keep)
        #: observations learnt before the first update (a trained policy's)
        self._n0 = learnt
        streams = getattr(policy, "_streams", None)
        if learnt and streams is not None and streams()[0] is not None:
            # the policy's generators, copied: the Online draws what the policy would next
            self._rng_sample, self._rng_update = (copy.deepcopy(g) for g in streams())
            given = np.zeros(d)  # the initial state is the policy's, not drawn
        else:
            self._rng_sample, self._rng_update = engine_streams(val.as_seed_sequence(seed))
            given = np.zeros(d) if learnt else None
        self._chunk_streams(self.horizon, init=given)
        self.n_selects = self.n_updates = 0
        init, _, steps0 = next(self._chunks[1])  # the update stream: the initial state first
        _, sel0, _ = next(self._chunks[0])
        self._init_noise = np.ascontiguousarray(init, dtype=np.float64)
        self._sel = {0: np.ascontiguousarray(sel0, dtype=np.float64)}
        self._steps = {0: np.ascontiguousarray(steps0, dtype=np.float64)}
        #: the blocks drawn from each stream: selection, update
        self._n_drawn = [1, 1]
        self._start(self._meta, self._buf, self._init_noise)
        self._shape = (K, d)
        if learnt:
            self._take_state(policy)
        self._broken = None
        # what save writes of the blocks held (empty but in save: see _held)
        self._held_first = 0
        self._held_sel = np.zeros((0,) + self._sel[0].shape[1:])
        self._held_steps = np.zeros((0,) + self._steps[0].shape[1:])
        self._current()

    def _current(self):
        """The blocks of draws in use, the draw count where each starts and where it ends
        (at the horizon at the latest): a select or update inside its block reads three
        attributes, nothing else."""
        for i, (which, t) in enumerate((("sel", self.n_selects), ("steps", self.n_updates))):
            b = min(t // self._block, self._n_drawn[i] - 1)
            rows = (self._sel if which == "sel" else self._steps)[b]
            base = b * self._block
            setattr(self, f"_{which}_rows", rows)
            setattr(self, f"_{which}_base", base)
            setattr(self, f"_{which}_end", min(base + self._block, self.horizon))

    def _views(self):
        """The state's arrays: views of the buffer's first half (the piece's ``views``)."""
        K, d = self._shape
        return self.spec.piece.views(self._buf, d, K, self._M, self._T)[0]

    def _take_state(self, policy):
        """The state of ``policy``, which has learnt, copied in: its engine's arrays (or
        LinUCB's own), and the sums ``eta V`` and ``eta b`` as its compiled state summed
        them (else made from ``V`` and ``b``: the same to rounding)."""
        holder = getattr(policy, "engine", policy)
        state = self._views()
        bound, stats = ENGINE_STATES[self.spec.piece.name](holder, state)
        for obj, attr, view in bound:
            view[...] = getattr(obj, attr)
        if stats is not None:
            V, etaV, b, eta_b = stats
            held = getattr(policy, "core_stats", np.zeros(0))
            if held.size == etaV.size + eta_b.size:
                etaV.ravel()[...] = held[:etaV.size]
                eta_b[...] = held[etaV.size:]
            else:
                np.multiply(holder.eta, V, out=etaV)
                np.multiply(holder.eta, b, out=eta_b)

    def _engine(self):
        """A copy of the policy's engine (or LinUCB) holding this object's state."""
        holder = copy.deepcopy(getattr(self.policy, "engine", self.policy))
        if self.spec.piece.name not in ENGINE_STATES:
            return None
        bound, _ = ENGINE_STATES[self.spec.piece.name](holder, self._views())
        for obj, attr, view in bound:
            setattr(obj, attr, view.copy())
        return holder

    @property
    def mean(self):
        """The posterior mean (LinTS, VITS), or LinUCB's estimate ``inv(V) b``."""
        eng = self._engine()
        if eng is None or not hasattr(eng, "mean") and not hasattr(eng, "Vinv"):
            raise TypeError(f"{self.name} has no posterior mean")
        if hasattr(eng, "Vinv"):
            return eng.Vinv @ eng.b
        try:
            return eng.mean
        except (AttributeError, NotImplementedError):
            raise TypeError(f"{self.name} has no posterior mean") from None

    @property
    def cov(self):
        """The posterior covariance (LinTS, VITS)."""
        eng = self._engine()
        cov = getattr(type(eng), "cov", None) if eng is not None else None
        if cov is None:
            raise TypeError(f"{self.name} has no posterior covariance")
        return eng.cov

    def predict_expectations(self, contexts):
        """Every arm's expected reward under :attr:`mean`, without a draw: ``contexts``
        (n, n_arms, dim) gives (n, n_arms), one round (n_arms, dim) gives (n_arms,)."""
        X = val.float_array(contexts, "contexts", finite=True)
        one = X.ndim == 2
        X = X[None] if one else X
        if X.ndim != 3 or X.shape[1:] != self._shape:
            raise ValueError(f"contexts must have shape (n, {self.n_arms}, {self.dim}) or "
                             f"({self.n_arms}, {self.dim}), got {np.shape(contexts)}")
        out = X @ self.mean
        return out[0] if one else out

    @classmethod
    def for_run(cls, policy, n_arms, run_seed, **kw):
        """The online policy of :func:`vits_ref.simulate`'s run seeded by ``run_seed``
        (the child ``r`` of the root seed): its policy seed is the run's child 1."""
        return cls(policy, n_arms, seed=_policy_seed(run_seed), **kw)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.spec.params._asdict().items()
                           if k != "track")
        return (f"Online({self.name!r}{', ' + params if params else ''}, "
                f"n_arms={self.n_arms}, dim={self.dim}, n_selects={self.n_selects}, "
                f"n_updates={self.n_updates})")

    # -- the draws -------------------------------------------------------------------------
    @property
    def _drawn(self):
        """The blocks drawn, as a saved file counts them: both streams' (the stream that
        is behind is written drawn ahead to there, :meth:`save`)."""
        return max(self._n_drawn)

    @_drawn.setter
    def _drawn(self, value):  # a loaded file's: both streams stand there
        self._n_drawn = [value, value]

    def _chunk_streams(self, n_rounds, init):
        """The two streams' draws by blocks, each alone (the other stream replaced by
        :data:`~vits_ref.bandit._core._NULL`, which draws zeros and advances nothing): the
        selection draws from the sampling stream, the update draws (after the initial
        state's, unless ``init`` gives them) from the update stream, each stream consumed
        in the order of the joint draw (:func:`vits_ref.drivers.fused.thompson_noise_chunks`).
        Each is drawn as its own counter reaches it, so that selects far ahead of updates
        (a service that only predicts) hold one block of update draws, not one per block
        of selects, and the reverse."""
        spec, d, B = self.spec, self.dim, self._block
        self._chunks = (
            draw_chunks(spec, Streams(self._rng_sample, _NULL, init=_EMPTY), n_rounds, d, B),
            draw_chunks(spec, Streams(_NULL, self._rng_update, init=init), n_rounds, d, B))

    def _rows(self, which, t):
        """Block ``t // block`` of the selection (``which`` 0) or update (1) draws,
        drawing that stream ahead as needed and dropping the blocks its counter has
        passed."""
        b = t // self._block
        store = self._steps if which else self._sel
        while b >= self._n_drawn[which]:
            rows = next(self._chunks[which])[1 + which]
            # the compiled calls take C-ordered float64 blocks only (no copy if they are)
            store[self._n_drawn[which]] = np.ascontiguousarray(rows, dtype=np.float64)
            self._n_drawn[which] += 1
        for old in [old for old in store if old < b]:
            del store[old]
        return store[b]

    def _next_sel(self, t):
        """Make the block holding the ``t``-th selection draw current."""
        if t >= self.horizon:
            raise ValueError(f"the streams hold horizon={self.horizon} rounds; {t} selects "
                             "have used them")
        self._sel_rows = self._rows(0, t)
        self._sel_base = t - t % self._block
        self._sel_end = min(self._sel_base + self._block, self.horizon)

    def _next_steps(self, t):
        """Make the block holding the ``t``-th update draws current."""
        if t >= self.horizon:
            raise ValueError(f"the state holds horizon={self.horizon} updates; it has them")
        self._steps_rows = self._rows(1, t)
        self._steps_base = t - t % self._block
        self._steps_end = min(self._steps_base + self._block, self.horizon)

    # -- data ------------------------------------------------------------------------------
    def _contexts(self, X, name="contexts"):
        """``contexts`` as the compiled calls take them: a C-ordered, aligned, writeable
        float64 array (a copy only if it is not one), of shape (n_arms, dim); complex,
        object and string arrays refused as the policy objects refuse them."""
        X = np.require(val.float_array(X, name, finite=False), np.float64, ["C", "A", "W"])
        if X.shape != self._shape:
            raise ValueError(f"{name} must have shape {self._shape} (n_arms, dim), got "
                             f"{X.shape}")
        return X

    def _features(self, X, arm):
        """``(X, arm)`` as the compiled update takes them: the contexts (n_arms, dim) by
        :meth:`_contexts`, or the arm's features (dim,) as one row, with ``arm = -1``."""
        if np.ndim(X) == 2:
            return self._contexts(X), arm
        x = np.require(val.float_array(X, "contexts", finite=False), np.float64,
                       ["C", "A", "W"])
        if x.shape != (self.dim,):
            raise ValueError(f"contexts must have shape {self._shape} or ({self.dim},), "
                             f"got {x.shape}")
        return x.reshape(1, self.dim), -1

    def _arm(self, arm):
        """``arm`` as a Python int in ``[0, n_arms)`` (refused as the policy objects do)."""
        if type(arm) is not int:
            arm = val.arm_index(arm, self.n_arms)
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm}")
        return arm

    # -- decisions -------------------------------------------------------------------------
    def select(self, contexts):
        """The arm to play for ``contexts`` (n_arms, dim)."""
        t = self.n_selects
        if t == self._sel_end:  # the counters only grow: past this block's last draw
            self._next_sel(t)
        i = t - self._sel_base
        # the data unchecked here: the compiled call takes a C-ordered float64 2-d array
        # only (anything else is a TypeError at once) and checks its shape and values
        try:
            arm = self._choose(self._meta, self._buf, contexts, self._sel_rows, i)
        except (TypeError, ValueError):  # ValueError: Numba cannot type it ([])
            self._usable()
            arm = self._choose(self._meta, self._buf, self._contexts(contexts),
                               self._sel_rows, i)
        if arm < 0:
            self._usable()
            if arm == -2:
                self._contexts(contexts)  # raises the shape's error
            raise ValueError(f"contexts must be finite with entries of magnitude <= "
                             f"{MAX_ABS_DATA:g}")
        self.n_selects = t + 1
        return arm

    def select_many(self, contexts):
        """The arms for a batch of requests, ``contexts`` (n, n_arms, dim), decided in
        order as ``n`` calls of :meth:`select` would (the same draws, the same arms), in
        one compiled call per block of randomness. Returns an (n,) int array. A request
        with non-finite or too large contexts raises a ValueError naming it; the requests
        before it are decided (``n_selects`` counts them)."""
        self._usable()
        Xs = np.require(val.float_array(contexts, "contexts", finite=False), np.float64,
                        ["C", "A", "W"])
        if Xs.ndim != 3 or Xs.shape[1:] != self._shape:
            raise ValueError(f"contexts must have shape (n, {self._shape[0]}, "
                             f"{self._shape[1]}), got {Xs.shape}")
        choose_many = cpu.online_compiled(self._choose_many, "choose_many")
        out = np.empty(Xs.shape[0], dtype=np.int64)
        i = 0
        while i < Xs.shape[0]:
            t = self.n_selects
            if t == self._sel_end:
                self._next_sel(t)
            j = t - self._sel_base
            n = min(Xs.shape[0] - i, self._sel_end - t)  # the rest of this block's draws
            done = choose_many(self._meta, self._buf, Xs[i:i + n], self._sel_rows, j,
                               out[i:i + n])
            self.n_selects = t + done
            if done < n:
                raise ValueError(f"contexts of request {i + done} must be finite with "
                                 f"entries of magnitude <= {MAX_ABS_DATA:g}")
            i += n
        return out

    # -- feedback --------------------------------------------------------------------------
    def update(self, contexts, arm, reward):
        """Learn from ``reward`` of ``arm`` played at ``contexts`` (n_arms, dim), or at the
        arm's features (dim,). Returns self.

        One observation per call, with the step schedule of one observation (an iterative
        engine's ``K_t`` steps at ``t = n_updates``), as the simulation loop learns: a batch
        of feedback is these calls in the order it arrives (:meth:`update_many`)."""
        if type(arm) is not int or not 0 <= arm < self.n_arms:
            arm = self._arm(arm)
        if type(reward) is not float and type(reward) is not _F64_SCALAR:
            reward = val.reward_value(reward)
        t = self.n_updates
        if t == self._steps_end:  # and refused at the horizon
            self._next_steps(t)
        i = t - self._steps_base
        n_obs = self._n0 + t + 1
        # as in select: the compiled call refuses other types at once and checks the rest
        try:
            code = self._learn(self._meta, self._buf, contexts, arm, reward,
                               self._steps_rows, i, n_obs)
        except (TypeError, ValueError):
            self._usable()
            X, a = self._features(contexts, arm)
            code = self._learn(self._meta, self._buf, X, a, reward, self._steps_rows, i,
                               n_obs)
        if code != 1:
            self._refused(code, contexts, arm, reward, n_obs)
        self.n_updates = t + 1
        return self

    def update_many(self, contexts, arms, rewards):
        """Learn from ``n`` rounds of feedback in order, as ``n`` calls of :meth:`update`
        would (the same draws, the same state bit for bit), in one compiled call per block
        of randomness. Returns self.

        Parameters
        ----------
        contexts : (n, n_arms, dim) or (n, dim) array
            Each round's contexts, or the played arms' features.
        arms : (n,) integers in ``[0, n_arms)``
        rewards : (n,) real array

        Raises
        ------
        ValueError, TypeError
            A round whose data are refused, naming it; the rounds before it are learnt
            (``n_updates`` counts them) and it leaves no trace.
        DivergenceError
            A round whose update diverged, as :meth:`update` (the rounds before it are
            learnt).
        """
        self._usable()
        Xs = np.require(val.float_array(contexts, "contexts", finite=False), np.float64,
                        ["C", "A", "W"])
        n = Xs.shape[0] if Xs.ndim else 0
        rounds = Xs.ndim == 3 and Xs.shape[1:] == self._shape
        if not (rounds or (Xs.ndim == 2 and Xs.shape[1] == self.dim)):
            raise ValueError(f"contexts must have shape (n, {self.n_arms}, {self.dim}) or "
                             f"(n, {self.dim}), got {Xs.shape}")
        a = val.logged_arms(arms, n, self.n_arms)
        r = val.float_array(rewards, "rewards", ndim=1, finite=False)
        if r.shape != (n,):
            raise ValueError(f"rewards must have shape ({n},) (one per round of contexts), "
                             f"got {r.shape}")
        if rounds:
            a = np.ascontiguousarray(a, dtype=np.int64)
        else:  # the played arms' features: one row each, arm -1 (cpu.bandit_online)
            Xs, a = Xs.reshape(n, 1, self.dim), np.full(n, -1, dtype=np.int64)
        learn_many = cpu.online_compiled(self._learn_many, "learn_many")
        codes = np.zeros(1, dtype=np.int64)
        # the state copied once a block of rows, not before each row (batch_meta)
        keep = int(self._meta[cpu.bandit._KEEP])
        meta = batch_meta(self._meta) if keep else self._meta
        i = 0
        while i < n:
            t = self.n_updates
            if t == self._steps_end:
                self._next_steps(t)
            j = t - self._steps_base
            m = min(n - i, self._steps_end - t)  # the rest of this block's draws
            saved = self._buf[:keep].copy() if keep else None
            args = (self._steps_rows, j, self._n0 + t + 1)
            done = learn_many(meta, self._buf, Xs[i:i + m], a[i:i + m], r[i:i + m], *args,
                              codes)
            if done < m and keep and codes[0] == 0:  # diverged: back to the row before
                self._buf[:keep] = saved
                again = learn_many(meta, self._buf, Xs[i:i + done], a[i:i + done],
                                   r[i:i + done], *args, np.zeros(1, dtype=np.int64))
                if again != done:
                    raise RuntimeError(f"{self.name}: learning rounds {i} to {i + done} "
                                       "again did not give the same state")
            self.n_updates = t + done
            if done < m:
                k = i + done
                try:
                    self._refused(int(codes[0]), Xs[k] if rounds else Xs[k, 0],
                                  int(a[k]) if rounds else int(arms[k]), float(r[k]),
                                  self._n0 + t + done + 1)
                except DivergenceError:
                    raise
                except (ValueError, TypeError) as err:
                    raise type(err)(f"round {k}: {err}") from None
            i += m
        return self

    def _refused(self, code, contexts, arm, reward, n_obs):
        """The error of a compiled update's ``code``
        (:func:`vits_ref.drivers.cpu.bandit_online`)."""
        if code == 0:
            h = self.spec.step_size
            err = DivergenceError(self.engine_name, n_obs, h(n_obs) if callable(h) else h,
                                  detail=self.spec.divergence_detail)
            if not self._meta[cpu.bandit._KEEP]:
                # a state with a history is not copied: it is left as the update left it
                self._broken = (f"its state diverged at update {n_obs} ({err}); a state "
                                "with a history is not rolled back: load a saved Online or "
                                "start a new one")
                self._choose = self._learn = _refuse
            raise err
        if code == -3:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm}")
        if code == -5:
            self._features(contexts, arm)  # raises the shape's error
        if code == -4:
            raise ValueError(f"reward must be 0 or 1 for the logistic model, got {reward}")
        what = "reward" if code == -1 else "contexts"
        raise ValueError(f"{what} must be finite with magnitude <= {MAX_ABS_DATA:g}")

    def _usable(self):
        """Raise the error of a state that diverged without a roll-back."""
        if self._broken is not None:
            raise ValueError(f"this Online cannot be used: {self._broken}")

    # -- save and load ---------------------------------------------------------------------
    def save(self, path):
        """Write this object to ``path`` (:func:`vits_ref.inference.persist.save`: an
        ``.npz``, no pickle): its state, its streams and the draws it holds, so that
        :func:`vits_ref.load` gives an ``Online`` whose next decisions and updates are this
        one's, bit for bit.

        Returns
        -------
        path
        """
        B = self._block
        # the file holds both streams' blocks [first, drawn) and each stream's generator
        # after block drawn - 1: the stream that is behind is drawn ahead to there on a
        # copy (this object draws those blocks itself when its counter gets there), and
        # the blocks that a counter has passed and dropped are written as zeros (never read)
        drawn = max(self._n_drawn)
        first = min(min(self.n_selects, self.n_updates) // B, drawn - 1)
        live = self._rng_sample, self._rng_update
        held = []
        for which, store in enumerate((self._sel, self._steps)):
            width = (self._held_steps if which else self._held_sel).shape[1:]
            rows = [store[b] if b in store else np.zeros((min(B, self.horizon - b * B),)
                                                          + width)
                    for b in range(first, self._n_drawn[which])]
            if self._n_drawn[which] < drawn:
                rng = copy.deepcopy(live[which])
                ahead = Streams(_NULL, rng, init=_EMPTY) if which else Streams(
                    rng, _NULL, init=_EMPTY)
                n = min(drawn * B, self.horizon) - self._n_drawn[which] * B
                rows += [chunk[1 + which] for chunk in draw_chunks(self.spec, ahead, n,
                                                                   self.dim, B)]
                setattr(self, ("_rng_sample", "_rng_update")[which], rng)
            held.append(np.concatenate(rows))
        self._held_first = first
        self._held_sel, self._held_steps = held
        try:
            return super().save(path)
        finally:
            self._rng_sample, self._rng_update = live
            self._held_sel = self._held_sel[:0]
            self._held_steps = self._held_steps[:0]

    def _persist_restored(self):
        """After :func:`vits_ref.load` put the saved state in place: check that the
        counters, the held draws and the buffer fit together, and continue the streams."""
        B, first, drawn = self._block, self._held_first, self._drawn
        if not (isinstance(first, int) and isinstance(drawn, int) and 0 <= first < drawn
                and (drawn - 1) * B < self.horizon):
            raise ValueError(f"the held blocks [{first}, {drawn}) do not fit block={B} and "
                             f"horizon={self.horizon}")
        for name in ("n_selects", "n_updates"):
            t = getattr(self, name)
            if not (isinstance(t, int) and first * B <= t <= min(drawn * B, self.horizon)):
                raise ValueError(f"{name}={t!r} is outside the held draws "
                                 f"[{first * B}, {min(drawn * B, self.horizon)}]")
        # the first block held is both counters' lower block, or the last drawn where
        # both counters stand at its end (the next block not drawn yet)
        if min(min(self.n_selects, self.n_updates) // B, drawn - 1) > first:
            raise ValueError("the held draws start before both counters' block")
        sizes = [min(B, self.horizon - b * B) for b in range(first, drawn)]
        if (self._held_sel.shape[0] != sum(sizes)
                or self._held_steps.shape[0] != sum(sizes)):
            raise ValueError(f"the held draws have {self._held_sel.shape[0]} and "
                             f"{self._held_steps.shape[0]} rows, not {sum(sizes)}")
        if self._broken is not None and not isinstance(self._broken, str):
            raise ValueError("an invalid divergence record")
        bounds = np.cumsum([0] + sizes)
        self._sel = {b: np.ascontiguousarray(self._held_sel[lo:hi])
                     for b, lo, hi in zip(range(first, drawn), bounds[:-1], bounds[1:],
                                          strict=True)}
        self._steps = {b: np.ascontiguousarray(self._held_steps[lo:hi])
                       for b, lo, hi in zip(range(first, drawn), bounds[:-1], bounds[1:],
                                          strict=True)}
        self._held_sel = self._held_sel[:0]
        self._held_steps = self._held_steps[:0]
        for store, t in ((self._sel, self.n_selects), (self._steps, self.n_updates)):
            for b in range(first, min(t // B, drawn - 1)):  # passed: never read again
                del store[b]
        # the streams continued after the blocks held (the initial state drawn already)
        self._chunk_streams(self.horizon - drawn * B, init=self._init_noise)
        if self._broken is not None:
            self._choose = self._learn = _refuse
        self._current()


def _refuse(*args):
    """The compiled calls of an Online whose state diverged without a roll-back: every
    call fails here, and the Online raises its error (:meth:`Online._usable`)."""
    raise TypeError("diverged")
