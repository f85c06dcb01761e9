"""Dump TensorRT-LLM's `trtllm-serve` options and LLM API fields as a table, read from a
TensorRT-LLM source tree with `ast` (nothing of it is imported or run).

Why `ast` and not an import: `tensorrt_llm.commands.serve` and `tensorrt_llm.llmapi.llm_args`
import the compiled C++ bindings (`tensorrt_llm.bindings`, base classes of KvCacheConfig and
SchedulerConfig, and `LinearCacheType` used in field types), torch with CUDA, transformers
and mpi4py at module level; placeholders for the bindings would stand in for the very classes
whose fields are wanted. The source text is what the release ships (the wheel's .py files are
these files), so the table is read from it:

- `serve`: the `@click.option` decorators of the function under `@click.command("serve")`
  (flags, the destination, the click type: int / float / str / a Choice and its aliases /
  a Path, `is_flag`, `multiple`) and its `@click.argument`s;
- the LLM API: the annotated fields of `TorchLlmArgs` and of the classes it derives from
  (`BaseLlmArgs`), and of every pydantic config class a field names (KvCacheConfig, ...),
  each with its annotation, a type tag (int, float, bool, str, choice, model:<Class>, list,
  dict, any), whether None is allowed, and whether the class forbids unknown keys
  (`StrictBaseModel`: pydantic `extra = "forbid"`), which is how an unknown YAML key fails in
  TensorRT-LLM (`update_llm_args_with_extra_dict` builds the config classes from the YAML).

Run: python derive_trtllm.py SRC OUT.json "provenance text", SRC holding tensorrt_llm/.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

INT = {"int", "PositiveInt", "NonNegativeInt", "StrictInt", "conint"}
FLOAT = {"float", "NonNegativeFloat", "PositiveFloat", "confloat"}
WRAPPERS = {"Optional", "Union", "Annotated"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return _name(node.func)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    return ""


def _literal(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


# ---------------------------------------------------------------------------- trtllm-serve
def _click_type(node: ast.expr | None, is_flag: bool) -> dict:
    if is_flag:
        return {"flag": True}
    if node is None:
        return {"type": "str"}
    name = _name(node)
    if name in ("int", "float", "str"):
        return {"type": name}
    if name in ("Choice", "ChoiceWithAlias") and isinstance(node, ast.Call):
        choices = _literal(node.args[0]) if node.args else None
        out: dict = {"type": "str", "choices": list(choices) if isinstance(choices, (list, tuple)) else None}
        if name == "ChoiceWithAlias" and len(node.args) > 1:
            out["aliases"] = _literal(node.args[1])
        return out
    if name == "Path":
        return {"type": "str", "path": True}
    return {"type": "str", "click_type": ast.unparse(node)}


def serve_options(tree: ast.Module) -> tuple[list[dict], list[str]]:
    fn = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call)
            and _name(d.func) == "command"
            and d.args
            and _literal(d.args[0]) == "serve"
            for d in n.decorator_list
        )
    )
    options, arguments = [], []
    for d in fn.decorator_list:
        if not isinstance(d, ast.Call):
            continue
        kind = _name(d.func)
        strings = [_literal(a) for a in d.args]
        if kind == "argument":
            arguments.append(strings[0])
        if kind != "option":
            continue
        kw = {k.arg: k.value for k in d.keywords}
        flags = [s for s in strings if isinstance(s, str) and s.startswith("-")]
        dest = next((s for s in strings if isinstance(s, str) and not s.startswith("-")), None)
        is_flag = bool(_literal(kw["is_flag"])) if "is_flag" in kw else False
        row: dict = {"flags": flags, "dest": dest or flags[0].lstrip("-").replace("-", "_")}
        row |= _click_type(kw.get("type"), is_flag)
        if "multiple" in kw and _literal(kw["multiple"]):
            row["multiple"] = True
        if row.get("choices") is None and "choices" in row:
            row.pop("choices")  # computed at run time (log levels): any string
        options.append(row)
    return options, arguments


# ---------------------------------------------------------------------------- LLM API
def _type_tag(ann: ast.expr, models: set[str], enums: dict[str, list]) -> tuple[list[str], bool, list | None]:
    """(type tags, None allowed, Literal or enum choices) of an annotation."""
    name = _name(ann)
    if isinstance(ann, ast.Constant) and ann.value is None:
        return [], True, None
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        a, b = _type_tag(ann.left, models, enums), _type_tag(ann.right, models, enums)
        return a[0] + b[0], a[1] or b[1], (a[2] or []) + (b[2] or []) or None
    if name in WRAPPERS and isinstance(ann, ast.Subscript):
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if name == "Annotated":
            parts = parts[:1]
        tags, none, choices = [], name == "Optional", None
        for p in parts:
            t, n, c = _type_tag(p, models, enums)
            tags += t
            none = none or n
            choices = (choices or []) + c if c else choices
        return tags, none, choices
    if name == "Literal" and isinstance(ann, ast.Subscript):
        vals = _literal(ann.slice)
        vals = list(vals) if isinstance(vals, tuple) else [vals]
        return ["choice"], None in vals, [v for v in vals if v is not None]
    if name in INT:
        return ["int"], False, None
    if name in FLOAT:
        return ["float"], False, None
    if name in ("bool", "StrictBool"):
        return ["bool"], False, None
    if name in ("str", "Path", "StrictStr"):
        return ["str"], False, None
    if name in ("List", "list", "Tuple", "tuple", "Set", "set"):
        return ["list"], False, None
    if name in ("Dict", "dict", "Mapping"):
        return ["dict"], False, None
    if name in enums:
        return ["choice"], False, list(enums[name])
    if name in models:
        return [f"model:{name}"], False, None
    return ["any"], False, None


def pydantic_classes(tree: ast.Module) -> dict[str, dict]:
    """Every class in the module: its bases, its annotated fields, whether it forbids extras."""
    out: dict[str, dict] = {}
    for n in tree.body:
        if not isinstance(n, ast.ClassDef):
            continue
        fields, forbid = {}, None
        for s in n.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                fname = s.target.id
                ann = ast.unparse(s.annotation)
                if fname.startswith("_") or ann.startswith("ClassVar"):
                    continue
                if isinstance(s.value, ast.Call) and _name(s.value.func) == "PrivateAttr":
                    continue
                fields[fname] = s.annotation
            if isinstance(s, ast.ClassDef) and s.name == "Config":  # class Config: extra = "forbid"
                for c in s.body:
                    if isinstance(c, ast.Assign) and any(getattr(t, "id", "") == "extra" for t in c.targets):
                        forbid = _literal(c.value) == "forbid"
            if isinstance(s, ast.Assign) and any(getattr(t, "id", "") == "model_config" for t in s.targets):
                src = ast.unparse(s.value)
                if "extra" in src:
                    forbid = "'forbid'" in src or '"forbid"' in src
        bases = [_name(b) for b in n.bases]
        values = None
        if {"Enum", "StrEnum", "IntEnum"} & set(bases):  # pydantic takes an enum's values
            values = [
                _literal(c.value)
                for c in n.body
                if isinstance(c, ast.Assign) and _literal(c.value) is not None
            ]
        out[n.name] = {"bases": bases, "fields": fields, "forbid": forbid, "enum": values}
    return out


def resolve(classes: dict[str, dict], name: str) -> tuple[dict[str, ast.expr], bool | None]:
    """Fields over the class and its bases (a subclass's annotation wins), and extra=forbid
    (the class's own setting, else inherited from a base that sets it)."""
    c = classes[name]
    fields: dict[str, ast.expr] = {}
    inherited = None
    for base in reversed(c["bases"]):
        if base in classes:
            f, fb = resolve(classes, base)
            fields |= f
            inherited = fb if fb is not None else inherited
    fields |= c["fields"]
    return fields, c["forbid"] if c["forbid"] is not None else inherited


def model_table(classes: dict[str, dict], root: str) -> dict[str, dict]:
    """`root` and every class its fields name, each as {forbid_extra, fields}."""
    enums = {k: v["enum"] for k, v in classes.items() if v["enum"] is not None}
    names = set(classes) - set(enums)
    todo, seen, out = [root], set(), {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        fields, forbid = resolve(classes, name)
        rows = {}
        for fname, ann in fields.items():
            tags, none, choices = _type_tag(ann, names, enums)
            row: dict = {"annotation": ast.unparse(ann), "types": sorted(set(tags)) or ["any"], "none": none}
            if choices:
                row["choices"] = choices
            rows[fname] = row
            todo += [t[6:] for t in tags if t.startswith("model:")]
        out[name] = {"forbid_extra": bool(forbid), "fields": rows}
    return out


def main() -> None:
    src, dest, provenance = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    pkg = src / "tensorrt_llm"
    version = _literal(ast.parse((pkg / "version.py").read_text()).body[-1].value)
    serve = ast.parse((pkg / "commands" / "serve.py").read_text())
    options, arguments = serve_options(serve)
    classes = pydantic_classes(ast.parse((pkg / "llmapi" / "llm_args.py").read_text()))
    models = model_table(classes, "TorchLlmArgs")
    doc = {
        "source": provenance,
        "tensorrt_llm_version": version,
        "derived_by": "tests/data/engine_args/derive_trtllm.py (ast over commands/serve.py and llmapi/llm_args.py)",
        "positional": arguments,  # (not "arguments": other tables use that key for their option rows)
        "options": options,
        "llm_api_root": "TorchLlmArgs",
        "models": models,
        # kept for readers of the old table: the root's keys and KvCacheConfig's
        "llm_api_keys": sorted(models["TorchLlmArgs"]["fields"]),
        "kv_cache_config_keys": sorted(models["KvCacheConfig"]["fields"]),
    }
    dest.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main()
