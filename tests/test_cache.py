"""Numba's on-disk cache: keyed by *every* kernel and driver source, stored where Numba would.

Numba keys a cached function by its own source file and by the contents of its closure.
Kernel bodies are inlined across files, so every cached function of the library closes
over :func:`vits_ref.config.sources_stamp` (a hash of every kernel and driver source,
``config.py`` and the compile options), directly or through a bodies' ``fingerprint``: an
edit of a body in another file, or of a user's own body, recompiles what inlines it. The
directory is Numba's own choice: ``NUMBA_CACHE_DIR`` if set, else ``__pycache__`` next to
the source if writable, else the user-wide cache directory.
"""

import ast
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from vits_ref.kernels import potential

from vits_ref import config

# ---------------------------------------------------------------------------------------
# in-process: what the stamp covers


@pytest.fixture
def sources(tmp_path):
    """A fake source set: kernels/*.py, drivers/*.py, config.py; ``stamp()`` hashes it."""
    kernels, drivers = tmp_path / "kernels", tmp_path / "drivers"
    kernels.mkdir()
    drivers.mkdir()
    (kernels / "linalg.py").write_text("def body():\n    return 2\n")
    (kernels / "README.txt").write_text("not a source\n")
    (drivers / "cpu.py").write_text("def driver():\n    return 3\n")
    (tmp_path / "config.py").write_text("FASTMATH = False\n")

    def stamp(options=(False, "numpy")):
        return config._sources_hash([str(kernels), str(drivers)], [str(tmp_path / "config.py")],
                                    options)

    return tmp_path, stamp


def test_stamp_covers_every_source_and_the_options(sources):
    root, stamp = sources
    stamps = {stamp()}
    assert stamp() == stamp() and 0 <= stamp() < 2 ** 63  # an int64 closure constant
    for edit in ("kernels/linalg.py", "drivers/cpu.py", "config.py"):
        with open(root / edit, "a") as fh:
            fh.write("# edited\n")
        assert stamp() not in stamps, edit
        stamps.add(stamp())
    (root / "drivers" / "cuda.py").write_text("X = 1\n")  # a new driver file
    assert stamp() not in stamps
    stamps.add(stamp())
    (root / "drivers" / "cpu").mkdir()  # a driver package (drivers/cpu/)
    (root / "drivers" / "cpu" / "bandit.py").write_text("Y = 1\n")
    assert stamp() not in stamps
    stamps.add(stamp())
    with open(root / "drivers" / "cpu" / "bandit.py", "a") as fh:
        fh.write("# edited\n")
    assert stamp() not in stamps
    stamps.add(stamp())
    (root / "drivers" / "cpu" / "__pycache__").mkdir()  # never a source
    (root / "drivers" / "cpu" / "__pycache__" / "stale.py").write_text("Z = 1\n")
    assert stamp() in stamps
    assert stamp((True, "numpy")) not in stamps  # VITS_REF_FASTMATH=1
    (root / "kernels" / "README.txt").write_text("still not a source\n")
    assert stamp() in stamps


def test_stamp_without_a_drivers_folder(sources):
    root, stamp = sources
    shutil.rmtree(root / "drivers")
    before = stamp()
    (root / "kernels" / "linalg.py").write_text("def body():\n    return 5\n")
    assert stamp() != before


def test_real_source_set():
    import vits_ref.kernels

    folders, files = config._stamp_sources()
    here = os.path.dirname(os.path.abspath(config.__file__))
    assert folders == [os.path.dirname(os.path.abspath(vits_ref.kernels.__file__)),
                       os.path.join(here, "drivers")]
    assert files == [os.path.abspath(config.__file__)]
    assert config.sources_stamp() == config._sources_hash(
        folders, files, (config.FASTMATH, config.ERROR_MODEL))


def test_fingerprint_follows_the_bodies_and_the_sources(monkeypatch):
    ns = {}
    exec("def a(x):\n    return 2.0 * x\n\ndef b(x):\n    return 3.0 * x\n", ns)
    fp = potential.fingerprint(ns["a"])
    assert fp == potential.fingerprint(ns["a"]) and 0 <= fp < 2 ** 63
    assert potential.fingerprint(ns["b"]) != fp  # another constant: another key
    monkeypatch.setattr(potential, "sources_stamp", lambda: config.sources_stamp() ^ 1)
    assert potential.fingerprint(ns["a"]) != fp  # a library source edited


