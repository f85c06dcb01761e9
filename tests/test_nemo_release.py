"""The exported NeMo job against the source of the pinned release, nemo_toolkit 2.3.0 (the NeMo
release whose own docs name the nvcr.io/nvidia/nemo:25.04 container: docs/source/evaluation/
evaluation_doc.rst and tutorials/llm/llama/pruning-distillation/README.md at tag v2.3.0).

NeMo itself cannot run here: `nemo.collections.llm` imports ~90 packages (measured Nov 2026:
652 MB beside a shared torch), pins numpy<2 while this project's environment has numpy 2, and its
tensorstore (0.1.71, the <0.1.72 NeMo asks for) fails to initialise under numpy 2. So the
release's code is read, not run: the wheel (`pip download --no-deps nemo_toolkit==2.3.0`, 6 MB;
CI sets RIGHTSIZE_NEMO_WHEEL to it) is opened as a zip and its recipes, model configs and
strategy read with Python's `ast`:

- each recipe the export names exists, with `pretrain_recipe` / `finetune_recipe` taking the
  keywords the script passes (a recipe without `finetune_recipe` is refused for LoRA);
- the recipe's model config (its dataclass fields, through its base classes) has the plan's
  shape: layers, width, heads, query groups, FFN width, experts, rotary scaling; so GPT-3 is
  NeMo's GPT-3 175B, never a Llama;
- every `s.<field>` the script sets is a MegatronStrategy parameter; the LoRA fine-tuning
  trainer builds its strategy without a `ddp` config (so the script leaves `s.ddp` alone);
- the classes the script configures take the keywords it gives them.

Skipped without the wheel, unless RIGHTSIZE_REQUIRE_NEMO is set.
"""

from __future__ import annotations

import ast
import os
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from export_plans import plan_dict

from rightsize.export.frameworks import launch_for
from rightsize.export.fw_nemo import RECIPES
from rightsize.export.plan_view import training_view

VERSION = "2.3.0"
EXAMPLES = ["gpt3-175b-megatron", "llama3-70b-pretrain", "mixtral-8x7b-pretrain", "llama3-8b-lora-weekly"]


@cache
def wheel() -> zipfile.ZipFile:
    path = os.environ.get("RIGHTSIZE_NEMO_WHEEL", "")
    if not path or not Path(path).is_file():
        why = f"no nemo_toolkit {VERSION} wheel (pip download --no-deps nemo_toolkit=={VERSION}; RIGHTSIZE_NEMO_WHEEL)"
        if os.environ.get("RIGHTSIZE_REQUIRE_NEMO"):
            pytest.fail(f"{why}; RIGHTSIZE_REQUIRE_NEMO is set")
        pytest.skip(why)
    assert Path(path).name.startswith(f"nemo_toolkit-{VERSION}-"), path
    return zipfile.ZipFile(path)


@cache
def source(module_path: str) -> ast.Module:
    return ast.parse(wheel().read(module_path).decode())


def function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def params(fn: ast.FunctionDef) -> set[str]:
    a = fn.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


def classes(package: str) -> dict[str, ast.ClassDef]:
    """Every class defined under a package folder of the wheel, by name."""
    out: dict[str, ast.ClassDef] = {}
    for name in wheel().namelist():
        if name.startswith(package) and name.endswith(".py"):
            for node in source(name).body:
                if isinstance(node, ast.ClassDef):
                    out.setdefault(node.name, node)
    return out


def fields(cls: str, known: dict[str, ast.ClassDef]) -> dict[str, Any]:
    """A dataclass's field defaults (literals), its bases' first, as Python resolves them."""
    node = known[cls]
    out: dict[str, Any] = {}
    for base in reversed(node.bases):
        if isinstance(base, ast.Name) and base.id in known:
            out.update(fields(base.id, known))
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            try:
                out[stmt.target.id] = ast.literal_eval(stmt.value)
            except ValueError:
                out[stmt.target.id] = ast.unparse(stmt.value)
    return out


def model_config(recipe: str) -> str:
    """The config class the recipe's `model()` builds (`run.Config(<Config>...)`)."""
    fn = function(source(f"nemo/collections/llm/recipes/{recipe}.py"), "model")
    assert fn is not None, recipe
    names = [
        c.args[0].id
        for c in ast.walk(fn)
        if isinstance(c, ast.Call) and c.args and isinstance(c.args[0], ast.Name) and c.args[0].id.endswith(
            tuple(f"Config{s}" for s in ("", "175B", "8B", "70B", "405B", "8x7B"))
        )
    ]  # fmt: skip
    assert names, recipe
    return names[0]


@pytest.mark.parametrize(("shape", "entry"), list(RECIPES.items()))
def test_recipe_is_the_plans_model(shape: tuple[Any, ...], entry: tuple[str, bool]) -> None:
    recipe, has_lora = entry
    tree = source(f"nemo/collections/llm/recipes/{recipe}.py")
    pre = function(tree, "pretrain_recipe")
    assert pre is not None and {"name", "dir", "num_nodes", "num_gpus_per_node"} <= params(pre)
    fine = function(tree, "finetune_recipe")
    assert (fine is not None and "peft_scheme" in params(fine)) == has_lora, recipe
    f = fields(model_config(recipe), classes("nemo/collections/llm/gpt/model/"))
    heads = f["num_attention_heads"]
    groups = f.get("num_query_groups") or heads
    built = (f["num_layers"], f["hidden_size"], heads, groups, f["ffn_hidden_size"], f.get("num_moe_experts") or 0,
             f.get("scale_factor"))  # fmt: skip
    assert built == shape, (recipe, built, shape)


@pytest.mark.parametrize("example", EXAMPLES)
def test_script_uses_the_release_api(example: str) -> None:
    v = training_view(plan_dict(example))
    py = launch_for(v, "nemo").files["nemo_train.py"]
    tree = ast.parse(py)
    strategy_init = next(
        n
        for n in ast.walk(classes("nemo/lightning/pytorch/strategies/")["MegatronStrategy"])
        if isinstance(n, ast.FunctionDef) and n.name == "__init__"
    )
    set_on_strategy = {
        t.value.id + "." + t.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "s"
    }
    assert set_on_strategy and {s.split(".")[1] for s in set_on_strategy} <= params(strategy_init)
    lora = v.method == "lora"
    if not lora:  # the recipe's Adam (recipes/optim/adam.py) carries the field the script sets
        adam = function(
            source("nemo/collections/llm/recipes/optim/adam.py"),
            "distributed_fused_adam_with_cosine_annealing",
        )
        assert adam is not None and "use_distributed_optimizer=" in ast.unparse(adam)
        on = str(v.zero_stage >= 1)
        assert f"s.ddp.use_distributed_optimizer = {on}" in py
        assert f"recipe.optim.config.use_distributed_optimizer = {on}" in py
    if lora:  # the fine-tuning trainer's strategy has no ddp config to set fields on
        trainer = function(
            source("nemo/collections/llm/recipes/finetune_default.py"), "default_finetune_trainer"
        )
        assert trainer is not None and "ddp=" not in ast.unparse(trainer)
        assert "s.ddp" not in py
    llm_classes = classes("nemo/collections/llm/gpt/data/")
    for call in ast.walk(tree):  # run.Config(llm.X, k=...): X takes each k
        if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "run.Config" and call.args):
            continue
        target = ast.unparse(call.args[0])
        if target.startswith("llm.") and target[4:] in llm_classes:
            init = function(ast.Module(body=llm_classes[target[4:]].body, type_ignores=[]), "__init__")
            assert init is not None
            assert {k.arg for k in call.keywords} <= params(init), (target, [k.arg for k in call.keywords])
