"""Output folders that cannot silently go wrong (vits_ref.experiments._atomic, _manifest,
_outputs, the chunk store and the command line's --out/--force/--data handling).

Final files are written atomically and checked against the manifest before a result is
called finished; damaged chunks are named and computed again; --force removes only what
the manifest lists; a --data file is fingerprinted by content; symlinks at the tool's
file names are refused; every file follows the umask.

The command-line tests run a tiny registered experiment in this process (one LinTS
panel, 2 runs x 8 rounds, through the same run_panels as the paper experiments).
"""

import csv
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import textwrap
import types
import zipfile

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.__main__ import main as cli_main
from vits_ref.bandit.simulate import make_policy
from vits_ref.envs.synthetic import PoolEnvironment
from vits_ref.experiments import EXPERIMENTS, _atomic, _chunks, _outputs
from vits_ref.experiments._common import regret_table, run_panels, write_curves_csv, write_json

TINY = "tiny-outputs"


class _FileEnvironment(PoolEnvironment):
    """A pool environment made from a data file and named by the file's path only, as the
    MovieLens environment is: the chunks' fingerprint (reprs) cannot see the content."""

    def __init__(self, path, seed=None):
        self.path = path
        with open(path, "rb") as fh:
            zeta = 0.5 + fh.read(1)[0] / 255  # the first byte sets the arms' spread
        super().__init__(dim=3, n_arms=4, zeta=zeta, seed=seed)

    def _params(self):
        return {"path": self.path, "seed": self.seed}


def _tiny_run(runs, rounds, seed, out, progress=None, path=None):
    """One LinTS panel; ``path``: a data file for the environment."""
    env = (vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1) if path is None
           else _FileEnvironment(path, seed=1))
    panels = [("p", env, [("LinTS", make_policy("lints", 3))], {})]
    return run_panels(TINY, "tiny output test", panels, runs, rounds, seed, out, progress)


def _tiny_module(with_data=False):
    def run(runs, rounds, seed, out, progress=None):
        return _tiny_run(runs, rounds, seed, out, progress)

    def run_data(runs, rounds, seed, out, progress=None, path=None):
        return _tiny_run(runs, rounds, seed, out, progress, path)

    return types.SimpleNamespace(NAME=TINY, DESCRIPTION="tiny output test",
                                 DEFAULTS={"runs": 2, "rounds": 8, "seed": 0},
                                 run=run_data if with_data else run, table=regret_table,
                                 claims=lambda result: [])


@pytest.fixture
def tiny(monkeypatch):
    """``cli(*args) -> (exit code, stderr)`` for ``run tiny-outputs --quiet ARGS``."""
    monkeypatch.setitem(EXPERIMENTS, TINY, _tiny_module())

    def use(with_data):
        monkeypatch.setitem(EXPERIMENTS, TINY, _tiny_module(with_data))

    return use


def _cli(capsys, *args):
    try:
        rc = cli_main(["run", TINY, "--quiet", *args])
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    return rc, capsys.readouterr().err


def _tmp_files(folder):
    return [os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs
            if f.startswith(".tmp")]


# --------------------------------------------------------------- 1. atomic final files


def _rows_then_fail():
    yield {"panel": "p", "method": "m", "mean": np.arange(3.0), "stderr": np.ones(3)}
    raise RuntimeError("interrupted while writing")


def test_a_failed_final_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "curves.csv"
    write_curves_csv(path, [{"panel": "p", "method": "old", "mean": np.arange(4.0),
                             "stderr": np.ones(4)}])
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="interrupted"):
        write_curves_csv(path, _rows_then_fail())
    assert path.read_bytes() == before  # not truncated, not half new
    assert _tmp_files(tmp_path) == []


_KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from vits_ref.experiments._common import write_curves_csv

    def rows():
        for k in range(100):
            yield {"panel": "p", "method": f"m{k}", "mean": np.arange(50.0),
                   "stderr": np.ones(50)}
            if k == 50:
                os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the write

    write_curves_csv(sys.argv[1], rows())
