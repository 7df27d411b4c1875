"""Atomic file writes: every file the experiments write (chunks, the manifest, CSV, JSON,
PNG, the report's pages) goes through :func:`write_bytes`.

A reader, or a run resumed after a ``kill -9``, sees either the old file or the new one,
never a torn one: the bytes go to a temporary file in the target's folder, are flushed to
disk (``fsync``), and the temporary file is renamed over the target (``os.replace``,
atomic within one file system), then the folder's entry is flushed too.

The rename replaces a symlink planted at the target's name instead of writing through it,
so a link such as ``OUT/curves.csv -> ~/.bashrc`` cannot make a run overwrite its target.

The temporary file is created with mode ``0o666`` and the kernel applies the umask, as
for ``open(path, "w")``: outputs get the same permissions whether or not they are written
atomically (``tempfile.mkstemp`` would make them ``0o600``).
"""

import contextlib
import os
import secrets

#: Prefix of the temporary files: hidden, and recognisable as this tool's (``--force``
#: removes leftovers of a killed write; a name of this form is never a user's file).
TMP_PREFIX = ".tmp-vits_ref-"


def _create_temporary(folder):
    """An exclusive new temporary file in ``folder``: ``(fd, path)``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(folder, TMP_PREFIX + secrets.token_hex(8))
        try:
            # O_EXCL: never opens an existing file or follows a link planted at the name
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 64 random bits collided
            continue


def _fsync_folder(folder):
    """Flush ``folder``'s entries (the rename) to disk, where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. a platform without directory handles
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path, data):
    """Write ``data`` (bytes) to ``path`` atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The target; its folder must exist. A file or symlink at ``path`` is replaced (a
        symlink's target is left untouched).
    data : bytes
        The whole content.

    Notes
    -----
    The content goes to ``FOLDER/.tmp-vits_ref-XXXXXXXXXXXXXXXX`` (:data:`TMP_PREFIX`),
    flushed with ``os.fsync``, then ``os.replace`` renames it to ``path``. An exception
    (or ``KeyboardInterrupt``) removes the temporary file and leaves ``path`` as it was;
    a SIGKILL may leave the temporary file, never a partial ``path``.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_bytes(os.path.join(d, "a.txt"), b"done\\n")
    >>> sorted(os.listdir(d))
    ['a.txt']
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = _create_temporary(folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_folder(folder)
