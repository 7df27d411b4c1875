"""Each extra installed alone: run by .ci/run in a fresh venv holding one extra (over a
base venv with the wheel and its own dependencies), it imports what that extra's users
import. Usage::

    python extras_smoke.py EXTRA SOURCE_TREE

For ``notebooks`` and ``docs`` (myst-nb executes the notebooks when the site is built)
that is every module a notebook's code imports, read from ``notebooks/*.ipynb``, so that
a notebook importing a package its extra does not bring (scikit-learn, for the online
notebook's wine data) fails here and not in a newcomer's first hour. tests/test_extras.py
checks that every extra of setup.py is here or named in SKIPPED.
"""

import ast
import glob
import importlib
import json
import os
import sys

#: extra -> the modules its users import (besides vits_ref itself)
IMPORTS = {
    "plot": ["matplotlib.pyplot", "tqdm", "vits_ref.experiments.plotting"],
    "progress": ["tqdm"],
    "data": ["sklearn.datasets"],
    "dask": ["distributed", "cryptography"],
    "bench": ["asv"],
    "notebooks": ["nbclient", "nbformat", "ipykernel", "matplotlib.pyplot"],
    "docs": ["sphinx", "numpydoc", "myst_nb", "pydata_sphinx_theme", "ipykernel",
             "matplotlib.pyplot"],
}
#: extras not installed alone by CI: what they bring is heavy (hundreds of MB of CUDA
#: wheels), needs a GPU to import (cupy), or is the test suite's own install (test)
SKIPPED = {"test": "installed by .ci/run for the suite", "ptx": "310 MB of CUDA wheels",
           "cuda": "430 MB of CUDA wheels", "cupy": "needs a GPU to import",
           "jax": "the JAX peer of the GPU benchmark, a large download"}
#: extras that execute the notebooks: they must bring what the notebooks import
NOTEBOOK_EXTRAS = ("notebooks", "docs")


def notebook_imports(source):
    """The top-level modules that the code cells of ``source/notebooks/*.ipynb`` import."""
    found = set()
    for path in sorted(glob.glob(os.path.join(source, "notebooks", "*.ipynb"))):
        with open(path, encoding="utf-8") as fh:
            cells = json.load(fh)["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            code = "".join(cell["source"])
            code = "\n".join(line for line in code.splitlines()
                             if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Import):
                    found.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.split(".")[0])
    return sorted(found)


def main(extra, source):
    names = list(IMPORTS[extra])
    if extra in NOTEBOOK_EXTRAS:
        names += notebook_imports(source)
    import vits_ref  # noqa: F401 - the package itself first

    for name in names:
        importlib.import_module(name)
    print(f"extra {extra!r} alone: imported {', '.join(names)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
