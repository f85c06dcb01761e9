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

import yaml
from pydantic import BaseModel, ValidationError

from rightsize import yamlio
from rightsize.errors import BadInput, did_you_mean

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


def load_spec(path: str | Path) -> Spec:
    """Read and validate a YAML spec; relative paths in it (model config, length files) resolve
    against the spec's folder."""
    path = Path(path).expanduser()
    if not path.is_file():
        why = "It is a folder, not a file." if path.is_dir() else "No such file."
        raise BadInput(f"Cannot open the spec {path}.", why, "Check the path; examples/ holds sample specs.")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(
            f"Cannot read the spec {path}.", str(err), "Check the file's permissions and encoding."
        ) from None
    try:
        data = yamlio.safe_load(text)
    except yaml.YAMLError as err:
        raise _yaml_error(path, err) from None
    return parse_spec(data, path.parent, source=str(path))


def _yaml_error(path: Path, err: yaml.YAMLError) -> BadInput:
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    why = f"{problem} ({context})" if context else str(problem)
    return BadInput(
        f"Cannot parse the spec {path}: malformed YAML{where}.",
        why[0].upper() + why[1:],
        "Check the indentation, colons and quoting on that line and the one before it.",
    )


def parse_spec(data: Any, base_dir: Path | None = None, source: str = "(inline)") -> Spec:
    """Validate an already-parsed spec mapping (the Python API and tests use this)."""
    if data is None:
        raise BadInput(f"The spec {source} is empty.", "There is nothing to plan.", _SCHEMA_FIX)
    if not isinstance(data, Mapping):
        raise BadInput(
            f"The spec {source} is not a mapping of keys to values.",
            f"Its top level is a {type(data).__name__}.",
            "Start the file with keys such as `model:` and `training:` (or `kind: inference`, `model:` "
            "and `traffic:`). " + _SCHEMA_FIX,
        )
    kind = data.get("kind", "training")
    spec_cls = SPEC_KINDS.get(kind) if isinstance(kind, str) else None
    if spec_cls is None:
        hint = did_you_mean(str(kind), SPEC_KINDS)
        raise BadInput(
            f"Unknown spec kind {kind!r} in {source}.",
            f"Known kinds: {', '.join(SPEC_KINDS)}.",
            (hint[0].upper() + hint[1:] + " " if hint else "") + "Set `kind:` to one of them.",
        )
    context = {"base_dir": Path(base_dir) if base_dir is not None else Path.cwd()}
    try:
        spec: Spec = spec_cls.model_validate(dict(data), context=context)  # type: ignore[assignment]
        return spec
    except ValidationError as err:
        raise validation_error(err, spec_cls, source) from None


def validation_error(err: ValidationError, model: type[BaseModel], source: str) -> BadInput:
    """One BadInput listing each problem as `field.path: message (got VALUE)`."""
    lines = [line for error in err.errors() for line in _describe(error, model).split("\n")]
    count = f"{len(lines)} problem" + ("s" if len(lines) != 1 else "")
    return BadInput(f"The spec {source} is invalid.", f"{count}:\n" + "\n".join(lines), _SCHEMA_FIX)


def _describe(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    loc: Sequence[Any] = error["loc"]
    where = ".".join(str(part) for part in loc)
    prefix = f"    - {where}: " if where else "    - "
    kind = error["type"]
    if kind == "extra_forbidden":
        owner = _other_kind_with_key(model, loc)
        if owner is not None:
            return f"{prefix}unknown key for kind {_kind_of(model)}; it belongs to kind {owner} (set `kind: {owner}`)"
        hint = did_you_mean(str(loc[-1]), _allowed_keys(model, loc[:-1]))
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
    spec_cls = SPEC_KINDS.get(kind)
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


def _any_kind_schema() -> dict[str, Any]:
    """Every kind in one schema: `oneOf` the kinds' schemas, kept in `$defs` under their class names."""
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    variants: dict[str, dict[str, dict[str, Any]]] = {}  # key -> kind -> its property schema
    for kind, spec_cls in SPEC_KINDS.items():
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
        "enum": list(SPEC_KINDS),
        "default": next(iter(SPEC_KINDS)),
        "description": (
            "Spec kind: 'training' (pre-training runs; the default when left out), 'inference' "
            "(serving a model), 'vision' (CNNs and vision transformers) or 'recommendation' "
            "(DLRM-style models). It decides which other keys the spec takes."
        ),
    }
    return {
        "$schema": _SCHEMA_DIALECT,
        "title": "rightsize spec",
        "description": "A workload to size; `kind` picks the kind and with it the keys below that apply.",
        "type": "object",
        "properties": {"kind": properties.pop("kind"), **properties},
        "oneOf": [{"$ref": f"#/$defs/{spec_cls.__name__}"} for spec_cls in SPEC_KINDS.values()],
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
