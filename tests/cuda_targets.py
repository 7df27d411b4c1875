"""The two targets in one process: a script for ``tests/test_cuda_targets.py``.

    python tests/cuda_targets.py PHASE [PHASE ...]

runs the phases in order and prints ``RESULT`` and a JSON list, one record per phase
(``phase``, ``seconds``, ``errors``). A phase is

``cpu:NAME,NAME,...``
    a CPU ``simulate`` (fused, 2 runs x 3 rounds) of each policy ``NAME`` of
    :data:`POLICIES`: compiles the CPU driver of its piece;
``ptx:GROUP,GROUP,...``
    the CUDA kernels that the groups of ``tests/ptx_launches.py`` launch, compiled to
    sm_90 PTX (no GPU needed);
``gpu:NAME,...``
    ``simulate(..., device="cuda")`` of each policy on a real GPU (``.ci/gpu_check.sh``).

Run without ``NUMBA_ENABLE_CUDASIM`` and with ``VITS_REF_CACHE=0`` (a function loaded from
Numba's cache is not typed again, and the clash this catches happens in typing): the two
targets must not see each other's registrations, whatever the order of the phases
(docs/architecture.md, "One body, two targets").
"""

import json
import os
import sys
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
D, K = 4, 5


def _policy(name):
    """``(policy, env)`` for a name of :data:`POLICIES`."""
    import vits_ref as vr
    from vits_ref.bandit.simulate import make_policy

    if name.endswith("-logistic"):
        env = vr.envs.hard_instance(dim=D, n_arms=K, reward="logistic", seed=0)
        base = name[:-len("-logistic")]
        if base == "laplace":
            return vr.ThompsonSampling(vr.Laplace(D, model="logistic")), env
        return make_policy(base, D, model="logistic"), env
    return make_policy(name, D), vr.envs.pool(dim=D, n_arms=K, seed=0)


#: The policies a ``cpu:`` or ``gpu:`` phase may name: the linear ones by their
#: ``make_policy`` name, the logistic model's pieces as ``BASE-logistic``.
POLICIES = ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-cv", "lmc", "random",
            "vits-ii-logistic", "lmc-logistic", "laplace-logistic")


def cpu(names, device="cpu"):
    import vits_ref as vr

    errors = []
    for name in names:
        try:
            policy, env = _policy(name)
            res = vr.simulate(policy, env, n_rounds=3, n_runs=2, seed=0, fused=True,
                              device=device)
            if not np.all(np.isfinite(res.regret)):
                errors.append(f"{device} {name}: non-finite regret")
        except Exception as err:
            errors.append(f"{device} {name}: {type(err).__name__}: {err}"[:3000]
                          + "\n" + traceback.format_exc()[-3000:])
    return errors


def ptx(groups):
    sys.path.insert(0, HERE)
    import ptx_launches as pl

    if pl.cuda is None:
        pl.install()
    return [f"{', '.join(r['labels'])} ({r['kernel']}): {r['error']}\n{r['trace']}"
            for r in pl.compile_launches(pl.record(*groups)) if "error" in r]


def main(phases):
    warnings.simplefilter("ignore")
    out = []
    for phase in phases:
        kind, _, names = phase.partition(":")
        names = [x for x in names.split(",") if x]
        t = time.perf_counter()
        if kind == "cpu":
            errors = cpu(names)
        elif kind == "gpu":
            errors = cpu(names, device="cuda")
        elif kind == "ptx":
            errors = ptx(names)
        else:
            raise SystemExit(f"unknown phase {phase!r}")
        out.append({"phase": phase, "seconds": round(time.perf_counter() - t, 1),
                    "errors": errors})
        print(phase, out[-1]["seconds"], "s,", len(errors), "errors", file=sys.stderr,
              flush=True)
    print("RESULT" + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
