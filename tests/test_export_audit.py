"""Issue #25, checked on plans nobody wrote an example for: every exported file of every
target, framework and engine, read by the real tool that would run it.

A deterministic grid of specs (the examples varied: workload kind, every vendor's
accelerator, model size, deadlines long enough to need segments, preemptible capacity) is
planned by the real planner; every plan is exported to every target (slurm, kubernetes,
prometheus) with every framework (auto, megatron, torchtitan, nemo) or engine (plan's,
vllm, sglang, trtllm). Each exported file goes through:

- shell: `bash -n`, `shellcheck -S error` (where installed), and `sbatch --test-only` on a
  real slurmctld whose nodes are the catalog's node types (tests/slurm_cluster.py: cores x
  2 threads, host memory, GPU gres, memory consumable, partition MaxTime enforced);
- framework and engine command lines: argparse parsers built from the pinned releases'
  own argument tables (tests/data: Megatron-LM core_v0.13.0, torchtitan v0.1.0's JobConfig,
  vLLM v0.10.1, SGLang v0.5.19, sglang-router 0.3.2, trtllm-serve; on Gaudi, Intel's forks:
  vLLM v0.9.0.1+Gaudi-1.22.0 and Megatron-LM 1.22.0); NeMo scripts compile;
  TorchRec's DLRM trainer's own parse_args and start-up checks (test_dlrm_release), torchvision
  v0.21.0's classification train.py get_args_parser (test_torchvision_release);
- Kubernetes: every object against the Kubernetes 1.33 schema (kubernetes-validate,
  strict) or its vendored CRD schema (tests/data/crds), then what Kueue needs to admit and
  place the pods: the workload's queue-name is a LocalQueue of the export, whose
  ClusterQueue covers every resource the pods request (CPU, memory, devices, ephemeral
  storage) with enough quota, through flavors whose node labels the pods' selectors agree
  with; PDBs below the autoscaler's floor; probes on services; images by digest or exact
  tag; checkpoints and data on PVCs; RDMA device and IPC_LOCK when NCCL uses InfiniBand;
  a grace period holding the plan's checkpoint write;
- Prometheus: `promtool check rules` and `promtool test rules`;
- invariants: no NVIDIA resource, CUDA or NCCL setting on a non-NVIDIA plan, and no
  torchrun or Megatron on a part that is not a GPU (Intel's Megatron-LM fork on Gaudi
  excepted); the Slurm warning (USR1 lead) holds the
  plan's checkpoint write and a step; segments within the partition's MaxTime; the first
  checkpoint within the first segment; the auto route exports whenever some explicit
  route of that target does; every refusal is a BadInput/Infeasible with what, why and fix.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from engine_tables import TYPES, parser_from_rows

import rightsize.api as api
from rightsize.catalog import get_accelerator, get_node
from rightsize.catalog.tpu_slices import tpu_slices
from rightsize.errors import RightsizeError
from rightsize.export import render_files
from rightsize.export.plan_view import training_view
from rightsize.report.render import result_dict

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import PARTITION_MAX_TIME, NodeShape, catalog_cluster, missing  # noqa: E402
from test_export_kubernetes import CRD_FILES, _crd_schema, _quantity, _validate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
SHELLCHECK = shutil.which("shellcheck")
PROMTOOL = shutil.which("promtool")
TRAIN_ROUTES = ("auto", "megatron", "torchtitan", "nemo")
SERVE_ROUTES = (None, "vllm", "sglang", "trtllm")
TARGETS = ("slurm", "kubernetes", "prometheus")
PARTITION_MAX_S = 2 * 86400  # slurm_cluster.PARTITION_MAX_TIME
assert PARTITION_MAX_TIME == "2-00:00:00"


def _spec(example: str, name: str, **changes: Any) -> tuple[str, str, dict[str, Any]]:
    return name, example, changes


# The grid: (name, example it varies, changes as dotted keys; None deletes the key).
SPECS = [
    _spec("llama3-70b-pretrain", "t-70b-h100", **{"targets.accelerators": ["h100-sxm"]}),
    _spec(
        "llama3-70b-pretrain",
        "t-70b-b200-spot",
        **{
            "targets.accelerators": ["b200"],
            "targets.deadline": "120d",
            "infrastructure.cost": {"spot_preemption_per_hour": 0.02},
        },
    ),
    _spec("llama3-70b-pretrain", "t-70b-gb200", **{"targets.accelerators": ["gb200"]}),
    _spec("llama3-70b-pretrain", "t-70b-mi300x", **{"targets.accelerators": ["mi300x"]}),
    _spec(
        "llama3-70b-pretrain",
        "t-70b-mi355x",
        **{"targets.accelerators": ["mi355x"], "targets.deadline": "90d"},
    ),
    _spec("llama3-70b-pretrain", "t-70b-gaudi3", **{"targets.accelerators": ["gaudi3"]}),
    _spec("llama3-70b-pretrain", "t-70b-trn2", **{"targets.accelerators": ["trn2"]}),
    _spec(
        "llama3-70b-pretrain",
        "t-70b-v5p",
        **{"targets.accelerators": ["tpu-v5p"], "targets.deadline": "150d"},
    ),
    _spec("llama3-70b-pretrain", "t-70b-v6e", **{"targets.accelerators": ["tpu-v6e"]}),
    _spec("llama3-70b-pretrain", "t-70b-v7", **{"targets.accelerators": ["tpu-v7"]}),
    _spec(
        "llama3-70b-pretrain",
        "t-8b-l40s-short",
        **{
            "model": "llama3-8b",
            "targets.accelerators": ["l40s"],
            "training.train_tokens": "2B",
            "training.seq_len": 4096,
            "targets.deadline": "3d",
        },
    ),
    _spec(
        "llama3-70b-pretrain",
        "t-8b-h100-fixed16",
        **{
            "model": "llama3-8b",
            "targets.accelerators": ["h100-sxm"],
            "training.train_tokens": "300B",
            "targets.deadline": None,
            "targets.gpus": 16,
            "targets.objective": "time",
        },
    ),
    _spec("llama3-8b-lora-weekly", "t-lora-h100", **{"targets.accelerators": ["h100-sxm"]}),
    _spec("llama3-8b-lora-weekly", "t-lora-mi300x", **{"targets.accelerators": ["mi300x"]}),
    _spec(
        "llama3-8b-lora-weekly",
        "t-lora-l40s-long",
        **{"targets.accelerators": ["l40s"], "training.train_tokens": "5B", "infrastructure.schedule": None},
    ),
    _spec("mixtral-8x7b-pretrain", "t-mixtral-h200", **{"targets.accelerators": ["h200-sxm"]}),
    _spec("mixtral-8x7b-pretrain", "t-mixtral-mi300x", **{"targets.accelerators": ["mi300x"]}),
    _spec("gpt3-175b-megatron", "t-gpt3-b200", **{"targets.accelerators": ["b200"]}),
    _spec("llama3.1-405b-pretrain", "t-405b-mi355x", **{"targets.accelerators": ["mi355x"]}),
    _spec("deepseek-v3-pretrain", "t-dsv3-h200", **{"targets.accelerators": ["h200-sxm"]}),
    _spec(
        "mixtral-8x7b-pretrain",
        "t-mixtral-gb200-roce",
        **{"targets.accelerators": ["gb200"], "infrastructure.fabric": {"kind": "roce"}},
    ),
    _spec("llama3-70b-chat-serving", "s-70b-h100", **{"targets.accelerators": ["h100-sxm"]}),
    _spec("llama3-70b-chat-serving", "s-70b-mi300x", **{"targets.accelerators": ["mi300x"]}),
    _spec("llama3-70b-chat-serving", "s-70b-mi355x", **{"targets.accelerators": ["mi355x"]}),
    _spec("llama3-70b-chat-serving", "s-70b-b200", **{"targets.accelerators": ["b200"]}),
    _spec("llama3-70b-chat-serving", "s-70b-gb200", **{"targets.accelerators": ["gb200"]}),
    _spec(
        "llama3-70b-chat-serving",
        "s-70b-gaudi3",
        **{"targets.accelerators": ["gaudi3"], "targets.objective": "gpus"},
    ),
    _spec("llama3-70b-chat-serving", "s-70b-trn2", **{"targets.accelerators": ["trn2"]}),
    _spec("llama3-70b-chat-serving", "s-70b-v5p", **{"targets.accelerators": ["tpu-v5p"]}),
    _spec("llama3-70b-chat-serving", "s-70b-v6e", **{"targets.accelerators": ["tpu-v6e"]}),
    _spec(
        "llama3-70b-chat-serving",
        "s-70b-v7",
        **{"targets.accelerators": ["tpu-v7"], "targets.objective": "gpus"},
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-8b-l40s",
        **{"model": "llama3-8b", "targets.accelerators": ["l40s"], "serving.weight_precision": "bf16"},
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-70b-offline",
        **{
            "serving.scenario": "offline",
            "targets.accelerators": ["h200-sxm"],
            "slo": None,
            "traffic.peak_rate": None,
            "traffic.rate": None,
            "traffic.prefix_cache_hit_rate": None,
            "targets.objective": "cost",
        },
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-mixtral-mi300x",
        **{"model": "mixtral-8x7b", "targets.accelerators": ["mi300x"]},
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-405b-trn2",
        **{"model": "llama3.1-405b", "targets.accelerators": ["trn2"], "targets.objective": "gpus"},
    ),
    _spec("llama2-7b-batch1", "s-7b-batch8-l40s", **{"serving.batch": 8, "targets.accelerators": ["l40s"]}),
    _spec("llama3-405b-serve-multinode", "s-405b-multinode", **{}),
    _spec("llama3-70b-disaggregated-serving", "s-70b-disagg", **{}),
    _spec("deepseek-v3-ep-serving", "s-dsv3-ep", **{}),
    _spec(
        "deepseek-v3-ep-serving",
        "s-dsv3-ep8-h200",
        **{"serving.expert_parallel": 8, "targets.accelerators": ["h200-sxm"]},
    ),
    *[
        _spec(
            "llama3-70b-chat-serving",
            f"s-8b-{acc}",
            **{
                "model": "llama3-8b",
                "targets.accelerators": [acc],
                "targets.objective": "gpus",
                "serving.weight_precision": "bf16",
                "serving.kv_precision": "bf16",
            },
        )
        for acc in ("l4", "t4", "a10g", "rtx-pro-6000", "h20", "b300", "gb300", "mi325x", "mi350x", "tpu-v5e")
    ],
    _spec(
        "llama3-70b-pretrain",
        "t-8b-b300",
        **{"model": "llama3-8b", "targets.accelerators": ["b300"], "training.train_tokens": "1T"},
    ),
    _spec(
        "llama3-70b-pretrain",
        "t-8b-mi325x",
        **{"model": "llama3-8b", "targets.accelerators": ["mi325x"], "training.train_tokens": "1T"},
    ),
    _spec("resnet50-imagenet-train", "v-resnet50-train", **{}),
    _spec(
        "resnet50-imagenet-train",
        "v-vitb16-h100",
        **{"model": "vit-b16", "train.optimizer": None, "targets.accelerators": ["h100-sxm"]},
    ),
    # refused: the pinned image's CUDA 12.6 build has no Blackwell code
    _spec("resnet50-imagenet-train", "v-resnet50-b200", **{"targets.accelerators": ["b200"]}),
    _spec(
        "resnet50-imagenet-train",
        "v-vitl16-l40s-segments",  # 600 epochs on 8 L40S: longer than a partition allows
        **{
            "model": "vit-l16",
            "train.epochs": 600,
            "targets.accelerators": ["l40s"],
            "targets.gpus": 8,
            "targets.deadline": None,
            "targets.objective": "time",
        },
    ),  # fmt: skip
    _spec("dlrm-criteo-serving", "r-dlrm-serving", **{}),
    # Recommendation training: TorchRec's DLRM trainer (fw_recsys); its own parse_args reads the
    # arguments (test_dlrm_release). bf16 dense compute and AMD are refused with the reason.
    _spec("dlrm-criteo-train", "r-dlrm-train-tf32", **{"train.precision": "tf32"}),
    _spec(
        "dlrm-criteo-train",
        "r-dlrm-train-a100x16",
        **{
            "train.precision": "tf32",
            "targets.accelerators": ["a100-sxm-80gb"],
            "targets.gpus": 16,
            "targets.deadline": None,
            "targets.objective": "time",
        },
    ),  # fmt: skip
    _spec(
        "dlrm-criteo-train",
        "r-dlrm-train-b200",
        **{"train.precision": "tf32", "targets.accelerators": ["b200"]},
    ),
    _spec("dlrm-criteo-train", "r-dlrm-train-bf16", **{}),
    _spec(
        "dlrm-criteo-train",
        "r-dlrm-train-mi300x",
        **{"train.precision": "tf32", "targets.accelerators": ["mi300x"]},
    ),
]


def _change(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *path, last = dotted.split(".")
    for key in path:
        doc = doc.setdefault(key, {})
    if value is None:
        doc.pop(last, None)
    else:
        doc[last] = value


@cache
def _planned(name: str) -> dict[str, Any] | RightsizeError:
    """The spec's plan as `--format json` writes it, or the planner's user-facing refusal."""
    _, example, changes = next(s for s in SPECS if s[0] == name)
    doc = yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text())
    doc["name"] = name
    for key, value in changes.items():
        _change(doc, key, copy.deepcopy(value))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
        try:
            return json.loads(json.dumps(result_dict(api.plan(path))))
        except RightsizeError as err:
            return err


def _vendor(plan: dict[str, Any]) -> str:
    return get_accelerator(plan["best"]["accelerator"]).vendor.lower()


# A user's own node labels (`--node-label`), exported on the default Kubernetes route too.
USER_LABELS = {"example.com/pool": "gpu-a"}


def _routes(plan: dict[str, Any], target: str) -> list[tuple[str, str | None]]:
    if target == "prometheus" or plan["kind"] in ("vision_plan", "recommendation_plan"):
        return [("auto", None)]  # one pinned trainer each (export.kind_exports)
    if plan["kind"] == "training_plan":
        return [(fw, None) for fw in TRAIN_ROUTES]
    return [("auto", e) for e in SERVE_ROUTES]


def _render(plan: dict[str, Any], target: str, fw: str, engine: str | None, labels: bool) -> dict[str, str]:
    return render_files(plan, target, fw, engine=engine, node_labels=USER_LABELS if labels else None)


# --- argument tables of the pinned releases, as argparse parsers ------------------------------------


def _parser(name: str) -> argparse.ArgumentParser:
    if name in MEGATRON_TABLES:
        flags = json.loads((DATA / MEGATRON_TABLES[name]).read_text())["flags"]
        p = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
        for flag, s in flags.items():
            if not s["value"]:
                p.add_argument(flag, action="store_true")
                continue
            kw: dict[str, Any] = {"type": TYPES.get(s.get("type") or "str", str)}
            if s.get("choices"):
                kw["choices"] = [kw["type"](c) for c in s["choices"]]
            if s.get("nargs"):
                kw["nargs"] = s["nargs"]
            p.add_argument(flag, **kw)
        return p
    doc = json.loads((DATA / "engine_args" / name).read_text())
    return parser_from_rows(doc.get("arguments") or doc["options"])


def _parse(name: str, words: list[str]) -> str | None:
    """None when the release's parser accepts `words`, else what it rejects."""
    try:
        _, extra = _parser(name).parse_known_args(words)
    except argparse.ArgumentError as err:
        return f"{name} rejects {err}"
    return f"{name} does not know {extra}" if extra else None


