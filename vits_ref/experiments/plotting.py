"""Plots of experiment results (needs matplotlib, the ``plot`` extra, only when called).

Figures are drawn on ``matplotlib.figure.Figure`` objects with the Agg canvas, never
through pyplot: writing a PNG from a notebook must not switch its backend or leave
figures open.

Legends sit outside the axes, to the right of the last panel (:func:`outside_legend`), so
they never cover a curve; figures with shaded bands say what the bands are in a legend
entry (:data:`BAND_NOTE`).
"""

#: The legend entry that explains the shaded bands of :func:`band` curves.
BAND_NOTE = "shaded band: \u00b11 standard error over runs"


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


def band(ax, x, mid, lo, hi, label):
    """A line with a shaded band (``lo`` to ``hi``) of the same colour; dashed for a
    method labelled ``"extra: ..."`` (not in the paper's figure)."""
    import numpy as np

    line, = ax.plot(x, mid, label=label, ls="--" if label.startswith("extra:") else "-")
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
        data area, so it never covers a curve.
    band_note : str, optional
        An extra legend entry (a grey patch) explaining the shaded bands, e.g.
        :data:`BAND_NOTE`.
    fontsize : float
        The legend's font size.

    Returns
    -------
    matplotlib.legend.Legend or None
        None when there is nothing to label.
    """
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
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


def save(fig, path):
    """Lay out and write ``fig`` as a PNG; returns ``path``.

    The PNG is drawn in memory, then written atomically and recorded in the folder's
    manifest (:func:`vits_ref.experiments._outputs.write_output`): a killed run never
    leaves a torn image, and a symlink at ``path`` is replaced, not followed.
    """
    import io

    from ._outputs import write_output

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=120, format="png")
    write_output(path, buf.getvalue())
    return path


def regret_panels(panels, path, title=None, ylabel="cumulative regret"):
    """One panel per entry of ``panels``: ``{panel_title: {label: (mean, stderr)}}``.

    Draws each mean curve with a band of +- one standard error and saves a PNG at
    ``path``; one legend, outside the panels (to the right of the last), names the curves
    and says what the bands are (:data:`BAND_NOTE`). Returns the Figure (displayable in a
    notebook).
    """
    fig, axes = figure(len(panels))
    for ax, (panel, curves) in zip(axes, panels.items(), strict=True):
        for label, (mean, se) in curves.items():
            band(ax, range(1, len(mean) + 1), mean, mean - se, mean + se, label)
        ax.set_title(panel)
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

