"""Each extra installed alone: run by .ci/run in a fresh venv holding one extra (over a
base venv with the wheel and its own dependencies), it imports what that extra's users
import. Usage::

    python extras_smoke.py EXTRA SOURCE_TREE

For ``notebooks`` and ``docs`` (myst-nb executes the notebooks when the site is built)
that is every module a notebook's code imports, read from ``notebooks/*.ipynb``, so that
a notebook importing a package its extra does not bring (scikit-learn, for the online
notebook's wine data) fails here and not in a newcomer's first hour; then the
``notebooks`` extra executes the notebooks of :data:`EXECUTED` in its venv, with nbclient
and the venv's own ipykernel, at the notebooks' own default size (the online notebook's
``SMALL = True``): a cell that fails there, for a package or a kernel the extra lacks,
fails here. tests/test_extras.py checks
that every extra of setup.py is here or named in SKIPPED.
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
#: the extra that executes the notebooks of EXECUTED: the docs extra is checked for the
#: same imports (and tests/test_extras.py checks that it lists every distribution a
#: notebook imports), and executing the same notebook again in its venv, warm, took 16 s
#: of a core that CI shares with the tests
EXECUTING_EXTRAS = ("notebooks",)
#: the notebooks that extra executes here (glob under notebooks/). None now: executing the
#: online notebook here took 60 s of the core CI shares with the tests (its kernels
#: compile cold in the fresh venv) when CI had reached its 15-minute budget, and it
#: duplicated tests/test_notebooks.py's execution of it; what it alone checked is covered
#: by the imports above (every module a notebook imports, scikit-learn for its wine data)
#: and by .ci/wheel_smoke.py (the installed copy's modules, its kernels compiled there).
#: Put ("07*.ipynb",) back to execute it against the installed wheel again
EXECUTED = ()
#: a cell's time limit (s): its kernels compile cold, on a core shared with the tests
CELL_TIMEOUT_S = 1200


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


def execute(source):
    """Execute the notebooks of :data:`EXECUTED` from ``source/notebooks`` (in that folder,
    by the python3 kernel of this interpreter's venv); their paths and seconds."""
    import time

    import nbclient
    import nbformat

    done = []
    folder = os.path.join(source, "notebooks")
    for pattern in EXECUTED:
        paths = sorted(glob.glob(os.path.join(folder, pattern)))
        if not paths:
            raise FileNotFoundError(f"no notebook {pattern} in {folder}")
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            t = time.perf_counter()
            nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                    resources={"metadata": {"path": folder}}).execute()
            done.append((os.path.basename(path), time.perf_counter() - t))
    return done


def main(extra, source):
    names = list(IMPORTS[extra])
    if extra in NOTEBOOK_EXTRAS:
        names += notebook_imports(source)
    import vits_ref  # noqa: F401 - the package itself first

    for name in names:
        importlib.import_module(name)
    print(f"extra {extra!r} alone: imported {', '.join(names)}")
    if extra in EXECUTING_EXTRAS:
        for name, seconds in execute(source):
            print(f"extra {extra!r} alone: executed {name} in {seconds:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
