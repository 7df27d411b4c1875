"""Bandit policies: Thompson sampling over any engine, LinUCB, epsilon-greedy, uniform random.

Online use::

    arm = policy.select(contexts)          # contexts: (K, d) features of this round's arms
    policy.update(contexts, arm, reward)   # the features played are contexts[arm]

``policy.fresh(seed)`` returns the same policy at its prior with a new seed, which is how
:func:`vits_ref.bandit.simulate` starts each run. Every policy here satisfies the protocol
:class:`vits_ref.bandit.protocols.Policy` (``name``, ``dim``, ``select``, ``update``,
``fresh``); those with a fused compiled loop also :class:`~vits_ref.bandit.protocols.FusedPolicy`
(``fused(kl=False)``). ``policy.save(path)`` writes a policy (its engine and its own state,
declared in ``_persist_params`` and ``_persist_state``) and :func:`vits_ref.load` reads it
back (:mod:`vits_ref.inference.persist`).
"""


import numpy as np

from .. import _validate as val
from .._seeding import child, engine_streams
from ..drivers import cpu
from ..drivers.fused import FusedSpec
from ..errors import DivergenceError
from ..inference.base import Engine
from ..inference.persist import Persistent
from ..kernels import bandit as kbandit
from ..kernels import linucb as klinucb
from ._core import CoreDoor, engine_core_spec


def _no_noise(policy_seed, n_rounds, dim):
    return np.zeros(0), np.zeros((n_rounds, 0)), np.zeros((n_rounds, 0, 1, dim))


def _uniforms(policy_seed, n_rounds, dim):
    rng_sample, _ = engine_streams(policy_seed)
    return np.zeros(0), rng_sample.random((n_rounds, 1)), np.zeros((n_rounds, 0, 1, dim))


def _no_noise_chunks(policy_seed, n_rounds, dim, chunk):
    for t0 in range(0, n_rounds, chunk):
        n = min(chunk, n_rounds - t0)
        yield np.zeros(0), np.zeros((n, 0)), np.zeros((n, 0, 1, dim))


def _uniform_chunks(policy_seed, n_rounds, dim, chunk):
    # the uniforms are the whole sampling stream: n rows at a time are the rows of one draw
    rng_sample, _ = engine_streams(policy_seed)
    for t0 in range(0, n_rounds, chunk):
        n = min(chunk, n_rounds - t0)
        yield np.zeros(0), rng_sample.random((n, 1)), np.zeros((n, 0, 1, dim))


def _ridge_update(policy, contexts, arm, reward):
    """One observation into a ridge policy's ``inv(V)`` (Sherman-Morrison) and
    ``b += r x``, ``x = contexts[arm]`` (LinUCB, epsilon-greedy); rolled back, with a
    DivergenceError, if either overflows."""
    X = val.contexts(contexts, policy.dim)
    x = np.ascontiguousarray(X[val.arm_index(arm, X.shape[0])])
    reward = val.reward_value(reward)
    Vinv, b = policy.Vinv, policy.b
    saved = Vinv.copy(), b.copy()
    b += reward * x
    cpu.sherman_morrison(Vinv, x)
    if not (np.all(np.isfinite(Vinv)) and np.all(np.isfinite(b))):
        # rolled back: a failed update leaves the policy as it was
        Vinv[...], b[...] = saved
        raise DivergenceError(policy.name, policy.n_obs + 1, None,
                              detail="The Sherman-Morrison inverse of V or b = sum r x "
                                     "overflowed: the features or rewards are too large.")
    policy.n_obs += 1


