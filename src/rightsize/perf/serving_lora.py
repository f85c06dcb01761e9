"""Multi-LoRA serving: many low-rank adapters over one base model, mixed in one batch.

Each adapter adds, to every targeted weight W (d_out x d_in) of every layer, B A with
A (r x d_in) and B (d_out x r): r (d_in + d_out) parameters per matrix. Engines keep
`max_loras` adapters in GPU slots (vLLM `--max-loras`, `--max-lora-rank`; the rest wait in
host memory) and batch requests of different adapters together with gathered kernels
(Punica's SGMV, Chen et al., MLSys 2024; S-LoRA, Sheng et al., MLSys 2024): a shrink
(x A) and an expand (x B) per linear layer, over all the batch's rows.

What one iteration of B sequences costs beyond the base model, by the engine's LoRA path
(`LoraPath`, chosen from the engine and its release):
- adapter reads: kernels that gather rows by adapter (SGMV-style; vLLM V1's lora_shrink /
  lora_expand) read each distinct adapter the batch holds once,
  min(max_loras, n (1 - (1 - 1/n)^B)) adapters; vLLM V0's decode kernels (bgmv) give every
  token its own program that loads its adapter's A and B, so a decode step reads the
  adapter bytes once per token (B x adapter bytes), at the memory stream rate;
- the low-rank FLOPs, 2 r (d_in + d_out) per matrix per token, at the GEMM rate;
- the kernels: a float32 buffer fill, then shrink and expand per linear (one launch each
  over all its slices: q/k/v, gate/up) or per slice (V0's decode loop); each a small kernel
  whose cost is its fixed overhead (the catalog's kernel_overhead_s) inside a CUDA graph,
  or its host launch (catalog host_launch per_op_s) where the iteration runs eagerly: a
  kernel shorter than its launch leaves the GPU waiting on the host (V0 prefill).
vLLM runs these kernels on every linear its model registers for LoRA, whatever the adapter
targets (unused slots hold zeros), at the padded `--max-lora-rank`.
Checked against vLLM's own runs (validate/data/serving_mechanisms.csv).
The `max_loras` slots take GPU memory from the KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.catalog.engines import version_key
from rightsize.catalog.host_launch import host_launch_figures
from rightsize.perf.inference import BYTES_PER_ELEMENT, Replica
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.params import mlp_matrices, qk_head_dim, v_head_dim
from rightsize.perf.replica_wrap import WrappedReplica
from rightsize.spec.model import ModelArch

ADAPTER_BYTES_PER_PARAM = BYTES_PER_ELEMENT["bf16"]  # adapters are served in 16 bit

# vLLM v0.8.0 (2025-03-18) made the V1 engine the default (vllm PR #15064, v1_user_guide.md: "V1
# is now enabled by default"; VLLM_USE_V1=0 restores V0); releases before it
# ran V0, whose LoRA path `V0_PATH` describes.
VLLM_V1_DEFAULT = "0.8.0"


@dataclass(frozen=True)
class LoraPath:
    """How an engine release runs the adapters' kernels (module docstring)."""

    name: str
    per_token_decode_reads: bool  # decode loads each token's adapter (bgmv), not each adapter once
    decode_per_slice: bool  # decode launches shrink and expand once per output slice, not per linear
    prefill_per_slice: bool  # the same for prefill iterations
    eager_prefill: bool  # prefill iterations run outside a CUDA graph: each LoRA op launched by the host
    every_linear: bool  # kernels on every LoRA-capable linear, whatever the adapter targets
    buffer_fill: bool  # a zero-filled float32 shrink buffer per linear (one more kernel)
    host_ops: int = 0  # host-issued tensor ops per iteration to rebuild the token -> adapter mapping


