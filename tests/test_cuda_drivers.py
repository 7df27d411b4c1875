"""The shipped CUDA drivers run the library's bodies and match the CPU drivers.

``tests/cuda_driver_check.py`` launches every CUDA driver of ``vits_ref.drivers.cuda`` (the
fused bandit loop for every policy's piece; VITS, Langevin and Newton steps on the linear
and logistic potentials) and compares with ``vits_ref.drivers.cpu``. On CI it runs under
Numba's CUDA simulator (the simulator must be enabled before Numba is imported, hence the
subprocess); on a machine with a GPU the second test runs it on the device.
"""

import os
import runpy

from conftest import max_diff_under_cuda_simulator, requires_gpu

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "cuda_driver_check.py")

# Same bodies, same numbers: the CPU drivers call BLAS for the products and LAPACK for
# VITS-I's inverse, CUDA runs the loops of kernels/linalg.py (another summation order),
# so the drivers agree to the rounding accumulated over a few steps at d = 3 (~1e-15).
TOL = 1e-10


def test_cuda_drivers_under_simulator():
    worst = max_diff_under_cuda_simulator(open(SCRIPT).read())
    assert worst < TOL


@requires_gpu
def test_cuda_drivers_on_gpu(capsys):
    runpy.run_path(SCRIPT, run_name="__main__")
    worst = float(capsys.readouterr().out.split("MAXDIFF")[1])
    assert worst < TOL
