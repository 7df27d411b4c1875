"""What the diffusion-prior experiments share: the methods, trained priors and their cache,
the two-sample statistic, the late-regret slopes and the two-row figure.

The methods of Kveton et al., section 6.1, all built from the same prior samples:

- ``TS``: linear Thompson sampling with the uninformative prior ``N(0, I)`` (exact,
  :class:`vits_ref.LinTS`) or, for logistic rewards, Laplace TS with that prior;
- ``TunedTS``: the same with the maximum-likelihood Gaussian of the prior samples
  (:class:`vits_ref.TunedTS`);
- ``MixTS``: a Gaussian-mixture prior fitted by EM, exact mixture posterior
  (:class:`vits_ref.MixTS`, linear rewards only, as in the paper);
- ``DPS``: diffusion posterior sampling (Algorithm 4, :class:`vits_ref.DPS`) with the
  learned diffusion prior (linear rewards; the paper runs it on the linear problems);
- ``DiffTS``: LaplaceDPS (Algorithm 2, :class:`vits_ref.DiffTS`) with the learned prior.

Two frequentist baselines that section 6.1 says were tried and not reported ("We also
experimented with frequentist baselines, such as LinUCB [1] and the ε-greedy policy. They
performed worse than TS and thus we do not report them here."), run on the linear synthetic
problems only (:data:`FREQUENTIST`). The paper states no parameters for them; the library's
are reconstructed from TS's own model, fixed before any run, and never tuned:

- ``extra: LinUCB``: :class:`vits_ref.LinUCB` with ridge ``lam = sigma^2`` (its estimate
  ``(sigma^2 I + sum x x^T)^-1 sum r x`` is TS's posterior mean under the ``N(0, I)`` prior
  and noise ``sigma``) and bonus ``alpha = sigma`` (``alpha sqrt(x^T inv(V) x)`` is then one
  standard deviation of ``x^T theta`` under TS's posterior, ``sigma^2 inv(V)``): the width
  TS explores at, constant, where the paper's reference [1] (Abbasi-Yadkori, Pál and
  Szepesvári's OFUL) has a radius growing with ``log det V``;
- ``extra: epsilon-greedy``: :class:`vits_ref.EpsilonGreedy` with the same ridge and
  ``epsilon = 0.1`` (:data:`EPSILON`), the textbook value (Sutton & Barto, section 2.2).

Trained priors are cached as ``.npz`` files (:meth:`vits_ref.diffusion.DiffusionPrior.save`)
under ``<out>/priors``, named by everything that determines them (data, stages, alpha,
training size, training options, seed), so a rerun into the same folder does not retrain;
the summary records whether each prior was loaded or trained and its training time.
"""

import hashlib
import json
import math
import os
import time

import numpy as np

from ... import _validate as val
from ..._seeding import child
from ..._threads import numba_threads
from ..plotting import plotted

#: The methods in the paper's order (section 6.1).
METHODS = ("TS", "TunedTS", "MixTS", "DPS", "DiffTS")
#: The frequentist baselines section 6.1 tried and did not report (the module docstring
#: gives their reconstructed parameters): linear rewards only, after the paper's methods.
LINUCB, EPSILON_GREEDY = "extra: LinUCB", "extra: epsilon-greedy"
FREQUENTIST = (LINUCB, EPSILON_GREEDY)
#: epsilon-greedy's exploration probability (the paper states none).
EPSILON = 0.1
#: Independent repeats of the energy distance of the learned prior to the true one and of
#: its noise floor (two samples of the true prior), behind the "prior resembles" claims'
#: intervals: at least 50 pairs for the floor.
ENERGY_REPEATS = 50
#: The fewest pairs of a check scaled down with a small request (:func:`scaled_training`).
MIN_ENERGY_REPEATS = 5
#: MixTS's number of components (section 6.2: "MixTS is implemented with two mixture
#: components").
MIX_COMPONENTS = 2


def seeds(seed, n):
    """``n`` independent child seed sequences of ``seed`` (data, training, ...)."""
    root = np.random.SeedSequence(int(seed))
    return [child(root, i) for i in range(n)]


def _digest(samples, settings):
    h = hashlib.sha1(np.ascontiguousarray(samples, dtype=np.float64).tobytes())
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()[:12]


