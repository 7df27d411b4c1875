"""Bandit runs: policies over engines, and the runner that plays them against environments.

:mod:`vits_ref.bandit.simulate` is the runner (seeded runs, the fused compiled loop on the
CPU or CUDA, the Python loop otherwise); :mod:`vits_ref.bandit.policies` holds Thompson
sampling over any engine, LinUCB, the random policy and per-arm posteriors;
:mod:`vits_ref.bandit.protocols` writes down what a policy is (:class:`~.protocols.Policy`,
:class:`~.protocols.FusedPolicy`). The fast paths
of particular methods (VTS's compiled runs, the MLP runs batched across runs) live next to
the runner. ``docs/architecture.md`` draws the layers.
"""
