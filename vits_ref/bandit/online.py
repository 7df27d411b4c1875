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

import operator

import numpy as np

from .. import _validate as val
from .._seeding import policy_seed as _policy_seed
from .._validate import MAX_ABS_DATA
from ..drivers import cpu
from ..drivers.fused import draw_chunks
from ..errors import DivergenceError

__all__ = ["Online"]

_F64_SCALAR = np.float64  # a reward read from a float64 array: typed as a float by Numba

#: More rounds than any run is played for: the streams of a policy without a horizon.
_ENDLESS = 2 ** 62


class Online:
    """``policy`` played one decision at a time by its compiled bodies.

    Parameters
    ----------
    policy : policy object or str
        A policy with a fused loop (``policy.fused()`` is not None: LinTS, LinUCB, random,
        Thompson sampling over VITS, LMC-TS or Laplace on the linear or logistic model
        with the ``constant`` or ``decayed`` schedule), or a name of
        :data:`vits_ref.bandit.simulate.POLICY_NAMES` (with ``dim``). Used as a
        specification: the state starts at its prior.
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

    Examples
    --------
    >>> import numpy as np
    >>> import vits_ref as vr
    >>> online = vr.Online("lints", n_arms=3, dim=2, seed=0)
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> arm = online.select(X)
    >>> online.update(X, arm, 1.0).n_updates
    1
    """

    def __init__(self, policy, n_arms, seed=None, dim=None, horizon=None, block=256):
        if isinstance(policy, str):
            from .simulate import make_policy

            if dim is None:
                raise ValueError("dim is needed with a policy given by name")
            policy = make_policy(policy, val.positive_int(dim, "dim"))
        fused = getattr(policy, "fused", None)
        spec = fused() if fused is not None else None
        if spec is None:
            raise TypeError(f"{getattr(policy, 'name', type(policy).__name__)} has no "
                            "compiled round on this model/schedule: call its select and "
                            "update directly")
        self.policy = policy
        self.spec = spec
        self.name = getattr(policy, "name", type(policy).__name__)
        engine = getattr(policy, "engine", None)
        self.engine_name = getattr(engine, "name", self.name)
        self.dim = d = val.positive_int(policy.dim, "policy.dim")
        self.n_arms = K = val.positive_int(n_arms, "n_arms")
        block = val.positive_int(block, "block")
        _, sel, steps = spec.draw(np.random.SeedSequence(0), 1, d)
        self._M = M = int(steps.shape[2])
        size = spec.piece.state_size
        grows = size(d, K, M, 1) != size(d, K, M, 2)
        if horizon is None and grows:
            raise ValueError(f"horizon is needed for {self.name}: its state keeps a history "
                             "of every update (give the most updates it will take)")
        self.horizon = _ENDLESS if horizon is None else val.positive_int(horizon, "horizon")
        self._T = self.horizon if grows else 1
        self._buf = np.empty(size(d, K, M, self._T))
        self._start, self._choose, self._learn, self._choose_many = \
            cpu.bandit_online(spec.piece)
        # sizes, bound and parameters in one array: see cpu.online_meta
        self._meta = cpu.online_meta(spec.params, K, d, M, self._T, MAX_ABS_DATA,
                                     spec.binary_rewards)
        seq = val.as_seed_sequence(seed)
        self._chunks = draw_chunks(spec, seq, self.horizon, d, block)
        self._block = block
        self._sel, self._steps = {}, {}
        self.n_selects = self.n_updates = 0
        init, sel0, steps0 = next(self._chunks)
        self._drawn = 1
        self._sel[0] = sel0 = np.ascontiguousarray(sel0, dtype=np.float64)
        self._steps[0] = steps0 = np.ascontiguousarray(steps0, dtype=np.float64)
        self._start(self._meta, self._buf, np.ascontiguousarray(init, dtype=np.float64))
        self._shape = (K, d)
        # the blocks of draws in use, the draw count where each starts and where it ends
        # (at the horizon at the latest): a select or update inside its block reads three
        # attributes, nothing else
        self._sel_rows, self._sel_base = sel0, 0
        self._steps_rows, self._steps_base = steps0, 0
        self._sel_end = self._steps_end = min(block, self.horizon)

    @classmethod
    def for_run(cls, policy, n_arms, run_seed, **kw):
        """The online policy of :func:`vits_ref.simulate`'s run seeded by ``run_seed``
        (the child ``r`` of the root seed): its policy seed is the run's child 1."""
        return cls(policy, n_arms, seed=_policy_seed(run_seed), **kw)

    def _rows(self, store, t):
        """Block ``t // block`` of ``store`` (selection or update draws), drawing ahead
        as needed and dropping the blocks both counters have passed."""
        b = t // self._block
        while b >= self._drawn:
            _, sel, steps = next(self._chunks)
            # the compiled calls take C-ordered float64 blocks only (no copy if they are)
            self._sel[self._drawn] = np.ascontiguousarray(sel, dtype=np.float64)
            self._steps[self._drawn] = np.ascontiguousarray(steps, dtype=np.float64)
            self._drawn += 1
        done = min(self.n_selects, self.n_updates) // self._block
        for old in [old for old in store if old < done]:
            del self._sel[old], self._steps[old]
        return store[b]

    def _next_sel(self, t):
        """Make the block holding the ``t``-th selection draw current."""
        if t >= self.horizon:
            raise ValueError(f"the streams hold horizon={self.horizon} rounds; {t} selects "
                             "have used them")
        self._sel_rows = self._rows(self._sel, t)
        self._sel_base = t - t % self._block
        self._sel_end = min(self._sel_base + self._block, self.horizon)

    def _next_steps(self, t):
        """Make the block holding the ``t``-th update draws current."""
        if t >= self.horizon:
            raise ValueError(f"the state holds horizon={self.horizon} updates; it has them")
        self._steps_rows = self._rows(self._steps, t)
        self._steps_base = t - t % self._block
        self._steps_end = min(self._steps_base + self._block, self.horizon)

    def _contexts(self, X):
        """``contexts`` as the compiled calls take them: a C-ordered, aligned, writeable
        float64 array (a copy only if it is not one), of shape (n_arms, dim)."""
        X = np.require(X, np.float64, ["C", "A", "W"])
        if X.shape != self._shape:
            raise ValueError(f"contexts must have shape {self._shape} (n_arms, dim), got "
                             f"{X.shape}")
        return X

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
        except TypeError:
            arm = self._choose(self._meta, self._buf, self._contexts(contexts),
                               self._sel_rows, i)
        if arm < 0:
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
        Xs = np.require(contexts, np.float64, ["C", "A", "W"])
        if Xs.ndim != 3 or Xs.shape[1:] != self._shape:
            raise ValueError(f"contexts must have shape (n, {self._shape[0]}, "
                             f"{self._shape[1]}), got {Xs.shape}")
        out = np.empty(Xs.shape[0], dtype=np.int64)
        i = 0
        while i < Xs.shape[0]:
            t = self.n_selects
            if t == self._sel_end:
                self._next_sel(t)
            j = t - self._sel_base
            n = min(Xs.shape[0] - i, self._sel_end - t)  # the rest of this block's draws
            done = self._choose_many(self._meta, self._buf, Xs[i:i + n], self._sel_rows, j,
                                     out[i:i + n])
            self.n_selects = t + done
            if done < n:
                raise ValueError(f"contexts of request {i + done} must be finite with "
                                 f"entries of magnitude <= {MAX_ABS_DATA:g}")
            i += n
        return out

    def _features(self, X, arm):
        """``(X, arm)`` as the compiled update takes them: the contexts (n_arms, dim) by
        :meth:`_contexts`, or the arm's features (dim,) as one row, with ``arm = -1``."""
        if np.ndim(X) == 2:
            return self._contexts(X), arm
        x = np.require(X, np.float64, ["C", "A", "W"])
        if x.shape != (self.dim,):
            raise ValueError(f"contexts must have shape {self._shape} or ({self.dim},), "
                             f"got {x.shape}")
        return x.reshape(1, self.dim), -1

    def update(self, contexts, arm, reward):
        """Learn from ``reward`` of ``arm`` played at ``contexts`` (n_arms, dim), or at the
        arm's features (dim,). Returns self.

        One observation per call, with the step schedule of one observation (an iterative
        engine's ``K_t`` steps at ``t = n_updates``), as the simulation loop learns: a batch
        of feedback is these calls in the order it arrives."""
        if type(arm) is not int:
            arm = _integer(arm, "arm")
        if type(reward) is not float and type(reward) is not _F64_SCALAR:
            reward = _real(reward, "reward")
        t = self.n_updates
        if t == self._steps_end:  # and refused at the horizon
            self._next_steps(t)
        i = t - self._steps_base
        n_obs = t + 1
        # as in select: the compiled call refuses other types at once and checks the rest;
        # arm -1 is its code for features given as one row, so a user's -1 is refused here
        if arm < 0:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm}")
        try:
            code = self._learn(self._meta, self._buf, contexts, arm, reward,
                               self._steps_rows, i, n_obs)
        except TypeError:
            X, a = self._features(contexts, arm)
            code = self._learn(self._meta, self._buf, X, a, reward, self._steps_rows, i,
                               n_obs)
        if code != 1:
            self._refused(code, contexts, arm, reward, n_obs)
        self.n_updates = n_obs
        return self

    def _refused(self, code, contexts, arm, reward, n_obs):
        """The error of a compiled update's ``code``
        (:func:`vits_ref.drivers.cpu.bandit_online`)."""
        if code == 0:
            h = self.spec.step_size
            raise DivergenceError(self.engine_name, n_obs, h(n_obs) if callable(h) else h,
                                  detail=self.spec.divergence_detail)
        if code == -3:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm}")
        if code == -5:
            self._features(contexts, arm)  # raises the shape's error
        if code == -4:
            raise ValueError(f"reward must be 0 or 1 for the logistic model, got {reward}")
        what = "reward" if code == -1 else "contexts"
        raise ValueError(f"{what} must be finite with magnitude <= {MAX_ABS_DATA:g}")


def _integer(value, name):
    """``value`` as a Python int (any integer type), else a TypeError naming it."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def _real(value, name):
    """``value`` as a Python float, else a TypeError naming it."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from None
