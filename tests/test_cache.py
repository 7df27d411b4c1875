"""Numba's on-disk cache is invalidated by an edit to *any* kernel source file."""

import types

from numba.core import caching

from vits_ref.config import _KernelsCacheLocator


def _locator(tmp_path, module="vits_ref.kernels.fake"):
    driver = tmp_path / "driver.py"
    driver.write_text("def f():\n    return 1\n")
    (tmp_path / "body.py").write_text("def g():\n    return 2\n")
    code = compile(driver.read_text(), str(driver), "exec")
    ns = {}
    exec(code, ns)
    fn = types.FunctionType(ns["f"].__code__, ns, "f")
    fn.__module__ = module
    return _KernelsCacheLocator.from_function(fn, str(driver))


def test_locator_is_registered_first():
    assert caching.CacheImpl._locator_classes[0] is _KernelsCacheLocator


def test_stamp_changes_when_another_kernel_file_changes(tmp_path):
    loc = _locator(tmp_path)
    before = loc.get_source_stamp()
    assert loc.get_source_stamp() == before  # stable while nothing changes
    (tmp_path / "body.py").write_text("def g():\n    return 3\n")  # edit a callee's file
    assert loc.get_source_stamp() != before


def test_other_modules_use_numba_default_locators(tmp_path):
    assert _locator(tmp_path, module="somebody_else.kernels") is None
