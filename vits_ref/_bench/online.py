"""The online API's cost per decision against the fused loop's round, in one process.

A deployed policy pays a ``select`` when a request arrives and an ``update`` when the reward
comes back. Three ways of playing the same ``T`` rounds of one realisation (``d = 20``,
``K = 50``, the pool environment), one Numba thread, ``OPENBLAS_NUM_THREADS=1``:

- *fused*: the compiled loop over the rounds' pre-drawn inputs
  (:func:`vits_ref.drivers.cpu.bandit_run`): the round's compute and nothing else (no
  environment, no draws), the floor of any online API built on the same bodies;
- *online*: :class:`vits_ref.Online`'s ``select`` then ``update`` per round, from Python,
  its randomness drawn a block of rounds ahead as it goes (one object over the repeats,
  as a deployed policy lives on);
- *policy*: the policy object's ``select`` then ``update`` (``ThompsonSampling(engine)``,
  ``LinUCB``): NumPy validation and the engine's Python state.

Figures are per round, medians of interleaved repeats (:func:`.timing.median_times`); the
ratio online / fused is what the online API adds to the compiled round. Goals: at most 3x
for LinTS and LinUCB, 1.3x for VITS-II. ``python -m vits_ref._bench.online`` prints them.
"""

import numpy as np

from .._seeding import policy_seed
from .._threads import numba_threads
from ..bandit.online import Online
from ..bandit.simulate import make_policy
from ..drivers import cpu
from ..envs import pool
from .timing import median_times, pin_blas_threads

#: (policy name, rounds a repeat, goal of online / fused)
CASES = (("lints", 400, 3.0), ("linucb", 400, 3.0), ("vits-ii", 100, 1.3))


def _case(name, T, d, K, seed=0):
    env = pool(dim=d, n_arms=K, zeta=1.0, seed=seed)
    real = env.realise(T, np.random.default_rng(seed))
    pol = make_policy(name, d)
    spec = pol.fused()
    ps = policy_seed(np.random.SeedSequence(seed))
    init, sel, steps = spec.draw(ps, T, d)
    regret, arms = np.empty(T), np.empty(T, dtype=np.int64)
    run = cpu.bandit_run(spec.piece)
    no_kl = np.zeros(0, dtype=np.int64)

    def fused():
        run(spec.params, real.contexts, real.means, real.rewards, init, sel, steps, no_kl,
            regret, arms, np.zeros(0))

    on = Online(pol, K, seed=ps)
    p = pol.fresh(ps)

    def online():  # the same object every repeat, as a deployed policy lives on
        for t in range(T):
            X = real.contexts[t]
            a = on.select(X)
            on.update(X, a, real.rewards[t, a])

    def policy():
        for t in range(T):
            X = real.contexts[t]
            a = p.select(X)
            p.update(X, a, real.rewards[t, a])

    return fused, online, policy


def measure(d=20, K=50, repeats=7, cases=CASES):
    """``{name: {"fused_us", "online_us", "policy_us", "ratio", "goal"}}``, per round."""
    pin_blas_threads(1)
    out = {}
    with numba_threads(1):
        for name, T, goal in cases:
            fns = _case(name, T, d, K)
            for fn in fns:  # compile and warm, untimed
                fn()
            f, o, p = (s / T for s in median_times(fns, repeats))
            out[name] = {"fused_us": 1e6 * f, "online_us": 1e6 * o, "policy_us": 1e6 * p,
                         "ratio": o / f, "goal": goal}
    return out


def main(quick=False):
    """Print the per-round cost of the online API against the fused loop's round."""
    m = measure(repeats=3 if quick else 7)
    print("Online API: select + update per round, d = 20, K = 50, one thread "
          "(fused: the compiled round alone)")
    print(f"  {'policy':8s} {'fused us':>9s} {'online us':>10s} {'online/fused':>13s} "
          f"{'policy API us':>14s}")
    for name, r in m.items():
        print(f"  {name:8s} {r['fused_us']:9.1f} {r['online_us']:10.1f} {r['ratio']:12.2f}x "
              f"{r['policy_us']:14.1f}")
    return m


if __name__ == "__main__":
    main()