# vLLM V0 (releases before 0.8.0). vllm/lora/punica_wrapper/punica_gpu.py (V0 era):
# add_lora_linear zero-fills a float32 buffer (torch.zeros, 'refer to triton-lang/triton#1387'),
# then in decode loops `for slice_idx in range(len(lora_a_stacked))` over bgmv_shrink and
# bgmv_expand_slice ('TODO fuse these kernels'); prefill runs one fused sgmv_shrink and one
# sgmv_expand. bgmv's grid is (split_k, batch): one program per token loads that token's
# adapter (Punica issue #2: BGMV 'was designed for the case where every input is for a
# different LoRA model'). V0 captures CUDA graphs for decode batches only (PR #13096: the
# SGMV kernels 'are not CUDAGraph compatible'; V0's model runner graphs decode-only
# batches), so a prefill iteration launches every LoRA op from the host. Before each
# iteration whose mapping changed, LoRAModelManager.set_adapter_mapping ->
# punica_wrapper.update_metadata -> convert_mapping (vllm/lora/punica_wrapper/utils.py)
# builds the mapping on the host: two list -> GPU tensors, a stack, two masked fills, a clone,
# an arange, a multiply and an add, then five copy_ into the wrapper's persistent buffers
# (_update_base_metadata): 14 ops, on the critical path in V0 (no host overlap). Its
# per-token Python loop ('TODO index can be slow. optimize') is not timed: no figure for it.
V0_PATH = LoraPath("vllm-v0", True, True, False, True, True, True, host_ops=14)
# vLLM V1 (0.8.0 and later): lora_shrink / lora_expand (PR #13096, 2025-02-11) take every
# slice of a linear in one launch and group tokens by adapter ('information about which
# input tokens map to which LoRA ID'); CUDA-graph compatible, captured with the model
# (torch.compile support for LoRA, PR #14626).
VLLM_V1_PATH = LoraPath("vllm-v1", False, False, False, False, True, True)
# Other engines (SGLang, TensorRT-LLM): SGMV-style kernels, a shrink and an expand per
# targeted matrix, inside their CUDA graphs; only the targeted matrices.
GENERIC_PATH = LoraPath("sgmv", False, True, True, False, False, False)


def lora_path(engine: str | None, version: str | None) -> LoraPath:
    """The LoRA path of `engine` at release `version` (None: a current release)."""
    if engine != "vllm":
        return GENERIC_PATH
    if version and version_key(version) and version_key(version) < version_key(VLLM_V1_DEFAULT):
        return V0_PATH
    return VLLM_V1_PATH


def lora_linears(arch: ModelArch, modules: str) -> list[tuple[float, list[float]]]:
    """(d_in, [d_out of each slice]) of every linear an adapter targets in one layer, as
    engines pack them: qkv (q, k, v), o, plus for 'all' the MLP's gate/up and down."""
    h, heads, kvh = float(arch.hidden), float(arch.heads), float(arch.kv_heads)
    qk, v = float(qk_head_dim(arch)), float(v_head_dim(arch))
    out: list[tuple[float, list[float]]] = [(h, [heads * qk, kvh * qk, kvh * v]), (heads * v, [h])]
    if modules == "all":
        f = float(arch.expert_ffn_hidden or arch.ffn_hidden) if arch.is_moe else float(arch.ffn_hidden)
        out += [(h, [f] * (mlp_matrices(arch) - 1)), (f, [h])]
    return out


def lora_matrices(arch: ModelArch, modules: str) -> list[tuple[float, float]]:
    """(d_in, d_out) of every matrix an adapter targets in one layer: the attention
    projections (q, k, v, o), plus the MLP's for 'all'."""
    return [(i, o) for i, outs in lora_linears(arch, modules) for o in outs]


def adapter_params(arch: ModelArch, rank: int, modules: str) -> float:
    """Parameters of one adapter over every layer."""
    return arch.layers * sum(rank * (i + o) for i, o in lora_matrices(arch, modules))


