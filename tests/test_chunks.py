"""Resumable chunks (vits_ref.experiments._chunks): results independent of the chunking
and the executor, bit-identical after a SIGKILL and a resume, refusal to mix options."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import vits_ref as vr
from vits_ref import _threads
from vits_ref.bandit.simulate import make_policy
from vits_ref.experiments import _chunks
from vits_ref.experiments._common import run_panels
from vits_ref.experiments._tuning import grid_search

#: Keys of a summary that measure time or say how the work was executed: everything
#: else must be bit-identical whatever the chunking, the executor or the interruptions.
TIMING = {"wall_time_s", "chunk_wall_times_s", "us_per_round", "warmup_s", "total_wall_time_s",
          "execution", "files", "environment"}


def _panels(seed=0):
    env = vr.envs.pool(dim=3, n_arms=5, zeta=1.0, seed=seed)
    diverging = make_policy("vits-ii", 3, step_size=50.0, schedule="constant")
    return [("zeta = 1", env,
             [("LinTS", make_policy("lints", 3)),
              ("VITS-II", [(diverging, {"h0": 50.0}), (make_policy("vits-ii", 3), {"h0": 0.01})]),
              # no fused loop for the theoretical schedule: simulate's Python loop
              ("VITS-II theoretical", make_policy("vits-ii", 3, schedule="theoretical",
                                                  horizon=15))], {"zeta": 1.0})]


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _run(out, **session):
    with _chunks.session(quiet=True, **session):
        res = run_panels("test", "chunk test", _panels(), 6, 15, 4, str(out), plot=False,
                         kl_rounds=[5, 15], reference="LinTS")
    return res, (out / "curves.csv").read_text(), json.loads((out / "summary.json").read_text())


def test_chunk_store_roundtrip_and_damage(tmp_path):
    store = _chunks.Store(str(tmp_path), "exp", "s", {"a": 1})
    res = {"regret": np.arange(6.0).reshape(2, 3), "arms": np.array([[1, 2, 3]]),
           "kl": None, "diverged": "text", "fused": True, "wall_time_s": 0.5}
    store.save("k1", res, {"runs": [0, 2]})
    back = _chunks.Store(str(tmp_path), "exp", "s", {"a": 1}).load("k1")
    np.testing.assert_array_equal(back["regret"], res["regret"])
    np.testing.assert_array_equal(back["arms"], res["arms"])
    assert back["kl"] is None and back["diverged"] == "text" and back["fused"] is True
    assert back["wall_time_s"] == 0.5
    assert store.done("k1") and not store.done("k2")
    # a damaged chunk file is computed again, not trusted
    (tmp_path / "chunks" / "s" / "k1.npz").write_bytes(b"garbage")
    assert _chunks.Store(str(tmp_path), "exp", "s", {"a": 1}).load("k1") is None
    # no temporary files are left behind
    assert not [f for f in os.listdir(tmp_path / "chunks" / "s") if f.startswith(".tmp")]


def test_store_refuses_to_mix_and_force_discards(tmp_path):
    store = _chunks.Store(str(tmp_path), "exp", "s", {"runs": 2})
    store.save("k", {"x": np.ones(2)}, {})
    with pytest.raises(_chunks.MixedRunError, match="another run"):
        _chunks.Store(str(tmp_path), "exp", "s", {"runs": 3})
    with pytest.raises(_chunks.MixedRunError, match="experiment"):
        _chunks.Store(str(tmp_path), "other", "s", {"runs": 2})
    fresh = _chunks.Store(str(tmp_path), "exp", "s", {"runs": 3}, force=True)
    assert fresh.load("k") is None
    assert not (tmp_path / "chunks" / "s" / "k.npz").exists()


def test_results_do_not_depend_on_chunking_or_executor(tmp_path):
    ref, curves, summary = _run(tmp_path / "one", chunk_runs=6)
    # the fallback worked: the first VITS-II candidate diverged, the second ran
    vits = next(e for e in ref["results"] if e["method"] == "VITS-II")
    assert vits["h0"] == 0.01 and "diverged" in vits["diverged_candidates"][0]
    variants = {"many": {"chunk_runs": 1}, "uneven": {"chunk_runs": 4}}
    for name, settings in variants.items():
        _, c, s = _run(tmp_path / name, **settings)
        assert c == curves, name
        assert _strip(s) == _strip(summary), name
    with _chunks.executor(jobs=2) as (ex, ex_name):
        res, c, s = _run(tmp_path / "pool", chunk_runs=2, executor=ex, executor_name=ex_name)
        # each worker's share of the threads, OpenBLAS's too (their idle threads spin)
        share = _threads.worker_share(2)
        blas = ex.submit(_threads.blas_threads).result()
    assert blas and set(blas.values()) == {share}, blas
    assert c == curves and _strip(s) == _strip(summary)
    assert res["execution"]["executor"] == "process pool (2 workers)"


def test_dask_local_cluster_gives_the_same_results(tmp_path):
    pytest.importorskip("distributed")
    _, curves, summary = _run(tmp_path / "one", chunk_runs=6)
    with _chunks.executor(dask_local=2) as (ex, ex_name):
        res, c, s = _run(tmp_path / "dask", chunk_runs=2, executor=ex, executor_name=ex_name)
    assert c == curves and _strip(s) == _strip(summary)
    assert res["execution"]["executor"].startswith("dask LocalCluster")


def test_a_second_call_reuses_every_chunk(tmp_path):
    first, curves, summary = _run(tmp_path / "a", chunk_runs=2)
    second, c2, s2 = _run(tmp_path / "a", chunk_runs=2)
    assert first["execution"]["computed"] > 0 and first["execution"]["reused"] == 0
    assert second["execution"]["computed"] == 0
    assert second["execution"]["reused"] == first["execution"]["computed"]
    assert c2 == curves and _strip(s2) == _strip(summary)


_SCRIPT = textwrap.dedent("""
    import sys
    import vits_ref as vr
    from vits_ref.experiments import _chunks
    from vits_ref.experiments._common import run_panels
    from vits_ref.bandit.simulate import make_policy

    env = vr.envs.pool(dim=8, n_arms=20, zeta=1.0, seed=0)
    panels = [("p", env, [("VITS-II", make_policy("vits-ii", 8)),
                          ("LinTS", make_policy("lints", 8))], {})]
    with _chunks.session(chunk_runs=1, quiet=True):
        run_panels("kill", "kill test", panels, 16, 600, 1, sys.argv[1], plot=False)