""")


def test_sigkill_during_a_final_write_leaves_no_torn_file(tmp_path):
    path = tmp_path / "curves.csv"
    path.write_text("panel,method,round,mean_cumulative_regret,stderr\r\np,old,1,0,\r\n")
    before = path.read_bytes()
    script = tmp_path / "kill.py"
    script.write_text(_KILL_SCRIPT)
    res = subprocess.run([sys.executable, str(script), str(path)], timeout=300)
    assert res.returncode == -9
    assert path.read_bytes() == before
    # a killed write may leave its temporary file, never a partial curves.csv
    others = [f for f in os.listdir(tmp_path) if f not in ("curves.csv", "kill.py")]
    assert all(f.startswith(".tmp-vits_ref-") for f in others), others


def _damage(path, how):
    data = path.read_bytes()
    if how == "truncated":  # a write killed half-way (the old, non-atomic writers)
        path.write_bytes(data[:len(data) // 2])
    elif how == "emptied":
        path.write_bytes(b"")
    elif how == "edited":  # same size and shape, other numbers
        text = data.decode()
        i = max(k for k, c in enumerate(text) if c.isdigit())
        path.write_bytes((text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:]).encode())
    elif how == "removed":
        path.unlink()


@pytest.mark.parametrize("name,how", [("curves.csv", "truncated"), ("summary.json", "emptied"),
                                      ("regret.png", "truncated"), ("curves.csv", "edited"),
                                      ("regret.png", "removed")])
def test_a_damaged_final_file_is_rebuilt_from_the_chunks(tmp_path, tiny, capsys, name, how):
    out = tmp_path / "out"
    assert _cli(capsys, "--out", str(out)) == (0, "")
    good = {f: (out / f).read_bytes() for f in ("curves.csv", "regret.png")}
    # intact: the same command is refused, the result kept
    rc, err = _cli(capsys, "--out", str(out))
    assert rc == 2 and "already holds a finished result" in err
    _damage(out / name, how)
    rc, err = _cli(capsys, "--out", str(out))
    assert rc == 0, err
    assert len(err.splitlines()) == 1 and name in err and "damaged" in err
    for f, data in good.items():  # the rebuilt files equal the first run's, byte for byte
        assert (out / f).read_bytes() == data, f
    summary = json.loads((out / "summary.json").read_text())
    assert summary["execution"]["computed"] == 0 and summary["execution"]["reused"] == 1
    # rebuilt and sealed again: finished
    rc, err = _cli(capsys, "--out", str(out))
    assert rc == 2 and "already holds a finished result" in err


@pytest.mark.parametrize("name,content", [
    ("a.csv", b"x,y\r\n1,2\r\n3,4\r\n"), ("a.json", b'{"a": [1, 2], "b": null}'),
    ("a.md", b"# t2\n\ntext\n")])
def test_check_finds_every_kind_of_damage(tmp_path, name, content):
    from vits_ref.experiments import _outputs

    rec = _outputs.describe(name, content)
    assert rec["sha256"] == hashlib.sha256(content).hexdigest()  # independent reference
    p = tmp_path / name
    p.write_bytes(content)
    assert _outputs.check(str(tmp_path), name, rec) is None
    p.write_bytes(content.replace(b"2", b"7"))  # same size and shape
    assert "checksum" in _outputs.check(str(tmp_path), name, rec)
    p.write_bytes(content[:len(content) - 3])
    assert _outputs.check(str(tmp_path), name, rec) is not None
    p.unlink()
    assert _outputs.check(str(tmp_path), name, rec) == "missing"


def test_png_record_is_its_size_and_a_broken_png_does_not_parse(tmp_path):
    pytest.importorskip("matplotlib")
    from vits_ref.experiments import _outputs, plotting

    fig, axes = plotting.figure(2, width=2.0, height=1.5)
    axes[0].plot([1, 2, 3])
    plotting.save(fig, tmp_path / "f.png")
    data = (tmp_path / "f.png").read_bytes()
    # 2 x 2 in by 1.5 in at 120 dpi: 480 x 180 pixels
    assert _outputs.describe("f.png", data)["shape"] == [180, 480]
    with pytest.raises(ValueError, match="PNG"):
        _outputs.describe("f.png", data[:-40])


# --------------------------------------------------------------- 2. --force


def test_force_removes_only_the_files_the_manifest_lists(tmp_path, tiny, capsys):
    out = tmp_path / "out"
    assert _cli(capsys, "--runs", "2", "--out", str(out))[0] == 0
    old_chunks = sorted(p.name for p in (out / "chunks" / "panels").glob("*.npz"))
    mine = {out / "chunks" / "notes.txt": "my notes",
            out / "chunks" / "mine" / "data.txt": "mine",
            out / "chunks" / "panels" / "keep.txt": "mine too",
            out / "README.txt": "about this folder"}
    for p, text in mine.items():
        p.parent.mkdir(exist_ok=True)
        p.write_text(text)
    (out / "chunks" / "empty").mkdir()
    rc, err = _cli(capsys, "--runs", "3", "--out", str(out))
    assert rc == 2 and "runs: 2 -> 3" in err
    rc, err = _cli(capsys, "--runs", "3", "--out", str(out), "--force")
    assert rc == 0, err
    for p, text in mine.items():
        assert p.read_text() == text, p
    assert (out / "chunks" / "empty").is_dir()
    # one line naming every file it left, in the chunks' folder and beside it
    assert len(err.splitlines()) == 1 and "left 5 files" in err
    for rel in ("chunks/notes.txt", "chunks/mine/data.txt", "chunks/panels/keep.txt",
                "chunks/empty/", "README.txt"):
        assert rel in err
    # the old run's chunks are gone (the new run's have other run blocks)
    new_chunks = sorted(p.name for p in (out / "chunks" / "panels").glob("*.npz"))
    assert not set(old_chunks) & set(new_chunks)
    assert json.loads((out / "summary.json").read_text())["runs"] == 3


def test_store_force_leaves_foreign_files(tmp_path, capsys):
    store = _chunks.Store(str(tmp_path), "exp", "s", {"runs": 2})
    store.save("k", {"x": np.ones(2)}, {})
    (tmp_path / "chunks" / "s" / "notes.txt").write_text("mine")
    _chunks.Store(str(tmp_path), "exp", "s", {"runs": 3}, force=True)
    assert not (tmp_path / "chunks" / "s" / "k.npz").exists()
    assert (tmp_path / "chunks" / "s" / "notes.txt").read_text() == "mine"
    assert "chunks/s/notes.txt" in capsys.readouterr().err


# --------------------------------------------------------------- 3. --data by content


def test_a_changed_data_file_of_the_same_size_is_refused(tmp_path, tiny, capsys):
    tiny(True)
    data, out = tmp_path / "ratings.dat", tmp_path / "out"
    data.write_bytes(b"\x10" + b"x" * 99)
    assert _cli(capsys, "--data", str(data), "--out", str(out))[0] == 0
    first = json.loads((out / "summary.json").read_text())["results"][0]["final_regrets"]
    (out / "summary.json").unlink()  # as after an interruption: chunks, no summary
    before = os.stat(data)
    data.write_bytes(b"\xf0" + b"x" * 99)  # other content, same size
    os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns + 10 ** 9))
    rc, err = _cli(capsys, "--data", str(data), "--out", str(out))
    assert rc == 2 and "data_sha256" in err and "--force" in err
    new = hashlib.sha256(data.read_bytes()).hexdigest()
    assert new in err
    rc, err = _cli(capsys, "--data", str(data), "--out", str(out), "--force")
    assert rc == 0, err
    # the data matters: reusing the old chunks would have reported the old data's regret
    summary = json.loads((out / "summary.json").read_text())
    assert summary["execution"]["reused"] == 0
    assert summary["results"][0]["final_regrets"] != first
    man = json.loads((out / "manifest.json").read_text())
    assert man["options"]["data_sha256"] == new
    assert man["inputs"][str(data)]["sha256"] == new


def test_data_digest_is_cached_by_size_and_mtime(tmp_path):
    from vits_ref.experiments._manifest import data_digest

    p = tmp_path / "d.csv"
    p.write_bytes(b"1,2,3\n")
    d = data_digest(str(p))
    assert d["sha256"] == hashlib.sha256(b"1,2,3\n").hexdigest() and d["size"] == 6
    # same size and modification time: the recorded digest is reused, the file not read
    assert data_digest(str(p), {**d, "sha256": "cached"})["sha256"] == "cached"
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert data_digest(str(p), {**d, "sha256": "cached"})["sha256"] == d["sha256"]


# --------------------------------------------------------------- 4. chunks checked


def _panels_run(out, capsys=None, chunk_runs=1, rounds=8):
    with _chunks.session(quiet=True, chunk_runs=chunk_runs) as s:
        env = vr.envs.pool(dim=3, n_arms=4, zeta=1.0, seed=1)
        run_panels(TINY, "chunk check", [("p", env, [("LinTS", make_policy("lints", 3))],
                                          {})], 3, rounds, 0, str(out), plot=False)
        return (out / "curves.csv").read_bytes(), dict(s.stats)


def _edit_numbers(path):
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["regret"] = arrays["regret"] + 1.0  # same shape and dtype, other numbers
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def test_damaged_chunks_are_named_and_computed_again(tmp_path, capsys):
    curves, stats = _panels_run(tmp_path / "a")
    assert stats == {"computed": 3, "reused": 0}
    _panels_run(tmp_path / "longer", rounds=12)  # chunks of another shape
    capsys.readouterr()
    chunks = tmp_path / "a" / "chunks" / "panels"
    first, second, third = (chunks / f"p0-m0-c0-r{r}-{r + 1}.npz" for r in range(3))
    _edit_numbers(first)
    second.write_bytes(second.read_bytes()[:200])  # truncated
    third.write_bytes((tmp_path / "longer" / "chunks" / "panels" / third.name).read_bytes())
    again, stats = _panels_run(tmp_path / "a")
    assert again == curves  # the damaged chunks were not used
    assert stats == {"computed": 3, "reused": 0}
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    for line, f in zip(lines, (first, second, third), strict=True):
        assert f"chunks/panels/{f.name} is damaged" in line and "computing it again" in line
    assert "checksum" in lines[0] and "unreadable" in lines[1] and "shape [1, 12]" in lines[2]
    # computed again and listed again: the next call reuses all three, silently
    assert _panels_run(tmp_path / "a")[1] == {"computed": 0, "reused": 3}
    assert capsys.readouterr().err == ""


def test_manifest_lists_each_chunks_checksum_shape_and_dtype(tmp_path):
    _panels_run(tmp_path)
    man = json.loads((tmp_path / "manifest.json").read_text())
    entry = man["stages"]["panels"]["chunks"]["p0-m0-c0-r0-1"]
    data = (tmp_path / entry["file"]).read_bytes()
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["bytes"] == len(data)
    assert entry["arrays"]["regret"] == {"shape": [1, 8], "dtype": "<f8"}
    outs = man["outputs"]
    assert set(outs) == {"curves.csv", "summary.json"}
    assert outs["curves.csv"]["shape"] == [9, 5]  # a header and 8 rounds, 5 fields


# --------------------------------------------------------------- 5. symlinks


def test_writes_replace_a_symlink_and_leave_its_target(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("curves.csv", "summary.json"):
        (out / name).symlink_to(victim)
    write_curves_csv(out / "curves.csv", [{"panel": "p", "method": "m",
                                           "mean": np.ones(2), "stderr": np.ones(2)}])
    write_json(out / "summary.json", {"a": 1})
    assert victim.read_text() == "precious"
    assert not (out / "curves.csv").is_symlink() and not (out / "summary.json").is_symlink()
    assert json.loads((out / "summary.json").read_text()) == {"a": 1}


def test_an_out_with_symlinks_at_the_tools_names_is_refused(tmp_path, tiny, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("curves.csv", "regret.png", "other.csv"):
        (out / name).symlink_to(victim)
    (out / "my-link").symlink_to(victim)  # not a name the tool writes: allowed
    for force in ([], ["--force"]):
        rc, err = _cli(capsys, "--out", str(out), *force)
        assert rc == 2 and len(err.splitlines()) == 1, err
        assert "symlink" in err and "curves.csv" in err and "regret.png" in err
        assert "other.csv" in err and "my-link" not in err
    assert victim.read_text() == "precious"
    assert not (out / "chunks").exists()  # refused before any work


# --------------------------------------------------------------- 6. permissions


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_every_file_follows_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        store = _chunks.Store(str(tmp_path), "exp", "s", {"a": 1})
        store.save("k", {"x": np.ones(2)}, {})
        write_json(tmp_path / "summary.json", {"a": 1})
        with open(tmp_path / "plain.txt", "w") as fh:  # what open() gives, as reference
            fh.write("x")
    finally:
        os.umask(old)
    want = stat.S_IMODE(os.stat(tmp_path / "plain.txt").st_mode)
    assert want == 0o666 & ~umask
    for f in ("manifest.json", "chunks/s/k.npz", "summary.json"):
        assert stat.S_IMODE(os.stat(tmp_path / f).st_mode) == want, f


def test_csv_written_by_text_output_is_byte_identical_to_open(tmp_path):
    """The atomic CSV writer keeps the bytes of ``open(path, "w", newline="")``."""
    from vits_ref.experiments._outputs import text_output

    rows = [["a", 1.5, ""], ["b,c", "quote\"d", 3]]
    with open(tmp_path / "ref.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    with text_output(tmp_path / "new.csv") as fh:
        csv.writer(fh).writerows(rows)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()


# --------------------------------------------------------------- 5. a user's files


def test_a_folder_without_manifest_is_not_written_over(tmp_path, tiny, capsys):
    """A user's curves.csv in a folder with no manifest and no summary: refused without
    --force; with it, the run writes and the file is named as left (replaced)."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "curves.csv").write_text("my,data\n")
    (out / "notes.txt").write_text("kept")
    rc, err = _cli(capsys, "--out", str(out))
    assert rc == 2 and "did not write" in err and "curves.csv" in err, err
    assert (out / "curves.csv").read_text() == "my,data\n"
    rc, err = _cli(capsys, "--out", str(out), "--force")
    assert rc == 0, err
    assert "curves.csv" in err and "notes.txt" in err and "left 2 files" in err, err
    assert (out / "notes.txt").read_text() == "kept"


