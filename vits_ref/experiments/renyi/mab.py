r"""The Rényi appendix's multi-armed bandit (Li & Turner, appendix C, Algorithm 1, Tables 3-4).

Setup, as the appendix states it: three arms; each arm ``i`` has a Gaussian ``q_i(s)``
over its mean reward ``s``, initialised at ``N(25, 1e-8)`` (Table 3, the ``q(s)`` row);
every round draws one ``s_i ~ q_i`` per arm, plays ``i* = argmax_i s_i / Sigma_q^i``,
stores the reward, and then updates *every* arm's ``(mu_q^i, Sigma_q^i)`` by 10 Adam
steps (learning rate 2e-2) on a 300-draw Monte Carlo estimate of the Rényi bound
(:class:`vits_ref.RenyiVI`); 4000 rounds. Arm priors (Table 3): equal-weight mixtures
``N(13, 1.5) + N(20, 1.5)``, ``N(16, 1.5) + N(14, 1.5)``, ``N(10, 1.5) + N(17, 1.5)``.
Rewards (Table 4, :func:`vits_ref.envs.renyi_mab.renyi_mab`): ``0.97 N(10, 1) + 0.03
N(22, 1)``, ``N(16, 3)``, ``0.97 N(10, 1) + 0.03 N(10, 1)``; arm 2 (index 1, mean 16) is
optimal, the others pay 10.36 and 10 on average. The Sigma columns are read as variances
(Sigma is a covariance throughout the appendix).

What the appendix leaves open, and the choices made here:

- **The likelihood.** Appendix B's ``p(o | s) = N(s x, Sigma_l)`` with ``x = 1`` (a
  multi-armed bandit has no features); ``Sigma_l`` is not given: ``noise_var = 1`` (the
  variance of Table 4's components) by default. The model is
  :class:`vits_ref.models.mixture_prior.MixturePrior` (sufficient statistics, the Table 3
  mixture as prior); it is misspecified for arms 1 and 2 (their rewards are a mixture and
  have variance 3), as in the appendix.
- **Which alphas.** Not stated: ``alpha`` in :data:`ALPHAS` = 0 (the importance-weighted
  bound), 0.5, 1 (KL: the ELBO), 2 and 5.
- **The score.** Algorithm 1 divides the draw by the variance of ``q`` (a score that
  grows as an arm's ``q`` narrows, i.e. with its number of pulls: close to greedy on the
  most played arm). The appendix's rule is run as one panel, plain Thompson sampling
  (``argmax_i s_i``) as the other, both labelled.
- **Runs.** Not stated: 20 by default, each method on the same 20 reward sequences
  (common random numbers), so the paired differences against ``alpha = 1 (KL)`` have
  narrow intervals (:func:`vits_ref.experiments._common.run_panels`).

Arms not played in a round are updated on their unchanged data, as Algorithm 1's loop
"for each arm i do: update" says (so every arm's ``q`` keeps moving towards its
posterior, which matters from the ``N(25, 1e-8)`` start).

Equal alphas at small sizes. For its first few dozen rounds every alpha plays the same
arms: from the ``N(25, 1e-8)`` start, far above every reward, each alpha's bound pulls
every arm's mean down and each of Adam's steps moves it by about its step size whatever
the gradient's size (Adam divides by the gradient's own running scale), so every alpha's
``q`` moves alike, about 0.2 a round (10 steps of 0.02), and stays narrow; the draws of
every alpha (the same streams) then pick the same arms. Measured (seed 3, the same
rewards for every alpha): over the first 20 rounds the means of alpha = 0, 0.5, 2 and 5
stayed within 3e-4 of alpha = 1's (at about 19.8 at round 20), the standard deviations
about 0.005; their first arm other than alpha = 1's came at rounds 28-36, as the means
neared the rewards (alpha = 2 and 5 still alike at round 40). ``run renyi-mab --runs 2 --rounds
20`` therefore gives one regret for every alpha in the plain panel, and its table says
why (:data:`EQUAL_WHY`).

Output: ``curves.csv``, ``summary.json``, ``regret.png`` and ``arms.png`` (fraction of
pulls of each arm); the summary records, per method, the fraction of pulls of the optimal
arm over all rounds and over the last 10% of the rounds, per run.

Cost (measured on the shared 2-core development machine, one Numba and one BLAS thread per
process): one round is 3 RenyiVI updates of 10 steps x 300 draws, 0.46-0.80 ms
(``us_per_round`` in the summary; the compiled steps take about 0.16 ms of an update's
0.26 ms, the rest is the engine's Python), so a 4000-round run of one method takes 2-3 s.
The paper size, 10 methods x 20 runs x 4000 rounds, took 8.4 minutes with ``n_jobs = 2``
(``OPENBLAS_NUM_THREADS=1 python -m vits_ref run renyi-mab --jobs 2``; other processes
kept the load average near 4, so an idle machine should need about 5 minutes).

Results at that size (seed 0; ``python -m vits_ref run renyi-mab``): with plain sampling,
alpha = 1, 2 and 5 reach the optimal arm within a few dozen rounds (final regret 96-98);
alpha = 0.5 and 0 explore for about 1200 and 3500 rounds (regret 3464 and 9586): once an arm's
posterior is narrow, the self-normalised weights of a wide ``q`` degenerate (effective
sample size below 10 of 300) and the entropy term's gradient keeps ``q`` wide. With the
appendix's variance-scaled score, alpha = 0.5 does best (73) and alpha = 2 and 5 lock onto
a suboptimal arm in 19 of 20 runs (regret about 22 000).
"""

