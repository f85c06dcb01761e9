"""A spec posted by the browser, read exactly as the CLI reads a spec file.

The text goes through the same caps as a file (`spec.load.MAX_SPEC_BYTES`, then
`safe_read.load_user_yaml` with the spec's depth and value caps), then through the same
validators (`spec.load.parse_spec`, or `spec.fleet_load.parse_fleet` for `kind: fleet`), so a
mistake gives the CLI's own message. `error_payload` turns that message into what the form
shows: the whole message, and each `field.path: problem` line at its field.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput, RightsizeError, SpecNote
from rightsize.safe_read import load_user_yaml
from rightsize.spec.load import MAX_SPEC_BYTES, MAX_SPEC_DEPTH, MAX_SPEC_NODES, parse_spec

_FIX = "Run `rightsize schema` to see every field with its description, or start from a file in examples/."
# One problem line of a validation or limit error: "    - targets.deadline: message".
_FIELD_LINE = re.compile(r"^\s+- ([A-Za-z0-9_.\-\[\]]+): (.*)$")


@dataclass
class ReadSpec:
    """A posted spec: its parsed YAML (`data`), the typed spec the planner takes, its kind, and the
    notes the loader raised (how unit-less figures were read, duplicates removed)."""

    data: dict[str, Any]
    spec: Any
    kind: str
    notes: list[str] = field(default_factory=list)


def spec_yaml(text: str, source: str) -> Any:
    """The parsed YAML of spec text, through the caps a spec file is read with."""
    size = len(text.encode("utf-8"))
    if size > MAX_SPEC_BYTES:
        raise BadInput(
            f"Will not read the spec {source}: it is {size:,} bytes.",
            f"The spec is at most {MAX_SPEC_BYTES:,} bytes (a spec is a few KB).",
            "Check the text; examples/ holds sample specs.",
        )
    return load_user_yaml(text, "the spec", source, _FIX, MAX_SPEC_DEPTH, MAX_SPEC_NODES)


def read_spec_text(text: str, source: str, base_dir: Path) -> ReadSpec:
    """Validate spec text as `rightsize plan` validates a file named `source` in `base_dir`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecNote)
        data = spec_yaml(text, source)
        if isinstance(data, dict) and data.get("kind") == "fleet":
            from rightsize.spec.fleet_load import parse_fleet

            spec: Any = parse_fleet(data, base_dir, source)
        else:
            spec = parse_spec(data, base_dir, source=source)
    notes = list(dict.fromkeys(str(w.message) for w in caught if isinstance(w.message, SpecNote)))
    kind = "fleet" if isinstance(data, dict) and data.get("kind") == "fleet" else str(spec.kind)
    return ReadSpec(data, spec, kind, notes)


def field_problems(message: str) -> list[dict[str, str]]:
    """Each `field.path: problem` line of an error message, in order, a problem that spans lines
    joined: [{"path": "targets.deadline", "message": "..."}]."""
    out: list[dict[str, str]] = []
    for line in message.splitlines():
        match = _FIELD_LINE.match(line)
        if not match:
            continue
        path, text = match.group(1), match.group(2)
        if out and out[-1]["path"] == path:
            out[-1]["message"] += "\n" + text
        else:
            out.append({"path": path, "message": text})
    return out


def error_payload(err: RightsizeError) -> dict[str, Any]:
    """What the browser shows for an error: the CLI's line (`rightsize: error: ...`), whether it is
    bad input (exit 2) or infeasible (exit 1), and the problems by field."""
    kind = "infeasible" if err.exit_code == 1 else "error"
    message = err.message()
    return {
        "kind": "infeasible" if err.exit_code == 1 else "bad_input",
        "exit_code": err.exit_code,
        "message": f"rightsize: {kind}: {message}",
        "fields": field_problems(message),
    }