def test_force_removes_nothing_a_foreign_manifest_lists(tmp_path, tiny, capsys):
    """A web app's manifest.json listing index.html under "outputs" is not this tool's:
    the refusal says so (not "chunks of another run"), --force leaves index.html and
    names it."""
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("<html></html>")
    (out / "manifest.json").write_text(json.dumps(
        {"name": "app", "start_url": "index.html", "format": 2,
         "outputs": {"index.html": {"bytes": 13}}, "stages": {}}))
    rc, err = _cli(capsys, "--out", str(out))
    assert rc == 2 and "manifest.json that vits_ref did not write" in err, err
    assert "chunks of another run" not in err
    rc, err = _cli(capsys, "--out", str(out), "--force")
    assert rc == 0, err
    assert (out / "index.html").read_text() == "<html></html>"
    assert "index.html" in err
    assert json.loads((out / "manifest.json").read_text())["writer"] == "vits_ref"


def test_a_resumed_run_removes_the_temporary_files_of_a_killed_write(tmp_path, tiny,
                                                                     capsys):
    out = tmp_path / "out"
    assert _cli(capsys, "--out", str(out))[0] == 0
    _outputs.unseal(str(out))  # as if killed before the run was sealed
    planted = [out / f"{_atomic.TMP_PREFIX}0123456789abcdef",
               out / "chunks" / "panels" / f"{_atomic.TMP_PREFIX}fedcba9876543210"]
    for p in planted:
        p.write_bytes(b"torn")
    rc, err = _cli(capsys, "--out", str(out))
    assert rc == 0, err
    assert not _tmp_files(out)


