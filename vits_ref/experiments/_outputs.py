"""The final files of an output folder (CSV, JSON, PNG, pages): written atomically,
recorded in the folder's manifest, checked before a finished result is trusted, and the
only files besides the chunks that ``--force`` removes.

* :func:`write_output` (and :func:`text_output` for CSV writers) writes a file atomically
  (:func:`vits_ref.experiments._atomic.write_bytes`) and, in a folder with a
  ``manifest.json`` (an experiment's output folder), records its size, SHA-256, kind and
  shape under ``outputs`` (:func:`describe`).
* :func:`seal` marks the run finished (``finished``: its files); the command line seals
  once the run has returned and :func:`unseal` s before running again in the folder.
* :func:`damaged` checks each file of a finished run: present, a regular file, parses,
  has the recorded shape and the recorded checksum. The command line rebuilds a damaged
  result from the chunks instead of calling it finished.
* :func:`discard` (``--force``) removes what the manifest lists (chunks and outputs), this
  tool's leftover temporary files and the manifest, and names what it left.
* :func:`planted_links` finds symlinks in the names this tool writes.
"""

import contextlib
import csv
import hashlib
import io
import json
import os

from . import _atomic, _manifest

#: The chunks' folder in an output folder.
CHUNKS = "chunks"
#: Suffixes of the files this tool writes at the top of an output folder.
OWN_SUFFIXES = (".csv", ".json", ".png", ".md", ".html", ".npz")
#: What a finished folder's summary is called in messages.
FINISHED = "a finished result (summary.json)"

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def sha256(data):
    """The SHA-256 of ``data`` (bytes), in hex."""
    return hashlib.sha256(data).hexdigest()


def _no_constant(name):
    raise ValueError(f"{name} is not strict JSON")


def _png_shape(data):
    """``[height, width]`` of a PNG; every chunk's CRC is verified where Pillow (a
    dependency of matplotlib, which wrote the file) is installed."""
    if data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    shape = [int.from_bytes(data[20:24], "big"), int.from_bytes(data[16:20], "big")]
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - matplotlib requires Pillow
        return shape  # the checksum still covers every byte
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
    except Exception as exc:  # Pillow raises several types for a broken file
        raise ValueError(f"not a valid PNG ({type(exc).__name__}: {exc})") from None
    return shape


def _parse(name, data):
    """``(kind, shape)`` of file ``name`` holding ``data``; ValueError if it does not
    parse. Shapes: CSV ``[rows, most fields in a row]``, JSON ``[type, entries]``, PNG
    ``[height, width]``, text ``[lines]``, other ``[bytes]``."""
    ext = os.path.splitext(name)[1].lower()
    try:
        if ext == ".csv":
            rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline=""),
                                   strict=True))
            return "csv", [len(rows), max((len(r) for r in rows), default=0)]
        if ext == ".json":
            obj = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
            size = len(obj) if isinstance(obj, (dict, list)) else 1
            return "json", [type(obj).__name__, size]
        if ext == ".png":
            return "png", _png_shape(data)
        if ext in (".md", ".html", ".txt"):
            return "text", [data.decode("utf-8").count("\n")]
    except csv.Error as exc:
        raise ValueError(f"not valid CSV ({exc})") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    return "bytes", [len(data)]


def describe(name, data):
    """The manifest's record of an output file ``name`` holding ``data``: ``{"bytes",
    "sha256", "kind", "shape"}``."""
    kind, shape = _parse(name, data)
    return {"bytes": len(data), "sha256": sha256(data), "kind": kind, "shape": shape}


def _record(folder, name, rec):
    """Record output ``name`` in ``folder``'s manifest, if the folder has one (an
    experiment's output folder; a file written anywhere else is only written)."""
    if not os.path.isfile(_manifest.path(folder)):
        return
    try:
        _manifest.update(folder, lambda m: m.setdefault("outputs", {}).__setitem__(name, rec))
    except _manifest.ManifestError:
        pass  # unrecorded: a later check calls the file damaged and rebuilds it


