"""Model presets: published architectures shipped as data (`data/presets.yaml`), looked up by name.

Lookups forgive case, the separators '-', '_' and '.', and a Hugging Face "org/" prefix, so
"Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B" and "llama3.1-405b" all find the same preset.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

from rightsize import yamlio
from rightsize.errors import unknown_name
from rightsize.spec.model import ModelArch

_SEPARATORS_RE = re.compile(r"[-_.\s]")


def _normalize(name: str) -> str:
    """The lookup key of a name: lower case, no org prefix, no separators."""
    return _SEPARATORS_RE.sub("", name.rsplit("/", 1)[-1].lower())


@functools.cache
def _table() -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, tuple[str, ...]]]:
    """(raw fields by id, normalized name -> id, aliases by id), read once from the packaged YAML."""
    text = resources.files("rightsize.spec").joinpath("data/presets.yaml").read_text(encoding="utf-8")
    doc = yamlio.safe_load(text)
    fields_by_id: dict[str, dict[str, Any]] = {}
    lookup: dict[str, str] = {}
    aliases_by_id: dict[str, tuple[str, ...]] = {}
    for preset_id, entry in doc["presets"].items():
        entry = dict(entry)
        aliases = tuple(entry.pop("aliases", ()))
        fields_by_id[preset_id] = {"name": preset_id, **entry}
        aliases_by_id[preset_id] = aliases
        for name in (preset_id, *aliases):
            key = _normalize(name)
            # A clash would make a name resolve to the wrong model: a data bug, caught by the tests.
            if lookup.get(key, preset_id) != preset_id:
                raise RuntimeError(f"presets.yaml: name {name!r} of {preset_id} clashes with {lookup[key]}")
            lookup[key] = preset_id
    return fields_by_id, lookup, aliases_by_id


def preset_names() -> list[str]:
    """Ids of every preset, sorted."""
    return sorted(_table()[0])


def preset_aliases(name: str) -> list[str]:
    """The extra names a preset answers to (for `rightsize models`)."""
    return list(_table()[2][resolve_preset_name(name)])


def resolve_preset_name(name: str) -> str:
    """The canonical preset id for a name or alias; BadInput (with a close match) when unknown."""
    fields_by_id, lookup, _ = _table()
    preset_id = lookup.get(_normalize(name))
    if preset_id is None:
        raise unknown_name("model preset", name, fields_by_id, "rightsize models")
    return preset_id


def preset_fields(name: str) -> dict[str, Any]:
    """The ModelArch fields of a preset exactly as published (a fresh dict: safe to add overrides to)."""
    return dict(_table()[0][resolve_preset_name(name)])


@functools.cache
def _build(preset_id: str) -> ModelArch:
    return ModelArch.model_validate(_table()[0][preset_id])


def get_preset(name: str) -> ModelArch:
    """The architecture of a preset by id or alias (case and '-', '_', '.' do not matter)."""
    return _build(resolve_preset_name(name))


def presets() -> dict[str, ModelArch]:
    """Every preset, by id, in sorted order."""
    return {preset_id: _build(preset_id) for preset_id in preset_names()}
