"""Sphinx configuration of the vits_ref documentation site.

Build (what CI runs; warnings are errors)::

    python -m sphinx -W --keep-going -b html docs build/docs/html

Sources: the Markdown pages of ``docs/`` (MyST), the README (``docs/readme.rst`` includes
it), the notebooks of ``notebooks/`` and an API reference generated from the docstrings
(autodoc + autosummary, numpydoc format).

The notebooks are kept in ``notebooks/`` only, stored without outputs (tests/test_notebooks.py
enforces that). At build time this file copies them into ``docs/notebooks/`` (git-ignored,
so nothing is duplicated in git) and MyST-NB executes them there: see ``nb_execution_mode``.
"""

import os
import shutil
import warnings
from pathlib import Path

import vits_ref  # installed (pip install -e ".[docs]"): kernels/ is vits_ref.kernels only then

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "vits_ref"
author = "the vits_ref developers"
copyright = "2026, " + author
version = release = vits_ref.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",  # also registers myst_parser for the .md pages
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "notebooks/README.md"]

# ---- notebooks -----------------------------------------------------------------------
# Copied from notebooks/ at every build (only when changed, so incremental builds stay
# incremental); docs/notebooks/ is in .gitignore.
_NB_SRC = ROOT / "notebooks"
_NB_DST = DOCS / "notebooks"
_NB_DST.mkdir(exist_ok=True)
_wanted = {p.name for p in _NB_SRC.glob("*.ipynb")}
for _old in _NB_DST.glob("*.ipynb"):
    if _old.name not in _wanted:
        _old.unlink()
for _nb in sorted(_NB_SRC.glob("*.ipynb")):
    _dst = _NB_DST / _nb.name
    if not _dst.exists() or _dst.read_bytes() != _nb.read_bytes():
        shutil.copy2(_nb, _dst)

# The notebooks are stored without outputs, so the build executes them, every build
# ("force": outputs always match the library as it is; "cache" would reuse outputs of
# unchanged notebooks after the library changed). Measured 2026-11-22 on the 2-core
# machine shared with five other sessions (load 7-9): the whole build took 276 s of CPU
# (user + sys, notebook kernels included) with a cold Numba cache (a fresh
# NUMBA_CACHE_DIR) and 213 s with the cache as found, so at most about 4.6 and 3.6 min
# on an idle 2-core machine; the Sphinx part alone (VITS_REF_DOCS_EXECUTE=off) is 21 s.
# VITS_REF_DOCS_EXECUTE=off renders them unexecuted (a quick look at the layout).
nb_execution_mode = os.environ.get("VITS_REF_DOCS_EXECUTE", "force")
nb_execution_timeout = 600  # seconds per cell (tests/test_notebooks.py allows 300)
nb_execution_raise_on_error = True  # a failing cell fails the build
nb_execution_show_tb = True
nb_merge_streams = True

# ---- MyST ----------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3  # "algorithms.md#2-vits-..." links resolve

# ---- API reference -------------------------------------------------------------------
autosummary_generate = True
autosummary_ignore_module_all = True
autodoc_default_options = {"members": True, "member-order": "bysource",
                           "ignore-module-all": True}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections give the types
numpydoc_show_class_members = False  # autodoc documents members; no stub tables
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()
# numpydoc (1.11) builds a jinja environment and compiles its docstring template again
# for every object it renders (docscrape_sphinx.get_doc_object): about 2 600 compilations.
# Its environment class is given a get_template that compiles each template once per
# search path (the template, the loader's folders and the rendering are numpydoc's own):
# the build without the notebooks took 61.5 s on the 2-core machine, 51.5 s now, the
# same pages
import numpydoc.docscrape_sphinx as _numpydoc_sphinx  # noqa: E402


class _TemplateOnce(_numpydoc_sphinx.SandboxedEnvironment):
    _compiled = {}

    def get_template(self, name, parent=None, globals=None):
        loader = self.loader
        key = (name, parent, tuple(getattr(loader, "pathchain", None)
                                   or getattr(loader, "searchpath", None) or ()))
        if globals is not None or not key[2]:
            return super().get_template(name, parent, globals)
        if key not in self._compiled:
            self._compiled[key] = super().get_template(name, parent, globals)
        return self._compiled[key]


_numpydoc_sphinx.SandboxedEnvironment = _TemplateOnce

# numpydoc parses numba.vectorize's own docstring (imported by vits_ref.gaussian.special) and warns
# about its sections: Numba's markup, not ours, and not a Sphinx warning
warnings.filterwarnings("ignore", category=UserWarning,
                        message=r"(?s)(potentially wrong underline length|Unknown section)"
                                r".*docstring of vectorize in .*numba")

# ---- HTML ----------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"vits_ref {release}"
html_static_path = ["_static"]
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
