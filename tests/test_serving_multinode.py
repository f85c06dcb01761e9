"""Replicas that span nodes: Llama 3.1 405B in BF16 (~810 GB) on 8-GPU nodes is served as
TP8 x PP2 over two nodes, with the stage hop over the RDMA NICs; the physics of a pipelined
replica hold (memory split by stages, PP does not cut batch-1 latency, hops cost time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf.inference import Replica, offline_throughput
from rightsize.perf.serving_multinode import PipelinedReplica
from rightsize.search.serving import plan_serving
from rightsize.spec.load import parse_spec
from rightsize.spec.presets import get_preset


def _spec(**targets: object):
    return parse_spec(
        {
            "kind": "inference",
            "model": "llama3.1-405b",
            "serving": {"weight_precision": "bf16", "kv_precision": "bf16"},
            "traffic": {"rate": 2, "prompt_tokens": 1024, "output_tokens": 256},
            "slo": {"ttft": "2s", "tpot": "80ms"},
            "targets": {"accelerators": ["h100-sxm"], **targets},
        },
        Path("."),
    )


def test_405b_bf16_spans_two_h100_nodes_as_tp8_pp2() -> None:
    plan = plan_serving(_spec())
    best = plan.best
    assert (best.tp, best.pp, best.nodes_per_replica) == (8, 2, 2)
    assert best.layout is not None and best.layout.kind == "pp-across-nodes"
    assert best.layout.pp_link is not None and "RDMA" in best.layout.pp_link
    assert "NVLink" in best.layout.tp_link
    assert best.gpus == 16 * best.replicas
    assert best.latency_s["tpot_p95_s"] <= 0.080 and best.latency_s["ttft_p95_s"] <= 2.0
    # the weights per GPU are a sixteenth of the layers plus the embedding table
    assert 45e9 < best.memory["weights_bytes_per_gpu"] < 55e9


def test_fixed_pp_and_tp_across_nodes_are_honoured() -> None:
    assert plan_serving(_spec(pp=2, tp=8)).best.pp == 2
    tp16 = plan_serving(_spec(tp=16)).best
    assert (tp16.tp, tp16.pp, tp16.nodes_per_replica) == (16, 1, 2)
    assert tp16.layout is not None and tp16.layout.tp_spans_nodes and "RDMA" in tp16.layout.tp_link


def test_pipelined_replica_physics() -> None:
    acc, node = get_accelerator("h200-sxm"), node_for("h200-sxm")
    arch = get_preset("llama3.1-405b")
    base = Replica.build(arch, acc, node, 8, "bf16", "bf16", engine="vllm")
    pp2 = PipelinedReplica.build_pipelined(base, 2, acc, node)
    # half the layers per GPU: about half the weights, and more KV capacity per replica
    assert pp2.weight_bytes_per_gpu == pytest.approx(base.weight_bytes_per_gpu / 2, rel=0.03)
    assert pp2.kv_capacity_tokens > 2 * base.kv_capacity_tokens
    # batch 1: every stage still reads its weights in turn, so PP does not cut latency
    assert float(pp2.decode_step_s(1.0, 1000.0)) >= 0.95 * float(base.decode_step_s(1.0, 1000.0))
    # the stage hop costs time: a replica whose hop crosses the NIC is slower than one on NVLink
    local = PipelinedReplica(**{**pp2.__dict__, "crosses_nodes": False})
    assert float(pp2.decode_step_s(256.0, 256e3)) > float(local.decode_step_s(256.0, 256e3))
    assert float(pp2.hop_s(1.0)) > float(local.hop_s(1.0))
    # a prompt's latency crossing the stages in turn exceeds the pipelined throughput time
    assert float(pp2.prefill_lag_s(2048.0)) > 0
    assert offline_throughput(pp2, 1024, 256)["output_tokens_per_s"] > 0
