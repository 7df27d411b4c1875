"""Plots of experiment results (needs matplotlib, the ``plot`` extra, only when called).

Figures are drawn on ``matplotlib.figure.Figure`` objects with the Agg canvas, never
through pyplot: writing a PNG from a notebook must not switch its backend or leave
figures open.

Legends sit outside the axes, to the right of the last panel (:func:`outside_legend`), so
they never cover a curve; figures with shaded bands say what the bands are in a legend
entry (:data:`BAND_NOTE`).
"""

#: How a figure's title names its paper (by the authors or the method), keyed by the
#: paper's subpackage of :mod:`vits_ref.experiments`; every title starts with it
#: (:func:`paper_title`).
PAPER_NAMES = {
    "vits": "Clavier et al. (VITS)",
    "vts": "Urteaga & Wiggins (VTS)",
    "renyi": "Li & Turner (Rényi VI)",
    "diffts": "Kveton et al. (DiffTS)",
    "opvi": "OPVI (particle-based online Bayesian sampling)",
    "showdown": "Beyond the papers (the library's showdown)",
}
#: The legend entry that explains the shaded bands of :func:`band` curves.
BAND_NOTE = "shaded band: \u00b11 standard error over runs"
#: Colours of :func:`line_styles`: matplotlib's default cycle (``C0`` to ``C9``), then
#: four more that none of those resembles (black, dark goldenrod, indigo, teal), so that
#: an experiment of up to 14 methods (``vits-fig1`` draws 13) gives each its own colour.
PALETTE = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9",
           "#000000", "#b8860b", "#4b0082", "#008080")
N_COLOURS = len(PALETTE)
#: Line styles of :func:`line_styles`: solid for the paper's methods, dashed for the
#: ``"extra: ..."`` ones, the others once the colours have all been used.
LINE_STYLES = ("-", "--", ":", "-.")


def available():
    """Whether matplotlib can be imported (checked before the outputs are listed, so that
    a summary never lists a PNG that was not written)."""
    import importlib.util

    try:
        return importlib.util.find_spec("matplotlib") is not None
    except ValueError:  # a module object without a spec in sys.modules
        return False


def paper_title(paper, what):
    """A figure's title: its paper's name, then what the figure shows.

    Parameters
    ----------
    paper : str
        A key of :data:`PAPER_NAMES` (the experiment's subpackage, e.g. ``"vits"``).
    what : str
        The figure or section of the paper and what it shows.

    Raises
    ------
    ValueError
        If ``paper`` is not a key of :data:`PAPER_NAMES`.

    Examples
    --------
    >>> paper_title("vits", "Figure 1: linear pool bandit")
    'Clavier et al. (VITS), Figure 1: linear pool bandit'
    """
    if paper not in PAPER_NAMES:
        raise ValueError(f"paper must be one of {sorted(PAPER_NAMES)}, got {paper!r}")
    return f"{PAPER_NAMES[paper]}, {what}"


