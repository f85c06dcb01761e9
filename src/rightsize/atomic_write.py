"""Write output files safely: atomically, never through a link, never over an input, never
over a file its permissions protect. Every file rightsize writes goes through here.

`write_text_atomic` writes into a temporary file in the target's own folder, flushes and
fsyncs it, then renames it over the target (`os.replace`, atomic on POSIX). So an
interrupted write, a full disk or a crash leaves the earlier file intact, never half a
report. It never writes through a symbolic link (a link could point anywhere: the
command refuses instead), refuses folders, pipes and sockets (writing a FIFO blocks until
someone reads it), creates missing parent folders, and turns every operating-system error
into a `BadInput` that says what, why and how to fix. Character devices (`/dev/null`, a
terminal) are written directly: they cannot be renamed over and hold nothing to protect.

Permissions are respected even for root, who may write anything: a file with no write
bit (mode 0444) or a folder with none is refused unless the caller passes `force` (the
command's `--force`). `check_output` runs the same checks without writing, so a command
can refuse before doing its work; `refuse_overlaps` refuses an output that is one of the
command's own inputs (by inode: hard links, `..` and links count) or another output.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from rightsize.errors import BadInput

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH

PathLike = str | Path


def write_text_atomic(
    path: PathLike, text: str, what: str = "the output", *, force: bool = False, mode: int | None = None
) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path written."""
    return write_bytes_atomic(path, text.encode("utf-8"), what, force=force, mode=mode)


def write_bytes_atomic(
    path: PathLike, data: bytes, what: str = "the output", *, force: bool = False, mode: int | None = None
) -> Path:
    """Write `data` to `path` atomically. `mode` sets the new file's permissions (on the
    temporary file, before the rename); by default a replaced file keeps its mode and a new
    one gets 0666 less the umask. `force` replaces a read-only file."""
    target = _target(path, what)
    st = check_output(target, what, force=force)
    if st is not None and stat.S_ISCHR(st.st_mode):
        _write_device(target, data, what)
        return target
    _make_parent(target, what)
    tmp_fd, tmp_name = _temp_in(target, what)
    try:
        _write_all(tmp_fd, data)
        os.fsync(tmp_fd)
        os.fchmod(tmp_fd, mode if mode is not None else _kept_mode(st))
        _keep_owner(tmp_fd, st)
        os.close(tmp_fd)
        tmp_fd = -1
        os.replace(tmp_name, target)  # replaces a link itself, never what it points to
    except BaseException as err:
        if tmp_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(tmp_fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(err, OSError):
            raise _os_error(target, what, err, existed=st is not None) from None
        raise
    _sync_folder(target.parent)
    return target


def check_output(path: PathLike, what: str = "the output", *, force: bool = False) -> os.stat_result | None:
    """Refuse what `write_bytes_atomic` would refuse, without writing; the existing target's
    status (None when it does not exist). Never opens the target, so a FIFO cannot block."""
    target = _target(path, what)
    try:
        st = target.lstat()
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise _os_error(target, what, err, existed=False) from None
    if st is not None:
        _refuse_kind(target, st, what)
        if stat.S_ISCHR(st.st_mode):
            return st
        if not force and _read_only(target, st):
            raise BadInput(
                f"Will not replace {what} {target}: it is read-only (mode {stat.S_IMODE(st.st_mode):04o}).",
                "Its permissions say it must not be written, and replacing it would discard them.",
                "Pass --force to replace it anyway, make it writable (chmod u+w), or write elsewhere.",
            )
    if not force:
        _check_folder(target, what)
    return st


def refuse_overlaps(
    outputs: Sequence[tuple[str, PathLike | None]],
    inputs: Sequence[PathLike | None],
    fix: str | None = None,
) -> None:
    """Refuse an output (label, path) that is one of the command's `inputs` or another output.

    Files are compared by device and inode (`os.path.samefile`), so a hard link, a `..`
    path or a link to an input counts (an input that does not exist cannot be destroyed);
    outputs that do not exist yet are compared by their resolved paths. `fix` replaces the
    default advice (give the output another file name)."""
    named = [(label, str(p)) for label, p in outputs if p is not None and str(p) != ""]
    for label, out in named:
        for inp in inputs:
            if inp is not None and str(inp) != "" and _same_existing(out, str(inp)):
                alias = "" if Path(out) == Path(str(inp)) else " (the same file)"
                raise BadInput(
                    f"{label} {out} is the input file {inp}{alias}.",
                    "Writing there would destroy the input.",
                    fix or f"Give {label} another file name.",
                )
    for i, (label, out) in enumerate(named):
        for other_label, other in named[i + 1 :]:
            if _same_file(out, other):
                raise BadInput(
                    f"{label} {out} and {other_label} {other} are the same file.",
                    "One output would overwrite the other.",
                    f"Give {label} and {other_label} different file names.",
                )


def _same_existing(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _same_file(a: str, b: str) -> bool:
    if _same_existing(a, b):
        return True
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def _target(path: PathLike, what: str) -> Path:
    if str(path).strip() == "":
        raise BadInput(f"No file name was given for {what}.", "The path is empty.", "Pass a file name.")
    if "\0" in str(path):
        raise BadInput(
            f"The file name for {what} holds a NUL character.",
            "No file name can.",
            "Pass a plain file name.",
        )
    return Path(path).expanduser()


def _refuse_kind(target: Path, st: os.stat_result, what: str) -> None:
    """Links, folders, pipes, sockets and block devices are never written."""
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
            "It is a pipe, socket or block device (writing a pipe would wait for a reader forever).",
            "Give a regular file's path, or leave out -o and redirect standard output.",
        )


def _read_only(path: Path, st: os.stat_result) -> bool:
    """No write permission for this user (a folder: no write or search permission); for
    root, who may write anything, no write bit at all."""
    if os.geteuid() == 0:
        return not st.st_mode & _WRITE_BITS
    return not os.access(path, os.W_OK | (os.X_OK if stat.S_ISDIR(st.st_mode) else 0))


def _check_folder(target: Path, what: str) -> None:
    """The folder the file goes into (or the nearest one that exists) must be writable."""
    folder = target.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        st = folder.stat()
    except OSError:
        return  # creating the folder reports it
    if not stat.S_ISDIR(st.st_mode):
        return
    if _read_only(folder, st):
        raise BadInput(
            f"Cannot write {what} into the folder {folder}: it is read-only to you "
            f"(mode {stat.S_IMODE(st.st_mode):04o}).",
            "Writing there needs write permission on the folder.",
            "Write to a folder you may write to, or pass --force to write there anyway.",
        )


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
    import tempfile  # here, not at the top: it slows every command's start

    try:
        return tempfile.mkstemp(prefix=f".{target.name[:100]}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise _os_error(target, what, err, existed=os.path.lexists(target)) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_device(target: Path, data: bytes, what: str) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISCHR(os.fstat(fd).st_mode):  # swapped for something else meanwhile
                raise BadInput(f"Will not write {what} to {target}: it changed while being checked.")
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as err:
        raise _os_error(target, what, err, existed=True) from None


def _kept_mode(st: os.stat_result | None) -> int:
    """The replaced file's permissions, or a new file's default (0666 less the umask)."""
    return stat.S_IMODE(st.st_mode) if st is not None else default_mode()


def _keep_owner(fd: int, st: os.stat_result | None) -> None:
    """Root replacing someone's file gives the new one the same owner."""
    if st is not None and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: some file systems cannot sync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def default_mode(executable: bool = False) -> int:
    """A new file's permissions under the current umask (0644 or, executable, 0755 with umask 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if executable else 0o666) & ~umask


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
