"""``config.check_cuda_stack``: numba-cuda <= 0.30.4 cannot load its CUDA target on numpy 2.5."""

import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

from vits_ref import config


def _versions(monkeypatch, **installed):
    def version(name):
        try:
            return installed[name]
        except KeyError:
            raise metadata.PackageNotFoundError(name) from None

    monkeypatch.setattr(config.metadata, "version", version)


@pytest.mark.parametrize("numpy_version, numba_cuda_version", [
    ("2.5.0", "0.30.4"), ("2.5.0rc1", "0.30.4"), ("2.6.1", "0.20.0"), ("3.0.0", "0.30.3"),
    ("2.5.0", "0.30.4.dev0")])
def test_broken_pair_raises(monkeypatch, numpy_version, numba_cuda_version):
    _versions(monkeypatch, **{"numpy": numpy_version, "numba-cuda": numba_cuda_version})
    with pytest.raises(ImportError) as info:
        config.check_cuda_stack()
    message = str(info.value)
    assert "\n" not in message
    assert numpy_version in message and numba_cuda_version in message
    assert 'pip install "numpy<2.5"' in message


@pytest.mark.parametrize("numpy_version, numba_cuda_version", [
    ("2.4.6", "0.30.4"), ("1.26.4", "0.20.0"), ("2.5.0", "0.30.5"), ("2.5.0", "0.31.0"),
    ("2.5.0", "1.0.0")])
def test_working_pair_passes(monkeypatch, numpy_version, numba_cuda_version):
    _versions(monkeypatch, **{"numpy": numpy_version, "numba-cuda": numba_cuda_version})
    assert config.check_cuda_stack() is None


def test_without_numba_cuda_passes(monkeypatch):
    _versions(monkeypatch, numpy="2.5.0")
    assert config.check_cuda_stack() is None


def test_installed_stack_and_no_cuda_import():
    """On this install: runs, and imports neither ``numba.cuda`` nor ``numba_cuda``."""
    script = textwrap.dedent("""
        import sys
        from vits_ref.config import check_cuda_stack

        def cuda_modules():
            return {m for m in sys.modules if m.startswith(("numba.cuda", "numba_cuda"))}

        before = cuda_modules()
        try:
            check_cuda_stack()
        except ImportError as exc:
            print("BROKEN", exc)
        print(sorted(cuda_modules() - before))
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.splitlines()[-1] == "[]"
