"""Write output files atomically: a report is either all there or not changed at all.

`write_text_atomic` writes into a temporary file in the target's own folder, flushes and
fsyncs it, then renames it over the target (`os.replace`, atomic on POSIX). So an
interrupted write, a full disk or a crash leaves the earlier file intact, never half a
report. It never writes through a symbolic link (a link could point anywhere: the
command refuses instead), refuses a folder, creates missing parent folders, and turns
every operating-system error into a `BadInput` that says what, why and how to fix.
Character devices (`/dev/null`, a terminal) are written directly: they cannot be renamed
over and hold nothing to protect.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from rightsize.errors import BadInput

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def write_text_atomic(path: str | Path, text: str, what: str = "the output") -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path written."""
    return write_bytes_atomic(path, text.encode("utf-8"), what)


def write_bytes_atomic(path: str | Path, data: bytes, what: str = "the output") -> Path:
    target = Path(path).expanduser()
    if str(path).strip() == "":
        raise BadInput(f"No file name was given for {what}.", "The path is empty.", "Pass a file name.")
    mode = _check_target(target, what)
    if mode is not None and stat.S_ISCHR(mode):
        _write_device(target, data, what)
        return target
    _make_parent(target, what)
    tmp_fd, tmp_name = _temp_in(target, what)
    try:
        _write_all(tmp_fd, data)
        os.fsync(tmp_fd)
        os.fchmod(tmp_fd, stat.S_IMODE(mode) if mode is not None else _default_mode())
        os.close(tmp_fd)
        tmp_fd = -1
        os.replace(tmp_name, target)
    except OSError as err:
        if tmp_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(tmp_fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise _os_error(target, what, err, existed=mode is not None) from None
    return target


def _check_target(target: Path, what: str) -> int | None:
    """The existing target's mode (None when it does not exist); refuses links, folders, FIFOs."""
    try:
        st = target.lstat()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise _os_error(target, what, err, existed=False) from None
    if stat.S_ISLNK(st.st_mode):
        raise BadInput(
            f"Will not write {what} to {target}: it is a symbolic link.",
            "Writing through a link would overwrite whatever file it points to.",
            "Give the real file's path, remove the link, or leave out -o to print to standard output.",
        )
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(
            f"Cannot write {what} to {target}: it is a folder.",
            "The output must be a file.",
            f"Give a file name inside it, e.g. {target / 'report.txt'}.",
        )
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode)):
        raise BadInput(
            f"Will not write {what} to {target}: it is not a regular file.",
            "It is a pipe, socket or block device.",
            "Give a regular file's path, or leave out -o and redirect standard output.",
        )
    return st.st_mode


def _make_parent(target: Path, what: str) -> None:
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadInput(
            f"Cannot create the folder {parent} for {what}.",
            _reason(err),
            "Check the path (a part of it may be a file) and your permissions, or write elsewhere.",
        ) from None


def _temp_in(target: Path, what: str) -> tuple[int, str]:
    """A new temporary file beside the target (O_EXCL: never an existing file or link)."""
    import tempfile

    try:
        return tempfile.mkstemp(prefix=f".{target.name[:100]}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise _os_error(target, what, err, existed=target.exists()) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_device(target: Path, data: bytes, what: str) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as err:
        raise _os_error(target, what, err, existed=True) from None


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)) + "."


def _os_error(target: Path, what: str, err: OSError, existed: bool) -> BadInput:
    kept = f" {target} keeps its previous contents." if existed else " Nothing was written."
    if err.errno in _DISK_FULL:
        return BadInput(
            f"Cannot write {what} to {target}: the disk is full.",
            _reason(err) + kept,
            "Free some space or write to another disk.",
        )
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return BadInput(
            f"Cannot write {what} to {target}: permission denied.",
            _reason(err) + kept,
            "Write to a folder you may write to, or fix the permissions.",
        )
    if err.errno == errno.ENAMETOOLONG:
        return BadInput(
            f"Cannot write {what}: the file name is too long.", _reason(err), "Use a shorter name."
        )
    return BadInput(
        f"Cannot write {what} to {target}.", _reason(err) + kept, "Check the path, or write elsewhere."
    )
