"""Read a user-named input file safely: regular files only, a size cap, no contents in messages.

Specs name other files (a model's config.json, a file of request lengths), and a careless or
hostile spec could name `/dev/zero` (endless), a FIFO (blocks forever), a huge file, or a
private file whose contents an error message would then print. `read_text_capped` opens
without blocking, checks the opened file is a regular file, reads at most `max_bytes`, and
raises a `BadInput` naming the file and the problem but never quoting what is inside it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rightsize.errors import BadInput

MiB = 2**20


def read_text_capped(path: str | Path, what: str, max_bytes: int, fix: str = "") -> str:
    """The file's text (UTF-8, a leading BOM dropped); BadInput unless a regular file within `max_bytes`."""
    target = Path(path).expanduser()
    fix = fix or f"Point the spec at a regular file of at most {_size(max_bytes)}."
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BadInput(f"Cannot find {what} {target}.", "No such file.", fix) from None
    except OSError as err:
        raise BadInput(f"Cannot open {what} {target}.", _reason(err), fix) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise BadInput(f"Cannot read {what} {target}.", "It is a folder, not a file.", fix)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(
                f"Will not read {what} {target}.",
                "It is not a regular file (a device, pipe or socket could never end or block).",
                fix,
            )
        if st.st_size > max_bytes:
            raise BadInput(
                f"Will not read {what} {target}: it is {_size(st.st_size)}.",
                f"{what[0].upper() + what[1:]} is at most {_size(max_bytes)}.",
                fix,
            )
        data = _read_at_most(fd, max_bytes + 1)
    except OSError as err:
        raise BadInput(f"Cannot read {what} {target}.", _reason(err), fix) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while we read it
        raise BadInput(
            f"Will not read {what} {target}: it is larger than {_size(max_bytes)}.",
            "It grew while read.",
            fix,
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise BadInput(
            f"Cannot read {what} {target}.",
            f"It is not UTF-8 text (byte {err.start} is not valid UTF-8).",
            "Save it as UTF-8 text.",
        ) from None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, MiB))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _size(n: float) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n:.0f} bytes"


def _reason(err: OSError) -> str:
    return (err.strerror or type(err).__name__) + "."
