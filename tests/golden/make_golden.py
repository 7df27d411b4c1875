"""Golden outputs recorded before the restructuring into layers (b6d5d19), asserted after it.

``python tests/golden/make_golden.py`` writes ``tests/golden/golden.npz`` from the public
API (only the experiments' import lines changed with the move to experiments/vits/):
the regret and arms of
every named policy on both synthetic environments (fused and Python loops), their KL
traces, the states of the non-linear engines after a few updates, and the Gaussian-target
traces of appendices F/I. ``tests/test_golden.py`` recomputes every entry with
:func:`compute` and compares.

Recorded on main at b6d5d19 (numba 0.68.1, numpy 2.4.6, OpenBLAS 1 thread); do not
regenerate it to make a change pass: a changed entry is a changed result.
"""

import os
import sys

import numpy as np

import vits_ref as vr

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "golden.npz")
#: The machine the file was recorded on (:func:`machine`), beside it; absent for a file
#: recorded before machines were written down (golden.npz: an AVX-512 Intel machine, its
#: exact target not kept), which is then compared within rounding only.
MACHINE_PATH = os.path.join(HERE, "golden_machine.json")
#: Records of the same outputs on other machines, compared bit for bit on a machine of
#: the same compile target and BLAS kernels (``python make_golden.py --bits``).
BITS_DIR = os.path.join(HERE, "bits")


def machine():
    """What decides the last bits of the outputs on this machine: the CPU Numba compiles
    for (``NUMBA_CPU_NAME`` or the host's, and its features) and OpenBLAS's kernel family
    (``OPENBLAS_CORETYPE`` if set, else what OpenBLAS chose), with the versions."""
    import llvmlite.binding as ll
    import numba
    from numba.core import config

    cpu = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_NAME else ll.get_host_cpu_features().flatten()
    blas = os.environ.get("OPENBLAS_CORETYPE")
    if blas is None:
        try:
            from threadpoolctl import threadpool_info

            blas = ",".join(sorted({str(i.get("architecture")) for i in threadpool_info()
                                    if i.get("internal_api") == "openblas"})) or None
        except ImportError:
            blas = None
    return {"cpu": cpu, "cpu_features": features or "", "blas_kernels": blas,
            "numba": numba.__version__, "numpy": np.__version__}

def bits_path(m):
    """The record of machine ``m`` (:func:`machine`) in :data:`BITS_DIR`: named by its
    compile target, a digest of its CPU features and its BLAS kernels."""
    import hashlib

    features = hashlib.sha256(str(m["cpu_features"]).encode()).hexdigest()[:8]
    return os.path.join(BITS_DIR, f"{m['cpu']}-{features}-{m['blas_kernels']}.npz")


NAMED = ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-cv", "lmc", "random")
GAUSSIAN = ("lints", "vits-i", "vits-ii", "vits-hf", "vits-hf-cv")
#: The named policies' defaults when the outputs were recorded (b6d5d19). A later change moved the
#: defaults onto the paper's grid (a change of hyperparameters, not of kernels): the golden
#: runs keep the recorded ones, so they still check that the code computes the same numbers.
LEGACY_DEFAULTS = {
    "lints": {"eta": 1.0, "lam": 1.0},
    "linucb": {"alpha": 1.0, "lam": 1.0},
    "vits-i": {"variant": "I", "eta": 1.0, "lam": 1.0, "step_size": 0.01, "n_steps": 10},
    "vits-ii": {"variant": "II", "eta": 1.0, "lam": 1.0, "step_size": 0.01, "n_steps": 10},
    "vits-hf": {"variant": "hessian_free", "eta": 1.0, "lam": 1.0, "step_size": 0.005,
                "cov_step_size": 0.0025, "n_steps": 10, "n_mc": 20, "symmetrize": True},
    "vits-hf-cv": {"variant": "hessian_free", "eta": 1.0, "lam": 1.0, "step_size": 0.01,
                   "cov_step_size": 0.005, "n_steps": 10, "n_mc": 20, "symmetrize": True,
                   "control_variate": True},
    "lmc": {"eta": 1.0, "lam": 1.0, "step_size": 0.02, "n_steps": 10},
    "random": {},
}


