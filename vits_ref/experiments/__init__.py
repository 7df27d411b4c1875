"""Paper reproductions, registered by name for ``python -m vits_ref run NAME``.

Each experiment module defines ``NAME``, ``DESCRIPTION``, ``DEFAULTS`` (runs, rounds,
seed), ``run(runs, rounds, seed, out, progress)`` which writes a CSV, a JSON summary and
a PNG plot into ``out`` and returns the summary dict (its ``files`` lists what was
written), and ``table(result)`` for the terminal.
"""

from . import vits_fig1, vits_fig2, vits_figF, vits_figG, vits_figI, vits_movielens

EXPERIMENTS = {m.NAME: m for m in (vits_fig1, vits_fig2, vits_figF, vits_figG, vits_figI,
                                         vits_movielens)}


def get(name):
    """The experiment module registered as ``name``."""
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; available: "
                         f"{', '.join(sorted(EXPERIMENTS))}") from None
