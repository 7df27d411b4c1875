r"""The OPVI paper, section 5.1 and Figure 2: the Welling-Teh mixture.

Setup, as the paper states it: ``(theta1, theta2) ~ N(0, diag(10, 1))``, ``x_i ~ 0.5
N(theta1, sigma_x^2) + 0.5 N(theta1 + theta2, sigma_x^2)`` with ``sigma_x = 2`` ("about
10 000" points, :data:`N_DATA` = 10 000, drawn at ``theta = (0, 1)``); 500 rounds, 100
particles. Welling and Teh's own paper used ``sigma_x^2 = 2``: ``sigma_x2=2.0``. The
likelihood is symmetric under ``(theta1, theta2) -> (theta1 + theta2, -theta2)``, so the
posterior has two modes, near ``(0, 1)`` and ``(1, -1)``, separated by the line
``theta2 = 0``; the prior hardly breaks the symmetry.

Methods (the FITDS policy of section 5: the same 500 rounds and, but for full batch,
about the same number of data points, each round's batch the next points of one pass over
the shuffled data):

- **OPVI** (Algorithm 1): batch ``B_t = ceil(t^0.55)`` (10 104 points in 500 rounds), the
  summed batch log-likelihood, the prior weighted by ``6 / (pi^2 t^2)``, repulsion 0.1;
- **OPVI (B = 20)**: the same with the paper's static batch (Figure 2 and Table 1 show it);
- **SVGD (B = 20)**: the naive online SVGD, the batch log-likelihood scaled by ``N / B``
  (an unbiased estimate of the full log-likelihood, as in the SVGD reference code), full
  prior, repulsion 1;
- **SGLD (B = 20)** (Welling & Teh): ``theta += eps/2 grad + N(0, eps)`` with the same
  ``N / B`` gradient;
- **SVGD (full batch)**: all ``N`` points every round.

Particles start from the prior (the same draw for every method of a run). Steps: AdaGrad
as in the SVGD reference code (``hist = 0.9 hist + 0.1 phi^2`` after a first
``hist = phi^2``, step ``step_size phi / (1e-6 + sqrt(hist))``) with ``step_size`` =
:data:`STEP_SIZE` for every particle method ("All ParVI methods use the same stepsize",
section 5.2); SGLD at the constant :data:`SGLD_STEP` (the paper: "a smaller but best
possible stepsize"). Both chosen by one short stated tuning on 3 runs with seed 100 (not
the evaluation seeds), final energy distance: SGLD step 1e-3 / 3e-4 / 1e-4 / 3e-5 / 1e-5
gave 0.71 / 0.37 / **0.26** / 0.33 / 0.39; the particle step was chosen on the baseline
SVGD (B = 20), not on OPVI: 0.01 / 0.03 / **0.05** / 0.1 gave 0.51 / 0.30 / 0.30 / 0.38
(OPVI: 0.50 / 0.34 / 0.35 / 0.39).
Every method uses the library's compiled SVGD direction :func:`vits_ref.inference.svgd.phi` with the
median bandwidth.

Measure: the **energy distance** between the particles and the exact posterior, the
latter on a grid (:func:`grid_posterior`: the log posterior on a 2-D grid fitted around
its mass, normalised; the energy distance is computed against the grid's cells as a
weighted point set, without sampling noise). Energy distance rather than a KL: the
particles are a point set, and a KL needs a density estimate whose bandwidth would decide
the answer (a KDE with a missed mode gives a finite but arbitrary KL), while the energy
distance ``2 E|X - Y| - E|X - X'| - E|Y - Y'|`` is defined for any two distributions, is
zero only when they are equal, and needs no tuning. Beside it, the share of particles on
each side of ``theta2 = 0`` (each mode's basin) against the posterior's.

Runs: one data set (the paper shows one), ``runs`` seeds of the particle start and of the
order of the stream; the paired differences of the final energy distance between methods
come from those runs.

Cost (this 2-core machine): see :func:`run`'s docstring and the summary's timings.

Execution: each method's runs go in resumable chunks of runs (:func:`run_block`, through
:func:`vits_ref.experiments._chunks.map_runs`; ``out/chunks/method-<label>`` and
``out/manifest.json``), run ``r`` seeded as before (child ``r + 1`` of the seed): rerunning
the same command reuses the finished chunks, and the results are bit-identical whatever
the chunking or the executor (``--jobs``, Dask).
"""

