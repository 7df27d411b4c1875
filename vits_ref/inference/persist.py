"""Save and load engines and policies without pickle: one ``.npz`` per object.

An object is written as its **hyperparameters** (what its constructor takes) and its
**state** (what its updates and draws change), both declared on its class:

``_params()`` or ``_persist_params``
    The constructor's keyword arguments: the engines' and VTS's ``_params()`` (what
    ``fresh`` uses), or a class attribute naming them (a tuple of attribute names, or a
    dict ``{argument: attribute}``). ``seed`` is added where the constructor takes one.
``_persist_state``
    The attributes that hold the state, accumulated over the class's bases (a subclass
    lists only what it adds). Arrays are written as arrays; random generators as their
    bit generator's state; dicts (``diagnostics``), tuples and lists of them as such; an
    attribute holding another object with declared state (the engine's ``model``) as that
    object's state.
``_persist_growing``
    State arrays that may be larger than at construction (history buffers that double).
    Every other state array must have the shape and dtype the constructor gave it.
``_persist_bounds``
    ``(count, array, axis)``: the integer (or integer array) ``count`` must lie in
    ``[0, array.shape[axis]]``, so that a file cannot make a compiled kernel index past a
    buffer.
``_persist_restored()``
    Optional: called after the state is put back (to resize scratch that is sized with a
    buffer).

:func:`load` constructs the object from its hyperparameters, then puts the saved state in
place of the constructor's, so its next draws and updates are those of the saved object,
bit for bit. Only classes of the library are written or read (:func:`registry`): a
user-defined class, a function or any object that cannot be described by numbers,
strings and arrays raises a TypeError at :func:`save`, which never pickles.

The file is a zip of ``.npy`` members, readable by ``numpy.load(path,
allow_pickle=False)``: ``header.npy`` (a 0-d string array: JSON with the format's name
and version, the object's description, and the dtype and shape of every array) and
``a0.npy``, ``a1.npy``, ... . :func:`load` checks the header, the format version, every
array's dtype and shape in its ``.npy`` header against the JSON, every member's size in the
zip directory against them, and the state's shapes against the constructed object, before
it reads any array: a truncated file, one of a newer format or one whose sizes do not
match raises a one-line ValueError naming the file.

Size policy
-----------
A file cannot make :func:`load` allocate much more memory than the file itself holds:

* every member is stored uncompressed, as :func:`save` writes it (a compressed member, or
  one whose stored size differs from its size, is refused), and every array's bytes, from
  the shape in the header, are checked against its member's size and the members' sizes
  against the file's size, before any array is read;
* before anything is built, the sizes among the hyperparameters (``dim``, ``n_arms``,
  ``hidden``, ``n_particles``, ``capacity``, ...) give an estimate of what the
  constructors allocate (:func:`_cost`: a class may declare ``_persist_cost(params)``,
  the default is quadratic in the sum of its sizes, a ``dim x dim`` factor; a class
  whose allocation depends on hyperparameters of an object it is given declares their
  names in ``_persist_nested``, as ``Online`` does for its policy's ``dim``, ``model``
  and ``n_mc``, whose history it holds for ``horizon`` updates); a file whose
  estimate exceeds ``max(LOAD_FLOOR_BYTES, LOAD_RATIO x its size)`` is refused;
* a growing buffer may be larger than at construction only up to twice its count (the
  buffers double when full): ``shape[axis] <= max(initial, 2 * count)``.

After the state is in place it is checked by the engine's own invariants: every float in
the state's arrays and scalars is finite (a class lists exceptions in
``_persist_nonfinite``; a growing buffer is checked up to its count only, one without a
declared count not at all), every integer scalar and every integer array declared a
count by ``_persist_bounds`` lies in ``[0, 2**53]``, and a class's ``_persist_check()``
checks the rest, raising ValueError (a Cholesky factor's positive diagonal, a non-negative
sum of squares). A bad file gives a one-line ValueError naming it, never another
exception.
"""

import inspect
import json
import os
import tempfile
import zipfile

import numpy as np

#: the format's name and the version this library writes (and reads, up to)
FORMAT = "vits_ref.persist"
FORMAT_VERSION = 1
_HEADER = "header.npy"
#: a header larger than this is not read (a few kB in practice)
_MAX_HEADER_BYTES = 16 * 2 ** 20
_BIT_GENERATORS = {c.__name__: c for c in (np.random.PCG64, np.random.PCG64DXSM,
                                           np.random.Philox, np.random.SFC64,
                                           np.random.MT19937)}