def figure(ncols=1, width=5.5, height=4.0):
    """A ``(fig, axes)`` pair, ``axes`` a list of ``ncols`` Axes, off pyplot."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'vits_ref[plot]'") from exc
    fig = Figure(figsize=(width * ncols, height))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def line_styles(labels):
    """A distinct ``(colour, linestyle)`` pair per label, in order of first appearance.

    Panels of one figure share one legend (:func:`outside_legend`), so a label must look
    the same in every panel even where a panel leaves some methods out: drawing each panel
    with the axes' own colour cycle gives a later method the colour an earlier panel gave
    another one. Each label gets its own colour of :data:`PALETTE` while they last; a
    method labelled ``"extra: ..."`` (not in the paper's figure) is dashed, and from the
    fifteenth label on the colours repeat with the next style of :data:`LINE_STYLES`, so
    that no two labels share a pair.

    Parameters
    ----------
    labels : iterable of str
        The curves' labels (repeats are ignored).

    Returns
    -------
    dict
        ``{label: (colour, linestyle)}``, colours from :data:`PALETTE`.

    Examples
    --------
    >>> line_styles(["LinTS", "extra: VITS-I", "LinTS"])
    {'LinTS': ('C0', '-'), 'extra: VITS-I': ('C1', '--')}
    """
    out, used = {}, set()
    for label in labels:
        if label in out:
            continue
        n = len(out)
        colour = PALETTE[n % N_COLOURS]
        first = label.startswith("extra:") + 2 * (n // N_COLOURS)
        free = [ls for j in range(len(LINE_STYLES))
                for ls in [LINE_STYLES[(first + j) % len(LINE_STYLES)]]
                if (colour, ls) not in used]
        if not free:
            raise ValueError(f"more than {N_COLOURS * len(LINE_STYLES)} labels to tell "
                             f"apart in one figure")
        out[label] = (colour, free[0])
        used.add(out[label])
    return out


def band(ax, x, mid, lo, hi, label, style=None):
    """A line with a shaded band (``lo`` to ``hi``) of the same colour; ``style``: its
    ``(colour, linestyle)`` (:func:`line_styles`); without it the axes' next colour,
    dashed for a method labelled ``"extra: ..."`` (not in the paper's figure)."""
    import numpy as np

    colour, ls = style or (None, "--" if label.startswith("extra:") else "-")
    line, = ax.plot(x, mid, label=label, ls=ls, color=colour)
    if np.isfinite(np.asarray(lo, dtype=float)).any():  # one run: no band (NaN stderr)
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2)
    return line


def outside_legend(axes, band_note=None, fontsize=8):
    """One legend for every labelled artist of ``axes``, outside the axes' data area.

    Parameters
    ----------
    axes : sequence of matplotlib.axes.Axes
        The panels of one figure; their labelled artists are gathered (one entry per
        label, first seen first) into a legend to the right of the last panel, outside its
        data area, so it never covers a curve. Lines that share a label must share their
        colour and style (:func:`line_styles`), and lines of different labels must not:
        the one entry stands for all of them.
    band_note : str, optional
        An extra legend entry (a grey patch) explaining the shaded bands, e.g.
        :data:`BAND_NOTE`.
    fontsize : float
        The legend's font size.

    Returns
    -------
    matplotlib.legend.Legend or None
        None when there is nothing to label.

    Raises
    ------
    ValueError
        If a label's lines differ in colour or style between panels, or two labels' lines
        look the same: the legend would name a curve wrongly (a panel without some of the
        methods used to draw the next method in the colour of a missing one).
    """
    handles, labels, looks = [], [], {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            look = _look(h)
            if look is not None:
                if looks.setdefault(lab, look) != look:
                    raise ValueError(f"the curves labelled {lab!r} are drawn in two "
                                     f"styles, {looks[lab]} and {look}: one legend entry "
                                     f"cannot name both (plotting.line_styles)")
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    seen = {}
    for lab, look in looks.items():
        if seen.setdefault(look, lab) != lab:
            raise ValueError(f"{seen[look]!r} and {lab!r} are drawn alike {look}: the "
                             f"legend cannot tell them apart (plotting.line_styles)")
    if band_note:
        from matplotlib.patches import Patch

        handles.append(Patch(facecolor="grey", alpha=0.3))
        labels.append(band_note)
    if not handles:
        return None
    # anchored just right of the last axes' top-right corner; tight_layout in save()
    # makes room for it (an axes legend is part of the axes' tight bounding box)
    return axes[-1].legend(handles, labels, fontsize=fontsize, loc="upper left",
                           bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _look(handle):
    """``(colour, linestyle, marker)`` of a line (hex colour), None for other artists."""
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    if not isinstance(handle, Line2D):
        return None
    return (to_hex(handle.get_color()), handle.get_linestyle(), handle.get_marker())


def save(fig, path):
    """Lay out and write ``fig`` as a PNG; returns ``path``.

    The figure's own texts (its title) wrap at the figure's edges. The PNG is drawn in
    memory, then written atomically and recorded in the folder's
    manifest (:func:`vits_ref.experiments._outputs.write_output`): a killed run never
    leaves a torn image, and a symlink at ``path`` is replaced, not followed.
    """
    import io

    from ._outputs import write_output

    for text in fig.texts:  # the suptitle: a long title wraps instead of being cut off
        text.set_wrap(True)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=120, format="png")
    write_output(path, buf.getvalue())
    return path


def regret_panels(panels, path, title=None, ylabel="cumulative regret", methods=None):
    """One panel per entry of ``panels``: ``{panel_title: {label: (mean, stderr)}}``.

    Draws each mean curve with a band of +- one standard error and saves a PNG at
    ``path``; one legend, outside the panels (to the right of the last), names the curves
    and says what the bands are (:data:`BAND_NOTE`). Returns the Figure (displayable in a
    notebook).

    ``methods`` (``{panel_title: {label: method}}``, optional) names the method of each
    curve where its label adds the hyperparameters that set it apart in that panel (a
    fallback step after a divergence, a per-panel tuned point: ``"VITS-II (step_size =
    0.001)"``): the curve is drawn as its method, in the method's one colour and style in
    every panel, under the method's one legend entry, and the panel's title names the
    hyperparameters.
    """
    methods = methods or {}

    def method_of(panel, label):
        return (methods.get(panel) or {}).get(label, label)

    fig, axes = figure(len(panels))
    styles = line_styles(method_of(p, label) for p, curves in panels.items()
                         for label in curves)
    for ax, (panel, curves) in zip(axes, panels.items(), strict=True):
        notes = []
        for label, (mean, se) in curves.items():
            method = method_of(panel, label)
            if method != label:
                notes.append(label)
            band(ax, range(1, len(mean) + 1), mean, mean - se, mean + se, method,
                 styles[method])
        ax.set_title("\n".join([panel, *notes]), fontsize=10 if not notes else 8)
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    # one run has no standard error: no band is drawn, so none is explained
    banded = any(has_band(curves) for curves in panels.values())
    outside_legend(axes, band_note=BAND_NOTE if banded else None)
    if title:
        fig.suptitle(title)
    save(fig, path)
    return fig


def arm_fractions(panels, path, title=None,
                  categories=(("optimal", "optimal arm"),
                              ("near_optimal", "near-optimal arm"),
                              ("others", "other arms"))):
    """Grouped bars of how often each method pulled each kind of arm, one panel per entry.

    Parameters
    ----------
    panels : dict
        ``{panel_title: {method: {category: fraction}}}``, e.g. the ``arm_pulls`` of
        ``vits-figG``'s summary (extra keys of a method's dict are ignored).
    path : str
        Where the PNG is written.
    title : str, optional
        Figure title.
    categories : sequence of (key, legend label)
        The bars of each method, in order.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = figure(len(panels))
    width = 0.8 / len(categories)
    for ax, (panel, methods) in zip(axes, panels.items(), strict=True):
        labels = list(methods)
        for j, (key, legend) in enumerate(categories):
            xs = [i + (j - (len(categories) - 1) / 2) * width for i in range(len(labels))]
            ax.bar(xs, [methods[m][key] for m in labels], width=width, label=legend)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_ylabel("fraction of pulls")
        ax.set_title(panel)
        ax.grid(alpha=0.3, axis="y")
    outside_legend(axes)
    if title:
        fig.suptitle(title)
    save(fig, path)
    return fig


# -- notes for other kinds of bands and bars ------------------------------------------------

def quartile_note(over="runs"):
    """The legend entry of a band from the 25% to the 75% quantile (not a standard error)
    over ``over`` (e.g. ``"seeds"``)."""
    return f"shaded band: 25%-75% quantiles over {over}"


#: The legend label of error bars of +-1.96 standard errors (a normal 95% interval).
CI95_BARS = "mean, error bars \u00b11.96 standard errors over runs (95%)"


def has_band(curves):
    """Whether any standard error of ``{label: (mean, stderr)}`` is finite (one run has
    none: its standard error is NaN and no band is drawn, so none should be explained)."""
    import numpy as np

    return any(np.isfinite(np.asarray(se, dtype=float)).any() for _, se in curves.values())



def plotted(draw, progress=None, what="plot"):
    """Call ``draw()``, which writes a figure; whether it did.

    Without matplotlib (the ``plot`` extra) an experiment still writes its CSV and JSON:
    the ``ImportError`` is caught, ``progress("no <what> written: <why>")`` is told (when
    given) and False returned, so the caller leaves the figure out of ``result["files"]``.
    """
    try:
        draw()
    except ImportError as exc:
        if progress:
            progress(f"no {what} written: {exc}")
        return False
    return True


def drawn(figures, progress=None):
    """Draw each figure of ``figures`` and return the paths written, for ``result["files"]``.

    Parameters
    ----------
    figures : dict
        ``{path: draw}``: ``draw()`` writes the PNG at ``path``, or returns False when it
        has nothing to draw (then nothing is written).
    progress : callable, optional
        Told once why no figure was written when matplotlib is missing (:func:`plotted`).

    Returns
    -------
    list of str
        The paths whose figure was written, in the order of ``figures``: without
        matplotlib none, so that a summary written afterwards never lists a PNG that is not
        there.
    """
    written, wrote = [], {}
    for path, draw in figures.items():
        if not plotted(lambda p=path, d=draw: wrote.__setitem__(p, d() is not False),
                       progress):
            return written  # matplotlib is missing: the later figures cannot be drawn
        if wrote[path]:
            written.append(path)
    return written
