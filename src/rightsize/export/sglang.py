"""SGLang server arguments from a serving plan (`python3 -m sglang.launch_server`, SGLang
v0.5.19: the flags of sglang/srt/server_args.py, `ServerArgs.add_cli_args`). The limits are
the plan's, computed by the same terms as the vLLM export (`export.vllm`):

- `--tp-size` / `--pp-size` / `--ep-size`: the plan's parallelism (a replica's TP counts
  every GPU of the replica, across nodes; PP and EP written only when above 1). Wide EP
  (experts over more GPUs than TP x PP) is `--tp-size EP --dp-size EP/TP
  --enable-dp-attention --ep-size EP`: SGLang's tp_size is the group, attention data-parallel.
- `--context-length`: the longest prompt plus the longest output the traffic allows.
- `--max-running-requests`: the vLLM export's `--max-num-seqs` (same admission rule).
- `--mem-fraction-static`: SGLang's static pool is the weights plus the KV cache (the
  activations and the CUDA graphs live in the rest), so it is (planned weights + planned KV
  cache) over HBM, plus the same 3% workspace allowance, in [0.3, 0.95].
- `--kv-cache-dtype fp8_e4m3` / `--quantization fp8`: the planned KV and weight precisions.
- multi-node replicas: `--nnodes`, `--node-rank`, `--dist-init-addr` (SGLang's own
  multi-node launch: every node runs the same command with its rank).
- disaggregated plans: `--disaggregation-mode prefill|decode`,
  `--disaggregation-transfer-backend` (the plan's KV transfer backend) and, on prefill
  servers, `--disaggregation-bootstrap-port`; each pool's TP/PP its own. The router
  (sglang-router 0.3.2, `python3 -m sglang_router.launch_router --pd-disaggregation`) takes
  `--prefill URL BOOTSTRAP_PORT` per prefill server and `--decode URL` per decode server.
"""

from __future__ import annotations

import math

from rightsize.export.disagg_view import PoolView
from rightsize.export.names import Arg, ShellExpr
from rightsize.export.plan_view import ServingView
from rightsize.export.vllm import (
    UTILISATION_CEILING,
    UTILISATION_FLOOR,
    WORKSPACE_FRACTION,
    kv_bytes_per_token_per_gpu,
    max_num_seqs,
)

SGLANG_VERSION = "SGLang v0.5.19"
COMMAND = ("python3", "-m", "sglang.launch_server")
DIST_PORT = 20000  # the leader's torch.distributed rendezvous port (--dist-init-addr HOST:PORT)
BOOTSTRAP_PORT = 8998  # a prefill server's KV-transfer bootstrap port (SGLang's default)
SERVER_PORT = 30000  # a pool server's HTTP port when a router fronts the pools (SGLang's default)
ROUTER_VERSION = "sglang-router 0.3.2"
ROUTER_COMMAND = ("python3", "-m", "sglang_router.launch_router")


def static_memory_bytes(v: ServingView) -> float:
    """Weights plus the KV pool one GPU holds (SGLang's `mem_fraction_static` covers both)."""
    if v.kv_bytes_per_token and v.kv_capacity_tokens:
        kv_tokens = v.kv_capacity_tokens
    else:
        kv_tokens = max_num_seqs(v) * v.max_model_len
    return v.weights_bytes_per_gpu + kv_tokens * kv_bytes_per_token_per_gpu(v)


def mem_fraction_static(v: ServingView) -> float:
    frac = static_memory_bytes(v) / v.hw.hbm_bytes + WORKSPACE_FRACTION
    return round(min(UTILISATION_CEILING, max(UTILISATION_FLOOR, frac)), 2)


def pool_of(v: ServingView, role: str | None) -> PoolView | None:
    """The pool a disaggregated server of `role` belongs to (None: an aggregated replica)."""
    if not role or v.disaggregated is None:
        return None
    return v.disaggregated.prefill if role == "prefill" else v.disaggregated.decode


def nodes_per_server(v: ServingView, role: str | None = None) -> int:
    """Nodes one server spans: the replica's for an aggregated plan; for a disaggregated pool
    its own TP x PP over the node's GPUs (the pools may be shaped apart)."""
    pool = pool_of(v, role)
    if pool is None:
        return v.nodes_per_replica
    return max(1, math.ceil(pool.gpus / v.hw.gpus_per_node))


def sglang_arg_list(
    v: ServingView,
    *,
    node_rank: int | str | ShellExpr | None = None,
    dist_addr: str | ShellExpr | None = None,
    role: str | None = None,
) -> list[Arg]:
    """The server arguments (model and port left out). `node_rank` and `dist_addr` for a
    replica over several nodes; `role` (prefill / decode) for a disaggregated pool."""
    tp, pp, ep = v.tp, v.pp, v.ep
    pool = pool_of(v, role)
    if pool is not None:
        tp, pp, ep = pool.tp, pool.pp, pool.ep
    nodes = nodes_per_server(v, role)
    # Wide EP (experts over more GPUs than TP x PP): SGLang's tp_size is the whole group and
    # attention runs data-parallel, ep / tp ranks (--enable-dp-attention --dp-size, as
    # SGLang's large-scale EP deployment and its LWS PD guide run DeepSeek).
    dp = ep // (tp * pp) if ep > tp * pp else 1
    args: list[Arg] = [
        ("--served-model-name", v.model.name),
        ("--tp-size", tp * dp),
        ("--context-length", v.max_model_len),
        ("--max-running-requests", max_num_seqs(v)),
        ("--mem-fraction-static", mem_fraction_static(v)),
        ("--kv-cache-dtype", "fp8_e4m3" if v.kv_precision.startswith("fp8") else "auto"),
    ]
    if pp > 1:
        args.append(("--pp-size", pp))
    if dp > 1:
        args += [("--dp-size", dp), ("--enable-dp-attention", None)]
    if ep > 1:
        args.append(("--ep-size", ep))
    if v.weight_precision == "fp8":
        args.append(("--quantization", "fp8"))
    if nodes > 1:
        if node_rank is None or dist_addr is None:
            raise ValueError("a multi-node replica needs node_rank and dist_addr")
        args += [
            ("--nnodes", nodes),
            ("--node-rank", node_rank),
            ("--dist-init-addr", dist_addr),
        ]
    if role and v.disaggregated:
        args += [
            ("--disaggregation-mode", role),
            ("--disaggregation-transfer-backend", v.disaggregated.transfer_backend),
        ]
        if role == "prefill":
            args.append(("--disaggregation-bootstrap-port", BOOTSTRAP_PORT))
    args.append(("--enable-metrics", None))
    return args