class ThompsonSampling(CoreDoor, Persistent):
    """Thompson sampling: play ``argmax_a x_a theta`` for one draw ``theta`` of the engine.

    Parameters
    ----------
    engine : Engine
        Any engine of :mod:`vits_ref.inference` (LinTS, VITS, Langevin, ...).

    Notes
    -----
    Over LinTS, VITS and LMC-TS on the linear model (the default prior, a ``constant`` or
    ``decayed`` schedule), ``select`` and ``update`` run the compiled bodies of the fused
    loop on a state buffer (:mod:`vits_ref.bandit._core`): one compiled call each, with the
    engine's own draws, so the arms and the posterior are those of
    :func:`vits_ref.simulate`'s run, bit for bit. Reading :attr:`engine` writes the
    learnt state into the engine object first. Other engines run their own ``sample``
    and ``update``.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> pol = vr.ThompsonSampling(vr.LinTS(2, seed=0))
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> arm = pol.select(X)
    >>> pol.update(X, arm, 1.0).engine.n_obs
    1
    """

    #: for vits_ref.load: the constructor's arguments; the state is the engine's, and the
    #: compiled state's sums beside it (:attr:`core_stats`, empty without one)
    _persist_params = ("engine",)
    _persist_state = ("core_stats",)
    _persist_growing = ("core_stats",)

    def __init__(self, engine):
        if not isinstance(engine, Engine):
            raise TypeError(f"engine must be a vits_ref engine, got {type(engine).__name__}")
        self.engine = engine
        self.dim = engine.model.input_dim
        self.name = engine.name

    # -- the compiled state (vits_ref.bandit._core.CoreDoor) ---------------------------------
    _holder_attr = "engine"

    def _holder(self):
        return self.engine

    def _core_spec(self):
        return engine_core_spec(self.engine)

    def _streams(self):
        return self.engine._rng_sample, self.engine._rng_update

    def _observed(self):
        return self.engine.model.n_obs

    def _counter(self):
        return self.engine.model

    def _engine_name(self):
        return self.engine.name

    def _observe(self, n, r2):
        """Count ``n`` observations learnt by the core (their rewards' squares summing to
        ``r2``) as the engine's ``update`` counts them."""
        core = self._core
        model = core.counter  # the engine's model (CoreDoor._attach, checked by _ready)
        model.n_obs += n
        model.sum_r2 += r2
        n_obs = model.n_obs
        diag = self.engine.diagnostics
        diag["n_obs"] = n_obs
        schedule = core.step_diagnostics
        if schedule is not None:  # an iterative engine (its updates draw): its schedule
            h, varies, n_steps = schedule
            diag["step_size"] = h(n_obs) if varies else h
            diag["n_steps"] = n_steps

    # -- the engine's own methods ---------------------------------------------------------
    def _select_reference(self, contexts):
        X = val.contexts(contexts, self.dim)
        theta = self.engine.sample(1)[0]
        return int(np.argmax(self.engine.model.predict(theta, X)))

    def _update_reference(self, contexts, arm, reward):
        X = val.contexts(contexts, self.dim)
        arm = val.arm_index(arm, X.shape[0])
        # X's rows checked, the reward checked: one observation in the engine's form
        self.engine._update_observed(X[arm][None, :], np.array([val.reward_value(reward)]))
        return self

    def update_many(self, contexts, arms, rewards):
        """Learn ``n`` logged rounds in order, as ``n`` calls of :meth:`update`.

        ``contexts`` (n, K, d), or the played arms' features (n, d) (all that an update
        reads of a round: only they are checked), ``arms`` (n,) integers in ``[0, K)``,
        ``rewards`` (n,), checked whole before the first is learnt. An engine whose batch
        update is its updates one by one
        (:attr:`vits_ref.inference.base.Engine.batch_is_sequential`: LinTS, to rounding)
        learns the played rows in one call; the others one update per round, each with
        its own step schedule. Transactional: a round that diverges leaves the policy as
        it was before the call. Returns self.
        """
        return self._update_many(contexts, arms, rewards)

    def _learn_rounds(self, X, a, r):
        """:meth:`update_many` on rounds already checked
        (:func:`vits_ref._validate.logged_rounds`)."""
        return self._learn_rows(val.played_rows(X, a), a, r, rounds=X)

    def _learn_rows(self, played, a, r, n_arms=None, rounds=None):
        """:meth:`update_many` on the played rows (n, d) already checked
        (:func:`vits_ref._validate.logged_rows`), taken from ``rounds`` (n, K, d) when
        given; ``n_arms``: the arms of a compiled state to attach for them (None: the
        one attached, if any)."""
        if self.engine.batch_is_sequential:  # one batch update: BLAS, not n calls
            self.engine._update_observed(played, r)
            return self
        if rounds is not None:
            learnt = self._learn_many(rounds, a, r)
        else:  # rows of one "arm" each, arm -1 (cpu.bandit_online)
            learnt = self._learn_many(played[:, None], np.full(a.shape[0], -1), r,
                                      n_arms=n_arms, rows=True)
        if learnt:  # the compiled state's loop
            return self
        eng = self.engine
        saved = eng._state()
        try:
            for i in range(a.shape[0]):
                eng._update_observed(played[i:i + 1], r[i:i + 1])
        except BaseException:
            eng._restore(saved)
            raise
        return self

    def fresh(self, seed=None):
        """The same policy at the prior, with a new seed."""
        fresh = ThompsonSampling(self.engine.fresh(seed))
        fresh.compiled = self.compiled
        return fresh

    def fused(self, kl=False):
        """The engine's part of the fused compiled loop (:meth:`Engine.fused`), or None."""
        return self.engine.fused(kl=kl)

    def __repr__(self):
        return f"ThompsonSampling({self.engine!r})"


