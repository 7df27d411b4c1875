"""Import structure: no import cycle anywhere in vits_ref, and the .importlinter contracts.

``kernels/`` is installed as ``vits_ref.kernels`` (``setup.py`` ``package_dir``), which
grimp and import-linter cannot see in the source tree. Both therefore run, in a
subprocess, on a staged tree: ``vits_ref/`` with each entry linked, plus
``vits_ref/kernels`` linked to ``kernels/``.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parents[1]

GRAPH = textwrap.dedent("""
    import json
    import grimp

    graph = grimp.build_graph("vits_ref", cache_dir=None, exclude_type_checking_imports=True)
    edges = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            lines = sorted({d["line_number"] for d in
                            graph.get_import_details(importer=importer, imported=imported)})
            edges.setdefault(importer, {})[imported] = lines
    print(json.dumps({"modules": sorted(graph.modules), "edges": edges}))
""")


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """``vits_ref`` as installed (kernels inside it), made of links to the source tree."""
    site = tmp_path_factory.mktemp("staged")
    pkg = site / "vits_ref"
    pkg.mkdir()
    for entry in sorted((ROOT / "vits_ref").iterdir()):
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    if not (pkg / "kernels").exists():
        (pkg / "kernels").symlink_to(ROOT / "kernels")
    return site


def _run(staged, args):
    env = dict(os.environ, PYTHONPATH=str(staged))
    return subprocess.run(args, cwd=staged, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def graph(staged):
    res = _run(staged, [sys.executable, "-c", GRAPH])
    assert res.returncode == 0, res.stderr[-4000:]
    data = json.loads(res.stdout)
    return data["modules"], data["edges"]


def strongly_connected(modules, edges):
    """Tarjan's strongly connected components with more than one module (or a self-import)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(modules) + 100))
    try:
        for m in sorted(modules):
            if m not in index:
                visit(m)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def cycle_path(component, edges):
    """A shortest cycle through the first module of ``component``: ``[a, b, ..., a]``."""
    start, inside = component[0], set(component)
    parent, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ())):
                if w == start:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if w in inside and w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def describe(path, edges):
    """``a (l.3) -> b (l.1) -> a``: each import with its line numbers."""
    steps = zip(path[:-1], path[1:], strict=True)
    return " -> ".join(f"{a} (l.{','.join(map(str, edges[a][b]))})" for a, b in steps) \
        + f" -> {path[-1]}"


def test_cycle_finder_reports_a_path():
    edges = {"p.a": {"p.b": [3]}, "p.b": {"p.c": [1]}, "p.c": {"p.a": [7], "p.d": [2]},
             "p.d": {}, "p.e": {"p.e": [1]}}
    comps = strongly_connected(list(edges), edges)
    assert comps == [["p.a", "p.b", "p.c"], ["p.e"]]
    assert cycle_path(comps[0], edges) == ["p.a", "p.b", "p.c", "p.a"]
    assert describe(cycle_path(comps[0], edges), edges) == \
        "p.a (l.3) -> p.b (l.1) -> p.c (l.7) -> p.a"


def test_graph_sees_the_installed_layout(graph):
    modules, edges = graph
    assert "vits_ref.config" in modules and "vits_ref.kernels" in modules
    assert any(m.startswith("vits_ref.kernels.") for m in modules)
    assert any(imported == "vits_ref.config" for m in modules if m.startswith("vits_ref.kernels.")
               for imported in edges.get(m, {}))


def test_no_import_cycles(graph):
    modules, edges = graph
    cycles = [describe(cycle_path(comp, edges), edges)
              for comp in strongly_connected(modules, edges)]
    assert not cycles, "import cycles in vits_ref:\n  " + "\n  ".join(cycles)


def test_import_contracts(staged):
    """The contracts of ``.importlinter``, as ``.ci/run`` checks them."""
    pytest.importorskip("importlinter")
    res = _run(staged, [sys.executable, "-c", "from importlinter.cli import lint_imports_command;"
                        "lint_imports_command()",
                        "--config", str(ROOT / ".importlinter"), "--no-cache", "--no-logo"])
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]


#: The house's size: rooms are vits_ref's top-level modules and subpackages (kernels/
#: included, installed as vits_ref.kernels), plus asv_benchmarks/ outside the package;
#: layers are the longest chain of imports between rooms (docs/architecture.md).
MAX_ROOMS, MAX_LAYERS = 24, 9


def _room(module):
    parts = module.split(".")
    return "vits_ref/__init__" if len(parts) == 1 else parts[1]


def room_graph(modules, edges):
    """``{room: set of rooms it imports}``, without a room's imports of itself."""
    rooms = {_room(m): set() for m in modules}
    for importer, imported in edges.items():
        for other in imported:
            a, b = _room(importer), _room(other)
            if a != b:
                rooms[a].add(b)
    return rooms


def longest_chain(rooms):
    """The longest import chain through the room graph (a list of rooms); the graph is
    acyclic (the acyclic_siblings contract)."""
    best = {}

    def chain(r):
        if r not in best:
            tails = [chain(s) for s in sorted(rooms[r])]
            best[r] = [r, *max(tails, key=len, default=[])]
        return best[r]

    return max((chain(r) for r in sorted(rooms)), key=len)


def test_longest_chain_on_a_planted_graph():
    rooms = {"a": {"b", "c"}, "b": {"d"}, "c": set(), "d": set()}
    assert longest_chain(rooms) == ["a", "b", "d"]
    assert room_graph(["vits_ref", "vits_ref.x.y", "vits_ref.z"],
                      {"vits_ref.x.y": ["vits_ref.z", "vits_ref.x"]}) == {
        "vits_ref/__init__": set(), "x": {"z"}, "z": set()}


def test_the_house_has_few_rooms_and_layers(graph):
    modules, edges = graph
    rooms = room_graph(modules, edges)
    n_rooms = len(rooms) + 1  # asv_benchmarks/
    assert n_rooms <= MAX_ROOMS, sorted(rooms)
    chain = longest_chain(rooms)
    assert len(chain) <= MAX_LAYERS, " -> ".join(chain)
