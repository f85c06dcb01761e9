"""Read a user-named input file safely: regular files only, a size cap, no contents in messages.

Specs name other files (a model's config.json, a file of request lengths), and a careless or
hostile spec could name `/dev/zero` (endless), a FIFO (blocks forever), a huge file, or a
private file whose contents an error message would then print. `read_text_capped` opens
without blocking, checks the opened file is a regular file, reads at most `max_bytes`, and
raises a `BadInput` naming the file and the problem but never quoting what is inside it.

Every file rightsize reads comes through here: `read_json_capped` / `loads_json` (depth and number
caps checked on the text before parsing), `load_user_yaml` (depth and alias expansion checked on the
event stream before anything is built, `check_tree` for data already in memory), `confined` (a path
named by another file kept inside a folder, links resolved) and `clean_key` (a key or path fit to
quote in a message).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rightsize import yamlio
from rightsize.errors import BadInput
from rightsize.yamlio import MAX_DIGITS

MiB = 2**20


def read_text_capped(
    path: str | Path, what: str, max_bytes: int, fix: str = "", follow_links: bool = True
) -> str:
    """The file's text (UTF-8, a leading BOM dropped); BadInput unless a regular file within `max_bytes`.
    The size is checked on the opened file (fstat) before a byte is read. With `follow_links` False a
    symbolic link as the last part of the path is refused (for a path already resolved and checked)."""
    fix = fix or f"Point the spec at a regular file of at most {_size(max_bytes)}."
    target = shown_path(Path(path).expanduser())  # for messages: printable, not too long
    fd = _opened(Path(path).expanduser(), follow_links, what, target, fix)
    try:
        data = _read_regular(fd, what, target, max_bytes, fix)
    except OSError as err:
        raise BadInput(f"Cannot read {what} {target}.", _reason(err), fix) from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise BadInput(
            f"Cannot read {what} {target}.",
            f"It is not UTF-8 text (byte {err.start} is not valid UTF-8).",
            "Save it as UTF-8 text.",
        ) from None


def shown_path(path: str | Path, limit: int = 300) -> str:
    """A path fit for a message: control characters replaced, at most `limit` characters."""
    return clean_key(path, limit)


def _opened(path: Path, follow_links: bool, what: str, target: str, fix: str) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    try:
        return os.open(path, flags)
    except ValueError:  # a NUL in the name
        raise BadInput(f"Cannot open {what} {target}.", "Its name holds a NUL character.", fix) from None
    except FileNotFoundError:
        raise BadInput(f"Cannot find {what} {target}.", "No such file.", fix) from None
    except OSError as err:
        if err.errno == errno.ELOOP and not follow_links:
            raise BadInput(f"Will not read {what} {target}.", "It became a symbolic link.", fix) from None
        raise BadInput(f"Cannot open {what} {target}.", _reason(err), fix) from None


def _read_regular(fd: int, what: str, target: str, max_bytes: int, fix: str) -> bytes:
    """The bytes of an opened regular file of at most `max_bytes` (checked on fstat before reading)."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"Cannot read {what} {target}.", "It is a folder, not a file.", fix)
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(
            f"Will not read {what} {target}: it is {_file_kind(st.st_mode)}, not a regular file.",
            "Only regular files are read (a device, pipe or socket could never end, or block).",
            fix,
        )
    if st.st_size > max_bytes:
        raise BadInput(
            f"Will not read {what} {target}: it is {_size(st.st_size)}.",
            f"{_cap(what)} is at most {_size(max_bytes)}.",
            fix,
        )
    data = _read_at_most(fd, max_bytes + 1)
    if len(data) > max_bytes:  # it grew while we read it
        raise BadInput(
            f"Will not read {what} {target}: it is larger than {_size(max_bytes)}.",
            "It grew while read.",
            fix,
        )
    return data


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((name for test, name in kinds if test(mode)), "a special file")


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


# ------------------------------------------------------------------------------ JSON