class LinUCB(CoreDoor, Persistent):
    """LinUCB: ``argmax_a x_a theta_hat + alpha sqrt(x_a^T inv(V) x_a)``.

    ``inv(V)`` (``V = lam I + sum x x^T``) is kept by Sherman-Morrison updates, ``O(d^2)``
    per round; ``theta_hat = inv(V) b``. Ties go to the lowest index. LinUCB is
    deterministic: it takes no seed. ``select`` and ``update`` are one compiled call each
    on a state buffer (:mod:`vits_ref.bandit._core`): the bodies of
    :mod:`vits_ref.kernels.linucb`, the same as in the fused loop.

    Parameters
    ----------
    dim : int
    alpha : float, default 1.0
        Width of the confidence bonus (>= 0).
    lam : float, default 1.0
        Ridge.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> pol = vr.LinUCB(2, alpha=1.0, lam=1.0)
    >>> pol.select(np.array([[1.0, 0.0], [0.0, 2.0]]))
    1
    """

    name = "LinUCB"
    #: for vits_ref.load: the constructor's arguments and the state
    _persist_params = ("dim", "alpha", "lam")
    _persist_state = ("Vinv", "b", "n_obs")

    def __init__(self, dim, alpha=1.0, lam=1.0):
        self.dim = val.positive_int(dim, "dim")
        self.alpha = val.positive_float(alpha, "alpha", allow_zero=True)
        self.lam = val.hyperparameter(lam, "lam")
        self.Vinv = np.eye(self.dim) / self.lam
        self.b = np.zeros(self.dim)
        self.n_obs = 0

    # -- the compiled state (vits_ref.bandit._core.CoreDoor) ---------------------------------
    def _holder(self):
        return self

    def _core_spec(self):
        return self.fused()

    def _streams(self):
        return None, None  # LinUCB draws nothing (its core asks for no draw)

    def _observed(self):
        return self.n_obs

    def _counter(self):
        return self

    def _engine_name(self):
        return self.name

    def _observe(self, n, r2):
        self.n_obs += n

    def scores(self, contexts):
        """Upper confidence bounds of the arms."""
        X = val.contexts(contexts, self.dim)
        out = np.empty(X.shape[0])
        cpu.linucb_scores(self.Vinv, self.b, self.alpha, X, out)
        return out

    def _select_reference(self, contexts):
        return int(np.argmax(self.scores(contexts)))

    def _update_reference(self, contexts, arm, reward):
        """Sherman-Morrison update of ``inv(V)`` with ``x = contexts[arm]``; ``b += r x``."""
        _ridge_update(self, contexts, arm, reward)
        return self

    def update_many(self, contexts, arms, rewards):
        """Learn ``n`` logged rounds in order, as ``n`` calls of :meth:`update` (to
        rounding: ``b`` gains ``X^T r`` in one product), in one compiled pass of
        Sherman-Morrison updates. ``contexts`` (n, K, d), or the played arms' features
        (n, d), ``arms`` (n,), ``rewards`` (n,), checked whole first; a batch that
        overflows leaves the policy as it was. Returns self."""
        return self._update_many(contexts, arms, rewards)

    def _learn_rounds(self, X, a, r):
        """:meth:`update_many` on rounds already checked
        (:func:`vits_ref._validate.logged_rounds`)."""
        return self._learn_rows(val.played_rows(X, a), a, r)

    def _learn_rows(self, played, a, r, n_arms=None):
        """:meth:`update_many` on the played rows (n, d) already checked
        (:func:`vits_ref._validate.logged_rows`); ``n_arms`` as
        :meth:`ThompsonSampling._learn_rows` takes it (LinUCB has no compiled state to
        attach)."""
        Vinv, b = self.Vinv, self.b
        saved = Vinv.copy(), b.copy()
        b += played.T @ r
        cpu.sherman_morrison_rows(Vinv, played)
        if not (np.all(np.isfinite(Vinv)) and np.all(np.isfinite(b))):
            Vinv[...], b[...] = saved
            raise DivergenceError(self.name, self.n_obs + a.shape[0], None,
                                  detail="The Sherman-Morrison inverse of V or b = sum r x "
                                         "overflowed: the features or rewards are too large.")
        self.n_obs += a.shape[0]
        return self

    def fresh(self, seed=None):
        """A new LinUCB at the prior (``seed`` is accepted for the policy protocol, which
        :func:`vits_ref.bandit.simulate` calls with one; LinUCB draws nothing)."""
        fresh = LinUCB(self.dim, alpha=self.alpha, lam=self.lam)
        fresh.compiled = self.compiled
        return fresh

    def fused(self, kl=False):
        """The fused loop's spec (:data:`vits_ref.kernels.linucb.PIECE`)."""
        return FusedSpec(piece=klinucb.PIECE,
                         params=klinucb.LinUCBParams(alpha=self.alpha, lam=self.lam),
                         draw=_no_noise, draw_chunks=_no_noise_chunks)

    def __repr__(self):
        return f"LinUCB(dim={self.dim}, alpha={self.alpha!r}, lam={self.lam!r})"


