"""Read a spec file (YAML) into a typed spec, turning every problem into one actionable `BadInput`.

Specs are dispatched on their `kind` key (default "training") through `SPEC_KINDS`: 'training' gives a
`TrainingSpec`, 'inference' an `InferenceSpec`, 'vision' a `VisionSpec`, 'recommendation' a
`RecsysSpec`. A new kind is a new entry there (and in `Spec`); the error handling and the JSON Schema
follow.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ValidationError

from rightsize.errors import BadInput, did_you_mean
from rightsize.safe_read import check_tree, clean_key, load_user_yaml, read_text_capped
from rightsize.spec.limits import spec_limit_problems

if TYPE_CHECKING:
    from rightsize.spec.inference import InferenceSpec
    from rightsize.spec.recsys import RecsysSpec
    from rightsize.spec.training import TrainingSpec
    from rightsize.spec.vision import VisionSpec

Spec: TypeAlias = "TrainingSpec | InferenceSpec | VisionSpec | RecsysSpec"
"""Any spec `load_spec` returns; tell them apart with isinstance or `spec.kind`."""


class _SpecKinds(Mapping[str, type[BaseModel]]):
    """kind -> spec model, importing a model's module only when that kind is asked for; the
    first kind is the default when a spec has no `kind:`."""

    _where = {
        "training": ("rightsize.spec.training", "TrainingSpec"),
        "inference": ("rightsize.spec.inference", "InferenceSpec"),
        "vision": ("rightsize.spec.vision", "VisionSpec"),
        "recommendation": ("rightsize.spec.recsys", "RecsysSpec"),
    }

    def __getitem__(self, kind: str) -> type[BaseModel]:
        module, name = self._where[kind]
        cls: type[BaseModel] = getattr(import_module(module), name)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


SPEC_KINDS: Mapping[str, type[BaseModel]] = _SpecKinds()
_SCHEMA_FIX = (
    "Run `rightsize schema` to see every field with its description, or start from a file in examples/."
)
# A spec is a few KB; these caps keep a careless or hostile file from exhausting memory or the stack.
MAX_SPEC_BYTES = 2**20
MAX_SPEC_DEPTH = 32
MAX_SPEC_NODES = 100_000


def load_spec(path: str | Path) -> Spec:
    """Read and validate a YAML spec; relative paths in it (model config, length files) resolve
    against the spec's folder."""
    path = Path(path).expanduser()
    return parse_spec(read_spec_yaml(path), path.parent, source=str(path))


def read_spec_yaml(path: str | Path, follow_links: bool = True) -> Any:
    """The parsed YAML of a spec (or fleet) file: a regular file of at most MAX_SPEC_BYTES (checked
    before reading), at most MAX_SPEC_DEPTH levels and MAX_SPEC_NODES values (aliases expanded,
    checked before building); every problem a BadInput that never quotes the file."""
    path = Path(path).expanduser()
    text = read_text_capped(
        path,
        "the spec",
        MAX_SPEC_BYTES,
        "Check the path; examples/ holds sample specs (a spec is a few KB).",
        follow_links=follow_links,
    )
    return load_user_yaml(text, "the spec", path, _SCHEMA_FIX, MAX_SPEC_DEPTH, MAX_SPEC_NODES)


def parse_spec(data: Any, base_dir: Path | None = None, source: str = "(inline)") -> Spec:
    """Validate an already-parsed spec mapping (the Python API and tests use this)."""
    if data is None:
        raise BadInput(f"The spec {source} is empty.", "There is nothing to plan.", _SCHEMA_FIX)
    check_tree(data, "the spec", source, _SCHEMA_FIX, MAX_SPEC_DEPTH, MAX_SPEC_NODES)
    if not isinstance(data, Mapping):
        raise BadInput(
            f"The spec {source} is not a mapping of keys to values.",
            f"Its top level is a {type(data).__name__}.",
            "Start the file with keys such as `model:` and `training:` (or `kind: inference`, `model:` "
            "and `traffic:`). " + _SCHEMA_FIX,
        )
    kind = data.get("kind", "training")
    spec_cls = SPEC_KINDS.get(kind) if isinstance(kind, str) else None
    if kind == "sweep":
        raise BadInput(
            f"{source} is a sweep (`kind: sweep`), not one spec to plan.",
            "A sweep plans its base spec under many variations.",
            f"Run it with `rightsize sweep {source}`.",
        )
    if spec_cls is None:
        hint = did_you_mean(clean_key(kind), SPEC_KINDS)
        raise BadInput(
            f"Unknown spec kind '{clean_key(kind)}' in {source}.",
            f"Known kinds: {', '.join(_schema_kinds())}.",
            (hint[0].upper() + hint[1:] + " " if hint else "") + "Set `kind:` to one of them.",
        )
    context: dict[str, Any] = {"base_dir": Path(base_dir) if base_dir is not None else Path.cwd()}
    try:
        spec: Spec = spec_cls.model_validate(dict(data), context=context)  # type: ignore[assignment]
    except ValidationError as err:
        raise validation_error(err, spec_cls, source) from None
    problems = spec_limit_problems(spec)
    if problems:
        count = f"{len(problems)} problem" + ("s" if len(problems) != 1 else "")
        raise BadInput(
            f"The spec {source} asks for more than any real workload.",
            f"{count}:\n" + "\n".join(f"    - {line}" for line in problems),
            "Check the units and the number of zeros; every limit is far above anything published.",
        )
    notes = tuple(context.get("unit_notes", ()))
    if notes:
        spec._notes = notes  # how unit-less figures were read; the plan repeats them
    return spec