import os

import numpy as np

from ... import _validate as val
from ..._seeding import child
from ...envs.renyi_mab import TABLE4, renyi_mab
from ...inference import RenyiVI
from ...models.mixture_prior import MixturePrior
from .._chunks import check_progress
from .._common import regret_table, run_panels, write_json
from ..plotting import arm_fractions, paper_title, plotted

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("renyi", "appendix C: 3-armed bandit"),
          "arms.png": paper_title("renyi", "appendix C: arms pulled")}

NAME = "renyi-mab"
DESCRIPTION = ("Rényi appendix C: 3-armed bandit with multi-modal priors and rewards "
               "(Tables 3-4), Rényi-VI Gaussian per arm, alpha compared")
DEFAULTS = {"runs": 20, "rounds": 4000, "seed": 0}

#: Table 3: each arm's prior, ``(component means, component variance)``, equal weights.
TABLE3 = (((13.0, 20.0), 1.5), ((16.0, 14.0), 1.5), ((10.0, 17.0), 1.5))
#: Table 3, the ``q(s)`` row: every arm's starting Gaussian ``N(25, 1e-8)``.
Q_INIT = (25.0, 1e-8)
ALPHAS = (0.0, 0.5, 1.0, 2.0, 5.0)
N_MC, N_STEPS, STEP_SIZE = 300, 10, 2e-2
#: Deprecated former name of :data:`STEP_SIZE` (Adam's step size; kept for one release).
LEARNING_RATE = STEP_SIZE
OPTIMAL_ARM = 1
#: score -> panel title: plain Thompson sampling (argmax s_i) and the appendix's
#: variance-scaled score (argmax s_i / Sigma_q^i)
SCORES = {"sample": "plain sampling", "variance-scaled": "variance-scaled"}
REFERENCE = "alpha = 1 (KL)"
#: why alphas can pull the same arms in every round at a small size (module docstring)
EQUAL_WHY = ("every alpha's q moves alike until its mean nears the rewards: from the "
             "N(25, 1e-8) start each Adam step is about its step size, whatever alpha, and "
             "q stays narrow, so the alphas' draws pick alike")


def label(alpha):
    """The method label of an alpha."""
    if alpha == 1.0:
        return REFERENCE
    if alpha == 0.0:
        return "alpha = 0 (IW bound)"
    return f"alpha = {alpha:g}"


