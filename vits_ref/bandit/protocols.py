"""What a bandit policy is: the structural contract of :func:`vits_ref.bandit.simulate`.

Policies are duck-typed: any object with these members plays, the library's own
(:class:`~vits_ref.bandit.policies.ThompsonSampling`, :class:`~vits_ref.bandit.policies.LinUCB`,
:class:`~vits_ref.bandit.policies.RandomPolicy`, :class:`~vits_ref.bandit.policies.PerArm`,
:class:`~vits_ref.inference.vts.VTS` and :class:`~vits_ref.inference.vts.NIGTS`) as well as
a user's. :class:`Policy` writes the contract down as a :class:`typing.Protocol`, checkable
at run time (``isinstance(obj, Policy)`` checks that the members exist, not their
signatures; ``tests/test_protocols.py`` also checks the signatures of the library's
policies). A policy that also has a fused compiled loop satisfies :class:`FusedPolicy`.

Engines (:mod:`vits_ref.inference`) have no structural protocol here: their contract is
the base class :class:`vits_ref.inference.base.Engine`, which
:class:`~vits_ref.bandit.policies.ThompsonSampling` and
:class:`~vits_ref.bandit.policies.PerArm` require by ``isinstance``.
"""

from typing import Protocol, runtime_checkable

__all__ = ["FusedPolicy", "Policy"]


@runtime_checkable
class Policy(Protocol):
    """A bandit policy: chooses arms online and learns from their rewards.

    Attributes
    ----------
    name : str
        Short label used in results and messages.
    dim : int or None
        Feature dimension of the contexts; None: any (the random policy without one).

    Notes
    -----
    ``select(contexts) -> int``
        The arm to play this round; ``contexts`` is ``(K, dim)``, the features of the
        round's arms (:class:`~vits_ref.inference.vts.VTS` also takes one ``(dim,)`` row
        shared by the arms).
    ``update(contexts, arm, reward) -> self``
        Feed back the reward of ``contexts[arm]`` (the same ``contexts`` as ``select``).
    ``fresh(seed=None) -> Policy``
        The same policy at its prior with a new seed (``seed`` an int, a
        ``numpy.random.SeedSequence`` or None; a policy that draws nothing ignores it):
        :func:`vits_ref.bandit.simulate` starts every run from ``policy.fresh(seed)``, so
        a policy object is a specification and its own state is never played.

    :func:`vits_ref.bandit.simulate` requires ``select``, ``update`` and ``fresh``, and
    reads ``name`` and ``dim`` where they exist. Optional: ``fused(kl=False)``
    (:class:`FusedPolicy`), ``n_obs``, ``diagnostics``
    (:class:`vits_ref.inference.base.Diagnostics`).

    Examples
    --------
    >>> import vits_ref as vr
    >>> from vits_ref.bandit.protocols import FusedPolicy, Policy
    >>> isinstance(vr.LinUCB(2), Policy), isinstance(vr.VTS(2, n_arms=3), Policy)
    (True, True)
    >>> isinstance(vr.LinUCB(2), FusedPolicy), isinstance(vr.VTS(2, n_arms=3), FusedPolicy)
    (True, False)
    >>> isinstance(vr.LinTS(2), Policy)  # an engine, not a policy
    False
    """

    name: str
    dim: int | None

    def select(self, contexts):
        """The index of the arm to play for the round's ``contexts``."""

    def update(self, contexts, arm, reward):
        """Learn from ``reward`` of ``contexts[arm]``; returns the policy."""

    def fresh(self, seed=None):
        """The same policy at its prior, seeded with ``seed``."""


@runtime_checkable
class FusedPolicy(Policy, Protocol):
    """A :class:`Policy` that may run in the fused compiled loop.

    Notes
    -----
    ``fused(kl=False) -> FusedSpec or None``
        The policy's part of the fused loop (:class:`vits_ref.drivers.fused.FusedSpec`:
        its kernel piece, the piece's parameters as a NamedTuple, its randomness), or None
        where this configuration has none (then :func:`vits_ref.bandit.simulate` runs the
        Python loop). ``kl``: keep what the KL diagnostic needs.

    Examples
    --------
    >>> import vits_ref as vr
    >>> from vits_ref.bandit.protocols import FusedPolicy
    >>> pol = vr.ThompsonSampling(vr.LinTS(2))
    >>> isinstance(pol, FusedPolicy), pol.fused().params
    (True, LinTSParams(eta=1.0, lam=1.0, track=False))
    """

    def fused(self, kl=False):
        """The policy's :class:`~vits_ref.drivers.fused.FusedSpec`, or None."""