""")


def test_sigkill_then_resume_is_bit_identical(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(_SCRIPT)
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    chunk_dir = killed / "chunks" / "panels"
    proc = subprocess.Popen([sys.executable, str(script), str(killed)])
    deadline = time.monotonic() + 600
    try:
        # kill once some chunks are written and before the end (32 chunks in all)
        while time.monotonic() < deadline:
            done = len([f for f in os.listdir(chunk_dir) if f.endswith(".npz")]) \
                if chunk_dir.is_dir() else 0
            if done >= 3 or proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    written = len([f for f in os.listdir(chunk_dir) if f.endswith(".npz")])
    assert 3 <= written < 32 and not (killed / "summary.json").exists()
    # a chunk counts as finished once the manifest lists it; the kill may fall between a
    # chunk file's rename and its manifest entry, so that file is computed again
    listed = len(json.loads((killed / "manifest.json").read_text())
                 ["stages"]["panels"]["chunks"])
    assert written - 1 <= listed <= written
    subprocess.run([sys.executable, str(script), str(killed)], check=True, timeout=600)
    subprocess.run([sys.executable, str(script), str(clean)], check=True, timeout=600)
    assert (killed / "curves.csv").read_text() == (clean / "curves.csv").read_text()
    a = json.loads((killed / "summary.json").read_text())
    b = json.loads((clean / "summary.json").read_text())
    assert _strip(a) == _strip(b)
    assert a["execution"]["reused"] == listed >= 2 and b["execution"]["reused"] == 0
    # the manifest lists every chunk with its file
    man = json.loads((killed / "manifest.json").read_text())
    assert len(man["stages"]["panels"]["chunks"]) == 32
    assert man["experiment"] == "kill" and man["versions"] == _chunks.versions()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "vits_ref", *args], capture_output=True,
                          text=True, timeout=900)


def test_sweep_command_resumes_and_refuses_to_mix(tmp_path):
    out = tmp_path / "sweep"
    args = ["sweep", "vits-grid", "--methods", "lints", "--runs", "2", "--rounds", "12",
            "--chunk-runs", "1", "--out", str(out), "--quiet"]
    res = _cli(*args)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # --quiet: no status lines
    table = (out / "sweep.csv").read_text()
    # 12 LinTS points x 2 zetas, each scored
    assert table.count("LinTS") == 24
    # the same command on the finished folder is refused, not silently redone
    again = _cli(*args)
    assert again.returncode == 2 and "finished result" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    # an interruption: chunk files and the summary gone; the rerun computes only those
    chunks = sorted((out / "chunks").rglob("*.npz"))
    for f in chunks[::3]:
        f.unlink()
    (out / "summary.json").unlink()
    res = _cli(*args)
    assert res.returncode == 0, res.stderr
    assert (out / "sweep.csv").read_text() == table
    # other options in the same folder: refused before any work, unless --force
    other = _cli(*[a if a != "12" else "13" for a in args])
    assert other.returncode == 2 and "rounds: 12 -> 13" in other.stderr
    forced = _cli(*[a if a != "12" else "13" for a in args], "--force")
    assert forced.returncode == 0, forced.stderr


def test_sweep_scores_equal_the_tuning(tmp_path):
    from vits_ref.experiments.sweep import vits_grid
    from vits_ref.experiments.vits import fig1

    with _chunks.session(quiet=True):
        res = vits_grid(runs=2, rounds=10, seed=1, out=str(tmp_path), methods=["lints"])
    env = vr.envs.pool(dim=fig1.DIM, n_arms=fig1.N_ARMS, zeta=0.1, reward="linear", seed=1)
    _, scores = grid_search(lambda **p: make_policy("lints", fig1.DIM, **p),
                            fig1.tuning_grid("lints"), env, 10, 2, 1)
    mine = [s for s in res["scores"] if s["panel"] == "zeta = 0.1"]
    assert [s["final_regret_mean"] for s in mine] == [s["final_regret_mean"] for s in scores]


def test_execution_options_are_checked_before_any_work(tmp_path):
    bad = [(["--jobs", "0"], "--jobs"), (["--chunk-runs", "0"], "--chunk-runs"),
           (["--jobs", "2", "--dask-local", "2"], "at most one"),
           (["--scheduler", " "], "--scheduler"),
           (["--paper", "--runs", "3"], "--paper")]
    for extra, needle in bad:
        res = _cli("run", "vits-fig1", "--out", str(tmp_path / "x"), *extra)
        assert res.returncode == 2, extra
        assert needle in res.stderr and "Traceback" not in res.stderr
    with pytest.raises(ValueError, match="chunk_runs"):
        with _chunks.session(chunk_runs=0):
            pass


@pytest.mark.parametrize("entry", ["panels", "map_runs"])
def test_a_progress_that_cannot_be_called_is_refused_before_any_work(tmp_path, entry):
    """``progress=True`` (a flag where a callable is expected) used to fail at the first
    message, after the set-up: a TypeError naming it now, before any chunk or folder."""
    import functools

    called = []
    with pytest.raises(TypeError, match="progress must be None or a callable"):
        if entry == "panels":
            run_panels("x", "x", _panels(), 2, 5, 0, str(tmp_path / "out"), progress=True)
        else:
            _chunks.map_runs(functools.partial(called.append), 2, str(tmp_path / "out"),
                             "x", "stage", {}, progress=True)
    assert not called and not (tmp_path / "out").exists()


def _block(scale, lo, hi):
    """Runs lo..hi-1 of a toy experiment: run r's value depends only on r's own seed."""
    x = np.array([np.random.default_rng([7, r]).standard_normal() for r in range(lo, hi)])
    return {"x": scale * x, "wall_s": 0.25, "scale": scale}


def test_map_runs_concatenates_blocks_and_resumes(tmp_path):
    import functools

    fn = functools.partial(_block, 2.0)
    with _chunks.session(chunk_runs=7, quiet=True):
        whole = _chunks.map_runs(fn, 7, str(tmp_path / "a"), "toy", "runs", {"scale": 2.0})
    with _chunks.session(chunk_runs=3, quiet=True) as s:
        blocks = _chunks.map_runs(fn, 7, str(tmp_path / "b"), "toy", "runs", {"scale": 2.0})
        assert s.stats == {"computed": 3, "reused": 0}
    np.testing.assert_array_equal(blocks["x"], whole["x"])
    assert blocks["wall_s"] == 0.75 and whole["wall_s"] == 0.25  # times add up over blocks
    assert blocks["scale"] == 2.0
    (tmp_path / "b" / "chunks" / "runs" / "r3-6.npz").unlink()
    with _chunks.session(chunk_runs=3, quiet=True) as s:
        again = _chunks.map_runs(fn, 7, str(tmp_path / "b"), "toy", "runs", {"scale": 2.0})
        assert s.stats == {"computed": 1, "reused": 2}
    np.testing.assert_array_equal(again["x"], whole["x"])
    with pytest.raises(_chunks.MixedRunError):
        _chunks.map_runs(fn, 7, str(tmp_path / "b"), "toy", "runs", {"scale": 3.0})


_CUDA_SCRIPT = textwrap.dedent("""
    import sys
    import vits_ref as vr
    from vits_ref.experiments import _chunks
    from vits_ref.experiments._common import run_panels
    from vits_ref.bandit.simulate import make_policy

    env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
    panels = [("p", env, [("LinTS", make_policy("lints", 3)),
                          ("VITS-II", make_policy("vits-ii", 3))], {})]
    with _chunks.session(chunk_runs=2, quiet=True, device=sys.argv[2]):
        run_panels("dev", "device test", panels, 3, 6, 2, sys.argv[1], plot=False,
                   kl_rounds=[6])
