"""A sweep's scenarios: the base spec's YAML with each scenario's overrides set at dotted paths,
checked before anything is planned (a path the base spec lacks, or a value its schema refuses, is
bad input that names the scenario)."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.errors import BadInput, RightsizeError
from rightsize.spec.sweep import SweepSpec


@dataclass(frozen=True)
class ScenarioSpec:
    """One scenario: its name, the overrides, and the varied base spec's mapping."""

    name: str
    overrides: dict[str, Any]
    data: dict[str, Any]


def set_path(data: Any, path: str, value: Any, where: str) -> None:
    """Set `path` (keys and list indices joined by '.') in `data`; the path must exist up to its
    last key (a new key may be added to a mapping that exists)."""
    parts = path.split(".")
    node = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise BadInput(
                    f"{where}: {path}: '{part}' is not an index of the list at {'.'.join(parts[:i]) or 'the top'} "
                    f"(it has {len(node)} items).",
                    fix="Use an index from 0 to the list's length - 1.",
                )
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            elif part not in node or node[part] is None:
                node[part] = {}
                node = node[part]
            else:
                node = node[part]
        else:
            raise BadInput(
                f"{where}: {path}: {'.'.join(parts[:i])} is a value, not a mapping or list.",
                fix="Point the path at a key of a mapping or an index of a list in the base spec.",
            )


def _grid(spec: SweepSpec) -> list[tuple[str, dict[str, Any]]]:
    if not spec.grid:
        return []
    paths = list(spec.grid)
    out = []
    for combo in itertools.product(*(spec.grid[p] for p in paths)):
        sets = dict(zip(paths, combo, strict=True))
        out.append((", ".join(f"{p}={v}" for p, v in sets.items()), sets))
    return out


def _samples(spec: SweepSpec) -> list[tuple[str, dict[str, Any]]]:
    s = spec.samples
    if s is None:
        return []
    rng = np.random.default_rng(s.seed)
    draws: dict[str, np.ndarray] = {}
    for path, (low, high) in s.uniform.items():
        draws[path] = rng.uniform(low, high, s.count)
    for path, (median, sigma) in s.lognormal.items():
        draws[path] = median * np.exp(sigma * rng.standard_normal(s.count))
    return [(f"sample {i + 1}", {p: float(v[i]) for p, v in draws.items()}) for i in range(s.count)]


def expand(spec: SweepSpec, base: dict[str, Any]) -> list[ScenarioSpec]:
    """Every scenario's varied base, in order: the base itself, the grid, the named scenarios,
    the samples."""
    named: list[tuple[str, dict[str, Any]]] = [("base", {})] if spec.include_base else []
    named += _grid(spec) + [(s.name, dict(s.set)) for s in spec.scenarios] + _samples(spec)
    if not named:
        raise BadInput(
            "The sweep has no scenarios.",
            "It has no grid:, scenarios: or samples:, and include_base is false.",
            "Add a grid: of values, named scenarios: or samples:.",
        )
    seen: set[str] = set()
    out = []
    for name, sets in named:
        if name in seen:
            raise BadInput(
                f"Two scenarios of the sweep are named '{name}'.", fix="Give each scenario its own name."
            )
        seen.add(name)
        data = copy.deepcopy(base)
        for path, value in sets.items():
            set_path(data, path, value, f"scenario '{name}'")
        out.append(ScenarioSpec(name, sets, data))
    return out


def check(scenarios: list[ScenarioSpec], base_dir: Path, source: str) -> None:
    """Parse every scenario's spec as the planner will; the first one refused is bad input naming it."""
    from rightsize.spec.fleet_load import is_fleet_data, parse_fleet
    from rightsize.spec.load import parse_spec

    for sc in scenarios:
        try:
            if is_fleet_data(sc.data):
                parse_fleet(sc.data, base_dir, source)
            else:
                parse_spec(sc.data, base_dir, source)
        except RightsizeError as exc:
            raise BadInput(f"Sweep scenario '{sc.name}': {exc.what}", exc.why, exc.fix) from None
