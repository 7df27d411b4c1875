"""Plain-NumPy reference implementations, in one place: readable, slow, the yardstick.

Tests compare the kernels against them and the benchmarks time the kernels against them
in the same process. One module per subject: :mod:`.bandit` (the linear-bandit run and
the VITS step), :mod:`.mlp` (the network potential).
"""

from .bandit import linear_bandit_run, step_size, vits_step

__all__ = ["linear_bandit_run", "step_size", "vits_step"]