import csv
import functools
import math
import os
import time

import numpy as np

from ..._seeding import child, run_seed
from ..._validate import as_seed_sequence
from ...errors import DivergenceError
from .. import _chunks
from .._chunks import check_progress
from .._common import environment_info, write_json
from .._outputs import text_output
from .._paired import format_difference, paired_difference
from ..plotting import drawn, paper_title

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"energy.png": paper_title("opvi", "section 5.1: Welling-Teh mixture"),
          "particles.png": paper_title("opvi", "Figure 2: particles over the posterior")}

NAME = "opvi-mixture"
DESCRIPTION = ("OPVI paper section 5.1: Welling-Teh mixture, OPVI vs SVGD/SGLD at "
               "B = 20 and full-batch SVGD, energy distance to the grid posterior")
DEFAULTS = {"runs": 10, "rounds": 500, "seed": 0}
#: What does not shrink with a smaller request (``run --help`` and stderr say it).
FIXED_COST = ("the grid posterior (161 x 161 points, the likelihood of 10 000 data "
              "points at each) that the energy distances compare with: 65 of the 91 s of "
              "a 2 x 20 run on the loaded 2-core machine")
N_DATA, N_PARTICLES = 10_000, 100
THETA_TRUE = (0.0, 1.0)
PRIOR_VAR = (10.0, 1.0)
SIGMA_X2 = 4.0
BATCH, GROWTH = 20, 0.55
STEP_SIZE, SGLD_STEP = 0.05, 1e-4
OPVI_REPULSION = 0.1
#: label -> (kind, batch): batch "growing", "full" or an int
METHODS = {
    "OPVI (B_t = t^0.55)": ("opvi", "growing"),
    "OPVI (B = 20)": ("opvi", BATCH),
    "SVGD (B = 20)": ("svgd", BATCH),
    "SGLD (B = 20)": ("sgld", BATCH),
    "SVGD (full batch)": ("svgd", "full"),
}
OPVI, OPVI_STATIC = "OPVI (B_t = t^0.55)", "OPVI (B = 20)"
SVGD_B, SGLD_B, SVGD_FULL = "SVGD (B = 20)", "SGLD (B = 20)", "SVGD (full batch)"
#: the paper's Figure 2 shows snapshots; these rounds are drawn (those <= rounds)
SNAPSHOTS = (10, 50, 200, 500)
#: a basin "found" when it holds at least this share of the particles
MODE_SHARE = 0.1
#: the content of the posterior's highest-density region a particle must be in to count
HPD = 0.99


# -- schedules and the particle loop shared by the three experiments --------------------


def batch_sizes(batch, rounds, n_data, exponent=GROWTH):
    """Per-round batch sizes: ``"growing"`` (``ceil(t^exponent)``, the schedule of
    :func:`vits_ref.inference.particles.batch_size`), ``"full"``
    (``n_data``) or a fixed int; capped at ``n_data``."""
    t = np.arange(1, rounds + 1, dtype=float)
    if batch == "growing":
        from ...inference.particles import batch_size

        sizes = np.array([batch_size(int(k), "power", exponent) for k in t], dtype=np.int64)
    elif batch == "full":
        sizes = np.full(rounds, n_data, dtype=np.int64)
    else:
        b = int(batch)
        if b < 1:
            raise ValueError(f"batch must be 'growing', 'full' or a positive int, got {batch!r}")
        sizes = np.full(rounds, b, dtype=np.int64)
    return np.minimum(sizes, n_data)


def prior_weight(t):
    """OPVI's prior weight ``eta_t = 6 / (pi^2 t^2)`` (its sum over t is 1)."""
    return 6.0 / (math.pi ** 2 * t * t)


class Stream:
    """The data stream: the points of a shuffled pass, taken in order (a new shuffle when a
    pass is used up); ``take(n)`` the next ``n`` indices, ``take(n_data)`` all of them."""

    def __init__(self, n_data, rng):
        self.n, self.rng = int(n_data), rng
        self.order, self.pos = rng.permutation(self.n), 0

    def take(self, b):
        if b >= self.n:
            return np.arange(self.n)
        if self.pos + b > self.n:
            rest = self.order[self.pos:]
            self.order, self.pos = self.rng.permutation(self.n), b - rest.size
            return np.concatenate([rest, self.order[:self.pos]])
        out = self.order[self.pos:self.pos + b]
        self.pos += b
        return out


