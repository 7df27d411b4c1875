"""Shared fixtures: seeded random problems and matrices.

Every fixture is deterministic (fixed seeds), so every statistical test in the suite is a
fixed computation whose tolerance is justified where the assertion is made.
"""

import os
import tempfile
from dataclasses import dataclass

import numpy as np
import pytest
from numba_session import install_compile_lock

import vits_ref as vr

install_compile_lock()
# the subprocesses of the tests (the command line, the notebooks' kernels, the simulator's
# scripts) take the same lock: subprocess_site/sitecustomize.py installs it at start-up
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(os.path.dirname(os.path.abspath(__file__)), "subprocess_site")]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
# the command line records the compile times it measures (vits_ref._compile_watch.record)
# into a file of this test run, not into the user's cache
os.environ.setdefault("VITS_REF_COMPILE_TIMES", os.path.join(
    tempfile.mkdtemp(prefix="vits-ref-compile-times-"), "compile_times.json"))
# so every command line run would look cold (vits_ref._precompile.cold): the tests' runs
# do not compile on every core first (tests/test_compile_command.py turns it on)
os.environ.setdefault("VITS_REF_PRECOMPILE", "0")


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pytest.ini): one worker more than this process may use cores. A cold
    run's workers wait on each other's compile locks and on the processes their tests
    start (the notebooks, the command line, the simulator), and the extra worker keeps the
    cores busy meanwhile: 794 s against 850 s for a cold run on the 2-core machine.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return (cores or os.cpu_count() or 1) + 1


def pytest_configure(config):
    # pytest.ini (owned by the lead) registers it too; registering twice is harmless and
    # keeps ``-m slow`` working if the test files are run with another configuration.
    config.addinivalue_line("markers", "slow: paper-size reproductions (deselected by default)")
    # pytest-xdist (3.8 and later) hands the files out in the workers' collection order,
    # longest first (_longest_files_first), not reordered by their number of tests
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


#: Seconds of a cold run's test files that hold few but long tests (the sums of their
#: tests' durations in a cold run of the suite on the 2-core machine, 2026-11-29, at a load
#: average of 4-6 from other work: 1 895 s of wall time, scaled by 0.55 to the 1 050 s of
#: the last cold CI run, rounded; the cost probe of the experiments since skipped when no
#: progress is printed). :func:`_longest_files_first` hands them out first.
#: Only the order of the files changes: a stale figure costs time, never a result.
LONG_FILES = {
    "tests/test_report.py": 460,
    "tests/test_notebooks.py": 330,
    "tests/test_runner_conformance.py": 185,
    "tests/test_cli.py": 160,
    "tests/test_simulate_cuda.py": 50,  # the simulator files: its barriers unpolled
    "tests/test_delayed_feedback.py": 105,
    "tests/test_diffts_experiments.py": 100,
    "tests/test_streams_block.py": 30,  # (simulator)
    "tests/test_renyi_vi.py": 75,
    "tests/test_logistic_bandit.py": 75,
    "tests/test_chunks.py": 70,
    "tests/test_cuda_targets.py": 60,  # the structural walk: 3 s of CPU, the rest waits
    "tests/test_cuda_coop_driver.py": 20,  # (simulator)
    "tests/test_fig2_movielens_claims.py": 55,
    "tests/test_cuda_ptx.py": 50,
}


def _longest_files_first(items):
    """Order the files of a pytest-xdist worker's collection by their expected time,
    longest first (the tests of a file keep their order). ``--dist loadfile`` hands the
    files to the workers in this order (:func:`pytest_configure` turns off xdist's own
    order, by their number of tests, which hands the files of a few long tests out last:
    the reports, the notebooks, the CUDA target walks, each then keeps one worker busy
    for minutes after the others have finished, a core idle). A file not in
    :data:`LONG_FILES` counts a second a test."""
    files = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = sorted(files, key=lambda f: -LONG_FILES.get(f, len(files[f])))
    items[:] = [item for f in order for item in files[f]]


