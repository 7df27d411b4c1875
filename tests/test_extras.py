"""The extras of setup.py bring what their users import (.ci/extras_smoke.py).

CI installs each extra alone in a fresh venv and imports its users' modules there; this
test checks, without installing anything, that every extra is covered by that step (or
named as skipped, with the reason) and that the extras executing the notebooks (notebooks,
docs) bring the distribution of every module a notebook imports.
"""

import ast
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a notebook's top-level module -> the distribution an extra must list (the standard
#: library, vits_ref and its dependencies need none)
DISTRIBUTIONS = {"sklearn": "scikit-learn", "matplotlib": "matplotlib", "IPython": "ipykernel",
                 "tqdm": "tqdm", "pandas": "pandas"}
CORE = {"vits_ref", "numpy", "scipy", "numba"}


def _extras():
    tree = ast.parse((ROOT / "setup.py").read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "EXTRAS" for t in n.targets))
    return ast.literal_eval(node.value)


def _smoke():
    spec = importlib.util.spec_from_file_location("extras_smoke", ROOT / ".ci" / "extras_smoke.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _names(reqs):
    return {r.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower()
            for r in reqs}


def test_every_extra_is_installed_alone_by_ci_or_skipped_with_a_reason():
    smoke, extras = _smoke(), _extras()
    assert set(extras) == set(smoke.IMPORTS) | set(smoke.SKIPPED)
    assert not set(smoke.IMPORTS) & set(smoke.SKIPPED)
    assert all(f"{e} " in (ROOT / ".ci" / "run").read_text().split("for extra in")[1]
               .split(";")[0] + " " for e in smoke.IMPORTS)


def test_the_notebook_extras_bring_what_the_notebooks_import():
    smoke, extras = _smoke(), _extras()
    modules = smoke.notebook_imports(str(ROOT))
    assert "sklearn" in modules  # the online notebook's wine data
    for name in modules:
        if name in CORE or name in sys.stdlib_module_names:
            continue
        assert name in DISTRIBUTIONS, f"a notebook imports {name}: add its distribution here"
        for extra in smoke.NOTEBOOK_EXTRAS:
            assert DISTRIBUTIONS[name].lower() in _names(extras[extra]), (extra, name)