_VAR = re.compile(r"\$\{[^}]*\}|\$\([A-Za-z_][A-Za-z_0-9]*\)|\$[A-Za-z_][A-Za-z_0-9]*|\$\d")
_STOP = {"&", "&&", ";", "|", "||", ">", ">>", "2>&1"}
# program -> (table, positional words the program takes before its options)
PROGRAMS = {
    "pretrain_gpt.py": ("megatron", 0),
    "dlrm_main.py": ("dlrm", 0),  # _check_dlrm
    "sglang.launch_server": ("sglang_v0.5.19_server_args.json", 0),
    "sglang_router.launch_router": ("sglang_router_v0.3.2_args.json", 0),
    "trtllm-serve": ("trtllm_serve_keys.json", 1),
}


def _commands(text: str) -> list[tuple[str, list[str]]]:
    """(program, its words) for every engine or framework launch in a shell text; variables
    become `1` (a value of every type the parsers take)."""
    out = []
    joined = re.sub(r"\\\n\s*", " ", text)
    for line in joined.splitlines():
        if line.lstrip().startswith("#"):
            continue
        try:
            words = shlex.split(_VAR.sub("1", line), comments=True)
        except ValueError:
            continue
        for i, w in enumerate(words):
            prog = w.rsplit("/", 1)[-1]
            if prog == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
                out.append(("vllm", _until_stop(words[i + 3 :])))  # vllm serve MODEL ...
            elif prog in PROGRAMS:
                out.append((prog, _until_stop(words[i + 1 + PROGRAMS[prog][1] :])))
    return out


def _until_stop(words: list[str]) -> list[str]:
    for i, w in enumerate(words):
        if w in _STOP:
            return words[:i]
    return words


