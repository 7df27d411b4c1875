"""The command line's errors: bad options are refused before any compute, with one line on
stderr (no traceback) and exit code 2; ``--debug`` re-raises."""

import os
import sys

import pytest

import vits_ref as vr
from vits_ref.__main__ import main as cli_main


def _cli_error(capsys, *argv, code=2):
    try:
        rc = cli_main(list(argv))
    except SystemExit as exc:  # argparse's own errors (also one line: _Parser.error)
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == code, err
    assert err.count("\n") == 1 and "Traceback" not in err, err  # one line
    return err


def test_out_is_checked_before_any_compute(tmp_path, capsys):
    run = ["run", "vits-fig1", "--runs", "1", "--rounds", "2"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert "is an existing file" in _cli_error(capsys, *run, "--out", str(a_file))
    assert "not a writable folder" in _cli_error(capsys, *run, "--out", "/dev/null/x")
    assert "must not be empty" in _cli_error(capsys, *run, "--out", "")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        assert "not a writable folder" in _cli_error(capsys, *run, "--out", str(ro / "x"))
        assert "not a writable folder" in _cli_error(capsys, *run, "--out", str(ro))
    assert not list(tmp_path.glob("**/summary.json"))  # nothing ran


def test_default_out_never_overwrites_a_finished_result(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = tmp_path / "results" / "vits-fig1"
    done.mkdir(parents=True)
    (done / "summary.json").write_text("{}")
    err = _cli_error(capsys, "run", "vits-fig1", "--runs", "1", "--rounds", "2")
    assert "--force" in err and "finished result" in err
    assert (done / "summary.json").read_text() == "{}"


def test_data_and_rounds_are_checked(tmp_path, capsys):
    ml = ["run", "vits-movielens", "--runs", "1", "--rounds", "2", "--out", str(tmp_path)]
    assert "no such file" in _cli_error(capsys, *ml, "--data", "/nonexistent.dat")
    assert "is not a file" in _cli_error(capsys, *ml, "--data", str(tmp_path))
    err = _cli_error(capsys, "run", "vits-fig1", "--rounds", str(10 ** 20))
    assert "--rounds must be in [1, 1000000000]" in err
    assert "--runs" in _cli_error(capsys, "run", "vits-fig1", "--runs", "0")
    assert "invalid int value" in _cli_error(capsys, "run", "vits-fig1", "--rounds", "1e3")


def test_version_help_and_debug(capsys):
    with pytest.raises(SystemExit) as info:
        cli_main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == \
        f"vits_ref {vr.__version__}"
    with pytest.raises(SystemExit):
        cli_main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "vits-figF: the cap on VITS steps per run" in help_text
    # --debug re-raises instead of the one-line message
    from vits_ref.__main__ import CLIError

    with pytest.raises(CLIError):
        cli_main(["--debug", "run", "vits-fig1", "--out", ""])
    with pytest.raises(CLIError):
        cli_main(["run", "vits-fig1", "--debug", "--out", ""])


def test_subprocess_error_is_one_line(tmp_path):
    import subprocess

    res = subprocess.run([sys.executable, "-m", "vits_ref", "run", "vits-fig1", "--out",
                          "/dev/null/x"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr
