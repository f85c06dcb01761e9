"""NVIDIA AIConfigurator's public kernel database, read through its own package.

`pip install 'rightsize[aiconfigurator]'` installs `aiconfigurator` (Apache-2.0), whose
`aiconfigurator_core` wheel ships measured latencies of GEMMs, context and generation
attention and all-reduces per GPU system, engine (TensorRT-LLM, vLLM, SGLang) and engine
version. This module asks that package for its table views (`PerfDatabase` plus each
operation's `load_data`) and converts them, in memory, into a `KernelTable`. Nothing
of the database is copied into rightsize; without the package `load_table` returns None
and says why through `status()`.

The package's table views are nested dicts: GEMM quant -> m -> n -> k; context
attention fmha quant -> kv quant -> kv heads (0: as many as query heads) -> head dim ->
window -> heads -> seq len -> batch; generation attention kv quant -> kv heads -> head
dim -> window -> heads -> batch -> context; custom all-reduce quant -> GPUs -> strategy
-> elements. Latencies are milliseconds.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from rightsize.perf.kernels.table import KernelTable, build_table

PACKAGE = "aiconfigurator_core"
SYSTEMS = {
    "a100-sxm-80gb": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "b200": "b200_sxm",
    "gb200": "gb200",
    "b300": "b300_sxm",
    "gb300": "gb300",
    "l40s": "l40s",
    "rtx-pro-6000": "rtx_pro_6000_server",
}
BACKENDS = {"tensorrt-llm": "trtllm", "vllm": "vllm", "sglang": "sglang"}
GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "int8_wo": "int8", "int4_wo": "int4"}
KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
MS = 1e-3
# AIConfigurator's Llama generation ops (aiconfigurator_core/sdk/models/llama.py) by the
# OpReport name rightsize gives the same work: how its per-op step lines up with ours.
LLAMA_GENERATION_OPS = {
    "qkv_gemm": "gemm_qkv",
    "proj_gemm": "gemm_out",
    "gate_ffn1_gemm": "gemm_up",
    "ffn2_gemm": "gemm_down",
    "attention": "attention",
    "ar_1": "all_reduce",
    "ar_2": "all_reduce",
    "add_norm_1": "elementwise",
    "add_norm_2": "elementwise",
    "act_gate": "elementwise",
    "logits_gemm": "gemm_logits",
    "embedding": "embedding",
    "embedding_ar": "embedding",
    "p2p": "pipeline_p2p",
}


def llama_config(
    layers: int, hidden: int, heads: int, kv_heads: int, ffn_hidden: int, vocab: int
) -> dict[str, Any]:
    """A Hugging Face `config.json` of a Llama-architecture model of this shape, as
    AIConfigurator's estimator reads one (it takes a model folder, not a shape)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": ffn_hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
        "vocab_size": vocab,
        "head_dim": hidden // heads,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "torch_dtype": "bfloat16",
        "hidden_act": "silu",
        "tie_word_embeddings": False,
    }


def status() -> str | None:
    """None when the package is importable, else why not (with how to fix)."""
    if importlib.util.find_spec(PACKAGE) is None:
        return "AIConfigurator is not installed (pip install 'rightsize[aiconfigurator]')"
    return None


def _version(system: str, backend: str, wanted: str | None) -> tuple[str, str] | None:
    """(version to load, note) for the engine version asked for; the database's current one if absent."""
    from aiconfigurator_core.sdk import perf_database as pdb

    versions = pdb.get_supported_databases().get(system, {}).get(backend, [])
    if not versions:
        return None
    if wanted and wanted in versions:
        return wanted, ""
    current = pdb.resolve_query_version(system, backend, "current")
    note = f"; {backend} {wanted} not in the database, its {current} kernels used" if wanted else ""
    return current, note


def _leaves(d: Any, depth: int, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], float]]:
    if depth == 0:
        lat = d.get("latency") if isinstance(d, dict) else d
        if lat is not None:
            yield prefix, float(lat)
        return
    for k, v in d.items():
        yield from _leaves(v, depth - 1, (*prefix, k))


def _name(mode: Any) -> str:
    return str(getattr(mode, "name", mode))


def _records(db: Any) -> Iterator[dict[str, Any]]:
    from aiconfigurator_core.sdk.operations.attention import ContextAttention, GenerationAttention
    from aiconfigurator_core.sdk.operations.communication import CustomAllReduce
    from aiconfigurator_core.sdk.operations.gemm import GEMM

    for op in (GEMM, ContextAttention, GenerationAttention, CustomAllReduce):
        op.load_data(db)
    for (q, m, n, k), lat in _leaves(db._gemm_data, 4):
        if _name(q) in GEMM_DTYPES:
            yield {
                "op": "gemm",
                "dtype": GEMM_DTYPES[_name(q)],
                "m": m,
                "n": n,
                "k": k,
                "latency_s": lat * MS,
            }
    for (fq, kq, kvh, hd, win, heads, s, b), lat in _leaves(db._context_attention_data, 8):
        if win == 0 and _name(fq) in KV_DTYPES and _name(kq) == _name(fq):
            kv = kvh or heads
            yield {"op": "context_attention", "dtype": KV_DTYPES[_name(fq)], "kv_heads": kv, "head_dim": hd,
                   "heads": heads, "seq_len": s, "batch": b, "latency_s": lat * MS}  # fmt: skip
    for (kq, kvh, hd, win, heads, b, s), lat in _leaves(db._generation_attention_data, 7):
        if win == 0 and _name(kq) in KV_DTYPES:
            kv = kvh or heads
            yield {"op": "generation_attention", "kv_dtype": KV_DTYPES[_name(kq)], "kv_heads": kv, "head_dim": hd,
                   "heads": heads, "batch": b, "context_len": s, "latency_s": lat * MS}  # fmt: skip
    for (_q, gpus, _strategy, elems), lat in _leaves(db._custom_allreduce_data, 4):
        yield {"op": "all_reduce", "dtype": "bf16", "gpus": gpus, "bytes": 2 * elems, "latency_s": lat * MS}


@lru_cache(maxsize=16)
def load_table(accelerator: str, engine: str, version: str | None = None) -> KernelTable | None:
    """The database's kernels for one accelerator and engine, or None when it has none
    (package absent, accelerator or engine not covered)."""
    if status() is not None or accelerator not in SYSTEMS or engine not in BACKENDS:
        return None
    system, backend = SYSTEMS[accelerator], BACKENDS[engine]
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)
    from importlib.metadata import version as dist_version

    from aiconfigurator_core.sdk import perf_database as pdb

    picked = _version(system, backend, version)
    if picked is None:
        return None
    db_version, note = picked
    db = pdb.get_database(system, backend, db_version)
    if db is None:
        return None
    meta = {
        "accelerator": accelerator,
        "engine": engine,
        "version": db_version,
        "source": f"measured: NVIDIA AIConfigurator {dist_version(PACKAGE)} database, {system}/{backend}/{db_version}{note}",
        "as_of": "2026-08",
    }
    return build_table(meta, _records(db), where=f"AIConfigurator {system}/{backend}")
