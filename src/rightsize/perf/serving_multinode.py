"""Serving replicas that span nodes: tensor parallelism inside a node, pipeline (or tensor)
parallelism across nodes, and the fabric cost of each.

A model too large for one node (Llama 3.1 405B in BF16: ~810 GB of weights against 640 GB
of HBM in an 8 x H100 node) is served on several nodes per replica, as vLLM
(`--tensor-parallel-size 8 --pipeline-parallel-size 2`), SGLang (`--nnodes 2`) and
TensorRT-LLM do, launched with a LeaderWorkerSet. Two layouts:

- TP inside the node, PP across nodes (`PipelinedReplica`): the layers split into `pp`
  stages of `tp` GPUs each. Each stage holds 1/pp of the layers' weights and KV cache. A
  decode iteration runs the batch as `pp` micro-batches (vLLM's virtual engines), so every
  stage reads its weights once per micro-batch: the iteration lasts
  pp x (stage step at B/pp + one hop of B/pp tokens). At small batch that is a TP-only
  replica's step (PP does not cut latency); at large batch the stages work in parallel.
  Prefill chunks are micro-batched the same way (the engine's throughput); a prompt's
  own first token lags by what crossing the stages in turn adds (`prefill_lag_s`, which
  the simulator adds to every token of that request).
  Between stages each token's hidden state (hidden x 2 bytes) crosses the link: vLLM's
  pipeline send splits it over the stage's tp ranks and all-gathers it after
  (`send_tensor_dict(all_gather_group=...)`), so each rank sends 1/tp over its own NIC.
- TP across nodes (`Replica` at tp larger than the scale-up domain): the two per-layer
  all-reduces run over the scale-out NICs (`collectives.group_link` already prices a
  group that leaves the domain), which is why PP is usually the better layout.

`ReplicaLayout` is the record a plan keeps per replica: GPUs, nodes, degrees and links,
what an exporter (LeaderWorkerSet size, engine flags) reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rightsize.catalog import Accelerator, NodeType
from rightsize.perf.inference import Replica
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.params import count_params

ACTIVATION_BYTES = 2.0  # hidden states cross stages in 16 bit

# Pipeline degrees considered for a replica that spans nodes (stages of one node each).
PP_OPTIONS = (2, 4, 8)


@dataclass(frozen=True)
class ReplicaLayout:
    """How one replica's GPUs are placed and wired: the record a plan and an exporter read."""

    tp: int  # tensor-parallel degree: GPUs per pipeline stage
    pp: int  # pipeline stages
    nodes: int  # nodes one replica occupies
    gpus_per_node: int  # GPUs of each of those nodes the replica uses
    tp_link: str  # the link the TP all-reduces run over
    pp_link: str | None  # the link between pipeline stages (None: one stage)
    tp_spans_nodes: bool
    activation_bytes_per_token_hop: float  # hidden state bytes one token carries per stage hop
    ep: int = 1  # expert-parallel GPUs (attention data-parallel on each); 1: experts inside tp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.ep

    @property
    def kind(self) -> str:
        if self.ep > 1:
            return "expert-parallel" + ("-across-nodes" if self.nodes > 1 else "")
        if self.nodes == 1:
            return "single-node"
        return "tp-across-nodes" if self.tp_spans_nodes else "pp-across-nodes"


def _nic_name(node: NodeType) -> str:
    return f"RDMA NIC ({node.nics_per_node} x {node.nic_bits_per_s / 1e9:g} Gb/s per node)"


def layout_of(acc: Accelerator, node: NodeType, tp: int, pp: int, hidden: int, ep: int = 1) -> ReplicaLayout:
    """The layout of tp x pp (x ep) GPUs of `acc` on `node`s: stages fill nodes in order. A
    group inside the scale-up domain talks over it (NVLink, ICI, even across the hosts of an
    NVL72 rack or a TPU slice); one that leaves it, over the RDMA NICs."""
    per_node, domain = node.gpus_per_node, acc.scaleup_domain_gpus
    gpus = tp * pp * ep
    up = f"{acc.scaleup_name} (scale-up)"
    nic = _nic_name(node)
    return ReplicaLayout(
        tp=tp,
        pp=pp,
        nodes=max(1, math.ceil(gpus / per_node)),
        gpus_per_node=min(gpus, per_node),
        tp_link=up if tp <= domain else nic,
        pp_link=None if pp == 1 else (up if gpus <= domain else nic),
        tp_spans_nodes=tp > per_node,
        activation_bytes_per_token_hop=hidden * ACTIVATION_BYTES,
        ep=ep,
    )


def stage_arch_update(layers: int, dense_layers: int, pp: int) -> dict[str, int]:
    """Fields of the largest stage's architecture: ceil(layers / pp) layers (leading dense
    layers of an MoE model shared out the same way, at least one MoE layer kept)."""
    per_stage = math.ceil(layers / pp)
    dense = min(math.ceil(dense_layers / pp), per_stage - 1) if dense_layers else 0
    return {"layers": per_stage, "dense_layers": dense}


