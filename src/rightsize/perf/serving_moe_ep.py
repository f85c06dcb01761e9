"""Wide expert parallelism for MoE serving (DeepSeek-V3/R1 style): attention data-parallel,
routed experts spread over every GPU of the replica, tokens dispatched to their experts and
combined back by all-to-all over NVLink inside a node and the RDMA NICs across nodes.

DeepSeek's inference system (open-source week day 6, 2025-03-01; DeepSeek-V3 report
arXiv:2412.19437 section 3.4) and SGLang's large-scale EP (96 H100, 2025-05-05) serve this
way with DeepEP: dispatch in FP8 (1 byte per hidden element) and combine in BF16 (2 bytes),
each token sent to its k routed experts.

Per decode step of B sequences on `ep` GPUs (each a data-parallel attention rank with B/ep
sequences):
- every GPU reads the non-expert weights (attention, shared experts, dense layers, head)
  and its own sequences' KV cache (MLA's latent is per sequence);
- every GPU holds E/ep routed experts and reads those its tokens touch; it computes the
  tokens routed to them, B k / ep on average, times the load-imbalance factor (the busiest
  GPU's load over the mean: all GPUs wait for it at the combine);
- per MoE layer each GPU sends (ep - 1)/ep of its B/ep tokens' k copies out and gets the
  results back: B/ep x k x hidden x (1 + 2) bytes x (ep - 1)/ep, plus two latencies; the
  busiest GPU receives the imbalance factor times that, and the combine waits for it.
Prefill runs the same split, charged as the data-parallel share of a one-GPU prefill plus
its all-to-all, which DeepEP's normal kernels send once per remote node and forward inside
the node over NVLink (decode's low-latency kernels send each expert's copy over RDMA).

The imbalance factor is an input (`serving.expert_imbalance`): 1.0 means perfectly
balanced, which EPLB's redundant experts aim for; no published max/mean figure for a
default was found, so measure it (SGLang's expert distribution recorder, EPLB statistics)
and set it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rightsize.perf.inference import BYTES_PER_ELEMENT, Replica
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.params import count_params

DISPATCH_BYTES_PER_ELEMENT = 1.0  # FP8 dispatch (DeepEP; DeepSeek-V3 report section 3.3)
COMBINE_BYTES_PER_ELEMENT = 2.0  # BF16 combine


@dataclass(frozen=True)
class ExpertParallelReplica(Replica):
    """A MoE replica over `ep` GPUs: attention data-parallel, routed experts split ep ways
    (see the module docstring). `tp` is 1: each GPU is one attention rank."""

    ep: int = 1
    imbalance: float = 1.0
    crosses_nodes: bool = False

    @classmethod
    def build_ep(cls, base: Replica, ep: int, imbalance: float, crosses_nodes: bool) -> ExpertParallelReplica:
        """`base` (the model at tp 1) served with experts over `ep` GPUs."""
        return cls(
            base.arch,
            1,
            base.weight_precision,
            base.kv_precision,
            base.hw,
            base.dequant,
            base.engine,
            None,
            ep=ep,
            imbalance=imbalance,
            crosses_nodes=crosses_nodes,
        )

    def _bytes_per_param(self) -> float:
        return BYTES_PER_ELEMENT[self.weight_precision]

    def _routed_params(self) -> float:
        c = count_params(self.arch)
        return c.moe_layers * c.routed_experts_per_layer

    @property
    def weight_bytes_per_gpu(self) -> float:
        """Non-expert weights whole on every GPU, routed experts 1/ep each."""
        whole = super().weight_bytes_per_gpu
        routed = self._routed_params() * self._bytes_per_param()
        return whole - routed + routed / self.ep

    @property
    def kv_shards(self) -> int:
        """Each data-parallel rank keeps its own sequences' cache: ep ranks' worth."""
        return super().kv_shards * self.ep

    def all_to_all_s(self, tokens: np.ndarray | float, forward_by_node: bool = False) -> np.ndarray:
        """Dispatch and combine over every MoE layer for `tokens` spread over the ep GPUs.

        Decode uses DeepEP's low-latency kernels: each token goes to each of its k experts'
        GPUs directly over RDMA. Prefill (`forward_by_node`) uses its normal kernels: a token
        crosses the NICs once per remote node it has experts on, N (1 - (1 - 1/N)^k) nodes of
        N expected, (N - 1)/N of them remote, and is forwarded to the GPUs inside that node
        over NVLink (DeepEP README; DeepSeek-V3 report section 3.4)."""
        a, hw = self.arch, self.hw
        per_gpu = np.asarray(tokens, dtype=np.float64) / self.ep
        elem = a.hidden * (DISPATCH_BYTES_PER_ELEMENT + COMBINE_BYTES_PER_ELEMENT)
        k = float(a.experts_per_token)
        up_bw, up_lat = hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction, hw.scaleup_latency_s
        out_bw, out_lat = hw.scaleout_bytes_per_s_per_gpu * hw.scaleout_bw_fraction, hw.scaleout_latency_s
        if not self.crosses_nodes:
            t = 2.0 * up_lat + per_gpu * k * elem * (self.ep - 1) / self.ep / up_bw
        elif forward_by_node:
            nodes = max(1.0, math.ceil(self.ep / max(hw.domain_gpus, 1)))
            remote = nodes * (1.0 - (1.0 - 1.0 / nodes) ** k) * (nodes - 1.0) / nodes
            rdma = per_gpu * remote * elem / out_bw
            nvlink = per_gpu * k * elem * (hw.domain_gpus - 1) / max(self.ep, 1) / up_bw
            t = 2.0 * (out_lat + up_lat) + rdma + nvlink
        else:
            t = 2.0 * out_lat + per_gpu * k * elem * (self.ep - 1) / self.ep / out_bw
        # the busiest GPU receives `imbalance` x the mean traffic, and every rank waits for it
        return count_params(a).moe_layers * np.asarray(t) * self.imbalance

    def decode_step_detail(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> tuple[np.ndarray, OpReport]:
        b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
        ctx = np.asarray(context_tokens, dtype=np.float64)
        a, hw = self.arch, self.hw
        c = count_params(a)
        bpp = self._bytes_per_param()
        per_expert = c.routed_experts_per_layer / a.experts
        local_b = np.maximum(b / self.ep, 1.0)
        # non-expert weights read by every rank; its own sequences' GEMMs
        dense_params = self.linear_params - self._routed_params()
        dense_s = np.maximum(
            dense_params * bpp / self._stream_bw(),
            2.0 * dense_params * local_b / (hw.peak_flops_per_s * hw.gemm_fraction),
        )
        # the rank's experts: those the whole batch's tokens touch, at the busiest rank's load
        touched = (a.experts / self.ep) * (1.0 - (1.0 - a.experts_per_token / a.experts) ** b)
        tokens_here = b * a.experts_per_token / self.ep * self.imbalance
        expert_s = c.moe_layers * np.maximum(
            touched * per_expert * bpp / self._stream_bw(),
            2.0 * per_expert * tokens_here / (hw.peak_flops_per_s * hw.gemm_fraction),
        )
        # attention over the rank's own share of the cached context (ctx / ep tokens), all layers
        kv_s = ctx / self.ep * self.kv_bytes_per_token / super().kv_shards / self._stream_bw()
        attn_flops_s = self._attention_flops(ctx / self.ep) / (
            hw.peak_16bit_flops_per_s * hw.attention_fraction
        )
        attn_s = np.maximum(kv_s, attn_flops_s)
        report = OpReport("analytic")
        report.note("decode_step", np.zeros(1, dtype=bool), "expert-parallel decode is analytic")
        gpu_s = dense_s + expert_s + attn_s + self.all_to_all_s(b)
        total = gpu_s + self.step_overhead_s(local_b, gpu_s)
        return total, report

    def _attention_flops(self, ctx: np.ndarray) -> np.ndarray:
        a = self.arch
        if a.is_mla:  # absorbed MLA: scores over kv_lora + d_rope, values over kv_lora
            per_ctx = 2.0 * a.heads * (2.0 * (a.kv_lora_rank or 0) + (a.qk_rope_head_dim or 0))
        else:
            per_ctx = 4.0 * a.heads * a.head_dim
        return per_ctx * ctx * a.layers

    def prefill_detail(
        self,
        tokens: np.ndarray | float,
        past_tokens: np.ndarray | float = 0.0,
        sequences: np.ndarray | float = 1.0,
    ) -> tuple[np.ndarray, OpReport]:
        """The data-parallel share of a one-GPU prefill, plus its all-to-all."""
        t, report = super().prefill_detail(tokens, past_tokens, sequences)
        rows = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0) * np.maximum(
            np.asarray(sequences, dtype=np.float64), 1.0
        )
        return t * self.imbalance / self.ep + self.all_to_all_s(rows, forward_by_node=True), report