#: the array dtypes written (numbers, booleans, fixed-width strings; never objects)
_KINDS = "biufcUS"
#: the size policy (module docstring): what load may allocate at least, and per byte of file
LOAD_FLOOR_BYTES = 256 * 2 ** 20
LOAD_RATIO = 16
#: the hyperparameters that size arrays (the default estimate of a constructor's cost)
SIZE_NAMES = ("dim", "input_dim", "n_arms", "n_particles", "n_components", "n_classes",
              "n_mc", "hidden", "capacity", "chunk", "n_stages", "block", "batch_size")
#: deepest nesting of the header's JSON (a save nests a few levels)
_MAX_DEPTH = 64
#: the largest counter a state may hold (a float64 counts exactly up to it)
_MAX_COUNT = 2 ** 53


class Persistent:
    """Mixin of the objects :func:`save` writes: engines, policies, VTS, ``Bandit``.

    Declares nothing itself (see the module docstring for the declarations a class makes);
    adds :meth:`save`. Models and diffusion priors make the same declarations without the
    mixin (they sit below :mod:`vits_ref.inference`); they are saved as part of an engine.
    """

    _persist_state = ()
    _persist_growing = ()
    _persist_bounds = ()

    def save(self, path):
        """Write this object to ``path`` (an ``.npz`` file, no pickle); see :func:`save`.

        Returns
        -------
        path
        """
        return save(self, path)


# ----------------------------------------------------------------------- declarations
def _declared(cls, name):
    """The union of ``name`` (a tuple) over the class and its bases, bases first."""
    out = []
    for klass in reversed(cls.__mro__):
        for field in klass.__dict__.get(name, ()):
            if field not in out:
                out.append(field)
    return tuple(out)


def _is_library(cls):
    return cls.__module__.split(".")[0] == "vits_ref"


def _constructible(cls):
    return _is_library(cls) and (callable(getattr(cls, "_params", None))
                                 or hasattr(cls, "_persist_params"))


def registry():
    """``{class name: class}`` of every library class :func:`load` may construct: the
    subclasses of :class:`Persistent`, of :class:`vits_ref.models.Model` and of
    :class:`vits_ref.diffusion.base.DiffusionPriorBase` defined in vits_ref that declare
    their hyperparameters."""
    from ..diffusion.base import DiffusionPriorBase
    from ..models.base import Model

    found, todo = {}, [Persistent, Model, DiffusionPriorBase]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if _constructible(cls) and cls not in (Persistent, Model, DiffusionPriorBase):
            other = found.setdefault(cls.__qualname__, cls)
            if other is not cls:  # pragma: no cover - a library invariant (tested)
                raise RuntimeError(f"two persistent classes are named {cls.__qualname__}")
    return found


def _params(obj):
    """The constructor's keyword arguments of ``obj``, from its declarations."""
    cls = type(obj)
    if callable(getattr(obj, "_params", None)):
        params = dict(obj._params())
    else:
        names = cls._persist_params
        names = names if isinstance(names, dict) else {n: n for n in names}
        params = {arg: getattr(obj, attr) for arg, attr in names.items()}
    if ("seed" not in params and "seed" in inspect.signature(cls).parameters
            and hasattr(obj, "seed")):
        # a Generator's future is in the streams' states, which are saved; its own
        # seed sequence is not (the loaded object's seed attribute is then None)
        seed = obj.seed
        params["seed"] = None if isinstance(seed, np.random.Generator) else seed
    return params


