"""Which serving engine an export writes, and its pinned image per accelerator stack.

`pick_engine(v, asked)`: the engine named on the command line (`--engine`), else the
engine the plan was sized for (`spec.engine.name`), else vLLM (SGLang for a plan with
separate prefill and decode pools: the one engine these exports write them for); aliases as in the catalog
(`tensorrt-llm`, `trt-llm` -> `trtllm`). An engine that cannot express the plan is refused
with the reason: TensorRT-LLM off NVIDIA GPUs, SGLang or TensorRT-LLM on a stack with no
image pinned for it (`catalog/data/kubernetes.yaml`, `serving_engines`).
"""

from __future__ import annotations

from rightsize.errors import BadInput
from rightsize.export.k8s_platform import Image, Stack, data, serving_stack, stack
from rightsize.export.plan_view import ServingView

ENGINES = ("vllm", "sglang", "trtllm")
_ALIASES = {
    "tensorrt-llm": "trtllm",
    "trt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
    "vllm": "vllm",
    "sglang": "sglang",
}


def pick_engine(v: ServingView, asked: str | None) -> str:
    """The engine to export: `asked`, else the plan's, else vLLM (SGLang when disaggregated)."""
    default = "sglang" if v.disaggregated is not None else "vllm"
    raw = (asked or v.engine or default).strip().lower()
    name = _ALIASES.get(raw, raw)
    if name not in ENGINES:
        if asked:
            raise BadInput(
                f"Unknown serving engine {asked!r}.",
                f"The export writes {', '.join(ENGINES)}.",
                "Use --engine vllm, sglang or trtllm.",
            )
        return "vllm"  # the plan names an engine the export does not write (gpt-fast): vLLM's files
    if name == "trtllm" and v.hw.vendor != "nvidia":
        raise BadInput(
            f"TensorRT-LLM cannot serve this plan: it runs on {v.hw.accelerator} ({v.hw.vendor}).",
            "TensorRT-LLM runs on NVIDIA GPUs only (CUDA, TensorRT and its own kernels).",
            "Export with --engine vllm, or plan for NVIDIA GPUs.",
        )
    if name == "sglang" and v.hw.vendor not in ("nvidia", "amd"):
        raise BadInput(
            f"SGLang is not exported for {v.hw.accelerator} ({v.hw.vendor}).",
            "The export writes SGLang for CUDA GPUs (its ROCm build has no tag pinned here).",
            "Export with --engine vllm, or plan for NVIDIA GPUs.",
        )
    return name


def engine_image(v: ServingView, engine: str) -> tuple[Stack, Image]:
    """The Kubernetes stack and the engine's pinned image on the plan's accelerator."""
    if engine == "vllm":
        return serving_stack(v.hw)
    st = stack(v.hw)
    d = data()["stacks"][v.hw.vendor].get("serving_engines", {}).get(engine)
    if not d:
        raise BadInput(
            f"No {engine} image is pinned for {v.hw.accelerator} ({v.hw.vendor}).",
            "Kubernetes exports use images pinned by exact tag (catalog kubernetes.yaml, serving_engines).",
            "Export with --engine vllm, or --target slurm (the engine installed on the nodes).",
        )
    image = str(d["image"])
    assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image
    return st, Image(image=image, engine=str(d["engine"]), source=str(d["source"]))
