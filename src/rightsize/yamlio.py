"""YAML reading with libyaml's C parser where PyYAML was built with it (`yaml.CSafeLoader`,
an order of magnitude faster on the catalog files), the pure-Python `SafeLoader` otherwise.
Both build the same plain Python objects (safe tags only).

`SafeLoader` also refuses, with the line and column, numbers of more than `MAX_DIGITS` digits and
impossible dates (a `ValueProblem`, a YAML error). Files a user names are read through
`safe_read.load_user_yaml`, which adds the shape caps (depth, alias expansion) and turns every
problem into a BadInput that never quotes the file.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BaseLoader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

MAX_DIGITS = 24
"""Longest run of digits in a number read from a user's file (YAML here, JSON in `safe_read`): 1e24 is
far beyond any count, size or price rightsize reads, and a 400-digit integer breaks float conversion
(OverflowError) and int-to-text (ValueError)."""


class ValueProblem(yaml.constructor.ConstructorError):
    """A scalar that parses as YAML but cannot be a value (a 400-digit number, a 13th month)."""


class SafeLoader(_BaseLoader):
    """The safe loader, refusing numbers too long to convert and impossible dates with the line."""


def _guarded(tag: str) -> None:
    construct = _BaseLoader.yaml_constructors[tag]

    def checked(loader: Any, node: Any) -> Any:
        value = str(node.value)
        digits = max((len(run) for run in re.findall(r"[0-9]+", value)), default=0)
        if digits > MAX_DIGITS:
            raise ValueProblem(
                None, None, f"a number with {digits} digits (at most {MAX_DIGITS})", node.start_mark
            )
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as err:
            raise ValueProblem(
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
