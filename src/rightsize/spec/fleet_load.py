"""Read a fleet spec and every workload spec it names into one resolved fleet.

A workload's `spec:` is a path (relative to the file that names it) or an inline spec. A path to
another `kind: fleet` file includes that fleet's workloads (its own policy is ignored; the
including fleet's policy rules). Problems become one `BadInput` each: a missing file, an include
cycle (with the chain of files), two workloads with one name, an end before a start, a workload
outside the horizon.

Every file a fleet names must lie inside the top fleet file's folder (or a folder below it), links
resolved: a fleet from someone else cannot make rightsize read `~/.aws/credentials` or a link to it.
To name specs outside the folder on purpose, pass `allow_outside=True` (Python API) or set the
environment variable RIGHTSIZE_ALLOW_OUTSIDE=1. Each file is read through the spec reader's caps
(`read_spec_yaml`: a regular file, size, depth and alias expansion bounded before parsing), and
no message quotes a file's contents beyond the key at fault.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rightsize.errors import BadInput
from rightsize.safe_read import check_tree, confined
from rightsize.spec.fleet import FleetSpec, FleetWorkload, month_index, month_text
from rightsize.spec.load import (
    MAX_SPEC_DEPTH,
    MAX_SPEC_NODES,
    Spec,
    parse_spec,
    read_spec_yaml,
    validation_error,
)

_FLEET_FIX = "Start from examples/fleet-2027.yaml; `rightsize schema` describes each workload spec."


@dataclass(frozen=True)
class FleetEntry:
    """One workload of a resolved fleet: its unique name, its parsed spec and its fleet settings."""

    name: str
    spec: Spec
    workload: FleetWorkload
    source: str  # the file (or 'inline in FILE') it came from
    start_month: int  # months since year 0
    end_month: int  # last month it runs, inclusive
    # Demand relative to its own plan (1: as planned). `monitor` sets it when it re-plans from
    # what it observed: a service's load, a job's GPU-hours (a one-off job: the work left).
    demand_scale: float = 1.0


@dataclass(frozen=True)
class ResolvedFleet:
    spec: FleetSpec
    entries: tuple[FleetEntry, ...]
    start_month: int
    source: str

    @property
    def horizon_months(self) -> int:
        return self.spec.horizon_months

    @property
    def name(self) -> str:
        return self.spec.name or Path(self.source).stem


def is_fleet_data(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("kind") == "fleet"


ALLOW_OUTSIDE_ENV = "RIGHTSIZE_ALLOW_OUTSIDE"
_OUTSIDE_FIX = (
    "Move the workload spec into the fleet file's folder (or a folder below it) and name it relative to the "
    f"fleet file; to read specs outside it on purpose, set {ALLOW_OUTSIDE_ENV}=1."
)


def outside_allowed(allow_outside: bool | None = None) -> bool:
    """`allow_outside` when given, else whether RIGHTSIZE_ALLOW_OUTSIDE is set to 1/true/yes."""
    if allow_outside is not None:
        return allow_outside
    return os.environ.get(ALLOW_OUTSIDE_ENV, "").strip().lower() in ("1", "true", "yes")


def _read_yaml(path: Path, chain: tuple[Path, ...], root: Path, allow_outside: bool) -> tuple[Path, Any]:
    """(the file's resolved path, its parsed YAML): confined to `root`, read through the spec's caps."""
    named_in = f" (named in {chain[-1]})" if chain else ""
    fix = "Paths in a fleet's `spec:` are relative to the fleet file; check the name and folder."
    try:
        target = confined(path, root, "the workload spec", allow_outside, _OUTSIDE_FIX)
    except BadInput as err:
        raise BadInput(err.what.rstrip(".") + named_in + ".", err.why, err.fix) from None
    try:
        return target, read_spec_yaml(target, follow_links=False)
    except BadInput as err:
        raise BadInput(err.what.rstrip(".") + named_in + ".", err.why, fix if chain else err.fix) from None


def load_fleet(path: str | Path, allow_outside: bool | None = None) -> ResolvedFleet:
    """Read a `kind: fleet` YAML file and every workload spec it names (inside its folder unless allowed)."""
    path = Path(path).expanduser().resolve()
    _, data = _read_yaml(path, (), path.parent, True)  # the file the user named
    return parse_fleet(data, path.parent, str(path), (path,), allow_outside)


def parse_fleet(
    data: Any,
    base_dir: Path | None = None,
    source: str = "(inline)",
    chain: tuple[Path, ...] = (),
    allow_outside: bool | None = None,
) -> ResolvedFleet:
    """Validate a fleet mapping; workload paths resolve against `base_dir`, and must stay inside it
    unless `allow_outside` (default: the RIGHTSIZE_ALLOW_OUTSIDE environment variable)."""
    spec = _fleet_spec(data, source)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    raw = _entries(spec, base, source, chain, _Reach(base, outside_allowed(allow_outside)))
    starts = [month_index(w.start) for _, _, w, _ in raw if w.start]
    if spec.start:
        start = month_index(spec.start)
    elif starts:
        start = min(starts)
    else:
        raise BadInput(
            f"The fleet {source} does not say when it starts.",
            "Neither `start:` nor any workload's `start:` is set, so the horizon has no first month.",
            "Add `start: 2027-01` (YYYY-MM) at the top of the fleet file.",
        )
    end = start + spec.horizon_months - 1
    entries: list[FleetEntry] = []
    seen: dict[str, str] = {}
    for name, parsed, w, where in raw:
        if name in seen:
            raise BadInput(
                f"Two workloads in the fleet {source} are both named '{name}'.",
                f"One comes from {seen[name]}, the other from {where}; names identify workloads in the "
                "timeline, the quotas and the costs.",
                "Give one of them a different `name:` in the fleet's workload list.",
            )
        seen[name] = where
        first = month_index(w.start) if w.start else start
        last = month_index(w.end) if w.end else end
        if last < start or first > end:
            raise BadInput(
                f"Workload '{name}' runs {month_text(first)} to {month_text(last)}, outside the fleet's horizon "
                f"{month_text(start)} to {month_text(end)}.",
                "A workload must overlap the months being planned.",
                "Move its start/end, or the fleet's start / horizon_months.",
            )
        entries.append(FleetEntry(name, parsed, w, where, max(first, start), min(last, end)))
    return ResolvedFleet(spec, tuple(entries), start, source)


@dataclass(frozen=True)
class _Reach:
    """Where a fleet's files may be: inside `root`, unless `outside` is allowed."""

    root: Path
    outside: bool


def _fleet_spec(data: Any, source: str) -> FleetSpec:
    if not isinstance(data, Mapping):
        raise BadInput(
            f"The fleet {source} is not a mapping of keys to values.",
            f"Its top level is a {type(data).__name__}.",
            "Start the file with `kind: fleet`, `start:` and `workloads:` (see examples/fleet-2027.yaml).",
        )
    check_tree(data, "the fleet", source, _FLEET_FIX, MAX_SPEC_DEPTH, MAX_SPEC_NODES)
    try:
        return FleetSpec.model_validate(dict(data))
    except ValidationError as err:
        raise validation_error(err, FleetSpec, source) from None


def _entries(
    spec: FleetSpec, base: Path, source: str, chain: tuple[Path, ...], reach: _Reach
) -> list[tuple[str, Spec, FleetWorkload, str]]:
    out: list[tuple[str, Spec, FleetWorkload, str]] = []
    for i, w in enumerate(spec.workloads):
        if isinstance(w.spec, dict):
            if is_fleet_data(w.spec):
                raise BadInput(
                    f"workloads[{i}] of {source} is an inline fleet.",
                    "A fleet includes another fleet only by its file.",
                    "Put the inner fleet in its own file and give its path as `spec:`.",
                )
            where = f"workloads[{i}] inline in {source}"
            parsed = parse_spec(w.spec, base, source=where)
            out.append((w.name or parsed.name or f"workload-{i + 1}", parsed, w, where))
            continue
        named = base / Path(w.spec).expanduser()
        path = _resolved(named)
        if path in chain:
            cycle = " -> ".join(str(p) for p in (*chain[chain.index(path) :], path))
            raise BadInput(
                f"The fleet {source} includes itself through its workloads.",
                f"Include cycle: {cycle}.",
                "Remove the `spec:` entry that points back to a fleet already being read.",
            )
        path, data = _read_yaml(named, chain, reach.root, reach.outside)
        if is_fleet_data(data):
            out += _entries(_fleet_spec(data, str(path)), path.parent, str(path), (*chain, path), reach)
            continue
        parsed = parse_spec(data, path.parent, source=str(path))
        out.append((w.name or parsed.name or path.stem, parsed, w, str(path)))
    return out


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL: the reader says so
        return path


def as_fleet(spec: Any) -> ResolvedFleet | None:
    """A resolved fleet when `spec` is a `kind: fleet` file or mapping; None for any other spec."""
    if isinstance(spec, Mapping):
        return parse_fleet(spec, Path.cwd()) if is_fleet_data(spec) else None
    if not isinstance(spec, str | Path):
        return None
    try:
        data = read_spec_yaml(spec)
    except BadInput:
        return None  # load_spec reports it
    return load_fleet(spec) if is_fleet_data(data) else None
