"""Numba's on-disk cache: stamped with *every* kernel source, stored where Numba would.

A cached kernel, driver or ``vits_ref.gaussian.special`` ufunc is invalidated by an edit of any
kernel, driver, ``special.py`` or ``config.py`` source (bodies are inlined across
files). Its directory is chosen as Numba chooses it: ``NUMBA_CACHE_DIR`` if set, else
``__pycache__`` next to the source if writable, else the user-wide cache directory.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import types

import pytest
from numba.core import caching
from numba.core import config as numba_config

from vits_ref import config
from vits_ref.config import (
    _KernelsCacheLocator,
    _StampedInTreeLocator,
    _StampedUserProvidedLocator,
    _StampedUserWideLocator,
)

# ---------------------------------------------------------------------------------------
# in-process: which functions are stamped, with what, and which directory is chosen


def _function(path, module, src="def f():\n    return 1\n", name="f"):
    """A function defined in file ``path`` whose ``__module__`` is ``module``."""
    path.write_text(src)
    ns = {"__name__": module}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    fn = ns[name]
    assert fn.__module__ == module
    return fn


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A fake source set: kernels/*.py, drivers/*.py, special.py, config.py."""
    kernels, drivers = tmp_path / "kernels", tmp_path / "drivers"
    kernels.mkdir()
    drivers.mkdir()
    (kernels / "linalg.py").write_text("def body():\n    return 2\n")
    (kernels / "README.txt").write_text("not a source\n")
    (drivers / "cpu.py").write_text("def driver():\n    return 3\n")
    (tmp_path / "special.py").write_text("def ufunc():\n    return 4\n")
    (tmp_path / "config.py").write_text("FASTMATH = False\n")
    monkeypatch.setattr(config, "_stamp_sources", lambda: (
        [str(kernels), str(drivers)], [str(tmp_path / "special.py"), str(tmp_path / "config.py")]))
    monkeypatch.setattr(numba_config, "CACHE_DIR", "")
    return tmp_path


def test_locator_is_registered_first():
    assert caching.CacheImpl._locator_classes[0] is _KernelsCacheLocator


@pytest.mark.parametrize("module, stamped", [
    ("vits_ref.kernels", True), ("vits_ref.kernels.bandit", True),
    ("vits_ref.drivers", True), ("vits_ref.drivers.cpu", True), ("vits_ref.drivers.cuda", True),
    ("vits_ref.gaussian.special", True),
    ("vits_ref.kernelsx", False), ("vits_ref.special_x", False), ("vits_ref.inference.vits", False),
    ("vits_ref", False), ("somebody_else.kernels", False), ("", False)])
def test_stamped_modules(sources, module, stamped):
    fn = _function(sources / "kernels" / "linalg.py", module)
    loc = _KernelsCacheLocator.from_function(fn, str(sources / "kernels" / "linalg.py"))
    assert (loc is not None) is stamped


def test_stamp_covers_every_source_wherever_the_function_lives(sources):
    kernel = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg")
    driver = _function(sources / "drivers" / "cpu.py", "vits_ref.drivers.cpu")
    ufunc = _function(sources / "special.py", "vits_ref.gaussian.special")
    locs = [_KernelsCacheLocator.from_function(fn, fn.__code__.co_filename)
            for fn in (kernel, driver, ufunc)]
    before = locs[0].get_source_stamp()
    assert [loc.get_source_stamp() for loc in locs] == [before] * 3  # one stamp for all
    stamps = {before}
    for edit in ("kernels/linalg.py", "drivers/cpu.py", "special.py", "config.py"):
        with open(sources / edit, "a") as fh:
            fh.write("# edited\n")
        now = [loc.get_source_stamp() for loc in locs]
        assert len(set(now)) == 1 and now[0] not in stamps, edit
        stamps.add(now[0])
    (sources / "drivers" / "cuda.py").write_text("X = 1\n")  # a new driver file
    assert locs[1].get_source_stamp() not in stamps
    stamps.add(locs[1].get_source_stamp())
    (sources / "kernels" / "README.txt").write_text("still not a source\n")
    assert locs[2].get_source_stamp() in stamps


def test_stamp_without_a_drivers_folder(sources):
    shutil.rmtree(sources / "drivers")
    fn = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg")
    loc = _KernelsCacheLocator.from_function(fn, fn.__code__.co_filename)
    before = loc.get_source_stamp()
    (sources / "kernels" / "linalg.py").write_text("def body():\n    return 5\n")
    assert loc.get_source_stamp() != before


def test_closures_from_kernel_factories_are_stamped(sources):
    src = textwrap.dedent("""
        def make_step(scale):
            def step(x):
                return scale * x
            return step
    """)
    factory = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg", src,
                        "make_step")
    step = factory(2.0)
    assert step.__closure__ and step.__module__ == "vits_ref.kernels.linalg"
    loc = _KernelsCacheLocator.from_function(step, step.__code__.co_filename)
    assert isinstance(loc, _StampedInTreeLocator)
    assert loc.get_disambiguator() == str(step.__code__.co_firstlineno)