def _megatron_rules(words: list[str], world: int, table: str = "megatron") -> list[str]:
    """validate_args of Megatron-LM core_v0.13.0 (megatron/training/arguments.py) on the
    degrees and sizes it checks before building anything."""
    a, _ = _parser(table).parse_known_args(words)
    vars(a).setdefault("pipeline_model_parallel_layout", None)  # core_v0.13.0's; Gaudi's fork has none
    tp, pp = a.tensor_model_parallel_size or 1, a.pipeline_model_parallel_size or 1
    cp, ep = a.context_parallel_size or 1, a.expert_model_parallel_size or 1
    bad = []
    if world % (tp * pp * cp):
        return [f"world size {world} not divisible by TP{tp} x PP{pp} x CP{cp}"]
    dp = world // (tp * pp * cp)
    if a.global_batch_size % (a.micro_batch_size * dp):
        bad.append(
            f"global batch {a.global_batch_size} not divisible by micro-batch {a.micro_batch_size} x DP{dp}"
        )
    uneven = (
        a.decoder_first_pipeline_num_layers
        or a.decoder_last_pipeline_num_layers
        or a.pipeline_model_parallel_layout  # an explicit layout replaces the even split
    )
    if not uneven and a.num_layers % pp:
        bad.append(f"{a.num_layers} layers not divisible by PP{pp}")
    if (
        a.num_layers_per_virtual_pipeline_stage
        and not uneven
        and (a.num_layers // pp) % a.num_layers_per_virtual_pipeline_stage
    ):
        bad.append(
            f"{a.num_layers // pp} layers per stage not divisible by {a.num_layers_per_virtual_pipeline_stage} per virtual stage"
        )
    if (
        layout := a.pipeline_model_parallel_layout
    ):  # megatron/core/transformer/pipeline_parallel_layer_layout.py
        stages = layout.split("|")
        if len(stages) % pp or layout.count("t") != a.num_layers:
            bad.append(
                f"layout of {len(stages)} stages / {layout.count('t')} layers vs PP{pp}, {a.num_layers} layers"
            )
        if not stages[0].startswith("E") or not stages[-1].endswith("L") or set(layout) - set("Et|L"):
            bad.append(f"layout {layout[:40]}... is not E...|...L")
        if a.num_layers_per_virtual_pipeline_stage:
            bad.append("--num-layers-per-virtual-pipeline-stage given with a layout")
    if a.num_attention_heads % tp:
        bad.append(f"{a.num_attention_heads} heads not divisible by TP{tp}")
    if a.group_query_attention and a.num_query_groups % tp:
        bad.append(f"{a.num_query_groups} query groups not divisible by TP{tp}")
    if a.num_experts and a.num_experts % ep:
        bad.append(f"{a.num_experts} experts not divisible by EP{ep}")
    if ep > 1 and (dp * cp * tp) % ep:  # the expert group is carved out of TP x CP x DP
        bad.append(f"EP{ep} does not divide TP x CP x DP = {dp * cp * tp}")
    return bad


def _check_dlrm(text: str, where: str, plan: dict[str, Any]) -> list[str]:
    """TorchRec's DLRM trainer (dlrm_main.py at the pinned commit) parses and start-up-checks
    every launch; its per-GPU batch times the GPUs is the plan's global batch."""
    from test_dlrm_release import dlrm_words, run_release

    bad = []
    for words in dlrm_words(text):
        ns = run_release(words)
        if isinstance(ns, str):
            bad.append(f"{where}: {ns}")
        elif ns.batch_size * int(plan["best"]["gpus"]) != int(plan["best"]["batch"]):
            bad.append(f"{where}: dlrm_main.py --batch_size {ns.batch_size} x {plan['best']['gpus']} GPUs "
                       f"!= the plan's global batch {plan['best']['batch']}")  # fmt: skip
    return bad


def _check_vision(text: str, where: str, plan: dict[str, Any]) -> list[str]:
    """torchvision v0.21.0's train.py parses every launch (its own get_args_parser) with the
    plan's images per GPU and epochs."""
    from test_torchvision_release import parse, train_words

    bad = []
    launches = train_words(text)
    if not launches:
        bad.append(f"{where}: no train.py launch")
    for words in launches:
        ns = parse(words)
        if isinstance(ns, str):
            bad.append(f"{where}: {ns}")
        elif ns.batch_size != plan["best"]["batch_per_gpu"] or ns.epochs != plan["spec"]["train"]["epochs"]:
            bad.append(f"{where}: train.py batch {ns.batch_size} x {ns.epochs} epochs, the plan's "
                       f"{plan['best']['batch_per_gpu']} x {plan['spec']['train']['epochs']}")  # fmt: skip
    return bad


def _check_kind_trainer(text: str, where: str, plan: dict[str, Any]) -> list[str]:
    """The vision and recommendation trainers' own parsers on their launches."""
    if plan["kind"] == "recommendation_plan":
        return _check_dlrm(text, where, plan)
    if plan["kind"] == "vision_plan":
        return _check_vision(text, where, plan)
    return []


def _check_commands(
    text: str, where: str, world: int | None = None, replica: int | None = None, vendor: str = ""
) -> list[str]:
    bad = []
    for prog, words in _commands(text):
        if prog == "dlrm_main.py":
            continue  # read by the trainer's own parser in _check_dlrm
        vllm_table = VLLM_TABLES.get(vendor, "vllm_v0.10.1_engine_args.json")
        table = vllm_table if prog == "vllm" else PROGRAMS[prog][0]
        table = MEGATRON_BY_VENDOR.get(vendor, table) if prog == "pretrain_gpt.py" else table
        if err := _parse(table, words):
            bad.append(f"{where}: {prog}: {err}")
        elif prog == "pretrain_gpt.py" and world:
            bad += [f"{where}: Megatron validate_args: {b}" for b in _megatron_rules(words, world, table)]
        elif prog == "sglang.launch_server":  # server_args.py: the MoE TP group is tp_size / ep_size
            ns, _ = _parser(table).parse_known_args(words)
            if ns.ep_size and ns.tp_size % ns.ep_size:
                bad.append(f"{where}: sglang --ep-size {ns.ep_size} does not divide --tp-size {ns.tp_size}")
            used = ns.tp_size * (ns.pp_size or 1)
            if replica and not ns.disaggregation_mode and used != replica:
                bad.append(f"{where}: sglang runs on TP x PP = {used} GPUs, the plan's replica has {replica}")
        elif prog == "vllm" and replica:
            ns, _ = _parser(table).parse_known_args(words)
            used = (
                (ns.tensor_parallel_size or 1)
                * (ns.pipeline_parallel_size or 1)
                * (ns.data_parallel_size or 1)
            )
            if used != replica:
                bad.append(
                    f"{where}: vLLM runs on TP x PP x DP = {used} devices, the plan's replica has {replica}"
                )
    return bad


# --- per-file validators ------------------------------------------------------------------------------


def _titan_rules(doc: dict[str, Any], world: int) -> list[str]:
    """torchtitan v0.1.0's start-up checks: ParallelDims._validate (the degrees multiply to
    the world size; -1 shards the rest) and train.py's gradient-accumulation assert."""
    par, tr = doc.get("parallelism", {}), doc.get("training", {})
    rep, shard = par.get("data_parallel_replicate_degree", 1), par.get("data_parallel_shard_degree", -1)
    others = par.get("tensor_parallel_degree", 1) * par.get("pipeline_parallel_degree", 1)
    others *= par.get("context_parallel_degree", 1)
    if shard == -1:
        shard = world // (rep * others)
    if rep * shard * others != world:
        return [f"torchtitan: dp_replicate {rep} x dp_shard {shard} x tp x pp x cp {others} != world {world}"]
    local, glob = tr.get("local_batch_size", 8), tr.get("global_batch_size", -1)
    if glob > 0 and glob % (local * rep * shard):
        return [f"torchtitan: global batch {glob} not divisible by local {local} x DP {rep * shard}"]
    mb = par.get("pipeline_parallel_microbatch_size", 1)
    if par.get("pipeline_parallel_degree", 1) > 1 and local % mb:
        return [f"torchtitan: local batch {local} not divisible by pipeline micro-batch {mb}"]
    return []


def _check_torchtitan(text: str, where: str, world: int | None = None) -> list[str]:
    titan = json.loads((DATA / "torchtitan_v0.1.0_job_config.json").read_text())
    bad = [f"{where}: {b}" for b in _titan_rules(tomllib.loads(text), world)] if world else []
    for section, keys in tomllib.loads(text).items():
        if section not in titan["sections"]:
            bad.append(f"{where}: [{section}] is not a torchtitan v0.1.0 section")
            continue
        for key, value in keys.items():
            typ = titan["sections"][section].get(key)
            if typ is None:
                bad.append(f"{where}: [{section}] {key} is not a torchtitan v0.1.0 key")
            elif typ.startswith("Literal[") and repr(value) not in typ:
                bad.append(f"{where}: [{section}] {key} = {value!r} not in {typ}")
    return bad


@cache
def _crd_validator(group: str, kind: str, version: str) -> Any:
    """test_export_kubernetes's strict CRD schema as one compiled validator (jsonschema.validate
    re-checks the schema on every call: most of this audit's time)."""
    import jsonschema

    schema = _crd_schema(group, kind, version)
    return jsonschema.validators.validator_for(schema)(schema)


def _validate_object(obj: dict[str, Any]) -> None:
    group, _, version = obj["apiVersion"].rpartition("/")
    if (group, obj["kind"]) in CRD_FILES:
        _crd_validator(group, obj["kind"], version).validate(obj)
    else:
        _validate(obj)


def _check_text(name: str, text: str, world: int | None = None) -> list[str]:
    """A framework's or engine's own file: torchtitan's TOML, a Python script, trtllm-serve's options."""
    if name.endswith(".toml") and "torchtitan" in name:
        return _check_torchtitan(text, name, world)
    if name.endswith(".py"):
        try:
            ast.parse(text)
        except SyntaxError as err:
            return [f"{name}: not Python: {err}"]
    if name == "extra-llm-api-options.yaml":
        keys = json.loads((DATA / "engine_args" / "trtllm_serve_keys.json").read_text())
        opts = yaml.safe_load(text)
        bad = [f"{name}: {k} is not an LLM API key" for k in opts if k not in keys["llm_api_keys"]]
        kv = opts.get("kv_cache_config", {})
        bad += [f"{name}: kv_cache_config.{k} unknown" for k in kv if k not in keys["kv_cache_config_keys"]]
        tp, ep = opts.get("tensor_parallel_size", 1), opts.get("moe_expert_parallel_size", 1)
        if tp % ep:  # tensorrt_llm/mapping.py: moe_tp_size * moe_ep_size == tp_size
            bad.append(f"{name}: moe_expert_parallel_size {ep} does not divide tensor_parallel_size {tp}")
        return bad
    return []


def _shell_text(script: str, shell: str) -> list[str]:
    """`bash -n` / `sh -n` and shellcheck of a container's script (read from stdin)."""
    bad = []
    run = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True)
    if run.returncode:
        bad.append(f"{shell} -n: {run.stderr.strip()[-300:]}")
    if SHELLCHECK:
        run = subprocess.run([SHELLCHECK, "-S", "error", "-f", "gcc", "-s", shell, "-"], input=script,
                             capture_output=True, text=True)  # fmt: skip
        if run.returncode:
            bad.append(f"shellcheck: {run.stdout.strip()[-400:]}")
    return bad


