"""The terminal on stderr, for the progress bars: can one be drawn there?"""

import os
import sys


def columns():
    """The columns of the terminal on stderr: None when stderr is not a terminal (or its
    size cannot be read), else its width, the smaller of what the terminal and a set
    ``COLUMNS`` say; 0 in the consoles (some CI and IDE ones) that report 0 columns, where
    tqdm draws nothing and the callers print plain lines instead.

    Examples
    --------
    >>> from vits_ref import _terminal
    >>> _terminal.columns() is None or _terminal.columns() >= 0
    True
    """
    try:
        if not sys.stderr.isatty():
            return None
        cols = os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None
    env = os.environ.get("COLUMNS", "").strip()
    if env:
        try:
            cols = min(cols, int(env))
        except ValueError:
            pass
    return max(0, cols)
