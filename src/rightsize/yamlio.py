"""YAML reading with libyaml's C parser where PyYAML was built with it (`yaml.CSafeLoader`,
an order of magnitude faster on the catalog files), the pure-Python `SafeLoader` otherwise.
Both build the same plain Python objects (safe tags only).

Every YAML file a user names goes through `load_user_yaml`: the text's shape is checked from the
event stream before anything is built (nesting depth, and the number of values with every alias
counted each time it is used, so an alias bomb is refused in milliseconds), numbers of more than
`MAX_DIGITS` digits and impossible dates are refused where they are read, and every problem is a
`BadInput` that names the file, the line and the column but never quotes the file's text.
`check_tree` applies the same caps to data already in memory (a spec given inline).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rightsize.errors import BadInput
from rightsize.safe_read import MAX_DIGITS

_BaseLoader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

MAX_DEPTH = 32
"""Deepest nesting of a user's YAML file (a spec is about 4 levels)."""
MAX_NODES = 100_000
"""Most values in a user's YAML file, aliases counted each time they are used (a spec holds dozens)."""
_QUOTED = re.compile(r"'[^']{4,}'|\"[^\"]{4,}\"")


class _ValueProblem(yaml.constructor.ConstructorError):
    """A scalar that parses as YAML but cannot be a value (a 400-digit number, a 13th month)."""


class SafeLoader(_BaseLoader):
    """The safe loader, refusing numbers too long to convert and impossible dates with the line."""


def _guarded(tag: str) -> None:
    construct = _BaseLoader.yaml_constructors[tag]

    def checked(loader: Any, node: Any) -> Any:
        value = str(node.value)
        digits = max((len(run) for run in re.findall(r"[0-9]+", value)), default=0)
        if digits > MAX_DIGITS:
            raise _ValueProblem(
                None, None, f"a number with {digits} digits (at most {MAX_DIGITS})", node.start_mark
            )
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as err:
            raise _ValueProblem(
                None,
                None,
                f"a value that cannot be read as {tag.rsplit(':', 1)[-1]} ({type(err).__name__})",
                node.start_mark,
            ) from None

    SafeLoader.add_constructor(tag, checked)


for _tag in ("int", "float", "timestamp"):
    _guarded(f"tag:yaml.org,2002:{_tag}")


def safe_load(text: str) -> Any:
    """Parse one YAML document into plain Python objects (dict, list, str, int, float, ...)."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader, C or Python


def load_user_yaml(
    text: str, what: str, where: str | Path, fix: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> Any:
    """Parse a user's YAML file: shape checked first (`check_shape`), every problem a BadInput."""
    try:
        check_shape(text, what, where, fix, max_depth, max_nodes)
        return safe_load(text)
    except yaml.YAMLError as err:
        raise yaml_error(what, where, err) from None
    except (ValueError, OverflowError, RecursionError) as err:  # a value PyYAML could not build
        raise BadInput(
            f"Cannot read {what} {where}.", f"A value cannot be read ({type(err).__name__}).", fix
        ) from None


def check_shape(
    text: str, what: str, where: str | Path, fix: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> None:
    """Refuse YAML nested deeper than `max_depth` or with more than `max_nodes` values (aliases counted
    each time they are used), from the event stream, before anything recursive builds it."""
    depth = nodes = 0
    sizes: dict[str, int] = {}  # anchor -> values under it
    starts: list[tuple[str | None, int]] = []
    for event in yaml.parse(text, Loader=SafeLoader):
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
    data: Any, what: str, where: str | Path, fix: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
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
    if isinstance(err, _ValueProblem):
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


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