def trained_prior(samples, n_stages=100, alpha=0.97, seed=0, cache_dir=None, name="prior",
                  train_kwargs=None, progress=None):
    """A :class:`vits_ref.diffusion.DiffusionPrior` fitted to ``samples``, cached.

    Parameters
    ----------
    samples : (n, d) array
        Samples of the prior to learn.
    n_stages, alpha : int, float
        The diffusion's ``T`` and ``alpha_t`` (Kveton et al.: 100 and 0.97).
    seed : int
        Seeds the network's initialisation and the training's mini-batches.
    cache_dir : str or None
        Folder of the ``.npz`` cache; None trains without caching.
    name : str
        Readable prefix of the cache file.
    train_kwargs : dict or None
        Options of ``fit`` (``epochs``, ``batch_size``, ``step_size``, ...) and of the
        constructor (``hidden``), as :class:`~vits_ref.diffusion.DiffusionPrior` documents;
        None uses its defaults.
    progress : callable or None

    Returns
    -------
    prior : DiffusionPrior
    info : dict
        ``path`` (or None), ``loaded`` (bool), ``train_time_s`` (0 when loaded).
    """
    from ...diffusion import DiffusionPrior

    samples = np.asarray(samples, dtype=float)
    kw = dict(train_kwargs or {})
    ctor = {k: kw.pop(k) for k in ("hidden",) if k in kw}
    settings = {"n_stages": int(n_stages), "alpha": float(alpha), "seed": int(seed),
                "ctor": ctor, "fit": kw}
    path = None
    if cache_dir is not None:
        os.makedirs(cache_dir, exist_ok=True)
        path = os.path.join(cache_dir, f"{name}-T{n_stages}-n{len(samples)}-"
                                       f"{_digest(samples, settings)}.npz")
        if os.path.exists(path):
            prior = DiffusionPrior.load(path)
            prior.cache_key = os.path.basename(path)  # names the prior in chunk manifests
            return prior, {"path": path, "loaded": True, "train_time_s": 0.0}
    if progress:
        progress(f"training the diffusion prior {name} (T = {n_stages}, "
                 f"{len(samples)} samples)")
    t0 = time.perf_counter()
    # the training's progress bar only where the caller reports progress (the CLI)
    fit_kw = {"progress": bool(progress), **kw}
    prior = DiffusionPrior(samples.shape[1], n_stages=n_stages, alpha=alpha, seed=seed,
                           **ctor).fit(samples, **fit_kw)
    elapsed = time.perf_counter() - t0
    prior.cache_key = f"{name}-T{n_stages}-n{len(samples)}-{_digest(samples, settings)}.npz"
    if path is not None:
        prior.save(path)
    return prior, {"path": path, "loaded": False, "train_time_s": elapsed}


def full_epochs():
    """The epochs a prior trains at the experiments' default size:
    :meth:`vits_ref.diffusion.DiffusionPrior.fit`'s default (20)."""
    import inspect

    from ...diffusion import DiffusionPrior

    return inspect.signature(DiffusionPrior.fit).parameters["epochs"].default


