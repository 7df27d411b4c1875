"""Every curve of a figure has its own legend entry, and every entry names its curve.

A figure's panels share one legend (``plotting.outside_legend``: one entry per label), so
a label must be drawn alike in every panel, and two labels must never be drawn alike.
Three ways this failed: the logistic panels of the DiffTS figures (no MixTS or DPS there)
drew DiffTS in MixTS's colour, so the legend called it MixTS; ``vits-fig1``'s twelve
curves cycled ten colours; and a method that fell back to a smaller step after a
divergence in one panel kept its label, so one legend entry stood for two step sizes.
Since then such a curve's label names its step, and the figure draws it as its method
(one colour, style and legend entry in every panel), the panel's title naming the step:
drawn under its own label it took another colour in each panel (vits-figG) and appeared
twice in vits-fig1's legend.
"""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from fake_runs import Policy as _Policy  # noqa: E402
from fake_runs import fake_simulate as _fake_simulate  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from vits_ref.experiments import _chunks, plotting  # noqa: E402
from vits_ref.experiments._common import run_panels  # noqa: E402
from vits_ref.experiments.diffts import _shared  # noqa: E402
from vits_ref.experiments.vits import fig1  # noqa: E402


def _looks(fig):
    """``{label: {(colour, style)}}`` of the labelled lines of every axes, and the
    legends' ``{label: (colour, style)}``."""
    drawn, legend = {}, {}
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                drawn.setdefault(line.get_label(), set()).add(
                    (to_hex(line.get_color()), line.get_linestyle()))
        lg = ax.get_legend()
        if lg is not None:
            for h, t in zip(lg.legend_handles, lg.get_texts(), strict=True):
                if isinstance(h, Line2D):
                    legend[t.get_text()] = (to_hex(h.get_color()), h.get_linestyle())
    return drawn, legend


def _check_every_curve_named(fig):
    drawn, legend = _looks(fig)
    for label, looks in drawn.items():
        assert len(looks) == 1, (label, looks)  # alike in every panel
        assert legend[label] in looks, label  # the legend shows what is drawn
    pairs = [next(iter(v)) for v in drawn.values()]
    assert len(set(pairs)) == len(pairs), drawn  # no two labels alike
    return drawn


def _curves(labels, horizon=30, seed=0):
    rng = np.random.default_rng(seed)
    return {lab: (np.cumsum(rng.random(horizon)) * (i + 1), np.full(horizon, 0.3))
            for i, lab in enumerate(labels)}


def test_diffts_logistic_panel_draws_diffts_as_diffts(tmp_path):
    # the paper's order; the logistic panel has no MixTS or DPS (_shared.build_methods)
    curves = {"linear rewards": _curves(_shared.METHODS),
              "logistic rewards": _curves([m for m in _shared.METHODS
                                           if m not in ("MixTS", "DPS")])}
    pts = np.random.default_rng(1).normal(size=(50, 2))
    fig = _shared.prior_and_regret_figure({p: (pts, pts) for p in curves}, curves,
                                          str(tmp_path / "regret.png"))
    drawn = _check_every_curve_named(fig)
    assert set(_shared.METHODS) <= set(drawn)


def test_fig1_twelve_curves_distinct(tmp_path):
    labels = [m[0] for m in fig1.METHODS] + [m[0] for m in fig1.PARTICLE_METHODS]
    assert len(labels) == 12
    fig = plotting.regret_panels({f"zeta = {z}": _curves(labels) for z in (0.1, 1)},
                                 str(tmp_path / "regret.png"))
    drawn = _check_every_curve_named(fig)
    assert sorted(drawn) == sorted(labels)
    # the paper's lines solid, the extras dashed while colours last
    assert all(next(iter(drawn[m[0]]))[1] == "-" for m in fig1.METHODS if m[4])
    assert all(next(iter(drawn[m[0]]))[1] == "--" for m in fig1.METHODS if not m[4])


def test_line_styles_distinct_up_to_their_capacity():
    most = plotting.N_COLOURS * len(plotting.LINE_STYLES)
    labels = [("extra: " if i % 3 else "") + f"m{i}" for i in range(most)]
    styles = plotting.line_styles(labels)
    assert len(set(styles.values())) == most
    with pytest.raises(ValueError, match=f"more than {most} labels"):
        plotting.line_styles(labels + ["one more"])


def test_fig1_thirteen_methods_have_thirteen_colours(tmp_path):
    """vits-fig1's legend has 13 entries (its methods, the particle extras and a fallback
    step): on a 10-colour cycle VITS-II and OPVI-TS were both orange, LinTS and SVGD-TS
    both blue. Each gets its own colour, the same in both panels."""
    labels = ([m[0] for m in fig1.METHODS] + [m[0] for m in fig1.PARTICLE_METHODS]
              + [f"{fig1.HF} (step_size = 0.001)"])
    assert len(labels) == 13
    fig = plotting.regret_panels({f"zeta = {z}": _curves(labels) for z in (0.1, 1)},
                                 str(tmp_path / "regret.png"))
    drawn = _check_every_curve_named(fig)
    colours = [next(iter(looks))[0] for looks in drawn.values()]
    assert len(set(colours)) == 13, drawn


