"""Peak memory of ``vits_ref.bandit.simulate`` at the paper's size.

8 runs of T = 1000 rounds, K = 50 arms, d = 20, VITS-II (the fused compiled loop), one
Numba thread. asv's ``peakmem_*`` is the process's peak resident memory, so it includes
the interpreter, NumPy, Numba and the compiled code (``setup`` compiles first).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import vits_ref  # noqa: E402

from .common import TIMEOUT, single_thread  # noqa: E402


class PeakmemSimulate:
    """``simulate("vits-ii", pool(d=20, K=50), n_rounds=1000, n_runs=8)``."""

    timeout = TIMEOUT

    def setup(self):
        single_thread()
        self.env = vits_ref.envs.pool(dim=20, n_arms=50, zeta=0.1, seed=0)
        vits_ref.bandit.simulate("vits-ii", self.env, n_rounds=5, n_runs=1, seed=0)  # compile

    def peakmem_simulate_vits_ii(self):
        vits_ref.bandit.simulate("vits-ii", self.env, n_rounds=1000, n_runs=8, seed=0)
