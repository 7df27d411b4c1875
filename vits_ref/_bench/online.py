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
ratio online / fused is what the online API adds to the compiled round. Two more figures
say what no online API on these bodies can avoid, the *floor*:

- *draws*: the policy's random numbers of a round (:meth:`FusedSpec.draw
  <vits_ref.drivers.fused.FusedSpec.draw>`), which the fused column takes pre-drawn and
  an online policy draws as it goes (so does :func:`vits_ref.simulate`);
- *calls*: two calls from Python of compiled functions that do nothing, with the
  arguments of the online ``select`` and ``update`` (Numba's dispatcher types each
  argument on every call).

``online / (fused + draws)`` compares the two with the same randomness drawn; ``online /
floor`` (floor = fused + draws + calls) near 1 means the API adds nothing else. Where
``fused`` is a microsecond or two (LMC-TS's ``K_t`` steps on a tiny state) the two calls
alone are most of it, and where a round draws many numbers (the Hessian-free engine's
probes) the draws are: there the floor itself is over 1.3x the fused round. The online
side draws a block of ``T`` rounds per repeat (the block does not change the numbers), so
that every repeat pays for its randomness. Goals: at most 3x
for LinTS and LinUCB, 1.3x for the iterative engines: VITS-II, VITS-I, Hessian-free VITS
and LMC-TS on the pool, and Laplace (IRLS), whose fused loop is on the logistic model
only, on appendix G's hard instance with logistic rewards (:mod:`.logistic_loop`'s
policy, ``K = 50`` arms in ``d = 20``). Laplace's state keeps every observation, so its
online side starts a new :class:`~vits_ref.Online` each repeat (its construction, a
block of draws, is timed with the rounds) and both sides play the same rounds from the
prior. ``python -m vits_ref._bench.online`` prints them.
"""

import numpy as np

from .._seeding import policy_seed
from .._threads import numba_threads
from ..bandit.online import Online
from ..bandit.simulate import make_policy
from ..config import cpu_jit
from ..drivers import cpu
from ..drivers.fused import draw_chunks
from ..envs import pool
from .timing import median_times, pin_blas_threads

#: (policy name, rounds a repeat, goal of online / fused): the names of
#: :func:`~vits_ref.bandit.simulate.make_policy`, and ``"laplace"`` (see above)
CASES = (("lints", 400, 3.0), ("linucb", 400, 3.0), ("vits-ii", 100, 1.3),
         ("vits-i", 100, 1.3), ("vits-hf", 100, 1.3), ("lmc", 100, 1.3),
         ("laplace", 100, 1.3))


def _setting(name, d, K, seed):
    """The policy and environment of a case."""
    if name == "laplace":
        from .logistic_loop import environment, policy

        return policy("Laplace", d), environment(d, K, seed)
    return make_policy(name, d), pool(dim=d, n_arms=K, zeta=1.0, seed=seed)


def _problem(name, T, d, K, seed):
    """``(policy, realisation of T rounds, fused spec, policy seed)`` of a case."""
    pol, env = _setting(name, d, K, seed)
    real = env.realise(T, np.random.default_rng(seed))
    return pol, real, pol.fused(), policy_seed(np.random.SeedSequence(seed))


def _case(name, T, d, K, seed=0):
    pol, real, spec, ps = _problem(name, T, d, K, seed)
    init, sel, steps = spec.draw(ps, T, d)
    regret, arms = np.empty(T), np.empty(T, dtype=np.int64)
    run = cpu.bandit_run(spec.piece)
    no_kl = np.zeros(0, dtype=np.int64)

    def fused():
        run(spec.params, real.contexts, real.means, real.rewards, init, sel, steps, no_kl,
            regret, arms, np.zeros(0))

    grows = spec.piece.state_size(d, K, 1, 1) != spec.piece.state_size(d, K, 1, 2)
    # a block of draws a repeat: every repeat pays for its rounds' randomness (with blocks
    # longer than a repeat the median repeat would be one that draws nothing)
    on = Online(pol, K, seed=ps, horizon=T if grows else None, block=T)
    p = pol.fresh(ps)

    def online():  # the same object every repeat, as a deployed policy lives on
        nonlocal on
        if grows:  # a state that keeps every observation: the same rounds from the prior
            on = Online(pol, K, seed=ps, horizon=T, block=T)
        for t in range(T):
            X = real.contexts[t]
            a = on.select(X)
            on.update(X, a, real.rewards[t, a])

    def policy():
        nonlocal p
        if grows:
            p = pol.fresh(ps)
        for t in range(T):
            X = real.contexts[t]
            a = p.select(X)
            p.update(X, a, real.rewards[t, a])

    return fused, online, policy


@cpu_jit
def _select_call(meta, buf, X, sel_noise, i):
    """Nothing, with the arguments of the online ``select``'s compiled call."""
    return 0


@cpu_jit
def _update_call(meta, buf, X, arm, r, step_noise, i, n_obs):
    """Nothing, with the arguments of the online ``update``'s compiled call."""
    return 1


def _floor(name, T, d, K, seed=0):
    """``(draws, calls)``: the case's ``T`` rounds of draws, and of two compiled calls
    that do nothing with the online calls' arguments (see the module's docstring)."""
    pol, real, spec, ps = _problem(name, T, d, K, seed)
    on = Online(pol, K, seed=ps, horizon=T)

    def draws():  # as the online side draws them: one block of T rounds
        for _ in draw_chunks(spec, ps, T, d, T):
            pass

    meta, buf, sel, steps = on._meta, on._buf, on._sel_rows, on._steps_rows

    def calls():
        for t in range(T):
            X = real.contexts[t]
            a = _select_call(meta, buf, X, sel, t)
            _update_call(meta, buf, X, a, real.rewards[t, a], steps, t, t + 1)

    return draws, calls


def measure(d=20, K=50, repeats=7, cases=CASES):
    """``{name: {"fused_us", "online_us", "policy_us", "draws_us", "calls_us", "ratio",
    "drawn_ratio", "floor_ratio", "goal"}}``, per round (see the module's docstring):
    ``ratio`` is online / fused, ``drawn_ratio`` online / (fused + draws), the same
    randomness on both sides, and ``floor_ratio`` online / (fused + draws + calls)."""
    pin_blas_threads(1)
    out = {}
    with numba_threads(1):
        for name, T, goal in cases:
            fns = _case(name, T, d, K) + _floor(name, T, d, K)
            for fn in fns:  # compile and warm, untimed
                fn()
            f, o, p, dr, c = (s / T for s in median_times(fns, repeats))
            out[name] = {"fused_us": 1e6 * f, "online_us": 1e6 * o, "policy_us": 1e6 * p,
                         "draws_us": 1e6 * dr, "calls_us": 1e6 * c, "ratio": o / f,
                         "drawn_ratio": o / (f + dr), "floor_ratio": o / (f + dr + c),
                         "goal": goal}
    return out


def main(quick=False):
    """Print the per-round cost of the online API against the fused loop's round."""
    m = measure(repeats=3 if quick else 7)
    print("Online API: select + update per round, d = 20, K = 50, one thread "
          "(fused: the compiled round alone; floor: fused + the round's draws + two "
          "compiled calls that do nothing)")
    print(f"  {'policy':8s} {'fused us':>9s} {'draws us':>9s} {'calls us':>9s} "
          f"{'online us':>10s} {'online/fused':>13s} {'/(fused+draws)':>15s} "
          f"{'online/floor':>13s} {'policy API us':>14s}")
    for name, r in m.items():
        print(f"  {name:8s} {r['fused_us']:9.1f} {r['draws_us']:9.2f} {r['calls_us']:9.2f} "
              f"{r['online_us']:10.1f} {r['ratio']:12.2f}x {r['drawn_ratio']:14.2f}x "
              f"{r['floor_ratio']:12.2f}x {r['policy_us']:14.1f}")
    return m


if __name__ == "__main__":
    main()
