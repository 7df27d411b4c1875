"""Smoke test of the installed wheel, run by .ci/run in a fresh venv outside the source tree.

Imports every module of the installed package (kernels included, as vits_ref.kernels),
checks that the package came from site-packages and not from a source tree, then runs
``simulate`` and one experiment of the command line at a tiny size. Usage::

    python wheel_smoke.py SOURCE_TREE
"""

import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
import time

source = os.path.realpath(sys.argv[1])
start = time.perf_counter()
import vits_ref as vr  # noqa: E402

where = os.path.realpath(vr.__file__)
assert not where.startswith(source + os.sep), f"vits_ref imported from the tree: {where}"
modules = [m.name for m in pkgutil.walk_packages(vr.__path__, "vits_ref.")
           if m.name != "vits_ref.__main__"]
for name in modules:
    importlib.import_module(name)
assert "vits_ref.kernels.linalg" in modules and "vits_ref.bandit.simulate" in modules, modules
print(f"imported {len(modules)} modules from {os.path.dirname(where)} "
      f"({time.perf_counter() - start:.1f} s)")

start = time.perf_counter()
env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
res = vr.simulate("lints", env, n_rounds=5, n_runs=2, seed=0)
assert res.cumulative_regret.shape == (2, 5) and res.fused
print(f"simulate (fused LinTS, 2 runs x 5 rounds) ran ({time.perf_counter() - start:.1f} s)")

# the command line's experiment: renyi-mab (one Rényi-VI kernel, compiled cold here: 12 s
# of CPU for 1 run x 20 rounds, against 33 s for vits-figI's four kernels; measured with a
# fresh NUMBA_CACHE_DIR on the 2-core machine), its chunks, manifest and summary written
# as every experiment writes them. The compiling of the installed copy is simulate's above;
# the experiments' kernels and outputs are the test suite's (tests/test_cli.py)
start = time.perf_counter()
with tempfile.TemporaryDirectory() as out:
    cmd = [sys.executable, "-m", "vits_ref", "run", "renyi-mab", "--runs", "1", "--rounds",
           "20", "--out", os.path.join(out, "mab"), "--quiet"]
    subprocess.run(cmd, check=True, cwd=out)
    files = sorted(os.listdir(os.path.join(out, "mab")))
    assert {"chunks", "manifest.json", "summary.json"} <= set(files), files
print(f"{' '.join(cmd[2:6])} wrote {files} ({time.perf_counter() - start:.1f} s)")
