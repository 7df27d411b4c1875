"""What the command line checks before any work, so that a new user's first run either
runs or stops at once with one line that says what to install, leaving no folder behind:
the extras an experiment imports (scikit-learn's data sets), the device of
``--device cuda``, and the README's low-level CUDA example.
"""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vits_ref.__main__ import check_needs
from vits_ref.__main__ import main as cli_main
from vits_ref.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]


def _extras():
    """``EXTRAS`` of setup.py, read without running it."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", None) == "EXTRAS")
    return ast.literal_eval(node.value)


def _one_line_error(capsys, argv, code=2):
    assert cli_main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_extras_bring_what_the_experiments_import():
    extras = _extras()
    assert any(r.startswith("scikit-learn") for r in extras["data"])
    # progress bars come with the figures
    assert any(r.startswith("tqdm") for r in extras["plot"])
    # the local Dask cluster's TLS credentials
    assert any(r.startswith("cryptography") for r in extras["dask"])
    # every extra an experiment names exists, with the distribution it names
    for mod in EXPERIMENTS.values():
        for _, dist, extra, _ in getattr(mod, "NEEDS", ()):
            assert any(r.startswith(dist) for r in extras[extra]), (mod.NAME, extra)


@pytest.mark.parametrize("name", ["diffts-digits", "opvi-bnn", "opvi-classifier"])
def test_missing_scikit_learn_is_named_before_any_work(tmp_path, capsys, monkeypatch, name):
    # None in sys.modules: "import sklearn" raises ImportError, find_spec finds nothing
    for mod in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    out = tmp_path / "out"
    err = _one_line_error(capsys, ["run", name, "--runs", "1", "--rounds", "2",
                                   "--out", str(out)])
    assert f"{name} needs scikit-learn" in err
    assert "pip install 'vits_ref[data]'" in err
    assert not out.exists()


def test_opvi_bnn_with_data_needs_no_scikit_learn(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    check_needs(EXPERIMENTS["opvi-bnn"], with_data=True)  # a Kin8nm CSV: no error
    with pytest.raises(Exception, match="scikit-learn"):
        check_needs(EXPERIMENTS["opvi-bnn"], with_data=False)


def test_device_cuda_without_a_gpu_stops_before_the_folder(tmp_path, capsys, monkeypatch):
    pytest.importorskip("numba_cuda")
    from numba import cuda

    monkeypatch.setattr(cuda, "is_available", lambda: False)
    out = tmp_path / "out"
    err = _one_line_error(capsys, ["run", "vits-fig1", "--device", "cuda", "--runs", "1",
                                   "--rounds", "2", "--out", str(out)])
    assert "--device cuda" in err and "no usable CUDA GPU" in err
    assert "NUMBA_ENABLE_CUDASIM=1" in err
    assert not out.exists()  # so the same command on the CPU needs no --force


def _readme_cuda_example(runs, rounds):
    """The README's low-level CUDA example at a small size."""
    text = (ROOT / "README.rst").read_text(encoding="utf-8")
    section = text[text.index("On a GPU\n"):]
    block = re.search(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", section).group(1)
    code = "\n".join(line[4:] for line in block.splitlines())
    assert "range(1024)" in code and "200" in code  # the sizes replaced below
    return code.replace("range(1024)", f"range({runs})").replace("200", str(rounds))


def _run_example(env_changes, runs=3, rounds=8):
    code = _readme_cuda_example(runs, rounds) + "\nprint('RESULT', regret.shape, status.tolist())"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)


def test_readme_cuda_example_runs_on_the_simulator():
    pytest.importorskip("numba_cuda")
    res = _run_example({"NUMBA_ENABLE_CUDASIM": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    assert "RESULT (3, 8) [0, 0, 0]" in res.stdout  # 3 runs x 8 rounds, every run finished


def test_readme_cuda_example_without_a_device_says_so():
    pytest.importorskip("numba_cuda")
    res = _run_example({"CUDA_VISIBLE_DEVICES": ""})
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    # the example's own check: a RuntimeError naming the missing device and the simulator
    assert last.startswith("RuntimeError: device='cuda' found no usable CUDA GPU"), last
    assert "CudaSupportError" not in res.stderr


def test_run_help_shows_each_experiments_own_size(capsys):
    with pytest.raises(SystemExit):
        cli_main(["run", "--help"])
    text = capsys.readouterr().out
    assert "(paper: 50)" not in text and "(paper: 1000)" not in text  # vits-fig1's, for all
    lines = {line.split()[0]: line for line in text.splitlines()
             if line.startswith("  ") and line.split() and line.split()[0] in EXPERIMENTS}
    assert set(lines) == set(EXPERIMENTS)
    for name, mod in EXPERIMENTS.items():
        size = f"{mod.DEFAULTS['runs']} x {mod.DEFAULTS['rounds']}"
        assert lines[name].split()[1:4] == size.split(), lines[name]
        paper = getattr(mod, "PAPER_SIZE", None)
        if paper and (paper["runs"], paper["rounds"]) != (mod.DEFAULTS["runs"],
                                                          mod.DEFAULTS["rounds"]):
            assert f"--paper: {paper['runs']} x {paper['rounds']}" in lines[name]


def test_what_does_not_shrink_is_in_the_help_and_said_on_stderr(capsys):
    from vits_ref.__main__ import _say_fixed_cost
    from vits_ref.experiments.diffts import ablation, synthetic

    with pytest.raises(SystemExit):
        cli_main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse rewraps the epilog
    assert "what does not shrink with --runs/--rounds" in text
    assert f"- diffts-ablation: {' '.join(ablation.FIXED_COST.split())}" in text
    said = []
    _say_fixed_cost(ablation, {"runs": 2, "rounds": 20}, said.append)
    assert said == [f"not scaled with --runs/--rounds: {ablation.FIXED_COST}"]
    said.clear()
    _say_fixed_cost(ablation, dict(ablation.DEFAULTS), said.append)  # the default size
    _say_fixed_cost(synthetic, {"runs": 2, "rounds": 20}, said.append)  # shrinks: no note
    assert said == []


@pytest.mark.parametrize("argv, words", [
    (["bench", "--device", "cuda", "--policies", "lints,nope"],
     ["--device cuda", "policies", "nope"]),
    (["bench", "--device", "cuda", "--runs", "1024,0"], ["--device cuda", "runs", "(1024, 0)"]),
    (["bench", "--device", "cuda", "--runs", "many"], ["--runs", "'many'"]),
    (["bench", "--json", "out.json"], ["--json", "only with bench --device cuda"]),
    (["bench", "--quick", "--runs", "8", "--share-gpu", "lock"],
     ["--runs, --share-gpu", "only with bench --device cuda"]),
])
def test_bench_options_are_checked_before_any_work(capsys, argv, words):
    """The GPU benchmark's options (``--policies``, ``--runs``, ``--json``,
    ``--share-gpu``, ``--no-logistic``) stop with one line naming the option before anything
    is timed or compiled, with or without a GPU; on the CPU benchmark they are refused."""
    err = _one_line_error(capsys, argv)
    assert all(w in err for w in words), err
