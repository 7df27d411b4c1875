"""Every door to a policy, against the compiled floor and the peers, in one process.

A user reaches a policy through one of three doors: the policy objects
(``ThompsonSampling(engine).select`` / ``.update``, ``LinUCB``), the scikit-learn-style
:class:`vits_ref.Bandit` (``fit``, ``partial_fit``, ``predict``) and
:class:`vits_ref.Online`. Measured here on ``d = 20``, ``K = 50`` (the pool environment's
contexts), one Numba thread, ``OPENBLAS_NUM_THREADS=1``, medians of interleaved repeats
(:func:`.timing.median_times`):

- *decision*: one ``select`` and one ``update`` of one round through each door, against
  ``Online``'s. ``Bandit``: ``predict`` of one ``(K, d)`` round and ``partial_fit`` of the
  same round with the arm and the reward (an int and a float, as ``Online.update`` takes
  them); ``Bandit (rows)``: ``partial_fit`` of the round as arrays of one row,
  ``(1, K, d)``, ``(1,)``, ``(1,)``, which the user builds each round;
- *fit*: learning ``N_FIT`` logged rounds (contexts ``(n, K, d)``, the arms played, their
  rewards): ``Bandit.fit``, ``Online.update_many``, and the floor, the exact engine's own
  batch update of the played rows (``LinTS.update``; LinUCB's Sherman-Morrison rows);
  ``Bandit.fit (rows)``: the same rounds given as the played arms' features ``(n, d)``
  (what the peers are given, and all a learning door reads of a round); for Laplace, whose
  update only stores the rows, one read of the rounds' ``n K d`` numbers too (their check
  reads every one: the floor of a fit of the rounds);
- *predict*: the arms of ``N_PREDICT`` rounds: ``Bandit.predict`` against
  ``Online.select_many``;
- *batch*: feedback of ``N_BATCH`` logged rounds a call (a service that learns what came
  back since its last call): ``Bandit.partial_fit``, the policy object's ``update_many``,
  against ``Online.update_many``.

The peers a user would pick instead, where installed (``pip install mabwiser
bayesianbandits``): MABWiser's ``LinTS`` / ``LinUCB`` and bayesianbandits' ``ContextualAgent``
with a ``NormalRegressor`` per arm and Thompson sampling. Both keep one independent
model per arm over a context shared by the arms (their model), where the library's
policies keep one model over per-arm features: the same data sizes (``n`` rounds of
``d = 20`` features into ``d x d`` statistics; ``K`` arms scored per decision), not the
same model, so the ratios compare what a user waits for. ``python -m vits_ref._bench.doors``
prints the tables (``--loaded``: least CPU times, for a machine other work loads).
"""

import numpy as np

from .. import _validate as val
from .._threads import numba_threads
from ..bandit.estimator import Bandit
from ..bandit.online import Online
from ..bandit.policies import ThompsonSampling
from ..bandit.simulate import make_policy
from ..bandit.simulate import simulate as _simulate
from ..envs import pool
from ..inference.laplace import Laplace
from .timing import least_cpu_times, median_times, pin_blas_threads

#: Logged rounds learnt by a fit, and rounds decided by a predict.
N_FIT, N_PREDICT = 10_000, 1_000
#: The policies measured (names of :func:`vits_ref.make_policy`), and the rounds a decision
#: repeat plays.
DECISION_CASES = (("lints", 200), ("linucb", 200), ("vits-ii", 50), ("lmc", 50))
FIT_CASES = ("lints", "linucb", "laplace")
#: Rounds of feedback a batch call learns, the calls a repeat makes, and the policies.
N_BATCH, BATCHES = 10, 20
BATCH_CASES = ("lints", "linucb", "lmc")


def _logged(n, d, K, seed=0):
    """``n`` logged rounds of the pool environment: contexts, uniformly random arms played,
    their rewards."""
    env = pool(dim=d, n_arms=K, zeta=1.0, seed=seed)
    real = env.realise(n, np.random.default_rng(seed))
    arms = np.random.default_rng(seed + 1).integers(0, K, size=n)
    return real.contexts, arms, real.rewards[np.arange(n), arms]


def decisions(name, T, d=20, K=50, seed=0):
    """``{door: fn}``, each playing the same ``T`` rounds select-then-update."""
    X, _, _ = _logged(T, d, K, seed)
    rewards = np.random.default_rng(seed + 2).standard_normal((T, K))
    online = Online(name, K, seed=seed, dim=d)
    pol = make_policy(name, d, seed=seed)
    bandit = Bandit(name, n_arms=K, dim=d, seed=seed)

    def play_online():
        for t in range(T):
            a = online.select(X[t])
            online.update(X[t], a, rewards[t, a])

    def play_policy():
        for t in range(T):
            a = pol.select(X[t])
            pol.update(X[t], a, rewards[t, a])

    def play_bandit():
        for t in range(T):
            a = bandit.predict(X[t])
            bandit.partial_fit(X[t], a, rewards[t, a])

    rows = Bandit(name, n_arms=K, dim=d, seed=seed)

    def play_bandit_rows():
        for t in range(T):
            a = rows.predict(X[t])
            rows.partial_fit(X[t:t + 1], np.array([a]), rewards[t, a:a + 1])

    env = pool(dim=d, n_arms=K, zeta=1.0, seed=seed)

    def simulate():  # the compiled loop's round: one run of T rounds, its draws included
        _simulate(name, env, T, 1, seed=seed, fused=True)

    return {"online": play_online, "policy": play_policy, "bandit": play_bandit,
            "bandit-rows": play_bandit_rows, "simulate": simulate}


