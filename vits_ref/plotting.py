"""Plots of experiment results (needs matplotlib, the ``plot`` extra, only when called)."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'vits_ref[plot]'") from exc
    return plt


def regret_panels(panels, path, title=None, ylabel="cumulative regret"):
    """One panel per entry of ``panels``: ``{panel_title: {label: (mean, stderr)}}``.

    Draws each mean curve with a band of +- one standard error and saves a PNG at ``path``.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (panel, curves) in zip(axes[0], panels.items(), strict=True):
        for label, (mean, se) in curves.items():
            rounds = range(1, len(mean) + 1)
            line, = ax.plot(rounds, mean, label=label)
            ax.fill_between(rounds, mean - se, mean + se, color=line.get_color(), alpha=0.2)
        ax.set_title(panel)
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
