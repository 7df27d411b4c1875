"""The fused loop on the logistic model against the Python loop: VITS-II, LMC-TS, Laplace.

At appendix G's size (:mod:`vits_ref.experiments.vits.figG`): the hard instance
``hard_instance(dim=10, n_arms=10, reward="logistic")``, VITS-II and LMC-TS at figG's
points for the logistic panel (:data:`POINTS`, restated here since the experiments import
the benchmarks; ``tests/test_bench.py`` checks they are figG's), 10 inner steps, and
Laplace (IRLS), which figG does not run, at the same ``eta = 10``, ``lam = 10`` (its
defaults are ``eta = lam = 1``). Each policy runs through the public call
``simulate(policy, env, T, R, seed, fused=True)`` (the pieces of
:mod:`vits_ref.kernels.logistic_bandit`, ``prange`` over the runs, host draws included)
against ``fused=False`` (the Python loop over ``select``/``update``, whose steps are
compiled too) on the same seeds, ``R`` = Numba's threads, calls interleaved
(:func:`~.timing.median_times`); the fraction of equal arms says the two loops play the
same runs.

The logistic potential has no sufficient statistics: each gradient (and Hessian) is a sum
over the ``n`` observations so far, so a round's cost grows like ``a + b n``.
:func:`phase_times` times the fused loop's rounds ``[0, w)`` and ``[T - w, T)`` alone (the
state buffers restored before each call, the inputs pre-drawn) and
:func:`history_fraction` reads ``b`` and ``a`` off the two: the fraction of a late round
(``n ~ T``) and of the average round over ``T`` rounds that is the history's O(n d) work.
A straight line is exact for VITS and LMC-TS (a fixed number of steps a round); for
Laplace the Newton iterations a round vary (warm starts), so there it is an estimate.

::

    OPENBLAS_NUM_THREADS=1 python -c "from vits_ref._bench import logistic_loop as m; m.main()"
"""

import os
import time

import numba
import numpy as np

from .._seeding import run_seeds
from .._threads import numba_threads
from ..bandit._fused_draws import batch_chunks
from ..bandit.simulate import fused_spec, make_policy, simulate
from ..drivers import cpu
from ..envs import hard_instance
from .timing import median_times, ratio_text

#: appendix G's instance: d = K = 10
DIM = N_ARMS = 10
#: figG's points for the logistic panel (``figG.DEFAULT_POINTS["logistic"]``), by label
POINTS = {"VITS-II": {"eta": 10.0, "lam": 10.0, "step_size": 0.01},
          "LMC-TS": {"eta": 10.0, "lam": 10.0, "step_size": 0.1}}
#: Laplace is not in figG: the other methods' eta and lam
LAPLACE_POINT = {"eta": 10.0, "lam": 10.0}
#: the policies of this section, in print order
LABELS = ("VITS-II", "LMC-TS", "Laplace")


def policy(label, dim=DIM):
    """The policy of ``label`` on the logistic model (:data:`POINTS`, :data:`LAPLACE_POINT`)."""
    from ..bandit.policies import ThompsonSampling
    from ..inference import Laplace

    if label == "Laplace":
        return ThompsonSampling(Laplace(dim, model="logistic", **LAPLACE_POINT))
    name = {"VITS-II": "vits-ii", "LMC-TS": "lmc"}[label]
    return make_policy(name, dim, model="logistic", **POINTS[label])


def environment(dim=DIM, n_arms=N_ARMS, seed=0):
    """Appendix G's hard instance with logistic rewards."""
    return hard_instance(dim=dim, n_arms=n_arms, reward="logistic", seed=seed)


def loop_stats(label, n_rounds=1000, n_runs=None, repeats=5, seed=1, dim=DIM,
               n_arms=N_ARMS):
    """Microseconds per round of ``simulate(..., fused=True)`` and ``fused=False``.

    ``n_runs`` runs (default: Numba's threads) of ``label``'s policy on the same seeds,
    calls interleaved, medians of ``repeats``; both are compiled (or loaded from the
    cache) by a short call first. A round is one round of all ``n_runs`` runs (the fused
    loop runs them in parallel, the Python loop one after another). Returns a dict:
    ``fused``, ``python`` (us per round), ``ratio`` (Python / fused), ``arms_equal``
    (fraction of equal arms), ``max_regret_diff``, ``runs``, ``rounds``.
    """
    n_runs = numba.get_num_threads() if n_runs is None else int(n_runs)
    pol, env = policy(label, dim), environment(dim, n_arms)
    for fused in (True, False):  # compile outside the timing
        simulate(pol, env, 3, 1, seed=seed, fused=fused)
    res = {}

    def call(fused):
        def run():
            res[fused] = simulate(pol, env, n_rounds, n_runs, seed=seed, fused=fused)
        return run

    t_fused, t_py = median_times([call(True), call(False)], repeats)
    a, b = res[True], res[False]
    assert a.fused and not b.fused
    return {"fused": 1e6 * t_fused / n_rounds, "python": 1e6 * t_py / n_rounds,
            "ratio": t_py / t_fused, "arms_equal": float(np.mean(a.arms == b.arms)),
            "max_regret_diff": float(np.max(np.abs(a.regret - b.regret))),
            "runs": n_runs, "rounds": n_rounds}


