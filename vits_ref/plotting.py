"""Plots of experiment results (needs matplotlib, the ``plot`` extra, only when called).

Figures are drawn on ``matplotlib.figure.Figure`` objects with the Agg canvas, never
through pyplot: writing a PNG from a notebook must not switch its backend or leave
figures open.
"""


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
    line, = ax.plot(x, mid, label=label, ls="--" if label.startswith("extra:") else "-")
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2)
    return line


def save(fig, path):
    """Lay out and write ``fig`` as a PNG; returns ``path``."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def regret_panels(panels, path, title=None, ylabel="cumulative regret"):
    """One panel per entry of ``panels``: ``{panel_title: {label: (mean, stderr)}}``.

    Draws each mean curve with a band of +- one standard error and saves a PNG at
    ``path``. Returns the Figure (displayable in a notebook).
    """
    fig, axes = figure(len(panels))
    for ax, (panel, curves) in zip(axes, panels.items(), strict=True):
        for label, (mean, se) in curves.items():
            band(ax, range(1, len(mean) + 1), mean, mean - se, mean + se, label)
        ax.set_title(panel)
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
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
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    save(fig, path)
    return fig