def _shell(text: str, name: str, folder: Path) -> list[str]:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    bad = []
    run = subprocess.run(["bash", "-n", name], cwd=folder, capture_output=True, text=True)
    if run.returncode:
        bad.append(f"{name}: bash -n: {run.stderr.strip()[-300:]}")
    if SHELLCHECK:
        run = subprocess.run([SHELLCHECK, "-S", "error", "-f", "gcc", name], cwd=folder,
                             capture_output=True, text=True)  # fmt: skip
        if run.returncode:
            bad.append(f"{name}: shellcheck: {run.stdout.strip()[-400:]}")
    return bad


def _nvidia_words(text: str, vendor: str) -> list[str]:
    if vendor == "nvidia":
        return []
    words = ["nvidia.com/gpu", "CUDA_VISIBLE", "CUDA_DEVICE", "nvcr.io", "DCGM_", "dcgm_"]
    if vendor != "amd":  # RCCL reads NCCL_* settings; a TPU, Trainium or Gaudi job has neither
        words += ["NCCL_", "torchrun", "NCCL_IB"]
    if vendor not in ("amd", "intel"):  # Intel ships a Megatron-LM fork for Gaudi (HabanaAI/Megatron-LM)
        words.append("pretrain_gpt.py")
    return [w for w in words if w in text]