# Every module-level function compiled with Numba's cache, by file: built by config.stamped
# or by a factory. Exempt: none but what calls no kernel body.
_EXEMPT = {("vits_ref/_bench/linear.py", "floor_rounds"),  # np.dot only
           # bodies that do nothing: the online bench's floor of a compiled call
           ("vits_ref/_bench/online.py", "_select_call"),
           ("vits_ref/_bench/online.py", "_update_call")}


def _cached_functions():
    """``(path, enclosing function or None, function)`` of every ``def`` decorated with
    ``cpu_jit`` or ``vectorize`` in the library's sources."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(config.__file__)))
    found = []
    for folder in ("vits_ref", "kernels"):
        for d, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                path = os.path.join(d, f)
                with open(path) as fh:
                    text = fh.read()
                if "cpu_jit" not in text and "vectorize" not in text:
                    continue
                tree = ast.parse(text)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
                for node in ast.walk(tree):
                    if isinstance(node, ast.FunctionDef) and any(
                            _decorator_name(dec) in ("cpu_jit", "vectorize")
                            for dec in node.decorator_list):
                        outer = parents.get(node)
                        found.append((rel, outer if isinstance(outer, ast.FunctionDef)
                                      else None, node))
    return found


def _decorator_name(dec):
    target = dec.func if isinstance(dec, ast.Call) else dec
    return target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)


def _stamp_names(outer):
    """Names of ``outer`` bound to the stamp: its parameter ``stamp`` under ``@stamped``,
    ``stamp = sources_stamp()``, or a bodies' fingerprint (which includes the stamp)."""
    names = set()
    if any(_decorator_name(d) == "stamped" for d in outer.decorator_list):
        names.add(outer.args.args[0].arg)
    for node in ast.walk(outer):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            text = ast.unparse(node.value)
            if text == "sources_stamp()" or "fingerprint" in text:
                names.add(node.targets[0].id)
    return names


def test_every_cached_function_closes_over_the_stamp():
    found = _cached_functions()
    # the scan sees the drivers (those of the one-row factories of drivers/cpu/_forward.py
    # are compiled from one template, which it cannot see: checked in the test below)
    assert len(found) > 30
    missing = []
    for path, outer, fn in found:
        if (path, fn.name) in _EXEMPT:
            continue
        used = {n.value.id for n in fn.body if isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Name) and ast.unparse(n.targets[0]) == "_"}
        if outer is None or not used & _stamp_names(outer):
            missing.append(f"{path}:{fn.lineno} {fn.name}")
    assert not missing, ("cached functions that do not close over config.sources_stamp "
                         "(build them with config.stamped, or in a factory with "
                         "stamp = sources_stamp() and _ = stamp in the body):", missing)


def test_every_one_row_driver_closes_over_the_stamp():
    """The drivers of the one-row factories (``potential_driver``, ``kernel_driver``) are
    compiled from one template: each closes over its potential's fingerprint, or over the
    stamp, and calls its body with the body's own parameters."""
    from vits_ref.kernels.linear import POTENTIAL

    from vits_ref.drivers import cpu
    from vits_ref.drivers.cpu import _forward

    assert len(_forward.ROWS) >= 11
    for factory in _forward.ROWS:
        assert getattr(cpu, factory.__name__) is factory  # re-exported by the package
        run = factory(POTENTIAL) if factory.per_potential else factory()
        assert factory(*((POTENTIAL,) if factory.per_potential else ())) is run  # cached
        cells = dict(zip(run.py_func.__code__.co_freevars,
                         (c.cell_contents for c in run.py_func.__closure__), strict=True))
        want = POTENTIAL.fingerprint if factory.per_potential else config.sources_stamp()
        assert cells["fp"] == want, factory.__name__
        assert inspect.signature(run.py_func) == inspect.signature(cells["body"])
        # named as a hand-written factory's driver, with its closure's suffix (own_name)
        assert run.py_func.__qualname__.startswith(factory.__name__ + ".<locals>.run_")


# ---------------------------------------------------------------------------------------
# the key is the same in every process: no dispatcher in a closure