class EpsilonGreedy(Persistent):
    r"""Epsilon-greedy on the ridge estimate: a uniformly random arm with probability
    ``epsilon``, else ``argmax_a x_a^T theta_hat``.

    The estimate is ridge regression on the observations so far,

    .. math::

        \hat\theta = (\lambda I + \textstyle\sum_s x_s x_s^\top)^{-1}
            \textstyle\sum_s r_s x_s ,

    kept as LinUCB keeps it (``inv(V)`` by Sherman-Morrison updates, ``O(d^2)`` per round,
    the scores by LinUCB's kernel with no bonus). Each :meth:`select` draws two uniforms
    ``(u, v)`` from the policy's own seeded Generator, explores if ``u < epsilon`` (the
    arm ``floor(v K)``) and otherwise plays the greedy arm (ties: the lowest index); the
    two draws are taken in every round, so runs at two values of ``epsilon`` share their
    draws round by round. ``epsilon = 0`` is the greedy policy, ``epsilon = 1`` the
    uniform one. The rule is the textbook epsilon-greedy (Sutton & Barto, *Reinforcement
    Learning: An Introduction*, section 2.2) over a linear model; Kveton et al. report
    trying it as a frequentist baseline (section 6.1 of the diffusion-prior paper). A
    Python-loop policy: it has no fused loop.

    Parameters
    ----------
    dim : int
    epsilon : float, default 0.1
        The exploration probability, in ``[0, 1]``.
    lam : float, default 1.0
        Ridge.
    seed : int, SeedSequence, Generator or None
        Seeds the exploration draws.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> pol = vr.EpsilonGreedy(2, epsilon=0.0, lam=1.0, seed=0)
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> pol.update(X, 1, 2.0).select(X)
    1
    """

    name = "epsilon-greedy"
    #: for vits_ref.load: the constructor's arguments (and seed) and the state
    _persist_params = ("dim", "epsilon", "lam")
    _persist_state = ("Vinv", "b", "n_obs", "_rng")

    def __init__(self, dim, epsilon=0.1, lam=1.0, seed=None):
        self.dim = val.positive_int(dim, "dim")
        self.epsilon = val.positive_float(epsilon, "epsilon", allow_zero=True)
        if self.epsilon > 1.0:
            raise ValueError(f"epsilon must be in [0, 1] (a probability), got {epsilon!r}")
        self.lam = val.hyperparameter(lam, "lam")
        self.seed = seed
        self._rng, _ = engine_streams(seed)
        self.Vinv = np.eye(self.dim) / self.lam
        self.b = np.zeros(self.dim)
        self.n_obs = 0

    @property
    def theta_hat(self):
        """The ridge estimate ``inv(V) b``."""
        return self.Vinv @ self.b

    def scores(self, contexts):
        """The greedy scores ``x_a^T theta_hat`` of the arms (LinUCB's kernel, no bonus)."""
        X = val.contexts(contexts, self.dim)
        out = np.empty(X.shape[0])
        cpu.linucb_scores(self.Vinv, self.b, 0.0, X, out)
        return out

    def select(self, contexts):
        """A uniformly random arm with probability ``epsilon``, else the greedy arm."""
        scores = self.scores(contexts)  # checked before the draws are used up
        K = scores.shape[0]
        u, v = self._rng.random(2)
        if u < self.epsilon:
            return min(int(v * K), K - 1)
        return int(np.argmax(scores))

    def update(self, contexts, arm, reward):
        """Sherman-Morrison update of ``inv(V)`` with ``x = contexts[arm]``; ``b += r x``.
        Returns self."""
        _ridge_update(self, contexts, arm, reward)
        return self

    def fresh(self, seed=None):
        """A new epsilon-greedy policy at the prior with ``seed``."""
        return EpsilonGreedy(self.dim, epsilon=self.epsilon, lam=self.lam, seed=seed)

    def __repr__(self):
        return f"EpsilonGreedy(dim={self.dim}, epsilon={self.epsilon!r}, lam={self.lam!r})"


