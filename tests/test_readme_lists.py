"""The README's experiments table names every experiment of ``vits-ref list``, and its
notebooks list every notebook under notebooks/ (a newcomer reads those first)."""

import re
from pathlib import Path

from vits_ref.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parent.parent


def _section(title):
    text = (ROOT / "README.rst").read_text(encoding="utf-8")
    start = text.index(f"\n{title}\n{'-' * len(title)}\n")
    end = re.search(r"\n[^\n]+\n-{3,}\n", text[start + len(title) + 2 * len(title):])
    return text[start:start + len(title) * 3 + (end.start() if end else len(text))]


def test_the_experiments_table_names_every_experiment():
    table = _section("Experiments")
    rows = set(re.findall(r"^``([\w-]+)``\s{2,}", table, flags=re.M))
    assert rows == set(EXPERIMENTS), (sorted(set(EXPERIMENTS) - rows),
                                      sorted(rows - set(EXPERIMENTS)))


def test_the_notebooks_list_names_every_notebook():
    listed = set(re.findall(r"^- ``(\w+\.ipynb)``", _section("Notebooks"), flags=re.M))
    assert listed == {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