def _every_driver():
    """``{label: dispatcher}``: every cached driver of ``vits_ref.drivers.cpu``, each
    factory called with every argument it takes (the library's potentials, bandit pieces,
    environments' stream rounds, diffusion bodies, both ``parallel`` forms). Nothing is
    compiled but the online calls of the random piece (``bandit_online`` compiles its four
    functions when it builds them: the other pieces' are the same template)."""
    from numba.core.registry import CPUDispatcher
    from vits_ref.kernels import (
        bandit,
        bandit_streams,
        bnn,
        classifier,
        ddpm_mlp,
        diffusion_chain,
        langevin,
        linear,
        lints,
        linucb,
        logistic,
        logistic_bandit,
        mlp,
        vits,
        welling_teh,
    )

    from vits_ref.drivers import cpu

    pools = {
        "potential": [m.POTENTIAL for m in (linear, logistic, bnn, classifier, mlp,
                                             welling_teh)],
        "piece": [bandit.RANDOM, lints.PIECE, linucb.PIECE, langevin.PIECE, vits.PIECE,
                  logistic_bandit.VITS_PIECE, logistic_bandit.LANGEVIN_PIECE,
                  logistic_bandit.LAPLACE_PIECE],
        "env_round": [bandit_streams.pool_round, bandit_streams.hard_round],
        "bodies": [diffusion_chain.AFFINE, ddpm_mlp.MLP],
        "parallel": [False, True],
    }
    found = {}

    def collect(label, obj):
        if isinstance(obj, CPUDispatcher):
            found[label] = obj
        elif isinstance(obj, tuple):
            for i, o in enumerate(obj):
                collect(f"{label}[{i}]", o)
        elif inspect.isfunction(obj) and obj.__closure__:  # a Python wrapper: its drivers
            for name, cell in zip(obj.__code__.co_freevars, obj.__closure__, strict=True):
                if isinstance(cell.cell_contents, CPUDispatcher):
                    collect(f"{label}.{name}", cell.cell_contents)

    for name in cpu.__all__:
        factory = getattr(cpu, name)
        if isinstance(factory, CPUDispatcher):
            collect(name, factory)
            continue
        if not hasattr(factory, "cache_info"):  # a plain helper (scratch sizes, meta)
            continue
        params = list(inspect.signature(factory).parameters)
        if name == "bandit_online":
            collect(f"{name}(random)", factory(bandit.RANDOM))
            continue
        combos = [()]
        for p in params:
            combos = [c + (v,) for c in combos for v in pools[p]]
        for args in combos:
            label = tuple(getattr(a, "name", getattr(a, "__name__", a)) for a in args)
            collect(f"{name}{label}", factory(*args))
    return found


def test_no_cached_driver_closes_over_a_dispatcher(monkeypatch):
    """Numba keys a cached closure by its cells as pickled; a dispatcher, or an intrinsic
    (``numba.extending.intrinsic``), pickles with a uuid drawn in each process, so a driver
    whose cells hold one, directly or through a body pickled by value, gets a new key in
    every process and is never loaded from the cache (vits_ref/config.py). Pickling every
    driver's cells with both made unpicklable finds each such cell (the online
    ``choose`` reached an intrinsic through its body ``choose_one``)."""
    from numba.core.dispatcher import Dispatcher
    from numba.core.extending import _Intrinsic
    from numba.core.serialize import dumps

    drivers = _every_driver()
    assert len(drivers) > 100  # the scan reached the factories' drivers

    def refuse(self):
        kind = "dispatcher" if isinstance(self, Dispatcher) else "intrinsic"
        raise RuntimeError(f"a {kind} in a closure: {self!r}")

    monkeypatch.setattr(Dispatcher, "_reduce_states", refuse)
    monkeypatch.setattr(_Intrinsic, "_reduce_states", refuse)
    bad = {}
    for label, d in drivers.items():
        if d.py_func.__closure__:
            try:
                dumps(tuple(c.cell_contents for c in d.py_func.__closure__))
            except RuntimeError as err:
                bad[label] = str(err)
    assert not bad, bad


