"""What a crafted file cannot make vits_ref.load do (vits_ref/inference/persist.py).

Each file is built here from a small saved object, then edited: compressed members, sizes
that would allocate gigabytes, buffers larger than their counts allow, NaN or negative
state, headers that would raise RecursionError, OverflowError or TypeError, a class other
than the one expected. Every one must give a one-line ValueError naming the file. The
allocation tests run ``load`` in a subprocess under an address-space limit
(``resource.setrlimit(RLIMIT_AS)``), so that a regression fails with a MemoryError there
instead of swapping here. Nothing is compiled: objects are saved without updates.
"""

import io
import json
import os
import stat
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import vits_ref as vr
from vits_ref.inference import persist


def _head(path):
    with zipfile.ZipFile(path) as z, z.open("header.npy") as f:
        return json.loads(str(np.lib.format.read_array(f)[()]))


def _npy(a):
    f = io.BytesIO()
    np.lib.format.write_array(f, a, allow_pickle=False)
    return f.getvalue()


def _rewrite(path, out, header=None, members=None, header_text=None,
             compression=zipfile.ZIP_STORED):
    """Copy the save file ``path`` to ``out``: ``header(dict)`` edits the header's JSON (or
    ``header_text`` replaces it), ``members`` replaces members' ``.npy`` bytes."""
    head = _head(path)
    if header is not None:
        header(head)
    text = header_text if header_text is not None else json.dumps(head)
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", compression) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "header.npy":
                data = _npy(np.array(text))
            if members and info.filename in members:
                data = members[info.filename]
            dst.writestr(info.filename, data)
    return out


def _error(path, **kw):
    with pytest.raises(ValueError) as info:
        vr.load(path, **kw)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    return msg


@pytest.fixture
def lints(tmp_path):
    """A LinTS with data (its model's V, b, sum_r2 and n_obs set by hand: no update, so
    nothing is compiled)."""
    eng = vr.LinTS(3, seed=1)
    eng.model.V[...] = 2.0 * np.eye(3)
    eng.model.b[...] = 1.0
    eng.model.sum_r2, eng.model.n_obs = 3.0, 3
    eng.L[...] = np.sqrt(2.0) * np.eye(3)
    return eng.save(tmp_path / "lints.npz")


def _array_key(path, *where):
    node = _head(path)["object"]
    for w in where:
        node = node[w]
    return node["array"]


# -- the size policy ----------------------------------------------------------------------

def test_compressed_member_is_refused(lints, tmp_path):
    """A deflated member could expand far beyond the file: only stored members load."""
    out = _rewrite(lints, tmp_path / "deflated.npz", compression=zipfile.ZIP_DEFLATED)
    assert "compressed" in _error(out)


_LIMITED = textwrap.dedent("""
    import resource, sys
    import vits_ref as vr
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:")) * 1024
    # 600 MiB above what the interpreter and vits_ref use: a gigabyte allocation fails
    resource.setrlimit(resource.RLIMIT_AS, (vm + 600 * 2 ** 20, resource.RLIM_INFINITY))
    for path in sys.argv[1:]:
        try:
            vr.load(path)
        except ValueError as exc:
            print("ValueError", exc, flush=True)
        else:
            print("loaded", flush=True)
""")