class RandomPolicy(Persistent):
    """Uniformly random arm: ``floor(u K)`` for ``u ~ U(0, 1)`` from the sampling stream.

    Parameters
    ----------
    dim : int or None
        Feature dimension, only used to validate ``contexts``.
    seed : int, SeedSequence, Generator or None
    """

    name = "random"
    #: for vits_ref.load: the constructor's arguments (and seed) and the state
    _persist_params = ("dim",)
    _persist_state = ("_rng",)

    @staticmethod
    def _persist_cost(params):
        """vits_ref.load's size policy: dim only validates contexts, nothing is sized."""
        return 0

    def __init__(self, dim=None, seed=None):
        self.dim = None if dim is None else val.positive_int(dim, "dim")
        self.seed = seed
        self._rng, _ = engine_streams(seed)

    def select(self, contexts):
        """A uniformly random arm index."""
        X = (val.contexts(contexts, self.dim) if self.dim
             else val.float_array(contexts, "contexts", ndim=2, finite=False))
        K = X.shape[0]
        if K == 0:
            raise ValueError(f"contexts must have at least one row (one per arm), got shape "
                             f"{X.shape}")
        return min(int(self._rng.random() * K), K - 1)

    def update(self, contexts, arm, reward):
        """Nothing to learn."""
        return self

    def fresh(self, seed=None):
        """A new random policy with ``seed``."""
        return RandomPolicy(self.dim, seed=seed)

    def fused(self, kl=False):
        """The fused loop's spec (:data:`vits_ref.kernels.bandit.RANDOM`)."""
        return FusedSpec(piece=kbandit.RANDOM, params=kbandit.RandomParams(unused=0.0),
                         draw=_uniforms, draw_chunks=_uniform_chunks)

    def __repr__(self):
        return f"RandomPolicy(dim={self.dim})"


