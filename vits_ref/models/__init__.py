"""Reward models as potentials ``U(theta) = -log posterior(theta) + const``.

One module per model: :mod:`.linear` (sufficient statistics), and, for non-linear
models, modules that keep their history in preallocated buffers.
"""

from .linear import Linear

__all__ = ["Linear"]
