"""The notebooks under ``notebooks/`` execute cleanly (docs/architecture.md, "Conventions").

Each notebook runs in a fresh ``python3`` kernel with ``notebooks/`` as its working directory,
with its own defaults (``SMALL = True``). The kernelspec comes from the ``ipykernel`` package:
``pip install ipykernel`` puts ``python3`` in the environment's ``share/jupyter/kernels``, and
``jupyter_client`` also provides it whenever ``ipykernel`` is importable. No
``ipykernel install`` step is needed. The structural checks need only ``nbformat``.
"""

from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 300  # seconds per cell
KERNEL_NAME = "python3"

notebook_params = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def _read(path):
    nbformat = pytest.importorskip("nbformat")
    return nbformat.read(path, as_version=4)


def _kernel_name():
    """The ``python3`` kernel if it is registered, else skip with the reason."""
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().find_kernel_specs()
    if KERNEL_NAME not in specs:
        pytest.skip(f"no {KERNEL_NAME!r} Jupyter kernel (found {sorted(specs)}); "
                    "pip install ipykernel")
    return KERNEL_NAME


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@notebook_params
def test_notebook_is_titled_and_not_vacuous(path):
    nb = _read(path)
    assert nb.cells, f"{path.name} has no cells"
    first = nb.cells[0]
    assert first.cell_type == "markdown", f"{path.name}: the first cell must be markdown"
    lines = [ln.strip() for ln in first.source.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("# ") and len(lines[0]) > 3, (
        f"{path.name}: the first cell must start with a '# Title' line")
    n_code = sum(c.cell_type == "code" and c.source.strip() != "" for c in nb.cells)
    assert n_code >= 2, f"{path.name} has {n_code} code cells"


@notebook_params
def test_notebook_is_stored_without_outputs(path):
    # keep diffs small: outputs are produced by running, never committed
    nb = _read(path)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, (
                f"{path.name}: cell {i} has stored outputs; clear them before committing")


@notebook_params
def test_notebook_executes(path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib")
    pytest.importorskip("ipykernel")
    from nbclient.exceptions import CellExecutionError

    kernel = _kernel_name()
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name=kernel,
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} raised while executing:\n{exc}", pytrace=False)

    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    not_run = [i for i, c in enumerate(code_cells) if c.execution_count is None]
    assert not not_run, f"{path.name}: code cells {not_run} did not execute"
    errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: error outputs {[e.get('ename') for e in errors]}"