def test_real_source_set():
    import vits_ref.kernels

    folders, files = config._stamp_sources()
    here = os.path.dirname(os.path.abspath(config.__file__))
    assert folders[0] == os.path.dirname(os.path.abspath(vits_ref.kernels.__file__))
    assert os.path.join(here, "drivers") in folders
    assert files == [os.path.join(here, "special.py"), os.path.abspath(config.__file__)]


def _deny(*denied):
    """A writability probe (``ensure_cache_path``) that fails under ``denied`` dirs."""
    real = caching._CacheLocator.ensure_cache_path

    def ensure_cache_path(self):
        if any(self.get_cache_path().startswith(str(d)) for d in denied):
            raise PermissionError(f"read-only: {self.get_cache_path()}")
        return real(self)

    return ensure_cache_path


def test_in_tree_when_writable_and_no_cache_dir(sources):
    fn = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg")
    loc = _KernelsCacheLocator.from_function(fn, fn.__code__.co_filename)
    assert isinstance(loc, _StampedInTreeLocator)
    assert loc.get_cache_path() == str(sources / "kernels" / "__pycache__")


def test_numba_cache_dir_wins(sources, tmp_path_factory, monkeypatch):
    cache_dir = tmp_path_factory.mktemp("numba_cache_dir")
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(cache_dir))
    fn = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg")
    loc = _KernelsCacheLocator.from_function(fn, fn.__code__.co_filename)
    assert isinstance(loc, _StampedUserProvidedLocator)
    assert loc.get_cache_path().startswith(str(cache_dir) + os.sep)
    assert not (sources / "kernels" / "__pycache__").exists()


def test_unwritable_cache_dir_falls_back_like_numba(sources, tmp_path_factory, monkeypatch):
    cache_dir = tmp_path_factory.mktemp("numba_cache_dir")
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", _deny(cache_dir))
    fn = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg")
    assert isinstance(_KernelsCacheLocator.from_function(fn, fn.__code__.co_filename),
                      _StampedInTreeLocator)


def test_read_only_tree_falls_back_to_user_wide_dir(sources, tmp_path_factory, monkeypatch):
    xdg = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", _deny(sources))
    fn = _function(sources / "kernels" / "linalg.py", "vits_ref.kernels.linalg")
    loc = _KernelsCacheLocator.from_function(fn, fn.__code__.co_filename)
    assert isinstance(loc, _StampedUserWideLocator)
    assert loc.get_cache_path().startswith(str(xdg / "numba") + os.sep)
    assert loc.get_source_stamp() == _StampedInTreeLocator(fn, fn.__code__.co_filename) \
        .get_source_stamp()  # the same all-sources stamp in every directory
    # nothing writable at all: left to Numba's own locators (which then fail alike)
    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", _deny(sources, xdg))
    assert _KernelsCacheLocator.from_function(fn, fn.__code__.co_filename) is None


def test_sources_that_are_no_file_are_left_to_numba(sources):
    fn = types.FunctionType(compile("def f():\n    return 1\n", "<string>", "exec").co_consts[0],
                            {"__name__": "vits_ref.kernels.fake"})
    assert _KernelsCacheLocator.from_function(fn, "<string>") is None


# ---------------------------------------------------------------------------------------
# subprocesses: where a real run puts its index files

SCRIPT = textwrap.dedent("""
    import importlib, importlib.util, json, os, sys, types
    import numpy as np
    from numba.core import caching

    denied = os.environ.get("VITS_REF_TEST_DENY_WRITES")
    if denied:  # emulate a read-only tree where chmod cannot (root): fail the probe
        _real = caching._CacheLocator.ensure_cache_path

        def _ensure(self):
            if self.get_cache_path().startswith(denied):
                raise PermissionError("read-only: " + self.get_cache_path())
            return _real(self)

        caching._CacheLocator.ensure_cache_path = _ensure

    mode = "package"
    try:
        import vits_ref  # noqa: F401
    except ImportError:
        # the package's __init__ is broken by unrelated work: the cache needs only
        # config, special and the kernels, so load them under a bare parent package
        mode = "isolated"
        spec = importlib.util.find_spec("vits_ref")
        pkg = types.ModuleType("vits_ref")
        pkg.__spec__, pkg.__file__ = spec, spec.origin
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["vits_ref"] = pkg

    import vits_ref.config
    import vits_ref.kernels
    from vits_ref.kernels import scalars
    from vits_ref.gaussian.special import residual, sigmoid

    assert float(sigmoid(0.0)) == 0.5 and float(residual(0.0, 1.0)) == -0.5

    def where(py_func):
        loc = caching.FunctionCache(py_func)._impl.locator
        return [type(loc).__name__, loc.get_cache_path()]

    out = {"mode": mode, "config": vits_ref.config.__file__, "kernels": vits_ref.kernels.__file__,
           "sigmoid": where(scalars.sigmoid), "driver": None}
    # a compiled driver too, wherever the restructuring has put it
    for name, attr in (("vits_ref.drivers.cpu", "chol_update_rows"),
                       ("vits_ref.drivers.cpu", "chol_update_rows_cpu"),
                       ("vits_ref.drivers.cpu", "chol_update_rows")):
        try:
            fn = getattr(importlib.import_module(name), attr)
        except (ImportError, AttributeError):
            continue
        L = np.eye(2)
        fn(L, np.array([[1.0, 0.5]]))
        assert np.isfinite(L).all() and L[0, 0] > 1.0
        out["driver"] = [name + "." + attr] + where(fn.py_func)
        break
    print("RESULT " + json.dumps(out))
""")