""")


def test_device_cuda_through_the_chunks_equals_the_cpu(tmp_path):
    # `run vits-fig1 --device cuda` path: the session's device reaches simulate; on Numba's
    # CUDA simulator (a subprocess: the variable must be set before numba is imported)
    pytest.importorskip("numba.cuda")
    script = tmp_path / "dev.py"
    script.write_text(_CUDA_SCRIPT)
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    for device in ("cpu", "cuda"):
        subprocess.run([sys.executable, str(script), str(tmp_path / device), device],
                       check=True, timeout=600, env=env, capture_output=True)
    cpu = json.loads((tmp_path / "cpu" / "summary.json").read_text())
    gpu = json.loads((tmp_path / "cuda" / "summary.json").read_text())
    # regret and arms are bit-identical (vits_ref.bandit._cuda_simulate); the KL to 1e-10
    assert (tmp_path / "cpu" / "curves.csv").read_text() == \
        (tmp_path / "cuda" / "curves.csv").read_text()
    for a, b in zip(cpu["results"], gpu["results"], strict=True):
        assert a["final_regrets"] == b["final_regrets"]
        np.testing.assert_allclose(b["kl_mean"], a["kl_mean"], rtol=1e-10, atol=0)
        assert b["device"] == "cuda" and "device" not in a
    assert gpu["execution"]["device"] == "cuda"
