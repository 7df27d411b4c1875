"""Figure 2 of the VITS paper: the quadratic pool bandit with a neural reward model.

Pool environment of appendix H with ``r = (x theta*)^2 + alpha eps``,
``alpha = (1 + zeta^2) sqrt(3 + 6/d)``, ``d = 20``, ``K = 50``, zeta 0.1 and 1. VITS-II,
VITS-II Hessian-free (20 draws, symmetrised) and LMC-TS use the MLP ``x -> 20 -> 20 -> 1``
(ReLU, 861 parameters; :class:`vits_ref.models.MLP`, Hessian = Gauss-Newton matrix);
LinTS is the misspecified linear baseline. 10 inner steps per round.

Hyperparameters: ``eta = 1``, ``lam = 10`` (prior ``N(0, I/10)``: with ``lam = 1`` a prior
draw of the weights gives outputs and a Gauss-Newton curvature so large that VITS
diverged in the first round even at ``h0 = 1e-3``), decayed steps ``h_t = 1e-3 / t``.
The Hessian-free variant estimates the 861 x 861 matrix ``A`` from 20 draws: a rank-20
estimate whose nonzero eigenvalues are ~40 times too large in the first rounds, so with the
same square-root step it diverged in round 1; its square root uses ``h0 = 1e-4`` (stable
over 20 rounds x 2 runs at both zetas; 3e-4 was borderline).

Cost: a VITS step on 861 parameters is three 861 x 861 products (about 34 ms each on one
core here, 95% of a round), so a VITS-II round (10 steps) took 0.40 s and a
Hessian-free round 0.54 s here (up to twice that on a busy machine); LinTS and LMC-TS
cost under a millisecond. The paper's 50 runs x
1000 rounds x 2 zetas would take about 28 CPU-hours on 2 cores.

The default is small so that it finishes in under 2 minutes on the 2-core machine:
4 methods x 2 zetas x DEFAULT_RUNS runs x DEFAULT_ROUNDS rounds (see :data:`DEFAULTS`),
i.e. 2 x 2 x 6 = 24 rounds of each of VITS-II and HF. Measured on the idle 2-core
Intel Xeon of this project (``time python -m vits_ref run vits-fig2 --out /tmp/f2``):
57 s cold (a fresh ``NUMBA_CACHE_DIR``: 31.5 s of warm-ups, i.e. compilation, and 22.7 s
of runs) and 29 s warm (4.1 s of warm-ups, 22.9 s of runs).
It decides little (its intervals are too wide: the claims come out inconclusive, with
the runs that would decide them); it shows the pipeline works. ``--runs`` and ``--rounds``
scale it up; the paper's size is
``run(..., paper=True)`` (50 runs x 1000 rounds; ``--paper`` on the command line, which
runs in resumable chunks: see :mod:`vits_ref.experiments._chunks`).

On a GPU (docs/mlp_gpu.md): ``--device cuda`` runs VITS-II, HF and LMC-TS on the batched
path :mod:`vits_ref.bandit._batched_mlp` with CuPy (the extra ``vits_ref[cupy]``), a chunk of
runs in lockstep as one batch (every 861 x 861 product one batched cuBLAS call over the
runs; the default chunk is 10 runs, ``--chunk-runs 50`` puts a method and panel's 50
runs in one batch); LinTS stays on the CPU. The arms and regret are those of the Python
loop (``tests/test_batched_mlp.py``; the states agree to 3.5e-16 relative). Without CuPy
or a GPU it stops with one line before any run. Cost model
(:mod:`vits_ref._bench.mlp_gpu`): 38 GFLOP per VITS round and run (three products per
step; the Gauss-Newton ``J^T J`` over the history adds 39% at round 1000, 19% on
average), 8.5 PFLOP for the paper's figure, about 3.4 minutes at the 42 TFLOP/s measured
for CuPy's batched product on an H100 (docs/performance.md), not yet run on a GPU.
``run(batched=True)`` runs the batched path with NumPy on the CPU: the same results,
no faster than the per-run loop on this 2-core machine (0.85x to 1.4x, measured), so
not the default.

Paired differences are taken against VITS-II (:data:`REFERENCE`), the paper's method in
this figure (there is no exact posterior to compare with). :func:`claims` judges the
figure's two claims by the claim table's rule at any size; the paper's size (50 runs x 1000
rounds, about 28 CPU-hours here) is what can decide them.
"""

from ...bandit import _batched_mlp
from ...bandit.policies import ThompsonSampling
from ...bandit.simulate import simulate
from ...envs import pool
from ...inference import VITS, Langevin, LinTS
from ...models import MLP
from .. import _chunks
from .._chunks import check_progress
from .._common import regret_table, run_panels
from ..plotting import paper_title

#: The figures' titles by file, the paper named first (sizes are appended at run time).
TITLES = {"regret.png": paper_title("vits", "Figure 2: quadratic pool bandit with an MLP")}

NAME = "vits-fig2"
DESCRIPTION = "VITS paper Figure 2: quadratic pool bandit with a 20-20 MLP (small default)"
#: The small default (under 2 minutes on 2 cores, see the module docstring).
DEFAULT_RUNS, DEFAULT_ROUNDS = 2, 6
DEFAULTS = {"runs": DEFAULT_RUNS, "rounds": DEFAULT_ROUNDS, "seed": 0}
ZETAS = (0.1, 1.0)
DIM, N_ARMS, HIDDEN = 20, 50, (20, 20)
ETA, LAM, STEP, HF_COV_STEP = 1.0, 10.0, 1e-3, 1e-4
#: The method the paired differences are taken against: the paper's method in Figure 2.
REFERENCE = "VITS-II"
HF = "VITS-II HF (20 draws)"
#: The paper's size (section 4.1: 50 runs; 1000 rounds as in Figure 1): the claims are
#: decided only at this size or larger.
PAPER_RUNS, PAPER_ROUNDS = 50, 1000
#: ``--paper``: the paper's size (section 4.1).
PAPER_SIZE = {"runs": PAPER_RUNS, "rounds": PAPER_ROUNDS}


