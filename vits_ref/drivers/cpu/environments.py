"""Environments' round builders: the NumPy realisation's features in one compiled pass.

A block of rounds drawn by NumPy (:mod:`vits_ref.envs.rounds`) is built here where
NumPy would pass over the drawn numbers several times: :func:`pool_block` builds the pool
environment's features in place on the drawn normals with the kernel body of the
counter-based round (:func:`vits_ref.kernels.bandit_streams.pool_contexts`), so both ways
of drawing a round build it by the same formula. Module-level, built by
:func:`vits_ref.config.stamped`.
"""

from ...config import cpu_jit, stamped
from ...kernels.bandit_streams import pool_contexts


@stamped
def pool_block(stamp):
    @cpu_jit
    def pool_block(pool, zeta, idx, X):
        """``X[t, a] = zeta X[t, a] + pool[idx[t, a]]`` in place for every round ``t`` of
        the block: ``pool`` (P, d), ``idx`` (n, K) int64 in ``[0, P)`` (not checked: the
        drawn indices are), ``X`` (n, K, d) the drawn normals."""
        _ = stamp
        for t in range(X.shape[0]):
            pool_contexts(pool, zeta, idx[t], X[t])

    return pool_block
