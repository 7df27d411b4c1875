"""The soak: long fused runs by chunks of rounds.

``TimeSoak.time_soak``: one run of 20 000 rounds (pool environment, d = 20, K = 50, the
documented defaults) of LinTS, VITS-II or LinUCB through ``vits_ref._bench.soak.soak``:
the realisation and the policy's randomness drawn 10 000 rounds at a time (one pass, in
the environment's blocks of rounds), the state read and checked against a fresh
factorisation at rounds 10 000 and 20 000 (per round = time / 20 000; the checks are a
few milliseconds).
``PeakmemSoak.peakmem_simulate_lints_long``: ``simulate("lints", ...)`` over 100 000 rounds,
whose realisation drawn whole would be 880 MB (2.5 GB with the transient copies): chunked
within ``vits_ref.bandit.simulate._MEMORY_BUDGET`` (256 MB), so the peak is the library's
baseline plus at most the budget. The full 1 000 000-round soak is
``python -c "from vits_ref._bench import soak; soak.main()"`` (about 20 minutes).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import vits_ref  # noqa: E402
from vits_ref._bench import soak  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402


class TimeSoak:
    """``soak.soak(policy, n_rounds=20_000, every=10_000)``."""

    params = (soak.POLICIES,)
    param_names = ["policy"]
    timeout = TIMEOUT

    def setup(self, policy):
        single_thread()
        soak.soak(policy, n_rounds=10, every=10)  # compiles (or loads the cache) untimed

    def time_soak(self, policy):
        soak.soak(policy, n_rounds=20_000, every=10_000)


class PeakmemSoak:
    """``simulate("lints", pool(d=20, K=50), n_rounds=100_000)``, chunked by the budget."""

    timeout = TIMEOUT

    def setup(self):
        single_thread()
        self.env = soak.environment()
        vits_ref.bandit.simulate("lints", self.env, n_rounds=5, n_runs=1, seed=0)  # compile

    def peakmem_simulate_lints_long(self):
        vits_ref.bandit.simulate("lints", self.env, n_rounds=100_000, n_runs=1, seed=0)