# ----------------------------------------------------------------------------- write
class _Writer:
    def __init__(self):
        self.arrays = {}

    def array(self, a, where):
        if a.dtype.kind not in _KINDS:
            raise TypeError(f"cannot save {where}: an array of dtype {a.dtype} (only numbers, "
                            f"booleans and strings are written; no pickle)")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = a
        return {"array": key}

    def value(self, v, where):
        """The JSON description of ``v`` (arrays set aside); TypeError if it has none."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            return float(v)
        if isinstance(v, np.ndarray):
            return self.array(v, where)
        if isinstance(v, (tuple, list)):
            tag = "tuple" if isinstance(v, tuple) else "list"
            return {tag: [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if isinstance(v, dict):
            bad = [k for k in v if not isinstance(k, str)]
            if bad:
                raise TypeError(f"cannot save {where}: a dict with a key {bad[0]!r} that is "
                                f"not a string")
            return {"dict": {k: self.value(x, f"{where}[{k!r}]") for k, x in v.items()}}
        if isinstance(v, np.random.SeedSequence):
            return {"seed_sequence": {"entropy": self.value(v.entropy, where),
                                      "spawn_key": list(v.spawn_key),
                                      "pool_size": v.pool_size,
                                      "n_children_spawned": v.n_children_spawned}}
        if isinstance(v, np.random.Generator):
            return {"generator": self.value(v.bit_generator.state, f"{where}.bit_generator")}
        return self.obj(v, where, construct=True)

    def obj(self, v, where, construct):
        cls = type(v)
        name = cls.__qualname__
        if callable(v) and not hasattr(cls, "_persist_state"):
            raise TypeError(f"cannot save {where}: {name} is a callable (a user-supplied "
                            f"function or class cannot be described without pickle)")
        if not _is_library(cls) or not hasattr(cls, "_persist_state"):
            raise TypeError(f"cannot save {where}: {name} (from {cls.__module__}) is not a "
                            f"vits_ref class with declared fields; a user-supplied object "
                            f"cannot be described without pickle")
        if construct and registry().get(name) is not cls:
            raise TypeError(f"cannot save {where}: {name} declares no hyperparameters "
                            f"(_params or _persist_params), so it cannot be rebuilt")
        out = {"object": name}
        if construct:
            params = _params(v)
            out["params"] = {k: self.value(x, f"{where}.{k}") for k, x in params.items()}
        out["state"] = {f: self.state(getattr(v, f), f"{where}.{f}")
                        for f in _declared(cls, "_persist_state")}
        return out

    def state(self, v, where):
        # objects held in the state exist once the owner is constructed: their state only
        if hasattr(type(v), "_persist_state") and not isinstance(v, type):
            return self.obj(v, where, construct=False)
        if isinstance(v, list) and v and all(hasattr(type(x), "_persist_state") for x in v):
            return {"list": [self.state(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        return self.value(v, where)


def save(obj, path):
    """Write ``obj`` (an engine, a policy, VTS or a ``Bandit``) to the file ``path``
    (a str or path-like, written as given: no suffix is added) and return ``path``.

    The file (``.npz``, written whole or not at all: a temporary file renamed) holds the
    format version, the object's hyperparameters as JSON, its state and its random
    streams' states; :func:`load` reads it back. Nothing is pickled.

    Raises
    ------
    TypeError
        If ``obj`` (or something it holds) is not a library class with declared fields: a
        user-supplied model, prior or callable cannot be described without pickle.
    """
    name = type(obj).__qualname__
    w = _Writer()
    desc = w.obj(obj, name, construct=True)
    table = {k: [a.dtype.str, list(a.shape)] for k, a in w.arrays.items()}
    header = json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "object": desc,
                         "arrays": table})
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".vits_ref-save-", suffix=".npz", dir=folder)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
            with zf.open(_HEADER, "w") as f:
                np.lib.format.write_array(f, np.array(header), allow_pickle=False)
            for key, a in w.arrays.items():
                with zf.open(f"{key}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, a, allow_pickle=False)
        # mkstemp makes the file 0600; give it the mode open() would (0666 less the
        # umask), as the CLI's writer does, so a model saved for a process of another user
        # can be read by it
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _umask():
    """The process's umask (read from /proc where it can be, so that no other thread sees
    it changed; else set and restored at once)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------------------ read