def _envs():
    return {"pool": vr.envs.pool(dim=6, n_arms=8, zeta=1.0, seed=3),
            "hard": vr.envs.hard_instance(dim=5, n_arms=5, seed=4)}


def _named(out):
    for env_name, env in _envs().items():
        for name in NAMED:
            kl_rounds = [5, 20, 40] if name in GAUSSIAN else None
            for fused in (True, False):
                policy = vr.make_policy(name, env.dim, **LEGACY_DEFAULTS[name])
                res = vr.simulate(policy, env, n_rounds=40, n_runs=2, seed=11,
                                  kl_rounds=kl_rounds, fused=fused)
                key = f"named/{env_name}/{name}/{'fused' if fused else 'python'}"
                out[key + "/regret"] = res.regret
                out[key + "/arms"] = res.arms
                if res.kl is not None:
                    out[key + "/kl"] = res.kl


def _engines():
    """(label, engine factory, data kind) of the non-linear and general-prior engines."""
    m0 = np.array([0.3, -0.2, 0.1])
    s0 = np.array([[1.0, 0.2, 0.0], [0.2, 0.8, 0.1], [0.0, 0.1, 0.5]])
    mlp = vr.models.MLP(3, hidden=(4, 3), lam=2.0)
    out = []
    for variant in ("I", "II", "hessian_free"):
        out.append((f"logistic/vits-{variant}",
                    lambda v=variant: vr.VITS(3, variant=v, model="logistic", step_size=0.1,
                                              n_steps=4, n_mc=3, seed=5), "bernoulli"))
        out.append((f"mlp/vits-{variant}",
                    lambda v=variant: vr.VITS(mlp.dim, variant=v, model=mlp, lam=2.0,
                                              step_size=0.002, n_steps=3, n_mc=2, seed=6),
                    "mlp"))
        out.append((f"logistic-prior/vits-{variant}",
                    lambda v=variant: vr.VITS(3, variant=v,
                                              model=vr.models.Logistic(3, prior_mean=m0,
                                                                       prior_cov=s0),
                                              step_size=0.1, n_steps=4, n_mc=2, seed=7),
                    "bernoulli"))
        out.append((f"linear-prior/vits-{variant}",
                    lambda v=variant: vr.VITS(3, variant=v,
                                              model=vr.models.Linear(3, prior_mean=m0,
                                                                     prior_cov=s0),
                                              step_size=0.05, n_steps=4, n_mc=2, seed=8),
                    "gaussian"))
    out.append(("logistic/vits-hf-cv",
                lambda: vr.VITS(3, variant="hessian_free", control_variate=True,
                                model="logistic", step_size=0.1, n_steps=4, n_mc=3, seed=5),
                "bernoulli"))
    out.append(("mlp/vits-hf-cv",
                lambda: vr.VITS(mlp.dim, variant="hessian_free", control_variate=True,
                                model=mlp, lam=2.0, step_size=0.002, n_steps=3, n_mc=2, seed=6),
                "mlp"))
    out.append(("logistic/lmc", lambda: vr.Langevin(3, model="logistic", step_size=0.05,
                                                    n_steps=5, seed=9), "bernoulli"))
    out.append(("mlp/lmc", lambda: vr.Langevin(mlp.dim, model=mlp, lam=2.0, step_size=0.001,
                                               n_steps=5, seed=9), "mlp"))
    out.append(("logistic/laplace", lambda: vr.Laplace(3, model="logistic", seed=10),
                "bernoulli"))
    out.append(("logistic-prior/laplace",
                lambda: vr.Laplace(3, model=vr.models.Logistic(3, prior_mean=m0, prior_cov=s0),
                                   seed=10), "bernoulli"))
    out.append(("linear/laplace", lambda: vr.Laplace(3, model="linear", seed=10), "gaussian"))
    out.append(("mlp/laplace", lambda: vr.Laplace(mlp.dim, model=mlp, lam=2.0, seed=10),
                "mlp"))
    out.append(("linear/lints", lambda: vr.LinTS(3, eta=2.0, lam=0.5, seed=12), "gaussian"))
    out.append(("linear-prior/lints",
                lambda: vr.LinTS(3, model=vr.models.Linear(3, prior_mean=m0, prior_cov=s0),
                                 seed=12), "gaussian"))
    out.append(("linear/lmc", lambda: vr.Langevin(3, step_size=0.05, seed=13), "gaussian"))
    return out