def run_block(m, x, sigma_x2, n_particles, rounds, seed, step_size, sgld_step, grid, energy,
              level, rec, snaps, lo, hi):
    """Runs ``lo, ..., hi - 1`` of method ``m`` on the data ``x`` (a chunk of
    :func:`vits_ref.experiments._chunks.map_runs`): run ``r`` starts from the prior draw of
    child 0 of child ``r + 1`` of ``seed`` and streams with child 1, as :func:`run` always
    seeded it, so the blocks equal one loop over all runs.

    Returns, with the runs on the leading axis: ``energy`` (runs, len(rec)) and ``shares``
    (runs, len(rec), 2) at the recorded rounds, ``snapshots`` (runs, len(snaps),
    n_particles, 2) (run 0's particles at the snapshot rounds, NaN elsewhere), ``used``
    (data points used, -1 if not run) and ``error`` (the divergence's message, ``""`` if
    none; the block's later runs are not run, as :func:`run` stopped a diverged method);
    and ``wall_time_s``.
    """
    from ...models.welling_teh import WellingTeh

    kind, batch = METHODS[m]
    grad = model_gradient(WellingTeh(x, sigma_x=math.sqrt(sigma_x2), prior_var=PRIOR_VAR))
    root = as_seed_sequence(seed)
    n = hi - lo
    curves = np.full((n, len(rec)), np.nan)
    shares = np.full((n, len(rec), 2), np.nan)
    snapshots = np.full((n, len(snaps), n_particles, 2), np.nan)
    used = np.full(n, -1, dtype=np.int64)
    errors = [""] * n
    pos = {t: k for k, t in enumerate(rec)}
    start = time.perf_counter()
    for i, r in enumerate(range(lo, hi)):
        rs = run_seed(root, r + 1)
        x0 = np.random.default_rng(child(rs, 0)).standard_normal((n_particles, 2)) \
            * np.sqrt(PRIOR_VAR)

        def record(t, X, i=i, r=r):
            curves[i, pos[t]] = energy(X)
            shares[i, pos[t]] = mode_shares(X, grid, level)
            if r == 0 and t in snaps:
                snapshots[i, snaps.index(t)] = X

        try:
            _, used[i] = particle_run(kind, batch, grad, x0, len(x), rounds,
                                      np.random.default_rng(child(rs, 1)), step_size,
                                      sgld_step, record, rec, name=m)
        except DivergenceError as err:
            errors[i] = str(err)
            break
    return {"energy": curves, "shares": shares, "snapshots": snapshots, "used": used,
            "error": np.array(errors, dtype=str), "wall_time_s": time.perf_counter() - start}


