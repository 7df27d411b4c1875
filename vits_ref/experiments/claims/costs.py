r"""Cost counts of the papers' algorithms as written: floating-point operations per step.

A timing claim is judged twice (``docs/reproduction/judging.md``, "Timings judged twice"):
on the library's code as it runs, and on the paper's algorithm as the paper writes it. The
second is a count, not a timing: the floating-point operations of each step as the
algorithm states it, with no cache and no sufficient statistic the paper does not use.

Conventions: a multiply-add is 2 flops; a ``(d, d)`` by ``(d, d)`` product ``2 d^3``, a
``(d, d)`` by vector ``2 d^2``, an outer product ``d^2``. A potential over ``n``
observations ``U(theta) = sum_i l(x_i^T theta, r_i) + theta^T P0 theta / 2`` (the linear
Gaussian and the logistic model of the VITS paper, prior precision ``P0``) costs, as
written, ``4 n d + 2 d^2`` for its gradient (``X theta`` and ``X^T g``, the prior's
product) and ``2 n d^2 + d^2`` for its Hessian (``X^T diag(w) X`` over the ``n`` rows, the
prior added): the quantities the VITS authors' code recomputes for every draw, step and
round (the library caches ``eta V`` instead, constant on the linear model:
``docs/algorithms.md``, "Potentials"). Scalar work per observation (a
sigmoid) and the ``O(d)`` vector updates are left out: they are the same on both sides of
every ratio below, or smaller than the terms kept by a factor ``d``.
"""

import math

from ... import _validate as val


def gradient_flops(n, d):
    """Gradient of a potential over ``n`` observations as written: ``4 n d + 2 d^2``."""
    return 4 * n * d + 2 * d * d


def hessian_flops(n, d):
    """Hessian of a potential over ``n`` observations as written: ``2 n d^2 + d^2``."""
    return 2 * n * d * d + d * d


def vits_ii_step_flops(n, d, variant="II", n_draws=1):
    """One step of the VITS paper's Algorithm 3 as written, at ``n`` observations.

    Both variants: the draws ``theta_j = mu + B^T eps_j`` (``2 d^2`` each), a gradient at
    each draw, ``S = C^T C`` (``2 d^3``), ``(I - h A) B`` (``2 d^3``) and ``C (I - h (S -
    A))`` (``2 d^3``). ``variant="II"`` (the Hessian, (H)): ``A`` is the Hessian at the draw;
    ``"hessian_free"`` ((H free), eq. 13): ``A`` is the mean over the draws of
    ``S (theta_j - mu) grad U(theta_j)^T`` (``2 d^2 + d^2`` each, ``S`` shared).

    >>> vits_ii_step_flops(0, 2)  # 6 d^3 + draw 2 d^2 + grad 2 d^2 + Hessian d^2
    68
    """
    n = val.positive_int(n, "n", minimum=0)
    d = val.positive_int(d, "d")
    n_draws = val.positive_int(n_draws, "n_draws")
    common = 6 * d ** 3 + n_draws * (2 * d * d + gradient_flops(n, d))
    if variant == "II":
        return common + hessian_flops(n, d)
    if variant == "hessian_free":
        return common + n_draws * 3 * d * d
    raise ValueError(f"variant must be 'II' or 'hessian_free', got {variant!r}")


def langevin_step_flops(n, d):
    """One Langevin step as written at ``n`` observations: a gradient and the update with
    its noise (``3 d``)."""
    return gradient_flops(n, d) + 3 * d


def fig1_ratio(d=20, rounds=1000, n_steps=10, n_draws=20):
    """Flops of VITS-II Hessian-free over VITS-II (the VITS paper's Algorithm 3 as written)
    for a run of Figure 1: ``rounds`` rounds, ``n_steps`` steps each at the round's ``t - 1``
    observations, ``n_draws`` Monte Carlo draws per Hessian-free step (the paper's 20) and
    one draw per VITS-II step (appendix E: "1 (Hessian) and 20 (Hessian-free)"). The
    rounds' draws of ``theta`` for the arms' scores (one each) are the same on both sides
    and cancel in neither: they are counted (``2 d^2`` per round)."""
    rounds = val.positive_int(rounds, "rounds")
    n_steps = val.positive_int(n_steps, "n_steps")
    hf = ii = 0
    for t in range(1, rounds + 1):
        hf += 2 * d * d + n_steps * vits_ii_step_flops(t - 1, d, "hessian_free", n_draws)
        ii += 2 * d * d + n_steps * vits_ii_step_flops(t - 1, d, "II", 1)
    return hf / ii


def movielens_ratio(mean_chosen_history, d=5, n_arms=100, rounds=1000, n_steps=10):
    """Flops of VITS-II over LMC-TS per run of the VITS paper's MovieLens experiment, as
    section 5 writes them: "for each time step t and each arm a, LMC-TS requires running
    Langevin diffusion" (``n_steps`` Langevin steps on every arm, each over that arm's own
    observations, which sum to ``t - 1`` over the arms), where "VITS for each arm only
    involves sampling from a low-dimensional Gaussian distribution" (``2 d^2`` per arm) "and
    updating the variational posterior corresponding to the chosen arm" (``n_steps`` VITS-II
    steps over the chosen arm's observations).

    ``mean_chosen_history`` is the chosen arm's number of earlier observations, averaged
    over the rounds (the VITS-II cost is linear in it, so its mean gives the exact sum): a
    property of the run's arm sequence, read from the experiment's summary.
    """
    if not (math.isfinite(mean_chosen_history) and mean_chosen_history >= 0):
        raise ValueError(f"mean_chosen_history must be finite and >= 0, got "
                         f"{mean_chosen_history}")
    rounds = val.positive_int(int(rounds), "rounds")
    lmc = vits = 0.0
    for t in range(1, rounds + 1):
        # every arm's chain: the gradients' data terms sum to the t - 1 observations
        lmc += n_steps * (4 * (t - 1) * d + n_arms * langevin_step_flops(0, d))
        vits += n_arms * 2 * d * d
    # the chosen arm's VITS-II steps, linear in its history: at the mean history, per round
    per_step = (vits_ii_step_flops(0, d, "II", 1)
                + mean_chosen_history * (4 * d + 2 * d * d))
    vits += rounds * n_steps * per_step
    return vits / lmc