@dataclass(frozen=True)
class PipelinedReplica(Replica):
    """A replica of `pp` pipeline stages of `tp` GPUs (see the module docstring); `stage`
    is the largest stage as a replica of its own, `crosses_nodes` whether stage hops leave
    the scale-up domain."""

    pp: int = 1
    stage: Replica | None = None
    crosses_nodes: bool = True
    layout: ReplicaLayout | None = field(default=None, compare=False)

    @classmethod
    def build_pipelined(cls, base: Replica, pp: int, acc: Accelerator, node: NodeType) -> PipelinedReplica:
        """`base` (the whole model at tp) split into `pp` stages."""
        a = base.arch
        stage_arch = a.model_copy(update=stage_arch_update(a.layers, a.dense_layers, pp))
        stage = Replica(
            stage_arch, base.tp, base.weight_precision, base.kv_precision, base.hw, base.dequant, base.engine
        )
        layout = layout_of(acc, node, base.tp, pp, a.hidden)
        return cls(
            a,
            base.tp,
            base.weight_precision,
            base.kv_precision,
            base.hw,
            base.dequant,
            base.engine,
            None,
            pp=pp,
            stage=stage,
            crosses_nodes=layout.pp_link is not None and "NIC" in layout.pp_link,
            layout=layout,
        )

    def _stage(self) -> Replica:
        assert self.stage is not None  # set by build_pipelined
        return self.stage

    @property
    def weight_bytes_per_gpu(self) -> float:
        """The largest stage's share: its layers' weights over tp, plus the input embedding
        (first stage; the output head is counted with the linear weights, split evenly)."""
        whole = super().weight_bytes_per_gpu * self.tp
        embedding = count_params(self.arch).embedding * 2.0  # the lookup table stays 16 bit
        return (whole - embedding) / (self.tp * self.pp) + embedding / self.tp

    @property
    def kv_shards(self) -> int:
        """GPUs one token's KV cache splits over: the stage's shards x the stages."""
        return super().kv_shards * self.pp

    def hop_s(self, tokens: np.ndarray | float) -> np.ndarray:
        """One stage-to-stage transfer of `tokens` hidden states, each tp rank sending 1/tp."""
        nbytes = np.asarray(tokens, dtype=np.float64) * self.arch.hidden * ACTIVATION_BYTES
        hw = self.hw
        if self.crosses_nodes:
            bw = self.tp * hw.scaleout_bytes_per_s_per_gpu * hw.scaleout_bw_fraction
            return hw.scaleout_latency_s + nbytes / bw
        return hw.scaleup_latency_s + nbytes / (self.tp * hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction)

    def decode_step_detail(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> tuple[np.ndarray, OpReport]:
        """pp micro-batches of B/pp, each through every stage and hop (module docstring)."""
        b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
        micro = np.maximum(b / self.pp, 1.0)
        ctx = np.asarray(context_tokens, dtype=np.float64) / self.pp
        t, report = self._stage().decode_step_detail(micro, ctx)
        return self.pp * (t + self.hop_s(micro)), report

    def prefill_detail(
        self,
        tokens: np.ndarray | float,
        past_tokens: np.ndarray | float = 0.0,
        sequences: np.ndarray | float = 1.0,
    ) -> tuple[np.ndarray, OpReport]:
        """The engine's time for a prefill when its micro-batches keep every stage busy: pp
        micro-batches of 1/pp of the rows, each through every stage and hop (the throughput;
        the latency one prompt adds on top is `prefill_lag_s`)."""
        t, report = self._stage().prefill_detail(
            np.asarray(tokens, dtype=np.float64) / self.pp, past_tokens, sequences
        )
        return self.pp * (t + self.hop_s(self._rows(tokens, sequences) / self.pp)), report

    def prefill_latency_s(self, tokens: np.ndarray | float) -> np.ndarray:
        """One prompt's prefill latency: the stages in turn and the pp - 1 hops between them."""
        t = self._stage().prefill_s(tokens)
        return self.pp * t + (self.pp - 1) * self.hop_s(self._rows(tokens, 1.0))

    def prefill_lag_s(self, tokens: np.ndarray | float) -> np.ndarray:
        """How much later a prompt's first token appears than the pipelined iteration time
        says: its latency less its throughput time (at least 0)."""
        return np.maximum(self.prefill_latency_s(tokens) - self.prefill_s(tokens), 0.0)

    @staticmethod
    def _rows(tokens: np.ndarray | float, sequences: np.ndarray | float) -> np.ndarray:
        return np.maximum(np.asarray(tokens, dtype=np.float64), 1.0) * np.maximum(
            np.asarray(sequences, dtype=np.float64), 1.0
        )


def gpus_of(rep: Replica) -> int:
    """GPUs one replica occupies (tp x pp, or the expert-parallel group)."""
    target = getattr(rep, "target", None)  # a speculating replica occupies its target's GPUs
    if isinstance(target, Replica):
        return gpus_of(target)
    ep = getattr(rep, "ep", None)
    if isinstance(ep, int):
        return ep
    return rep.tp * (rep.pp if isinstance(rep, PipelinedReplica) else 1)