def _run(cwd, env_updates, *, drop=()):
    """Run SCRIPT in ``cwd`` (``python -c`` puts it first on the path: never the repo)."""
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith("NUMBA_") and k != "VITS_REF_CACHE"}
    env.update(env_updates)
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _index_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, files in os.walk(root) for f in files if f.endswith(".nbi"))


def _source_dirs():
    import vits_ref.kernels

    pkg = os.path.dirname(os.path.abspath(config.__file__))
    return pkg, os.path.dirname(os.path.abspath(vits_ref.kernels.__file__))


def _in_tree_index_files(dirs):
    """``{path: mtime}`` of every index file in the source tree."""
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for root in dirs for d, _, files in os.walk(root) for f in files
            if f.endswith(".nbi")}


def _expected(names, index_files):
    """Every name in ``names`` is part of an index file's name (``scalars.sigmoid-``)."""
    base = [os.path.basename(f) for f in index_files]
    for name in names:
        assert any(name in b for b in base), (name, base)


def test_numba_cache_dir_is_respected(tmp_path):
    cache_dir = tmp_path / "numba_cache"
    src_dirs = _source_dirs()
    before = _in_tree_index_files(src_dirs)
    out = _run(tmp_path, {"NUMBA_CACHE_DIR": str(cache_dir)})
    after = _in_tree_index_files(src_dirs)
    assert out["sigmoid"][0] == "_StampedUserProvidedLocator"
    assert out["sigmoid"][1].startswith(str(cache_dir) + os.sep)
    written = _index_files(cache_dir)
    _expected(["scalars.sigmoid-", "special.residual-"], written)
    if out["driver"] is not None:
        assert out["driver"][1] == "_StampedUserProvidedLocator"
        assert out["driver"][2].startswith(str(cache_dir) + os.sep)
        _expected(["." + out["driver"][0].rsplit(".", 1)[1] + "-"], written)
    # none of the run's index files was created or rewritten in the source tree (other
    # index files are ignored: a concurrent run elsewhere may write its own)
    names = {os.path.basename(f) for f in written}
    changed = sorted(p for p, mtime in after.items()
                     if os.path.basename(p) in names and before.get(p) != mtime)
    assert not changed


def _set_read_only(root, read_only):
    for d, _, files in os.walk(root):
        for f in files:
            os.chmod(os.path.join(d, f), 0o444 if read_only else 0o644)
        os.chmod(d, 0o555 if read_only else 0o755)


def test_read_only_install_caches_in_user_wide_dir(tmp_path):
    pkg, kernels = _source_dirs()
    site = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc")
    shutil.copytree(pkg, site / "vits_ref", ignore=ignore)
    if not os.path.exists(site / "vits_ref" / "kernels"):
        shutil.copytree(kernels, site / "vits_ref" / "kernels", ignore=ignore)
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    _set_read_only(site, True)
    try:
        env = {"PYTHONPATH": str(site), "HOME": str(home), "XDG_CACHE_HOME": str(xdg)}
        if os.access(site / "vits_ref", os.W_OK):  # root: chmod does not stop writes
            env["VITS_REF_TEST_DENY_WRITES"] = str(site)
        out = _run(tmp_path, env, drop=("PYTHONPATH",))
    finally:
        _set_read_only(site, False)
    assert out["config"] == str(site / "vits_ref" / "config.py")
    assert out["kernels"].startswith(str(site / "vits_ref" / "kernels") + os.sep)
    assert out["sigmoid"][0] == "_StampedUserWideLocator"
    assert out["sigmoid"][1].startswith(str(xdg / "numba") + os.sep)
    written = _index_files(xdg)
    _expected(["scalars.sigmoid-", "special.residual-"], written)
    if out["driver"] is not None:
        assert out["driver"][1] == "_StampedUserWideLocator"
        _expected(["." + out["driver"][0].rsplit(".", 1)[1] + "-"], written)
    assert _index_files(site) == []
    assert not [d for d, _, _ in os.walk(site) if d.endswith("__pycache__")
                and any(f.endswith((".nbi", ".nbc")) for f in os.listdir(d))]
