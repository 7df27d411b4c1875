"""The documentation site's sources are complete.

CI builds the site itself (``python -m sphinx -W --keep-going -b html docs build/docs/html``
in .ci/run); these checks are the cheap part that a build with warnings as errors would
not catch: a public name missing from the API reference, a Markdown page or a notebook
left out of every toctree (Sphinx only warns about pages it reads, and a notebook that is
not copied in is never read), an extension that the ``docs`` extra does not install.
Nothing here imports Sphinx's build machinery or executes ``docs/conf.py`` (which copies
the notebooks); the module is skipped when Sphinx is not installed.
"""

import ast
import importlib
import re
import types
from pathlib import Path

import pytest

pytest.importorskip("sphinx")

import vits_ref  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
API_INDEX = DOCS / "api" / "index.rst"
# folders that conf.py or autosummary fill at build time (git-ignored)
GENERATED = (DOCS / "notebooks", DOCS / "api" / "generated")


def _is_generated(path):
    return any(g == path or g in path.parents for g in GENERATED)


def _directive_entries(text, name):
    """The entries of every ``.. name::`` block of reStructuredText ``text``.

    An entry is an indented, non-empty line of the block that is not an option
    (``:maxdepth: 2``); the block ends at the first non-indented, non-empty line.
    """
    entries = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if re.match(rf"\s*\.\. {name}::", lines[i]):
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                item = lines[i].strip()
                if item and not item.startswith(":"):
                    entries.append(item)
                i += 1
        else:
            i += 1
    return entries


def _myst_toctree_entries(text):
    """The entries of every ```` ```{toctree} ```` block of a MyST page."""
    entries = []
    for block in re.findall(r"```\{toctree\}[^\n]*\n(.*?)```", text, flags=re.S):
        entries += [ln.strip() for ln in block.splitlines()
                    if ln.strip() and not ln.strip().startswith(":")]
    return entries


def _toctree_documents():
    """Every document named by a toctree of the hand-written sources, without suffix."""
    docs = set()
    for src in DOCS.rglob("*"):
        if _is_generated(src) or src.suffix not in (".rst", ".md"):
            continue
        text = src.read_text(encoding="utf-8")
        entries = (_directive_entries(text, "toctree") if src.suffix == ".rst"
                   else _myst_toctree_entries(text))
        base = src.parent.relative_to(DOCS)
        for entry in entries:
            target = entry.split("<")[-1].rstrip(">").strip()  # "title <doc>" or "doc"
            target = target[1:] if target.startswith("/") else str(base / target)
            docs.add(str(Path(target).with_suffix("")) if target.endswith((".md", ".rst"))
                     else str(Path(target)))
    return docs


def _resolve(dotted):
    """Import the object named ``dotted`` (module, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_every_public_name_is_in_the_api_reference():
    # each non-module name of vits_ref.__all__ is an autosummary entry of docs/api/index.rst
    # whose dotted path is that very object (a renamed or moved class fails here)
    entries = [e.lstrip("~") for e in _directive_entries(API_INDEX.read_text(encoding="utf-8"),
                                                         "autosummary")]
    # "vits_ref.bandit.simulate" is both a module and a function of it: key the objects only
    by_name = {e.rsplit(".", 1)[-1]: e for e in entries
               if not isinstance(_resolve(e), types.ModuleType)}
    missing, wrong = [], []
    for name in vits_ref.__all__:
        obj = getattr(vits_ref, name)
        if isinstance(obj, types.ModuleType):
            if obj.__name__ not in entries:
                missing.append(obj.__name__)
        elif name == "POLICY_NAMES":
            # a tuple: autosummary would show tuple's docstring, so the page names it in text
            assert "``POLICY_NAMES``" in API_INDEX.read_text(encoding="utf-8")
        elif name not in by_name:
            missing.append(name)
        elif _resolve(by_name[name]) is not obj:
            wrong.append(f"{by_name[name]} is not vits_ref.{name}")
    assert not missing, f"not in {API_INDEX.relative_to(ROOT)}: {missing}"
    assert not wrong, wrong


def test_api_reference_entries_import():
    # every entry (also those not re-exported at the top level) names an importable object
    entries = [e.lstrip("~") for e in _directive_entries(API_INDEX.read_text(encoding="utf-8"),
                                                         "autosummary")]
    assert len(entries) > 20
    for entry in entries:
        _resolve(entry)


def test_every_markdown_page_is_in_a_toctree():
    pages = {str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*.md")
             if not _is_generated(p)}
    assert {"algorithms", "architecture"} <= pages
    listed = _toctree_documents()
    missing = sorted(pages - listed)
    assert not missing, f"docs pages in no toctree: {missing}"


def test_every_notebook_is_in_a_toctree():
    # conf.py copies notebooks/*.ipynb to docs/notebooks/: each must be listed there
    notebooks = {f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks
    listed = _toctree_documents()
    assert not sorted(notebooks - listed), sorted(notebooks - listed)
    stale = sorted(d for d in listed if d.startswith("notebooks/") and d not in notebooks)
    assert not stale, f"toctree names notebooks that do not exist: {stale}"


def _assigned(path, name):
    """The literal value assigned to ``name`` at the top level of the Python file ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} assigns no {name}")


def test_docs_extra_installs_every_extension():
    extensions = _assigned(DOCS / "conf.py", "extensions")
    extras = _assigned(ROOT / "setup.py", "EXTRAS")
    assert "docs" in extras, "setup.py has no 'docs' extra"
    dists = {re.split(r"[<>=!\[ ;]", req, maxsplit=1)[0].lower().replace("_", "-")
             for req in extras["docs"]}
    for ext in extensions:
        dist = ext.split(".")[0].replace("_", "-").lower()
        assert dist in dists, f"extension {ext!r} needs {dist!r} in the docs extra: {dists}"
    assert "pydata-sphinx-theme" in dists  # html_theme in conf.py
