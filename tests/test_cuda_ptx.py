"""Every CUDA kernel the library launches compiles for an H100 (sm_90 PTX), without a GPU.

Numba's CUDA simulator runs the kernel bodies as Python, so it never compiles them: a body
that the simulator runs but numba-cuda cannot type or lower (a view returned from a device
function, numba's inline IR mixed into numba-cuda's, ...) only shows on a GPU. Here each
kernel is compiled by ``numba.cuda.compile_ptx(..., cc=(9, 0))`` in a subprocess without
``NUMBA_ENABLE_CUDASIM`` (libNVVM is all it needs; the device's compute capability is
stubbed since there is none): no registration is added by the script, the library's own
(``vits_ref.config.cuda_jit``) must suffice.

**Argument types.** The script calls the library's own launchers (``vits_ref.drivers.cuda``
and ``vits_ref.drivers.cuda_coop``: ``BanditRounds.advance``, ``vits_steps``,
``svgd_phi``, ...) on tiny inputs of the shapes and dtypes the simulator tests use, with
``numba.cuda.to_device`` / ``device_array`` returning host arrays and every launch
(``dispatcher[grid](*args)``) recorded instead of run. Each recorded kernel is then
compiled for the argument types its dispatcher infers from the recorded arguments
(``CUDADispatcher.typeof_pyval``): the types the launch would compile for on a GPU, with no
hand-written signature to drift from the launchers. Kernels launched twice with the same
types (the VITS variants share one piece, hence one kernel) compile once.

**Checks.** Each kernel's PTX has an ``.entry`` and targets ``sm_90``; the block-per-run
kernels (``cuda_coop``) also have barriers (``bar.sync``) and the dynamic shared array
(``.extern .shared``). Kernels are grouped, one subprocess per group, so that the groups
share Numba's start-up and the bodies' typing; the default group is the cheapest kernel
(LinTS, one run per thread, ~10 s), so that a regression of the CUDA registration of the
inlined bodies fails the default suite; the others are ``slow`` (timings in
``GROUP_SECONDS``, measured on the 2-core development machine, 2026-11-23).
"""

import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
#: The subprocess: record ``argv[1]``'s launches and compile them (``tests/ptx_launches.py``).
SCRIPT = textwrap.dedent(r'''
    import json, sys, warnings
    warnings.simplefilter("ignore")
    sys.path.insert(0, sys.argv[2])
    import ptx_launches as pl
    pl.install()  # exits with status 3 without libNVVM
    print("RESULT" + json.dumps(pl.compile_launches(pl.record(sys.argv[1]))))
''')


def compiled(group):
    """``{label: record}`` for every kernel launch of ``group`` (see ``SCRIPT``); skips
    without numba-cuda or libNVVM."""
    out = _compiled(group)
    if isinstance(out, str):
        pytest.skip(out)
    return out


@functools.cache
def _compiled(group):
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        return "numba-cuda (the 'cuda' extra) is not installed"
    from vits_ref.config import check_cuda_stack

    try:  # numba-cuda <= 0.30.4 cannot load its CUDA target with numpy 2.5
        check_cuda_stack()
    except ImportError as exc:
        return f"the CUDA target cannot load here: {exc}"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    res = subprocess.run([sys.executable, "-c", SCRIPT, group, HERE], capture_output=True,
                         text=True, env=env, timeout=1800)
    if res.returncode == 3 and "NONVVM" in res.stdout:
        return "no NVVM (libnvvm) here to compile PTX: " + res.stdout[-300:]
    assert res.returncode == 0 and "RESULT" in res.stdout, res.stderr[-3000:]
    recs = json.loads(res.stdout.split("RESULT")[1])
    count = {}
    for rec in recs:
        for label in set(rec["labels"]):
            count[label] = count.get(label, 0) + 1
    out = {}
    for rec in recs:  # a launcher of several kernels (svgd_phi): "label/kernel"
        for label in rec["labels"]:
            short = rec["kernel"].rsplit(".", 1)[-1]
            out[label if count[label] == 1 else f"{label}/{short}"] = rec
    return out


def problems(group, label, block=False):
    """What is wrong with ``label``'s PTX (an empty list when nothing is): a compilation
    error, not one ``.entry``, not sm_90, under 1000 characters; for the block kernels no
    ``bar.sync`` or no dynamic shared array."""
    rec = compiled(group)[label]
    if "error" in rec:
        return [f"{label} ({rec['kernel']}): {rec['error']}\n{rec['trace']}"]
    out = []
    if not (rec["entry"] == 1 and rec["sm_90"] and rec["chars"] > 1000):
        out.append(f"{label}: entry {rec['entry']}, sm_90 {rec['sm_90']}, "
                   f"{rec['chars']} characters")
    if block and not (rec["bar"] > 0 and rec["extern_shared"]):
        out.append(f"{label}: {rec['bar']} bar.sync, extern shared {rec['extern_shared']}")
    return out


