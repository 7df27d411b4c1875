"""Exceptions raised by vits_ref, and the one rule of a many-runs divergence report.

A many-runs path (the Python loop of :func:`vits_ref.bandit.simulate`, its fused CPU and
CUDA loops, the counter-based streams, the VTS, MLP and DiffTS fast paths) reports a
divergence by :func:`raise_first_divergence`: the lowest-numbered diverging run, at its
first diverging round, with its step size. The lowest run is the one the Python loop, which
runs the runs in order, meets first, so the error depends neither on the path nor on its
batches, chunks or threads.
"""

import numpy as np


class DivergenceError(FloatingPointError):
    """An engine's state became non-finite, or left its stable range (e.g. a VITS square
    root far larger than the prior's): the step size is too large for the data, or the
    data's scale overflows the statistics. The update that raised it is rolled back
    (:meth:`vits_ref.inference.base.Engine.update` is transactional).

    Attributes
    ----------
    engine : str
        Name of the engine (e.g. ``"VITS-II"``).
    round : int
        1-based bandit round (number of observations) at which it happened; the runners
        report a failed draw of a round's ``select`` at that round (:meth:`in_run`).
    step_size : float or None
        Step size in force at that round (None for engines without one, e.g. Laplace).
    run : int or None
        Index of the simulated run, when raised by :func:`vits_ref.bandit.simulate`.
    """

    def __init__(self, engine, round, step_size, run=None, detail=""):
        self.engine = engine
        self.round = int(round)
        self.step_size = None if step_size is None else float(step_size)
        self.run = run
        where = f" in run {run}" if run is not None else ""
        state = "non-finite or out-of-range state" if detail else "non-finite state"
        if self.step_size is None:  # engines without a step size (Laplace's Newton fit)
            msg = f"{engine} diverged ({state}) at round {self.round}{where}."
        else:
            msg = (f"{engine} diverged ({state}) at round {self.round}{where} with "
                   f"step size {self.step_size:.4g}; lower the step size (with the 'decayed' "
                   f"schedule, h_t = h0/(eta t), lower h0).")
        if detail:
            msg += " " + detail
        self.detail = detail
        super().__init__(msg)

    def __reduce__(self):  # picklable across process pools
        return (type(self), (self.engine, self.round, self.step_size, self.run, self.detail))

    def in_run(self, run, round=None):
        """The same error (engine, round, step size, detail) naming run ``run``.

        ``round``, if given, replaces the error's round: a failure of a round's ``select``
        (e.g. DiffTS's Thompson draw, which the engine raises at its number of
        observations, ``t - 1`` in round ``t``) is reported at the 1-based bandit round
        ``t`` of the draw, as the compiled loops report it.
        """
        return DivergenceError(self.engine, self.round if round is None else round,
                               self.step_size, run=run, detail=self.detail)


class DegenerateCovarianceError(ValueError):
    """An engine's Gaussian ``q`` has a covariance that is not positive definite to
    rounding: the approximation has collapsed in some direction (a variance at or below
    rounding beside the others), so ``KL(q || p)`` is not finite in double precision (it
    is ``+inf`` for a singular ``q``). Raised by
    :meth:`vits_ref.inference.base.GaussianEngine.kl_to_posterior` for an engine that
    holds no factor of its covariance with a positive diagonal (one that does, such as
    Rényi VI, is judged from the factor, finite however far ``q`` has shrunk); the message
    names the engine and the extreme eigenvalues of ``q``'s covariance."""


def record_first_divergence(first_bad, status):
    """Keep each run's first diverging round: ``first_bad`` (R,) int, 0 while the run has
    not diverged, takes ``status`` (R,) (0, or the 1-based round at which the run diverged
    in the chunk just run) where it is still 0, in place. Later chunks of a diverged run
    diverge again at once and are ignored. Returns ``first_bad``."""
    new = (status != 0) & (first_bad == 0)
    first_bad[new] = status[new]
    return first_bad


def raise_first_divergence(status, engine, first_run=0, step_size=None, detail=""):
    """Raise the :class:`DivergenceError` of the lowest diverging run, if any.

    Parameters
    ----------
    status : (R,) int array
        Per run: 0, or the 1-based round at which it first diverged
        (:func:`record_first_divergence` over chunks).
    engine : str
        The engine's (or policy's) name for the message.
    first_run : int
        Index of row 0's run (the block's offset in the seed's runs).
    step_size : None, float or callable
        The step size in force, or ``step_size(round)`` giving it at a round (a fused
        spec's schedule); None for engines without one.
    detail : str
        Appended to the message (e.g. a fused spec's ``divergence_detail``).
    """
    bad = np.flatnonzero(status)
    if bad.size:
        i = int(bad[0])
        rnd = int(status[i])
        h = step_size(rnd) if callable(step_size) else step_size
        raise DivergenceError(engine, rnd, h, run=first_run + i, detail=detail)
