r"""Section 6.2 and appendix C.1 of Kveton et al. (Figures 2 and 4): six 2-D synthetic priors.

Setup, as the paper states it: a linear bandit with ``K = 100`` arms in ``d = 2``
dimensions, the arms' features drawn uniformly from the unit ball, reward noise
``sigma = 2``; ``theta_*`` is drawn from the true prior in every run (a new problem
instance per run); the diffusion prior is learned from 10 000 samples of the true prior,
``T = 100`` stages, ``alpha_t = 0.97``. The six priors are
:data:`vits_ref.envs.diffusion.PRIOR_SHAPES` (the paper names the two-Gaussian mixture
and the "cross"; the other four are this library's, documented and drawn there).

Methods (section 6.1): TS with ``N(0, I)``, TunedTS (maximum-likelihood Gaussian of the
prior samples), MixTS (EM mixture of 2 components, exact mixture posterior), DPS
(Algorithm 4 with the learned prior) and DiffTS (LaplaceDPS, Algorithm 2, with the learned
prior). Two extra baselines, not in the paper's figures: section 6.1's frequentist
baselines, "We also experimented with frequentist baselines, such as LinUCB [1] and the
ε-greedy policy. They performed worse than TS and thus we do not report them here."
(``extra: LinUCB``, ``extra: epsilon-greedy``; :data:`~._shared.FREQUENTIST`). **The paper
states no parameters for them**: they are reconstructed from TS's model, LinUCB with ridge
``lam = sigma^2`` (its estimate is TS's posterior mean under ``N(0, I)``) and bonus
``alpha = sigma`` (one posterior standard deviation of TS), epsilon-greedy with the same
ridge and ``epsilon = 0.1`` (:mod:`vits_ref.experiments.diffts._shared` gives the reasons),
and the claim on them is flagged reconstructed. Every method meets the same runs (the
same ``theta_*``, arms and noise run by run: common random numbers; each policy draws from
its own streams, so adding a method changes no other's numbers), and every method's final
regret is compared with DiffTS's on the same runs (paired 95% t and bootstrap intervals;
``reference = "DiffTS"``, so a positive difference means DiffTS has the lower regret).

**Horizon.** The text does not give it. ``rounds = 100`` by default, for two reasons:
the paper's cost statement, 0.1 s for 100 runs of TS and 12 s for 100 runs of DiffTS
(about ``T = 100`` times more), is 10 microseconds per TS round at 100 rounds (a NumPy
2 x 2 posterior update and draw), where 500 rounds would need 2 microseconds per round,
out of reach for a NumPy loop; and the ablation's "regret of about 85 at ``T = 1`` and 50
at ``T = 25``" (Figure 6b) is, with ``sigma = 2`` and ``theta_*`` of norm about 1 to 2,
the size of a 100-round cumulative regret of a 2-D linear bandit. ``--rounds`` changes it.

The figure (``regret.png``) follows Figures 2 and 4: a row of scatter plots of the true
prior's samples (blue) against the learned diffusion prior's (red) over a row of regret
curves, one column per prior.

Claims (:func:`claims`, the claim table's entries for this experiment): DiffTS beats
MixTS, and (a library reading of the figures) every other baseline, on every prior (paired
intervals); TS's final regret is below each frequentist baseline's, on every prior (paired;
section 6.1's sentence, on the reconstructed baselines); DPS diverges as the rounds grow
(its mean regret per round over the last half of the rounds against TS's, paired per run),
except on the last problem; the diffusion prior's samples resemble the true prior's
(energy distance over the distance between two independent true samples, 50 independent
pairs of each); the cost (sampling only, prior training excluded) of the DiffTS runs
against the TS runs, over ``T``.

Execution: the bandit runs go in resumable chunks of runs, as in every experiment of
:mod:`vits_ref.experiments.diffts` (its docstring says what a rerun reuses).
"""

import os

import numpy as np

from .._chunks import check_progress
from .._common import regret_table, write_json
from .._paired import panel_entries
from ..claims.table import ENERGY_FACTOR
from ..plotting import paper_title, plotted
from . import _shared

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("diffts", "Figures 2 and 4: synthetic priors")}

NAME = "diffts-synthetic"
DESCRIPTION = ("Diffusion-prior paper section 6.2 and appendix C.1: six 2-D priors, linear "
               "bandit, K = 100, sigma = 2; TS, TunedTS, MixTS, DPS, DiffTS; extra: "
               "LinUCB, epsilon-greedy")
DEFAULTS = {"runs": 100, "rounds": 100, "seed": 0}
DIM, N_ARMS, SIGMA = 2, 100, 2.0
N_STAGES, ALPHA, N_TRAIN = 100, 0.97, 10_000
REFERENCE = "DiffTS"
#: Samples of each distribution in the energy-distance check (and pairs of independent
#: true samples averaged for the noise floor the table prints; the claim's interval uses
#: ``_shared.ENERGY_REPEATS`` pairs, these first).
N_ENERGY, N_FLOOR_PAIRS = 2000, 5


