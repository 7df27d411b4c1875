"""Plain-NumPy reference implementations, in one place: readable, slow, the yardstick.

Tests compare the kernels against them and the benchmarks (``python -m vits_ref bench``,
``asv_benchmarks/``) time the kernels against them in the same process. One module per
subject: :mod:`.vits` (the VITS steps: linear, and VITS-II on any potential),
:mod:`.bandit` (the linear-bandit run), :mod:`.logistic` (the logistic potential and
IRLS), :mod:`.mlp` (the network potential), :mod:`.naive` (closed forms by explicit
inverses and determinants: Gaussians, LinTS and LinUCB scores, Langevin). The references
compute what the kernels compute; they share the kernels' constants (variant codes,
schedules, status codes) and the stable scalar functions of :mod:`vits_ref.gaussian.special`.
"""

from . import logistic, mlp, naive
from .bandit import linear_bandit_run, step_size
from .vits import vits_ii_round, vits_ii_step, vits_step, vits_update

__all__ = ["linear_bandit_run", "logistic", "mlp", "naive", "step_size", "vits_ii_round",
           "vits_ii_step", "vits_step", "vits_update"]
