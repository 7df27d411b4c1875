"""vits_ref.experiments.plotting: legends outside the data area, the shaded bands explained.

The legend's box (in display pixels, after the figure is drawn to a PNG) must not
overlap any axes' data area, so it can never cover a curve; the regret figure's legend
must say what the shaded bands are.
"""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from vits_ref.experiments import plotting  # noqa: E402

METHODS = ("LinTS", "LinUCB", "VITS-I", "VITS-II", "extra: LMC-TS")


def _panels(n_panels=2, horizon=50):
    rng = np.random.default_rng(0)
    return {f"zeta = {z}": {m: (np.cumsum(rng.random(horizon)) * (i + 1),
                                np.full(horizon, 0.5))
                            for i, m in enumerate(METHODS)}
            for z in (0.1, 1.0, 10.0)[:n_panels]}


def _overlap(a, b):
    """Area of the intersection of two matplotlib Bboxes (display pixels)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def _legends(fig):
    return [lg for ax in fig.axes for lg in [ax.get_legend()] if lg is not None]


def _check_outside(fig):
    renderer = fig.canvas.get_renderer()
    legends = _legends(fig)
    assert len(legends) == 1  # one legend for the whole figure
    box = legends[0].get_window_extent(renderer)
    assert box.width > 0 and box.height > 0
    for ax in fig.axes:
        # the data area: the axes' patch (inside the spines), in display pixels
        assert _overlap(box, ax.get_window_extent(renderer)) == 0.0, ax.get_title()
    # and the legend is inside the figure (tight_layout made room for it)
    assert _overlap(box, fig.bbox) == pytest.approx(box.width * box.height)
    return legends[0]


@pytest.mark.parametrize("n_panels", [1, 2])
def test_regret_panels_legend_outside_and_bands_explained(tmp_path, n_panels):
    path = tmp_path / "regret.png"
    fig = plotting.regret_panels(_panels(n_panels), str(path), title="test")
    assert path.stat().st_size > 0
    legend = _check_outside(fig)
    texts = [t.get_text() for t in legend.get_texts()]
    # every method once, then the band explanation
    assert texts[:len(METHODS)] == list(METHODS)
    assert plotting.BAND_NOTE in texts
    assert "standard error" in plotting.BAND_NOTE and "\u00b11" in plotting.BAND_NOTE


def test_regret_panels_one_run_has_no_band_and_no_band_note(tmp_path):
    # one run: the standard errors are NaN (undefined), no band is drawn or explained
    panels = {p: {m: (mean, np.full_like(mean, np.nan)) for m, (mean, _) in c.items()}
              for p, c in _panels(2).items()}
    fig = plotting.regret_panels(panels, str(tmp_path / "one.png"))
    texts = [t.get_text() for t in _check_outside(fig).get_texts()]
    assert texts == list(METHODS)
    assert not any(ax.collections for ax in fig.axes)  # no fill_between band


def test_arm_fractions_legend_outside(tmp_path):
    panels = {p: {m: {"optimal": 0.6, "near_optimal": 0.3, "others": 0.1} for m in METHODS}
              for p in ("A", "B")}
    fig = plotting.arm_fractions(panels, str(tmp_path / "arms.png"))
    legend = _check_outside(fig)
    assert [t.get_text() for t in legend.get_texts()] == [
        "optimal arm", "near-optimal arm", "other arms"]


def test_outside_legend_nothing_to_label():
    fig, axes = plotting.figure(1)
    axes[0].plot([0, 1], [0, 1])  # no label
    assert plotting.outside_legend(axes) is None


def test_plotted_reports_a_missing_matplotlib_and_nothing_else():
    """plotted (what every experiment's run calls around its figures): True after a
    drawing; False and one progress line naming what was not written when the drawing
    raises ImportError (matplotlib missing); any other error propagates."""
    said, drawn = [], []
    assert plotting.plotted(lambda: drawn.append(1), said.append)
    assert drawn == [1] and said == []

    def missing():
        raise ImportError("plotting needs matplotlib")

    assert not plotting.plotted(missing, said.append, "arm plot")
    assert said == ["no arm plot written: plotting needs matplotlib"]
    assert not plotting.plotted(missing)  # no progress callback: silent

    def broken():
        raise ValueError("a bug in the figure code")

    with pytest.raises(ValueError, match="bug"):
        plotting.plotted(broken, said.append)