class _Reader:
    """The open file: its members checked against the header before any array is read."""

    def __init__(self, path):
        self.path = path
        try:
            self.zf = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
            self.fail(f"not a complete save file ({exc}); it is truncated, or was not "
                      f"written by save")
        self.members = {i.filename: i for i in self.zf.infolist()}
        self.file_size = os.path.getsize(path)
        self._check_stored()

    def _check_stored(self):
        """The size policy's first rule: members stored as save writes them (uncompressed),
        so that no member holds more bytes than the file."""
        total = 0
        for info in self.members.values():
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                self.fail(f"its member {info.filename!r} is compressed: save stores members "
                          f"uncompressed, and load reads no others (a compressed member "
                          f"could expand far beyond the file)")
            total += info.file_size
        if total > self.file_size:
            self.fail(f"its members claim {total} bytes, more than the file's "
                      f"{self.file_size}: the file is damaged")

    def fail(self, what):
        raise ValueError(f"{self.path}: {what}") from None

    def close(self):
        self.zf.close()

    def _npy_header(self, member):
        """``(shape, fortran, dtype, offset)`` of a member's ``.npy`` header."""
        fmt = np.lib.format
        with self.zf.open(member) as f:
            version = fmt.read_magic(f)
            read = {(1, 0): fmt.read_array_header_1_0,
                    (2, 0): fmt.read_array_header_2_0}.get(version)
            if read is None:
                raise ValueError(f"unknown .npy version {version}")
            shape, fortran, dtype = read(f, max_header_size=2 ** 16)
            return shape, fortran, dtype, f.tell()

    def header(self):
        info = self.members.get(_HEADER)
        if info is None:
            self.fail(f"no {_HEADER}: not a file written by vits_ref's save")
        if info.file_size > _MAX_HEADER_BYTES:
            self.fail(f"its header is {info.file_size} bytes (at most {_MAX_HEADER_BYTES})")
        try:
            with self.zf.open(_HEADER) as f:
                text = np.lib.format.read_array(f, allow_pickle=False)
            head = json.loads(str(text[()]))
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, IndexError) as exc:
            self.fail(f"unreadable header ({exc}): the file is damaged or truncated")
        except RecursionError:
            self.fail(f"its header nests deeper than {_MAX_DEPTH} levels: not a file "
                      f"written by save")
        if _depth(head) > _MAX_DEPTH:
            self.fail(f"its header nests deeper than {_MAX_DEPTH} levels: not a file "
                      f"written by save")
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            self.fail("not a file written by vits_ref's save (no format name in its header)")
        version = head.get("version")
        if not isinstance(version, int) or version < 1:
            self.fail(f"invalid format version {version!r}")
        if version > FORMAT_VERSION:
            self.fail(f"format version {version} is newer than this vits_ref reads "
                      f"(up to {FORMAT_VERSION}): upgrade vits_ref to load it")
        self.table = head.get("arrays")
        if not isinstance(self.table, dict) or not isinstance(head.get("object"), dict):
            self.fail("its header lacks the object or the array table")
        self._check_members()
        return head["object"]

    def _check_members(self):
        """Every array of the table present, with its dtype and shape in its ``.npy``
        header, and its member's size (from the zip directory) that of the data."""
        self.shapes = {}
        for key, entry in self.table.items():
            info = self.members.get(f"{key}.npy")
            if info is None:
                self.fail(f"the array {key} is missing: the file is truncated or damaged")
            try:
                dtype, shape = np.dtype(entry[0]), tuple(int(s) for s in entry[1])
                if dtype.kind not in _KINDS or min(shape, default=0) < 0:
                    raise ValueError(f"dtype {dtype}, shape {shape}")
                got_shape, _, got_dtype, offset = self._npy_header(info)
            except (OSError, ValueError, EOFError, TypeError, IndexError, SyntaxError,
                    zipfile.BadZipFile) as exc:
                self.fail(f"the array {key} has an unreadable header ({exc})")
            if got_shape != shape or got_dtype != dtype:
                self.fail(f"the array {key} is {got_dtype} {got_shape} but its header says "
                          f"{dtype} {shape}")
            size = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if info.file_size != size:
                self.fail(f"the array {key} holds {info.file_size} bytes, not the {size} its "
                          f"shape {shape} needs: the file is truncated or damaged")
            self.shapes[key] = (dtype, shape)

    def array(self, key):
        if key not in self.shapes:
            self.fail(f"the description names an array {key!r} that is not in the file")
        try:
            with self.zf.open(f"{key}.npy") as f:
                return np.lib.format.read_array(f, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            self.fail(f"the array {key} is unreadable ({exc}): the file is damaged")

    # -- values --------------------------------------------------------------------------
    def value(self, v, where):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, dict) and "object" in v and "params" in v:
            return self.construct(v, where)
        if isinstance(v, list) or not isinstance(v, dict) or len(v) != 1:
            self.fail(f"{where}: an invalid description")
        (tag, body), = v.items()
        if tag == "array":
            return self.array(body)
        if tag in ("tuple", "list") and isinstance(body, list):
            out = [self.value(x, f"{where}[{i}]") for i, x in enumerate(body)]
            return tuple(out) if tag == "tuple" else out
        if tag == "dict" and isinstance(body, dict):
            return {k: self.value(x, f"{where}[{k!r}]") for k, x in body.items()}
        if tag == "seed_sequence" and isinstance(body, dict):
            try:
                return np.random.SeedSequence(
                    self.value(body["entropy"], where), spawn_key=tuple(body["spawn_key"]),
                    pool_size=body["pool_size"],
                    n_children_spawned=body["n_children_spawned"])
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                self.fail(f"{where}: an invalid seed sequence ({exc})")
        if tag == "generator":
            state = self.value(body, where)
            cls = _BIT_GENERATORS.get(state.get("bit_generator") if isinstance(state, dict)
                                      else None)
            if cls is None:
                self.fail(f"{where}: an unknown bit generator")
            gen = np.random.Generator(cls())
            self._set_state(gen, state, where)
            return gen
        self.fail(f"{where}: an invalid description (tag {tag!r})")

    def _set_state(self, gen, state, where):
        try:
            gen.bit_generator.state = state
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            self.fail(f"{where}: an invalid random generator state ({exc})")

    def construct(self, desc, where):
        """The object of a description: constructed, then its state put in place."""
        if set(desc) != {"object", "params", "state"} or not isinstance(desc["params"], dict):
            self.fail(f"{where}: an invalid object description")
        cls = registry().get(desc["object"]) if isinstance(desc["object"], str) else None
        if cls is None:
            self.fail(f"{where}: unknown class {desc['object']!r} (not a vits_ref class "
                      f"that can be loaded)")
        params = {k: self.value(x, f"{where}.{k}") for k, x in desc["params"].items()}
        try:
            obj = cls(**params)
        except (TypeError, ValueError) as exc:
            self.fail(f"{where}: its saved hyperparameters are invalid for "
                      f"{cls.__qualname__} ({exc})")
        self.restore(obj, desc["state"], where)
        return obj

    # -- state ---------------------------------------------------------------------------
    def restore(self, obj, state, where):
        """Check the saved state against ``obj`` (shapes from the table, no array read),
        then read it and put it in place."""
        self._check(obj, {"object": type(obj).__qualname__, "state": state}, where)
        self._put(obj, state, where)
        self._check_values(obj, where)

    @staticmethod
    def _filled(obj, v, f, counted):
        """The parts of state array ``v`` (field ``f``) that hold data: all of it, or for
        a buffer its first ``count`` entries along its axis (one count per leading index
        where the count is an array: VTS's ``counts[arm]`` rows of arm ``arm``)."""
        if f not in counted:
            return [v]
        count, axis = counted[f]
        n = np.asarray(getattr(obj, count))
        if n.ndim == 0:
            return [np.take(v, np.arange(int(n)), axis=axis)]
        return [np.take(v[idx], np.arange(int(n[idx])), axis=axis - n.ndim)
                for idx in np.ndindex(n.shape)]

    def _check_values(self, obj, where):
        """The engine's own invariants on the restored state: finite floats (a growing
        buffer up to its count), counters in ``[0, 2**53]``; nested objects alike."""
        cls = type(obj)
        growing = _declared(cls, "_persist_growing")
        nonfinite = _declared(cls, "_persist_nonfinite")
        counted = {array: (count, axis) for count, array, axis
                   in _declared(cls, "_persist_bounds")}
        counts = {count for count, _, _ in _declared(cls, "_persist_bounds")}
        for f in _declared(cls, "_persist_state"):
            v, at = getattr(obj, f), f"{where}.{f}"
            if hasattr(type(v), "_persist_state") and not isinstance(v, type):
                self._check_values(v, at)
            elif isinstance(v, list) and v and all(hasattr(type(x), "_persist_state")
                                                   for x in v):
                for i, x in enumerate(v):
                    self._check_values(x, f"{at}[{i}]")
            elif isinstance(v, bool) or f in nonfinite:
                continue
            elif isinstance(v, int):
                if not 0 <= v <= _MAX_COUNT:
                    self.fail(f"{at} = {v} is not a count in [0, 2**53]")
            elif isinstance(v, float):
                if not np.isfinite(v):
                    self.fail(f"{at} = {v} is not finite")
            elif isinstance(v, np.ndarray) and v.dtype.kind in "iu":
                # an integer array is a count where a bound declares it (VTS's counts per
                # arm); others are not (a generator's raw state words)
                if f not in counts or not v.size:
                    continue
                if v.min() < 0 or v.max() > _MAX_COUNT:
                    self.fail(f"{at} holds {int(v.min())} .. {int(v.max())}, not counts in "
                              f"[0, 2**53]")
            elif isinstance(v, np.ndarray) and v.dtype.kind in "fc":
                if f in growing and f not in counted:
                    continue  # a buffer (or scratch) whose filled part no count declares
                if not all(np.all(np.isfinite(p)) for p in self._filled(obj, v, f, counted)):
                    self.fail(f"{at} holds values that are not finite (NaN or inf)")
        hook = getattr(obj, "_persist_check", None)
        if hook is not None:
            try:
                hook()
            except ValueError as exc:  # the class's own invariant
                self.fail(f"{where}: {exc}")

    def _check(self, cur, enc, where):
        if isinstance(enc, dict) and set(enc) == {"object", "state"}:
            cls = type(cur)
            if enc["object"] != cls.__qualname__ or not isinstance(enc["state"], dict):
                self.fail(f"{where}: holds a {enc['object']!r}, expected a "
                          f"{cls.__qualname__}")
            fields = _declared(cls, "_persist_state")
            if set(enc["state"]) != set(fields):
                missing = sorted(set(fields) - set(enc["state"]))
                extra = sorted(set(enc["state"]) - set(fields))
                self.fail(f"{where}: the saved state's fields differ from "
                          f"{cls.__qualname__}'s (missing {missing}, unknown {extra})")
            growing = _declared(cls, "_persist_growing")
            for f in fields:
                self._check_field(getattr(cur, f), enc["state"][f], f"{where}.{f}",
                                  f in growing)
            return
        self._check_field(cur, enc, where, False)

    def _check_field(self, cur, enc, where, growing):
        if isinstance(enc, dict) and set(enc) == {"object", "state"}:
            return self._check(cur, enc, where)
        if isinstance(enc, dict) and "array" in enc:
            if cur is None:  # set by a later fit (a learned prior's standardisation)
                return
            key = enc["array"]
            if key not in self.shapes or not isinstance(cur, np.ndarray):
                self.fail(f"{where}: expected an array")
            dtype, shape = self.shapes[key]
            ok = dtype == cur.dtype and len(shape) == cur.ndim
            if ok and not growing:
                ok = shape == cur.shape
            elif ok:  # a buffer: larger (or equal) along the axis it grows on
                ok = sum(s != c for s, c in zip(shape, cur.shape, strict=True)) <= 1 and all(
                    s >= c for s, c in zip(shape, cur.shape, strict=True))
            if not ok:
                self.fail(f"{where}: the saved array is {dtype} {shape} but the object "
                          f"built from the saved hyperparameters has {cur.dtype} {cur.shape}"
                          f"{' (or larger)' if growing else ''}")
            return
        if isinstance(enc, dict) and set(enc) <= {"tuple", "list"} and len(enc) == 1:
            items = next(iter(enc.values()))
            if isinstance(cur, (tuple, list)) and isinstance(items, list):
                if len(items) != len(cur):
                    self.fail(f"{where}: {len(items)} saved items, the object has {len(cur)}")
                for i, (c, e) in enumerate(zip(cur, items, strict=True)):
                    self._check_field(c, e, f"{where}[{i}]", growing)
            return
        if isinstance(cur, np.ndarray):
            self.fail(f"{where}: expected an array")
        if isinstance(cur, dict) and not (isinstance(enc, dict) and "dict" in enc):
            self.fail(f"{where}: expected a dict")
        if isinstance(cur, np.random.Generator) and not (isinstance(enc, dict)
                                                         and "generator" in enc):
            self.fail(f"{where}: expected a random generator's state")
        # a count stays an int (it slices buffers), a float a number, a flag a bool
        kinds = ((bool, (bool,)), (int, (int,)), (float, (int, float)))
        for kind, allowed in kinds:
            if isinstance(cur, kind):
                if not isinstance(enc, allowed) or (kind is not bool
                                                    and isinstance(enc, bool)):
                    self.fail(f"{where}: expected a {kind.__name__}, got {enc!r}")
                break

    def _put(self, obj, state, where):
        cls = type(obj)
        values = {}
        for f in _declared(cls, "_persist_state"):
            cur, enc = getattr(obj, f), state[f]
            if isinstance(enc, dict) and set(enc) == {"object", "state"}:
                self._put(cur, enc["state"], f"{where}.{f}")
            elif (isinstance(enc, dict) and "list" in enc and isinstance(cur, list)
                  and all(isinstance(e, dict) and "state" in e for e in enc["list"])):
                for i, (c, e) in enumerate(zip(cur, enc["list"], strict=True)):
                    self._put(c, e["state"], f"{where}.{f}[{i}]")
            elif isinstance(enc, dict) and "generator" in enc and isinstance(
                    cur, np.random.Generator):
                state_ = self.value(enc["generator"], f"{where}.{f}")
                self._set_state(cur, state_, f"{where}.{f}")
            else:
                values[f] = self.value(enc, f"{where}.{f}")
        self._check_bounds(cls, obj, values, where)
        for f, v in values.items():
            cur = getattr(obj, f)
            if isinstance(cur, dict) and isinstance(v, dict):
                cur.clear()  # in place: a Diagnostics keeps its type
                cur.update(v)
            else:
                setattr(obj, f, v)
        hook = getattr(obj, "_persist_restored", None)
        if hook is not None:
            try:
                hook()
            except ValueError as exc:  # a class's own consistency check
                self.fail(f"{where}: {exc}")

    def _check_bounds(self, cls, obj, values, where):
        for count, array, axis in _declared(cls, "_persist_bounds"):
            n = values.get(count, getattr(obj, count))
            a = values.get(array, getattr(obj, array))
            n = np.asarray(n)
            if n.dtype.kind not in "iu" or np.any(n < 0) or np.any(n > a.shape[axis]):
                self.fail(f"{where}.{count} = {n.tolist()!r} does not fit {array} of shape "
                          f"{a.shape} (at most {a.shape[axis]} along axis {axis})")
            # a buffer doubles when full: it is at most twice its count, or as built
            initial = getattr(obj, array).shape[axis]
            cap = max(initial, 2 * int(np.max(n, initial=0)))
            if array in _declared(cls, "_persist_growing") and a.shape[axis] > cap:
                self.fail(f"{where}.{array} has {a.shape[axis]} rows along axis {axis}, more "
                          f"than twice its count {count} = {int(np.max(n, initial=0))} (a "
                          f"buffer doubles when full)")