def policies():
    """``(label, policy)`` pairs."""
    net = MLP(DIM, hidden=HIDDEN)
    common = {"model": net, "eta": ETA, "lam": LAM, "step_size": STEP, "n_steps": 10}
    return [("LinTS", ThompsonSampling(LinTS(DIM, eta=1.0, lam=1.0))),
            ("VITS-II", ThompsonSampling(VITS(net.dim, variant="II", **common))),
            ("VITS-II HF (20 draws)", ThompsonSampling(
                VITS(net.dim, variant="hessian_free", n_mc=20, symmetrize=True,
                     cov_step_size=HF_COV_STEP, **common))),
            ("LMC-TS", ThompsonSampling(Langevin(net.dim, **common)))]


def simulate_cuda(policy, env, n_rounds, **kwargs):
    """``--device cuda``: the MLP methods on the batched path with CuPy
    (:mod:`vits_ref.bandit._batched_mlp`, a chunk of runs one batch), LinTS on the CPU (its fused
    loop, as with ``--device cpu``). :func:`vits_ref.bandit.simulate`'s arguments and result."""
    return _simulate_batched(policy, env, n_rounds, "cupy", kwargs)


def _cuda_device_for(policy):
    """Where :func:`simulate_cuda` runs ``policy`` (the summary records it)."""
    return "cuda" if _batched_mlp.supports(policy) else "cpu"


simulate_cuda.device_for = _cuda_device_for


def simulate_numpy_batched(policy, env, n_rounds, **kwargs):
    """``run(batched=True)`` on the CPU: the MLP methods on the batched path with NumPy,
    LinTS as with ``--device cpu``. The same arms and regret as the Python loop."""
    return _simulate_batched(policy, env, n_rounds, "numpy", kwargs)


def _simulate_batched(policy, env, n_rounds, array, kwargs):
    if _batched_mlp.supports(policy):
        return _batched_mlp.simulate(policy, env, n_rounds, array=array, **kwargs)
    return simulate(policy, env, n_rounds, **{**kwargs, "device": "cpu"})


def run(runs=None, rounds=None, seed=0, out="results/vits-fig2", progress=None,
        methods=None, n_jobs=1, paper=False, batched=False):
    """Run both panels; writes ``curves.csv``, ``summary.json``, ``regret.png``.

    ``runs``/``rounds`` default to the small :data:`DEFAULTS` (under 2 minutes on 2 cores),
    or with ``paper=True`` to the paper's :data:`PAPER_RUNS` x :data:`PAPER_ROUNDS` (about
    28 CPU-hours here); explicit values win over both.

    Under a session with ``device="cuda"`` (``--device cuda``) the MLP methods run on the
    batched path with CuPy (:func:`simulate_cuda`; a RuntimeError before any work without
    CuPy or a GPU); ``batched=True`` runs them on the batched path with NumPy on the CPU
    (:func:`simulate_numpy_batched`). Either way the arms and regret are those of the
    Python loop (``tests/test_batched_mlp.py``).
    """
    check_progress(progress)
    if runs is None:
        runs = PAPER_RUNS if paper else DEFAULT_RUNS
    if rounds is None:
        rounds = PAPER_ROUNDS if paper else DEFAULT_ROUNDS
    simulate_fn = None
    if _chunks.current().device == "cuda":
        _batched_mlp.array_module("cupy")  # no CuPy or no GPU: one line, before any work
        simulate_fn = simulate_cuda
    elif batched:
        simulate_fn = simulate_numpy_batched
    if progress and simulate_fn is not None:
        lib = "CuPy" if simulate_fn is simulate_cuda else "NumPy"
        batch = min(runs, _chunks.current().chunk_runs)
        progress(f"the MLP methods run batched with {lib}: batches of {batch} runs (one "
                 f"per chunk of runs; --chunk-runs {runs} makes it one batch of {runs} "
                 f"per method and panel); LinTS on the CPU")
    if progress:
        progress(f"planned: 4 methods x {len(ZETAS)} zetas x {runs} runs x {rounds} rounds; "
                 f"a VITS-II round about 0.4 s and a Hessian-free one about 0.55 s on "
                 f"2 cores: about {round(len(ZETAS) * runs * rounds)} s of runs plus up "
                 f"to 35 s of compilation on a cold cache")
    panels = [(f"zeta = {zeta:g}",
               pool(dim=DIM, n_arms=N_ARMS, zeta=zeta, reward="quadratic", seed=seed),
               [m for m in policies() if methods is None or m[0] in methods], {"zeta": zeta})
              for zeta in ZETAS]
    return run_panels(NAME, DESCRIPTION, panels, runs, rounds, seed, out, progress,
                      title=f"{TITLES['regret.png']} ({runs} runs)",
                      extra={"eta": ETA, "lam": LAM, "step_size": STEP,
                             "hf_cov_step_size": HF_COV_STEP, "hidden": HIDDEN},
                      n_jobs=n_jobs, reference=REFERENCE, simulate_fn=simulate_fn)


table = regret_table
