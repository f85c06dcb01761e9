"""Reading catalog data files: sourced figures, validation, and errors that name file and key.

Every numeric figure in a catalog file is a mapping ``{value, source, as_of}``. This
module turns those mappings into `Sourced` values and rejects anything else with a
`CatalogDataError` that says which file and which key is wrong. It knows nothing about
accelerators or nodes; `accelerators.py`, `nodes.py` and `efficiency.py` use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from rightsize import yamlio

SCHEMA_VERSION = 1
DATA_PACKAGE = "rightsize.catalog"

_AS_OF = re.compile(r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$")
_SOURCED_KEYS = frozenset({"value", "source", "as_of"})


class CatalogDataError(ValueError):
    """A catalog data file is malformed: a bug in shipped data, so it keeps its traceback."""

    def __init__(self, file: str, key: str, problem: str) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        super().__init__(f"{file}: {key}: {problem}")


@dataclass(frozen=True)
class Sourced:
    """One figure with where it came from and when."""

    value: float
    source: str
    as_of: str


def read_data_file(name: str) -> dict[str, Any]:
    """Load and version-check one YAML file shipped in ``rightsize/catalog/data``."""
    text = resources.files(DATA_PACKAGE).joinpath("data", name).read_text(encoding="utf-8")
    return parse_document(text, name)


def parse_document(text: str, file: str) -> dict[str, Any]:
    """Parse YAML text and check ``schema_version``; ``file`` is only used in errors."""
    try:
        raw = yamlio.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogDataError(file, "<document>", f"not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise CatalogDataError(file, "<document>", "the top level must be a mapping")
    check_schema(raw, file)
    return raw


def check_schema(raw: Mapping[str, Any], file: str) -> None:
    """The document's ``schema_version`` must be the one this code reads."""
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise CatalogDataError(file, "schema_version", f"expected {SCHEMA_VERSION}, got {version!r}")


def to_number(raw: Any, file: str, key: str) -> float:
    """A finite number. Numeric strings are accepted because YAML 1.1 reads ``19.5e12`` as a string."""
    if isinstance(raw, bool):
        raise CatalogDataError(file, key, f"expected a number, got {raw!r}")
    if isinstance(raw, int | float):
        number = float(raw)
    elif isinstance(raw, str):
        try:
            number = float(raw.replace("_", ""))
        except ValueError:
            raise CatalogDataError(file, key, f"expected a number, got {raw!r}") from None
    else:
        raise CatalogDataError(file, key, f"expected a number, got {type(raw).__name__} {raw!r}")
    if not math.isfinite(number):
        raise CatalogDataError(file, key, f"expected a finite number, got {raw!r}")
    return number


def sourced(
    raw: Any,
    file: str,
    key: str,
    *,
    integer: bool = False,
    minimum: float | None = None,
    maximum: float | None = None,
) -> Sourced:
    """Validate one ``{value, source, as_of}`` mapping.

    The value must be positive (every catalog figure is a size, a rate or a fraction);
    ``minimum``/``maximum`` add unit sanity bounds, which catch "80" written for 80 GB.
    """
    if not isinstance(raw, Mapping):
        raise CatalogDataError(
            file, key, f"expected a mapping {{value, source, as_of}}, got {type(raw).__name__} {raw!r}"
        )
    extra = set(raw) - _SOURCED_KEYS
    if extra:
        raise CatalogDataError(file, key, f"unexpected keys {sorted(extra)}; allowed: value, source, as_of")
    for needed in ("value", "source", "as_of"):
        if needed not in raw:
            raise CatalogDataError(file, key, f"missing '{needed}'")
    source = raw["source"]
    if not isinstance(source, str) or not source.strip():
        raise CatalogDataError(file, f"{key}.source", "must be a non-empty string")
    as_of = raw["as_of"]
    if not isinstance(as_of, str) or not _AS_OF.match(as_of):
        raise CatalogDataError(
            file, f"{key}.as_of", f"must be a quoted date 'YYYY-MM' or 'YYYY-MM-DD', got {as_of!r}"
        )
    value = to_number(raw["value"], file, f"{key}.value")
    if value <= 0:
        raise CatalogDataError(file, f"{key}.value", f"must be positive, got {value!r}")
    if integer and not value.is_integer():
        raise CatalogDataError(file, f"{key}.value", f"must be a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise CatalogDataError(file, f"{key}.value", f"{value!r} is below {minimum!r}: check the unit")
    if maximum is not None and value > maximum:
        raise CatalogDataError(file, f"{key}.value", f"{value!r} is above {maximum!r}: check the unit")
    return Sourced(value=value, source=source.strip(), as_of=as_of)


def require_mapping(raw: Mapping[str, Any], name: str, file: str, key: str) -> Mapping[str, Any]:
    """``raw[name]``, which must be a mapping."""
    if name not in raw:
        raise CatalogDataError(file, key, f"missing '{name}'")
    value = raw[name]
    if not isinstance(value, Mapping):
        raise CatalogDataError(file, f"{key}.{name}", f"expected a mapping, got {type(value).__name__}")
    return value


def require_str(raw: Mapping[str, Any], name: str, file: str, key: str) -> str:
    """``raw[name]``, which must be a non-empty string."""
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip():
        raise CatalogDataError(file, f"{key}.{name}", f"must be a non-empty string, got {value!r}")
    return value.strip()


def require_list(raw: Mapping[str, Any], name: str, file: str) -> list[Any]:
    """Top-level ``raw[name]``, which must be a non-empty list."""
    value = raw.get(name)
    if not isinstance(value, list) or not value:
        raise CatalogDataError(file, name, "must be a non-empty list")
    return value


def check_keys(raw: Mapping[str, Any], allowed: frozenset[str], file: str, key: str) -> None:
    """Reject unknown keys (typos would otherwise be silently ignored)."""
    extra = set(raw) - allowed
    if extra:
        raise CatalogDataError(file, key, f"unexpected keys {sorted(extra)}; allowed: {sorted(allowed)}")


def iter_numbers(raw: Any, path: str = "") -> Iterator[tuple[str, Any, Mapping[str, Any] | None]]:
    """Every number in a parsed document: (key path, number, the sourced mapping holding it or None).

    A number counts as sourced when it is the ``value`` of a mapping; ``schema_version`` is exempt.
    Numeric strings under ``value`` are reported too (YAML 1.1 reads ``1e12`` as a string).
    """
    if isinstance(raw, Mapping):
        for k, v in raw.items():
            sub = f"{path}.{k}" if path else str(k)
            if k == "value" and not isinstance(v, Mapping | list):
                yield sub, v, raw
            elif sub == "schema_version":
                continue
            else:
                yield from iter_numbers(v, sub)
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            yield from iter_numbers(v, f"{path}[{i}]")
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        yield path, raw, None
