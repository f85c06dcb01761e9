"""Memory a serving engine keeps on each GPU besides the weights and the KV cache.

TensorRT-LLM (PyTorch backend) sizes its KV cache after a profiling run: it loads the weights,
runs dummy context requests totalling `max_num_tokens` tokens, and gives the KV cache
`free_gpu_memory_fraction` of (total - peak), where the peak is PyTorch's peak allocation plus
what is allocated outside PyTorch (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/_util.py,
KvCacheCreator: `available_kv_mem = (total_gpu_memory - peak_memory + alloc_kv_tokens *
kv_size_per_token) * fraction`; "Memory used outside torch (e.g., NCCL and CUDA graphs)").
Besides the weights, that peak is three things, each sized by what it depends on:

- a runtime reservation per GPU (CUDA context, cuBLAS and kernel workspaces), by accelerator;
- tensor-parallel communication buffers (NCCL communicators, the custom all-reduce
  workspace), none at TP 1, growing with the TP degree;
- the profiling forward pass's live activations: per token, 16-bit buffers of the hidden
  width (replicated on every TP rank: residual, norms, the all-reduced outputs) and of the MLP
  width (split over the TP ranks: gate/up outputs and the activation).

The figures come from NVIDIA's measured TensorRT-LLM KV capacities (`catalog/data/engines.yaml`
`memory`, which says how they were derived). Engines without measurements keep the flat
workspace of `perf.inference`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rightsize.catalog.engines import EngineMemory
from rightsize.constants import GiB


class Widths(Protocol):
    """What the activation buffers are sized by (a ModelArch, or an export's view of one)."""

    @property
    def hidden(self) -> int: ...

    @property
    def ffn_hidden(self) -> int: ...


ACTIVATION_BYTES_PER_ELEMENT = 2.0  # the profiling pass runs in 16 bit (BF16/FP16 activations)


@dataclass(frozen=True)
class EngineMemoryBreakdown:
    """Non-weight, non-KV bytes on one GPU of a replica, by mechanism."""

    runtime_bytes: float
    comm_bytes: float
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.runtime_bytes + self.comm_bytes + self.activation_bytes


def activation_bytes_per_token(mem: EngineMemory, arch: Widths, tp: int) -> float:
    """Live activation bytes per token of the profiling pass on one TP rank."""
    hidden = mem.activation_hidden_buffers.value * arch.hidden
    ffn = mem.activation_ffn_buffers.value * arch.ffn_hidden / tp
    return (hidden + ffn) * ACTIVATION_BYTES_PER_ELEMENT


def engine_memory(
    mem: EngineMemory, arch: Widths, tp: int, accelerator_id: str, max_num_tokens: float | None = None
) -> EngineMemoryBreakdown:
    """What the engine keeps on each GPU of a TP-`tp` replica besides weights and KV, with the
    profiling pass over `max_num_tokens` tokens (None: the engine's default)."""
    tokens = mem.profile_tokens.value if max_num_tokens is None else float(max_num_tokens)
    return EngineMemoryBreakdown(
        runtime_bytes=mem.runtime_gib(accelerator_id) * GiB,
        comm_bytes=mem.comm_gib(tp) * GiB,
        activation_bytes=activation_bytes_per_token(mem, arch, tp) * tokens,
    )