def particle_run(kind, batch, grad, x0, n_data, rounds, rng, step_size, sgld_step=None,
                 record=None, record_rounds=(), name="particles", repulsion=None):
    """One method's particle trajectory over a data stream (the three experiments' loop).

    Parameters
    ----------
    kind : {"opvi", "svgd", "sgld"}
        ``"opvi"``: Algorithm 1 (summed batch log-likelihood, prior weight
        :func:`prior_weight`, repulsion 0.1); ``"svgd"``: the batch log-likelihood scaled
        by ``n_data / B`` and the full prior, repulsion 1; ``"sgld"``: the same gradient in
        a Langevin step of size ``sgld_step``.
    batch : "growing", "full" or int
    grad : callable
        ``grad(X, idx, like_weight, prior_weight)`` -> ``(n, d)`` gradients of
        ``like_weight * sum_{i in idx} log p(x_i | X) + prior_weight * log p0(X)``.
    x0 : (n, d) array
        Start (copied).
    rng : Generator
        The stream's order and SGLD's noise.
    step_size : float
        AdaGrad master step of the particle methods (SVGD reference code).
    record : callable, optional
        ``record(t, X)`` at the 1-based rounds of ``record_rounds``.
    repulsion : float, optional
        Overrides the kind's repulsion (0.1 for OPVI, 1 for SVGD).

    Returns
    -------
    (X, data_used)
        The final particles and the number of data points used.

    Raises
    ------
    DivergenceError
        When the particles become non-finite.
    """
    from ...inference.svgd import phi

    X = np.array(x0, dtype=float, copy=True)
    sizes = batch_sizes(batch, rounds, n_data)
    stream = Stream(n_data, rng)
    rep = (OPVI_REPULSION if kind == "opvi" else 1.0) if repulsion is None else repulsion
    hist = None
    used = 0
    wanted = set(int(r) for r in record_rounds)
    for t in range(1, rounds + 1):
        b = int(sizes[t - 1])
        idx = stream.take(b)
        used += idx.size
        if kind == "opvi":
            g = grad(X, idx, 1.0, prior_weight(t))
        else:
            g = grad(X, idx, n_data / idx.size, 1.0)
        if kind == "sgld":
            X += 0.5 * sgld_step * g + math.sqrt(sgld_step) * rng.standard_normal(X.shape)
        else:
            direction = phi(X, g, "median", rep)
            sq = direction * direction
            hist = sq if hist is None else 0.9 * hist + 0.1 * sq
            X += step_size * direction / (1e-6 + np.sqrt(hist))
        if not np.all(np.isfinite(X)):
            raise DivergenceError(name, t, sgld_step if kind == "sgld" else step_size)
        if t in wanted and record is not None:
            record(t, X)
    return X, used


def record_rounds(rounds, n=25):
    """About ``n`` log-spaced 1-based rounds, ``rounds`` and the snapshots included."""
    r = np.unique(np.geomspace(1, rounds, n).round().astype(np.int64))
    return sorted(set(r.tolist()) | {s for s in SNAPSHOTS if s <= rounds} | {rounds})


# -- the model: data, gradient, grid posterior -----------------------------------------


def model_gradient(model):
    """``grad(X, idx, like_weight, prior_weight)`` of :func:`particle_run` from a library
    model with ``minibatch_data`` (the compiled hand-written gradients of its potential
    ``U = -log p``, whose negation is returned)."""
    from ...drivers import cpu

    body = cpu.grads_hessian(model.potential)
    scratch = model.kernel_scratch(1)
    H = np.empty((model.dim, model.dim)) if model.dim <= 64 else np.empty((1, 1))

    def grad(X, idx, like_weight, prior_w):
        G = np.empty_like(X)
        body(model.minibatch_data(idx, like_weight, prior_w), X, False, G, H, scratch)
        return -G

    return grad


def log_post(T1, T2, x, sigma_x2=SIGMA_X2, prior_var=PRIOR_VAR):
    """Log posterior (up to a constant) on the grid axes ``T1`` x ``T2`` (1-D), from
    :func:`vits_ref.models.welling_teh.log_posterior_grid`."""
    from ...models.welling_teh import log_posterior_grid

    return log_posterior_grid(x, (T1, T2), sigma_x=math.sqrt(sigma_x2), prior_var=prior_var)


def grid_posterior(x, sigma_x2=SIGMA_X2, n=161, lim1=(-4.0, 5.0), lim2=(-4.0, 4.0),
                   tail=1e-9):
    """The exact posterior on a grid fitted to its mass.

    A coarse ``61 x 61`` grid over ``lim1 x lim2`` locates the mass; an ``n x n`` grid over
    the box holding all cells of coarse mass above ``tail`` (widened by two coarse cells)
    gives the normalised cell masses. Returns ``dict(t1, t2, logp, mass)`` (``t1``, ``t2``
    1-D axes, ``mass`` sums to 1).
    """
    a1, a2 = np.linspace(*lim1, 61), np.linspace(*lim2, 61)
    lp = log_post(a1, a2, x, sigma_x2)
    m = np.exp(lp - lp.max())
    m /= m.sum()
    i, j = np.nonzero(m > tail)
    d1, d2 = a1[1] - a1[0], a2[1] - a2[0]
    b1 = np.linspace(a1[i.min()] - 2 * d1, a1[i.max()] + 2 * d1, n)
    b2 = np.linspace(a2[j.min()] - 2 * d2, a2[j.max()] + 2 * d2, n)
    lp = log_post(b1, b2, x, sigma_x2)
    mass = np.exp(lp - lp.max())
    mass /= mass.sum()
    return {"t1": b1, "t2": b2, "logp": lp, "mass": mass}


