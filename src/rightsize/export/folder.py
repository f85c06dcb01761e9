"""Write an export's files into a folder safely, and a manifest of what was written.

Every name is checked before anything is written, so a refused export writes nothing:
a symbolic link, folder, pipe or socket with an output's name is refused (a link is never
followed, so the file it points to is neither written nor made executable); an existing
file with other contents is kept unless `force`; one with the same contents is left as it
is. Each file is written atomically by `atomic_write` (scripts get their executable bit on
the temporary file, before the rename), and the manifest, `rightsize-manifest-<target>.json`,
is written last: each file's name, size, sha256 and mode, with the plan's name and kind
and the rightsize version. One manifest per target, so exporting Slurm scripts and
Prometheus rules into one folder keeps both.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rightsize._version import __version__
from rightsize.atomic_write import check_output, default_mode, refuse_overlaps, write_bytes_atomic
from rightsize.errors import BadInput

MANIFEST_KIND = "rightsize_export_manifest"
_EXECUTABLE = (".sbatch", ".sh")
_MAX_MANIFEST_BYTES = 2**20


@dataclass(frozen=True)
class _File:
    name: str
    data: bytes
    mode: int


def manifest_name(target: str) -> str:
    return f"rightsize-manifest-{target}.json"


def write_export(
    out_dir: Path,
    files: dict[str, str],
    target: str,
    about: dict[str, Any],
    *,
    force: bool = False,
    inputs: Sequence[str | Path | None] = (),
) -> list[Path]:
    """Write `files` (name -> text) into `out_dir`, then the manifest; the paths, manifest last.

    `about` (the plan's name and kind) goes into the manifest; `inputs` are the command's
    input files, never overwritten even with `force`."""
    outputs = [_file(name, text) for name, text in files.items()]
    outputs.append(_manifest(outputs, target, about))
    refuse_overlaps(
        [("--out", out_dir / f.name) for f in outputs],
        inputs,
        "Give --out another folder, or move the input out of it.",
    )
    ours = _earlier_export(out_dir / outputs[-1].name)
    actions = [(f, _action(out_dir / f.name, f, ours)) for f in outputs]
    different = [f.name for f, action in actions if action == "replace"]
    if different and not force:
        raise BadInput(
            f"{len(different)} file{'s' if len(different) > 1 else ''} in {out_dir} would be overwritten: "
            f"{', '.join(different)}.",
            "They hold other contents than this export's (and not what an earlier export left there), "
            "and export keeps files it did not write unless told.",
            "Pass --force to replace them, or give --out an empty or new folder.",
        )
    for f, action in actions:  # permissions (a read-only file or folder), before writing any
        if action != "keep":
            check_output(out_dir / f.name, f"the exported {f.name}", force=force)
    for f, action in actions:
        if action != "keep":
            write_bytes_atomic(out_dir / f.name, f.data, f"the exported {f.name}", force=force, mode=f.mode)
    return [out_dir / f.name for f in outputs]


def _file(name: str, text: str) -> _File:
    if not name or name in (".", "..") or "/" in name or "\0" in name or name.startswith("."):
        raise BadInput(
            f"The export names a file {name!r} that is not a plain file name.",
            "Exported files are written directly into --out.",
            "This is a bug in the exporter; please report it.",
        )
    return _File(name, text.encode("utf-8"), default_mode(executable=name.endswith(_EXECUTABLE)))


def _manifest(outputs: list[_File], target: str, about: dict[str, Any]) -> _File:
    doc = {
        "kind": MANIFEST_KIND,
        "schema_version": 1,
        "rightsize": __version__,
        "target": target,
        **about,
        "files": [
            {
                "name": f.name,
                "bytes": len(f.data),
                "sha256": hashlib.sha256(f.data).hexdigest(),
                "mode": f"{f.mode:04o}",
            }
            for f in outputs
        ],
    }
    return _file(manifest_name(target), json.dumps(doc, indent=2) + "\n")


def _action(path: Path, f: _File, ours: dict[str, str]) -> str:
    """ "write" (new), "keep" (already these contents and mode), "rewrite" (same contents,
    other mode, or what an earlier export wrote there, unchanged since: `ours` maps its
    names to their sha256) or "replace" (other contents); refuses what may never be
    written (a link, folder, pipe, socket or device). Permissions are checked by the caller."""
    what = f"the exported {f.name}"
    st = check_output(path, what, force=True)  # links, folders, pipes: refused even with force
    if st is None:
        return "write"
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(
            f"Will not write the exported {f.name} to {path}: it is a device.",
            "Exported files are regular files.",
            "Give --out a folder without devices in it.",
        )
    same = st.st_size == len(f.data) and _contents(path, len(f.data)) == f.data
    if same and stat.S_IMODE(st.st_mode) & 0o111 == f.mode & 0o111:
        return "keep"  # even when read-only: nothing needs writing
    if same or (f.name in ours and _sha256(path, st.st_size) == ours[f.name]):
        return "rewrite"
    return "replace"


def _earlier_export(manifest: Path) -> dict[str, str]:
    """Name -> sha256 of the files an earlier export's manifest lists, itself included (when
    the file at the manifest's name is one of ours); empty when there is none."""
    from rightsize.safe_read import read_text_capped

    try:
        doc = json.loads(read_text_capped(manifest, "the earlier manifest", _MAX_MANIFEST_BYTES))
    except (BadInput, ValueError, RecursionError):
        return {}
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != MANIFEST_KIND
        or not isinstance(doc.get("files"), list)
    ):
        return {}
    ours = {
        str(e["name"]): str(e["sha256"])
        for e in doc["files"]
        if isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("sha256"), str)
    }
    ours[manifest.name] = _sha256(manifest, _MAX_MANIFEST_BYTES) or ""
    return ours


def _sha256(path: Path, size: int) -> str | None:
    data = _contents(path, size)
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _contents(path: Path, limit: int) -> bytes | None:
    """Up to `limit` + 1 bytes of an existing regular file (opened without following a link
    or blocking); None when it cannot be read as one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 2**20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