def test_a_damaged_chunks_notice_prints_no_raw_bytes(tmp_path, capsys):
    _panels_run(tmp_path / "a")
    capsys.readouterr()
    first = tmp_path / "a" / "chunks" / "panels" / "p0-m0-c0-r0-1.npz"
    with np.load(first) as npz:
        names = list(npz.files)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n in names:
            # a .npy header that numpy cannot parse, quoting an escape and a control byte
            z.writestr(f"{n}.npy", b'\x93NUMPY\x01\x00\x10\x00{"descr": 3, \x1b[31m\x01}\n')
    first.write_bytes(buf.getvalue())
    _panels_run(tmp_path / "a")
    err = capsys.readouterr().err
    assert "is damaged" in err and "computing it again" in err, err
    assert "\\x" not in err and "\x1b" not in err and "b'" not in err, err


def test_list_shows_sizes_and_a_closed_pipe_prints_no_traceback(capsys, monkeypatch):
    assert cli_main(["list"]) == 0
    out = capsys.readouterr().out
    for name, mod in EXPERIMENTS.items():
        line = next(x for x in out.splitlines() if x.startswith(name + " "))
        assert f"{mod.DEFAULTS['runs']} x {mod.DEFAULTS['rounds']}" in line, line
    # the program is named as it was called
    monkeypatch.setattr(sys, "argv", ["/some/venv/bin/vits-ref"])
    with pytest.raises(SystemExit):
        cli_main(["run", "no-such-experiment"])
    assert capsys.readouterr().err.startswith("vits-ref run: error:")
    # ``vits-ref list | head``: the reader is gone before the first line is written
    code = ("import sys; sys.argv[0] = 'vits-ref'; from vits_ref.__main__ import main; "
            "sys.exit(main(['list']))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert err == "", err


#: a process that adds ``n`` entries to a folder's manifest once told to go (stdin), so
#: that two of them run at the same time whatever their start-up took
_ADD_ENTRIES = """
import sys
from vits_ref.experiments import _manifest
folder, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
for i in range(n):
    _manifest.update(folder, lambda m, k=f"{who}-{i}", i=i: m.setdefault("outputs", {})
                     .__setitem__(k, {"size": i}))
"""


def test_two_processes_updating_one_manifest_lose_no_entry(tmp_path):
    # read-modify-write from two processes at once: without the folder's lock, a write
    # overwrites the other process's entry it never read (about half of them were lost
    # without it). Separate interpreters, not forks of this multi-threaded one
    from vits_ref.experiments import _manifest

    n = 100
    procs = [subprocess.Popen([sys.executable, "-c", _ADD_ENTRIES, str(tmp_path), who,
                               str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for who in ("a", "b")]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        assert p.wait(120) == 0
    outputs = _manifest.read(str(tmp_path))["outputs"]
    assert sorted(outputs) == sorted(f"{w}-{i}" for w in "ab" for i in range(n))
