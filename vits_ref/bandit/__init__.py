"""Bandit runs: policies over engines, and the runner that plays them against environments.

:mod:`vits_ref.bandit.simulate` is the runner (seeded runs, the fused compiled loop on the
CPU or CUDA, the Python loop otherwise); :mod:`vits_ref.bandit.policies` holds Thompson
sampling over any engine, LinUCB, epsilon-greedy, the random policy and per-arm posteriors;
:mod:`vits_ref.bandit.protocols` writes down what a policy is (:class:`~.protocols.Policy`,
:class:`~.protocols.FusedPolicy`). The fast paths
of particular methods (VTS's compiled runs, the DiffTS chains, the MLP runs batched across
runs) live next to the runner and register with it as backends
(:mod:`vits_ref.bandit.backends`: the interface, the registry and how the runner chooses).
``docs/architecture.md`` draws the layers.
"""

# the modules that register the library's backends with the runner (importing any module
# of this package runs this file first, so every backend is registered before a run)
from . import _batched_mlp, _diffts_chain, simulate, vts  # noqa: F401