@dataclass(frozen=True)
class LoraReplica(WrappedReplica):
    """`target` serving `adapters` LoRA adapters of rank `rank` (module docstring)."""

    adapters: int = 1
    rank: int = 16
    max_loras: int = 1
    modules: str = "attention"

    @classmethod
    def wrap(cls, target: Replica, adapters: int, rank: int, max_loras: int, modules: str) -> LoraReplica:
        return cls.around(target, adapters=adapters, rank=rank, max_loras=max_loras, modules=modules)

    @property
    def path(self) -> LoraPath:
        return lora_path(self.engine.name if self.engine else None, self.engine_version)

    @property
    def adapter_bytes_per_gpu(self) -> float:
        return adapter_params(self.arch, self.rank, self.modules) * ADAPTER_BYTES_PER_PARAM / self.tp

    @property
    def weight_bytes_per_gpu(self) -> float:
        return self._target().weight_bytes_per_gpu + self.max_loras * self.adapter_bytes_per_gpu

    @property
    def kv_capacity_tokens(self) -> float:
        """The target's cache less the adapter slots."""
        t = self._target()
        per_token = t.kv_bytes_per_token / t.kv_shards
        free = t.kv_capacity_tokens * per_token - self.max_loras * self.adapter_bytes_per_gpu
        return max(0.0, free) / per_token

    def distinct_adapters(self, batch: np.ndarray | float) -> np.ndarray:
        """Expected adapters a batch of `batch` requests holds (capped by the GPU slots)."""
        b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
        n = float(self.adapters)
        return np.minimum(float(self.max_loras), n * (1.0 - (1.0 - 1.0 / n) ** b))

    def _computed_linears(self) -> list[tuple[float, list[float]]]:
        """The linears the kernels run on: every LoRA-capable one where the engine wraps them all."""
        return lora_linears(self.arch, "all" if self.path.every_linear else self.modules)

    def kernels_per_iteration(self, decode: bool) -> float:
        """LoRA kernels one iteration launches over every layer."""
        p = self.path
        per_layer = 0.0
        for _, outs in self._computed_linears():
            per_slice = p.decode_per_slice if decode else p.prefill_per_slice
            per_layer += 2.0 * (len(outs) if per_slice else 1.0)
            per_layer += 1.0 if p.buffer_fill else 0.0
        return per_layer * self.arch.layers

    def lora_s(self, rows: np.ndarray | float, batch: np.ndarray | float, decode: bool = False) -> np.ndarray:
        """Extra time of the adapters for `rows` tokens from `batch` sequences in one iteration
        (`decode`: a decode step, where V0's per-token reads apply)."""
        hw, a, p = self.hw, self.arch, self.path
        m = np.asarray(rows, dtype=np.float64)
        linears = self._computed_linears()
        per_adapter = a.layers * sum(self.rank * (i + o) for i, outs in linears for o in outs)
        per_adapter_bytes = per_adapter * ADAPTER_BYTES_PER_PARAM / self.tp
        loads = m if (decode and p.per_token_decode_reads) else self.distinct_adapters(batch)
        stream = hw.hbm_bytes_per_s * hw.memory_bw_fraction
        flops = 2.0 * m * per_adapter / self.tp
        kernels = self.kernels_per_iteration(decode)
        if p.eager_prefill and not decode:  # host-launched: the GPU waits on each launch
            per_kernel = max(hw.kernel_overhead_s, host_launch_figures().per_op_s_for(hw.accelerator_id))
        else:
            per_kernel = hw.kernel_overhead_s
        host_s = p.host_ops * host_launch_figures().per_op_s_for(hw.accelerator_id)
        return (
            host_s
            + loads * per_adapter_bytes / stream
            + flops / (hw.peak_16bit_flops_per_s * hw.gemm_fraction)
            + kernels * per_kernel
        )

    def decode_step_detail(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> tuple[np.ndarray, OpReport]:
        t, report = self._target().decode_step_detail(batch, context_tokens)
        return t + self.lora_s(batch, batch, decode=True), report

    def prefill_detail(
        self,
        tokens: np.ndarray | float,
        past_tokens: np.ndarray | float = 0.0,
        sequences: np.ndarray | float = 1.0,
    ) -> tuple[np.ndarray, OpReport]:
        t, report = self._target().prefill_detail(tokens, past_tokens, sequences)
        rows = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0) * np.maximum(
            np.asarray(sequences, dtype=np.float64), 1.0
        )
        return t + self.lora_s(rows, sequences), report
