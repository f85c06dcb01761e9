"""Disaggregated prefill and decode: two pools of replicas and the KV-cache transfer between
them, simulated end to end.

As NVIDIA Dynamo, llm-d, SGLang (`--disaggregation-mode prefill|decode`) and vLLM's KV
connectors run it (DistServe, Zhong et al. OSDI 2024; Splitwise, Patel et al. ISCA 2024): a
request is prefilled on a prefill replica, which emits the first token; its KV cache
(kv_bytes_per_token x prompt tokens) then crosses the fabric to a decode replica, which
generates the rest. Prefill no longer interrupts decode iterations (the TPOT side), and
decode batches no longer delay prefills (the TTFT side); the price is the transfer and two
pools to size.

The simulation chains the single-replica simulator (`serving_sim.simulate`): requests go
round-robin over the prefill replicas (prefill only: one output token each); each one's
KV is ready at decode after its transfer (latency + bytes / link bandwidth); requests go
round-robin, in the order they become ready, over the decode replicas, where the prompt is
already cached (only its last token is recomputed, the first decode step) and the
remaining output - 1 tokens are generated. TTFT is the prefill's first token; TPOT and
e2e include the transfer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.perf.serving_sim import EngineModel, SimResult, result_from_times, simulate


@dataclass(frozen=True)
class KvTransfer:
    """The link KV caches cross from a prefill replica to a decode replica."""

    link: str  # e.g. "NVLink (scale-up)" or "RDMA NIC (8 x 400 Gb/s per node)"
    kv_bytes_per_token: float  # whole replica, all layers
    bandwidth_bytes_per_s: float  # achievable, summed over the sending replica's GPUs
    latency_s: float  # per transfer (connection, handshake, first byte)

    def bytes_per_request(self, prompt_tokens: np.ndarray | float) -> np.ndarray:
        return np.asarray(prompt_tokens, dtype=np.float64) * self.kv_bytes_per_token

    def seconds(self, prompt_tokens: np.ndarray | float) -> np.ndarray:
        return self.latency_s + self.bytes_per_request(prompt_tokens) / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class Pools:
    """Two pools: their engine models and replica counts."""

    prefill: EngineModel
    decode: EngineModel
    prefill_replicas: int
    decode_replicas: int

    @property
    def ratio(self) -> str:
        """The xPyD name of the split (prefill replicas P, decode replicas D)."""
        return f"{self.prefill_replicas}P{self.decode_replicas}D"


def _round_robin(order: np.ndarray, pools: int) -> list[np.ndarray]:
    """Indices (in `order`) each of `pools` replicas receives, dealt in turn."""
    return [order[i::pools] for i in range(pools)]


def simulate_disaggregated(
    arrivals_s: np.ndarray,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    pools: Pools,
    transfer: KvTransfer,
    cached_prompt_fraction: float = 0.0,
) -> tuple[SimResult, np.ndarray]:
    """Serve the requests on the two pools; (per-request result, transfer seconds)."""
    arr = np.asarray(arrivals_s, dtype=np.float64)
    prompt = np.asarray(prompt_tokens).astype(np.int64)
    output = np.asarray(output_tokens).astype(np.int64)
    n = len(arr)
    first = np.empty(n)
    start = np.empty(n)
    for idx in _round_robin(np.argsort(arr, kind="stable"), pools.prefill_replicas):
        if len(idx):
            r = simulate(arr[idx], prompt[idx], np.ones(len(idx)), pools.prefill, cached_prompt_fraction)
            first[idx] = arr[idx] + r.ttft_s
            start[idx] = r.start_s
    moved = transfer.seconds(prompt)
    ready = first + moved
    done = first.copy()
    more = np.flatnonzero(output > 1)
    for idx in _round_robin(more[np.argsort(ready[more], kind="stable")], pools.decode_replicas):
        if len(idx):
            r = simulate(ready[idx], prompt[idx], output[idx] - 1, pools.decode, 1.0)
            done[idx] = ready[idx] + r.e2e_s
    return _combined(arr, start, first, done, prompt, output), moved


def _combined(
    arr: np.ndarray,
    start: np.ndarray,
    first: np.ndarray,
    done: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
) -> SimResult:
    return result_from_times(
        arr,
        start,
        first,
        done,
        prompt,
        output,
        busy_seq_s=float(np.sum(done - start)),
        mean_decode_batch=float("nan"),  # per pool; not one engine's figure
        max_queue=0,
        iterations=0,
    )