def pytest_collection_modifyitems(config, items):
    """Paper-size reproductions (``slow``) run as long as they need: pytest.ini's time
    limit is for the default run, where a test that takes 10 minutes is a hang. In a
    pytest-xdist worker, the longest files come first (:func:`_longest_files_first`)."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(0))
    if hasattr(config, "workerinput"):
        _longest_files_first(items)


@dataclass(frozen=True)
class LinearProblem:
    """A linear-Gaussian posterior and the data that define it (docs/algorithms.md section 1)."""

    X: np.ndarray
    r: np.ndarray
    eta: float
    lam: float
    V: np.ndarray       # lam I + X^T X
    b: np.ndarray       # X^T r
    mean: np.ndarray    # exact posterior mean solve(V, b)
    cov: np.ndarray     # exact posterior covariance inv(eta V)
    eigs: np.ndarray    # eigenvalues of eta V (the Hessian), ascending

    @property
    def dim(self):
        return self.X.shape[1]

    @property
    def etaV(self):
        return self.eta * self.V

    @property
    def eta_b(self):
        return self.eta * self.b


def make_linear_problem(X, r, eta, lam):
    V = lam * np.eye(X.shape[1]) + X.T @ X
    b = X.T @ r
    # the independent reference: vits_ref.gaussian is itself tested against explicit
    # inverses and Monte Carlo in tests/test_gaussian.py
    mean, cov = vr.gaussian.linear_posterior(X, r, eta=eta, lam=lam)
    return LinearProblem(X, r, eta, lam, V, b, mean, cov, np.linalg.eigvalsh(eta * V))


@pytest.fixture(scope="session")
def ill_conditioned():
    """d = 5, feature columns scaled over a decade (1..10), cond(eta V) ~ 110.

    ``eta = 2`` and ``lam = 0.5`` (not 1) so that a confusion of eta with lam, or a missing
    eta, changes the answer.
    """
    rng = np.random.default_rng(12345)
    d, n = 5, 40
    rng.standard_normal((n, d))  # keep the stream position used when the seed was chosen
    X = rng.standard_normal((n, d)) * np.logspace(0, 1, d) * 3.0 / np.sqrt(n)
    theta = rng.standard_normal(d)
    r = X @ theta + rng.standard_normal(n) / np.sqrt(2.0)
    prob = make_linear_problem(X, r, eta=2.0, lam=0.5)
    cond = prob.eigs[-1] / prob.eigs[0]
    assert 50 < cond < 200, cond
    return prob


@pytest.fixture(scope="session")
def small_problem():
    """A well-conditioned d = 3 problem (moment tests)."""
    rng = np.random.default_rng(777)
    n, d = 12, 3
    X = rng.standard_normal((n, d))
    r = X @ np.array([0.5, -1.0, 0.25]) + 0.5 * rng.standard_normal(n)
    return make_linear_problem(X, r, eta=1.5, lam=2.0)


def random_spd(rng, d, cond=10.0):
    """A random SPD matrix with eigenvalues log-spaced in [1, cond]."""
    q = random_orthogonal(rng, d)
    return (q * np.logspace(0, np.log10(cond), d)) @ q.T


def random_orthogonal(rng, d):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


@pytest.fixture
def rng():
    """A fresh generator with a fixed seed for each test."""
    return np.random.default_rng(20240601)


@pytest.fixture(scope="session")
def spd():
    """Factory ``spd(rng, d, cond)`` of random SPD matrices."""
    return random_spd


@pytest.fixture(scope="session")
def orthogonal():
    """Factory ``orthogonal(rng, d)`` of random orthogonal matrices."""
    return random_orthogonal


def _real_gpu():
    """A real CUDA device (under the simulator ``cuda.is_available()`` is True too)."""
    try:
        import numba
        from numba import cuda

        return bool(cuda.is_available()) and not numba.config.ENABLE_CUDASIM
    except Exception:  # numba-cuda absent, or its driver fails to load
        return False


#: Marks a test that needs a real GPU (skipped on the simulator and without one).
requires_gpu = pytest.mark.skipif(not _real_gpu(),
                                  reason="no CUDA GPU (numba.cuda.is_available() is False)")


def max_diff_under_cuda_simulator(script):
    """Run ``script`` with ``NUMBA_ENABLE_CUDASIM=1`` in a subprocess (the simulator must
    be enabled before Numba is imported) and return the float it prints after
    ``MAXDIFF``. Skips when ``numba-cuda`` (the ``cuda`` extra) is not installed."""
    import os
    import subprocess
    import sys

    try:  # the simulator needs numba-cuda importable
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return float(res.stdout.split("MAXDIFF")[1])


def result_under_cuda_simulator(script, *args):
    """Run ``script`` (with ``args`` as its command-line arguments) with
    ``NUMBA_ENABLE_CUDASIM=1`` in a subprocess and return the JSON it prints after
    ``RESULT``. Skips when ``numba-cuda`` (the ``cuda`` extra) is not installed."""
    import json
    import os
    import subprocess
    import sys

    try:  # the simulator needs numba-cuda importable
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda (the 'cuda' extra) is not installed")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    res = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0 and "RESULT" in res.stdout, res.stderr[-3000:]
    return json.loads(res.stdout.split("RESULT")[1])


@pytest.fixture
def fused_plans(monkeypatch):
    """The ``(batch, chunk)`` plans :func:`vits_ref.bandit.simulate` makes for its fused runs, in
    order (a spy on ``simulate._fused_plan``, which still plans)."""
    import importlib

    sim = importlib.import_module("vits_ref.bandit.simulate")  # the name is also the function
    planned = []
    plan = sim._fused_plan

    def spy(*args):
        planned.append(plan(*args))
        return planned[-1]

    monkeypatch.setattr(sim, "_fused_plan", spy)
    return planned


# ---------------------------------------------------------------------------------------
# the Hypothesis fuzz suite (tests/test_fuzz_*.py): profiles, hang guard, case counts
# ---------------------------------------------------------------------------------------
# "ci" (the default): derandomized (CI is reproducible), no deadline (the first example
# of a test may load Numba's cache) but a hang guard. "large": VITS_REF_FUZZ=large or
# --hypothesis-profile=large; >= 10 000 cases over the fuzz suite (README.rst).

import faulthandler as _faulthandler  # noqa: E402
import os  # noqa: E402

from hypothesis import HealthCheck as _HealthCheck  # noqa: E402
from hypothesis import settings as _hyp_settings  # noqa: E402

_FUZZ_COMMON = dict(derandomize=True, deadline=None, database=None, print_blob=True,
                    suppress_health_check=[_HealthCheck.too_slow, _HealthCheck.data_too_large,
                                           _HealthCheck.filter_too_much])
_hyp_settings.register_profile("ci", max_examples=100, **_FUZZ_COMMON)
_hyp_settings.register_profile("large", max_examples=1500, **_FUZZ_COMMON)
_hyp_settings.load_profile(os.environ.get("VITS_REF_FUZZ", "ci"))


@pytest.fixture(autouse=True)
def _fuzz_hang_guard(request):
    """A fuzz test that runs past ``VITS_REF_FUZZ_TEST_TIMEOUT`` seconds (default 900)
    ends the process with every thread's traceback (a hang inside compiled code cannot be
    interrupted by a signal handler), so CI fails instead of freezing."""
    if not request.node.path.name.startswith("test_fuzz"):
        yield
        return
    _faulthandler.dump_traceback_later(
        int(os.environ.get("VITS_REF_FUZZ_TEST_TIMEOUT", "900")), exit=True)
    try:
        yield
    finally:
        _faulthandler.cancel_dump_traceback_later()


def pytest_terminal_summary(terminalreporter):
    """Print the fuzz suite's examples per test (tests/fuzz_strategies.COUNTS) and write
    them as JSON to the file named by ``VITS_REF_FUZZ_COUNTS``."""
    import json
    import sys

    mod = sys.modules.get("fuzz_strategies")
    if mod is None or not mod.COUNTS:
        return
    total = sum(mod.COUNTS.values())
    profile = getattr(_hyp_settings, "_current_profile", None) or os.environ.get(
        "VITS_REF_FUZZ", "ci")
    terminalreporter.write_sep("-", f"fuzz cases tried: {total} (profile {profile})")
    for name, count in sorted(mod.COUNTS.items()):
        terminalreporter.write_line(f"{count:8d}  {name}")
    path = os.environ.get("VITS_REF_FUZZ_COUNTS")
    if path:
        with open(path, "w") as fh:
            json.dump({"profile": profile, "total": total, "per_test": dict(mod.COUNTS)},
                      fh, indent=1)
