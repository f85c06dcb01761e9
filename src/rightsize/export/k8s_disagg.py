"""Kubernetes manifests for a disaggregated serving plan: SGLang's prefill and decode pools as
two LeaderWorkerSets behind sglang-router, the shape of SGLang's own guide "LWS Based PD
Deploy" (sgl-project/sglang, docs/references/multi_node_deployment/lws_pd/lws_pd_deploy.md:
a prefill LWS and a decode LWS running `sglang.launch_server --disaggregation-mode
prefill|decode`, and a Deployment running `sglang_router.launch_router --pd-disaggregation`
in the SGLang image, with a Service in front of it). The image carries both: SGLang's
docker/Dockerfile builds sgl-router from the release's own tree and installs the mooncake and
NIXL transfer engines.

- Each pool is one LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, LWS v0.10): `replicas` the
  pool's servers as planned (P prefill, D decode), `size` the nodes one server spans (its TP x
  PP over the node's GPUs); a server over several nodes runs SGLang's own multi-node launch
  (`--nnodes`, `--node-rank $(LWS_WORKER_INDEX)`, `--dist-init-addr $(LWS_LEADER_ADDRESS):PORT`).
- The router lists every server by its leader's stable DNS name: LWS's headless Service
  (`networkConfig.subdomainPolicy: Shared`, named after the LWS) gives group i's leader
  `<lws>-<i>.<lws>` (LWS sets LWS_LEADER_ADDRESS to that name; kubernetes-sigs/lws pod webhook
  tests: `test-sample-1.test-sample.<namespace>`). Each prefill server is named with its KV
  bootstrap port, so a decode server fetches the KV from the very server that prefilled it
  (a load-balanced Service in between would break that pairing beyond one prefill server).
- The KV cache crosses over the plan's transfer backend (`--disaggregation-transfer-backend`
  mooncake|nixl). When the planner's link for it is the RDMA NICs, or a server spans nodes,
  every pool pod requests the RDMA device (`k8s_platform.rdma`) and the IPC_LOCK capability
  (RDMA pins host memory), as the training export does.
- No autoscaler: the router's server list is static, so the pools change size by
  re-planning and re-exporting; a PodDisruptionBudget per pool lets a drain take one pod at
  a time.
"""

from __future__ import annotations

from typing import Any

from rightsize.errors import BadInput
from rightsize.export.disagg_view import DisaggView, PoolView
from rightsize.export.header import comment_block
from rightsize.export.k8s_common import dump, meta, object_name, pod_requests, shm
from rightsize.export.k8s_platform import Image, Stack, node_selector, rdma
from rightsize.export.kubernetes import served_model
from rightsize.export.names import argv
from rightsize.export.plan_view import ServingView
from rightsize.export.serve_engines import engine_image, pick_engine
from rightsize.export.sglang import (
    BOOTSTRAP_PORT,
    COMMAND,
    DIST_PORT,
    ROUTER_COMMAND,
    ROUTER_VERSION,
    SERVER_PORT,
    SGLANG_VERSION,
    nodes_per_server,
    pool_of,
    sglang_arg_list,
)

ROUTER_PORT = 8000  # the Service's port: clients talk to the router
ROLES = ("prefill", "decode")
LEADER_ADDR = f"$(LWS_LEADER_ADDRESS):{DIST_PORT}"
STARTUP_BUDGET_S = 1800  # weights download and load, CUDA graphs: the startup probe's patience


def pool_name(name: str, role: str) -> str:
    return f"{name}-{role}"


def server_url(name: str, role: str, group: int) -> str:
    """Group `group`'s leader in the pool's LWS, by its stable name (LWS headless Service)."""
    lws = pool_name(name, role)
    return f"http://{lws}-{group}.{lws}:{SERVER_PORT}"


def router_argv(v: ServingView, name: str) -> list[str]:
    """sglang-router's arguments: every prefill server with its KV bootstrap port (`--prefill
    URL PORT`, the flag takes both words), every decode server, then where the router listens."""
    d = _pools(v)
    words = ["--pd-disaggregation"]
    for i in range(d.prefill.replicas):
        words += ["--prefill", server_url(name, "prefill", i), str(BOOTSTRAP_PORT)]
    for j in range(d.decode.replicas):
        words += ["--decode", server_url(name, "decode", j)]
    return [*words, "--host", "0.0.0.0", "--port", str(ROUTER_PORT)]


