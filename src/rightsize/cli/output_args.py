"""The output options every command shares: `-o FILE`, `--format` and `--force`.

- `-o`'s extension chooses the format when `--format` is absent (`.html` HTML, `.md` or
  `.markdown` Markdown, `.json` JSON, `.txt` or anything else the default table); when both
  are given and disagree, `--format` wins and a note says so.
- `check_outputs` refuses, before the command does any work, an output it could not or must
  not write: one of its own input files (or another of its outputs), a link, folder, pipe,
  or a read-only file without `--force` (`atomic_write.check_output`).
- `emit` writes the result, atomically, or prints it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rightsize.atomic_write import check_output, refuse_overlaps, write_text_atomic

FORMAT_OF_SUFFIX = {
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".txt": "table",
}

PathArg = str | Path | None


def add_output_options(
    sp: argparse.ArgumentParser, formats: Sequence[str], force_help: str = "replace a read-only -o file"
) -> None:
    """--format (choices `formats`; absent: from -o's extension, else the first), -o and --force."""
    sp.add_argument(
        "--format",
        choices=formats,
        default=None,
        help=f"output format (default: from -o's extension, else {formats[0]})",
    )
    sp.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    sp.add_argument("--force", action="store_true", help=force_help)
    sp.set_defaults(output_formats=tuple(formats))


def resolve_format(args: argparse.Namespace) -> None:
    """Fill in `args.format` for a command with output formats (see the module's note)."""
    formats = getattr(args, "output_formats", None)
    if not formats:
        return
    output = getattr(args, "output", None)
    implied = FORMAT_OF_SUFFIX.get(Path(output).suffix.lower()) if output else None
    if args.format is None:
        args.format = implied if implied in formats else formats[0]
        if implied is not None and implied not in formats and implied != "table":
            _note(f"this command writes no {implied}; -o {output} gets {formats[0]}.")
    elif implied is not None and implied not in (args.format, "table"):
        _note(f"--format {args.format} and -o {output} disagree; writing {args.format}, as --format says.")


def check_outputs(
    args: argparse.Namespace,
    inputs: Sequence[PathArg],
    more: Sequence[tuple[str, PathArg, str]] = (),
) -> None:
    """Refuse, before any work, `-o` and the `more` outputs (flag, path, what) the command
    could not or must not write: an input, another output, a link, folder or pipe, a
    read-only file without --force."""
    outputs: list[tuple[str, PathArg, str]] = [("-o", getattr(args, "output", None), "the output")]
    outputs += more
    refuse_overlaps([(flag, path) for flag, path, _ in outputs], inputs)
    force = bool(getattr(args, "force", False))
    for _flag, path, what in outputs:
        if path:
            check_output(path, what, force=force)


def emit(text: str, args: argparse.Namespace) -> None:
    """Write `text` to -o (atomically) or standard output."""
    output = getattr(args, "output", None)
    if output:
        write_text_atomic(output, text + "\n", force=bool(getattr(args, "force", False)))
    else:
        sys.stdout.write(text + "\n")


def _note(text: str) -> None:
    sys.stderr.write(f"rightsize: note: {text}\n")