class RenyiArms:
    """Algorithm 1 of appendix C: one :class:`~vits_ref.RenyiVI` per arm, every arm updated
    every round.

    Parameters
    ----------
    engines : sequence of RenyiVI
        One engine per arm (each with its own prior), templates: the policy works on
        fresh copies (:meth:`~vits_ref.inference.base.Engine.fresh`).
    score : {"sample", "variance-scaled"}, default "sample"
        ``"sample"``: play ``argmax_i s_i`` (Thompson sampling); ``"variance-scaled"``:
        ``argmax_i s_i / Sigma_q^i`` (Algorithm 1 as printed).
    update_all : bool, default True
        Update the arms not played too (on their unchanged data), as Algorithm 1 does.
    seed : int, SeedSequence or None
        Arm ``a``'s engine is seeded with child ``a`` of ``SeedSequence(seed)``.

    Examples
    --------
    >>> import numpy as np
    >>> from vits_ref.experiments.renyi.mab import RenyiArms, arm_engines
    >>> pol = RenyiArms(arm_engines(alpha=1.0, n_steps=2, n_mc=20), seed=0)
    >>> X = np.ones((3, 1))
    >>> arm = pol.select(X)
    >>> pol.update(X, arm, 16.0).n_obs
    1
    """

    dim = 1

    def __init__(self, engines, score="sample", update_all=True, seed=None):
        self.templates = tuple(engines)
        if not self.templates or not all(isinstance(e, RenyiVI) for e in self.templates):
            raise TypeError("engines must be a non-empty sequence of RenyiVI engines")
        self.score = val.choice(score, "score", tuple(SCORES))
        self.update_all = bool(update_all)
        self.n_arms = len(self.templates)
        self.seed = seed
        root = val.as_seed_sequence(seed)
        self.engines = [e.fresh(child(root, a)) for a, e in enumerate(self.templates)]
        self.name = f"{self.templates[0].name}, {self.score}"
        self._no_x, self._no_r = np.empty((0, 1)), np.empty(0)

    @property
    def n_obs(self):
        """Observations over all arms."""
        return sum(e.n_obs for e in self.engines)

    def scores(self):
        """This round's scores: one draw per arm, divided by ``Sigma_q`` if variance-scaled."""
        s = np.array([e.sample(1)[0, 0] for e in self.engines])
        if self.score == "variance-scaled":
            s = s / np.array([e.cov[0, 0] for e in self.engines])
        return s

    def select(self, contexts):
        """The arm to play (``contexts``, one row of ones per arm, only fixes ``K``)."""
        if np.shape(contexts)[0] != self.n_arms:
            raise ValueError(f"contexts must have one row per arm ({self.n_arms}), got "
                             f"{np.shape(contexts)[0]}")
        return int(np.argmax(self.scores()))

    def update(self, contexts, arm, reward):
        """Feed the reward to the played arm's engine; the others take their steps too."""
        if not 0 <= int(arm) < self.n_arms:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm}")
        for a, e in enumerate(self.engines):
            if a == arm:
                e.update(np.ones((1, 1)), np.array([float(reward)]))
            elif self.update_all:
                e.update(self._no_x, self._no_r)
        return self

    def fresh(self, seed=None):
        """The same policy at the start, with a new seed."""
        return RenyiArms(self.templates, self.score, self.update_all, seed=seed)

    def __repr__(self):
        return (f"RenyiArms(alpha={self.templates[0].alpha:g}, score={self.score!r}, "
                f"n_arms={self.n_arms})")


def arm_engines(alpha, noise_var=1.0, n_mc=N_MC, n_steps=N_STEPS, step_size=STEP_SIZE,
                priors=TABLE3, q_init=Q_INIT, learning_rate=None):
    """The per-arm engines of the experiment: Table 3's priors and ``q`` start.

    ``step_size`` is Adam's step size (:class:`~vits_ref.RenyiVI`'s ``step_size``);
    ``learning_rate`` is its deprecated former name (accepted for one release, with a
    DeprecationWarning).
    """
    step_size = val.renamed(step_size, learning_rate, "step_size", "learning_rate",
                            STEP_SIZE)
    out = []
    for means, var in priors:
        model = MixturePrior(1, [[m] for m in means], [[var]] * len(means))
        out.append(RenyiVI(1, model, alpha=alpha, eta=1.0 / noise_var, n_mc=n_mc,
                           n_steps=n_steps, step_size=step_size,
                           init_mean=[q_init[0]], init_cov=[[q_init[1]]]))
    return out


def pull_fractions(arms, n_arms=3, tail=0.1):
    """Per arm, the fraction of pulls over all rounds and over the last ``tail`` of them.

    ``arms``: (n_runs, n_rounds) ints. Returns ``{"all": [...], "last": [...],
    "optimal_last_per_run": [...]}`` (means over runs; the last, per run).
    """
    arms = np.asarray(arms)
    T = arms.shape[1]
    last = arms[:, T - max(1, int(round(tail * T))):]
    return {"all": [float((arms == a).mean()) for a in range(n_arms)],
            "last": [float((last == a).mean()) for a in range(n_arms)],
            "optimal_last_per_run": (last == OPTIMAL_ARM).mean(axis=1).tolist()}


