"""Gaussian targets with a controlled condition number (VITS paper appendices F and I).

The paper states the targets' condition number but not their scale. The default here
(``scale="covariance"``) gives the covariance ``Sigma*`` eigenvalues log-spaced in
``[1, kappa]``, so the precision ``P = inv(Sigma*)`` has its eigenvalues in
``[1/kappa, 1]`` and ``lmax(P) = 1`` for every ``kappa``: the paper's absolute step sizes
(0.001, 0.01, 0.1) are then all stable (the square-root recursion of VITS needs
``h lmax(P) < 1``, Langevin ``h lmax(P) < 2``) and mean the same thing at every condition
number. ``scale="precision"`` is the convention used before (precision eigenvalues in
``[1, kappa]``), kept for the recorded golden outputs.
"""

import numpy as np

from ...kernels.target import METHOD_LMC
from ...kernels.vits import VARIANT_HF, VARIANT_I, VARIANT_II

#: label -> (kernel method code, Monte Carlo draws per step)
METHODS = {"LMC": (METHOD_LMC, 1), "VI-I": (VARIANT_I, 1), "VI-II": (VARIANT_II, 1),
           "VI-II HF (20 draws)": (VARIANT_HF, 20)}

#: Sigma* has eigenvalues log-spaced in [1, kappa]; lmax(P) = 1 (the default)
SCALE_COVARIANCE = "covariance"
#: P has eigenvalues log-spaced in [1, kappa] (the library's earlier convention)
SCALE_PRECISION = "precision"
SCALES = (SCALE_COVARIANCE, SCALE_PRECISION)

#: What each scale means, for the experiments' JSON summaries and plot titles
SCALE_DESCRIPTIONS = {
    SCALE_COVARIANCE: "Sigma* eigenvalues log-spaced in [1, kappa], lmax(P) = 1",
    SCALE_PRECISION: "P eigenvalues log-spaced in [1, kappa], lmax(P) = kappa",
}


def gaussian_target(dim, kappa, rng, scale=SCALE_COVARIANCE):
    """A Gaussian target ``N(m*, Sigma*)`` with condition number ``kappa``.

    Parameters
    ----------
    dim : int
        Dimension ``d``.
    kappa : float
        Condition number of ``Sigma*`` (and of ``P``), ``>= 1``.
    rng : numpy.random.Generator
        Draws the eigenvectors (QR of a ``d x d`` standard normal matrix), then
        ``m* ~ N(0, I)``, in this order whatever ``scale``.
    scale : {"covariance", "precision"}, default "covariance"
        ``"covariance"``: ``Sigma*`` has eigenvalues log-spaced in ``[1, kappa]``, so
        ``P`` has them in ``[1/kappa, 1]`` and ``lmax(P) = 1``: an absolute step ``h < 1``
        is stable for VITS at every ``kappa`` and comparable across ``kappa`` (the paper's
        steps 0.001, 0.01, 0.1). ``"precision"``: ``P`` has eigenvalues log-spaced in
        ``[1, kappa]`` (the earlier convention; bit-identical to it for the same ``rng``).

    Returns
    -------
    P : (d, d) ndarray
        The precision ``inv(Sigma*)``, symmetric.
    Pm : (d,) ndarray
        ``P m*`` (the linear potential's linear term).
    m : (d,) ndarray
        The mean ``m*``.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    Q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    lam = np.geomspace(1.0, kappa, dim)
    if scale == SCALE_COVARIANCE:
        lam = 1.0 / lam
    P = (Q * lam) @ Q.T
    P = 0.5 * (P + P.T)
    m = rng.standard_normal(dim)
    return P, P @ m, m


def run_seeds(root, n):
    """``n`` 63-bit integer seeds for Numba's generator, derived from a SeedSequence."""
    return np.array([int(s.generate_state(1, np.uint64)[0] >> np.uint64(1))
                     for s in root.spawn(n)], dtype=np.int64)