class EnergyDistance:
    """Energy distance from point sets to a fixed weighted point set (the grid posterior).

    ``D^2 = 2 E|X - Y| - E|X - X'| - E|Y - Y'|`` with ``X`` the particles (equal weights,
    the V-statistic: the distribution of the particles themselves) and ``Y`` the grid
    cells of mass above ``1e-12`` of the total (weights renormalised); ``E|Y - Y'|`` is
    computed once. Returns ``D`` (the square root), in the units of ``theta``.
    """

    def __init__(self, points, weights):
        keep = weights > 1e-12 * weights.sum()
        self.Y, self.w = points[keep], weights[keep] / weights[keep].sum()
        self.yy = self._cross(self.Y, self.Y, self.w, self.w)

    @staticmethod
    def _cross(A, B, wa, wb, chunk=2048):
        s = 0.0
        for i in range(0, A.shape[0], chunk):
            a = A[i:i + chunk]
            d = np.sqrt(np.maximum(((a[:, None, :] - B[None, :, :]) ** 2).sum(-1), 0.0))
            s += float(wa[i:i + chunk] @ d @ wb)
        return s

    def __call__(self, X):
        wx = np.full(X.shape[0], 1.0 / X.shape[0])
        d2 = 2 * self._cross(X, self.Y, wx, self.w) - self._cross(X, X, wx, wx) - self.yy
        return math.sqrt(max(d2, 0.0))

    @classmethod
    def from_grid(cls, grid):
        T1, T2 = np.meshgrid(grid["t1"], grid["t2"], indexing="ij")
        return cls(np.column_stack([T1.ravel(), T2.ravel()]), grid["mass"].ravel())


def upper_share_of_grid(grid):
    """The posterior's mass with ``theta2 > 0`` (the basin of the mode near (0, 1))."""
    return float(grid["mass"][:, grid["t2"] > 0].sum())


def hpd_level(grid, content=HPD):
    """The log-density level whose super-level set holds ``content`` of the grid's mass."""
    lp, m = grid["logp"].ravel(), grid["mass"].ravel()
    order = np.argsort(lp)[::-1]
    k = int(np.searchsorted(np.cumsum(m[order]), content))
    return float(lp[order[min(k, order.size - 1)]])


def in_hpd(X, grid, level):
    """Which particles lie in the posterior's HPD region (nearest grid cell's log density
    at or above ``level``; outside the grid: no)."""
    t1, t2 = grid["t1"], grid["t2"]
    d1, d2 = t1[1] - t1[0], t2[1] - t2[0]
    i = np.round((X[:, 0] - t1[0]) / d1).astype(np.int64)
    j = np.round((X[:, 1] - t2[0]) / d2).astype(np.int64)
    inside = (i >= 0) & (i < t1.size) & (j >= 0) & (j < t2.size)
    out = np.zeros(X.shape[0], dtype=bool)
    out[inside] = grid["logp"][i[inside], j[inside]] >= level
    return out


def mode_shares(X, grid, level):
    """Shares of the particles inside the HPD region in each basin: ``(upper, lower)``
    (``theta2 > 0``: the mode near (0, 1); ``< 0``: its mirror near (1, -1))."""
    ok = in_hpd(X, grid, level)
    up = X[:, 1] > 0
    return float((ok & up).mean()), float((ok & ~up).mean())


# -- the experiment --------------------------------------------------------------------


def check_arguments(methods, known, counts, positive):
    """The particle experiments' checks of ``run``'s arguments, before any work.

    ``counts``: ``(name, value)`` pairs that must be positive ints, ``n_particles`` among
    them (at least 2: SVGD's median bandwidth); ``positive``: pairs that must be positive
    finite numbers. Returns the chosen method labels: ``methods``, a non-empty subset of
    ``known``, or all of ``known`` for None.
    """
    for name, v in counts:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    n_particles = dict(counts)["n_particles"]
    if n_particles < 2:
        raise ValueError(f"n_particles must be at least 2 (SVGD's median bandwidth), got "
                         f"{n_particles}")
    for name, v in positive:
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    chosen = list(known) if methods is None else list(methods)
    bad = [m for m in chosen if m not in known]
    if bad or not chosen:
        raise ValueError(f"methods must be labels of METHODS {list(known)}, got {bad or chosen}")
    return chosen


