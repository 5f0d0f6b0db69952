"""Writing files so that a failure never loses or half-writes one, and reading text that names its file.

Every file the project writes (program, memory and bundle files, JSON reports,
figures, waveforms, exports, build stamps) goes through :func:`atomic_write`
(or :func:`atomic_open`, which collects the content and hands it to it):

1. the content is written to a temporary file in the *same directory* as the
   target (so that the final rename stays on one file system),
2. flushed and ``fsync`` ed,
3. renamed over the target (``os.replace``, atomic on POSIX), and the
   directory is ``fsync`` ed.

A failure at any step (a full disk, a read-only directory, an interrupt)
removes the temporary file and leaves the old target as it was, or no target
at all.  The error is an :class:`OSError` whose ``filename`` is the target.

:func:`check_output` says, before any work starts, whether a path can be
written at all (its directory exists and is writable, it is not a directory).
:func:`read_text` reads UTF-8 text and turns a decoding error into a
:class:`~ga2_hdl.isa.IsaError` naming the file and the byte offset.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import tempfile
from typing import Iterator

from ..isa import IsaError

__all__ = ["atomic_write", "atomic_open", "write_figure", "check_output", "check_output_dir", "read_text",
           "temporary_sibling"]

#: the one place bytes reach the disk (tests inject a full disk here)
_os_write = os.write


def temporary_sibling(path: str | os.PathLike, suffix: str = "") -> str:
    """A new, empty temporary file next to ``path`` (same directory), for a writer to fill and rename."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=f".tmp{suffix}", dir=directory)
    os.close(fd)
    return tmp


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass                    # some file systems cannot sync a directory; the rename is still atomic
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, data: str | bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` atomically: temporary file, fsync, rename."""
    path = os.fspath(path)
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OSError(e.errno, f"cannot write: {e.strerror}", path) from None
    try:
        try:
            view = memoryview(blob)
            while view:
                n = _os_write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise OSError(e.errno, f"not written ({e.strerror}); the file is as it was before", path) from None
        raise
    _fsync_dir(directory)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_figure(fig, path: str | os.PathLike, **savefig) -> str:
    """Render the Matplotlib figure ``fig`` and write it to ``path`` atomically (:func:`atomic_write`:
    a failure leaves the old figure, or none); the figure is closed.  ``savefig`` are Matplotlib's
    ``savefig`` arguments; the format is the path's ending (PNG without one) unless ``format`` says."""
    import matplotlib.pyplot as plt             # only here: the rest of this module is plain Python
    path = os.fspath(path)
    savefig.setdefault("format", os.path.splitext(path)[1].lstrip(".") or "png")
    buffer = io.BytesIO()
    fig.savefig(buffer, **savefig)
    plt.close(fig)
    atomic_write(path, buffer.getvalue())
    return path


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[io.IOBase]:
    """A file object for ``path`` whose content is written atomically when the block ends without error.

    ``mode`` is ``"w"`` (text) or ``"wb"``.  Nothing reaches ``path`` if the block raises.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode {mode!r}; use 'w' or 'wb'")
    buffer: io.IOBase = io.StringIO() if mode == "w" else io.BytesIO()
    yield buffer
    atomic_write(path, buffer.getvalue())


def check_output(path: str | os.PathLike, what: str = "output file") -> None:
    """Raise OSError (naming ``path``) unless a file can be written at ``path``: checked before any work."""
    path = os.fspath(path)
    if not path:
        raise OSError(errno.ENOENT, f"empty {what} name", path)
    if os.path.isdir(path):
        raise OSError(errno.EISDIR, f"the {what} is a directory", path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OSError(errno.ENOENT, f"cannot write the {what}: directory {directory} does not exist", path)
    _probe(directory, path, f"cannot write the {what}: directory {directory} is not writable")


def check_output_dir(path: str | os.PathLike, what: str = "output directory") -> None:
    """Raise OSError (naming ``path``) unless ``path`` is, or can be made as, a writable directory."""
    path = os.fspath(path)
    if not path:
        raise OSError(errno.ENOENT, f"empty {what} name", path)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise OSError(errno.ENOTDIR, f"the {what} exists and is not a directory", path)
        _probe(path, path, f"the {what} is not writable")
        return
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):           # the nearest existing ancestor must let us create it
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OSError(errno.ENOTDIR, f"cannot create the {what}: {parent} is not a directory", path)
    _probe(parent, path, f"cannot create the {what}: {parent} is not writable")


def _probe(directory: str, path: str, why: str) -> None:
    """Create and remove a file in ``directory``: the only honest test of writability (root ignores modes,
    a read-only mount ignores them too)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ga2-probe.", dir=directory)
    except OSError as e:
        raise OSError(e.errno, f"{why} ({e.strerror})", path) from None
    os.close(fd)
    os.unlink(tmp)


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of ``path``; a file that is not UTF-8 is an IsaError naming the file and the offset."""
    with open(path, "rb") as f:
        blob = f.read()
    try:
        return blob.decode("utf-8")
    except UnicodeDecodeError as e:
        line = blob.count(b"\n", 0, e.start) + 1
        raise IsaError(f"{os.fspath(path)}:{line}: not UTF-8 text (byte 0x{blob[e.start]:02x} at offset "
                       f"{e.start})") from None
