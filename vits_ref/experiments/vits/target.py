"""Gaussian targets with a controlled condition number (VITS paper appendices F and I)."""

import numpy as np

from ...kernels.target import METHOD_LMC
from ...kernels.vits import VARIANT_HF, VARIANT_I, VARIANT_II

#: label -> (kernel method code, Monte Carlo draws per step)
METHODS = {"LMC": (METHOD_LMC, 1), "VI-I": (VARIANT_I, 1), "VI-II": (VARIANT_II, 1),
           "VI-II HF (20 draws)": (VARIANT_HF, 20)}


def gaussian_target(dim, kappa, rng):
    """``(P, P m*, m*)``: precision with eigenvalues log-spaced in ``[1, kappa]``, random
    eigenvectors, mean ``m* ~ N(0, I)``; the covariance's condition number is ``kappa``."""
    Q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    lam = np.geomspace(1.0, kappa, dim)
    P = (Q * lam) @ Q.T
    P = 0.5 * (P + P.T)
    m = rng.standard_normal(dim)
    return P, P @ m, m


def run_seeds(root, n):
    """``n`` 63-bit integer seeds for Numba's generator, derived from a SeedSequence."""
    return np.array([int(s.generate_state(1, np.uint64)[0] >> np.uint64(1))
                     for s in root.spawn(n)], dtype=np.int64)