def run(runs=10, rounds=500, seed=0, out="results/opvi-mixture", progress=None,
        n_data=N_DATA, n_particles=N_PARTICLES, sigma_x2=SIGMA_X2, methods=None,
        step_size=STEP_SIZE, sgld_step=SGLD_STEP, grid_n=161):
    """Run the experiment; writes ``curves.csv``, ``summary.json``, ``energy.png`` and
    ``particles.png``.

    Parameters
    ----------
    runs, rounds, seed : int
        Paper: 500 rounds, one run shown (``runs`` seeds of the start and stream order,
        10 by default, for paired intervals).
    out : str
    progress : callable or None
    n_data : int, default 10 000
    n_particles : int, default 100
    sigma_x2 : float, default 4 (``sigma_x = 2``, the OPVI paper); 2 is Welling and Teh's.
    methods : sequence of labels of :data:`METHODS`, optional
    step_size, sgld_step : float
        AdaGrad master step of the particle methods; SGLD's constant step.
    grid_n : int, default 161
        Points per axis of the fine posterior grid.

    Returns
    -------
    dict
        The JSON summary: per method the energy-distance curve (mean and per run at the
        recorded rounds), the final particles' basin shares, the data used and the time.

    Runs in resumable chunks of runs (``out/chunks``; see the module docstring).
    """
    check_progress(progress)
    chosen = check_arguments(
        methods, METHODS, (("runs", runs), ("rounds", rounds), ("n_data", n_data),
                           ("n_particles", n_particles), ("grid_n", grid_n)),
        (("sigma_x2", sigma_x2), ("step_size", step_size), ("sgld_step", sgld_step)))
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    root = as_seed_sequence(seed)
    from ...models.welling_teh import welling_teh_data

    x = welling_teh_data(n_data, THETA_TRUE, math.sqrt(sigma_x2), seed=child(root, 0))
    if progress:
        progress(f"grid posterior ({grid_n} x {grid_n}, {n_data} points)")
    grid = grid_posterior(x, sigma_x2, n=grid_n)
    energy = EnergyDistance.from_grid(grid)
    p_up = upper_share_of_grid(grid)
    grid_time = time.perf_counter() - t0
    rec = record_rounds(rounds)
    snaps = [s for s in SNAPSHOTS if s <= rounds] or [rounds]
    level = hpd_level(grid)
    curves = {m: np.full((runs, len(rec)), np.nan) for m in chosen}
    shares = {m: np.full((runs, len(rec), 2), np.nan) for m in chosen}
    snapshots = {m: {} for m in chosen}
    timing = {m: 0.0 for m in chosen}
    used = {}
    diverged = {}

    for m in chosen:
        if progress:
            progress(f"{m}: {runs} runs x {rounds} rounds")
        blocks = _chunks.map_runs(
            functools.partial(run_block, m, x, sigma_x2, n_particles, rounds, seed,
                              step_size, sgld_step, grid, energy, level, rec, snaps),
            runs, out, NAME, f"method-{_chunks.slug(m)}",
            {"method": m, "seed": seed, "runs": runs, "rounds": rounds, "n_data": n_data,
             "n_particles": n_particles, "sigma_x2": sigma_x2, "step_size": step_size,
             "sgld_step": sgld_step, "grid_n": grid_n}, progress, work_per_run=rounds)
        timing[m] = blocks["wall_time_s"]
        errors = [str(e) for e in blocks["error"]]
        bad = next((r for r, e in enumerate(errors) if e), None)
        last = runs if bad is None else bad  # the runs done before the first divergence
        if bad is not None:
            diverged[m] = errors[bad]
            if progress:
                progress(f"{m} diverged: {errors[bad]}")
        if last > 0:
            used[m] = int(blocks["used"][last - 1])
        curves[m][:last] = blocks["energy"][:last]
        shares[m][:last] = blocks["shares"][:last]
        for k, t in enumerate(snaps):  # run 0's, recorded (finite) before any divergence
            if np.all(np.isfinite(blocks["snapshots"][0, k])):
                snapshots[m][t] = blocks["snapshots"][0, k]
    results = []
    for m in chosen:
        entry = {"method": m, "kind": METHODS[m][0], "batch": METHODS[m][1],
                 "wall_time_s": timing[m]}
        if m in diverged:
            entry["diverged"] = diverged[m]
            results.append(entry)
            continue
        c = curves[m]
        final = c[:, -1]
        both = shares[m].min(axis=2) >= MODE_SHARE
        in_region = shares[m].sum(axis=2)
        entry.update({
            "data_used_per_run": int(used[m]),
            "energy_mean": np.nanmean(c, axis=0).tolist(),
            "energy_per_run": c.tolist(),
            "final_energy": final.tolist(),
            "final_energy_mean": float(final.mean()),
            # undefined for one run: NaN, null in the JSON (with a note), "n/a" in tables
            "final_energy_stderr": float(final.std(ddof=1) / math.sqrt(runs)) if runs > 1
            else float("nan"),
            "mode_shares_per_run": shares[m].tolist(),
            "final_mode_shares": shares[m][:, -1].tolist(),
            "final_in_hpd_mean": float(in_region[:, -1].mean()),
            "both_modes_final_runs": int(both[:, -1].sum()),
            "first_round_both_modes_held": _first_held(both, rec),
        })
        results.append(entry)
    files = [os.path.join(out, f) for f in ("curves.csv", "summary.json", "energy.png",
                                            "particles.png")]
    result = {"experiment": NAME, "description": DESCRIPTION, "runs": runs, "rounds": rounds,
              "seed": seed, "n_data": n_data, "n_particles": n_particles,
              "sigma_x2": sigma_x2, "theta_true": list(THETA_TRUE), "prior_var": list(PRIOR_VAR),
              "step_size": step_size, "sgld_step": sgld_step, "batch": BATCH,
              "growth_exponent": GROWTH, "opvi_repulsion": OPVI_REPULSION,
              "record_rounds": rec, "measure": "energy distance to the grid posterior",
              "posterior_upper_share": p_up, "mode_share": MODE_SHARE, "hpd": HPD,
              "hpd_log_density": level,
              "grid": {"n": grid_n, "t1": [float(grid["t1"][0]), float(grid["t1"][-1])],
                       "t2": [float(grid["t2"][0]), float(grid["t2"][-1])],
                       "cells_used": int(energy.Y.shape[0]), "wall_time_s": grid_time},
              "posterior_mean": _grid_mean(grid), "results": results, "files": files,
              "total_wall_time_s": time.perf_counter() - t0,
              "environment": environment_info()}
    _paired(result)
    with text_output(files[0]) as fh:
        w = csv.writer(fh)
        w.writerow(["method", "round", "energy_mean", "hpd_share_upper_mode",
                    "hpd_share_lower_mode"])
        for m in chosen:
            if m in diverged:
                continue
            for k, t in enumerate(rec):
                sh = np.nanmean(shares[m][:, k], axis=0)
                w.writerow([m, t, f"{np.nanmean(curves[m][:, k]):.6g}", f"{sh[0]:.4g}",
                            f"{sh[1]:.4g}"])
    # the figures first: the summary lists those written (none without matplotlib, no
    # particles.png when no method kept a snapshot)
    result["files"] = files[:2] + drawn(
        {files[2]: lambda: _plot_energy(result, files[2]),
         files[3]: lambda: _plot_particles(grid, snapshots, snaps, files[3], sigma_x2)},
        progress)
    write_json(files[1], result)
    return result