MAX_PROBLEMS_LISTED = 12
"""Problems named one by one in a validation error; the rest are counted (a file of 45,000 unknown
keys gets a short message, not a megabyte)."""


def validation_error(err: ValidationError, model: type[BaseModel], source: str) -> BadInput:
    """One BadInput listing each problem as `field.path: message (got VALUE)`: at most
    MAX_PROBLEMS_LISTED of them, then how many more (and how many of those are unknown keys)."""
    errors = err.errors()
    shown, rest = errors[:MAX_PROBLEMS_LISTED], errors[MAX_PROBLEMS_LISTED:]
    lines = [line for error in shown for line in _describe(error, model).split("\n")]
    if rest:
        unknown = sum(1 for error in rest if error["type"] == "extra_forbidden")
        of_which = f", {unknown:,} of them unknown keys" if unknown else ""
        lines.append(f"    - and {len(rest):,} more problem{'s' if len(rest) != 1 else ''}{of_which}")
    problems = len(lines) if not rest else len(errors)
    count = f"{problems:,} problem" + ("s" if problems != 1 else "")
    return BadInput(f"The spec {source} is invalid.", f"{count}:\n" + "\n".join(lines), _SCHEMA_FIX)


def _describe(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    loc: Sequence[Any] = error["loc"]
    where = ".".join(clean_key(part) for part in loc)
    prefix = f"    - {where}: " if where else "    - "
    kind = error["type"]
    if kind == "extra_forbidden":
        owner = _other_kind_with_key(model, loc)
        if owner is not None:
            return f"{prefix}unknown key for kind {_kind_of(model)}; it belongs to kind {owner} (set `kind: {owner}`)"
        hint = did_you_mean(clean_key(loc[-1]), _allowed_keys(model, loc[:-1]))
        return f"{prefix}unknown key" + (f"; {hint}" if hint else "")
    if kind == "missing":
        return f"{prefix}required, but missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    value = error.get("input")
    # Show the offending value, unless it is a whole section (the message names the values then).
    # None is what a missing optional key reads as: not worth showing.
    shown = "input" in error and value is not None and not isinstance(value, Mapping | list)
    got = f" (got {_short(value)})" if shown else ""
    return "\n".join(prefix + line for line in (message + got).split("\n"))


def _kind_of(model: type[BaseModel]) -> str:
    return next((kind for kind, spec_cls in SPEC_KINDS.items() if spec_cls is model), model.__name__)


def _other_kind_with_key(model: type[BaseModel], loc: Sequence[Any]) -> str | None:
    """The kind a misplaced top-level key belongs to (`traffic:` in a spec that forgot `kind: inference`)."""
    if len(loc) != 1:
        return None
    for kind, spec_cls in SPEC_KINDS.items():
        if spec_cls is not model and str(loc[0]) in _allowed_keys(spec_cls, ()):
            return kind
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _allowed_keys(model: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    """The keys accepted at `loc` (field names and their aliases), found by walking the models."""
    current: type[BaseModel] | None = model
    for part in loc:
        field = current.model_fields.get(str(part)) if current is not None else None
        current = _model_in(field.annotation) if field is not None else None
    if current is None:
        return []
    keys: list[str] = []
    for name, field in current.model_fields.items():
        keys.append(name)
        choices = getattr(field.validation_alias, "choices", None)
        keys.extend(str(choice) for choice in choices or ())
    return keys


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as `Targets` or `Targets | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def spec_json_schema(kind: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a spec (for editors and `rightsize schema`).

    With `kind` ('training', 'inference'), the schema of that kind alone. Without, a schema for any
    kind: `oneOf` the kinds (told apart by their `kind` constant; no `kind:` means training), with
    the union of their top-level keys described at the top so an editor completes every key.
    """
    if kind is None:
        return _any_kind_schema()
    spec_cls = _schema_kinds().get(kind)
    if spec_cls is None:
        hint = did_you_mean(kind, SPEC_KINDS)
        raise BadInput(
            f"Unknown spec kind {kind!r}.",
            f"Known kinds: {', '.join(SPEC_KINDS)}.",
            (hint[0].upper() + hint[1:] + " " if hint else "") + "Ask for one of them, or for all at once.",
        )
    return {"$schema": _SCHEMA_DIALECT, **_kind_schema(spec_cls)}


def _kind_schema(spec_cls: type[BaseModel]) -> dict[str, Any]:
    """One kind's schema, with `model` widened to every form the loader accepts (kinds whose model is
    a ModelArch; vision and recommendation models are preset names)."""
    schema = spec_cls.model_json_schema()
    if "ModelArch" not in schema.get("$defs", {}):
        return schema
    model_property = schema["properties"]["model"]
    schema["properties"]["model"] = _model_input_schema(
        schema["$defs"]["ModelArch"], model_property["description"]
    )
    return schema


def _model_input_schema(arch: Mapping[str, Any], description: str) -> dict[str, Any]:
    """The `model` field takes more than the ModelArch object pydantic would describe: a preset name or
    config path (string), or a preset / config base with overrides. The schema says so."""
    overrides = {
        key: {**value, "description": value["description"] + " (overrides the base)"}
        for key, value in arch["properties"].items()
    }
    base_description = {
        "preset": "Name of the preset the model starts from (`rightsize models`).",
        "config": "Path to a Hugging Face config.json the model starts from (relative to the spec file).",
    }
    return {
        "description": description,
        "anyOf": [
            {
                "type": "string",
                "maxLength": 4096,
                "description": "A preset name (e.g. 'llama3-70b') or a path to a config.json.",
            },
            {"$ref": "#/$defs/ModelArch"},
            *(
                {
                    "type": "object",
                    "description": f"A model built from a {base} with some fields overridden.",
                    "properties": {base: {"type": "string", "description": text}, **overrides},
                    "required": [base],
                    "additionalProperties": False,
                }
                for base, text in base_description.items()
            ),
        ],
    }


def _schema_kinds() -> dict[str, type[BaseModel]]:
    """Every kind a spec file may be, for the schema: the workload kinds and `kind: fleet` (read by
    its own loader, `spec.fleet_load`, and imported here only when a schema is asked for)."""
    from rightsize.spec.fleet import FleetSpec
    from rightsize.spec.sweep import SweepSpec

    return {**SPEC_KINDS, "fleet": FleetSpec, "sweep": SweepSpec}


def _any_kind_schema() -> dict[str, Any]:
    """Every kind in one schema: `oneOf` the kinds' schemas, kept in `$defs` under their class names."""
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    variants: dict[str, dict[str, dict[str, Any]]] = {}  # key -> kind -> its property schema
    for kind, spec_cls in _schema_kinds().items():
        schema = _kind_schema(spec_cls)
        for name, definition in schema.pop("$defs").items():
            # Shared models (ModelArch) must be described identically by every kind.
            if defs.setdefault(name, definition) != definition:
                raise RuntimeError(f"two spec kinds define different JSON Schemas named {name!r}")
        defs[spec_cls.__name__] = schema
        for key, prop in schema["properties"].items():
            variants.setdefault(key, {})[kind] = prop
    for key, by_kind in variants.items():
        distinct = {_json_key(prop): prop for prop in by_kind.values()}
        if len(distinct) == 1:
            properties[key] = next(iter(distinct.values()))
        elif key != "kind":
            properties[key] = {
                "description": "; ".join(
                    f"{kind}: {str(prop.get('description', '')).rstrip('.')}"
                    for kind, prop in by_kind.items()
                )
                + ".",
                "anyOf": _merged_options(distinct.values()),
            }
    properties["kind"] = {
        "enum": list(_schema_kinds()),
        "default": next(iter(SPEC_KINDS)),
        "description": (
            "Spec kind: 'training' (pre-training runs; the default when left out), 'inference' "
            "(serving a model), 'vision' (CNNs and vision transformers), 'recommendation' "
            "(DLRM-style models) or 'fleet' (many workloads over months on one pool). It decides "
            "which other keys the spec takes."
        ),
    }
    return {
        "$schema": _SCHEMA_DIALECT,
        "title": "rightsize spec",
        "description": "A workload to size; `kind` picks the kind and with it the keys below that apply.",
        "type": "object",
        "properties": {"kind": properties.pop("kind"), **properties},
        "oneOf": [{"$ref": f"#/$defs/{spec_cls.__name__}"} for spec_cls in _schema_kinds().values()],
        "$defs": defs,
    }


def _merged_options(props: typing.Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The forms a key takes over the kinds, each distinct form once (descriptions aside), in kind
    order. A property that is only a choice of forms (`anyOf` and a description) contributes its
    forms, so a preset-name string merges with the training model's own string form."""
    options: dict[str, dict[str, Any]] = {}
    for prop in props:
        forms = prop["anyOf"] if set(prop) <= {"anyOf", "description", "title"} else None
        for form in forms or [prop]:
            bare = {name: value for name, value in form.items() if name not in ("description", "title")}
            options.setdefault(_json_key(bare), form if forms else bare)
    return list(options.values())


def _json_key(value: Any) -> str:
    """A canonical text of a JSON value, to compare schemas."""
    return json.dumps(value, sort_keys=True)
