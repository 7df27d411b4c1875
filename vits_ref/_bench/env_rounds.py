"""An environment round: what ``simulate`` costs beyond drawing the round's numbers.

For cheap policies a fused ``simulate`` round is mostly the environment's round: its
random numbers, then the features, expected rewards and rewards built from them, the
checks, and the stacking of the runs. This section times, side by side in one process
(calls interleaved, :func:`~.timing.median_times`), on the pool environment at d = 20,
K = 50, one thread:

* **drawing**: NumPy drawing the round's numbers and nothing else, the draws of the
  environment's one description of a round
  (:meth:`vits_ref.envs.rounds.RoundDraws.draw_rows`: K pool indices, K d normals and
  the reward's normal a round, each run's rows in one call per draw, from the run's own
  generator, as ``simulate`` draws them);
* ``simulate("random", ...)`` and ``simulate("lints", ...)``, every round of every run
  included (the fused loop's plan: the runs' whole horizons in one chunk);

and reports each ``simulate`` round over the drawing (the goal for the random policy:
at most 1.2x).

::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import env_rounds; env_rounds.main()"
"""

from .. import envs
from .._seeding import env_rng, run_seeds
from .._threads import numba_threads
from ..bandit.simulate import simulate
from .timing import median_times

DIM, ARMS = 20, 50
#: The ``simulate`` policies timed against the drawing, in print order.
POLICIES = ("random", "lints")


def round_costs(n_runs=4, n_rounds=1000, repeats=7, dim=DIM, n_arms=ARMS):
    """Microseconds per run-round: ``{"draw": ..., "random": ..., "lints": ...}`` and the
    ratios ``"random/draw"``, ``"lints/draw"``, from interleaved medians on one Numba
    thread (set ``OPENBLAS_NUM_THREADS=1`` for a single-thread figure)."""
    env = envs.pool(dim=dim, n_arms=n_arms, seed=0)
    desc = env.round_draws()
    seeds = run_seeds(1, 0, n_runs)

    def draw():
        for seed in seeds:
            desc.draw_rows(env_rng(seed), n_rounds)

    def run(policy):
        return lambda: simulate(policy, env, n_rounds, n_runs, seed=1, n_threads=1)

    with numba_threads(1):
        for policy in POLICIES:
            simulate(policy, env, 2, 1, seed=0, n_threads=1)  # compiled untimed
        times = median_times([draw] + [run(p) for p in POLICIES], repeats)
    scale = 1e6 / (n_runs * n_rounds)
    out = {"draw": times[0] * scale}
    for policy, t in zip(POLICIES, times[1:], strict=True):
        out[policy] = t * scale
        out[f"{policy}/draw"] = t / times[0]
    return out


def main(quick=False, **kw):
    """Print the section (``quick``: fewer repeats; ``kw`` to :func:`round_costs`)."""
    c = round_costs(repeats=3 if quick else 9, **kw)
    print(f"environment round (pool env, d={kw.get('dim', DIM)}, K={kw.get('n_arms', ARMS)}, "
          f"one thread, us per run-round, interleaved medians):")
    print(f"  NumPy drawing the round's numbers {c['draw']:7.2f} us; simulate random "
          f"{c['random']:7.2f} us ({c['random/draw']:.2f}x the drawing); simulate lints "
          f"{c['lints']:7.2f} us ({c['lints/draw']:.2f}x)")


if __name__ == "__main__":  # pragma: no cover
    main()
