"""Run at the start-up of every Python process a test starts (``tests/conftest.py`` puts
this folder on its ``PYTHONPATH``): install the test session's compile lock
(``tests/numba_session.py``), so that a subprocess waits for a worker compiling the same
cached function and loads it from the cache instead of compiling it a second time."""

import importlib.util
import os

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "numba_session.py")
_spec = importlib.util.spec_from_file_location("vits_ref_tests_numba_session", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
_module.install_compile_lock()
