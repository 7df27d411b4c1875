"""The two targets in one process: a script for ``tests/test_cuda_targets.py``.

    python tests/cuda_targets.py PHASE [PHASE ...]

runs the phases in order and prints ``RESULT`` and a JSON list, one record per phase
(``phase``, ``seconds`` of wall time, ``cpu_seconds`` of this process, ``errors``). A phase
is

``cpu:NAME,NAME,...``
    a CPU ``simulate`` (fused, 2 runs x 3 rounds) of each policy ``NAME`` of
    :data:`POLICIES`: compiles the CPU driver of its piece;
``ptx:GROUP,GROUP,...``
    the CUDA kernels that the groups of ``tests/ptx_launches.py`` launch, compiled to
    sm_90 PTX (no GPU needed);
``gpu:NAME,...``
    ``simulate(..., device="cuda")`` of each policy on a real GPU (``.ci/gpu_check.sh``).

A first argument ``--shared`` breaks the rule on purpose (:func:`share_registrations`).

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


def share_registrations():
    """Break the rule on purpose (``--shared``): ``cuda_jit`` compiles the kernel's own
    function, and the bodies it reaches (and the functions of ``CUDA_TWINS``) are registered
    with numba-cuda as they are, as before the CUDA copies: one function object known to
    both targets, the CPU overloads of the state views visible to CUDA. The mixed-order
    test must then fail (``tests/test_cuda_targets.py``)."""
    import types

    from numba.cuda.extending import overload, register_jitable

    from vits_ref import config

    done = set()

    def typer(twin):
        return lambda *args: twin

    def shared(fn):
        stack = [fn]
        while stack:
            f = stack.pop()
            if not isinstance(f, types.FunctionType) or f in done:
                continue
            inline = config.body_inline(f)
            if f is not fn and inline is None and f not in config.CUDA_TWINS:
                continue
            done.add(f)
            if f in config.CUDA_TWINS:  # registered as it is (its twin's code for CUDA)
                twin, ty = config.CUDA_TWINS[f]
                if ty is None and twin is f:
                    register_jitable(f)
                else:
                    overload(f, target="cuda")(ty or typer(twin))
                continue
            if f is not fn:
                register_jitable(inline="always" if inline else "never")(f)
            names = config._code_names(f.__code__)
            for name in names:
                v = f.__globals__.get(name)
                if isinstance(v, types.ModuleType) and not config._foreign(v):
                    stack += [getattr(v, a, None) for a in names]
                else:
                    stack.append(v)
            for cell in f.__closure__ or ():
                try:
                    stack.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
        return fn

    config.cuda_copy = shared


def main(phases):
    warnings.simplefilter("ignore")
    if phases[:1] == ["--shared"]:
        share_registrations()
        phases = phases[1:]
    out = []
    for phase in phases:
        kind, _, names = phase.partition(":")
        names = [x for x in names.split(",") if x]
        t, c = time.perf_counter(), time.process_time()
        if kind == "cpu":
            errors = cpu(names)
        elif kind == "gpu":
            errors = cpu(names, device="cuda")
        elif kind == "ptx":
            errors = ptx(names)
        else:
            raise SystemExit(f"unknown phase {phase!r}")
        # the wall time, and the CPU time of this process (the machine may be shared)
        out.append({"phase": phase, "seconds": round(time.perf_counter() - t, 1),
                    "cpu_seconds": round(time.process_time() - c, 1), "errors": errors})
        print(phase, out[-1]["seconds"], "s,", out[-1]["cpu_seconds"], "s of CPU,",
              len(errors), "errors", file=sys.stderr, flush=True)
    print("RESULT" + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