def _shapes():
    from ...envs.diffusion import PRIOR_SHAPES

    return PRIOR_SHAPES


def true_samples(shape, n, seed):
    """``n`` samples of the prior ``shape`` (a name of ``PRIOR_SHAPES``), seeded."""
    return _shapes()[shape].sample(n, rng=np.random.default_rng(seed))


def environment(shape, seed):
    """The prior bandit of ``shape``: K = 100 arms in the unit ball, sigma = 2."""
    from ...envs.diffusion import prior_bandit

    return prior_bandit(shape, n_arms=N_ARMS, sigma=SIGMA, seed=seed)


def run(runs=100, rounds=100, seed=0, out="results/diffts-synthetic", progress=None,
        shapes=None, methods=(*_shared.METHODS, *_shared.FREQUENTIST), n_stages=N_STAGES,
        alpha=ALPHA, n_train=N_TRAIN, train_kwargs=None, n_energy=N_ENERGY, n_jobs=1):
    """Run the experiment and write ``curves.csv``, ``summary.json``, ``regret.png``.

    The bandit runs go in resumable chunks (``out/chunks``; see the module docstring).

    Parameters
    ----------
    runs, rounds, seed : int
        The paper: 100 runs; the horizon is not stated (100 rounds: see the module's
        docstring).
    out : str
        Output folder (created); trained priors are cached under ``out/priors``.
    progress : callable or None
    shapes : sequence of str or None
        Names of ``PRIOR_SHAPES`` (None: all six).
    methods : sequence of str
        Subset of :data:`~vits_ref.experiments.diffts._shared.METHODS` and
        :data:`~vits_ref.experiments.diffts._shared.FREQUENTIST` (DiffTS is always run: it
        is the reference). Adding or removing a method changes no other method's numbers:
        every method meets the same runs (common random numbers), each policy drawing
        from its own streams.
    n_stages, alpha, n_train : int, float, int
        The diffusion prior: ``T = 100``, ``alpha_t = 0.97``, 10 000 training samples.
    train_kwargs : dict or None
        Training options of :class:`vits_ref.diffusion.DiffusionPrior` (``epochs``, ...;
        the tests use few); without ``epochs``, the epochs are scaled to the request below
        the default size (:func:`~vits_ref.experiments.diffts._shared.scaled_training`,
        recorded as ``prior_training`` in the summary).
    n_energy : int
        Samples per distribution in the energy-distance check.
    n_jobs : int
        Worker processes for the chunks when no executor is set (the command line's
        ``--jobs`` sets the session's executor instead).

    Returns
    -------
    dict
        The JSON summary, with per shape ``priors[shape]`` (cache path, training time),
        ``energy[shape]`` (energy distances) and per method ``late_slopes[shape][method]``.
    """
    check_progress(progress)
    all_shapes = _shapes()
    shapes = list(all_shapes) if shapes is None else list(shapes)
    for s in shapes:
        if s not in all_shapes:
            raise ValueError(f"shapes: unknown prior shape {s!r}; available: "
                             f"{', '.join(all_shapes)}")
    known = (*_shared.METHODS, *_shared.FREQUENTIST)
    for m in methods:
        if m not in known:
            raise ValueError(f"methods: unknown method {m!r}; available: {', '.join(known)}")
    which = tuple(m for m in known if m in set(methods) | {REFERENCE})
    train_kwargs, training = _shared.scaled_training(train_kwargs, runs, rounds, DEFAULTS,
                                                     progress)
    cache = os.path.join(out, "priors")
    panels, priors, energy, scatter = [], {}, {}, {}
    for i, shape in enumerate(shapes):
        s_data, s_train, s_check, s_env = _shared.seeds(seed * 1000 + i, 4)
        samples = true_samples(shape, n_train, s_data)
        prior, info = _shared.trained_prior(samples, n_stages, alpha, seed=seed,
                                            cache_dir=cache, name=shape,
                                            train_kwargs=train_kwargs, progress=progress)
        priors[shape] = info
        energy[shape], scatter[shape] = _energy_check(prior, shape, n_energy, s_check,
                                                      training["energy_repeats"])
        env = environment(shape, s_env)
        panels.append((shape, env, _shared.build_methods(samples, prior, SIGMA, "linear",
                                                         which), {"shape": shape}))
    slopes = {}

    def keep(panel, label, res):
        slopes.setdefault(panel, {})[label] = _shared.late_slopes(res.cumulative_regret)

    extra = {"shapes": shapes, "dim": DIM, "n_arms": N_ARMS, "sigma": SIGMA,
             "n_stages": n_stages, "alpha": alpha, "n_train": n_train,
             "train_kwargs": train_kwargs, "prior_training": training, "priors": priors,
             "energy": energy,
             "energy_factor": ENERGY_FACTOR, "methods": list(which),
             "frequentist_baselines": {label: repr(pol) for label, pol in panels[0][2]
                                       if label in _shared.FREQUENTIST} if panels else {}}
    result = _shared.run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out,
                                progress, extra=extra, n_jobs=n_jobs, reference=REFERENCE,
                                on_result=keep)
    curves = result.pop("curves")
    result["late_slopes"] = slopes
    result["cost"] = _cost(result)
    plot_path = os.path.join(out, "regret.png")
    if plotted(lambda: _shared.prior_and_regret_figure(
            {k: (v[0][:500], v[1][:500]) for k, v in scatter.items()}, curves, plot_path,
            title=f"{TITLES['regret.png']} ({runs} runs x {rounds} rounds)"), progress):
        result["files"].append(plot_path)
    write_json(result["files"][1], result)
    return result