def _pools(v: ServingView) -> DisaggView:
    assert v.disaggregated is not None
    return v.disaggregated


def needs_rdma(v: ServingView) -> bool:
    """The pool pods need the RDMA device: the KV cache crosses the RDMA NICs, or a server's
    own tensor / pipeline traffic does (it spans nodes)."""
    d = _pools(v)
    return d.kv_over_rdma or any(nodes_per_server(v, r) > 1 for r in ROLES)


def _server_args(v: ServingView, role: str, rank: int | str | None) -> list[str]:
    args = sglang_arg_list(v, role=role, node_rank=rank, dist_addr=LEADER_ADDR)  # rank used over nodes only
    return ["--model-path", "$(MODEL)", *argv(args), "--host", "0.0.0.0", "--port", str(SERVER_PORT)]


def _probes() -> dict[str, Any]:
    health = {"httpGet": {"path": "/health", "port": SERVER_PORT}}
    return {
        "startupProbe": {**health, "periodSeconds": 10, "failureThreshold": STARTUP_BUDGET_S // 10},
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**health, "periodSeconds": 5, "failureThreshold": 2},
    }


def _container(
    v: ServingView, st: Stack, image: Image, role: str, model: str, args: list[str], name: str
) -> dict[str, Any]:
    pool = pool_of(v, role)
    assert pool is not None
    nodes = nodes_per_server(v, role)
    gpus = -(-pool.gpus // nodes)  # GPUs per pod
    extra: dict[str, int] = {}
    c: dict[str, Any] = {
        "name": name,
        "image": image.image,
        "command": list(COMMAND),
        "args": args,
        "ports": [{"containerPort": SERVER_PORT, "name": "http"}]
        + ([{"containerPort": BOOTSTRAP_PORT, "name": "kv-bootstrap"}] if role == "prefill" else []),
        "env": [
            {"name": "MODEL", "value": model},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}},
        ],
        "volumeMounts": [shm()[1]],
    }  # fmt: skip
    if needs_rdma(v):  # the device and the right to pin memory for RDMA
        r = rdma()
        extra[r.resource] = r.per_pod
        c["securityContext"] = {"capabilities": {"add": [r.capability]}}
    c["resources"] = pod_requests(
        gpus, v.cpu_cores_need_per_gpu * gpus, v.host_memory_need_bytes_per_gpu * gpus, st.resource, extra
    )
    return c


def _pod_spec(container: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container], "volumes": [shm()[0]]}
    if selector:
        spec["nodeSelector"] = selector
    return spec


def _pool_lws(
    v: ServingView, st: Stack, image: Image, name: str, role: str, model: str, selector: dict[str, str]
) -> dict[str, Any]:
    pool = pool_of(v, role)
    assert pool is not None
    nodes = nodes_per_server(v, role)
    lws = pool_name(name, role)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": role}
    leader = {
        **_container(v, st, image, role, model, _server_args(v, role, 0), f"sglang-{role}"),
        **_probes(),
    }
    worker = _container(
        v, st, image, role, model, _server_args(v, role, "$(LWS_WORKER_INDEX)"), f"sglang-{role}-worker"
    )
    template: dict[str, Any] = {
        "size": nodes,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": {"metadata": {"labels": {**labels, "role": "leader"}}, "spec": _pod_spec(leader, selector)},
        "workerTemplate": {"metadata": {"labels": labels}, "spec": _pod_spec(worker, selector)},
    }  # fmt: skip
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta(lws, v.header, labels),
        "spec": {
            "replicas": pool.replicas,
            "leaderWorkerTemplate": template,
            "networkConfig": {"subdomainPolicy": "Shared"},
        },
    }


