"""The test session compiles at LLVM's -O1 (tests/numba_session.py); the library runs at
Numba's default -O3. Both give the same numbers bit for bit: without fast-math flags
LLVM keeps IEEE semantics at every optimisation level. Here the same computations run in
this session and in a subprocess at -O3 with a fresh cache, and must agree exactly: the
engines' compiled updates and draws (VITS-II on the logistic model, Laplace/IRLS, LMC,
LinTS) in the default run, every fused bandit loop in the slow twin."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

#: Prints one JSON line: Numba's optimisation level, then the results' float64 bits.
ENGINES = textwrap.dedent("""
    import json
    import numpy as np
    from numba.core import config
    import vits_ref as vr

    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 4)) / 2
    y = (rng.random(12) < 0.5).astype(float)
    r = X @ np.array([0.5, -1.0, 0.25, 0.0]) + 0.3 * rng.standard_normal(12)
    out = {}
    for name, eng in [
            ("vits-ii-logistic", vr.VITS(4, model="logistic", variant="II",
                                         step_size=0.05, seed=1)),
            ("laplace", vr.Laplace(4, model="logistic", seed=1)),
            ("lmc", vr.Langevin(4, step_size=0.01, seed=1)),
            ("lints", vr.LinTS(4, seed=1))]:
        eng.update(X, y if name in ("vits-ii-logistic", "laplace") else r)
        # the Gaussian engines' mean, and draws of every engine (LMC's are its chain)
        mean = np.ravel(getattr(eng, "mean", np.zeros(0)))
        out[name] = np.concatenate([mean, np.ravel(eng.sample(3))]).tolist()
    print("RESULT " + json.dumps({"opt": int(config.OPT), "values":
          {k: [float(v).hex() for v in vs] for k, vs in out.items()}}))
""")

#: The same, for the fused bandit loop of every named policy (the slow twin).
FUSED = textwrap.dedent("""
    import json
    from numba.core import config
    import vits_ref as vr
    from vits_ref.bandit.simulate import POLICY_NAMES

    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=0)
    out = {}
    for name in POLICY_NAMES:
        res = vr.simulate(name, env, n_rounds=6, n_runs=2, seed=0)
        out[name] = [float(v).hex() for v in res.cumulative_regret.ravel()]
    print("RESULT " + json.dumps({"opt": int(config.OPT), "values": out}))
""")


def _run(script, env_updates):
    env = {**os.environ, **env_updates}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=1200)
    assert res.returncode == 0, res.stderr[-4000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _session_level():
    from numba.core import config

    return int(config.OPT)


def _same_at_both_levels(script, tmp_path):
    here = _run(script, {})  # this session's level and cache
    o3 = _run(script, {"NUMBA_OPT": "3", "NUMBA_CACHE_DIR": str(tmp_path / "o3")})
    assert here["opt"] == _session_level() and o3["opt"] == 3
    assert set(here["values"]) == set(o3["values"])
    for name, bits in here["values"].items():
        assert bits == o3["values"][name], name


def test_the_session_compiles_at_o1_in_its_own_cache():
    from numba.core import config

    if os.environ.get("NUMBA_OPT") != "1" or not os.environ.get("NUMBA_CACHE_DIR", "") \
            .endswith(os.path.join(".pytest_cache", "numba-O1")):
        pytest.skip("NUMBA_OPT was set by the caller: Numba's level and cache are theirs")
    assert config.OPT == 1
    assert config.CACHE_DIR == os.environ["NUMBA_CACHE_DIR"]


def test_engines_give_the_same_bits_at_o1_and_o3(tmp_path):
    _same_at_both_levels(ENGINES, tmp_path)


@pytest.mark.slow
def test_every_fused_loop_gives_the_same_bits_at_o1_and_o3(tmp_path):
    _same_at_both_levels(FUSED, tmp_path)