def _depth(v):
    """How deep the JSON value ``v`` nests (iteratively: no recursion on a crafted file)."""
    deepest, todo = 0, [(v, 1)]
    while todo:
        x, d = todo.pop()
        deepest = max(deepest, d)
        if d > _MAX_DEPTH:
            break
        if isinstance(x, dict):
            todo.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            todo.extend((y, d + 1) for y in x)
    return deepest


def _plain(v):
    """A raw (JSON) hyperparameter as the constructor would get it where it is a scalar or
    a tuple or list of scalars (an MLP's ``hidden``); None for arrays and objects."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ("tuple", "list"):
        items = next(iter(v.values()))
        if isinstance(items, list) and all(isinstance(x, (int, float)) for x in items):
            return tuple(items)
    return None


def size_ints(v):
    """The integers of a hyperparameter (an int, or the ints of a tuple); [] otherwise."""
    items = v if isinstance(v, tuple) else (v,)
    return [max(x, 0) for x in items if isinstance(x, int) and not isinstance(x, bool)]


def default_cost(params):
    """The default estimate of a constructor's allocation, in float64 entries, from its
    hyperparameters (scalars and tuples, :func:`_plain`): four square matrices whose side is
    the sum of its sizes (:data:`SIZE_NAMES`), as a ``dim x dim`` factor, its copy and its
    scratch."""
    side = sum(sum(size_ints(params.get(n))) for n in SIZE_NAMES)
    return 4 * side * side


def _nested(params, name):
    """Hyperparameter ``name`` of the first object described among ``params``' values
    (breadth first), as :func:`_plain` gives it, or the class name of an object given
    for it; None if none has it."""
    todo = list(params.values())
    while todo:
        v = todo.pop(0)
        if isinstance(v, dict) and "object" in v and isinstance(v.get("params"), dict):
            if name in v["params"]:
                x = v["params"][name]
                obj = x.get("object") if isinstance(x, dict) else None
                return obj if isinstance(obj, str) else _plain(x)
            todo.extend(v["params"].values())
    return None


def _cost(desc):
    """The estimated allocation (float64 entries) of building the object ``desc`` (raw
    JSON) and every object its hyperparameters describe; a class may declare
    ``_persist_cost(params)`` (its own share), ``_persist_nested`` (names its share reads
    from the objects it is given where its own hyperparameters lack them,
    :func:`_nested`) and ``_persist_copies`` (``{param: count param}``: a described
    object built that many times, as PerArm's engine per arm)."""
    reg, total, todo = registry(), 0, [(desc, 1)]
    while todo:
        d, times = todo.pop()
        if isinstance(d, dict) and "object" in d and isinstance(d.get("params"), dict):
            cls = reg.get(d["object"]) if isinstance(d["object"], str) else None
            params = d["params"]
            plain = {k: _plain(x) for k, x in params.items()}
            for k in getattr(cls, "_persist_nested", ()):
                if plain.get(k) is None:
                    plain[k] = _nested(params, k)
            own = getattr(cls, "_persist_cost", None)
            total += times * (own(plain) if own is not None else default_cost(plain))
            copies = getattr(cls, "_persist_copies", {})
            for k, x in params.items():
                more = sum(size_ints(plain.get(copies[k]))) + 1 if k in copies else 1
                todo.append((x, times * more))
        elif isinstance(d, dict):
            todo.extend((x, times) for x in d.values())
        elif isinstance(d, list):
            todo.extend((x, times) for x in d)
    return total


def _expected(expect):
    """The class ``expect`` names: a class, or a name :func:`registry` knows."""
    if expect is None or isinstance(expect, type):
        return expect
    if isinstance(expect, str):
        cls = registry().get(expect)
        if cls is None:
            raise ValueError(f"expect={expect!r} is not a class load reads (one of "
                             f"{sorted(registry())})")
        return cls
    raise TypeError(f"expect must be a class or a class name, got {type(expect).__name__}")


def load(path, expect=None):
    """The engine, policy, VTS or ``Bandit`` written by :func:`save` at ``path``.

    Its next draws and updates equal those the saved object would have made, bit for bit.

    Parameters
    ----------
    path : str or os.PathLike
    expect : class or str, optional
        The class the file must hold (a class, a subclass of it passing, or a class name
        such as ``"LinTS"``): a file holding another is refused before anything is built.

    Raises
    ------
    ValueError
        (One line naming the file.) If it is not a complete file written by
        :func:`save` (truncated, damaged, with compressed members), is of a newer format
        version, holds arrays whose sizes do not match its header, each other or the
        object its hyperparameters build, declares sizes that would allocate more than
        the size policy allows (module docstring), holds a state that breaks the
        object's invariants (NaN or inf, a negative count), or holds another class than
        ``expect``; checked before any array is read where the header suffices.
    TypeError
        If ``expect`` is neither a class nor a class name.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, vits_ref as vr
    >>> eng = vr.LinTS(2, seed=0).update(np.eye(2), np.ones(2))
    >>> path = os.path.join(tempfile.mkdtemp(), "lints.npz")
    >>> copy = vr.load(eng.save(path), expect=vr.LinTS)
    >>> bool(np.array_equal(copy.sample(3), eng.sample(3)))
    True
    """
    path = os.fspath(path)
    want = _expected(expect)
    rd = _Reader(path)
    try:
        desc = rd.header()
        if set(desc) != {"object", "params", "state"}:
            rd.fail("its header does not describe an object")
        name = desc["object"]
        cls = registry().get(name) if isinstance(name, str) else None
        if cls is None:
            rd.fail(f"unknown class {name!r} (not a vits_ref class that can be loaded)")
        if want is not None and not issubclass(cls, want):
            rd.fail(f"holds a {name}, not the {want.__qualname__} expected")
        need = 8 * _cost(desc)
        allowed = max(LOAD_FLOOR_BYTES, LOAD_RATIO * rd.file_size)
        if need > allowed:
            rd.fail(f"its hyperparameters would make load allocate about {need / 2**20:.0f} "
                    f"MiB, more than its size allows ({allowed / 2**20:.0f} MiB: the larger "
                    f"of {LOAD_FLOOR_BYTES // 2**20} MiB and {LOAD_RATIO} x the file); it "
                    f"is damaged or was not written by save")
        try:
            return rd.construct(desc, name)
        except (RecursionError, OverflowError, TypeError, KeyError, IndexError,
                AttributeError) as exc:
            # a description save never writes (a crafted file): one line, not a traceback
            rd.fail(f"an invalid description ({type(exc).__name__}: {exc})")
    finally:
        rd.close()
