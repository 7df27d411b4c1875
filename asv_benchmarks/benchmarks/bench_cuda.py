"""The GPU benchmark (``vits_ref._bench.cuda``): rounds per second on CUDA, the CPU and JAX.

Mirrors ``python -m vits_ref bench --device cuda`` at its ``quick`` size (2048 runs x 20
rounds, d = 20, K = 50), measured once (``setup_cache``) and reported per policy and
figure:

- ``device``: the numba-cuda device loop, in M rounds/s;
- ``call``: the whole CUDA call with its copies, in M rounds/s;
- ``cpu``: the all-core CPU prange, in M rounds/s;
- ``jax``: the JAX peer (VITS-II and LinTS), in M rounds/s;
- ``peak_percent``: the percent of the float64 FMA peak (VITS policies);
- ``block``: the device loop in the block-per-run layout (VITS policies), in M rounds/s;
- ``philox``: ``simulate(..., device="cuda", stream="philox")`` end to end (device-side
  streams, layout by size), in M rounds/s.

The rows ``vits-ii/logistic``, ``lmc/logistic`` and ``laplace/logistic`` are the logistic
model's pieces on appendix G's hard instance (d = K = 10, one run per thread:
``bc.measure_logistic``), with ``device``, ``call`` and ``cpu`` figures only.

A combination that does not exist (a JAX figure for LinUCB, a peak for LinTS) is
skipped. Everything is skipped (``NotImplementedError`` in ``setup``, asv's skip) without
numba-cuda or a GPU, and under the CUDA simulator (not a timing).
"""

from vits_ref._bench import cuda as bc

from .common import TIMEOUT

POLICIES = ("lints", "linucb", "vits-i", "vits-ii", "vits-hf", "vits-hf-sym", "vits-hf-cv",
            "lmc", "random") + tuple(name for _, name in bc.LOGISTIC_POLICIES)
#: figure -> its path in a row of ``bc.main``
FIGURES = {"device": ("device",), "call": ("cuda",), "cpu": ("cpu",), "jax": ("jax",),
           "peak_percent": ("peak_fraction",), "block": ("block", "device"),
           "philox": ("streams", "rate")}


def _figure(row, figure):
    value = row
    for key in FIGURES[figure]:
        value = None if value is None else value.get(key)
    return value


class TrackCuda:
    """One figure of one policy from a single quick run of the GPU benchmark."""

    params = (POLICIES, tuple(FIGURES))
    param_names = ["policy", "figure"]
    unit = "M rounds/s (peak_percent: percent)"
    timeout = 4 * TIMEOUT

    def setup_cache(self):
        mode, _ = bc.device_mode()
        if mode != "gpu":
            return None
        return {r["policy"]: r for r in bc.main(quick=True)}

    def setup(self, rows, policy, figure):
        if rows is None:
            raise NotImplementedError("no CUDA GPU (or the simulator): nothing to measure")
        if _figure(rows[policy], figure) is None:
            raise NotImplementedError(f"no {figure} figure for {policy}")

    def track_rounds(self, rows, policy, figure):
        value = _figure(rows[policy], figure)
        return 100.0 * value if figure == "peak_percent" else value / 1e6
