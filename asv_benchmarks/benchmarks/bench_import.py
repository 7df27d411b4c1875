"""Start-up costs, measured in fresh interpreters (``sys.executable``), in seconds.

``track_import_time``: ``import vits_ref`` (timed inside the subprocess, so the
interpreter's own start-up is excluded), median of 3. ``track_first_fused_call``: the
first call of the fused loop in a fresh process with a warm Numba cache (a first
subprocess fills the cache), median of 3.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

from .common import TIMEOUT  # noqa: E402

_IMPORT = ("import time; t = time.perf_counter(); import vits_ref; "
           "print(time.perf_counter() - t)")
_FIRST_CALL = ("import time; from vits_ref._bench import linear; "
               "s, (r,) = linear.problem('vits-ii', n_rounds=5); "
               "t = time.perf_counter(); linear.run_compiled(s, r); "
               "print(time.perf_counter() - t)")


def _seconds(code):
    env = {**os.environ, "VITS_REF_CACHE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    return float(out.stdout.split()[-1])


class TrackStartup:
    unit = "seconds"
    # track_first_fused_call compiles the VITS-II fused loop cold in a fresh environment
    # (asv builds and installs a wheel, whose copy has its own Numba cache) before it
    # measures: that alone passed 300 s on a loaded 2-core machine
    timeout = 3 * TIMEOUT

    def track_import_time(self):
        return float(np.median([_seconds(_IMPORT) for _ in range(3)]))

    def track_first_fused_call(self):
        _seconds(_FIRST_CALL)  # fill the cache if it is cold
        return float(np.median([_seconds(_FIRST_CALL) for _ in range(3)]))
