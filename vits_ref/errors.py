"""Exceptions raised by vits_ref."""


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
        1-based bandit round (number of observations) at which it happened.
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
