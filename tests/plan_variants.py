"""Training plans moved onto other node types (for export tests over the whole catalog)."""

from __future__ import annotations

import copy

from rightsize.catalog import get_node


def on_node(plan: dict, node: str, n_nodes: int, tp: int | None = None) -> dict:
    """A copy of a training plan moved onto `node`: `n_nodes` whole nodes, TP the node's GPUs
    (at most 8) or `tp`, no pipeline, the rest data parallel; host needs at most what the node
    has per GPU (the plan's own need, else the node's share)."""
    nd = get_node(node)
    p = copy.deepcopy(plan)
    p["name"] = p["spec"]["name"] = f"llama3-70b-on-{node}"
    gpus = n_nodes * nd.gpus_per_node
    tp = tp or min(8, nd.gpus_per_node)
    p["best"] |= {"accelerator": nd.accelerator, "node": node, "gpus": gpus}
    p["best"]["parallel"] |= {"tp": tp, "pp": 1, "vpp": 1, "dp": gpus // tp, "cp": 1, "ep": 1}
    need = p["sizing"]["nodes"]
    need |= {"node": node, "gpus": gpus, "gpus_per_node": nd.gpus_per_node, "nodes": n_nodes}
    need["cpu_cores_need_per_gpu"] = min(need["cpu_cores_need_per_gpu"], nd.cpu_cores // nd.gpus_per_node)
    need["host_memory_need_bytes_per_gpu"] = min(
        need["host_memory_need_bytes_per_gpu"], nd.host_memory_bytes / nd.gpus_per_node / 2
    )
    return p