def test_lints_rounds_kernel_compiles_to_ptx():
    """LinTS, one run per thread (``drivers.cuda.BanditRounds``): the cheapest fused kernel,
    in the default suite so that every change to the CUDA registration is checked."""
    assert problems("lints", "BanditRounds/lints") == []


VITS = ("vits-i", "vits-ii", "vits-hf", "vits-hf-cv")
#: The logistic model's pieces (kernels/logistic_bandit.py), by piece name.
LOGISTIC_PIECES = ("vits-logistic", "lmc-logistic", "laplace-logistic")
#: The launches of each slow group (``SCRIPT``'s labels). The VITS policies share one
#: piece, so their ``BanditRounds`` (and ``BlockRounds``) launches are one kernel.
SLOW = {
    "rounds": [f"BanditRounds/{p}" for p in ("linucb",) + VITS + ("lmc", "random")]
    + ["bandit_runs/lints", "bandit_runs/vits-ii"],
    "streams": ["BanditStreams/lints/pool", "BanditStreams/vits-ii/pool",
                "BanditStreams/random/hard-logistic"],
    "steps": ["vits_steps/linear", "vits_steps/logistic", "langevin_steps/logistic",
              "newton/logistic", "renyi_steps/linear", "renyi_steps/mixture_prior",
              "renyi_steps/logistic", "cavi_fits", "vts_runs"],
    "diffusion": ["diffusion_chain/gaussian", "diffusion_laplace_linear/gaussian",
                  "diffusion_dps/gaussian", "diffusion_laplace_glm/gaussian/logistic",
                  "diffts_linear_runs/gaussian", "ddpm_rows/mlp", "diffusion_chain/mlp",
                  "svgd_phi/dist", "svgd_phi/median", "svgd_phi/shift", "svgd_phi/rows"],
    "block": [f"BlockRounds/{p}" for p in VITS + ("lints",)]
    + ["BlockStreams/vits-ii/pool", "BlockStreams/lints/pool"],
    # the logistic pieces, labelled by piece name: select them with
    # -k "vits-logistic or lmc-logistic or laplace-logistic"
    "logistic": [f"{launch}/{piece}{env}" for piece in LOGISTIC_PIECES
                 for launch, env in (("BanditRounds", ""), ("bandit_runs", ""),
                                     ("BanditStreams", "/hard-logistic"))],
}
#: Wall time of each group's subprocess (s) under pytest on the 2-core development machine
#: (2026-11-23, other jobs running; alone about 20% less): compilation is most of it, the
#: largest kernels 20-40 s each (the VITS loops, the streamed loops, the block kernels).
#: 411 s for the whole file before the logistic group; that group (9 kernels, the three
#: logistic pieces x three launchers) took 119 s (231 s with a load average of 6).
GROUP_SECONDS = {"lints": 18, "rounds": 112, "block": 87, "steps": 87, "streams": 75,
                 "diffusion": 32, "logistic": 119}
#: Launches that do not compile, with the reason (strict: a fix shows as XPASS).
XFAIL = {}


def _cases():
    for group, labels in SLOW.items():
        for label in labels:
            marks = [pytest.mark.slow]
            if label in XFAIL:
                marks.append(pytest.mark.xfail(reason=XFAIL[label], strict=True))
            yield pytest.param(group, label, marks=marks, id=label)


@pytest.mark.parametrize(("group", "label"), list(_cases()))
def test_kernel_compiles_to_ptx(group, label):
    assert problems(group, label, block=group == "block") == []


@pytest.mark.slow
def test_every_cuda_jit_kernel_is_compiled():
    """Every ``@cuda_jit`` kernel defined in ``drivers/cuda.py`` and ``drivers/cuda_coop.py``
    is launched by some group (a kernel added later without a launch here fails this), and
    every group launches exactly its expected labels."""
    import ast

    import vits_ref.drivers as drivers

    want = set()
    for mod in ("cuda", "cuda_coop"):
        path = os.path.join(os.path.dirname(drivers.__file__), mod + ".py")
        with open(path) as f:
            tree = ast.parse(f.read())
        for outer in tree.body:
            if not isinstance(outer, ast.FunctionDef):
                continue
            for node in ast.walk(outer):
                if isinstance(node, ast.FunctionDef) and any(
                        getattr(dec, "id", None) == "cuda_jit" for dec in node.decorator_list):
                    want.add((f"vits_ref.drivers.{mod}", f"{outer.name}.<locals>.{node.name}"))
    assert len(want) >= 20, want  # the parse found the kernels
    got = set()
    for group in ["lints", *SLOW]:
        recs = compiled(group)
        assert set(recs) == set(SLOW.get(group, ["BanditRounds/lints"])), group
        got |= {(r["module"], r["kernel"]) for r in recs.values()}
    assert want <= got, sorted(want - got)