def test_outside_legend_refuses_a_label_drawn_two_ways():
    fig, (a, b) = plotting.figure(2)
    a.plot([0, 1], label="DiffTS", color="C0")
    b.plot([0, 1], label="DiffTS", color="C2")
    with pytest.raises(ValueError, match="DiffTS"):
        plotting.outside_legend([a, b])
    fig, (a, b) = plotting.figure(2)
    a.plot([0, 1], label="MixTS", color="C2")
    b.plot([0, 1], label="DiffTS", color="C2")
    with pytest.raises(ValueError, match="alike"):
        plotting.outside_legend([a, b])


def test_fallback_step_is_named_in_its_panel_and_keeps_the_methods_look(tmp_path):
    method = ("M", [(_Policy(h), {"hyperparameters": {"step_size": h}})
                    for h in (0.01, 0.001)])
    other = ("N", [(_Policy(0.5), {"hyperparameters": {"step_size": 0.5}})])
    panels = [(p, p, [method, other], {}) for p in ("A", "B")]
    with _chunks.session(quiet=True):
        res = run_panels("fake", "fake", panels, runs=2, rounds=5, seed=0,
                         out=str(tmp_path), simulate_fn=_fake_simulate, plot=False)
    # the JSON keeps the method's label and records the step used
    assert [(e["panel"], e["method"], e["hyperparameters"]["step_size"])
            for e in res["results"]] == [("A", "M", 0.001), ("A", "N", 0.5),
                                         ("B", "M", 0.01), ("B", "N", 0.5)]
    # the curves name the step wherever it differs
    assert list(res["curves"]["A"]) == ["M (step_size = 0.001)", "N"]
    assert list(res["curves"]["B"]) == ["M (step_size = 0.01)", "N"]
    np.testing.assert_array_equal(res["curves"]["A"]["M (step_size = 0.001)"][0],
                                  0.001 * np.arange(1, 6))
    # the figure draws M as M in both panels (one colour, one style, one legend entry:
    # it appeared twice, in two colours), and panel A's title names its step
    fig = plotting.regret_panels(res["curves"], str(tmp_path / "regret.png"),
                                 methods=res["curve_methods"])
    drawn = _check_every_curve_named(fig)
    assert sorted(drawn) == ["M", "N"]
    titles = [ax.get_title() for ax in fig.axes]
    assert "M (step_size = 0.001)" in titles[0] and "M (step_size = 0.01)" in titles[1]


def test_run_panels_draws_a_method_alike_in_every_panel(tmp_path, monkeypatch):
    """Per-panel tuned points (vits-figG, vits-fig1): a method's curves carry their step
    in each panel's label; the regret figure drew each as another method, in another
    colour. The figure run_panels writes draws the method once, alike in both panels."""
    figs = []
    real = plotting.regret_panels
    monkeypatch.setattr(plotting, "regret_panels",
                        lambda *a, **k: figs.append(real(*a, **k)) or figs[-1])
    panels = [(p, p, [("M", [(_Policy(h), {"hyperparameters": {"step_size": h}})]),
                      ("N", [(_Policy(0.5), {"hyperparameters": {"step_size": 0.5}})])],
               {}) for p, h in (("B", 0.01), ("C", 0.002))]
    with _chunks.session(quiet=True):
        run_panels("fake", "fake", panels, runs=2, rounds=5, seed=0, out=str(tmp_path),
                   simulate_fn=_fake_simulate)
    (fig,) = figs
    drawn = _check_every_curve_named(fig)
    assert sorted(drawn) == ["M", "N"]


def _declared_methods(mod):
    """The method labels an experiment module declares (its ``*METHODS`` constants: tuples
    whose entries start with the label, dicts keyed by it, or objects with ``label``)."""
    labels = []
    for name in dir(mod):
        value = getattr(mod, name)
        if not (name.isupper() and name.endswith("METHODS")):
            continue
        items = list(value) if isinstance(value, (dict, tuple, list)) else []
        for item in items:
            label = (item if isinstance(item, str) else getattr(item, "label", None)
                     or (item[0] if isinstance(item, tuple) and isinstance(item[0], str)
                         else None))
            if isinstance(label, str) and label not in labels:
                labels.append(label)
    return labels


def test_every_experiments_methods_get_their_own_colour():
    """Over every experiment of the command line: the methods it declares, drawn together,
    get one colour each (vits-fig1's twelve shared ten colours)."""
    from vits_ref.experiments import EXPERIMENTS
    from vits_ref.experiments.showdown import catalogue

    checked = {}
    for name, mod in EXPERIMENTS.items():
        labels = _declared_methods(mod) or (_declared_methods(catalogue)
                                            if name == "showdown" else [])
        if not labels:
            continue
        styles = plotting.line_styles(labels)
        assert len(labels) <= plotting.N_COLOURS, (name, len(labels))
        assert len({c for c, _ in styles.values()}) == len(labels), (name, styles)
        checked[name] = len(labels)
    assert {"vits-fig1", "vits-figG", "showdown"} <= set(checked), checked