def scaled_training(train_kwargs, runs, rounds, defaults, progress=None):
    """The priors' training options at a size scaled to the request, and the summary's
    record of it.

    Training dominates a small run: a prior's cost is ``epochs x n_train x T`` network
    steps whatever the runs and rounds asked (``diffts-synthetic --runs 2 --rounds 50``
    trained six priors at full size: 6 minutes). Below the experiment's default size
    (``runs x rounds`` below that of ``defaults``), the epochs are scaled by the fraction
    ``f = runs rounds / (default runs x default rounds)``: ``ceil(f E)`` epochs, at least
    one, of the full ``E`` (:func:`full_epochs`); the training samples, the stages and the
    network stay as they are (TunedTS and MixTS fit the same samples), so such a prior is
    coarser than the paper's. At the default size or above, or when ``train_kwargs``
    gives ``epochs``, the training is as given.

    The energy-distance check of a learned prior (:data:`ENERGY_REPEATS` independent
    pairs, each a chain of ``T`` stages drawing a thousand or more points) is scaled with
    the epochs: ``ceil(f x 50)`` pairs, at least :data:`MIN_ENERGY_REPEATS` (the first
    pair, which the table prints, is the same whatever their number).

    Returns ``(train_kwargs, record)``: the options to train with (None: the defaults) and
    ``{"scaled", "fraction", "epochs", "full_epochs", "energy_repeats", "note"}`` for the
    summary; with ``progress``, a scaled training is said there.
    """
    runs, rounds = val.positive_int(runs, "runs"), val.positive_int(rounds, "rounds")
    full = full_epochs()
    kw = dict(train_kwargs or {})
    frac = min(1.0, (runs * rounds) / (defaults["runs"] * defaults["rounds"]))
    if "epochs" in kw or frac >= 1.0:
        epochs = kw.get("epochs", full)
        return train_kwargs, {"scaled": False, "fraction": frac, "epochs": epochs,
                              "full_epochs": full, "energy_repeats": ENERGY_REPEATS,
                              "note": "trained as given" if "epochs" in kw
                              else "trained at full size"}
    epochs = max(1, math.ceil(frac * full))
    repeats = max(MIN_ENERGY_REPEATS, math.ceil(frac * ENERGY_REPEATS))
    kw["epochs"] = epochs
    note = (f"priors trained {epochs} of {full} epochs and checked on {repeats} of "
            f"{ENERGY_REPEATS} energy-distance pairs: the request ({runs} x {rounds}) is "
            f"{100 * frac:.2g}% of the default size ({defaults['runs']} x "
            f"{defaults['rounds']}), where they are in full; coarser priors than the "
            f"paper's, wider intervals for the claims on them")
    if progress:
        progress(note)
    return kw, {"scaled": True, "fraction": frac, "epochs": epochs, "full_epochs": full,
                "energy_repeats": repeats, "note": note}


def build_methods(samples, prior, sigma, reward="linear", which=METHODS):
    """``[(label, policy), ...]`` of the methods in ``which`` (paper order, then
    :data:`FREQUENTIST`).

    ``samples`` are the prior samples that TunedTS and MixTS fit; ``prior`` is the
    learned diffusion prior of DPS and DiffTS; ``sigma`` the reward noise (linear) that
    every method is told. MixTS and DPS exist for linear rewards only (section 6.1:
    "MixTS is used only in linear bandit experiments"), so they are skipped for
    ``reward="logistic"``, as are the frequentist baselines (their parameters, the module
    docstring's, come from the linear model's ``sigma``).
    """
    import vits_ref as vr

    samples = np.asarray(samples, dtype=float)
    dim = samples.shape[1]
    out = []
    for label in (*METHODS, *FREQUENTIST):
        if label not in which:
            continue
        if reward == "logistic" and label in ("MixTS", "DPS", *FREQUENTIST):
            continue
        if label == LINUCB:
            out.append((label, vr.LinUCB(dim, alpha=sigma, lam=sigma ** 2)))
            continue
        if label == EPSILON_GREEDY:
            # seeded per run by the runner (fresh(seed)): its draws are its own stream
            out.append((label, vr.EpsilonGreedy(dim, epsilon=EPSILON, lam=sigma ** 2)))
            continue
        # the logistic model has no noise scale: Laplace TS takes none, DiffTS sigma = 1
        # (its temperature; 1 is the Bernoulli likelihood)
        gauss_sigma = sigma if reward == "linear" else None
        if label == "TS":
            eng = vr.TunedTS.standard(dim, model=reward, sigma=gauss_sigma)
        elif label == "TunedTS":
            eng = vr.TunedTS(samples, model=reward, sigma=gauss_sigma)
        elif label == "MixTS":
            eng = vr.MixTS.from_samples(samples, n_components=MIX_COMPONENTS, sigma=sigma)
        elif label == "DPS":
            eng = vr.DPS(prior, sigma=sigma)
        else:
            eng = vr.DiffTS(prior, model=reward, sigma=sigma if reward == "linear" else 1.0)
        out.append((label, vr.ThompsonSampling(eng)))
    return out


