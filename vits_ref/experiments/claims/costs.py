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


def regressor_flops(d, hidden=(32, 32)):
    """One call of a stage's noise regressor ``eps_t(s)``, a two-hidden-layer ReLU network
    ``d -> h1 -> h2 -> d`` (Kveton et al., appendix B: "a 2-layer neural network with ReLU
    activations"; the widths are the library's, :class:`vits_ref.diffusion.DiffusionPrior`):
    its three products ``2 (d h1 + h1 h2 + h2 d)`` and biases ``h1 + h2 + d``."""
    d = val.positive_int(d, "d")
    h1, h2 = (val.positive_int(h, "hidden") for h in hidden)
    return 2 * (d * h1 + h1 * h2 + h2 * d) + h1 + h2 + d


def gaussian_stage_flops(d):
    """One product-of-Gaussians draw as Theorem 2 (and section 2's eq. 3) writes it: the
    precision ``P + Sbar^-1 / abar`` (``2 d^2``), its inverse (``d^3``: a Cholesky
    factorisation and the inverse from it), the mean ``S (P mu + Sbar^-1 thetabar / sqrt(abar))``
    (``4 d^2 + 2 d``), and the draw ``m + chol(S) z`` (``d^3 / 3 + d^2 + d``)."""
    d = val.positive_int(d, "d")
    return 4 * d ** 3 / 3 + 7 * d * d + 3 * d


def linear_evidence_flops(n, d):
    """Section 2's eq. (3) statistics from a history of ``n`` observations, as written:
    ``Sbar^-1 = sigma^-2 sum phi phi^T`` (``2 n d^2 + d^2``) and ``Sbar^-1 thetabar =
    sigma^-2 sum phi y`` (``2 n d + d``)."""
    n = val.positive_int(n, "n", minimum=0)
    d = val.positive_int(d, "d")
    return 2 * n * d * d + 2 * n * d + d * d + d


def diffts_ratio(d=2, n_arms=100, n_stages=100, rounds=100, hidden=(32, 32)):
    """Flops of DiffTS (LaplaceDPS Thompson sampling, Kveton et al.'s Algorithms 2 and 3 as
    written) over TS with a Gaussian prior, per run of the linear bandit of section 6.2,
    divided by ``T = n_stages`` (the claim's "T times").

    Per round ``t``, both: the evidence from the ``t - 1`` earlier observations
    (:func:`linear_evidence_flops`) and the scores of the ``n_arms`` arms (``2 K d``). TS
    then draws once from the Gaussian posterior (:func:`gaussian_stage_flops`); DiffTS
    draws ``s_T`` the same way and then, for each of the ``T`` stages, calls the regressor
    (:func:`regressor_flops`), forms the reverse mean ``mu_t(s_t)`` (``6 d``) and draws from
    the stage's product of Gaussians. The regressor's widths are the library's (the paper
    gives none): the count is on that reconstruction.

    >>> round(diffts_ratio(), 2)
    2.33
    """
    n_stages = val.positive_int(n_stages, "n_stages")
    rounds = val.positive_int(rounds, "rounds")
    n_arms = val.positive_int(n_arms, "n_arms")
    stage, net = gaussian_stage_flops(d), regressor_flops(d, hidden)
    ts = diff = 0.0
    for t in range(1, rounds + 1):
        common = linear_evidence_flops(t - 1, d) + 2 * n_arms * d
        ts += common + stage
        diff += common + (n_stages + 1) * stage + n_stages * (net + 6 * d)
    return diff / ts / n_stages
