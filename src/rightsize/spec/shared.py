"""Pieces every spec kind shares: the `model:` input, the accelerator list, positivity, the spec folder.

A spec's `model:` key takes a preset name, a path to a Hugging Face config.json (relative to the spec
file), a full inline architecture, or {preset: NAME | config: PATH, ...overrides}; `resolve_model_field`
turns any of them into ModelArch fields, for `TrainingSpec` and `InferenceSpec` alike.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import AfterValidator, ValidationInfo

from rightsize.errors import BadInput, SpecNote
from rightsize.spec.hf_config import read_hf_config_fields
from rightsize.spec.presets import get_preset, preset_fields

_Number = TypeVar("_Number", int, float)
MAX_MODEL_STRING = 4096  # the str_max_length of every spec model
MAX_ACCELERATORS = 100  # distinct ids in targets.accelerators (the catalog holds a dozen)


def _positive(value: _Number) -> _Number:
    """Zero tokens, batches or seconds make no plan. (An after-validator keeps the JSON Schema clean.)

    The message leaves the value out: the spec's error lists add "(got VALUE)" to every field error.
    """
    if value <= 0:
        raise ValueError("must be greater than zero")
    return value


POSITIVE = AfterValidator(_positive)
"""Use as `Annotated[CountInt, POSITIVE]`: the value must be greater than zero."""


ACCELERATORS_SCHEMA_EXTRA: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_ACCELERATORS},
        {"const": "all"},
        {"type": "null"},
    ],
    "examples": [["h100-sxm", "b200"], "all"],
}
"""JSON Schema of a `targets.accelerators` field: a list of catalog ids, 'all', or null."""


def all_means_every(value: Any) -> Any:
    """'all' (alone or as the only list item) means no restriction; a single id becomes a list;
    an id listed more than once is kept once, with a note (`SpecNote`)."""
    if isinstance(value, str):
        return None if value.strip().lower() == "all" else [value]
    if isinstance(value, list) and len(value) == 1 and str(value[0]).strip().lower() == "all":
        return None
    if isinstance(value, list):
        return _without_duplicates(value, "targets.accelerators")
    return value


def _without_duplicates(items: list[Any], where: str) -> list[Any]:
    seen: set[str] = set()
    kept: list[Any] = []
    for item in items:
        key = item.strip().lower() if isinstance(item, str) else repr(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    if len(kept) < len(items):
        dropped = len(items) - len(kept)
        warnings.warn(
            SpecNote(
                f"{where}: {dropped} duplicate entr{'y' if dropped == 1 else 'ies'} removed; "
                f"{len(kept)} distinct kept"
            ),
            stacklevel=2,
        )
    return kept


def spec_base_dir(info: ValidationInfo) -> Path:
    """The folder relative paths in a spec resolve against (the loader passes it as context)."""
    context = info.context if isinstance(info.context, Mapping) else {}
    return Path(context.get("base_dir") or Path.cwd())


def _looks_like_path(text: str, base_dir: Path) -> bool:
    """A model string is a config.json path if it says so, else a preset name (HF ids contain '/' too)."""
    if text.endswith(".json") or text.startswith((".", "/", "~")):
        return True
    try:
        return (base_dir / text).expanduser().exists()
    except (OSError, ValueError):  # a name too long for a path, or with a NUL: not a file
        return False


def resolve_path(text: str, base_dir: Path) -> Path:
    """A path from a spec: '~' expanded, relative paths taken from the spec's folder."""
    path = Path(text).expanduser()
    return path if path.is_absolute() else base_dir / path


def resolve_model_input(value: Any, base_dir: Path) -> Any:
    """Turn the `model:` input (preset name, config path, inline dict, preset + overrides) into fields."""
    if isinstance(value, str):
        if len(value) > MAX_MODEL_STRING:
            raise ValueError(
                f"is {len(value):,} characters long; a preset name or a config path is at most "
                f"{MAX_MODEL_STRING} (see `rightsize models`)"
            )
        if _looks_like_path(value, base_dir):
            return read_hf_config_fields(resolve_path(value, base_dir))
        return get_preset(value)
    if isinstance(value, Mapping):
        bases = [key for key in ("preset", "config") if key in value]
        if len(bases) > 1:
            raise ValueError("give either preset or config as the base of the model, not both")
        if not bases:
            return value
        ref = value[bases[0]]
        if not isinstance(ref, str):
            raise ValueError(f"{bases[0]} must be a string (got {ref!r})")
        base = (
            preset_fields(ref) if bases[0] == "preset" else read_hf_config_fields(resolve_path(ref, base_dir))
        )
        overrides = {key: item for key, item in value.items() if key != bases[0]}
        return {**base, **overrides}
    return value


def resolve_model_field(value: Any, info: ValidationInfo) -> Any:
    """The body of every spec's `model` before-validator: resolve, and report a BadInput as a field error."""
    try:
        return resolve_model_input(value, spec_base_dir(info))
    except BadInput as err:
        raise ValueError(" ".join(part for part in (err.what, err.why, err.fix) if part)) from None