KEY_SCRIPT = textwrap.dedent("""
    import hashlib, json, sys
    from numba.core.serialize import dumps

    sys.path.insert(0, sys.argv[1])
    from test_cache import _every_driver

    from vits_ref.config import _CACHED_BODIES

    out = {}
    funcs = {label: d.py_func for label, d in _every_driver().items()}
    # the bodies cached on their own, the factories' among them (made by the calls above)
    funcs.update({f"body {f.__module__}.{f.__qualname__}": f for f in _CACHED_BODIES})
    for label, f in funcs.items():
        cells = f.__closure__
        if cells:
            out[label] = hashlib.sha256(
                dumps(tuple(c.cell_contents for c in cells))).hexdigest()
    print("RESULT " + json.dumps(out))
""")


def test_every_driver_has_one_cache_key_in_every_process(tmp_path):
    """The part of Numba's cache key that comes from the closure (``_index_key``: the
    cells pickled) is the same in two fresh processes, for every cached driver of
    ``vits_ref.drivers.cpu`` and every kernel body cached on its own: whatever in a
    closure pickles differently in each process (a dispatcher, an intrinsic, a uuid, an
    address) shows here, not only the kinds the test above refuses. Before, SVGD's
    steps closed over the direction's dispatcher, and the online ``choose`` reached an
    intrinsic: every new process compiled them again.

    The two processes run on a copy of the package without bytecode: the first compiles
    the modules from source and writes it (as the first process after ``pip install -e``
    or ``--no-compile`` does), the second loads it. A function pickled by value carries
    its module's ``__file__`` and its code's file name, one string object from source and
    two from bytecode: the pickles differed, and every process after the first compiled
    everything again (:func:`vits_ref.config._file_names_as_loaded`)."""
    site = tmp_path / "site"
    _copy_package(site)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(site)
    here = os.path.dirname(os.path.abspath(__file__))
    keys = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", KEY_SCRIPT, here], capture_output=True,
                              text=True, check=True, env=env, cwd=tmp_path)
        line, = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        keys.append(json.loads(line[len("RESULT "):]))
    assert list((site / "vits_ref" / "drivers" / "cpu" / "__pycache__").glob("*.pyc"))
    assert len(keys[0]) > 100
    assert any("svgd_steps" in k for k in keys[0])
    assert any("bandit_online" in k for k in keys[0])
    assert any(k.startswith("body ") for k in keys[0])  # a factory's body with a closure
    changed = sorted(k for k in keys[0] if keys[0][k] != keys[1].get(k))
    assert not changed, changed


# ---------------------------------------------------------------------------------------
# subprocesses: an edit in another file recompiles (on a copy of the sources)

EDIT_SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    import userpot
    import vits_ref
    from vits_ref.drivers import cpu
    from vits_ref.gaussian.special import residual
    from vits_ref.kernels.linear import POTENTIAL

    L = np.eye(2)
    cpu.chol_update_rows(L, np.array([[1.0, 0.0]]))
    data, theta = (np.eye(2), np.zeros(2)), np.array([1.0, 0.0])
    value, user = cpu.value(POTENTIAL), cpu.value(userpot.POTENTIAL)
    out = {"package": vits_ref.__file__, "residual": float(residual(0.0, 1.0)),
           "chol": L[0, 0], "value": value(data, theta, 0), "user": user(data, theta, 0),
           "hits": [sum(f.stats.cache_hits.values())
                    for f in (cpu.chol_update_rows, value, user)]}
    print("RESULT " + json.dumps(out))
""")

USERPOT = textwrap.dedent('''
    """A user's own potential, outside the library: its value is edited between runs."""
    from vits_ref.config import kernel
    from vits_ref.kernels.linear import POTENTIAL as LINEAR
    from vits_ref.kernels.potential import Potential


    @kernel
    def value(data, theta, scratch):
        return 2.0 * theta[0]


    POTENTIAL = Potential("user", LINEAR.grads_hessian, value, LINEAR.predict,
                          grad=LINEAR.grad, vits_inputs=LINEAR.vits_inputs)
