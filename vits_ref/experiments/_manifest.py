"""``OUT/manifest.json``: what an output folder holds and what it was computed from.

One JSON object per output folder, rewritten atomically (:mod:`._atomic`) by
read-modify-write (:func:`update`), so that the chunk store, the output writers and the
command line each change their own keys without overwriting the others':

``format``
    :data:`FORMAT`, raised when the layout changes (a folder of another format is refused).
``writer``
    :data:`WRITER`: marks the manifest as this tool's (:func:`ours`), so that a
    ``manifest.json`` of something else (a web app's) is never taken for one: ``--force``
    removes no file such a manifest lists.
``experiment``, ``options``, ``versions``
    The run: its experiment, the command's options (compared on resume), the versions
    that must match for chunks to be mixed (:func:`versions`).
``stages``
    Per stage of the experiment: the fingerprint of what its results depend on and its
    chunks, each with its file, size, SHA-256 and the shape and dtype of every array
    (:class:`vits_ref.experiments._chunks.Store`).
``outputs``
    Per final file written (CSV, JSON, PNG, pages): size, SHA-256, kind and shape
    (:mod:`vits_ref.experiments._outputs`).
``finished``
    The files of a finished run, set by the command line once the run has returned, and
    removed when a run starts again in the folder.
``inputs``
    Per data file (``--data``): its SHA-256, with the size and modification time it was
    computed at (:func:`data_digest`).
"""

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile

from . import _atomic

#: Format of ``manifest.json`` (raised when its layout changes): 2 added the chunks'
#: checksums, array shapes and dtypes, the final files' records and the data digests.
FORMAT = 2
#: The manifest's file name in an output folder.
NAME = "manifest.json"
#: The ``writer`` of a manifest this tool wrote.
WRITER = "vits_ref"
#: What messages call a manifest this tool did not write.
FOREIGN = "a manifest.json that vits_ref did not write"


class ManifestError(ValueError):
    """An output folder's ``manifest.json`` cannot be read."""


def versions():
    """The versions that must match for chunks to be mixed."""
    import platform

    import numba
    import numpy as np

    from .. import __version__

    return {"vits_ref": __version__, "numpy": np.__version__, "numba": numba.__version__,
            "python": platform.python_version()}


def new():
    """An empty manifest of this version."""
    return {"format": FORMAT, "writer": WRITER, "experiment": None, "options": None,
            "versions": versions(), "stages": {}, "outputs": {}}


def ours(man):
    """Whether the manifest ``man`` (a dict) was written by this tool: marked with
    :data:`WRITER`, or (written before the mark) of format 2 with this tool's keys."""
    if man.get("writer") == WRITER:
        return True
    vers = man.get("versions")
    return ("writer" not in man and man.get("format") == 2 and isinstance(vers, dict)
            and "vits_ref" in vers and isinstance(man.get("stages"), dict)
            and isinstance(man.get("outputs", {}), dict))


def path(folder):
    """The manifest's path in ``folder``."""
    return os.path.join(folder, NAME)


def read(folder):
    """The manifest of ``folder`` (a dict), or None when there is none.

    Raises
    ------
    ManifestError
        If it exists but is not a JSON object.
    """
    p = path(folder)
    try:
        with open(p, "rb") as fh:
            man = json.loads(fh.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{p} is unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(man, dict):
        raise ManifestError(f"{p} is unreadable (not a JSON object)")
    return man


def write(folder, man):
    """Write ``man`` as ``folder``'s manifest, atomically."""
    text = json.dumps(man, indent=1, sort_keys=True, default=str)
    _atomic.write_bytes(path(folder), text.encode("utf-8"))


@contextlib.contextmanager
def _locked(folder):
    """Hold ``folder``'s manifest lock: a file lock in the temporary folder, keyed by the
    folder's real path, so that two processes writing one output folder (two
    ``report`` commands, a ``run`` beside a ``sweep``) change the manifest one after the
    other. The lock file lives outside the output folder, which holds only what its
    manifest lists; without a writable temporary folder nothing is locked."""
    key = hashlib.sha1(os.path.realpath(folder).encode()).hexdigest()
    where = os.path.join(tempfile.gettempdir(), "vits_ref-manifest-locks")
    try:
        os.makedirs(where, exist_ok=True)
        fh = open(os.path.join(where, key + ".lock"), "a")
    except OSError:
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
        yield


def update(folder, change):
    """Read ``folder``'s manifest (a :func:`new` one when there is none), apply
    ``change(manifest)`` to it in place, write it back; returns it. The read, the change
    and the write hold the folder's lock (:func:`_locked`): the change of another process
    is never read before it is written and then overwritten."""
    with _locked(folder):
        man = read(folder)
        if man is None or not ours(man):  # a foreign one is replaced (only with --force)
            man = new()
        man["writer"] = WRITER
        change(man)
        write(folder, man)
    return man


def mismatch(man, experiment, options):
    """Why the chunks listed in ``man`` must not be mixed with a run of ``experiment``
    (None: any) and ``options`` (None: not compared); None when they may be."""
    if not ours(man):
        return FOREIGN
    if man.get("format") != FORMAT:
        return f"manifest format {man.get('format')} (this version writes {FORMAT})"
    if experiment is not None and man.get("experiment") not in (None, experiment):
        return f"experiment {man.get('experiment')!r}, not {experiment!r}"
    if man.get("versions") != versions():
        return f"versions {man.get('versions')} (now {versions()})"
    old = man.get("options")
    if options is not None and old is not None and old != options:
        changed = sorted(k for k in set(options) | set(old) if options.get(k) != old.get(k))
        return "other options (" + ", ".join(
            f"{k}: {old.get(k)!r} -> {options.get(k)!r}" for k in changed) + ")"
    return None


def data_digest(file, cached=None):
    """The content fingerprint of a data file: ``{"sha256", "size", "mtime_ns"}``.

    Parameters
    ----------
    file : str
        The data file.
    cached : dict or None
        A digest computed earlier (the manifest's ``inputs`` entry): reused without
        reading the file when its size and modification time (nanoseconds) are unchanged.

    Notes
    -----
    The size alone misses an edit that keeps it (a rating changed from 3 to 4); the
    SHA-256 of the bytes does not. The file is stat'ed before it is read, so a change
    while it is read shows on the next call as a new modification time.
    """
    st = os.stat(file)
    if (isinstance(cached, dict) and cached.get("size") == st.st_size
            and cached.get("mtime_ns") == st.st_mtime_ns and cached.get("sha256")):
        return dict(cached)
    h = hashlib.sha256()
    with open(file, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return {"sha256": h.hexdigest(), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
