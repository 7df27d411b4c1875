"""The experiments converted to resumable chunks: diffts-*, vts-scenarios,
vits-figF, vits-figI, opvi-*. At tiny sizes, the results with one run per chunk equal those
of a single chunk bit for bit (summary without its timings, and the CSV files), and a
rerun after a lost chunk recomputes only that chunk and gives the same results.

These are equalities, not tolerances: every run is seeded by its own child seed whatever
the chunking, so any difference is a bug."""

import csv
import io
import json
import os
import shutil

import pytest

from vits_ref.experiments import _chunks

#: Keys of the summaries that measure time or say how the work was executed (those of
#: tests/test_chunks.py, and the experiments' own timings: figI's costs per step and what
#: is read off at fixed times, the priors' loading/training, the diffusion draw times, the
#: repeated timings of the timing claims).
TIMING = {"wall_time_s", "chunk_wall_times_s", "us_per_round", "warmup_s", "total_wall_time_s",
          "execution", "files", "environment", "us_per_step", "kl_at_times", "times_s",
          "train_time_s", "loaded", "draw_time_s", "time_fit", "cost", "us_per_step_repeats",
          "wall_time_per_run_s", "us_per_round_warm", "us_per_round_warm_repeats",
          "draw_times_s", "load_average_at_timing"}

TINY_TRAIN = {"epochs": 1, "hidden": (8, 8)}