MAX_JSON_DEPTH = 64
"""Deepest nesting read from a JSON file: a plan is about 8 levels, a capture 7; a hostile file
nested thousands deep would otherwise exhaust the stack of whatever walks it."""
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def loads_json(text: str, what: str, where: str | Path, fix: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON text from a user's file; BadInput (naming `what` and `where`, never quoting the text)
    when it is not JSON, nested deeper than `max_depth`, or holds a number of more than MAX_DIGITS digits.
    Both caps are checked on the text, before anything builds or walks a structure."""
    check_json_text(text, what, where, fix, max_depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BadInput(
            f"Cannot read {what} {where}.",
            f"It is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}.",
            fix,
        ) from None
    except (RecursionError, ValueError) as err:  # unmatched brackets nested deep; a number JSON cannot hold
        raise BadInput(
            f"Cannot read {what} {where}.", f"It is not valid JSON ({type(err).__name__}).", fix
        ) from None


def check_json_text(
    text: str, what: str, where: str | Path, fix: str, max_depth: int = MAX_JSON_DEPTH
) -> None:
    """The caps of `loads_json` alone (for JSON Lines: checked once on the whole text, then each line
    parsed); BadInput when a number has more than MAX_DIGITS digits or brackets nest deeper than `max_depth`."""
    raw = text.encode("utf-8", "surrogatepass")
    outside = _outside_strings(raw)
    if _has_long_number(raw) and _has_long_number(outside):
        raise BadInput(
            f"Will not read {what} {where}: it holds a number with more than {MAX_DIGITS} digits.",
            "No count, size, time or price rightsize reads is that large, and such a number cannot be converted.",
            fix,
        )
    if json_depth(outside, max_depth) > max_depth:
        raise BadInput(
            f"Will not read {what} {where}: it is nested more than {max_depth} levels deep.",
            f"{_cap(what)} is a few levels of keys; a deeper file is not one.",
            fix,
        )


def _outside_strings(raw: bytes) -> bytes:
    """The JSON text with its strings' contents removed (C-speed: a split on quotes when no string holds
    an escape, a regex otherwise)."""
    if b"\\" not in raw:
        return b"".join(raw.split(b'"')[0::2])
    return _STRING.sub(b"", raw)


def _has_long_number(raw: bytes) -> bool:
    return b"0" * (MAX_DIGITS + 1) in raw.translate(_DIGITS_AS_ZERO)


def json_depth(outside: bytes, stop_after: int = MAX_JSON_DEPTH) -> int:
    """How deep the brackets of a JSON text nest (its strings removed: `_outside_strings`), counting at
    most `stop_after` + 1 levels: each round deletes the innermost `[]`/`{}` pairs (C-speed replaces)."""
    brackets = outside.translate(None, _NOT_BRACKET).replace(b"{", b"[").replace(b"}", b"]")
    depth = 0
    while brackets and depth <= stop_after:
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            break  # unmatched brackets: json.loads says where
        brackets = inner
        depth += 1
    return depth


def read_json_capped(
    path: str | Path, what: str, max_bytes: int, fix: str = "", max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """A user's JSON file, read through `read_text_capped` and parsed through `loads_json`."""
    return loads_json(read_text_capped(path, what, max_bytes, fix), what, Path(path), fix, max_depth)


# ------------------------------------------------------------------------------ folders


def confined(path: str | Path, base: str | Path, what: str, allow_outside: bool, fix: str) -> Path:
    """`path` with links resolved, refused unless it lies inside `base` (links resolved too) or
    `allow_outside` is set. A link inside `base` that points out of it is refused like a path out."""
    try:
        target = Path(path).expanduser().resolve()
        root = Path(base).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as err:  # a link loop, a name too long, a NUL
        raise BadInput(
            f"Cannot open {what} {shown_path(path)}.",
            f"Its path cannot be resolved ({type(err).__name__}).",
            fix,
        ) from None
    if allow_outside or target == root or target.is_relative_to(root):
        return target
    through_link = Path(os.path.normpath(Path(base) / path)).is_relative_to(Path(os.path.normpath(base)))
    how = "a link inside it points out of it" if through_link else "the path leads out of it"
    raise BadInput(
        f"Will not read {what} {shown_path(path)}: it is outside the folder {shown_path(root)}.",
        f"{_cap(how)}.",
        fix,
    )