def phase_times(label, n_rounds=1000, width=100, n_runs=None, repeats=5, seed=1, dim=DIM,
                n_arms=N_ARMS):
    """Microseconds per round of the fused loop over rounds ``[0, width)`` and
    ``[n_rounds - width, n_rounds)``: ``(early, late)``.

    The inputs are pre-drawn (:func:`vits_ref.bandit._fused_draws.batch_chunks`, chunks of
    ``width`` rounds) and the driver is :func:`vits_ref.drivers.cpu.bandit_rounds` over
    ``n_runs`` runs (default: Numba's threads), as ``simulate`` runs it, without the host
    draws. The late rounds start each time from the state buffers saved after round
    ``n_rounds - width`` (restored outside the timing).
    """
    if n_rounds % width or n_rounds < 2 * width:
        raise ValueError(f"n_rounds ({n_rounds}) must be a multiple of width ({width}) "
                         "and at least 2 width")
    n_runs = numba.get_num_threads() if n_runs is None else int(n_runs)
    spec = fused_spec(policy(label, dim))
    env = environment(dim, n_arms)
    seeds = run_seeds(seed, 0, n_runs)
    chunks = list(batch_chunks(spec, [env] * n_runs, seeds, n_rounds, width))
    rounds = cpu.bandit_rounds(spec.piece)
    M = chunks[0][5].shape[3]
    bufs = np.empty((n_runs, spec.piece.state_size(dim, n_arms, M, n_rounds)))
    outs = (np.empty((n_runs, n_rounds)), np.empty((n_runs, n_rounds), np.int64),
            np.zeros((n_runs, 0)), np.zeros(n_runs, np.int64))
    no_kl = np.zeros(0, np.int64)

    def advance(i):
        rounds(spec.params, bufs, i * width, *chunks[i], no_kl, *outs)
        if outs[3].any():
            raise FloatingPointError(f"{label}: a run diverged (status {outs[3].tolist()})")

    for i in range(len(chunks) - 1):  # compiles; the state after n_rounds - width rounds
        advance(i)
    saved = bufs.copy()
    times = [[], []]
    for _ in range(repeats):  # alternated, so drift hits both alike
        t0 = time.perf_counter()
        advance(0)  # t0 = 0 initialises the state
        times[0].append(time.perf_counter() - t0)
        np.copyto(bufs, saved)  # each late call starts from the saved state (untimed)
        t0 = time.perf_counter()
        advance(len(chunks) - 1)
        times[1].append(time.perf_counter() - t0)
    return (1e6 * float(np.median(times[0])) / width,
            1e6 * float(np.median(times[1])) / width)


def history_fraction(early, late, n_rounds=1000, width=100):
    """The history's share of a round from :func:`phase_times`, a round costing ``a + b n``
    at ``n`` observations: ``early`` and ``late`` are its means over ``[0, width)`` and
    ``[n_rounds - width, n_rounds)``. Returns ``(late_fraction, mean_fraction)``: ``b n /
    (a + b n)`` at the late window's mean ``n`` and over all ``n_rounds`` rounds (mean
    ``n``: ``(n_rounds - 1) / 2``); ``a`` and ``b`` from the two means (``b`` clipped at 0:
    timing noise can make the late rounds look cheaper)."""
    n_early, n_late = (width - 1) / 2, n_rounds - width + (width - 1) / 2
    b = max(0.0, (late - early) / (n_late - n_early))
    a = early - b * n_early
    n_mean = (n_rounds - 1) / 2
    return b * n_late / (a + b * n_late), b * n_mean / (a + b * n_mean)


#: rounds of the section: full and ``quick`` (the loops' ratio and the history's share
#: at half the history; the windows stay ``width`` rounds)
ROUNDS, QUICK_ROUNDS = 1000, 500


def main(quick=False, labels=LABELS, n_rounds=None, width=100):
    """Print the logistic-loop section of ``python -m vits_ref bench``.

    Sets Numba's threads to all (``R`` = that many runs) and restores them after.
    ``quick``: fewer repeats and :data:`QUICK_ROUNDS` rounds; ``labels``, ``n_rounds``
    (default :data:`ROUNDS`) and ``width`` (the early and late windows of
    :func:`phase_times`; 0 skips them) size it (tests use small sizes).
    """
    repeats = 3 if quick else 5
    if n_rounds is None:
        n_rounds = QUICK_ROUNDS if quick else ROUNDS
    with numba_threads(numba.config.NUMBA_NUM_THREADS) as R:
        print(f"logistic model, fused loop against the Python loop: hard instance d = K = "
              f"{DIM}, logistic rewards, {n_rounds} rounds, {R} runs on {R} Numba threads, "
              f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; "
              f"VITS-II and LMC-TS at figG's logistic points, Laplace at eta 10, lam 10; "
              f"median of {repeats}")
        for label in labels:
            s = loop_stats(label, n_rounds=n_rounds, repeats=repeats)
            print(f"  {label:8s} round: fused {s['fused']:8.1f} us, Python loop "
                  f"{s['python']:8.1f} us, ratio {ratio_text(s['ratio'], '5.1f', 'Python')}; "
                  f"arms equal {s['arms_equal']:.3f}, max |regret diff| "
                  f"{s['max_regret_diff']:.1e}")
        if width:
            print(f"  the history's O(n d) work, fused loop alone (inputs pre-drawn): rounds "
                  f"[0, {width}) against [{n_rounds - width}, {n_rounds})")
            for label in labels:
                early, late = phase_times(label, n_rounds, width, repeats=repeats)
                f_late, f_mean = history_fraction(early, late, n_rounds, width)
                print(f"  {label:8s} {early:8.1f} us a round early, {late:8.1f} us late "
                      f"({late / early:.1f}x): the history is {100 * f_late:.0f}% of a late "
                      f"round, {100 * f_mean:.0f}% of the average round")


if __name__ == "__main__":  # pragma: no cover
    main()
