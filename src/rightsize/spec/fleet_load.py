"""Read a fleet spec and every workload spec it names into one resolved fleet.

A workload's `spec:` is a path (relative to the file that names it) or an inline spec. A path to
another `kind: fleet` file includes that fleet's workloads (its own policy is ignored; the
including fleet's policy rules). Problems become one `BadInput` each: a missing file, an include
cycle (with the chain of files), two workloads with one name, an end before a start, a workload
outside the horizon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rightsize import yamlio
from rightsize.errors import BadInput
from rightsize.spec.fleet import FleetSpec, FleetWorkload, month_index, month_text
from rightsize.spec.load import Spec, load_spec, parse_spec, validation_error


@dataclass(frozen=True)
class FleetEntry:
    """One workload of a resolved fleet: its unique name, its parsed spec and its fleet settings."""

    name: str
    spec: Spec
    workload: FleetWorkload
    source: str  # the file (or 'inline in FILE') it came from
    start_month: int  # months since year 0
    end_month: int  # last month it runs, inclusive


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


def _read_yaml(path: Path, chain: tuple[Path, ...]) -> Any:
    if not path.is_file():
        named_in = f" (named in {chain[-1]})" if chain else ""
        why = "It is a folder, not a file." if path.is_dir() else "No such file."
        raise BadInput(
            f"Cannot open the spec {path}{named_in}.",
            why,
            "Paths in a fleet's `spec:` are relative to the fleet file; check the name and folder.",
        )
    try:
        return yamlio.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise BadInput(f"Cannot read the spec {path}.", str(err).split("\n")[0], "Check the file.") from None


def load_fleet(path: str | Path) -> ResolvedFleet:
    """Read a `kind: fleet` YAML file and every workload spec it names."""
    path = Path(path).expanduser().resolve()
    return parse_fleet(_read_yaml(path, ()), path.parent, str(path), (path,))


def parse_fleet(
    data: Any, base_dir: Path | None = None, source: str = "(inline)", chain: tuple[Path, ...] = ()
) -> ResolvedFleet:
    """Validate a fleet mapping; workload paths resolve against `base_dir`."""
    try:
        spec = FleetSpec.model_validate(dict(data))
    except ValidationError as err:
        raise validation_error(err, FleetSpec, source) from None
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    raw = _entries(spec, base, source, chain)
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


def _entries(
    spec: FleetSpec, base: Path, source: str, chain: tuple[Path, ...]
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
        path = (base / w.spec).expanduser().resolve()
        if path in chain:
            cycle = " -> ".join(str(p) for p in (*chain[chain.index(path) :], path))
            raise BadInput(
                f"The fleet {source} includes itself through its workloads.",
                f"Include cycle: {cycle}.",
                "Remove the `spec:` entry that points back to a fleet already being read.",
            )
        data = _read_yaml(path, chain)
        if is_fleet_data(data):
            try:
                inner = FleetSpec.model_validate(dict(data))
            except ValidationError as err:
                raise validation_error(err, FleetSpec, str(path)) from None
            out += _entries(inner, path.parent, str(path), (*chain, path))
            continue
        parsed = load_spec(path)
        out.append((w.name or parsed.name or path.stem, parsed, w, str(path)))
    return out


def as_fleet(spec: Any) -> ResolvedFleet | None:
    """A resolved fleet when `spec` is a `kind: fleet` file or mapping; None for any other spec."""
    if isinstance(spec, Mapping):
        return parse_fleet(spec, Path.cwd()) if is_fleet_data(spec) else None
    if not isinstance(spec, str | Path):
        return None
    path = Path(spec).expanduser()
    if not path.is_file():
        return None
    try:
        data = yamlio.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # load_spec reports it
    return load_fleet(path) if is_fleet_data(data) else None