def _pods(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Pod specs of a workload object (Deployment, Job, JobSet, LeaderWorkerSet), one per replica
    kind, each with `_count` pods."""
    kind, spec = doc["kind"], doc.get("spec", {})
    out = []
    if kind in ("Deployment", "StatefulSet"):
        out.append((spec["template"]["spec"], spec.get("replicas", 1)))
    elif kind == "Job":
        out.append((spec["template"]["spec"], spec.get("parallelism", 1)))
    elif kind == "JobSet":
        for rj in spec["replicatedJobs"]:
            js = rj["template"]["spec"]
            out.append((js["template"]["spec"], rj.get("replicas", 1) * js.get("parallelism", 1)))
    elif kind == "LeaderWorkerSet":
        t, n = spec["leaderWorkerTemplate"], spec.get("replicas", 1)
        size = t.get("size", 1)
        if "leaderTemplate" in t:
            out.append((t["leaderTemplate"]["spec"], n))
            out.append((t["workerTemplate"]["spec"], n * (size - 1)))
        else:
            out.append((t["workerTemplate"]["spec"], n * size))
    return [{**p, "_count": c} for p, c in out]


def _check_k8s(files: dict[str, str], plan: dict[str, Any], route: str) -> list[str]:
    bad: list[str] = []
    docs: list[dict[str, Any]] = []
    for name, text in files.items():
        if not name.endswith((".yaml", ".yml")):
            continue
        for d in yaml.safe_load_all(text):
            if not d:
                continue
            try:
                _validate_object(d)
            except Exception as err:  # jsonschema / kubernetes_validate ValidationError
                bad.append(f"{name}: {d.get('kind')} {d.get('metadata', {}).get('name')}: schema: "
                           f"{str(err).splitlines()[0][:300]}")  # fmt: skip
            bad += [f"{name}: {b}" for b in _check_cel(d)]
            docs.append(d)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    named = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    workloads = [
        d for d in docs if d["kind"] in ("Deployment", "Job", "JobSet", "LeaderWorkerSet", "StatefulSet")
    ]
    claims = {d["metadata"]["name"] for d in by_kind.get("PersistentVolumeClaim", [])}
    training = plan["kind"] == "training_plan"
    scripts = {}
    for w in workloads:
        for pod in _pods(w):
            for c in pod.get("containers", []):
                if sc := _container_script(c):
                    scripts[sc] = f"{w['kind']} {w['metadata']['name']} container {c['name']}"
    for (shell, script), where in scripts.items():
        bad += [f"{where}: {b}" for b in _shell_text(script, shell)]
        bad += _check_kind_trainer(script, where, plan)
    for cm in by_kind.get("ConfigMap", []):
        for key, text in (cm.get("data") or {}).items():
            bad += _check_text(key, text, int(plan["best"]["gpus"]) if training else None)
    selectors = [d["spec"].get("selector", {}) for d in by_kind.get("Service", [])]
    for w in workloads:
        wname = f"{w['kind']} {w['metadata']['name']}"
        pods = _pods(w)
        for pod, labels in zip(pods, _pod_labels(w), strict=True):
            served = any(sel and all(labels.get(k) == val for k, val in sel.items()) for sel in selectors)
            for c in pod.get("containers", []):
                c["_served"] = served
        queue = w["metadata"].get("labels", {}).get("kueue.x-k8s.io/queue-name")
        if training and w["kind"] in ("JobSet", "Job") and not queue and "LocalQueue" in by_kind:
            bad.append(f"{wname}: no kueue.x-k8s.io/queue-name while the export has a LocalQueue")
        if queue:
            bad += _check_kueue(wname, queue, pods, named)
        for pod in pods:
            bad += _check_pod(wname, pod, plan, claims, training)
    device = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "google": "google.com/tpu",
              "aws": "aws.amazon.com/neuron", "intel": "habana.ai/gaudi"}.get(_vendor(plan))  # fmt: skip
    asked = sum(_requests(_pods(w)).get(device or "", 0.0) for w in workloads)
    if workloads and device and asked and asked != _planned_devices(plan):
        bad.append(f"the pods request {asked:g} {device}, the plan uses {_planned_devices(plan)}")
    bad += _check_references(workloads, by_kind, named)
    spaces = {d["metadata"].get("namespace") for d in docs if d["kind"] not in CLUSTER_SCOPED}
    if len(spaces) > 1:  # `kubectl apply -n NS` would split them (a LocalQueue the JobSet cannot see)
        bad.append(f"namespaced objects in different namespaces: {sorted(map(str, spaces))}")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        bad += _check_pdb(pdb, by_kind)
    return bad


CLUSTER_SCOPED = {
    "ClusterQueue",
    "ResourceFlavor",
    "Topology",
    "PersistentVolume",
    "Namespace",
    "PriorityClass",
}


def _check_references(
    workloads: list[dict[str, Any]], by_kind: dict[str, list[dict[str, Any]]], named: dict
) -> list[str]:
    """What names another object names it: ConfigMap and claim volumes, the Service's and the
    PDB's selectors (some pod carries their labels), KEDA's scale target."""
    bad = []
    labels = [lab for w in workloads for lab in _pod_labels(w)]
    for w in workloads:
        for pod in _pods(w):
            for vol in pod.get("volumes", []):
                if "configMap" in vol and ("ConfigMap", vol["configMap"]["name"]) not in named:
                    bad.append(
                        f"{w['kind']}: volume {vol['name']} names ConfigMap {vol['configMap']['name']}, not exported"
                    )
    for kind, field in (("Service", "selector"), ("PodDisruptionBudget", "selector")):
        for d in by_kind.get(kind, []):
            sel = d["spec"].get(field) or {}
            sel = sel.get("matchLabels", sel) if kind == "PodDisruptionBudget" else sel
            if not any(all(lab.get(k) == val for k, val in sel.items()) for lab in labels):
                bad.append(f"{kind} {d['metadata']['name']}: selector {sel} matches no exported pod")
    for svc in by_kind.get("Service", []):
        sel = svc["spec"].get("selector") or {}
        served = [
            c
            for w in workloads
            for pod, lab in zip(_pods(w), _pod_labels(w), strict=True)
            if all(lab.get(k) == val for k, val in sel.items())
            for c in pod.get("containers", [])
        ]
        ports = {p.get(k) for c in served for p in c.get("ports", []) for k in ("containerPort", "name")}
        for port in svc["spec"].get("ports", []):
            if port.get("targetPort", port["port"]) not in ports:
                bad.append(
                    f"Service {svc['metadata']['name']}: targetPort {port.get('targetPort')} is no port of its pods"
                )
        for c in served:
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                got = c.get(probe, {}).get("httpGet", {}).get("port")
                if got is not None and got not in ports:
                    bad.append(f"container {c['name']}: {probe} on port {got}, not a port it declares")
    for so in by_kind.get("ScaledObject", []):
        ref = so["spec"]["scaleTargetRef"]
        if (ref.get("kind", "Deployment"), ref["name"]) not in named:
            bad.append(f"ScaledObject {so['metadata']['name']}: scale target {ref} is not exported")
    return bad


def _pod_labels(doc: dict[str, Any]) -> list[dict[str, str]]:
    """The labels of each pod template `_pods` lists, in its order."""
    spec = doc["spec"]
    if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
        return [spec["template"].get("metadata", {}).get("labels", {})]
    if doc["kind"] == "JobSet":
        return [rj["template"]["spec"]["template"].get("metadata", {}).get("labels", {})
                for rj in spec["replicatedJobs"]]  # fmt: skip
    t = spec["leaderWorkerTemplate"]
    temps = [t["leaderTemplate"], t["workerTemplate"]] if "leaderTemplate" in t else [t["workerTemplate"]]
    return [x.get("metadata", {}).get("labels", {}) for x in temps]


@cache
def _cel_program(rule: str) -> Any:
    """A compiled CEL rule (cel-python), or None when it needs what cel-python lacks
    (Kubernetes' CEL library functions)."""
    try:
        import celpy
    except ImportError:
        return None
    env = celpy.Environment()
    try:
        return env.program(env.compile(rule))
    except Exception:  # a Kubernetes CEL extension cel-python does not implement
        return None


def _cel_rules(obj: Any, schema: dict[str, Any], path: str) -> list[str]:
    """The CRD's `x-kubernetes-validations` (CEL) rules that `obj` breaks, as the API server
    evaluates them on create (rules reading `oldSelf` are updates only)."""
    import celpy

    bad = []
    for v in schema.get("x-kubernetes-validations", []):
        rule = v["rule"]
        if "oldSelf" in rule or (prg := _cel_program(rule)) is None:
            continue
        try:
            ok = prg.evaluate({"self": celpy.json_to_cel(obj)})
        except Exception:
            continue
        if ok is False or (isinstance(ok, celpy.celtypes.BoolType) and not ok):
            bad.append(f"{path or '.'}: {v.get('message', rule)} ({rule})")
    if isinstance(obj, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, val in obj.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub:
                bad += _cel_rules(val, sub, f"{path}.{key}")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, val in enumerate(obj):
            bad += _cel_rules(val, schema["items"], f"{path}[{i}]")
    return bad


def _check_cel(doc: dict[str, Any]) -> list[str]:
    from test_export_kubernetes import CRDS

    group, _, version = doc["apiVersion"].rpartition("/")
    if (group, doc["kind"]) not in CRD_FILES:
        return []
    crd = json.loads((CRDS / CRD_FILES[(group, doc["kind"])]).read_text())
    return [
        f"{doc['kind']} {doc['metadata']['name']}: CEL {b}"
        for b in _cel_rules(doc, crd["versions"][version], "")
    ]


def _requests(pods: list[dict[str, Any]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for pod in pods:
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            res = c.get("resources", {})
            asked = {**res.get("limits", {}), **res.get("requests", {})}  # requests default to limits
            for r, q in asked.items():
                total[r] = total.get(r, 0.0) + _quantity(q) * pod["_count"]
    return total


def _check_kueue(wname: str, queue: str, pods: list[dict[str, Any]], named: dict) -> list[str]:
    lq = named.get(("LocalQueue", queue))
    if lq is None:
        return [f"{wname}: queue-name {queue!r} is no LocalQueue of the export"]
    cq = named.get(("ClusterQueue", lq["spec"]["clusterQueue"]))
    if cq is None:
        return [f"LocalQueue {queue}: ClusterQueue {lq['spec']['clusterQueue']!r} is not in the export"]
    bad = []
    need = _requests(pods)
    covered: dict[str, float] = {}
    flavors = []
    for group in cq["spec"]["resourceGroups"]:
        for fl in group["flavors"]:
            flavors.append(fl["name"])
            for r in fl["resources"]:
                if r["name"] not in group["coveredResources"]:
                    bad.append(f"ClusterQueue: {r['name']} quota outside coveredResources")
                covered[r["name"]] = (
                    covered.get(r["name"], 0.0)
                    + _quantity(r["nominalQuota"])
                    + _quantity(r.get("borrowingLimit", 0))
                )
    for r, q in need.items():
        if r not in covered:
            bad.append(f"{wname}: pods request {r} that ClusterQueue {cq['metadata']['name']} does not cover")
        elif q > covered[r] * (1 + 1e-9):
            bad.append(f"{wname}: pods request {q:g} {r}, ClusterQueue quota {covered[r]:g}")
    for fname in flavors:
        rf = named.get(("ResourceFlavor", fname))
        if rf is None:
            bad.append(f"ClusterQueue flavor {fname!r} is not in the export")
            continue
        labels = rf.get("spec", {}).get("nodeLabels", {})
        for pod in pods:
            sel = pod.get("nodeSelector", {})
            clash = {k: (v, sel[k]) for k, v in labels.items() if k in sel and sel[k] != v}
            if clash:
                bad.append(f"{wname}: nodeSelector disagrees with flavor {fname}: {clash}")
            for k in ("node.kubernetes.io/instance-type",):
                if k in labels and re.match(r"^(hgx|dgx|gb\d|mi3|tpu-|gaudi|trn2-48)", str(labels[k])):
                    bad.append(f"flavor {fname}: {k}={labels[k]} is a catalog name, no node carries it")
    return bad


def _image_pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag != "latest" and any(ch.isdigit() for ch in tag)


# Images whose entrypoint is the engine's server: their args are that command's arguments.
ENTRYPOINT_PROGRAMS = {"vllm": "vllm serve"}


def _container_script(c: dict[str, Any]) -> tuple[str, str] | None:
    """(shell, script) of a container that runs `bash -c SCRIPT` or `sh -c SCRIPT`."""
    words = [*c.get("command", []), *c.get("args", [])]
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh") and words[1] == "-c":
        return words[0].rsplit("/", 1)[-1], words[2]
    return None


def _check_container_command(
    c: dict[str, Any], where: str, world: int | None = None, replica: int | None = None, vendor: str = ""
) -> list[str]:
    command, args = c.get("command", []), c.get("args", [])
    if not command and args and args[0].startswith("--"):  # the image's entrypoint is the server
        if not any(key in c["image"] for key in ENTRYPOINT_PROGRAMS):
            return [f"{where}: arguments for the entrypoint of {c['image']}, whose parser is not known"]
        prog = next(p for key, p in ENTRYPOINT_PROGRAMS.items() if key in c["image"])
        model = next((a for k, a in zip(args, args[1:], strict=False) if k == "--model"), "m")
        return _check_commands(
            f"{prog} {shlex.quote(model)} " + shlex.join(args), where, world, replica, vendor
        )
    words = [*command, *args]
    if any(w in ("-c",) for w in words):  # a shell script: each word may hold commands
        return [b for w in words for b in _check_commands(w, where, world, replica, vendor)]
    return _check_commands(" ".join(shlex.quote(w) for w in words), where, world, replica, vendor)


def _check_pod(
    wname: str, pod: dict[str, Any], plan: dict[str, Any], claims: set[str], training: bool
) -> list[str]:
    bad = []
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        where = f"{wname} container {c['name']}"
        if not _image_pinned(c.get("image", "")):
            bad.append(f"{where}: image {c.get('image')!r} not pinned by digest or exact tag")
        limits = c.get("resources", {}).get("limits", {})
        text = json.dumps(c)
        ib = "NCCL_IB_HCA" in text or "NCCL_IB_DISABLE=0" in text
        if ib and not any(r.startswith("rdma/") for r in limits):
            bad.append(f"{where}: NCCL told to use InfiniBand, no RDMA device requested")
        if ib and "IPC_LOCK" not in c.get("securityContext", {}).get("capabilities", {}).get("add", []):
            bad.append(f"{where}: InfiniBand without IPC_LOCK")
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        on_claims = ("CKPT_DIR", "DATA_PATH") if training or plan["kind"] == "vision_plan" else ()
        on_claims = ("DATA_PATH",) if plan["kind"] == "recommendation_plan" else on_claims  # no checkpoints
        if on_claims and c in pod.get("containers", []) and pod["containers"].index(c) == 0:
            for var in on_claims:
                path = env.get(var)
                mount = path and next(
                    (m for m in c.get("volumeMounts", [])
                     if (path + "/").startswith(m["mountPath"].rstrip("/") + "/")), None)  # fmt: skip
                vol = mount and volumes.get(mount["name"], {})
                claim = vol and vol.get("persistentVolumeClaim", {}).get("claimName")
                if not claim or claim not in claims:
                    bad.append(f"{where}: {var}={path!r} is not on a PersistentVolumeClaim of the export")
        if c.get("_served"):
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                if probe not in c:
                    bad.append(f"{where}: no {probe}")
        replica = None if _vendor(plan) == "aws" else _replica_devices(plan)  # Neuron's TP counts cores
        if replica and (sl := tpu_slices(plan["best"]["accelerator"])):  # vLLM TPU counts JAX devices
            replica *= sl.devices_per_chip  # two per TPU7x chip
        world = int(plan["best"]["gpus"]) if training else None
        bad += _check_container_command(c, where, world, replica, _vendor(plan))
    if training:
        from rightsize.export.slurm_segments import checkpoint_write_s

        v = training_view(plan)
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if grace < checkpoint_write_s(v) + v.step_time_s:
            bad.append(f"{wname}: terminationGracePeriodSeconds {grace} < checkpoint write "
                       f"{checkpoint_write_s(v):.0f} s + a step {v.step_time_s:.0f} s")  # fmt: skip
    if plan["kind"] == "vision_plan":  # train.py checkpoints per epoch: a stop must hold one write
        rel = plan["sizing"]["reliability"]
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if grace < rel["checkpoint_write_s"] + plan["best"]["step"]["step_s"]:
            bad.append(f"{wname}: terminationGracePeriodSeconds {grace} < the checkpoint write and a step")
    return bad


def _check_pdb(pdb: dict[str, Any], by_kind: dict[str, list[dict[str, Any]]]) -> list[str]:
    spec = pdb["spec"]
    if spec.get("maxUnavailable", 0) not in (0, "0", "0%"):
        return []
    floor = None
    for so in by_kind.get("ScaledObject", []):
        floor = so["spec"].get("minReplicaCount", 0)
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        floor = hpa["spec"].get("minReplicas", 1)
    if floor is None:
        workloads = [d for k in ("Deployment", "LeaderWorkerSet") for d in by_kind.get(k, [])]
        floor = min((w["spec"].get("replicas", 1) for w in workloads), default=1)
    m = spec.get("minAvailable")
    if isinstance(m, int) and m >= floor:
        return [
            f"PodDisruptionBudget {pdb['metadata']['name']}: minAvailable {m} >= floor {floor}: drains hang"
        ]
    return []


def _replica_devices(plan: dict[str, Any]) -> int | None:
    """Devices of one serving replica as the plan counts them (None: training)."""
    if plan["kind"] != "serving_plan":
        return None
    return _planned_devices(plan) // int(plan["best"]["replicas"])


def _planned_devices(plan: dict[str, Any]) -> int:
    """Accelerators the plan runs on: training's GPUs; serving's replicas x GPUs per replica."""
    best = plan["best"]
    if plan["kind"] == "training_plan":
        return int(best["gpus"])
    return int(best.get("gpus") or best["replicas"] * best["tp"] * best.get("pp", 1))


def _slurm_devices(text: str) -> int:
    nodes = re.search(r"^#SBATCH --nodes=(\d+)$", text, re.M)
    gpn = re.search(r"^#SBATCH --gpus-per-node=(\d+)$", text, re.M)
    array = re.search(r"^#SBATCH --array=(\d+)-(\d+)", text, re.M)
    jobs = int(array.group(2)) - int(array.group(1)) + 1 if array else 1
    return jobs * int(nodes.group(1) if nodes else 1) * int(gpn.group(1) if gpn else 0)


def _check_slurm(files: dict[str, str], plan: dict[str, Any], route: str, folder: Path,
                 env: dict[str, str] | None) -> list[str]:  # fmt: skip
    bad = []
    node = plan["best"]["node"]
    for name, text in files.items():
        if name.endswith((".sbatch", ".sh")):
            bad += _shell(text, name, folder)
            world = int(plan["best"]["gpus"]) if plan["kind"] == "training_plan" else None
            bad += _check_commands(text, name, world, _replica_devices(plan), _vendor(plan))
            if name.endswith(".sbatch"):
                bad += _check_kind_trainer(text, name, plan)
        if name.endswith(".sbatch") and env is not None:
            run = subprocess.run(["sbatch", "--test-only", "-p", node, name], cwd=folder, env=env,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
            out = (run.stdout + run.stderr).strip()
            if run.returncode or "to start at" not in out:
                bad.append(f"{name}: sbatch --test-only refused: {out[-300:]}")
    for name in ("train.sbatch", "serve.sbatch"):
        if name in files and _slurm_devices(files[name]) != _planned_devices(plan):
            bad.append(
                f"{name}: asks for {_slurm_devices(files[name])} GPUs, the plan uses {_planned_devices(plan)}"
            )
    if "train.sbatch" in files and plan["kind"] == "training_plan":
        bad += _check_segments(files["train.sbatch"], plan, route)
    elif "train.sbatch" in files and plan["kind"] in ("vision_plan", "recommendation_plan"):
        bad += _check_kind_time(files["train.sbatch"], plan)
    return bad


def _check_kind_time(text: str, plan: dict[str, Any]) -> list[str]:
    """Vision and recommendation jobs: --time within the partition's MaxTime and at least the
    planned run with its safety margin (one job), or segments covering it; a vision job's USR1
    warning holds the checkpoint write and a step."""
    limit = re.search(r"^#SBATCH --time=(\d+)-(\d+):(\d+):(\d+)$", text, re.M)
    if not limit:
        return ["train.sbatch: no --time in D-HH:MM:SS"]
    d, h, m, sec = map(int, limit.groups())
    limit_s = ((d * 24 + h) * 60 + m) * 60 + sec
    bad = (
        [f"train.sbatch: --time {limit_s} s over the partition's MaxTime"]
        if limit_s > PARTITION_MAX_S
        else []
    )
    margin = plan["spec"]["infrastructure"]["margins"]["safety_margin"]
    work = plan["sizing"]["run"]["run_s"] * (1 + margin)
    parts = re.search(r"as (\d+) segment\(s\)", text)
    if limit_s * (int(parts.group(1)) if parts else 1) < work:
        bad.append(f"train.sbatch: {limit_s} s x segments < the planned run with its margin ({work:.0f} s)")
    if plan["kind"] == "vision_plan":
        lead = re.search(r"^#SBATCH --signal=B:USR1@(\d+)$", text, re.M)
        need = plan["sizing"]["reliability"]["checkpoint_write_s"] + plan["best"]["step"]["step_s"]
        if not lead or int(lead.group(1)) < need:
            bad.append(
                f"train.sbatch: USR1 lead {lead and lead.group(1)} s < checkpoint write and a step ({need:.0f} s)"
            )
    return bad


def _check_segments(text: str, plan: dict[str, Any], route: str) -> list[str]:
    from rightsize.export.fw_common import save_interval_steps
    from rightsize.export.slurm_segments import checkpoint_write_s

    v = training_view(plan)
    bad = []
    limit = re.search(r"^#SBATCH --time=(\d+)-(\d+):(\d+):(\d+)$", text, re.M)
    if not limit:
        return ["train.sbatch: no --time in D-HH:MM:SS"]
    d, h, m, s = map(int, limit.groups())
    limit_s = ((d * 24 + h) * 60 + m) * 60 + s
    if limit_s > PARTITION_MAX_S:
        bad.append(f"train.sbatch: --time {limit_s} s over the partition's MaxTime")
    lead = re.search(r"^#SBATCH --signal=B:USR1@(\d+)$", text, re.M)
    if not lead:
        bad.append("train.sbatch: no USR1 warning before the limit")
    elif int(lead.group(1)) < checkpoint_write_s(v) + v.step_time_s:
        bad.append(f"train.sbatch: warned {lead.group(1)} s before the kill, the checkpoint write "
                   f"({checkpoint_write_s(v):.0f} s) and a step ({v.step_time_s:.0f} s) do not fit")  # fmt: skip
    first_ckpt_s = save_interval_steps(v) * v.step_time_s
    segments = re.search(r"as (\d+) segment\(s\)", text)
    multi = segments is not None and int(segments.group(1)) > 1
    if multi and "pretrain_gpt.py" not in text and first_ckpt_s > limit_s - int(lead.group(1) if lead else 0):
        bad.append(f"train.sbatch: first checkpoint after {first_ckpt_s:.0f} s, the segment is {limit_s} s")
    return bad


def _check_prometheus(files: dict[str, str], folder: Path) -> list[str]:
    if not PROMTOOL:
        return []
    bad = []
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    for name in files:
        args = ["test", "rules"] if name.endswith(".test.yml") else ["check", "rules"]
        run = subprocess.run([PROMTOOL, *args, name], cwd=folder, capture_output=True, text=True, timeout=120)
        if run.returncode:
            bad.append(f"{name}: promtool {' '.join(args)}: {(run.stdout + run.stderr).strip()[-400:]}")
    return bad


def _check_files(files: dict[str, str], plan: dict[str, Any], target: str, route: str, folder: Path,
                 env: dict[str, str] | None) -> list[str]:  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    bad = []
    vendor = _vendor(plan)
    for name, text in files.items():
        for w in _nvidia_words(text, vendor):
            bad.append(f"{name}: {w!r} on a {vendor} plan ({plan['best']['accelerator']})")
        bad += _check_text(name, text, int(plan["best"]["gpus"]) if plan["kind"] == "training_plan" else None)
    if target == "slurm":
        bad += _check_slurm(files, plan, route, folder, env)
    elif target == "kubernetes":
        bad += _check_k8s(files, plan, route)
    else:
        bad += _check_prometheus(files, folder)
    return bad


# --- the real Slurm, shaped like the catalog's nodes ----------------------------------------------------


def _slurm_skip() -> str | None:
    if os.environ.get("RIGHTSIZE_REQUIRE_SLURM"):
        return None
    if missing():
        return f"Slurm/munge not installed ({', '.join(missing())})"
    if os.geteuid() != 0:
        return "the test Slurm controller runs as root"
    return None


@pytest.fixture(scope="module")
def slurm() -> Any:
    """A slurmctld with a partition per node type the grid's plans use (the count each needs,
    two racks for NVL72 trays); None (Slurm admission not checked) where Slurm is missing."""
    if _slurm_skip():
        yield None
        return
    from rightsize.export.topology import scale_up_domain

    need: dict[str, int] = {}
    domains: dict[str, int] = {}
    for name, *_ in SPECS:
        plan = _planned(name)
        if isinstance(plan, RightsizeError) or _vendor(plan) not in ("nvidia", "amd", "intel"):
            continue
        node = plan["best"]["node"]
        n = int(plan.get("sizing", {}).get("nodes", {}).get("nodes") or plan["best"].get("nodes") or 1)
        need[node] = max(need.get(node, 4), n)
        if plan["kind"] == "training_plan" and (dom := scale_up_domain(training_view(plan).hw)):
            domains[node] = dom.nodes
    shapes = []
    for node, count in sorted(need.items()):
        nd = get_node(node)
        dom = domains.get(node, 0)
        count = max(count, 2 * dom) if dom else count
        shapes.append(
            NodeShape(node, count, nd.cpu_cores, int(nd.host_memory_bytes // 2**20), nd.gpus_per_node, dom)
        )
    root = Path(tempfile.mkdtemp(prefix="rightsize-audit-", dir="/tmp"))
    root.chmod(0o755)
    try:
        with catalog_cluster(root / "cluster", shapes) as env:
            yield env
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- the audit ----------------------------------------------------------------------------------------

# (spec, target, route) -> why its defects stay: files other helpers own. Strict: the case
# fails when such a route has no defect any more (remove the entry then).
KNOWN: dict[tuple[str, str, str], str] = {}


def _requests_a_device(pod: dict[str, Any]) -> bool:
    """The pod asks for an accelerator (any extended resource with a vendor domain)."""
    for c in pod.get("containers", []):
        asked = {**c.get("resources", {}).get("limits", {}), **c.get("resources", {}).get("requests", {})}
        if any("/" in str(k) for k in asked):
            return True
    return False


def _user_labels_used(files: dict[str, str]) -> list[str]:
    """With --node-label the pods and the Kueue flavor select the user's labels."""
    bad = []
    for name, text in files.items():
        for d in yaml.safe_load_all(text):
            if not isinstance(d, dict):
                continue
            if (
                d.get("kind") == "ResourceFlavor"
                and not USER_LABELS.items() <= d["spec"].get("nodeLabels", {}).items()
            ):
                bad.append(f"{name}: ResourceFlavor does not select {USER_LABELS}")
            if d.get("kind") in ("Deployment", "JobSet", "LeaderWorkerSet", "Job"):
                # Accelerator pods only: a CPU pod (the disaggregated plan's router) may run anywhere.
                for pod in filter(_requests_a_device, _pods(d)):
                    if not USER_LABELS.items() <= pod.get("nodeSelector", {}).items():
                        bad.append(f"{name}: {d['kind']} pods do not select {USER_LABELS}")
    return bad


def test_a_refusal_is_an_exit_code_with_what_why_and_fix(tmp_path: Path) -> None:
    """Through the CLI: a plan the export cannot write (DLRM in bf16: its trainer has no
    autocast) is exit 2 with the three parts, no traceback."""
    from rightsize.cli.main import main

    plan = _planned("r-dlrm-train-bf16")
    assert not isinstance(plan, RightsizeError)
    (tmp_path / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["export", str(tmp_path / "plan.json"), "--target", "slurm", "--out", str(tmp_path / "o")])
    assert rc == 2 and "Why:" in err.getvalue() and "To fix:" in err.getvalue(), err.getvalue()
    assert "Traceback" not in err.getvalue() and not (tmp_path / "o").exists()


def _refusal_ok(err: RightsizeError) -> list[str]:
    missing_parts = [p for p in ("what", "why", "fix") if not getattr(err, p, "")]
    return [f"refusal without {', '.join(missing_parts)}: {err.what}"] if missing_parts else []


def audit(name: str, target: str, folder: Path, env: dict[str, str] | None) -> tuple[list[str], int]:
    """Defects of one plan's export to one target, and how many files were checked."""
    plan = _planned(name)
    if isinstance(plan, RightsizeError):
        return _refusal_ok(plan), 0
    bad: list[str] = []
    checked = 0
    exported: dict[str, bool] = {}
    routes = [(fw, engine, False) for fw, engine in _routes(plan, target)]
    if target == "kubernetes":
        routes.append(("auto", None, True))
    for fw, engine, labels in routes:
        route = (engine or fw) + ("+labels" if labels else "")
        try:
            files = _render(plan, target, fw, engine, labels)
        except RightsizeError as err:
            bad += [f"{route}: {m}" for m in _refusal_ok(err)]
            exported[route] = False
            continue
        except Exception as err:  # a bug: the CLI would exit 3
            bad.append(f"{route}: {type(err).__name__}: {err}")
            continue
        exported[route] = True
        if labels:
            bad += [f"{route}: {m}" for m in _user_labels_used(files)]
        checked += len(files)
        bad += [f"{route}: {m}" for m in _check_files(files, plan, target, route, folder / route, env)]
    if any(exported.values()) and not exported.get("auto", True):
        bad.append(f"the default route refuses while {[r for r, ok in exported.items() if ok]} export")
    return bad, checked


CASES = [(s[0], t) for s in SPECS for t in TARGETS]


@pytest.mark.parametrize(("name", "target"), CASES, ids=[f"{n}-{t}" for n, t in CASES])
def test_unseen_plan_exports_run(name: str, target: str, slurm: Any, tmp_path: Path) -> None:
    bad, _ = audit(name, target, tmp_path, slurm)
    known = {route: why for (n, t, route), why in KNOWN.items() if (n, t) == (name, target)}
    left = [b for b in bad if b.split(":", 1)[0] not in known]
    assert not left, f"{name} -> {target}:\n" + "\n".join(left)
    for route, why in known.items():
        assert any(b.startswith(f"{route}:") for b in bad), f"{name} -> {target} --{route}: fixed, drop KNOWN"
        pytest.xfail(why)


# --- Intel Gaudi serving (issue #25: every accelerator with its own stack) ----------------------------
# vLLM on Gaudi is Intel's fork (HabanaAI/vllm-fork v0.9.0.1+Gaudi-1.22.0): its `vllm serve`
# arguments are read by the fork's own parser (tests/data/engine_args, derived by
# derive_vllm_gaudi.py from the tag's tree), not upstream vLLM's.

VLLM_TABLES = {"intel": "vllm_fork_gaudi_v0.9.0.1_engine_args.json"}

GAUDI_SPECS = [
    _spec(
        "llama3-70b-chat-serving",
        "s-8b-gaudi3-bf16",
        **{
            "model": "llama3-8b",
            "targets.accelerators": ["gaudi3"],
            "targets.objective": "gpus",
            "serving.weight_precision": "bf16",
            "serving.kv_precision": "bf16",
        },
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-mixtral-gaudi3",
        **{
            "model": "mixtral-8x7b",
            "targets.accelerators": ["gaudi3"],
            "targets.objective": "gpus",
            "serving.weight_precision": "bf16",
        },
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-70b-gaudi3-offline",
        **{
            "serving.scenario": "offline",
            "targets.accelerators": ["gaudi3"],
            "slo": None,
            "traffic.peak_rate": None,
            "traffic.rate": None,
            "traffic.prefix_cache_hit_rate": None,
            "targets.objective": "gpus",
        },
    ),
    _spec(
        "llama3-70b-chat-serving",
        "s-405b-gaudi3",
        **{"model": "llama3.1-405b", "targets.accelerators": ["gaudi3"], "targets.objective": "gpus"},
    ),
]
SPECS += GAUDI_SPECS
GAUDI_CASES = [(s[0], t) for s in [*GAUDI_SPECS, _spec("", "s-70b-gaudi3")] for t in TARGETS]


@pytest.mark.parametrize(("name", "target"), GAUDI_CASES, ids=[f"{n}-{t}" for n, t in GAUDI_CASES])
def test_gaudi_serving_exports_run(name: str, target: str, slurm: Any, tmp_path: Path) -> None:
    """The audit on Gaudi serving plans, which now export (Slurm and Kubernetes) instead of
    refusing: the fork's parser, Intel's Slurm GRES, habana.ai/gaudi, no NVIDIA word."""
    plan = _planned(name)
    assert not isinstance(plan, RightsizeError), plan
    bad, checked = audit(name, target, tmp_path, slurm)
    assert not bad, f"{name} -> {target}:\n" + "\n".join(bad)
    assert checked, f"{name} -> {target}: nothing exported"


def _gaudi_files(name: str, target: str) -> dict[str, str]:
    plan = _planned(name)
    assert not isinstance(plan, RightsizeError), plan
    return _render(plan, target, "auto", None, False)


def _serve_words(files: dict[str, str]) -> list[str]:
    """The words after `vllm serve MODEL` in a Slurm script or the Gaudi container."""
    if "serve.sbatch" in files:
        (prog, words), *_ = _commands(files["serve.sbatch"])
        assert prog == "vllm"
        return words
    deploy = next(d for d in yaml.safe_load_all(files["serving.yaml"]) if d and d["kind"] == "Deployment")
    c = deploy["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == ["vllm", "serve"] and c["args"][0] == "$(MODEL)", c
    return c["args"][1:]


def test_gaudi_arguments_need_the_forks_parser() -> None:
    """The table is the fork's: it has the HPU scheduler's flags upstream v0.10.1 lacks, and
    the exported arguments parse under it with the plan's limits."""
    fork = {f for r in json.loads((DATA / "engine_args" / VLLM_TABLES["intel"]).read_text())["arguments"]
            for f in r["flags"]}  # fmt: skip
    upstream = {f for r in json.loads((DATA / "engine_args" / "vllm_v0.10.1_engine_args.json").read_text())["arguments"]
                for f in r["flags"]}  # fmt: skip
    assert {"--use-padding-aware-scheduling", "--max-num-prefill-seqs"} <= fork - upstream
    for name in ("s-8b-gaudi3-bf16", "s-70b-gaudi3"):
        for target in ("slurm", "kubernetes"):
            words = _serve_words(_gaudi_files(name, target))
            assert _parse(VLLM_TABLES["intel"], words) is None, (name, target, words)
            ns, _ = _parser(VLLM_TABLES["intel"]).parse_known_args(words)
            assert ns.block_size == 128 and 0 < ns.gpu_memory_utilization <= 0.95, ns
            assert ns.tensor_parallel_size == _planned(name)["best"]["tp"]


def test_gaudi_memory_utilisation_holds_the_planned_kv_cache() -> None:
    """The fork sizes its KV cache as free memory x gpu_memory_utilization x (1 -
    VLLM_GRAPH_RESERVED_MEM) (vllm/worker/hpu_worker.py at the tag): the exported value makes
    that at least the plan's KV bytes per device, or the header says how much is held and
    --max-num-seqs shrinks with it."""
    from rightsize.export.plan_view import serving_view
    from rightsize.export.vllm import kv_bytes_per_token_per_gpu, max_num_seqs
    from rightsize.export.vllm_gaudi import (
        GRAPH_RESERVED,
        free_bytes_after_profile,
        gaudi_max_num_seqs,
        memory_utilization,
        planned_kv_bytes,
    )

    for name in ("s-8b-gaudi3-bf16", "s-70b-gaudi3", "s-mixtral-gaudi3", "s-70b-gaudi3-offline"):
        v = serving_view(_planned(name))
        held = memory_utilization(v) * (1 - GRAPH_RESERVED) * free_bytes_after_profile(v)
        if memory_utilization(v) < 0.95:
            assert held >= planned_kv_bytes(v), name
        words = _serve_words(_gaudi_files(name, "slurm"))
        seqs = int(words[words.index("--max-num-seqs") + 1])
        per_request = v.mean_prompt_tokens + v.mean_output_tokens
        assert seqs <= max_num_seqs(v) and seqs * per_request * kv_bytes_per_token_per_gpu(v) <= held, name
        assert seqs == gaudi_max_num_seqs(v)
        if seqs < max_num_seqs(v):
            assert f"(planned {max_num_seqs(v)})" in _gaudi_files(name, "slurm")["serve.sbatch"]


def test_gaudi_stack_settings() -> None:
    """Intel's stack and nothing of NVIDIA's: habana.ai/gaudi devices, SYS_NICE, the lazy
    collectives for TP, no HABANA_VISIBLE_DEVICES override; FP8 through INC with QUANT_CONFIG
    required (Slurm) or mounted from the calibration claim (Kubernetes); BF16 without INC."""
    fp8, bf16 = _gaudi_files("s-70b-gaudi3", "kubernetes"), _gaudi_files("s-8b-gaudi3-bf16", "kubernetes")
    docs = [d for d in yaml.safe_load_all(fp8["serving.yaml"]) if d]
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert c["resources"]["limits"]["habana.ai/gaudi"] == _planned("s-70b-gaudi3")["best"]["tp"]
    assert "SYS_NICE" in c["securityContext"]["capabilities"]["add"]
    assert env["PT_HPU_ENABLE_LAZY_COLLECTIVES"] == "true" and "HABANA_VISIBLE_DEVICES" not in env
    assert c["image"].startswith("vault.habana.ai/gaudi-docker/1.22.0/") and _image_pinned(c["image"])
    args = c["args"]
    assert env["QUANT_CONFIG"].startswith("/mnt/inc/")
    assert (
        args[args.index("--quantization") + 1] == "inc"
        and args[args.index("--kv-cache-dtype") + 1] == "fp8_inc"
    )
    claim = next(v for v in pod["volumes"] if "persistentVolumeClaim" in v)["persistentVolumeClaim"][
        "claimName"
    ]
    assert any(d["kind"] == "PersistentVolumeClaim" and d["metadata"]["name"] == claim for d in docs)
    assert "QUANT_CONFIG" not in bf16["serving.yaml"] and "--quantization" not in bf16["serving.yaml"]
    sbatch = _gaudi_files("s-70b-gaudi3", "slurm")["serve.sbatch"]
    assert ': "${QUANT_CONFIG:?' in sbatch and "HABANA_VISIBLE_DEVICES" not in sbatch
    assert "QUANT_CONFIG" not in _gaudi_files("s-8b-gaudi3-bf16", "slurm")["serve.sbatch"]
    for text in (*fp8.values(), sbatch):
        assert not _nvidia_words(text, "intel"), _nvidia_words(text, "intel")


def test_gaudi_table_is_the_pinned_release() -> None:
    """The parser table, the image and the header name one fork release and commit."""
    from rightsize.export.k8s_platform import data
    from rightsize.export.vllm_gaudi import FORK_TAG

    pinned = data()["stacks"]["intel"]["serving"]
    source = json.loads((DATA / "engine_args" / VLLM_TABLES["intel"]).read_text())["source"]
    assert pinned["fork_tag"] == FORK_TAG and FORK_TAG in source and pinned["fork_commit"] in source
    assert f"/{FORK_TAG.rsplit('-', 1)[1]}/" in pinned["image"]  # the image of the fork's Gaudi release
    assert FORK_TAG in _gaudi_files("s-70b-gaudi3", "slurm")["serve.sbatch"]


def test_gaudi_engines_other_than_the_fork_refuse() -> None:
    """SGLang and TensorRT-LLM refuse a Gaudi plan with what, why and fix."""
    plan = _planned("s-70b-gaudi3")
    for engine in ("sglang", "trtllm"):
        for target in ("slurm", "kubernetes"):
            with pytest.raises(RightsizeError) as err:
                _render(plan, target, "auto", engine, False)
            assert not _refusal_ok(err.value)


# --- Intel Gaudi training: Intel's Megatron-LM fork (HabanaAI/Megatron-LM tag 1.22.0) ----------------
# Its arguments are read by the fork's own parser (tests/data/megatron_gaudi_1.22.0_arguments.json,
# derived by tests/data/derive_megatron_gaudi.py from the tag's tree).

MEGATRON_TABLES = {
    "megatron": "megatron_core_v0.13.0_arguments.json",
    "megatron-gaudi": "megatron_gaudi_1.22.0_arguments.json",
}
MEGATRON_BY_VENDOR = {"intel": "megatron-gaudi"}

GAUDI_TRAIN_SPECS = [
    _spec(
        "llama3-70b-pretrain",
        "t-8b-gaudi3",
        **{"model": "llama3-8b", "targets.accelerators": ["gaudi3"], "training.train_tokens": "1T"},
    ),
    _spec(
        "mixtral-8x7b-pretrain",
        "t-mixtral-gaudi3",  # ZeRO-1: the fork has no custom FSDP (a ZeRO-3 plan is refused)
        **{"targets.accelerators": ["gaudi3"], "parallel.zero_stage": 1},
    ),
]
SPECS += [
    *GAUDI_TRAIN_SPECS,
    _spec(
        "llama3-8b-lora-weekly",
        "t-lora-gaudi3",
        **{"targets.accelerators": ["gaudi3"], "targets.objective": "time"},
    ),
]
GAUDI_TRAIN_CASES = [(s[0], t) for s in GAUDI_TRAIN_SPECS for t in TARGETS]


@pytest.mark.parametrize(
    ("name", "target"), GAUDI_TRAIN_CASES, ids=[f"{n}-{t}" for n, t in GAUDI_TRAIN_CASES]
)
def test_gaudi_training_exports_run(name: str, target: str, slurm: Any, tmp_path: Path) -> None:
    """The audit on Gaudi training plans: Slurm exports Intel's fork (its parser, validate_args'
    degree checks, sbatch --test-only on Gaudi nodes); Kubernetes and Prometheus refuse with
    what, why and fix."""
    plan = _planned(name)
    assert not isinstance(plan, RightsizeError), plan
    bad, checked = audit(name, target, tmp_path, slurm)
    assert not bad, f"{name} -> {target}:\n" + "\n".join(bad)
    assert checked or target != "slurm", f"{name} -> {target}: nothing exported"


def _train_words(name: str) -> list[str]:
    files = _gaudi_files(name, "slurm")
    assert set(files) == {"train.sbatch"}, set(files)  # no profile job: it measures CUDA/ROCm devices
    ((prog, words),) = _commands(files["train.sbatch"])
    assert prog == "pretrain_gpt.py"
    return words


def test_gaudi_training_runs_intels_megatron_fork() -> None:
    """The fork's parser takes every argument (and would reject the upstream-only ones the
    NVIDIA export writes); HPU settings as Intel's pretrain_llama.sh; no NCCL settings."""
    fork, upstream = _parser("megatron-gaudi"), _parser("megatron")
    for name in ("t-70b-gaudi3", "t-8b-gaudi3", "t-mixtral-gaudi3"):
        words = _train_words(name)
        assert _parse("megatron-gaudi", words) is None
        a, _ = fork.parse_known_args(words)
        assert a.transformer_impl == "transformer_engine" and a.distributed_backend == "nccl"
        assert (
            a.use_fused_sdpa and a.use_fused_rmsnorm and a.no_create_attention_mask_in_dataloader is not None
        )
        assert "--attention-backend" not in words
        text = _gaudi_files(name, "slurm")["train.sbatch"]
        assert "export PT_HPU_GPU_MIGRATION=1" in text and "export PT_HPU_LAZY_MODE=1" in text
        assert "NCCL_" not in text and "CUDA_DEVICE_MAX_CONNECTIONS" not in text
        with pytest.raises(argparse.ArgumentError):  # the fork-only flags: the upstream table refuses them
            upstream.parse_args(words)
    mixtral = _train_words("t-mixtral-gaudi3")
    assert "--moe-router-fp32" in mixtral and "--moe-router-dtype" not in mixtral


def test_gaudi_training_refusals_name_what_is_missing() -> None:
    """torchtitan and NeMo on Gaudi, Gaudi training on Kubernetes, and a plan needing a flag the
    fork lacks refuse with what, why and fix."""
    plan = _planned("t-8b-gaudi3")
    for target, fw in (("slurm", "torchtitan"), ("slurm", "nemo"), ("kubernetes", "auto")):
        with pytest.raises(RightsizeError) as err:
            _render(plan, target, fw, None, False)
        assert not _refusal_ok(err.value), err.value
    lora = _planned("t-lora-gaudi3")  # LoRA is exported through NeMo, which has no Gaudi route here
    assert not isinstance(lora, RightsizeError), lora
    with pytest.raises(RightsizeError, match="not exported for gaudi3") as err:
        _render(lora, "slurm", "auto", None, False)
    assert "full-weight" in err.value.fix and not _refusal_ok(err.value)
    from rightsize.perf.remat import MEGATRON_MODULES

    for key, value, flag in (
        ("recompute", next(iter(MEGATRON_MODULES)), "--recompute-modules"),  # module recompute
        ("zero_stage", 3, "--use-custom-fsdp"),  # Megatron's FSDP
    ):
        changed = copy.deepcopy(plan)
        changed["best"]["parallel"][key] = value
        with pytest.raises(RightsizeError) as err:
            _render(changed, "slurm", "megatron", None, False)
        assert flag in err.value.why and "Intel's Megatron-LM fork" in err.value.what, err.value
        assert not _refusal_ok(err.value)
