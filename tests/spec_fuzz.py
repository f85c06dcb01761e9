"""Generated specs for fuzzing (issue #15): the bundled examples, mutated as a careless or hostile
user would. Used by `test_fuzz.py` (hypothesis, in CI) and `benchmarks/fuzz_cli.py` (thousands).

`mutated_spec(rng)` takes an example, then applies one to four mutations: a value somewhere in it
(existing or a key from the JSON Schema) replaced by an adversarial one (NaN, infinity, 1e308, huge
or negative numbers, long strings, wrong types, a list of 400 duplicates), a key deleted, or an
unknown key added. `check_run` runs the CLI on one spec and returns what went wrong, if anything.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

_NUMBERS: list[Any] = [
    float("nan"),
    float("inf"),
    float("-inf"),
    1e308,
    1e30,
    -1,
    0,
    0.5,
    1,
    2,
    3,
    7,
    8,
    64,
    1000,
    65536,
    2**31,
    2**63,
    10**30,
    1e-300,
    -1e-9,
]
_STRINGS: list[Any] = [
    "",
    " ",
    "nan",
    "inf",
    "1e400",
    "-5",
    "30d",
    "0s",
    "1e30 s",
    "16Mi",
    "15T",
    "1e18",
    "999999999999999999999T",
    "400 Gb/s",
    "80 GiB",
    "10 kW",
    "all",
    "a" * 300,
    "x" * 5000,
    "<script>alert(1)</script> | *bold* [x](y) `code`",
    "h100-sxm",
    "llama3-8b",
    "mixtral-8x7b",
    "deepseek-v3",
    "/dev/zero",
    "../../etc/passwd",
    "\u00e9\u4e2d\U0001f600",
]


@functools.cache
def _parsed_examples() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(p.read_text(encoding="utf-8")) for p in EXAMPLES)


def examples() -> list[dict[str, Any]]:
    """Fresh copies of the bundled examples (parsed once)."""
    return copy.deepcopy(list(_parsed_examples()))


def schema_paths() -> dict[tuple[str, ...], list[Any]]:
    """Every property path the spec's JSON Schema names (all kinds), as key tuples, each with the
    values the schema itself suggests for it (enum choices, examples, defaults)."""
    from rightsize.spec import SPEC_KINDS, spec_json_schema

    paths: dict[tuple[str, ...], list[Any]] = {}
    for kind in SPEC_KINDS:
        schema = spec_json_schema(kind)
        _walk(schema, schema.get("$defs", {}), (kind,), 0, paths)
    return dict(sorted(paths.items()))


def _walk(
    node: dict[str, Any],
    defs: dict[str, Any],
    prefix: tuple[str, ...],
    depth: int,
    paths: dict[tuple[str, ...], list[Any]],
) -> None:
    if depth > 5:
        return
    for option in [node, *node.get("anyOf", []), *node.get("allOf", [])]:
        ref = option.get("$ref")
        target = defs.get(ref.rsplit("/", 1)[-1], {}) if ref else option
        for key, sub in (target.get("properties") or {}).items():
            values = paths.setdefault((*prefix, key), [])
            for form in [sub, *sub.get("anyOf", [])]:
                values.extend(form.get("enum") or [])
                values.extend(form.get("examples") or [])
                if "const" in form:
                    values.append(form["const"])
                if "default" in form and not isinstance(form["default"], dict | list):
                    values.append(form["default"])
            _walk(sub, defs, (*prefix, key), depth + 1, paths)


def _random_value(rng: random.Random, examples_: list[dict[str, Any]]) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(_NUMBERS)
    if roll < 0.65:
        return rng.choice(_STRINGS)
    if roll < 0.72:
        return [rng.choice(["h100-sxm", "b200", "l40s"])] * rng.choice([2, 400])
    if roll < 0.78:
        return rng.choice([True, False, None, [], {}])
    if roll < 0.85:
        return {
            "kind": rng.choice(["fixed", "normal", "lognormal", "empirical"]),
            "mean": rng.choice(_NUMBERS),
        }
    # a value from another example at some path: plausible, often contradictory
    leaves = list(_leaves(rng.choice(examples_)))
    return copy.deepcopy(rng.choice(leaves)[1]) if leaves else 1  # a copy: never a cycle


def _leaves(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, str(key)), value
            yield from _leaves(value, (*prefix, str(key)))


def _set(spec: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = spec
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


_EDGES: tuple[Any, ...] = (1, 2, 3, 7, 1e-9, 0.999, 1.0001, 1e6, 1e9, 1e12, 1e15, 1e17, 2**31 - 1, 4096, 0.5)
_FACTORS = (1e-6, 1e-3, 0.1, 0.5, 2, 3, 10, 1000, 1e6, 1e12)


def _scaled(value: Any, rng: random.Random) -> Any:
    """A plausible neighbour of a value: a number scaled, a unit string's number scaled."""
    factor = rng.choice(_FACTORS)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return max(1, int(value * factor)) if rng.random() < 0.8 else value * factor
    if isinstance(value, float):
        return value * factor
    if isinstance(value, str):
        head = value.split(" ")[0]
        digits = "".join(ch for ch in head if ch.isdigit() or ch == ".")
        unit = value[len(digits) :] if value.startswith(digits) else ""
        try:
            return f"{float(digits) * factor:g}{unit}"
        except ValueError:
            return value
    return value


