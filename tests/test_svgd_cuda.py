"""The SVGD direction's CUDA driver (one thread per particle) against the CPU driver and
the naive NumPy sum, on Numba's CUDA simulator (subprocess: the simulator must be enabled
before Numba is imported) and on a real GPU when one is present. Tiny sizes: the
simulator runs about 150 us per simulated thread."""

import pytest
from conftest import max_diff_under_cuda_simulator

SCRIPT = r'''
import warnings
warnings.simplefilter("ignore")
import numpy as np
from vits_ref.drivers import cpu, cuda as gpu
from vits_ref.reference import svgd as ref

worst = 0.0
rng = np.random.default_rng(0)
for n, d in ((1, 2), (5, 3), (8, 2)):
    X, G = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    for h in (0.0, 0.8):
        for rep in (0.0, 1.0):
            got, h_used = gpu.svgd_phi(X, G, h, rep, threads_per_block=4)
            out = np.empty((n, d))
            h_cpu = cpu.svgd_phi()(X, G, h, rep, False, out, cpu.svgd_scratch(n, d))
            naive = ref.phi_naive(X, G, None if h == 0.0 else h, rep)
            worst = max(worst, abs(h_used - h_cpu), np.abs(got - out).max(),
                        np.abs(got - naive).max())
# n = 93: 4278 pairs, the median's sampling path (more than MEDIAN_DIRECT_MAX = 4096)
X, G = rng.standard_normal((93, 2)), rng.standard_normal((93, 2))
got, h_used = gpu.svgd_phi(X, G, 0.0, 1.0, threads_per_block=32)
worst = max(worst, abs(h_used - ref.median_bandwidth(X)),
            np.abs(got - ref.phi_naive(X, G, None, 1.0)).max())
print("MAXDIFF", worst)
'''

# The same bodies on both sides; the CPU loop form is compiled, the simulator runs them as
# Python (same operations, same order: agreement to rounding, ~1e-16 at these sizes); the
# naive NumPy sum differs by rounding only (see tests/test_svgd.py's TOL).
TOL = 1e-12


def test_svgd_cuda_under_simulator():
    assert max_diff_under_cuda_simulator(SCRIPT) < TOL


def _real_gpu():
    try:
        import numba
        from numba import cuda
    except ImportError:
        return False
    return bool(cuda.is_available()) and not numba.config.ENABLE_CUDASIM


@pytest.mark.skipif(not _real_gpu(), reason="no CUDA GPU (numba.cuda.is_available() is False)")
def test_svgd_cuda_on_gpu():
    import numpy as np

    from vits_ref.drivers import cpu
    from vits_ref.drivers import cuda as gpu

    rng = np.random.default_rng(1)
    X, G = rng.standard_normal((300, 10)), rng.standard_normal((300, 10))
    got, h = gpu.svgd_phi(X, G, 0.0, 1.0)
    out = np.empty((300, 10))
    h_cpu = cpu.svgd_phi()(X, G, 0.0, 1.0, False, out, cpu.svgd_scratch(300, 10))
    assert abs(h - h_cpu) < 1e-12 * h_cpu
    assert np.abs(got - out).max() < TOL