def _data(kind, rng, n):
    if kind == "mlp":
        X = rng.standard_normal((n, 3))
        return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    X = rng.standard_normal((n, 3))
    z = X @ np.array([1.0, -0.5, 0.25])
    if kind == "bernoulli":
        return X, (rng.random(n) < 1.0 / (1.0 + np.exp(-z))).astype(float)
    return X, z + 0.3 * rng.standard_normal(n)


def _engine_states(out):
    for label, make, kind in _engines():
        eng = make()
        rng = np.random.default_rng(21)
        for batch in (1, 5, 20):
            X, r = _data(kind, rng, batch)
            eng.update(X, r)
        for attr in ("mu", "B", "C", "theta", "H", "L"):
            if hasattr(eng, attr):
                out[f"engine/{label}/{attr}"] = np.asarray(getattr(eng, attr))
        out[f"engine/{label}/sample"] = eng.sample(3)


def _per_arm(out):
    env = vr.envs.hard_instance(dim=4, n_arms=4, reward="logistic", seed=2)
    for label, eng in (("vits-ii", vr.VITS(4, model="logistic", step_size=0.1, n_steps=3)),
                       ("laplace", vr.Laplace(4, model="logistic"))):
        res = vr.simulate(vr.PerArm(eng, 4), env, n_rounds=25, n_runs=2, seed=3)
        out[f"perarm/{label}/regret"] = res.regret
    for name, kw in (("vits-ii", {"model": "logistic", "step_size": 0.2}),
                     ("lmc", {"model": "logistic", "step_size": 0.05})):
        eng = (vr.VITS(5, **kw) if name.startswith("vits") else vr.Langevin(5, **kw))
        res = vr.simulate(vr.ThompsonSampling(eng),
                          vr.envs.hard_instance(dim=5, n_arms=5, reward="logistic", seed=4),
                          n_rounds=30, n_runs=2, seed=5)
        out[f"logistic-bandit/{name}/regret"] = res.regret


def _targets(out):
    """The Gaussian-target entries, computed as ``vits-figF``/``vits-figI`` did at b6d5d19.

    Both studies have since moved to the paper's settings (the covariance-scaled
    target, absolute steps); the recorded numbers are those of the earlier convention, so
    the earlier loops are replayed here on the library's lower-level functions: the
    precision-scaled target (``scale="precision"``), relative steps ``c / lmax(P)`` and the
    same seeding, driver calls and CSV rounding.
    """
    steps, medians = _figF_legacy(runs=2, rounds=3000, seed=1, kappas=(2.5, 10.0),
                                  step_factors=(0.2,))
    for label, median in medians.items():
        out[f"figF/{label}/median_steps"] = np.array(median)
    out["figF/steps"] = np.array(steps, dtype=float)
    for key, values in _figI_legacy(runs=3, rounds=400, seed=1).items():
        out[f"figI/{key}"] = np.array(values)


#: the settings of the legacy studies (d, eps, LMC burn-in; figI's kappa and step factor)
_LEGACY_DIM, _LEGACY_EPS, _LEGACY_BURN_IN = 10, 0.1, 1000
_LEGACY_FIGI_KAPPA, _LEGACY_FIGI_FACTOR = 10.0, 0.1