def mutated_spec(rng: random.Random, paths: dict[tuple[str, ...], list[Any]] | None = None) -> dict[str, Any]:
    """One example with one to four mutations: half plausible (values scaled, or set to a value the
    schema suggests for the field), half adversarial."""
    pool = examples()
    spec = rng.choice(pool)
    kind = spec.get("kind", "training")
    own = {p[1:]: values for p, values in (paths or {}).items() if p[0] == kind}
    suggested = [(p, values) for p, values in own.items() if values]
    roll = rng.random()
    if roll < 0.3:
        # edge values that pass validation: tiny and huge but finite counts, sizes and times
        for _ in range(rng.randint(1, 3)):
            numeric = [p for p, v in _leaves(spec) if isinstance(v, int | float) and not isinstance(v, bool)]
            if suggested and rng.random() < 0.4:
                path, values = rng.choice(suggested)
                _set(spec, path, rng.choice(values))
            elif numeric:
                _set(spec, rng.choice(numeric), rng.choice(_EDGES))
        return spec
    if roll < 0.6:
        for _ in range(rng.randint(1, 4)):
            leaves = [(p, v) for p, v in _leaves(spec) if not isinstance(v, dict | list)]
            if suggested and rng.random() < 0.5:
                path, values = rng.choice(suggested)
                _set(spec, path, rng.choice(values))
            elif leaves:
                path, value = rng.choice(leaves)
                _set(spec, path, _scaled(value, rng))
        return spec
    for _ in range(rng.randint(1, 4)):
        existing = [p for p, _ in _leaves(spec)]
        roll = rng.random()
        if roll < 0.5 and existing:
            _set(spec, rng.choice(existing), _random_value(rng, pool))
        elif roll < 0.8 and own:
            _set(spec, rng.choice(list(own)), _random_value(rng, pool))
        elif roll < 0.9 and existing:
            path = rng.choice(existing)
            parent: Any = spec
            for key in path[:-1]:
                parent = parent.get(key) if isinstance(parent, dict) else None
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
        else:
            _set(spec, (rng.choice(["targetz", "training", "traffic"]), "bogus_key"), 1)
    return spec


def non_finite(obj: Any, where: str = "$") -> str | None:
    """The first path in a JSON value holding a non-finite or absurd (> 1e30) number, else None."""
    if isinstance(obj, float) and (not math.isfinite(obj) or abs(obj) > 1e30):
        return f"{where} = {obj!r}"
    if isinstance(obj, dict):
        for key, value in obj.items():
            found = non_finite(value, f"{where}.{key}")
            if found:
                return found
    if isinstance(obj, list):
        for i, value in enumerate(obj):
            found = non_finite(value, f"{where}[{i}]")
            if found:
                return found
    return None


def check_run(argv: list[str], want_json: bool = True) -> tuple[int, str | None]:
    """Run the CLI in-process; (exit code, a problem description or None)."""
    from rightsize.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    stderr = err.getvalue()
    if code not in (0, 1, 2):
        return code, f"exit code {code}: {stderr.strip()[:400]}"
    if "Traceback" in stderr or "Traceback" in out.getvalue():
        return code, f"traceback: {stderr[-400:]}"
    if code != 0 and "rightsize:" not in stderr:
        return code, f"exit {code} without a message"
    if code == 0 and want_json:
        try:
            doc = json.loads(out.getvalue(), parse_constant=lambda c: float(c.replace("Infinity", "inf")))
        except ValueError as exc:
            return code, f"output is not JSON: {exc}"
        found = non_finite(doc)
        if found:
            return code, f"non-finite or absurd number in the JSON: {found}"
    return code, None


def write_spec(spec: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path
