"""A scikit-learn-style front door to the policies: ``Bandit``.

For users coming from MABWiser or bayesianbandits: one object that learns from logged
rounds (``fit``, ``partial_fit``), chooses arms (``predict``), reports each arm's expected
reward (``predict_expectations``) and saves itself (``save``; :func:`vits_ref.load`). It is
a thin layer: every call is a loop over the policy's own ``update`` and ``select``
(:mod:`vits_ref.bandit.policies`), and a policy by name is :func:`make_policy`'s.
"""

import numpy as np

from .. import _validate as val
from ..drivers import cpu
from ..inference.base import Engine, GaussianEngine
from ..inference.persist import Persistent
from ._core import CoreDoor
from .policies import LinUCB, PerArm, ThompsonSampling
from .simulate import make_policy

#: the type and the shape that a one-round call checks before the compiled calls
_ND, _ONE = np.ndarray, (1,)
#: an arm and a reward that go to the compiled update as they are (it checks their values)
_INTS, _FLOATS = (int, np.int64), (float, np.float64)


class Bandit(Persistent):
    """A contextual bandit with scikit-learn's verbs, over any policy of the library.

    Parameters
    ----------
    policy : str, policy or engine, default "lints"
        A name of :data:`vits_ref.POLICY_NAMES` (the policy :func:`vits_ref.make_policy`
        builds with ``dim``, ``seed`` and ``options``), a policy object
        (:class:`vits_ref.ThompsonSampling`, :class:`vits_ref.LinUCB`,
        :class:`vits_ref.PerArm`, :class:`vits_ref.VTS`, ...; used as it is, its state
        included), or an engine (played by :class:`vits_ref.ThompsonSampling`).
    n_arms : int or None, default None
        The number of arms ``K`` every round must have; None: any (a per-arm policy's own).
    dim : int or None
        The features' size ``d``: required with a policy name, checked against a policy
        object's.
    seed : int, SeedSequence or None
        Seeds a named policy, and the restart of :meth:`fit` (``policy.fresh(seed)``).
    **options
        Hyperparameters of a named policy (``eta``, ``step_size``, ...: overrides of
        :data:`vits_ref.bandit.simulate.POLICY_DEFAULTS`).

    Attributes
    ----------
    policy : Policy
        The policy played; :meth:`fit` replaces it with ``policy.fresh(seed)``.

    Notes
    -----
    ``contexts`` are the features of each round's arms: ``(n, K, d)`` for ``n`` rounds
    (one ``(K, d)`` round is also accepted by :meth:`predict`,
    :meth:`predict_expectations` and :meth:`partial_fit`), ``arms`` the ``n`` arms played
    (integers in ``[0, K)``) and ``rewards`` the ``n`` rewards observed (for one
    ``(K, d)`` round, an integer and a real number, checked as ``policy.update`` checks
    them). ``partial_fit`` is
    ``policy.update(contexts[i], arms[i], rewards[i])`` for ``i = 0..n-1``; ``predict`` is
    ``policy.select(contexts[i])`` (a Thompson draw: it uses up the sampling stream, as
    MABWiser's ``predict`` does). Shapes are checked for the whole batch before the first
    update.

    Examples
    --------
    >>> import numpy as np, vits_ref as vr
    >>> rng = np.random.default_rng(0)
    >>> contexts = rng.standard_normal((100, 4, 3))            # 100 rounds, 4 arms, d = 3
    >>> arms = rng.integers(0, 4, size=100)
    >>> rewards = contexts[np.arange(100), arms] @ [1.0, -1.0, 0.5]
    >>> bandit = vr.Bandit("lints", n_arms=4, dim=3, seed=0).fit(contexts, arms, rewards)
    >>> bandit.predict(contexts[:5]).shape
    (5,)
    >>> # one (K, d) round; "lints" defaults to lam = 10, a ridge that shrinks (1, -1, 0.5)
    >>> np.round(bandit.predict_expectations(np.eye(4, 3)), 2)
    array([ 0.9 , -0.89,  0.45,  0.  ])
    """

    _persist_params = ("policy", "n_arms", "dim")

    def __init__(self, policy="lints", n_arms=None, dim=None, seed=None, **options):
        self.n_arms = None if n_arms is None else val.positive_int(n_arms, "n_arms")
        self.seed = seed
        if isinstance(policy, str):
            if dim is None:
                raise TypeError(f"dim (the features' size) is required with a policy name "
                                f"({policy!r})")
            self.dim = val.positive_int(dim, "dim")
            self.policy = make_policy(policy, self.dim, seed=seed, **options)
            return
        if options:
            raise TypeError(f"options {sorted(options)} apply to a policy name only; "
                            f"{type(policy).__name__} is already built")
        if isinstance(policy, Engine):
            policy = ThompsonSampling(policy)
        if not all(callable(getattr(policy, m, None)) for m in ("select", "update", "fresh")):
            raise TypeError(f"policy must be a name of vits_ref.POLICY_NAMES, a policy (with "
                            f"select, update, fresh) or an engine, got "
                            f"{type(policy).__name__}")
        own = getattr(policy, "dim", None)
        if dim is not None and own is not None and val.positive_int(dim, "dim") != own:
            raise ValueError(f"dim ({dim}) differs from the policy's ({own})")
        self.dim = own if own is not None else (None if dim is None
                                                else val.positive_int(dim, "dim"))
        arms = getattr(policy, "n_arms", None)
        if arms is not None and self.n_arms not in (None, arms):
            raise ValueError(f"n_arms ({self.n_arms}) differs from the policy's ({arms})")
        self.n_arms = arms if arms is not None else self.n_arms
        self.policy = policy

    # -- learning ----------------------------------------------------------------------
    def fit(self, contexts, arms, rewards):
        """Restart from the prior (``policy.fresh(seed)``) and learn from the rounds.

        Parameters
        ----------
        contexts : (n, K, d) or (n, d) array
            Each round's contexts, or only the played arms' features (one row a round),
            all that a policy of one shared posterior (:class:`ThompsonSampling`,
            :class:`LinUCB`) reads of a round: only they are then checked, so a fit of
            logged rows reads ``n d`` numbers, not ``n K d``. Other policies (one
            posterior per arm, VTS) take the rounds.
        arms : (n,) integers in ``[0, K)``
        rewards : (n,) array

        Returns
        -------
        self
        """
        rounds = self._rounds(contexts, arms, rewards)
        self.policy = self.policy.fresh(self.seed)
        return self._learn(*rounds)

    def partial_fit(self, contexts, arms, rewards):
        """Learn from more rounds, from the current state.

        Arguments as :meth:`fit` (``(n, d)`` played rows with ``(n,)`` arrays of arms and
        rewards), or one ``(K, d)`` round with its arm and reward (an integer and a real
        number, as :meth:`predict` of one round gives the arm):
        ``bandit.partial_fit(x, bandit.predict(x), reward)`` is one online decision.

        The rounds are learnt as one by one, in order (``policy.update`` per round, or the
        policy's ``update_many``, which gives the same state: to rounding for LinTS and
        LinUCB, whose batch is one compiled pass, bit for bit for the others), so an
        iterative engine (VITS, LMC-TS) runs its step schedule once per observation, as in
        a simulation; an engine's own ``update(features, rewards)`` on the batch runs one
        schedule for the whole batch (:meth:`vits_ref.inference.base.Engine.update`).
        A round that diverges leaves the policy as it was before the call.

        Returns
        -------
        self
        """
        if self._learn_one(contexts, arms, rewards):
            return self
        return self._learn(*self._rounds(contexts, arms, rewards, allow_one=True))

    def _learn_one(self, contexts, arms, rewards):
        """One round learnt by the policy's compiled update, which checks the values
        (True): ``(K, d)`` contexts with a Python or NumPy int and float, or ``(1, K, d)``,
        ``(1,)``, ``(1,)`` arrays. False, with nothing learnt, for anything else: the
        checks of :meth:`_rounds` then run."""
        pol = self.policy
        if type(contexts) is not _ND or not isinstance(pol, CoreDoor):
            return False
        if contexts.ndim == 2:  # one round, as predict takes it
            x, arm, reward = contexts, arms, rewards
            if type(arm) not in _INTS or type(reward) not in _FLOATS:
                return False
        else:
            # the compiled call takes one C-ordered float64 (K, d) array and checks its
            # shape against the core's (K, d) and its values; the rest is checked here.
            # An arm and a reward go on only as a Python int and float: an integer
            # array's .item() is an int, a real array's a float (the values that _rounds'
            # conversions would give); anything else (a bool, a float arm) goes to
            # _rounds' checks
            if (type(arms) is not _ND or type(rewards) is not _ND or arms.shape != _ONE
                    or rewards.shape != _ONE or contexts.ndim != 3 or len(contexts) != 1):
                return False
            arm, reward = arms.item(), rewards.item()
            if type(arm) is not int or type(reward) is not float:
                return False
            x = contexts[0]
        core = pol._ready()
        if core is None or (self.n_arms is not None and core.K != self.n_arms):
            return False
        return pol._learn(core, x, arm, reward) == 1

    def _learn(self, X, arms, rewards):
        if X.ndim == 2:  # the played rows (checked by _rows: the policy learns them)
            self.policy._learn_rows(X, arms, rewards, n_arms=self.n_arms)
            return self
        many = getattr(self.policy, "_learn_rounds", None)
        if many is not None:  # the policy's batch door (update_many), on rounds checked
            many(X, arms, rewards)
            return self
        for x, arm, reward in zip(X, arms, rewards, strict=True):
            self.policy.update(x, int(arm), float(reward))
        return self

    # -- choosing ----------------------------------------------------------------------
    def predict(self, contexts):
        """The arm the policy plays in each round: ``policy.select(contexts[i])``.

        Parameters
        ----------
        contexts : (n, K, d) or (K, d) array

        Returns
        -------
        (n,) int array, or an int for one ``(K, d)`` round
        """
        pol = self.policy
        if type(contexts) is np.ndarray and contexts.ndim == 2 and isinstance(pol, CoreDoor):
            core = pol._ready()
            # the compiled select checks the contexts' shape against the core's
            if core is not None and (self.n_arms is None or core.K == self.n_arms):
                # one round: the compiled select checks it; refused, checked below
                arm = pol._choose(core, contexts)
                if arm >= 0:
                    return arm
        X, one = self._contexts(contexts)
        many = pol._select_many(X) if isinstance(pol, CoreDoor) else None
        if many is None:
            many = np.array([pol.select(x) for x in X], dtype=np.int64)
        return int(many[0]) if one else many

    def predict_expectations(self, contexts):
        """Every arm's expected reward under the posterior mean, without a draw.

        ``model.predict(mean, x_a)`` with the engine's posterior mean (for a linear model
        ``x_a mean``, the posterior expected reward; for the logistic model its logit);
        LinUCB's ``x_a theta_hat`` (its score without the bonus); VTS's
        ``expected_rewards``; per arm, each arm's engine at its own row.

        Parameters
        ----------
        contexts : (n, K, d) or (K, d) array

        Returns
        -------
        (n, K) array, or (K,) for one round

        Raises
        ------
        TypeError
            If the policy has no posterior mean (Langevin, the diffusion engines, random).
        """
        X, one = self._contexts(contexts)
        score = self._expectations()
        out = np.array([score(x) for x in X]).reshape(X.shape[:2])
        return out[0] if one else out

    def _expectations(self):
        """The function ``(K, d) -> (K,)`` of the policy's expected rewards."""
        pol = self.policy
        if callable(getattr(pol, "expected_rewards", None)):
            return pol.expected_rewards
        if isinstance(pol, LinUCB):
            def linucb(x):
                out = np.empty(x.shape[0])
                # the UCB kernel with no bonus: x theta_hat, LinUCB's own estimate
                cpu.linucb_scores(pol.Vinv, pol.b, 0.0, np.ascontiguousarray(x), out)
                return out
            return linucb
        engines = ([pol.engine] if isinstance(pol, ThompsonSampling)
                   else list(pol.engines) if isinstance(pol, PerArm) else [])
        if not engines or not all(isinstance(e, GaussianEngine) for e in engines):
            raise TypeError(f"predict_expectations needs a posterior mean: the policy "
                            f"{getattr(pol, 'name', type(pol).__name__)!r} has none (use "
                            f"predict, which draws)")
        if isinstance(pol, ThompsonSampling):
            e = pol.engine
            return lambda x: e.model.predict(e.mean, x)
        return lambda x: np.array([e.model.predict(e.mean, x[a:a + 1])[0]
                                   for a, e in enumerate(engines)])

    # -- shapes ------------------------------------------------------------------------
    def _contexts(self, contexts, allow_one=True):
        """``(X (n, K, d), one)``: the rounds' contexts, validated; ``one`` when a single
        ``(K, d)`` round was given."""
        X = val.float_array(contexts, "contexts", finite=False)
        one = allow_one and X.ndim == 2
        if one:
            X = X[None]
        if X.ndim != 3:
            want = "(n, K, d) (n rounds of K arms' features)" + (" or (K, d)" if allow_one
                                                                 else "")
            raise ValueError(f"contexts must have shape {want}, got {X.shape}")
        n, K, d = X.shape
        if self.dim is not None and d != self.dim:
            raise ValueError(f"contexts must have d = {self.dim} features (the last axis), "
                             f"got shape {X.shape}")
        if K == 0 or (self.n_arms is not None and K != self.n_arms):
            need = self.n_arms if self.n_arms is not None else ">= 1"
            raise ValueError(f"contexts must have K = {need} arms (the second-to-last "
                             f"axis), got shape {X.shape}")
        val.bounded_data(X, "contexts")
        return X, one

    def _rounds(self, contexts, arms, rewards, allow_one=False):
        X = val.float_array(contexts, "contexts", finite=False)
        # (n, d) rows; for partial_fit, a (K, d) round unless its arm and reward are both
        # arrays (one round's arm as an array of one is refused as before, by its checks)
        if X.ndim == 2 and not (allow_one and (np.ndim(arms) == 0 or np.ndim(rewards) == 0)):
            return self._rows(X, arms, rewards)
        X, one = self._contexts(X, allow_one=allow_one)
        if one:  # one (K, d) round: its arm and reward, checked as policy.update checks
            arms = np.array([val.arm_index(arms, X.shape[1])])
            rewards = np.array([val.reward_value(rewards)])
        return (X, *val.logged_arms_rewards(X, arms, rewards))

    def _rows(self, X, arms, rewards):
        """The played arms' features ``X`` (n, d), their arms and rewards, checked, for a
        policy that learns from them (``_learn_rows``)."""
        if not callable(getattr(self.policy, "_learn_rows", None)):
            name = getattr(self.policy, "name", type(self.policy).__name__)
            raise TypeError(f"policy {name!r} learns from each round's contexts: give them "
                            f"as an (n, K, d) array (the played arms' features (n, d) are "
                            f"enough only for ThompsonSampling and LinUCB)")
        return val.logged_rows(X, arms, rewards, self.dim, self.n_arms)

    def __repr__(self):
        return f"Bandit({self.policy!r}, n_arms={self.n_arms}, dim={self.dim})"