def _first_held(both, rec):
    """First recorded round from which every later record of every run has both modes."""
    ok = both.all(axis=0)
    for k in range(len(rec)):
        if ok[k:].all():
            return int(rec[k])
    return None


def _grid_mean(grid):
    m = grid["mass"]
    return [float((m.sum(axis=1) * grid["t1"]).sum()), float((m.sum(axis=0) * grid["t2"]).sum())]


def _paired(result):
    """Paired differences of the final energy distance, OPVI minus every other method."""
    by = {e["method"]: e for e in result["results"] if "final_energy" in e}
    if OPVI not in by or result["runs"] < 2:
        return
    for m, e in by.items():
        if m != OPVI:
            e["paired_opvi_minus_this"] = paired_difference(by[OPVI]["final_energy"],
                                                            e["final_energy"])


def se_text(se, spec):
    """A standard error formatted by ``spec``, or ``"n/a"`` where it is undefined (one
    run: NaN in memory, None once read back from the JSON)."""
    return "n/a" if se is None or not math.isfinite(se) else format(se, spec)


def _plot_energy(result, path):
    from ..plotting import band, figure, outside_legend, quartile_note, save

    fig, (ax,) = figure(1, width=6.5)
    rec = np.asarray(result["record_rounds"])
    for e in result["results"]:
        if "energy_per_run" not in e:
            continue
        c = np.asarray(e["energy_per_run"])
        q = np.quantile(c, [0.25, 0.5, 0.75], axis=0)
        band(ax, rec, q[1], q[0], q[2], e["method"])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("energy distance to the posterior (median, quartiles)")
    fig.suptitle(TITLES["energy.png"], fontsize=9)
    ax.set_title(f"N = {result['n_data']}, {result['n_particles']} particles, "
                 f"{result['runs']} runs", fontsize=9)
    ax.grid(alpha=0.3)
    # the bands are the runs' quartiles of the energy distance, not a standard error
    outside_legend([ax], band_note=quartile_note("runs"))
    save(fig, path)
    return fig


