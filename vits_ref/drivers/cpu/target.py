"""KL traces on Gaussian targets (the VITS paper's figures F and I): VITS and LMC from the
standard start on a fixed Gaussian target, the KL to it recorded after every step
(:mod:`vits_ref.kernels.target`). Module-level drivers, built by
:func:`vits_ref.config.stamped`.
"""

import numpy as np
from numba import prange

from ...config import cpu_jit, stamped
from ...kernels.target import METHOD_LMC, lmc_block, vi_block


@stamped
def trace_one(stamp):
    @cpu_jit
    def trace_one(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl, seed, record):
        """KL after each of up to ``n_steps`` steps of one method from the standard start.

        VITS starts at ``N(0, I)`` (``B = C = I``), LMC at ``theta = 0``. Stops early once the
        KL is ``<= eps_kl`` (pass 0 to run all steps). Normals come from Numba's generator
        seeded with ``seed`` in blocks of 1000 steps (deterministic per call, whatever the
        thread). Returns the number of steps recorded.
        """
        _ = stamp
        np.random.seed(seed)  # noqa: NPY002 - Numba's per-thread generator, seeded per run
        d = P.shape[0]
        M = n_mc if method != METHOD_LMC else 1
        block = 1000
        mu = np.zeros(d)
        B = np.eye(d)
        C = np.eye(d)
        scr = (np.empty((6, d, d)), np.empty((d, 2 * d)), np.empty((M, d)), np.empty((M, d)),
               np.empty((M, d)), np.zeros((2, d)))
        kscr = (np.empty((d, d)), np.empty((d, d)), np.empty((d, d)), np.empty(d))
        grad = np.empty(d)
        moments = (np.zeros(d), np.zeros((d, d)), np.empty((d, d)))
        done = 0
        while done < n_steps:
            n = min(block, n_steps - done)
            eps = np.random.standard_normal((n, M, d))  # noqa: NPY002
            rec = record[done:done + n]
            if method == METHOD_LMC:
                got = lmc_block(mu, P, Pm, h, eps, done, burn_in, moments, rec, grad, kscr)
            else:
                got = vi_block(method, symmetrize, mu, B, C, P, Pm, h, eps, rec, scr, kscr)
            if got < n:
                return done + got
            if eps_kl > 0.0:
                for s in range(n):
                    if rec[s] <= eps_kl:
                        return done + s + 1
            done += n
        return done

    return trace_one


@stamped
def trace_many(stamp):
    @cpu_jit(parallel=True)
    def trace_many(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl, seeds, records,
                   counts):
        """``prange`` over seeds (one run per iteration; result independent of threads)."""
        _ = stamp
        for r in prange(seeds.shape[0]):
            counts[r] = trace_one(method, symmetrize, P, Pm, h, n_mc, n_steps, burn_in, eps_kl,
                                  seeds[r], records[r])

    return trace_many
