"""A TensorRT-LLM plan and its export size the KV cache with the same memory.

The planner gives TensorRT-LLM's KV cache a fraction of what the weights and the engine's
measured reservation leave (`perf.engine_memory`, from NVIDIA's measured capacities). The
export writes `free_gpu_memory_fraction`, which TensorRT-LLM applies to the same remainder
(`KvCacheCreator`: fraction x (total - peak)). Applied that way, the exported fraction must
give back the KV bytes the plan recorded, to the fraction's two decimals.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rightsize.api import plan
from rightsize.catalog.engines import get_engine
from rightsize.export import render_files
from rightsize.export.plan_view import serving_view
from rightsize.export.trtllm import OPTIONS_FILE, engine_reserved_bytes
from rightsize.perf.engine_memory import engine_memory
from rightsize.report.render import result_dict, to_json

ROOT = Path(__file__).resolve().parents[1]


def _trtllm_plan(tmp_path: Path) -> dict:
    spec = yaml.safe_load((ROOT / "examples/llama3-70b-chat-serving.yaml").read_text())
    spec["engine"] = {"name": "tensorrt-llm"}
    spec["targets"]["accelerators"] = ["h100-sxm"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return json.loads(to_json(result_dict(plan(path))))


def test_exported_fraction_gives_back_the_planned_kv_bytes(tmp_path: Path) -> None:
    p = _trtllm_plan(tmp_path)
    v = serving_view(p)
    mem = p["best"]["memory"]
    # the plan recorded the engine's measured reservation, the export computes the same one
    measured = engine_memory(get_engine("tensorrt-llm").memory, v.model, v.tp, v.hw.accelerator)
    assert mem["engine_reserved_bytes_per_gpu"] == measured.total_bytes
    assert engine_reserved_bytes(v) == measured.total_bytes
    options = yaml.safe_load(render_files(p, "slurm", engine="trtllm")[OPTIONS_FILE])
    fraction = options["kv_cache_config"]["free_gpu_memory_fraction"]
    free = v.hw.hbm_bytes - mem["weights_bytes_per_gpu"] - measured.total_bytes
    assert abs(fraction * free - mem["kv_bytes_per_gpu"]) <= 0.005 * free + 1.0