def _router(v: ServingView, image: Image, name: str) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "router"}
    container = {
        "name": "sglang-router",
        "image": image.image,
        "command": list(ROUTER_COMMAND),
        "args": router_argv(v, name),
        "ports": [{"containerPort": ROUTER_PORT, "name": "http"}],
        "readinessProbe": {"tcpSocket": {"port": ROUTER_PORT}, "periodSeconds": 5},
        "livenessProbe": {"tcpSocket": {"port": ROUTER_PORT}, "periodSeconds": 10, "failureThreshold": 3},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(f"{name}-router", v.header, labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(name, v.header, labels),
        "spec": {
            "selector": labels,
            "ports": [{"name": "http", "port": ROUTER_PORT, "targetPort": ROUTER_PORT}],
        },
    }
    return [deployment, service]


def _budget(v: ServingView, name: str, role: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": role}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(pool_name(name, role), v.header, labels),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}},
    }


def _layout(pool: PoolView) -> str:
    text = f"TP{pool.tp}" + (f" x PP{pool.pp}" if pool.pp > 1 else "")
    return text + (f", EP{pool.ep} ({pool.gpus} GPUs)" if pool.ep > 1 else "")


def disaggregated_files(
    v: ServingView, node_labels: dict[str, str] | None = None, engine: str | None = None
) -> dict[str, str]:
    """`serving.yaml`: the prefill and decode LeaderWorkerSets, the router and its Service,
    a disruption budget per pool."""
    d = _pools(v)
    engine_name = pick_engine(v, engine or "sglang")
    if engine_name != "sglang":
        raise BadInput(
            f"The plan serves prefill and decode in separate pools; the {engine_name} export writes "
            "aggregated replicas.",
            "Disaggregated serving is written for SGLang (its prefill/decode modes, KV transfer and router).",
            "Export with --engine sglang.",
        )
    st, image = engine_image(v, "sglang")
    name = object_name(v.header)
    model, model_why = served_model(v)
    docs: list[dict[str, Any]] = []
    for role in ROLES:
        pool = pool_of(v, role)
        assert pool is not None
        gpus = pool.gpus
        selector = node_selector(v.hw, v.priced_instance, node_labels, tpu_chips=gpus)
        docs.append(_pool_lws(v, st, image, name, role, model, selector))
    docs += _router(v, image, name)
    docs += [_budget(v, name, role) for role in ROLES]
    where = ", ".join(f"{k}={val}" for k, val in selector.items()) or "any node with the device"
    rdma_line = (
        f"RDMA: each pool pod requests {rdma().resource} and IPC_LOCK"
        + (f" (KV over {d.kv_link})" if d.kv_over_rdma else " (a server spans nodes)")
        if needs_rdma(v)
        else f"no RDMA device requested (KV over {d.kv_link or 'an unnamed link'}, each server in one node)"
    )
    lines = [
        f"prefill pool: {d.prefill.replicas} server(s) x {_layout(d.prefill)} ({nodes_per_server(v, 'prefill')} "
        f"pod(s) each); decode pool: {d.decode.replicas} server(s) x {_layout(d.decode)} "
        f"({nodes_per_server(v, 'decode')} pod(s) each); {d.prefill.replicas}P{d.decode.replicas}D on "
        f"{v.hw.accelerator} ({st.resource})",
        f"KV transfer: --disaggregation-transfer-backend {d.transfer_backend}; {rdma_line}; RDMA devices not "
        "named (--disaggregation-ib-device unset: the transfer engine's own choice); name yours if it picks wrong",
        "router: python3 -m sglang_router.launch_router --pd-disaggregation in the SGLang image (its "
        "docker/Dockerfile builds sgl-router from the release's tree and installs mooncake-transfer-engine and "
        f"nixl), as SGLang's LWS PD guide runs it; arguments checked against {ROUTER_VERSION}'s parser; Service "
        f"{name}:{ROUTER_PORT}; no resource requests written for it (no measured figure); servers listed by their "
        "LWS leader names",
        f"image {image.image} ({image.source})",
        f"model: {model_why}",
        f"nodes: {where}",
        "autoscaling: none (the router's server list is static): re-plan and re-export to resize the pools",
        "disruption budget: at most 1 pod of each pool down at a time",
    ]
    head = comment_block(
        v.header,
        f"Kubernetes disaggregated serving manifests ({SGLANG_VERSION}, {ROUTER_VERSION}, LWS v0.10)",
        lines,
    )
    return {"serving.yaml": dump(head, docs)}


__all__ = ["disaggregated_files", "needs_rdma", "router_argv", "server_url"]