def _load_limited(paths):
    """``vr.load`` of each of ``paths`` in one subprocess whose address space is capped:
    one line each."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _LIMITED, *map(str, paths)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()


def _set(path, *where):
    def edit(h):
        node = h["object"]
        for w in where[:-2]:
            node = node[w]
        node[where[-2]] = where[-1]
    return edit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_declared_sizes_are_refused_before_anything_is_built(lints, tmp_path):
    """A few-kB file declaring dim = 12 000 (LinTS), a network of 10^5 x 10^5 hidden units,
    10^8 particles or 10^9 arms: refused from the header, under a 600 MiB limit (each
    would allocate gigabytes, or build for minutes, before the shape check)."""
    cases = {"dim": (lints, ("params", "dim", 12_000))}
    svgd = vr.SVGD(3, n_particles=5, seed=1).save(tmp_path / "svgd.npz")
    cases["n_particles"] = (svgd, ("params", "n_particles", 10 ** 8))
    per_arm = vr.PerArm(vr.LinTS(3), n_arms=2, seed=2).save(tmp_path / "perarm.npz")
    cases["n_arms"] = (per_arm, ("params", "n_arms", 10 ** 9))
    mlp = vr.models.MLP(3, hidden=(4,), capacity=2)
    vits = vr.VITS(mlp.dim, model=mlp, seed=1).save(tmp_path / "vits_mlp.npz")
    cases["hidden"] = (vits, ("params", "model", "params", "hidden",
                              {"tuple": [100_000, 100_000]}))
    outs = {name: _rewrite(path, tmp_path / f"big_{name}.npz", header=_set(path, *where))
            for name, (path, where) in cases.items()}
    assert all(os.path.getsize(out) < 64_000 for out in outs.values())
    lines = _load_limited(outs.values())
    assert len(lines) == len(outs), lines
    for (name, out), line in zip(outs.items(), lines, strict=True):
        assert line.startswith(f"ValueError {out}: ") and "allocate" in line, (name, line)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_an_online_horizon_is_counted_before_anything_is_built(lints, tmp_path):
    """An Online whose policy keeps a history (a logistic model's rows) allocates its
    state for ``horizon`` updates when built: a few-kB file declaring horizon = 10^8 for
    a 3-dimensional logistic VITS-II (about 7 GB of state) is refused from the header,
    under the 600 MiB limit, by the policy's name or by its saved description."""
    by_name = {"object": "Online", "params": {
        "policy": "vits-ii", "n_arms": 3, "dim": 3, "model": "logistic",
        "horizon": 10 ** 8, "block": 4, "seed": 0}, "state": {}}
    eng = {"object": "VITS", "params": {"dim": 3, "model": "logistic", "variant": "II",
                                        "n_mc": 1, "seed": 0}, "state": {}}
    by_desc = {"object": "Online", "params": {
        "policy": {"object": "ThompsonSampling", "params": {"engine": eng}, "state": {}},
        "n_arms": 3, "horizon": 10 ** 8, "block": 4, "seed": 0}, "state": {}}
    outs = [_rewrite(lints, tmp_path / f"online_{k}.npz",
                     header=lambda h, d=d: h.__setitem__("object", d))
            for k, d in (("name", by_name), ("desc", by_desc))]
    lines = _load_limited(outs)
    assert len(lines) == 2, lines
    for out, line in zip(outs, lines, strict=True):
        assert line.startswith(f"ValueError {out}: ") and "allocate" in line, line


def test_an_online_horizon_is_counted_as_the_state_holds_it():
    """The estimate covers the history the state really holds (the pieces' own
    ``state_size``, for every update up to the horizon), and only where the state keeps
    one: LinTS's Online at horizon 10^12 holds one round's state, not a history."""
    from vits_ref.bandit.simulate import make_policy

    for name, options in (("vits-ii", {}), ("vits-hf", {}), ("lmc", {}),
                          ("vits-ii", {"n_mc": 7})):
        spec = make_policy(name, 4, model="logistic", **options).fused()
        M = spec.draw(np.random.SeedSequence(0), 1, 4)[2].shape[2]
        desc = {"object": "Online", "params": {"policy": name, "n_arms": 5, "dim": 4,
                                                "model": "logistic", "horizon": 100_000,
                                                **options}, "state": {}}
        assert persist._cost(desc) >= spec.piece.state_size(4, 5, M, 100_000), (name, M)
    endless = {"object": "Online", "params": {"policy": "lints", "n_arms": 50, "dim": 20,
                                              "horizon": 10 ** 12}, "state": {}}
    assert 8 * persist._cost(endless) < persist.LOAD_FLOOR_BYTES


def test_the_size_policy_passes_a_real_file_of_that_size(tmp_path):
    """The estimate is tied to the file: a LinTS of dim 1500 (its V and L, 36 MB) loads."""
    eng = vr.LinTS(1500, seed=0)
    assert 8 * persist._cost(_head(eng.save(tmp_path / "big.npz"))["object"]) > \
        persist.LOAD_FLOOR_BYTES / 4
    assert vr.load(tmp_path / "big.npz").dim == 1500


def test_growing_buffer_is_capped_by_its_count(tmp_path):
    """A history buffer is at most twice its count (it doubles when full), or as built:
    a logistic model's 1024-row buffer saved with 5000 rows for 3 observations is
    refused."""
    eng = vr.Laplace(2, model="logistic", seed=0)
    path = eng.save(tmp_path / "lap.npz")
    kx = _array_key(path, "state", "model", "state", "_X")
    ky = _array_key(path, "state", "model", "state", "_y")

    def grow(h):
        h["arrays"][kx][1] = [5000, 2]
        h["arrays"][ky][1] = [5000]
        h["object"]["state"]["model"]["state"]["n_obs"] = 3

    out = _rewrite(path, tmp_path / "grown.npz", header=grow,
                   members={f"{kx}.npy": _npy(np.zeros((5000, 2))),
                            f"{ky}.npy": _npy(np.zeros(5000))})
    assert "twice its count" in _error(out)


# -- the state's invariants ---------------------------------------------------------------

def _with_array(path, out, where, edit):
    key = _array_key(path, *where)
    with zipfile.ZipFile(path) as z, z.open(f"{key}.npy") as f:
        a = np.lib.format.read_array(f)
    edit(a)
    return _rewrite(path, out, members={f"{key}.npy": _npy(a)})


@pytest.mark.parametrize("case", ["L-nan", "L-zero-pivot", "V-nan", "V-inf"])
def test_non_finite_state_is_refused(lints, tmp_path, case):
    """A NaN in LinTS's Cholesky factor made select return arm 0 every round."""
    field, bad = case.split("-", 1)
    where = ("state", "L") if field == "L" else ("state", "model", "state", "V")
    value = {"nan": np.nan, "inf": np.inf, "zero-pivot": 0.0}[bad]
    out = _with_array(lints, tmp_path / f"{case}.npz", where,
                      lambda a: a.__setitem__((1, 1), value))
    msg = _error(out)
    assert ("not finite" in msg) if bad != "zero-pivot" else ("Cholesky" in msg), msg


@pytest.mark.parametrize("field,value", [("n_obs", -3), ("n_obs", 10 ** 40),
                                         ("sum_r2", -1.0), ("sum_r2", float("inf"))])
def test_inconsistent_counts_are_refused(lints, tmp_path, field, value):
    out = _rewrite(lints, tmp_path / "count.npz",
                   header=_set(lints, "state", "model", "state", field, value))
    assert field in _error(out)


# -- raw exceptions of crafted headers ----------------------------------------------------

def test_crafted_headers_give_one_line_value_errors(lints, tmp_path):
    head = _head(lints)
    deep = json.dumps(head)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    out = _rewrite(lints, tmp_path / "deep.npz", header_text=deep)
    assert "nests deeper" in _error(out)

    def negative_state(h):
        gen = h["object"]["state"]["_rng_sample"]["generator"]["dict"]
        gen["state"]["dict"]["state"] = -1

    out = _rewrite(lints, tmp_path / "gen.npz", header=negative_state)
    assert "random generator state" in _error(out)
    out = _rewrite(lints, tmp_path / "name.npz",
                   header=lambda h: h["object"].update(object=["LinTS"]))
    assert "unknown class" in _error(out)


# -- expect= --------------------------------------------------------------------------------

def test_load_checks_the_expected_class(lints):
    assert type(vr.load(lints, expect=vr.LinTS)) is vr.LinTS
    assert type(vr.load(lints, expect="LinTS")) is vr.LinTS
    assert type(vr.load(lints, expect=vr.inference.GaussianEngine)) is vr.LinTS
    for expect in (vr.VITS, "VITS"):
        msg = _error(lints, expect=expect)
        assert "holds a LinTS, not the VITS expected" in msg
    with pytest.raises(ValueError, match="expect='Nope'"):
        vr.load(lints, expect="Nope")
    with pytest.raises(TypeError, match="expect must be a class"):
        vr.load(lints, expect=3)


# -- save's mode ----------------------------------------------------------------------------

def test_save_respects_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = vr.LinTS(2, seed=0).save(tmp_path / "shared.npz")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
