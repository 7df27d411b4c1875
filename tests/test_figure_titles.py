"""Every figure's title names its paper by the authors or the method (it used to name
no paper, or a numbered placeholder for it). Checked on the titles the experiment modules
build (``TITLES``, sizes appended at run time), without running the experiments;
``tests/test_written_files.py`` checks that the drawn figures carry them."""

import inspect
import re

import pytest

from vits_ref.experiments import EXPERIMENTS, plotting

#: the paper of each experiment subpackage, spelt out here independently of the module
EXPECTED = {"vits": "Clavier et al. (VITS)", "vts": "Urteaga & Wiggins (VTS)",
            "renyi": "Li & Turner (Rényi VI)", "diffts": "Kveton et al. (DiffTS)",
            "opvi": "OPVI (particle-based online Bayesian sampling)",
            "showdown": "Beyond the papers (the library's showdown)"}


def _paper(module):
    return module.__name__.split(".")[-2]


def test_every_paper_has_a_name():
    assert plotting.PAPER_NAMES == EXPECTED
    assert {_paper(m) for m in EXPERIMENTS.values()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_titles_name_the_paper(name):
    module = EXPERIMENTS[name]
    titles = module.TITLES
    assert titles, name
    for png, title in titles.items():
        assert png.endswith(".png")
        assert title.startswith(EXPECTED[_paper(module)] + ", "), title
        # a title names the paper, never a placeholder number in its stead
        assert not re.search(r"seed\s*0\d", title, re.IGNORECASE), title


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_figure_written_has_a_title(name):
    # each PNG the module names (its outputs, in its docstrings and code) has a title
    module = EXPERIMENTS[name]
    pngs = set(re.findall(r"\b(\w+\.png)\b", inspect.getsource(module)))
    assert pngs == set(module.TITLES), name


def test_paper_title():
    assert (plotting.paper_title("renyi", "appendix C")
            == "Li & Turner (Rényi VI), appendix C")
    with pytest.raises(ValueError, match="paper must be one of"):
        plotting.paper_title("unknown paper", "Figure 1")