def clean_key(key: Any, limit: int = 40) -> str:
    """A key from a user's file, fit to name in a message: printable, at most `limit` characters."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(key))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# ------------------------------------------------------------------------------ YAML

MAX_YAML_DEPTH = 32
"""Deepest nesting of a user's YAML file (a spec is about 4 levels)."""
MAX_YAML_NODES = 100_000
"""Most values in a user's YAML file, aliases counted each time they are used (a spec holds dozens)."""
_QUOTED = re.compile(r"'[^']{4,}'|\"[^\"]{4,}\"")


def load_user_yaml(
    text: str,
    what: str,
    where: str | Path,
    fix: str,
    max_depth: int = MAX_YAML_DEPTH,
    max_nodes: int = MAX_YAML_NODES,
) -> Any:
    """Parse a user's YAML file: shape checked first (`check_shape`), every problem a BadInput."""
    try:
        check_shape(text, what, where, fix, max_depth, max_nodes)
        return yamlio.safe_load(text)
    except yaml.YAMLError as err:
        raise yaml_error(what, where, err) from None
    except (ValueError, OverflowError, RecursionError) as err:  # a value PyYAML could not build
        raise BadInput(
            f"Cannot read {what} {where}.", f"A value cannot be read ({type(err).__name__}).", fix
        ) from None


def check_shape(
    text: str,
    what: str,
    where: str | Path,
    fix: str,
    max_depth: int = MAX_YAML_DEPTH,
    max_nodes: int = MAX_YAML_NODES,
) -> None:
    """Refuse YAML nested deeper than `max_depth` or with more than `max_nodes` values (aliases counted
    each time they are used), from the event stream, before anything recursive builds it."""
    depth = nodes = 0
    sizes: dict[str, int] = {}  # anchor -> values under it
    starts: list[tuple[str | None, int]] = []
    for event in yaml.parse(text, Loader=yamlio.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            nodes += sizes.get(str(event.anchor), 1)
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            nodes += 1
            starts.append((event.anchor, nodes))
            if depth > max_depth:
                raise _too_deep(what, where, max_depth, fix)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            anchor, first = starts.pop()
            if anchor:
                sizes[anchor] = nodes - first + 1
        if nodes > max_nodes:
            raise _too_many(what, where, max_nodes, fix)


def check_tree(
    data: Any,
    what: str,
    where: str | Path,
    fix: str,
    max_depth: int = MAX_YAML_DEPTH,
    max_nodes: int = MAX_YAML_NODES,
) -> None:
    """The caps of `check_shape` on data already built (a spec given inline or through the API): shared
    objects are counted each time they are reached, so a structure built from aliases is refused too."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise _too_many(what, where, max_nodes, fix)
        if isinstance(item, Mapping | list | tuple):
            if depth > max_depth:
                raise _too_deep(what, where, max_depth, fix)
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)


def _too_deep(what: str, where: str | Path, max_depth: int, fix: str) -> BadInput:
    return BadInput(
        f"{_cap(what)} {where} is nested too deeply (more than {max_depth} levels).",
        f"{_cap(what)} is a few levels of keys; a deeper file is not one.",
        fix,
    )


def _too_many(what: str, where: str | Path, max_nodes: int, fix: str) -> BadInput:
    return BadInput(
        f"{_cap(what)} {where} holds too many values (more than {max_nodes:,}, aliases expanded).",
        f"{_cap(what)} holds dozens of values, not thousands; this looks like a generated or malicious file.",
        fix,
    )


def yaml_error(what: str, where: str | Path, err: yaml.YAMLError) -> BadInput:
    """A BadInput for malformed YAML: the line, column and PyYAML's reason, with anything the reason
    quotes from the file (an alias or tag name) left out."""
    mark = getattr(err, "problem_mark", None)
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or type(err).__name__
    context = getattr(err, "context", None)
    why = _QUOTED.sub("'...'", f"{problem} ({context})" if context else str(problem))
    if isinstance(err, yamlio.ValueProblem):
        return BadInput(
            f"Cannot read {what} {where}: the value{at} is out of range.",
            _cap(why) + ".",
            "Write numbers with a unit suffix or an exponent (70B, 1.5e12) and dates as YYYY-MM-DD.",
        )
    return BadInput(
        f"Cannot parse {what} {where}: malformed YAML{at}.",
        _cap(why),
        "Check the indentation, colons and quoting on that line and the one before it.",
    )