''')

# appended to kernels/linalg.py and kernels/scalars.py of the copy: the names the
# drivers import now bind to these bodies (their callers' files are unchanged)
LINALG_EDIT = textwrap.dedent("""


    @kernel
    def chol_rank1_update(L, x, work):
        L[0, 0] = 42.0


    @kernel
    def half_quadratic(P, b, theta):
        return 123.0
""")
SCALARS_EDIT = textwrap.dedent("""


    @kernel
    def residual_weight(z, y):
        return z - y + 100.0, 0.0
""")


def test_an_edit_in_another_file_recompiles(tmp_path):
    """Three runs on one cache: filled, reused, then after edits of bodies that
    ``special.py``, ``drivers/cpu/`` and a user's potential inline from other files
    (``kernels/scalars.py``, ``kernels/linalg.py``, the user's own file)."""
    site, user, cache = tmp_path / "site", tmp_path / "user", tmp_path / "cache"
    _copy_package(site)
    user.mkdir()
    (user / "userpot.py").write_text(USERPOT)
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(user)]),
           "NUMBA_CACHE_DIR": str(cache)}

    def run():
        return _run(tmp_path, env, drop=("PYTHONPATH",), script=EDIT_SCRIPT)

    first = run()
    assert first["package"] == str(site / "vits_ref" / "__init__.py")
    want = {"residual": -0.5, "chol": 2.0 ** 0.5, "value": 0.5, "user": 2.0}
    assert {k: first[k] for k in want} == pytest.approx(want, rel=1e-15)
    _expected(["special.residual", "engines.chol_update_rows", "_forward.value"],
              _index_files(cache))
    second = run()
    assert {k: second[k] for k in want} == {k: first[k] for k in want}
    assert all(h > 0 for h in second["hits"]), second["hits"]  # the cache is in use
    with open(site / "vits_ref" / "kernels" / "linalg.py", "a") as fh:
        fh.write(LINALG_EDIT)
    with open(site / "vits_ref" / "kernels" / "scalars.py", "a") as fh:
        fh.write(SCALARS_EDIT)
    (user / "userpot.py").write_text(USERPOT.replace("2.0 * theta[0]", "3.0 * theta[0]"))
    third = {k: v for k, v in run().items() if k in want}
    assert third == {"residual": 99.0, "chol": 42.0, "value": 123.0, "user": 3.0}, third


# ---------------------------------------------------------------------------------------
# subprocesses: where a real run puts its index files

SCRIPT = textwrap.dedent("""
    import importlib.util, json, os, sys, types
    import numpy as np
    from numba.core import caching

    denied = os.environ.get("VITS_REF_TEST_DENY_WRITES")
    if denied:  # emulate a read-only tree where chmod cannot (root): fail the probe
        _real = caching._CacheLocator.ensure_cache_path

        def _ensure(self):
            if self.get_cache_path().startswith(denied):
                raise PermissionError("read-only: " + self.get_cache_path())
            return _real(self)

        caching._CacheLocator.ensure_cache_path = _ensure

    mode = "package"
    try:
        import vits_ref  # noqa: F401
    except ImportError:
        # the package's __init__ is broken by unrelated work: the cache needs only
        # config, special and the kernels, so load them under a bare parent package
        mode = "isolated"
        spec = importlib.util.find_spec("vits_ref")
        pkg = types.ModuleType("vits_ref")
        pkg.__spec__, pkg.__file__ = spec, spec.origin
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["vits_ref"] = pkg

    import vits_ref.config
    import vits_ref.kernels
    from vits_ref.drivers.cpu import chol_update_rows
    from vits_ref.gaussian.special import residual, sigmoid

    assert float(sigmoid(0.0)) == 0.5 and float(residual(0.0, 1.0)) == -0.5
    L = np.eye(2)
    chol_update_rows(L, np.array([[1.0, 0.5]]))  # a compiled driver too
    assert np.isfinite(L).all() and L[0, 0] > 1.0
    out = {"mode": mode, "config": vits_ref.config.__file__,
           "kernels": vits_ref.kernels.__file__}
    print("RESULT " + json.dumps(out))
""")


def _run(cwd, env_updates, *, drop=(), script=SCRIPT):
    """Run ``script`` in ``cwd`` (``python -c`` puts it first on the path: never the repo)."""
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith("NUMBA_") and k != "VITS_REF_CACHE"}
    env.update(env_updates)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _index_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, files in os.walk(root) for f in files if f.endswith(".nbi"))


def _source_dirs():
    import vits_ref.kernels

    pkg = os.path.dirname(os.path.abspath(config.__file__))
    return pkg, os.path.dirname(os.path.abspath(vits_ref.kernels.__file__))


def _copy_package(site):
    """The package's sources, as installed (``kernels/`` as ``vits_ref/kernels``), in ``site``."""
    pkg, kernels = _source_dirs()
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc")
    shutil.copytree(pkg, site / "vits_ref", ignore=ignore)
    if not os.path.exists(site / "vits_ref" / "kernels"):
        shutil.copytree(kernels, site / "vits_ref" / "kernels", ignore=ignore)


def _expected(names, index_files):
    """Every name in ``names`` is part of an index file's name (``scalars.sigmoid-``)."""
    base = [os.path.basename(f) for f in index_files]
    for name in names:
        assert any(name in b for b in base), (name, base)


def test_numba_cache_dir_is_respected(tmp_path):
    # on a copy of the package: the tree's own index files are written by the other test
    # workers meanwhile (the kernel bodies' among them, under the same names as the run's)
    site, cache_dir = tmp_path / "site", tmp_path / "numba_cache"
    _copy_package(site)
    out = _run(tmp_path, {"NUMBA_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(site)},
               drop=("PYTHONPATH",))
    assert out["config"] == str(site / "vits_ref" / "config.py")
    written = _index_files(cache_dir)
    _expected(["scalars.sigmoid-", "special.residual", "engines.chol_update_rows"], written)
    assert _index_files(site) == []  # nothing in the source tree


def _set_read_only(root, read_only):
    for d, _, files in os.walk(root):
        for f in files:
            os.chmod(os.path.join(d, f), 0o444 if read_only else 0o644)
        os.chmod(d, 0o555 if read_only else 0o755)


def test_read_only_install_caches_in_user_wide_dir(tmp_path):
    site = tmp_path / "site"
    _copy_package(site)
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    _set_read_only(site, True)
    try:
        env = {"PYTHONPATH": str(site), "HOME": str(home), "XDG_CACHE_HOME": str(xdg)}
        if os.access(site / "vits_ref", os.W_OK):  # root: chmod does not stop writes
            env["VITS_REF_TEST_DENY_WRITES"] = str(site)
        out = _run(tmp_path, env, drop=("PYTHONPATH",))
    finally:
        _set_read_only(site, False)
    assert out["config"] == str(site / "vits_ref" / "config.py")
    assert out["kernels"].startswith(str(site / "vits_ref" / "kernels") + os.sep)
    written = _index_files(xdg / "numba")
    _expected(["scalars.sigmoid-", "special.residual", "engines.chol_update_rows"], written)
    assert _index_files(site) == []
    assert not [d for d, _, _ in os.walk(site) if d.endswith("__pycache__")
                and any(f.endswith((".nbi", ".nbc")) for f in os.listdir(d))]


# ---------------------------------------------------------------------------------------
# the doors a user meets: nothing compiled again in a new process

#: the start of a script that lists the functions its process compiles (``compiled``):
#: Numba's ``numba:compile`` events fire for compilations, not for loads from the cache
COUNT_COMPILES = textwrap.dedent("""
    import json, sys, time
    from numba.core import event

    compiled = []


    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass


    event.register("numba:compile", Count())
""")

DOORS_SCRIPT = COUNT_COMPILES + textwrap.dedent("""
    import numpy as np
    import vits_ref as vr

    d, K = 4, 6
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, K, d))
    arms = rng.integers(0, K, size=8)
    rewards = rng.standard_normal(8)
    out = {}
    for name in sys.argv[1:]:
        start = len(compiled)
        t0 = time.perf_counter()
        online = vr.Online(name, n_arms=K, dim=d, seed=0)
        for t in range(3):
            online.update(X[t], online.select(X[t]), rewards[t])
        online.select_many(X[3:6])
        first = time.perf_counter() - t0
        pol = vr.make_policy(name, d, seed=0)
        for t in range(3):
            pol.update(X[t], pol.select(X[t]), rewards[t])
        bandit = vr.Bandit(name, n_arms=K, dim=d, seed=0).fit(X, arms, rewards)
        bandit.partial_fit(X[:2], arms[:2], rewards[:2])
        bandit.predict(X)
        out[name] = {"compiled": compiled[start:], "online_first_s": first}
    print("RESULT " + json.dumps(out))
""")


def _doors_twice(names):
    """Run every door of ``names`` in two fresh processes, one after the other, on the
    suite's cache: ``(first, second)`` results of :data:`DOORS_SCRIPT`."""
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", DOORS_SCRIPT, *names],
                              capture_output=True, text=True, check=True)
        line, = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        runs.append(json.loads(line[len("RESULT "):]))
    return runs


def _assert_nothing_compiled_again(names):
    first, second = _doors_twice(names)
    assert set(second) == set(names)
    again = {name: r["compiled"] for name, r in second.items() if r["compiled"]}
    assert not again, again


def test_the_doors_compile_nothing_in_a_second_process():
    """``Online``, the policy objects and ``Bandit`` (fit, partial_fit, predict) of the
    exact and the cheapest iterative policies, run in two fresh processes on one cache:
    the second compiles nothing (Numba's ``numba:compile`` events fire for compilations,
    not for loads from the cache). The online ``choose`` was compiled again by every
    process, 9 s of a first decision; the key test above covers every driver's key."""
    _assert_nothing_compiled_again(["lints", "linucb", "random", "lmc"])


@pytest.mark.slow
def test_the_doors_of_every_policy_compile_nothing_in_a_second_process():
    from vits_ref.bandit.simulate import POLICY_NAMES

    _assert_nothing_compiled_again(list(POLICY_NAMES))


BODY_SCRIPT = COUNT_COMPILES + textwrap.dedent("""
    from numba import njit
    from vits_ref.kernels.cavi import digamma

    if sys.argv[1] == "first":
        @njit
        def first(x):
            return digamma(x)

        value = first(2.5)
    else:
        @njit
        def second(x):
            return -digamma(x)  # another caller: its own compilation

        value = -second(2.5)
    print("RESULT " + json.dumps({"compiled": compiled, "value": value}))
""")


def test_a_body_compiled_for_one_caller_loads_for_another(tmp_path):
    """A kernel body of the library compiled as a function of its own (here the digamma
    function of the VTS updates) is cached on its own: a second process compiling
    another caller loads it instead of compiling it again (before, every process compiled
    every body its drivers call: the MLP and CAVI bodies several times a test run). Its
    index is stamped with the library's sources (an edit of a body it calls, in another
    file, recompiles it: ``test_an_edit_in_another_file_recompiles``)."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = _run(tmp_path, env, script=BODY_SCRIPT.replace("sys.argv[1]", "'first'"))
    second = _run(tmp_path, env, script=BODY_SCRIPT.replace("sys.argv[1]", "'second'"))
    assert "digamma" in first["compiled"] and "first" in first["compiled"]
    assert "second" in second["compiled"] and "digamma" not in second["compiled"], second
    # the same code: the same bits (and SciPy's digamma(2.5) to its last digits)
    assert second["value"] == first["value"] == pytest.approx(0.7031566406452432, rel=1e-14)
    _expected(["cavi.digamma-"], _index_files(tmp_path / "cache"))


# ---------------------------------------------------------------------------------------
# the closures of one factory carry names of their own (the symbols of their machine code)
# ---------------------------------------------------------------------------------------

def test_closures_of_one_factory_have_names_of_their_own():
    """Numba names a compiled function's symbols after its qualified name and a counter of
    the compiling process; two closures of one factory compiled in two processes could
    carry the same symbol, and loaded from the cache into one process the second ran the
    first's code (LinTS's online update ran VITS's: vits_ref.config.own_name). Every
    cached driver whose closure differs has a name of its own, and so has a factory's
    body compiled as a function of its own (a non-inlined kernel)."""
    from numba.core.serialize import dumps

    from vits_ref.config import kernel

    keys = {}
    for d in _every_driver().values():
        cells = d.py_func.__closure__
        key = hashlib.sha256(dumps(tuple(c.cell_contents for c in cells))).hexdigest() \
            if cells else ""
        keys.setdefault(d.py_func.__qualname__, set()).add(key)
    shared = {name: len(k) for name, k in keys.items() if len(k) > 1}
    assert not shared, shared
    assert any("bandit_online" in name for name in keys)

    def factory(k):
        @kernel
        def body(x):
            return x + k

        return body

    one, two, again = factory(1.0), factory(2.0), factory(1.0)
    assert one.__qualname__ != two.__qualname__
    assert one.__qualname__ == again.__qualname__  # the same cells, the same name