def run(runs=20, rounds=4000, seed=0, out="results/renyi-mab", progress=None, alphas=ALPHAS,
        scores=tuple(SCORES), noise_var=1.0, n_mc=N_MC, n_steps=N_STEPS,
        step_size=STEP_SIZE, n_jobs=1, learning_rate=None):
    """Run the experiment and write ``curves.csv``, ``summary.json``, ``regret.png``,
    ``arms.png``.

    Parameters
    ----------
    runs, rounds, seed : int
        Paper size: rounds = 4000 (runs not stated: 20).
    out : str
        Output folder (created).
    progress : callable or None
        ``progress(message)`` for status lines.
    alphas : sequence of float, default :data:`ALPHAS`
        Rényi orders compared (1 is always run: it is the reference).
    scores : sequence of {"sample", "variance-scaled"}
        The panels.
    noise_var : float, default 1.0
        The likelihood's variance ``Sigma_l`` (not given by the appendix).
    n_mc, n_steps, step_size
        Appendix C: 300 draws, 10 Adam steps, Adam's step size (its "learning rate")
        2e-2.
    n_jobs : int, default 1
        Worker processes over runs (:func:`vits_ref.bandit.simulate`).
    learning_rate : float, optional
        Deprecated former name of ``step_size`` (accepted for one release, with a
        DeprecationWarning).

    Returns
    -------
    dict
        The JSON summary; ``pulls[panel][method]`` holds :func:`pull_fractions`.
    """
    check_progress(progress)
    step_size = val.renamed(step_size, learning_rate, "step_size", "learning_rate",
                            STEP_SIZE)
    alphas = sorted({float(a) for a in alphas} | {1.0})
    env = renyi_mab(seed=seed)
    panels = []
    for score in scores:
        panel = SCORES[val.choice(score, "score", tuple(SCORES))]
        methods = [(label(a), RenyiArms(arm_engines(a, noise_var, n_mc, n_steps,
                                                    step_size), score=score))
                   for a in alphas]
        panels.append((panel, env, methods, {"score": score}))
    rules = {SCORES["sample"]: "argmax_i s_i (Thompson sampling)",
             SCORES["variance-scaled"]: "argmax_i s_i / Sigma_q^i (Algorithm 1 as printed)"}
    extra = {"alphas": alphas, "panels": rules, "arm_means": env.arm_means.tolist(),
             "optimal_arm": OPTIMAL_ARM, "priors_table3": TABLE3, "q_init": Q_INIT,
             "rewards_table4": TABLE4, "noise_var": noise_var, "n_mc": n_mc,
             "n_steps": n_steps, "step_size": step_size}
    arms = {}
    result = run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                        title=f"{TITLES['regret.png']} ({runs} runs)", extra=extra,
                        n_jobs=n_jobs, reference=REFERENCE,
                        on_result=lambda panel, lab, res: arms.__setitem__((panel, lab),
                                                                          res.arms))
    pulls = {}
    for (panel, lab), a in arms.items():
        pulls.setdefault(panel, {})[lab] = pull_fractions(a)
    result["pulls"] = pulls
    path = os.path.join(os.path.dirname(result["files"][0]), "arms.png")
    bars = {p: {m: {"arm1": f["all"][0], "arm2": f["all"][1], "arm3": f["all"][2]}
                for m, f in ms.items()} for p, ms in pulls.items()}
    if plotted(lambda: arm_fractions(
            bars, path, title=f"{TITLES['arms.png']} ({runs} runs x {rounds} rounds)",
            categories=(("arm1", "arm 1 (10.36)"), ("arm2", "arm 2 (16, optimal)"),
                        ("arm3", "arm 3 (10)"))), progress, "arm plot"):
        result["files"].append(path)
    write_json(result["files"][1], result)  # again, with the pull fractions
    return result


def table(result):
    """The regret table (paired differences against alpha = 1) and the pull fractions."""
    lines = [regret_table(result, why=EQUAL_WHY), "",
             "pulls of arms 1 / 2 (optimal) / 3, all rounds   [optimal arm, last 10%]"]
    for panel, methods in result.get("pulls", {}).items():
        for method, f in methods.items():
            a = f["all"]
            lines.append(f"{panel:18s} {method:22s} {a[0]:.3f} / {a[1]:.3f} / "
                         f"{a[2]:.3f}   [{f['last'][OPTIMAL_ARM]:.3f}]")
    return "\n".join(lines)