def batches(name, d=20, K=50, seed=0, n=N_BATCH, calls=BATCHES):
    """``{door: fn}``: each ``fn`` learns ``calls`` batches of ``n`` logged rounds through
    its door, one call a batch, continuing its object's state from one repeat to the
    next."""
    X, arms, rewards = _logged(n * calls, d, K, seed)
    learn = {"Bandit.partial_fit": Bandit(name, n_arms=K, dim=d, seed=seed).partial_fit,
             "policy.update_many": make_policy(name, d, seed=seed).update_many,
             "Online.update_many": Online(name, K, seed=seed, dim=d).update_many}

    def feed(fn):
        def run():
            for i in range(0, n * calls, n):
                fn(X[i:i + n], arms[i:i + n], rewards[i:i + n])
        return run
    return {door: feed(fn) for door, fn in learn.items()}


def _peers(name, K, seed):
    """``{peer: (fit(played, arms, rewards), predict(contexts))}`` of the installed
    peers: per-arm models over one context a round (see the module's docstring)."""
    out = {}
    try:
        from mabwiser.mab import MAB, LearningPolicy
    except ImportError:
        pass
    else:
        lp = (LearningPolicy.LinTS(alpha=1.0, l2_lambda=1.0) if name == "lints"
              else LearningPolicy.LinUCB(alpha=1.0, l2_lambda=1.0))

        def mab_fit(x, a, r):
            mab = MAB(arms=list(range(K)), learning_policy=lp, seed=seed)
            mab.fit(decisions=a, rewards=r, contexts=x)
            return mab

        out["MABWiser"] = mab_fit
    if name == "lints":
        try:
            from bayesianbandits import Arm, ContextualAgent, NormalRegressor
            from bayesianbandits import ThompsonSampling as BBThompson
        except ImportError:
            pass
        else:
            def bb_fit(x, a, r):
                agent = ContextualAgent([Arm(k, learner=NormalRegressor(alpha=1.0, beta=1.0))
                                         for k in range(K)], BBThompson(), random_seed=seed)
                for k in range(K):  # each arm's rows in one update, the fastest way
                    rows = a == k
                    if rows.any():
                        agent.select_for_update(k).update(x[rows], r[rows])
                return agent

            out["bayesianbandits"] = bb_fit
    return out


def fit_predict(name, d=20, K=50, seed=0, n_fit=N_FIT, n_predict=N_PREDICT):
    """``({door: fit fn}, {door: predict fn})`` for ``name`` (LinTS or LinUCB): the
    library's doors, the exact engine's floor and the installed peers, on the same logged
    rounds (see the module's docstring)."""
    X, arms, rewards = _logged(n_fit, d, K, seed)
    played = np.ascontiguousarray(X[np.arange(n_fit), arms])
    Xp, _, _ = _logged(n_predict, d, K, seed + 3)
    if name == "laplace":  # no name, no fused loop: Thompson sampling over the engine
        eng = Laplace(d, eta=10.0, lam=10.0, seed=seed)
        bandit = Bandit(ThompsonSampling(eng), n_arms=K, seed=seed)
        return ({"Bandit.fit": lambda: bandit.fit(X, arms, rewards),
                 "Bandit.fit (rows)": lambda: bandit.fit(played, arms, rewards),
                 "floor: Laplace.update": lambda: eng.fresh(seed).update(played, rewards),
                 # the check every door makes of the rounds: one read of all of them
                 "read of the rounds": lambda: val.bounded_data(X, "contexts")},
                {})
    fits = {
        "Bandit.fit": lambda: Bandit(name, n_arms=K, dim=d, seed=seed).fit(X, arms, rewards),
        "Bandit.fit (rows)": lambda: Bandit(name, n_arms=K, dim=d, seed=seed).fit(
            played, arms, rewards),
        "Online.update_many": lambda: Online(name, K, seed=seed, dim=d).update_many(
            X, arms, rewards),
    }
    pol = make_policy(name, d, seed=seed)
    if name == "lints":
        fits["floor: LinTS.update"] = lambda: pol.engine.fresh(seed).update(played, rewards)
    else:
        fits["floor: update_many"] = lambda: pol.fresh(seed).update_many(X, arms, rewards)
    peers = _peers(name, K, seed)
    for peer, fit in peers.items():
        fits[peer] = (lambda fit=fit: fit(played, arms, rewards))
    bandit = Bandit(name, n_arms=K, dim=d, seed=seed).fit(X, arms, rewards)
    # a new Online a repeat (its construction and draws timed with it): the same rounds
    # decided from the same state, as Bandit.predict draws as it goes
    predicts = {"Bandit.predict": lambda: bandit.predict(Xp),
                "Online.select_many": lambda: Online(name, K, seed=seed, dim=d).select_many(
                    Xp)}
    shared = Xp[:, 0, :]  # the peers' one context a round: the first arm's features
    for peer, fit in peers.items():
        model = fit(played, arms, rewards)
        if peer == "MABWiser":
            predicts[peer] = lambda model=model: model.predict(shared)
        else:
            predicts[peer] = lambda model=model: model.pull(shared)
    return fits, predicts