def energy_distance(x, y):
    r"""The energy distance of two samples (Székely and Rizzo), V-statistic form.

    ``2 mean |x_i - y_j| - mean |x_i - x_k| - mean |y_j - y_l|`` with Euclidean norms
    (SciPy's ``cdist``); zero only for identical empirical distributions, and for two
    independent samples of one distribution of order ``E|X - X'| (1/n + 1/m)``.
    """
    from scipy.spatial.distance import cdist

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(2.0 * cdist(x, y).mean() - cdist(x, x).mean() - cdist(y, y).mean())


def late_slopes(cumulative, start=None):
    """Per run, the mean regret per round over the last half: ``(R_n - R_{n/2}) / (n/2)``.

    ``cumulative``: (runs, n) cumulative regrets. Returns (runs,) floats.
    """
    c = np.asarray(cumulative, dtype=float)
    n = c.shape[1]
    h = n // 2 if start is None else start
    if h < 1 or h >= n:
        return (c[:, -1] / n).tolist()
    return ((c[:, -1] - c[:, h - 1]) / (n - h)).tolist()


def prior_and_regret_figure(scatter, curves, path, title=None, labels=("true prior",
                                                                          "diffusion prior")):
    """Figures 2 and 4 of Kveton et al.: a row of prior scatter plots over a row of regret curves.

    ``scatter``: ``{panel: (true (n, 2), learned (m, 2))}`` (2-D samples; higher
    dimensions are drawn on their first two coordinates); ``curves``: ``{panel: {method:
    (mean, stderr)}}``. Writes a PNG at ``path``; returns the Figure.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plotting import BAND_NOTE, band, has_band, line_styles, outside_legend, save

    panels = list(curves)
    # one style per method across the panels: the logistic panel has no MixTS or DPS
    styles = line_styles(label for c in curves.values() for label in c)
    n = len(panels)
    fig = Figure(figsize=(3.6 * n, 7.0))
    FigureCanvasAgg(fig)
    top, bottom = [], []
    for j, panel in enumerate(panels):
        ax = fig.add_subplot(2, n, j + 1)
        if panel in scatter:
            true, learned = scatter[panel]
            ax.scatter(true[:, 0], true[:, 1], s=3, alpha=0.4, color="tab:blue",
                       label=labels[0])
            ax.scatter(learned[:, 0], learned[:, 1], s=3, alpha=0.4, color="tab:red",
                       label=labels[1])
            ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(panel)
        top.append(ax)
        ax2 = fig.add_subplot(2, n, n + j + 1)
        bottom.append(ax2)
        for label, (mean, se) in curves[panel].items():
            mean, se = np.asarray(mean), np.asarray(se)
            band(ax2, np.arange(1, len(mean) + 1), mean, mean - se, mean + se, label,
                 styles[label])
        ax2.set_xlabel("round n")
        if j == 0:
            ax2.set_ylabel("cumulative regret")
        ax2.grid(alpha=0.3)
    # one legend per row, right of its last panel (outside every data area); the regret
    # bands are +-1 standard error over runs (none with one run)
    legend = outside_legend(top, fontsize=7)
    if legend is not None:
        for h in legend.legend_handles:  # the scatter's 3-point markers, made visible
            h.set_sizes([20.0])
    outside_legend(bottom, fontsize=7, band_note=BAND_NOTE if any(
        has_band(c) for c in curves.values()) else None)
    if title:
        fig.suptitle(title)
    save(fig, path)
    return fig


# -- running the panels -----------------------------------------------------------------

def one_thread(active=True):
    """Context manager: Numba runs on one thread inside (if ``active``), as before after
    (:func:`vits_ref._threads.numba_threads`)."""
    return numba_threads(1 if active else None)


def simulate_method(policy, env, rounds, runs, seed, n_jobs=1, first_run=0):
    """:func:`vits_ref.bandit.simulate` with a new problem instance per run (``theta_*`` drawn
    from the prior in every run); Thompson sampling over the linear DiffTS goes through the
    runner's compiled backend (``"diffts-chain"``,
    :mod:`vits_ref.bandit._diffts_chain`), which gives the Python loop's regret bit for bit
    (``tests/test_diffts_experiments.py``).
    ``first_run``: the runs are ``first_run, ..., first_run + runs - 1`` (a block of a
    longer experiment, as :func:`vits_ref.bandit.simulate`'s ``first_run``; a
    DivergenceError names the run, ``first_run + row``). ``rounds``, ``runs``,
    ``first_run``, ``seed`` and, for the linear DiffTS, ``env`` (its dimension against the
    prior's) are checked before any instance or realisation is drawn, and each run's
    realisation as :func:`vits_ref.bandit.simulate` checks it."""
    from ...bandit._diffts_chain import is_linear_diffts
    from ...bandit.simulate import fused_spec, simulate

    rounds = val.positive_int(rounds, "rounds")
    runs = val.positive_int(runs, "runs")
    first_run = val.positive_int(first_run, "first_run", minimum=0)
    # the Python loop draws one sample per round: with several Numba threads the engines'
    # prange launch per draw costs far more than the draw (about 15 ms against 40 us on a
    # loaded 2-core machine, OpenMP layer), so it runs on one thread (results do not
    # depend on the number of threads)
    python_loop = fused_spec(policy) is None and not is_linear_diffts(policy)
    with one_thread(python_loop):
        return simulate(policy, env, n_rounds=rounds, n_runs=runs, seed=seed,
                        new_instance_per_run=True, n_jobs=n_jobs, first_run=first_run)


def simulate_chunk(policy, env, n_rounds, n_runs, seed, new_instance_per_run=True,
                   kl_rounds=None, first_run=0, device="cpu"):
    """The ``simulate_fn`` of :func:`vits_ref.experiments._common.run_panels` for the prior
    bandits: :func:`simulate_method` on a block of runs (module level: picklable, for the
    process and Dask executors)."""
    if not new_instance_per_run or kl_rounds is not None or device != "cpu":
        raise ValueError("the prior bandits run on new instances per run, on the CPU, "
                         "without the KL diagnostic")
    import dataclasses

    res = simulate_method(policy, env, n_rounds, n_runs, seed, first_run=first_run)
    # no KL asked: none reported (the Gaussian engines' empty (runs, 0) record would add
    # empty kl_rounds / kl_mean to the summary's entries)
    return dataclasses.replace(res, kl=None) if res.kl is not None else res


def priors_key(panels):
    """A digest of the learned priors of ``panels``' methods (their ``cache_key``, set by
    :func:`trained_prior`: the training data and settings), ``"-"`` if there are none."""
    keys = []
    for _, _, methods, _ in panels:
        for _, policy in methods:
            prior = getattr(getattr(policy, "engine", None), "prior", None)
            if prior is not None:
                keys.append(getattr(prior, "cache_key", None) or repr(prior))
    if not keys:
        return "-"
    return hashlib.sha1(json.dumps(keys).encode()).hexdigest()[:12]


def run_panels(name, description, panels, runs, rounds, seed, out, progress=None,
               extra=None, n_jobs=1, reference=None, on_result=None):
    """:func:`vits_ref.experiments._common.run_panels` for the prior bandits, in resumable
    chunks (``out/chunks/panels``; the session's chunking and executor, results
    bit-identical whatever they are): the same outputs (``curves.csv``, ``summary.json``,
    paired differences against ``reference``), every method on a new problem instance per
    run, and the linear DiffTS through its compiled driver over runs (:func:`simulate_method`,
    through :func:`simulate_chunk`; the learned priors' digest, :func:`priors_key`, is part
    of the chunks' fingerprint); a throw-away warm-up per method keeps compilation out
    of ``wall_time_s``; ``regret.png`` is left to the caller (the experiments draw the prior
    above the regret). ``reference``: a method label, or ``{panel: label}`` for one
    reference per panel. Returns the summary; ``curves`` (not in the JSON) holds
    ``{panel: {method: (mean, stderr)}}``."""
    from .._common import run_panels as common_run_panels

    return common_run_panels(name, description, panels, runs, rounds, seed, out, progress,
                             extra=extra, n_jobs=n_jobs, reference=reference,
                             on_result=on_result, simulate_fn=simulate_chunk, plot=False,
                             depends_on={"priors": priors_key(panels)})


# -- the higher-dimensional experiments (MovieLens, digits) -------------------------------

def pca2(reference, *others):
    """Project ``reference`` and ``others`` on the two leading principal axes of
    ``reference`` (the paper draws its 5-D and 8-D priors with UMAP; PCA is linear,
    deterministic and needs no extra package)."""
    ref = np.asarray(reference, dtype=float)
    mu = ref.mean(axis=0)
    _, _, vt = np.linalg.svd(ref - mu, full_matrices=False)
    W = vt[:2].T
    return [(np.asarray(x, dtype=float) - mu) @ W for x in (ref, *others)]


def energy_check(prior, samples, n, seed, repeats=ENERGY_REPEATS):
    """Energy distances in any dimension: the learned prior against half of ``samples``,
    and the two halves against each other (the noise floor at that size); then
    ``repeats`` of each on new random halves (the first of each is that pair), independent
    given ``samples``, whose empirical distribution is the bandit's prior."""
    rng = np.random.default_rng(seed)
    x = np.asarray(samples, dtype=float)[rng.permutation(len(samples))]
    n = int(min(n, len(x) // 2))
    a, b = x[:n], x[n:2 * n]
    learned = prior.sample(n, seed=int(rng.integers(2 ** 31)))
    out = {"n": n, "learned_vs_true": energy_distance(learned, a),
           "true_vs_true": energy_distance(a, b),
           "cov_trace_ratio": float(np.trace(np.cov(learned.T)) / np.trace(np.cov(a.T)))}
    # drawn after the pair above, so its numbers do not move with the repeats
    again, floor = [out["learned_vs_true"]], [out["true_vs_true"]]
    for _ in range(int(repeats) - 1):
        y = np.asarray(samples, dtype=float)[rng.permutation(len(samples))]
        fresh = prior.sample(n, seed=int(rng.integers(2 ** 31)))
        again.append(energy_distance(fresh, y[:n]))
        floor.append(energy_distance(y[:n], y[n:2 * n]))
    out.update(learned_vs_true_repeats=again, true_vs_true_repeats=floor)
    return out, (a, learned)


def run_embedding_experiment(name, description, samples, make_env, rewards, sigma, runs,
                             rounds, seed, out, progress, methods, n_stages, alpha, n_train,
                             train_kwargs, n_energy, n_jobs, extra, title):
    """The MovieLens and digits experiments: one prior learned from ``samples`` (at most
    ``n_train`` of them), one panel per reward model (``make_env(reward)`` gives its
    environment), the methods of :func:`build_methods` with paired differences against
    DiffTS; writes ``curves.csv``, ``summary.json`` and ``regret.png`` (the prior's and the
    learned prior's samples projected on two principal axes, above the regret curves)."""
    samples = np.asarray(samples, dtype=float)
    s_train, s_check = seeds(seed, 2)
    rng = np.random.default_rng(s_train)
    train = samples if len(samples) <= n_train else samples[
        np.sort(rng.choice(len(samples), n_train, replace=False))]
    prior, info = trained_prior(train, n_stages, alpha, seed=seed,
                                cache_dir=os.path.join(out, "priors"), name=name,
                                train_kwargs=train_kwargs, progress=progress)
    repeats = extra.get("prior_training", {}).get("energy_repeats", ENERGY_REPEATS)
    energy, (true, learned) = energy_check(prior, samples, n_energy, s_check, repeats)
    which = tuple(m for m in METHODS if m in set(methods) | {"DiffTS"})
    panels = [(f"{reward} rewards", make_env(reward), build_methods(train, prior, sigma,
                                                                    reward, which),
               {"reward": reward}) for reward in rewards]
    extra = {**extra, "dim": samples.shape[1], "n_prior_samples": len(samples),
             "n_train": len(train), "n_stages": n_stages, "alpha": alpha, "sigma": sigma,
             "rewards": list(rewards), "train_kwargs": train_kwargs, "prior": info,
             "energy": energy, "methods": list(which)}
    result = run_panels(name, description, panels, runs, rounds, seed, out, progress,
                        extra=extra, n_jobs=n_jobs, reference="DiffTS")
    curves = result.pop("curves")
    path = os.path.join(out, "regret.png")
    t2, l2 = pca2(true[:500], learned[:500])
    if plotted(lambda: prior_and_regret_figure(
            {p: (t2, l2) for p in curves}, curves, path,
            title=f"{title} ({runs} runs x {rounds} rounds)"), progress):
        result["files"].append(path)
    from .._common import write_json

    write_json(result["files"][1], result)
    return result