def _energy_check(prior, shape, n, seed, repeats=_shared.ENERGY_REPEATS):
    """Energy distances: learned prior vs a true sample, the fitted Gaussian (TunedTS's
    prior) vs the true sample, and the noise floor (pairs of independent true samples);
    ``repeats`` independent pairs of each kind for the claim's interval (the first pair of
    each is the one the table prints)."""
    repeats = max(int(repeats), N_FLOOR_PAIRS)
    # children 0-3 and the floor's pairs keep their indices whatever the repeats, so the
    # table's numbers do not move with them
    ss = _shared.seeds(int(seed.generate_state(1)[0]), 4 * repeats + 2)
    true = true_samples(shape, n, ss[0])
    learned = prior.sample(n, seed=ss[1])
    fit_src = true_samples(shape, n, ss[2])
    rng = np.random.default_rng(ss[3])
    gauss = rng.multivariate_normal(fit_src.mean(axis=0), np.cov(fit_src.T), size=n)
    floor = [_shared.energy_distance(true_samples(shape, n, ss[4 + 2 * k]),
                                     true_samples(shape, n, ss[5 + 2 * k]))
             for k in range(repeats)]
    base = 4 + 2 * repeats
    learned_vs_true = _shared.energy_distance(learned, true)
    again = [learned_vs_true] + [
        _shared.energy_distance(prior.sample(n, seed=ss[base + 2 * k + 1]),
                                true_samples(shape, n, ss[base + 2 * k]))
        for k in range(repeats - 1)]
    learned_cov = np.cov(learned.T)
    true_cov = np.cov(true.T)
    out = {"n": n, "learned_vs_true": learned_vs_true,
           "gaussian_vs_true": _shared.energy_distance(gauss, true),
           "true_vs_true": float(np.mean(floor[:N_FLOOR_PAIRS])),
           "true_vs_true_pairs": floor[:N_FLOOR_PAIRS],
           "cov_trace_ratio": float(np.trace(learned_cov) / np.trace(true_cov)),
           "learned_vs_true_repeats": again, "true_vs_true_repeats": floor}
    return out, (true, learned)


def _cost(result):
    """Per shape, the wall time of all runs of DiffTS and TS (bandit loop only: the prior
    is trained before) and their ratio, scaled to 100 runs."""
    out = {}
    for shape in result["shapes"]:
        e = panel_entries(result, shape)
        times = {m: e[m]["wall_time_s"] for m in ("DiffTS", "TS") if m in e}
        if times:
            scale = 100.0 / result["runs"]
            out[shape] = {f"{m}_s_per_100_runs": t * scale for m, t in times.items()}
            if len(times) == 2 and times["TS"] > 0:
                out[shape]["ratio"] = times["DiffTS"] / times["TS"]
    return out


def table(result):
    """The regret table (paired differences against DiffTS), energy distances and costs."""
    lines = [regret_table(result), "",
             "energy distance to a true-prior sample (diffusion prior / fitted Gaussian / "
             "two true samples), covariance trace ratio learned/true"]
    for shape, e in result.get("energy", {}).items():
        lines.append(f"{shape:18s} {e['learned_vs_true']:.4f} / {e['gaussian_vs_true']:.4f}"
                     f" / {e['true_vs_true']:.4f}   {e['cov_trace_ratio']:.3f}")
    extras = result.get("frequentist_baselines")
    if extras:
        lines += ["", "extra baselines, not in the paper's figures (section 6.1 tried them; it "
                      "states no parameters, these are the library's reconstruction):"]
        lines += [f"  {label} = {spec}" for label, spec in extras.items()]
    lines += ["", "cost of 100 runs (s; bandit loop, prior training excluded)"]
    for shape, c in result.get("cost", {}).items():
        lines.append(f"{shape:18s} " + ", ".join(f"{k}: {v:.3g}" for k, v in c.items()))
    return "\n".join(lines)
