"""The learned diffusion prior: reverse chain, one training epoch, one DiffTS round.

The problems of ``vits_ref._bench.diffusion``: a :class:`vits_ref.diffusion.DiffusionPrior`
with ``T = 100`` stages, ``d = 2``, hidden (32, 32), briefly fitted in ``setup`` (the
weights' values do not change the cost). ``TimeReverseChain``: the compiled plain reverse
chain (``prange`` over draws; one Numba thread here) for 1 and 1000 draws against the same
chain in NumPy vectorised over the draws, same normals. ``TimeTrainingEpoch``: one epoch of
every stage (N = 2000 samples, batch 128), compiled (``prange`` over stages) against
NumPy, same permutations and noise. ``TimeDiffTSRound``: one linear LaplaceDPS draw of
:class:`vits_ref.DiffTS` (20 observations) against the NumPy reference chain; skipped when
the engine is missing. ``TrackDiffusionRatios``: NumPy / compiled from interleaved medians
in one process.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vits_ref._bench import diffusion as bd  # noqa: E402
from vits_ref.diffusion import chain  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402

N_TRAIN = 2000


class TimeReverseChain:
    """Prior draws by the reverse chain (T = 100), compiled and NumPy."""

    params = ((1, 1000),)
    param_names = ["n_draws"]
    timeout = TIMEOUT

    def setup(self, n_draws):
        single_thread()
        p = bd.prior()
        z = chain.normals(p, n_draws, seed=2)
        self.compiled, self.reference = bd.ChainCompiled(p, z), bd.ChainNumpy(p, z)
        self.compiled()  # compiles (or loads the cache) untimed

    def time_compiled(self, n_draws):
        """:func:`vits_ref.diffusion.chain.reverse_chain` with the MLP bodies."""
        self.compiled()

    def time_reference(self, n_draws):
        """:func:`vits_ref.reference.ddpm.reverse_chain`, vectorised over the draws."""
        self.reference()


class TimeTrainingEpoch:
    """One training epoch of the 100 stages' networks (N = 2000, batch 128)."""

    timeout = TIMEOUT

    def setup(self):
        single_thread()
        inputs = bd.epoch_inputs(bd.prior(), N_TRAIN)
        self.compiled, self.reference = bd.EpochCompiled(inputs), bd.EpochNumpy(inputs)
        self.compiled()

    def time_compiled(self):
        """:func:`vits_ref.drivers.cpu.ddpm_train_epoch` (prange over stages)."""
        self.compiled()

    def time_reference(self):
        """:func:`vits_ref.reference.ddpm.train_epoch`."""
        self.reference()


class TimeDiffTSRound:
    """One Thompson draw of DiffTS (linear LaplaceDPS, 20 observations)."""

    timeout = TIMEOUT

    def setup(self):
        import vits_ref

        if not hasattr(vits_ref, "DiffTS"):
            raise NotImplementedError("vits_ref.DiffTS is not available in this build")
        single_thread()
        eng = bd.diffts_engine(bd.prior())
        self.compiled, self.reference = bd.DiffTSRound(eng), bd.DiffTSRoundNumpy(eng)
        self.compiled()

    def time_compiled(self):
        """``DiffTS.sample(1)``: the compiled LaplaceDPS chain, normals included."""
        self.compiled()

    def time_reference(self):
        """:func:`vits_ref.reference.diffusion.laplace_linear` with the NumPy network."""
        self.reference()


class TrackDiffusionRatios:
    """NumPy / compiled: chain (1 and 1000 draws), training epoch, DiffTS round."""

    timeout = TIMEOUT

    def setup_cache(self):
        single_thread()
        import vits_ref

        p = bd.prior()
        out = {"chain_1": bd.chain_stats(p, 1, 21)["ratio"],
               "chain_1000": bd.chain_stats(p, 1000, 7)["ratio"],
               "epoch": bd.epoch_stats(p, N_TRAIN, 3)["ratio"]}
        out["diffts"] = (bd.diffts_stats(p, 11)["ratio"] if hasattr(vits_ref, "DiffTS")
                         else float("nan"))
        return out

    def track_ratio_chain_one_draw(self, stats):
        return stats["chain_1"]

    track_ratio_chain_one_draw.unit = "ratio"

    def track_ratio_chain_1000_draws(self, stats):
        return stats["chain_1000"]

    track_ratio_chain_1000_draws.unit = "ratio"

    def track_ratio_training_epoch(self, stats):
        return stats["epoch"]

    track_ratio_training_epoch.unit = "ratio"

    def track_ratio_diffts_round(self, stats):
        if not np.isfinite(stats["diffts"]):
            raise NotImplementedError("vits_ref.DiffTS is not available in this build")
        return stats["diffts"]

    track_ratio_diffts_round.unit = "ratio"
