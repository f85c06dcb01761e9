"""Disaggregated serving on Kubernetes: the planner's prefill and decode pools as two
LeaderWorkerSets of SGLang servers behind sglang-router (SGLang's LWS PD guide's shape).

Every object passes kubernetes-validate (core kinds) or the LWS CRD's own schema; every
server's arguments pass SGLang v0.5.19's parser table and the router's pass sglang-router
0.3.2's (both dumped from the released wheels); the pools are sized as planned, the router
names each server by the DNS name LWS gives its leader, and the RDMA device is requested
exactly when the plan's KV transfer (or a server's own traffic) crosses the NICs."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.plan_view import serving_view

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from test_export_engines import MODEL, _parse, _plan  # noqa: E402
from test_export_kubernetes import _validate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SGLANG = "sglang_v0.5.19_server_args.json"
ROUTER = "sglang_router_v0.3.2_args.json"
RDMA = "rdma/rdma_shared_device_a"


@pytest.fixture(scope="module")
def deepseek_plan(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The wide-EP DeepSeek-V3 example planned with disaggregation forced on (plan JSON)."""
    from rightsize.api import plan
    from rightsize.report.render import result_dict, to_json

    spec = yaml.safe_load((ROOT / "examples" / "deepseek-v3-ep-serving.yaml").read_text())
    spec["serving"]["disaggregation"] = "always"
    path = tmp_path_factory.mktemp("deepseek") / "deepseek-v3-disagg.yaml"
    path.write_text(yaml.safe_dump(spec))
    return to_json(result_dict(plan(path)))


def _objects(plan: dict[str, Any], engine: str | None = None) -> list[dict[str, Any]]:
    text = render_files(plan, "kubernetes", engine=engine)["serving.yaml"]
    assert text.startswith("# Kubernetes disaggregated serving manifests")
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        _validate(d)  # kubernetes-validate (strict) or the vendored CRD schema
    return docs


def _words(args: list[str], rank: str = "1") -> list[str]:
    subst = {"$(MODEL)": MODEL, "$(LWS_WORKER_INDEX)": rank}
    return [subst.get(a, a).replace("$(LWS_LEADER_ADDRESS)", "10.0.0.1") for a in args]