def _strip(obj):
    if isinstance(obj, dict):  # the priors' cache files: in each output folder
        return {k: os.path.basename(v) if k == "path" and isinstance(v, str) else _strip(v)
                for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _outputs(out, drop_columns=()):
    """``(summary without timings, {csv name: rows without the timing columns})``."""
    with open(os.path.join(out, "summary.json")) as fh:
        summary = _strip(json.load(fh))
    tables = {}
    for name in sorted(f for f in os.listdir(out) if f.endswith(".csv")):
        with open(os.path.join(out, name)) as fh:
            rows = list(csv.reader(io.StringIO(fh.read())))
        keep = [i for i, h in enumerate(rows[0]) if h not in drop_columns]
        tables[name] = [[r[i] for i in keep] for r in rows]
    assert tables, f"no CSV in {out}"
    return summary, tables


def _run(fn, out, chunk_runs):
    with _chunks.session(chunk_runs=chunk_runs, quiet=True) as s:
        fn(str(out))
    return dict(s.stats)


def _check_invariance(tmp_path, fn, runs, drop_columns=(), copy=()):
    """One chunk of all runs against one run per chunk: the same outputs. ``copy``:
    folders of the first output reused by the second (the trained priors' cache)."""
    one, many = tmp_path / "one", tmp_path / "many"
    stats_one = _run(fn, one, runs)
    for name in copy:
        shutil.copytree(one / name, many / name)
    stats_many = _run(fn, many, 1)
    assert stats_one["reused"] == stats_many["reused"] == 0
    # one chunk per stage against runs chunks per stage
    assert stats_many["computed"] == runs * stats_one["computed"]
    ref, got = _outputs(one, drop_columns), _outputs(many, drop_columns)
    assert got[1] == ref[1]  # the CSV files
    assert got[0] == ref[0]  # the summary
    return one, many, ref, got


# -- diffts (the prior bandits, through _shared.run_panels) --------------------------------

def test_diffts_synthetic_chunks(tmp_path):
    pytest.importorskip("vits_ref.diffusion.learned")
    from vits_ref.experiments.diffts import synthetic

    def fn(out):
        return synthetic.run(runs=3, rounds=8, seed=0, out=out, shapes=("cross",),
                             methods=("TS", "TunedTS", "DPS", "DiffTS"), n_stages=3,
                             n_train=100, train_kwargs=TINY_TRAIN, n_energy=30)

    one, many, ref, got = _check_invariance(tmp_path, fn, 3, copy=("priors",))
    assert got == ref
    # the chunks name the learned priors: another prior in the same folder is refused
    with pytest.raises(_chunks.MixedRunError, match="other parameters"):
        with _chunks.session(chunk_runs=1, quiet=True):
            synthetic.run(runs=3, rounds=8, seed=0, out=str(many), shapes=("cross",),
                          methods=("TS", "TunedTS", "DPS", "DiffTS"), n_stages=3,
                          n_train=100, train_kwargs={"epochs": 2, "hidden": (8, 8)},
                          n_energy=30)


def test_diffts_ablation_chunks(tmp_path):
    pytest.importorskip("vits_ref.diffusion.learned")
    from vits_ref.experiments.diffts import ablation

    def fn(out):
        return ablation.run(runs=2, rounds=6, seed=0, out=out, stages=(1, 2), ref_stages=2,
                            train_sizes=(60,), ref_train=80, train_kwargs=TINY_TRAIN,
                            time_repeats=1)

    _, _, ref, got = _check_invariance(tmp_path, fn, 2, copy=("priors",))
    assert got == ref  # summary and CSV, one chunk against one run per chunk


SMALL_ML = {"n_users": 60, "n_movies": 40, "n_ratings": 600}


def test_diffts_movielens_chunks(tmp_path):
    pytest.importorskip("vits_ref.diffusion.learned")
    from vits_ref.experiments.diffts import movielens

    def fn(out):
        return movielens.run(runs=2, rounds=5, seed=0, out=out, n_stages=2,
                             train_kwargs=TINY_TRAIN, n_energy=15, synthetic_kwargs=SMALL_ML,
                             rewards=("linear", "logistic"), methods=("TS", "DiffTS"))

    _, _, ref, got = _check_invariance(tmp_path, fn, 2, copy=("priors",))
    assert got == ref  # summary and CSV, one chunk against one run per chunk


def test_diffts_digits_chunks(tmp_path):
    pytest.importorskip("vits_ref.diffusion.learned")
    pytest.importorskip("sklearn")
    from vits_ref.experiments.diffts import digits

    def fn(out):
        return digits.run(runs=2, rounds=6, seed=0, out=out, n_stages=2,
                          train_kwargs=TINY_TRAIN, n_energy=30, rewards=("linear",),
                          methods=("TS", "DiffTS"),
                          data_kwargs={"n_thetas": 100, "max_iter": 20})

    _, _, ref, got = _check_invariance(tmp_path, fn, 2, copy=("priors",))
    assert got == ref  # summary and CSV, one chunk against one run per chunk


# -- vts-scenarios, vits-figF, vits-figI ---------------------------------------------------

def _scenarios(out):
    from vits_ref.experiments.vts import scenarios

    # the paper's scoring only: the stages below are its scenarios and K
    return scenarios.run(runs=3, rounds=12, seed=3, out=out, components=(2,),
                         other_scorings=False)


def test_vts_scenarios_chunks_and_resume(tmp_path):
    one, many, ref, got = _check_invariance(tmp_path, _scenarios, 3)
    assert got == ref
    # a lost chunk: only it is computed again, and the results do not change
    lost = many / "chunks" / "B-K2" / "r1-2.npz"
    assert lost.exists()
    lost.unlink()
    stats = _run(_scenarios, many, 1)
    assert stats == {"computed": 1, "reused": 3 * 2 * 2 - 1}  # 3 runs x 2 scenarios x 2 K
    assert _outputs(many) == _outputs(one)
    with open(many / "manifest.json") as fh:
        manifest = json.load(fh)
    assert manifest["experiment"] == "vts-scenarios"
    assert set(manifest["stages"]) == {"A-K1", "A-K2", "B-K1", "B-K2"}


def test_vts_scenarios_blocks_equal_simulate_vts():
    """A block of runs equals the same runs of one simulate_vts call (the seeds of run r
    whatever the block), to the bit."""
    import numpy as np

    import vits_ref as vr
    from vits_ref.bandit.vts import simulate_vts
    from vits_ref.experiments.vts import scenarios

    pol = vr.VTS(2, 2, n_components=2, seed=0)
    full = simulate_vts(pol, vr.envs.vts_scenario("A"), 10, 4, seed=5)
    block = scenarios.run_block("A", 2, "sample_pi", 10, 5, None, 1, 3)
    np.testing.assert_array_equal(block["regret"], full.regret[1:3])
    np.testing.assert_array_equal(block["arms"], full.arms[1:3])
    np.testing.assert_array_equal(block["reward_sq_error"], full.reward_sq_error[1:3])
    np.testing.assert_array_equal(block["cavi_iterations"], full.cavi_iterations[1:3])


def test_figF_chunks(tmp_path):
    from vits_ref.experiments.vits import figF

    def fn(out):
        return figF.run(runs=3, rounds=400, seed=2, out=out, kappas=(2.5, 10.0),
                        step_sizes=(0.1,), methods=["LMC", "VI-II"])

    _, _, ref, got = _check_invariance(tmp_path, fn, 3)
    assert got == ref  # summary and CSV, one chunk against one run per chunk


def test_figI_chunks(tmp_path):
    from vits_ref.experiments.vits import figI

    def fn(out):
        return figI.run(runs=3, rounds=200, seed=2, out=out, methods=["LMC", "VI-II"])

    # the time axis is each method's measured cost per step: only the KL records (the
    # quartile curves in the summary and the CSV) must be equal
    _, _, ref, got = _check_invariance(tmp_path, fn, 3, drop_columns=("time_s",))
    assert got == ref  # summary and CSV, one chunk against one run per chunk


# -- opvi ------------------------------------------------------------------------------------

def test_opvi_mixture_chunks(tmp_path):
    from vits_ref.experiments.opvi import mixture

    def fn(out):
        return mixture.run(runs=3, rounds=12, n_data=200, n_particles=6, grid_n=21, out=out,
                           methods=["OPVI (B = 20)", "SGLD (B = 20)"])

    _, _, ref, got = _check_invariance(tmp_path, fn, 3)
    assert got == ref  # summary and CSV, one chunk against one run per chunk


def test_opvi_bnn_chunks(tmp_path):
    pytest.importorskip("sklearn")
    from vits_ref.experiments.opvi import bnn

    def fn(out):
        return bnn.run(runs=3, rounds=6, n_particles=3, hidden=4, out=out,
                       methods=[bnn.OPVI, bnn.SVGD_B])

    _, _, ref, got = _check_invariance(tmp_path, fn, 3)
    assert got == ref  # summary and CSV, one chunk against one run per chunk


def test_opvi_classifier_chunks_and_resume(tmp_path):
    pytest.importorskip("sklearn")
    from vits_ref.experiments.opvi import classifier

    def fn(out):
        return classifier.run(runs=3, rounds=4, n_particles=3, hidden=4, out=out,
                              methods=[classifier.OPVI, classifier.SVGD_B])

    one, many, ref, got = _check_invariance(tmp_path, fn, 3)
    assert got == ref
    (many / "chunks" / "runs" / "r0-1.npz").unlink()
    assert _run(fn, many, 1) == {"computed": 1, "reused": 2}
    assert _outputs(many) == _outputs(one)


def test_converted_experiments_say_they_run_in_resumable_chunks():
    from vits_ref.experiments.diffts import ablation, digits, movielens, synthetic
    from vits_ref.experiments.opvi import bnn, classifier, mixture
    from vits_ref.experiments.vits import figF, figI
    from vits_ref.experiments.vts import scenarios

    for mod in (synthetic, ablation, movielens, digits, scenarios, figF, figI, mixture, bnn,
                classifier):
        for doc in (mod.__doc__, mod.run.__doc__):
            assert "resumable chunks" in " ".join(doc.split()), mod.__name__


@pytest.mark.slow
def test_process_pool_same_results(tmp_path):
    """The chunks (module-level block functions and their partials: policies with learned
    priors and the simulate adapter, the grid's energy distance, the supervised tasks) go
    to spawned worker processes and come back the same as in this process."""
    pytest.importorskip("vits_ref.diffusion.learned")
    pytest.importorskip("sklearn")
    from vits_ref.experiments.diffts import synthetic
    from vits_ref.experiments.opvi import bnn, mixture
    from vits_ref.experiments.vits import figF

    cases = {
        "synthetic": lambda out: synthetic.run(
            runs=3, rounds=8, seed=0, out=out, shapes=("cross",),
            methods=("TS", "MixTS", "DiffTS"), n_stages=3, n_train=100,
            train_kwargs=TINY_TRAIN, n_energy=30),
        "scenarios": _scenarios,
        "figF": lambda out: figF.run(runs=3, rounds=300, seed=2, out=out, kappas=(2.5,),
                                     step_sizes=(0.1,), methods=["VI-II"]),
        "mixture": lambda out: mixture.run(runs=3, rounds=8, n_data=200, n_particles=6,
                                           grid_n=21, out=out, methods=["OPVI (B = 20)"]),
        "bnn": lambda out: bnn.run(runs=3, rounds=4, n_particles=3, hidden=4, out=out,
                                   methods=[bnn.OPVI]),
    }
    for name, fn in cases.items():
        _run(fn, tmp_path / "one" / name, 3)
    shutil.copytree(tmp_path / "one" / "synthetic" / "priors",
                    tmp_path / "pool" / "synthetic" / "priors")
    with _chunks.executor(jobs=2) as (ex, ex_name), _chunks.session(
            chunk_runs=1, quiet=True, executor=ex, executor_name=ex_name):
        for name, fn in cases.items():
            fn(str(tmp_path / "pool" / name))
    for name in cases:
        assert _outputs(tmp_path / "pool" / name) == _outputs(tmp_path / "one" / name), name
