"""The GPU benchmark (``vits_ref._bench.cuda``): rounds per second on CUDA, the CPU and JAX.

Mirrors ``python -m vits_ref bench --device cuda`` at its ``quick`` size (2048 runs x 20
rounds, d = 20, K = 50): per policy the rounds per second of the numba-cuda device loop,
of the whole CUDA call (copies included) and of the all-core CPU prange, the JAX peer's
for VITS-II and LinTS, and the fraction of the float64 FMA peak for the VITS policies.
Skipped (``NotImplementedError`` in ``setup``, asv's skip) without numba-cuda or a GPU,
and under the CUDA simulator (not a timing).
"""

from vits_ref._bench import cuda as bc

from .common import TIMEOUT

POLICIES = ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-sym", "vits-hf-cv",
            "lmc", "random")


def _rows():
    mode, _ = bc.device_mode()
    if mode != "gpu":
        return None
    return {r["policy"]: r for r in bc.main(quick=True)}


class TrackCudaRounds:
    """Rounds per second (millions) of the fused loop per policy, on one GPU."""

    params = (POLICIES,)
    param_names = ["policy"]
    unit = "M rounds/s"
    timeout = 4 * TIMEOUT

    def setup_cache(self):
        return _rows()

    def setup(self, rows, policy):
        if rows is None:
            raise NotImplementedError("no CUDA GPU (or the simulator): nothing to measure")

    def track_cuda_device(self, rows, policy):
        return rows[policy]["device"] / 1e6

    def track_cuda_call(self, rows, policy):
        return rows[policy]["cuda"] / 1e6

    def track_cpu_prange(self, rows, policy):
        return rows[policy]["cpu"] / 1e6



class TrackCudaJaxPeer:
    """The JAX peer's rounds per second (millions) on the same inputs."""

    params = (("vits-ii", "lints"),)
    param_names = ["policy"]
    unit = "M rounds/s"
    timeout = 4 * TIMEOUT

    def setup_cache(self):
        return _rows()

    def setup(self, rows, policy):
        if rows is None or rows[policy]["jax"] is None:
            raise NotImplementedError("no CUDA GPU, or JAX is not installed")

    def track_jax_peer(self, rows, policy):
        return rows[policy]["jax"] / 1e6


class TrackCudaPeakFraction:
    """Percent of the GPU's float64 FMA peak reached by the VITS rounds' d x d products."""

    params = (tuple(bc.PRODUCTS_PER_STEP),)
    param_names = ["policy"]
    unit = "percent"
    timeout = 4 * TIMEOUT

    def setup_cache(self):
        return _rows()

    def setup(self, rows, policy):
        if rows is None or rows[policy].get("peak_fraction") is None:
            raise NotImplementedError("no CUDA GPU, or its float64 peak is not documented")

    def track_fp64_peak_percent(self, rows, policy):
        return 100.0 * rows[policy]["peak_fraction"]
