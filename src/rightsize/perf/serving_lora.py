"""Multi-LoRA serving: many low-rank adapters over one base model, mixed in one batch.

Each adapter adds, to every targeted weight W (d_out x d_in) of every layer, B A with
A (r x d_in) and B (d_out x r): r (d_in + d_out) parameters per matrix. Engines keep
`max_loras` adapters in GPU slots (vLLM `--max-loras`, `--max-lora-rank`; the rest wait in
host memory) and batch requests of different adapters together with gathered kernels
(Punica's SGMV, Chen et al., MLSys 2024; S-LoRA, Sheng et al., MLSys 2024): a shrink
(x A) and an expand (x B) per targeted matrix per layer, over all the batch's rows.

Per decode step of B sequences over `adapters` adapters (requests spread evenly):
- the distinct adapters the batch holds, min(max_loras, n (1 - (1 - 1/n)^B)), each read once:
  bytes = distinct x adapter bytes / tp over the memory bandwidth;
- the low-rank FLOPs, 2 r (d_in + d_out) per targeted matrix per token, at the GEMM rate;
- two extra kernels per targeted matrix per layer (their launch and tail, the catalog's
  kernel overhead): this fixed cost is the batching penalty that makes a LoRA step slower
  than a base step even at batch 1.
Checked against vLLM's own runs (validate/data/serving_mechanisms.csv): Llama 2 7B on an
A100 with one rank-8 adapter, the model keeps 0.965 of the base throughput; vLLM's V1 engine
with torch.compile ran 0.957 of the V0 base (PR #11613), while the V0 engine kept 0.664
(PR #11267), a release effect of V0's LoRA path this model does not carry.
The `max_loras` slots take GPU memory from the KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.perf.inference import BYTES_PER_ELEMENT, Replica
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.params import mlp_matrices, qk_head_dim, v_head_dim
from rightsize.perf.replica_wrap import WrappedReplica
from rightsize.spec.model import ModelArch

ADAPTER_BYTES_PER_PARAM = BYTES_PER_ELEMENT["bf16"]  # adapters are served in 16 bit


def lora_matrices(arch: ModelArch, modules: str) -> list[tuple[float, float]]:
    """(d_in, d_out) of every matrix an adapter targets in one layer: the attention
    projections (q, k, v, o), plus the MLP's for 'all'."""
    h, heads, kvh = float(arch.hidden), float(arch.heads), float(arch.kv_heads)
    qk, v = float(qk_head_dim(arch)), float(v_head_dim(arch))
    mats = [(h, heads * qk), (h, kvh * qk), (h, kvh * v), (heads * v, h)]
    if modules == "all":
        f = float(arch.expert_ffn_hidden or arch.ffn_hidden) if arch.is_moe else float(arch.ffn_hidden)
        mats += [(h, f)] * (mlp_matrices(arch) - 1) + [(f, h)]
    return mats


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

    def lora_s(self, rows: np.ndarray | float, batch: np.ndarray | float) -> np.ndarray:
        """Extra time of the adapters for `rows` tokens from `batch` sequences."""
        hw, a = self.hw, self.arch
        m = np.asarray(rows, dtype=np.float64)
        mats = lora_matrices(a, self.modules)
        read = self.distinct_adapters(batch) * self.adapter_bytes_per_gpu
        flops = 2.0 * m * a.layers * sum(self.rank * (i + o) for i, o in mats) / self.tp
        kernels = 2.0 * len(mats) * a.layers * hw.kernel_overhead_s
        stream = hw.hbm_bytes_per_s * hw.memory_bw_fraction
        return read / stream + flops / (hw.peak_16bit_flops_per_s * hw.gemm_fraction) + kernels

    def decode_step_detail(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> tuple[np.ndarray, OpReport]:
        t, report = self._target().decode_step_detail(batch, context_tokens)
        return t + self.lora_s(batch, batch), report

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