class PerArm(Persistent):
    """Thompson sampling with one independent posterior per arm (the MovieLens setting).

    Each arm ``a`` has its own engine (a fresh copy of ``engine`` with its own seed); a
    round draws ``theta_a`` from every arm's engine, plays
    ``argmax_a model.predict(theta_a, x_a)`` and updates only the played arm's engine
    with ``(x_arm, reward)`` (VITS paper section 5: "VITS for each arm only involves
    sampling from a low-dimensional Gaussian distribution and updating the variational
    posterior corresponding to the chosen arm").

    Parameters
    ----------
    engine : Engine
        The template (hyperparameters, model); its own state is not used.
    n_arms : int
    seed : int, SeedSequence or None
        Arm ``a``'s engine is seeded with child ``a`` of ``SeedSequence(seed)``.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> pol = vr.PerArm(vr.LinTS(2), n_arms=3, seed=0)
    >>> X = np.ones((3, 2))
    >>> pol.update(X, pol.select(X), 1.0).n_obs
    1
    """

    #: for vits_ref.load: the constructor's arguments (and seed) and the state
    _persist_params = {"engine": "template", "n_arms": "n_arms"}
    _persist_state = ("engines",)
    #: for vits_ref.load's size policy: the engine is built once per arm (and the
    #: template), the policy itself holds a list
    _persist_copies = {"engine": "n_arms"}

    @staticmethod
    def _persist_cost(params):
        n = params.get("n_arms")
        return n if isinstance(n, int) and n > 0 else 0

    def __init__(self, engine, n_arms, seed=None):
        if not isinstance(engine, Engine):
            raise TypeError(f"engine must be a vits_ref engine, got {type(engine).__name__}")
        self.template = engine
        self.n_arms = val.positive_int(n_arms, "n_arms")
        self.dim = engine.model.input_dim
        self.name = f"per-arm {engine.name}"
        self.seed = seed
        root = val.as_seed_sequence(seed)
        self.engines = [engine.fresh(child(root, a)) for a in range(self.n_arms)]

    @property
    def n_obs(self):
        """Observations over all arms."""
        return sum(e.n_obs for e in self.engines)

    def select(self, contexts):
        """Index of the arm whose own posterior draw scores highest."""
        X = val.contexts(contexts, self.dim)
        if X.shape[0] != self.n_arms:
            raise ValueError(f"contexts must have one row per arm ({self.n_arms}), "
                             f"got {X.shape[0]}")
        scores = [e.model.predict(e.sample(1)[0], X[a:a + 1])[0]
                  for a, e in enumerate(self.engines)]
        return int(np.argmax(scores))

    def update(self, contexts, arm, reward):
        """Update the played arm's engine with ``(contexts[arm], reward)``."""
        X = val.contexts(contexts, self.dim)
        if X.shape[0] != self.n_arms:
            raise ValueError(f"contexts must have one row per arm ({self.n_arms}), "
                             f"got {X.shape[0]}")
        arm = val.arm_index(arm, self.n_arms)
        self.engines[arm].update(X[arm][None, :], np.array([val.reward_value(reward)]))
        return self

    def fresh(self, seed=None):
        """The same policy at the prior, with a new seed."""
        return PerArm(self.template, self.n_arms, seed=seed)

    def __repr__(self):
        return f"PerArm({self.template!r}, n_arms={self.n_arms})"
