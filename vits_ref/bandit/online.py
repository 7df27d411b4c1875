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

_F64 = np.dtype(np.float64)
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
        self._sel[0], self._steps[0] = sel0, steps0
        self._start(self._meta, self._buf, np.ascontiguousarray(init))
        self._shape = (K, d)
        # the blocks of draws in use and the draw count where they end: a select or update
        # inside its block reads two attributes, nothing else
        self._sel_rows, self._sel_end = sel0, block
        self._steps_rows, self._steps_end = steps0, block

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
            self._sel[self._drawn], self._steps[self._drawn] = sel, steps
            self._drawn += 1
        done = min(self.n_selects, self.n_updates) // self._block
        for old in [old for old in store if old < done]:
            del self._sel[old], self._steps[old]
        return store[b]

    def _next_sel(self, t):
        """Make the block holding the ``t``-th selection draw current; its index there."""
        self._sel_rows = self._rows(self._sel, t)
        base = t - t % self._block
        self._sel_end = base + self._block
        return t - base

    def _next_steps(self, t):
        """Make the block holding the ``t``-th update draws current; its index there."""
        self._steps_rows = self._rows(self._steps, t)
        base = t - t % self._block
        self._steps_end = base + self._block
        return t - base

    def _contexts(self, X):
        if not (type(X) is np.ndarray and X.dtype is _F64):
            X = np.ascontiguousarray(X, dtype=np.float64)
        if X.shape != self._shape:
            raise ValueError(f"contexts must have shape {self._shape} (n_arms, dim), got "
                             f"{X.shape}")
        return X

    def select(self, contexts):
        """The arm to play for ``contexts`` (n_arms, dim)."""
        X = contexts
        # the common case in a few attribute reads (the compiled call takes any strides;
        # float64 dtypes are one object, so ``is`` compares them)
        if type(X) is not np.ndarray or X.dtype is not _F64 or X.shape != self._shape:
            X = self._contexts(X)
        t = self.n_selects
        i = t - self._sel_end + self._block
        if i == self._block:  # the counters only grow: past this block's last draw
            i = self._next_sel(t)
        arm = self._choose(self._meta, self._buf, X, self._sel_rows, i)
        if arm < 0:
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
        Xs = contexts
        if not (type(Xs) is np.ndarray and Xs.dtype is _F64):
            Xs = np.ascontiguousarray(Xs, dtype=np.float64)
        if Xs.ndim != 3 or Xs.shape[1:] != self._shape:
            raise ValueError(f"contexts must have shape (n, {self._shape[0]}, "
                             f"{self._shape[1]}), got {Xs.shape}")
        out = np.empty(Xs.shape[0], dtype=np.int64)
        i = 0
        while i < Xs.shape[0]:
            t = self.n_selects
            j = t - self._sel_end + self._block
            if j == self._block:
                j = self._next_sel(t)
            n = min(Xs.shape[0] - i, self._block - j)  # the rest of this block's draws
            done = self._choose_many(self._meta, self._buf, Xs[i:i + n], self._sel_rows, j,
                                     out[i:i + n])
            self.n_selects = t + done
            if done < n:
                raise ValueError(f"contexts of request {i + done} must be finite with "
                                 f"entries of magnitude <= {MAX_ABS_DATA:g}")
            i += n
        return out

    def _features(self, X):
        """``contexts`` given other than as a float64 (n_arms, dim) array: converted, and
        the arm's features (dim,) made one row (the arm is then its index 0)."""
        if np.ndim(X) == 2:
            return self._contexts(X), False
        x = np.ascontiguousarray(X, dtype=np.float64)
        if x.shape != (self.dim,):
            raise ValueError(f"contexts must have shape {self._shape} or ({self.dim},), "
                             f"got {x.shape}")
        return x.reshape(1, self.dim), True

    def update(self, contexts, arm, reward):
        """Learn from ``reward`` of ``arm`` played at ``contexts`` (n_arms, dim), or at the
        arm's features (dim,). Returns self.

        One observation per call, with the step schedule of one observation (an iterative
        engine's ``K_t`` steps at ``t = n_updates``), as the simulation loop learns: a batch
        of feedback is these calls in the order it arrives."""
        X = contexts
        row = False
        if type(X) is not np.ndarray or X.dtype is not _F64 or X.shape != self._shape:
            X, row = self._features(X)
        if type(arm) is not int:
            arm = _integer(arm, "arm")
        if type(reward) is not float and type(reward) is not _F64_SCALAR:
            reward = _real(reward, "reward")
        t = self.n_updates
        if t >= self.horizon:
            raise ValueError(f"the state holds horizon={self.horizon} updates; it has them")
        i = t - self._steps_end + self._block
        if i == self._block:
            i = self._next_steps(t)
        n_obs = t + 1
        code = self._learn(self._meta, self._buf, X, 0 if row else arm, reward,
                           self._steps_rows, i, n_obs)
        if code != 1:
            self._refused(code, arm, reward, n_obs)
        self.n_updates = n_obs
        return self

    def _refused(self, code, arm, reward, n_obs):
        """The error of a compiled update's ``code``
        (:func:`vits_ref.drivers.cpu.bandit_online`)."""
        if code == 0:
            h = self.spec.step_size
            raise DivergenceError(self.engine_name, n_obs, h(n_obs) if callable(h) else h,
                                  detail=self.spec.divergence_detail)
        if code == -3:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm}")
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
