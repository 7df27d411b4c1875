"""The engines' steps: VITS, Langevin, Newton (Laplace/IRLS), and the exact linear ones
(LinTS's Cholesky factor and draws, LinUCB's inverse and scores).

The steps generic over a potential are built per (step, potential): :func:`vits_steps`
and :func:`langevin_steps` compile the step bodies of
:func:`vits_ref.kernels.vits.make_vits_steps` and
:func:`vits_ref.kernels.langevin.make_langevin_steps` as they are (rows of
:func:`._forward.potential_driver`); :func:`newton` allocates the iteration's buffers
around :func:`vits_ref.kernels.newton.make_newton`. The linear drivers are module-level,
built by :func:`vits_ref.config.stamped`. Engines that run many steps keep their scratch
(:func:`vits_scratch`).
"""

import functools

import numpy as np

from ...config import cpu_jit, stamped
from ...kernels.langevin import make_langevin_steps
from ...kernels.linalg import chol_rank1_update, copy_vec
from ...kernels.lints import lints_draw
from ...kernels.linucb import linucb_scores as linucb_scores_body
from ...kernels.linucb import sherman_morrison as sherman_morrison_body
from ...kernels.newton import make_newton
from ...kernels.vits import make_vits_steps
from ._forward import potential_driver


def vits_scratch(d, n_mc):
    """The VITS step's scratch ``(mats (6, d, d), work2d (d, 2d), Z, T, G (M, d), vecs (2, d))``."""
    return (np.empty((6, d, d)), np.empty((d, 2 * d)), np.empty((n_mc, d)),
            np.empty((n_mc, d)), np.empty((n_mc, d)), np.zeros((2, d)))


# one row per driver: name, the step's kernel factory, the docstring (the driver's arguments)
vits_steps = potential_driver("vits_steps", make_vits_steps, """\
``run(variant, symmetrize, mu, B, C, data, eps, h_mu, h, scr, pscr) -> ok``.

See :func:`vits_ref.kernels.vits.make_vits_steps`; ``scr`` from :func:`vits_scratch`.
""")
langevin_steps = potential_driver("langevin_steps", make_langevin_steps, """\
``run(theta, data, eps, h, g, H, pscr)``: Langevin steps in place.""")


@functools.cache
def newton(potential):
    """``run(data, P0, b0, theta, tol, max_iter, H, L, scratch) -> (status, iterations)``.

    ``theta`` (d,) is updated in place; see :func:`vits_ref.kernels.newton.make_newton`.
    """
    body = make_newton(potential)
    fp = potential.fingerprint  # in the closure: Numba's cache key follows the bodies

    @cpu_jit
    def run(data, P0, b0, theta, tol, max_iter, H, L, scratch):
        _ = fp
        d = theta.shape[0]
        theta2 = np.empty((1, d))
        copy_vec(theta, theta2[0])
        g2 = np.empty((1, d))
        trial2 = np.empty((1, d))
        step = np.empty(d)
        status, it = body(data, P0, b0, theta2, tol, max_iter, H, L, g2, step, trial2,
                          scratch)
        copy_vec(theta2[0], theta)
        return status, it

    return run


# --------------------------------------------------------------------------- LinTS


@stamped
def chol_update_rows(stamp):
    @cpu_jit
    def chol_update_rows(L, X):
        """Rank-one updates of the lower factor ``L`` with every row of ``X``, in place."""
        _ = stamp
        work = np.empty(L.shape[0])
        for n in range(X.shape[0]):
            chol_rank1_update(L, X[n], work)

    return chol_update_rows


@stamped
def lints_draws(stamp):
    @cpu_jit
    def lints_draws(L, b, eta, Z, out):
        """Rows of ``out`` are exact posterior draws built from the rows of ``Z``."""
        _ = stamp
        for n in range(Z.shape[0]):
            lints_draw(L, b, eta, Z[n], out[n])

    return lints_draws


# --------------------------------------------------------------------------- LinUCB


@stamped
def linucb_scores(stamp):
    @cpu_jit
    def linucb_scores(Vinv, b, alpha, X, out):
        """The arms' upper confidence bounds (:func:`vits_ref.kernels.linucb.linucb_scores`)."""
        _ = stamp
        theta = np.empty(b.shape[0])
        VX = np.empty(X.shape)
        linucb_scores_body(Vinv, b, alpha, X, theta, VX, out)

    return linucb_scores


@stamped
def sherman_morrison(stamp):
    @cpu_jit
    def sherman_morrison(Vinv, x):
        """``inv(V) <- inv(V + x x^T)`` in place."""
        _ = stamp
        sherman_morrison_body(Vinv, x, np.empty(x.shape[0]))

    return sherman_morrison


@stamped
def sherman_morrison_rows(stamp):
    @cpu_jit
    def sherman_morrison_rows(Vinv, X):
        """``inv(V) <- inv(V + sum_i x_i x_i^T)`` in place, one Sherman-Morrison update
        per row of ``X`` in order: :func:`sherman_morrison` row by row, bit for bit."""
        _ = stamp
        work = np.empty(X.shape[1])
        for i in range(X.shape[0]):
            sherman_morrison_body(Vinv, X[i], work)

    return sherman_morrison_rows