def _check(plan: dict[str, Any]) -> dict[str, Any]:
    """Validate the export of `plan` against the plan; return what the checks saw."""
    v = serving_view(plan)
    d = v.disaggregated
    assert d is not None
    docs = _objects(plan)
    lws = {o["metadata"]["name"]: o for o in docs if o["kind"] == "LeaderWorkerSet"}
    name = next(o["metadata"]["name"] for o in docs if o["kind"] == "Service")
    assert set(lws) == {f"{name}-prefill", f"{name}-decode"}
    rdma_seen = set()
    for role, pool in (("prefill", d.prefill), ("decode", d.decode)):
        obj = lws[f"{name}-{role}"]
        t = obj["spec"]["leaderWorkerTemplate"]
        size = t["size"]
        assert obj["spec"]["replicas"] == pool.replicas
        assert obj["spec"]["networkConfig"]["subdomainPolicy"] == "Shared"  # <lws>-<i>.<lws> names
        for rank, pod in (("0", t["leaderTemplate"]["spec"]), ("1", t["workerTemplate"]["spec"])):
            c = pod["containers"][0]
            ns = _parse(SGLANG, _words(c["args"], rank))
            assert ns.model_path == MODEL and ns.port == 30000
            assert ns.disaggregation_mode == role and ns.disaggregation_transfer_backend == d.transfer_backend
            assert (ns.disaggregation_bootstrap_port is not None) == (role == "prefill")
            # SGLang's tp_size is the whole server; wide EP splits it into data-parallel attention
            assert ns.tp_size == pool.gpus and (ns.dp_size or 1) * pool.tp * pool.pp == pool.gpus
            assert (ns.ep_size or 1) == pool.ep
            if size > 1:
                assert (
                    ns.nnodes == size and ns.node_rank == int(rank) and ns.dist_init_addr == "10.0.0.1:20000"
                )
            else:
                assert ns.nnodes is None
            gpus = c["resources"]["limits"]["nvidia.com/gpu"]
            assert gpus * size == pool.gpus  # the pods of one server hold its GPUs
            rdma_seen.add(RDMA in c["resources"]["limits"])
            if RDMA in c["resources"]["limits"]:
                assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
    router = next(o for o in docs if o["kind"] == "Deployment")
    rc = router["spec"]["template"]["spec"]["containers"][0]
    assert rc["command"][-1] == "sglang_router.launch_router"
    ns = _parse(ROUTER, rc["args"])
    assert ns.pd_disaggregation and ns.port == 8000
    pre, dec = f"{name}-prefill", f"{name}-decode"
    assert ns.prefill == [[f"http://{pre}-{i}.{pre}:30000", "8998"] for i in range(d.prefill.replicas)]
    assert ns.decode == [[f"http://{dec}-{j}.{dec}:30000"] for j in range(d.decode.replicas)]
    svc = next(o for o in docs if o["kind"] == "Service")
    pod_labels = router["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    budgets = [o for o in docs if o["kind"] == "PodDisruptionBudget"]
    for b, role in zip(budgets, ("prefill", "decode"), strict=True):
        sel = b["spec"]["selector"]["matchLabels"]
        assert (
            sel.items()
            <= lws[f"{name}-{role}"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"][
                "labels"
            ].items()
        )
    assert len(rdma_seen) == 1
    return {"rdma": rdma_seen.pop(), "sizes": {r: lws[f"{name}-{r}"]["spec"]["leaderWorkerTemplate"]["size"] for r in ("prefill", "decode")}}  # fmt: skip


def test_llama3_70b_disaggregated_plan_exports_as_planned() -> None:
    plan = plan_dict("llama3-70b-disaggregated-serving")
    assert plan["best"]["disaggregation"]["chosen"] == "disaggregated"
    seen = _check(plan)
    # the planner sends the KV cache over the RDMA NICs (9 prefill servers cannot all sit
    # beside one of 3 decode servers in a node): every pool pod requests the RDMA device
    assert plan["best"]["disaggregation"]["kv_transfer"]["link"].startswith("RDMA")
    assert seen["rdma"] and seen["sizes"] == {"prefill": 1, "decode": 1}


def test_deepseek_v3_wide_ep_pools_span_nodes(deepseek_plan: str) -> None:
    plan = json.loads(deepseek_plan)
    dis = plan["best"]["disaggregation"]
    assert dis["chosen"] == "disaggregated"
    seen = _check(plan)
    assert seen["sizes"] == {"prefill": 2, "decode": 2} and seen["rdma"]  # EP16 over two 8-GPU nodes


def test_rdma_only_when_the_kv_crosses_the_nics() -> None:
    near = _plan(
        disaggregated={"prefill": {"replicas": 1, "tp": 4}, "decode": {"replicas": 1, "tp": 4},
                       "transfer_backend": "nixl", "kv_link": "NVLink (scale-up)"}
    )  # fmt: skip
    assert not _check(near)["rdma"]
    far = _plan(
        disaggregated={"prefill": {"replicas": 3, "tp": 2}, "decode": {"replicas": 2, "tp": 16},
                       "transfer_backend": "mooncake", "kv_link": "RDMA NIC (8 x 400 Gb/s per node)"}
    )  # fmt: skip
    seen = _check(far)
    assert seen["rdma"] and seen["sizes"] == {"prefill": 1, "decode": 2}


def test_other_engines_are_refused_with_the_reason() -> None:
    dis = _plan(disaggregated={"prefill": {"replicas": 2, "tp": 2}, "decode": {"replicas": 4, "tp": 2}})
    with pytest.raises(BadInput, match="Export with --engine sglang"):
        render_files(dis, "kubernetes", engine="vllm")
    assert _objects(dis, engine="sglang")  # the default for a disaggregated plan is SGLang too


def test_wide_ep_replica_is_the_whole_group_in_sglang() -> None:
    """The aggregated wide-EP plan (DeepSeek-V3, EP16 over two nodes): SGLang's tp_size is the
    group, attention data-parallel over it, 8 GPUs per pod (it was tp-size 1 and 1 GPU a pod)."""
    plan = plan_dict("deepseek-v3-ep-serving")
    docs = [
        d for d in yaml.safe_load_all(render_files(plan, "kubernetes", engine="sglang")["serving.yaml"]) if d
    ]
    for d in docs:
        _validate(d)
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2
    for rank, pod in (("0", t["leaderTemplate"]["spec"]), ("1", t["workerTemplate"]["spec"])):
        c = pod["containers"][0]
        ns = _parse(SGLANG, _words(c["args"], rank))
        assert (ns.tp_size, ns.dp_size, ns.enable_dp_attention, ns.ep_size, ns.nnodes) == (
            16,
            16,
            True,
            16,
            2,
        )
        assert c["resources"]["limits"]["nvidia.com/gpu"] == 8


def test_slurm_disaggregated_servers_span_nodes_with_their_ranks(deepseek_plan: str) -> None:
    """The same wide-EP disaggregated plan as a Slurm job: each 16-GPU server on two nodes,
    one srun per node with its rank and the server's own rendezvous, the router naming each
    server's first node."""
    plan = json.loads(deepseek_plan)
    text = render_files(plan, "slurm", engine="sglang")["serve.sbatch"]
    assert "#SBATCH --nodes=4" in text and "#SBATCH --gpus-per-node=8" in text
    joined = text.replace(" \\\n", " ")
    addr = {}
    seen = []
    for line in joined.splitlines():
        if line.startswith("SERVER_ADDR="):
            addr = {"$SERVER_ADDR": line.split("=", 1)[1].strip('"')}
        if "sglang.launch_server" not in line:
            continue
        node = line.split('--nodelist="', 1)[1].split('"', 1)[0]
        words = shlex.split(line.replace("$MODEL", MODEL).replace("$SERVER_ADDR", addr["$SERVER_ADDR"]))
        ns = _parse(SGLANG, [w for w in words[words.index("sglang.launch_server") + 1 :] if w != "&"])
        seen.append((node, ns.disaggregation_mode, ns.node_rank, ns.dist_init_addr, ns.tp_size, ns.ep_size))
    assert seen == [
        ("${NODES[0]}", "prefill", 0, "${NODES[0]}:20000", 16, 16),
        ("${NODES[1]}", "prefill", 1, "${NODES[0]}:20000", 16, 16),
        ("${NODES[2]}", "decode", 0, "${NODES[2]}:20000", 16, 16),
        ("${NODES[3]}", "decode", 1, "${NODES[2]}:20000", 16, 16),
    ]
    router = next(ln for ln in joined.splitlines() if "sglang_router.launch_router" in ln)
    words = shlex.split(router)
    ns = _parse(ROUTER, [w for w in words[words.index("sglang_router.launch_router") + 1 :] if w != "&"])
    assert ns.prefill == [["http://${NODES[0]}:30000", "8998"]] and ns.decode == [
        ["http://${NODES[2]}:30000"]
    ]
