"""Rényi VI (:mod:`vits_ref.kernels.renyi`): Adam steps on the Monte Carlo Rényi bound of
a Gaussian, and the bound with its gradient alone; rows of
:func:`._forward.potential_driver`, cached per potential.
"""

import numpy as np

from ...kernels.renyi import make_renyi_grad, make_renyi_steps
from ._forward import potential_driver


def renyi_scratch(d, n_mc):
    """The Rényi steps' scratch ``(L, T, G, logw, wts, D, grad, H)``
    (:mod:`vits_ref.kernels.renyi`): (d, d), (M, d), (M, d), (M,), (M,), (d, d), (d + 1, d),
    (d, d)."""
    return (np.zeros((d, d)), np.empty((n_mc, d)), np.empty((n_mc, d)), np.empty(n_mc),
            np.empty(n_mc), np.empty((d, d)), np.zeros((d + 1, d)), np.zeros((d, d)))


# one row per driver: name, the kernel factory, the docstring (the driver's arguments)
renyi_steps = potential_driver("renyi_steps", make_renyi_steps, """\
``run(alpha, P, data, eps, lr, beta1, beta2, adam_eps, adam, scr, pscr, trace) -> ok``.

Adam steps on the Monte Carlo Rényi bound (see
:func:`vits_ref.kernels.renyi.make_renyi_steps`); ``scr`` from :func:`renyi_scratch`.
""")
renyi_grad = potential_driver("renyi_grad", make_renyi_grad, """\
``run(alpha, P, data, eps, scr, pscr) -> (bound, ess)``: one Monte Carlo Rényi bound
and its gradient (into ``scr[6]``), see :func:`vits_ref.kernels.renyi.make_renyi_grad`.""")