def _figF_legacy(runs, rounds, seed, kappas, step_factors):
    """Per-seed step counts in the order of the old ``steps.csv`` (kappa, factor, method,
    seed), and each method's median steps of the last (kappa, factor) cell, which is what
    the old summary loop left in ``out``."""
    from vits_ref.drivers.cpu import trace_many
    from vits_ref.experiments.vits.target import METHODS, gaussian_target, run_seeds

    root = np.random.SeedSequence(seed)
    rows, medians = [], {}
    for ki, kappa in enumerate(kappas):
        kroot = np.random.SeedSequence(entropy=root.entropy, spawn_key=(ki,))
        targets = [gaussian_target(_LEGACY_DIM, kappa, np.random.default_rng(s),
                                   scale="precision") for s in kroot.spawn(runs)]
        noise_seeds = run_seeds(np.random.SeedSequence(entropy=root.entropy,
                                                       spawn_key=(ki, 1)), runs)
        for c in step_factors:
            for label, (code, n_mc) in METHODS.items():
                steps = np.empty(runs, dtype=np.int64)
                for r, (P, Pm, _) in enumerate(targets):
                    h = c / np.linalg.eigvalsh(P)[-1]
                    rec = np.full((1, rounds), np.inf)
                    cnt = np.zeros(1, dtype=np.int64)
                    trace_many(code, True, P, Pm, h, n_mc, rounds, _LEGACY_BURN_IN,
                               _LEGACY_EPS, noise_seeds[r:r + 1], rec, cnt)
                    n = int(cnt[0])
                    reached = n > 0 and rec[0, n - 1] <= _LEGACY_EPS
                    steps[r] = n if reached else rounds
                    rows.append(float(steps[r]))
                medians[label] = float(np.median(steps))
    return rows, medians


def _figI_legacy(runs, rounds, seed):
    """The quartile columns of the old ``kl_vs_time.csv``, as the file rounded them."""
    from vits_ref.drivers.cpu import trace_many
    from vits_ref.experiments.vits.target import METHODS, gaussian_target, run_seeds

    root = np.random.SeedSequence(seed)
    P, Pm, _ = gaussian_target(_LEGACY_DIM, _LEGACY_FIGI_KAPPA,
                               np.random.default_rng(root.spawn(1)[0]), scale="precision")
    h = _LEGACY_FIGI_FACTOR / np.linalg.eigvalsh(P)[-1]
    seeds = run_seeds(np.random.SeedSequence(entropy=root.entropy, spawn_key=(1,)), runs)
    cols = {"kl_q25": [], "kl_median": [], "kl_q75": []}
    stride = max(1, rounds // 1000)
    for code, n_mc in METHODS.values():
        rec = np.full((runs, rounds), np.inf)
        counts = np.zeros(runs, dtype=np.int64)
        trace_many(code, True, P, Pm, h, n_mc, rounds, _LEGACY_BURN_IN, 0.0, seeds, rec,
                   counts)
        q = np.quantile(rec, [0.25, 0.5, 0.75], axis=0, method="lower")
        for k in range(stride - 1, rounds, stride):
            # the CSV held 6 significant digits; the golden values are those, read back
            for i, key in enumerate(cols):
                cols[key].append(float(f"{q[i, k]:.6g}"))
    return cols


#: The sections of the file: name -> (what computes it, the prefixes of its keys).
SECTIONS = {"named": (lambda out: _named(out), ("named/",)),
            "engine": (lambda out: _engine_states(out), ("engine/",)),
            "perarm": (lambda out: _per_arm(out), ("perarm/", "logistic-bandit/")),
            "targets": (lambda out: _targets(out), ("figF", "figI/"))}


def compute(sections=tuple(SECTIONS)):
    """Every entry of the sections named (all by default)."""
    out = {}
    for name in sections:
        SECTIONS[name][0](out)
    return out


def in_sections(key, sections):
    """Whether the entry ``key`` belongs to one of ``sections``."""
    return any(key.startswith(p) for name in sections for p in SECTIONS[name][1])


if __name__ == "__main__":
    # ``--bits``: a record of this machine's bits in BITS_DIR (the outputs of the code as
    # it is, which must agree with golden.npz within rounding: test_golden checks it);
    # without it, golden.npz itself, which only a change of what is recorded may rewrite
    import json
    import subprocess

    data = compute()
    here = machine()
    path, machine_path = PATH, MACHINE_PATH
    if "--bits" in sys.argv[1:]:
        os.makedirs(BITS_DIR, exist_ok=True)
        path = bits_path(here)
        machine_path = path[:-len(".npz")] + ".json"
        here["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                                        capture_output=True, text=True).stdout.strip()
    np.savez_compressed(path, **data)
    with open(machine_path, "w") as fh:
        json.dump(here, fh, indent=1)
    print(f"wrote {len(data)} arrays to {path} and the machine to {machine_path}",
          file=sys.stderr)