def measure(repeats=5, cases=DECISION_CASES, fit_cases=FIT_CASES, d=20, K=50,
            n_fit=N_FIT, n_predict=N_PREDICT, loaded=False, batch_cases=BATCH_CASES):
    """``{"decision": {name: {door: us}}, "fit": {name: {door: ms}}, "predict": {name:
    {door: ms}}, "batch": {name: {door: us}}}``: per round for a decision, per call for
    fit, predict and a batch of feedback. ``loaded``:
    the least CPU time of each over ``repeats`` interleaved calls
    (:func:`.timing.least_cpu_times`, for a machine other work loads), instead of the
    median wall time."""
    times_of = least_cpu_times if loaded else median_times
    pin_blas_threads(1)
    out = {"decision": {}, "fit": {}, "predict": {}, "batch": {}}
    with numba_threads(1):
        for name, T in cases:
            fns = decisions(name, T, d, K)
            for fn in fns.values():  # compile and warm, untimed
                fn()
            times = times_of(list(fns.values()), repeats)
            out["decision"][name] = {k: 1e6 * t / T for k, t in zip(fns, times, strict=True)}
        for name in fit_cases:
            fits, predicts = fit_predict(name, d, K, n_fit=n_fit, n_predict=n_predict)
            for group, fns in (("fit", fits), ("predict", predicts)):
                if not fns:
                    continue
                for fn in fns.values():
                    fn()
                times = times_of(list(fns.values()), repeats)
                out[group][name] = {k: 1e3 * t for k, t in zip(fns, times, strict=True)}
        for name in batch_cases:
            fns = batches(name, d, K)
            for fn in fns.values():
                fn()
            times = times_of(list(fns.values()), repeats)
            out["batch"][name] = {k: 1e6 * t / BATCHES for k, t in zip(fns, times,
                                                                       strict=True)}
    return out


def main(quick=False, loaded=False):
    """Print the doors' tables (``loaded``: least CPU times of 40 repeats, see
    :func:`measure`)."""
    m = measure(repeats=3 if quick else 40 if loaded else 5, loaded=loaded)
    print("Doors: a decision (select + update) per round, d = 20, K = 50, one thread; "
          "ratio to Online's")
    print(f"  {'policy':8s} {'simulate us':>11s} {'Online us':>10s} {'policy us':>10s} "
          f"{'ratio':>7s} {'Bandit us':>10s} {'ratio':>7s} {'rows us':>8s} {'ratio':>7s}   "
          "(ratios to Online's; policy/simulate; rows: partial_fit of (1, K, d), (1,), (1,))")
    for name, r in m["decision"].items():
        o, s = r["online"], r["simulate"]
        print(f"  {name:8s} {s:11.1f} {o:10.1f} {r['policy']:10.1f} {r['policy'] / o:6.2f}x "
              f"{r['bandit']:10.1f} {r['bandit'] / o:6.2f}x {r['bandit-rows']:8.1f} "
              f"{r['bandit-rows'] / o:6.2f}x   {r['policy'] / s:.2f}x")
    refs = {"fit": ("the exact engine's batch update", lambda r: r[[k for k in r
                                                                   if "floor" in k][0]]),
            "predict": ("Online.select_many", lambda r: r["Online.select_many"])}
    for group, what in (("fit", f"Fit of {N_FIT} logged rounds"),
                        ("predict", f"Predict of {N_PREDICT} rounds")):
        label, ref_of = refs[group]
        print(f"{what} (ms), ratio to {label}")
        for name, r in m[group].items():
            ref = ref_of(r)
            cells = ", ".join(f"{k} {v:.1f} ({v / ref:.2f}x)" for k, v in r.items())
            print(f"  {name:8s} {cells}")
    print(f"Feedback of {N_BATCH} logged rounds a call (us a call), ratio to "
          "Online.update_many")
    for name, r in m["batch"].items():
        ref = r["Online.update_many"]
        cells = ", ".join(f"{k} {v:.1f} ({v / ref:.2f}x)" for k, v in r.items())
        print(f"  {name:8s} {cells}")
    return m


if __name__ == "__main__":
    import sys

    main(loaded="--loaded" in sys.argv[1:])