def _plot_particles(grid, snapshots, snaps, path, sigma_x2):
    """Figure 2's layout: one row per method, one column per snapshot round, the
    particles of run 0 over the posterior's contours; False (nothing written) when no
    method kept a snapshot."""
    from ..plotting import figure, save

    methods = [m for m in snapshots if snapshots[m]]
    if not methods:
        return False
    fig, axes = figure(len(snaps), width=2.6, height=2.4 * len(methods))
    fig.clear()
    T1, T2 = np.meshgrid(grid["t1"], grid["t2"], indexing="ij")
    lp = grid["logp"] - grid["logp"].max()
    for i, m in enumerate(methods):
        for j, t in enumerate(snaps):
            ax = fig.add_subplot(len(methods), len(snaps), i * len(snaps) + j + 1)
            ax.contour(T1, T2, lp, levels=[-8, -4.5, -2, -0.5], colors="0.5", linewidths=0.7)
            X = snapshots[m].get(t)
            if X is not None:
                ax.plot(X[:, 0], X[:, 1], ".", ms=3, color="C3")
            ax.set_xlim(grid["t1"][0], grid["t1"][-1])
            ax.set_ylim(grid["t2"][0], grid["t2"][-1])
            ax.tick_params(labelsize=6)
            if i == 0:
                ax.set_title(f"round {t}", fontsize=8)
            if j == 0:
                ax.set_ylabel(m, fontsize=7)
    fig.suptitle(f"{TITLES['particles.png']} (run 0's particles over its contours, "
                 f"sigma_x^2 = {sigma_x2:g})", fontsize=9)
    save(fig, path)


def table(result):
    """Final energy distance per method, its paired difference from OPVI, the basins."""
    lines = [f"energy distance to the grid posterior after {result['rounds']} rounds "
             f"(mean +- se over {result['runs']} runs); posterior mass with theta2 > 0: "
             f"{result['posterior_upper_share']:.3f}",
             f"{'method':22s} {'energy':>8} {'+-se':>7} {'data/run':>9} {'both modes':>10}"
             f" {'s':>6}  OPVI - method (paired, 95% CI)"]
    for e in result["results"]:
        if "final_energy" not in e:
            lines.append(f"{e['method']:22s} diverged: {e['diverged']}")
            continue
        se = e["final_energy_stderr"]
        diff = e.get("paired_opvi_minus_this")
        lines.append(f"{e['method']:22s} {e['final_energy_mean']:8.4f} "
                     f"{se_text(se, '.4f'):>7} {e['data_used_per_run']:9d} "
                     f"{e['both_modes_final_runs']:>4d}/{result['runs']:<5d} "
                     f"{e['wall_time_s']:6.1f}  "
                     f"{format_difference(diff, 4) if diff else ''}")
    return "\n".join(lines)