def write_output(path, data):
    """Write a final output file atomically and record it in its folder's manifest.

    Parameters
    ----------
    path : str or os.PathLike
        The file (its folder must exist); a symlink there is replaced, not followed.
    data : bytes
        Its content.
    """
    path = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(path)
    rec = describe(name, data)
    _atomic.write_bytes(path, data)
    _record(folder, name, rec)


@contextlib.contextmanager
def text_output(path):
    """A text file to write (UTF-8, lines ended as written: ``csv.writer`` 's ``\\r\\n``
    stay), written by :func:`write_output` when the block ends without an exception
    (with one, ``path`` is left as it was).

    Examples
    --------
    >>> import csv, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> with text_output(p) as fh:
    ...     _ = csv.writer(fh).writerow(["a", 1])
    >>> open(p, newline="").read()
    'a,1\\r\\n'
    """
    buf = io.StringIO(newline="")
    yield buf
    write_output(path, buf.getvalue().encode("utf-8"))


def check(folder, name, rec):
    """Why output ``name`` of ``folder`` does not match its record ``rec`` (None: it
    does): missing, not a regular file, unparseable, another shape, another checksum."""
    if not isinstance(rec, dict):
        return "not recorded in the manifest"
    p = os.path.join(folder, name)
    if os.path.islink(p):
        return "a symlink"
    try:
        with open(p, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    try:
        kind, shape = _parse(name, data)
    except ValueError as exc:
        return f"does not parse: {exc}"
    if [kind, shape] != [rec.get("kind"), rec.get("shape")]:
        return f"{kind} of shape {shape}, the manifest records {rec.get('shape')}"
    if sha256(data) != rec.get("sha256"):
        return "its checksum differs from the manifest's"
    return None


def damaged(folder, man):
    """The files of the finished run recorded in ``man`` that fail :func:`check`:
    ``[(name, reason), ...]`` (empty: the result is intact)."""
    outs = man.get("outputs") or {}
    return [(name, why) for name in man.get("finished") or ()
            if (why := check(folder, name, outs.get(name))) is not None]


def seal(folder, files):
    """Mark the run in ``folder`` finished: ``files`` (paths) are its result. A file not
    recorded by :func:`write_output` is recorded from its content now. A run that wrote
    no file leaves nothing to protect and is not sealed."""
    names = sorted(n for n in {os.path.relpath(os.path.abspath(f), os.path.abspath(folder))
                               for f in files if os.path.isfile(f)} if _inside(n))
    if not names:
        return

    def change(man):
        outs = man.setdefault("outputs", {})
        for name in names:
            if name not in outs:
                with open(os.path.join(folder, name), "rb") as fh:
                    outs[name] = describe(name, fh.read())
        man["finished"] = names

    _manifest.update(folder, change)


def unseal(folder):
    """Mark the run in ``folder`` unfinished (a run starts there again)."""
    _manifest.update(folder, lambda man: man.pop("finished", None))


def _inside(rel):
    """Whether ``rel`` (from a manifest) names a path inside the folder."""
    if not isinstance(rel, str) or not rel or os.path.isabs(rel):
        return False
    return not os.path.normpath(rel).split(os.sep)[0] == ".."


def listed_files(man):
    """The paths (relative to the folder) of the files ``man`` says this tool wrote
    (none for a manifest this tool did not write)."""
    files = set()
    if man is None or not _manifest.ours(man):
        return []
    for stage in (man.get("stages") or {}).values():
        for entry in (stage.get("chunks") or {}).values():
            if _inside(entry.get("file")):
                files.add(entry["file"])
    files.update(n for n in (man.get("outputs") or {}) if _inside(n))
    return sorted(files)


def discard(folder, man):
    """Remove what ``man`` (``folder``'s manifest; None if unreadable) lists as written
    by this tool, this tool's temporary files, then the manifest, and the chunk folders
    left empty; anything else stays.

    A manifest this tool did not write (:func:`vits_ref.experiments._manifest.ours`)
    lists nothing: no file it names is removed (it is itself, at the name the run writes
    its own).

    Returns
    -------
    list of str
        Every file left in ``folder`` (paths relative to ``folder``; an empty folder ends
        with ``/``): files this tool did not write.
    """
    foreign = man is not None and not _manifest.ours(man)
    if foreign:
        man = None  # lists nothing of ours; its manifest.json is replaced by the run's
    listed = listed_files(man) if man is not None else []
    real = os.path.realpath(folder)
    for rel in listed:
        p = os.path.join(folder, rel)
        # never through a linked folder (chunks -> elsewhere): only files really inside
        if os.path.realpath(os.path.dirname(p)) != os.path.join(real, os.path.dirname(rel)) \
                .rstrip(os.sep):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.remove(p)  # a symlink itself is removed, never its target
    chunks = os.path.join(folder, CHUNKS)
    stages = set() if man is None else {
        os.path.join(chunks, s) for s in (man.get("stages") or {}) if _inside(s)}
    stages |= {os.path.join(folder, os.path.dirname(rel)) for rel in listed
               if os.path.dirname(rel)}
    remove_temporaries(folder, stages)
    with contextlib.suppress(FileNotFoundError):
        os.remove(_manifest.path(folder))  # a foreign one too: the run writes its own
    for d in [*sorted(stages, reverse=True), chunks]:
        if not os.path.islink(d):
            with contextlib.suppress(OSError):
                os.rmdir(d)  # only if empty
    return _left(folder)


def remove_temporaries(folder, stages=()):
    """Remove this tool's temporary files (:data:`vits_ref.experiments._atomic.TMP_PREFIX`:
    a write killed before its rename) from ``folder``, its chunk folders and ``stages``."""
    chunks = os.path.join(folder, CHUNKS)
    found = set(stages)
    if os.path.isdir(chunks) and not os.path.islink(chunks):
        found |= {e.path for e in os.scandir(chunks) if e.is_dir(follow_symlinks=False)}
    for d in [folder, *sorted(found)]:
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        for e in os.scandir(d):
            if e.name.startswith(_atomic.TMP_PREFIX) and e.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(e.path)


def _left(folder):
    """Every file (and empty folder, ending with ``/``) left in ``folder`` after
    :func:`discard`: paths relative to ``folder``, links not followed."""
    left = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        rel = "" if rel == "." else rel
        for f in files:
            left.append(os.path.join(rel, f))
        for d in list(dirs):
            p = os.path.join(root, d)
            if os.path.islink(p):
                left.append(os.path.join(rel, d))
                dirs.remove(d)
            elif not os.listdir(p):
                left.append(os.path.join(rel, d) + "/")
    return sorted(left)


def planted_links(folder):
    """Symlinks in ``folder`` at names this tool writes: the manifest, the chunks' folder
    and anything in it, the files the manifest lists, and top-level files with the
    suffixes of :data:`OWN_SUFFIXES`. Paths relative to ``folder``."""
    try:
        man = _manifest.read(folder)
    except _manifest.ManifestError:
        man = None
    named = set(listed_files(man)) if man is not None else set()
    found = [rel for rel in named if os.path.islink(os.path.join(folder, rel))]
    for e in os.scandir(folder):
        if e.is_symlink() and (e.name in (CHUNKS, _manifest.NAME)
                               or e.name.endswith(OWN_SUFFIXES)):
            found.append(e.name)
    chunks = os.path.join(folder, CHUNKS)
    if os.path.isdir(chunks) and not os.path.islink(chunks):
        for root, dirs, files in os.walk(chunks):
            for n in dirs + files:
                if os.path.islink(os.path.join(root, n)):
                    found.append(os.path.relpath(os.path.join(root, n), folder))
    return sorted(set(found))


def left_message(folder, left):
    """The line saying what :func:`discard` left in ``folder``."""
    return (f"--force: left {len(left)} files in {folder} that its manifest does not list "
            f"as written by vits_ref (one at a name the run writes is replaced): "
            f"{name_some(left)}")


def unlisted(folder):
    """The files at the top of ``folder`` (a folder with no manifest) that a run could
    overwrite: those with the suffixes of :data:`OWN_SUFFIXES`, and the chunks' folder;
    hidden files are not counted."""
    return sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(folder)
                  if not e.name.startswith(".")
                  and (e.name == CHUNKS or (e.name.endswith(OWN_SUFFIXES) and e.is_file())))


def name_some(paths, most=8):
    """``paths`` as one short phrase (at most ``most`` named)."""
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")
