"""TPU serving plans only what the Kubernetes export can deploy (issues 28, 30): a replica is
one TPU slice of a shape Google offers; on v5e and v5p it stays on one host (Google documents
v5e inference as single-host, multi-host only with Sax), on v6e and TPU7x it may span the
4-chip hosts of a multi-host slice, which the export writes as a LeaderWorkerSet running vLLM
TPU over Ray (tpu-inference's GKE multi-host example). Manifests are validated against the
Kubernetes and LWS schemas as in test_export_kubernetes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.tpu_slices import tpu_slices
from rightsize.errors import BadInput, Infeasible
from rightsize.export import render_files
from rightsize.search.serving import plan_serving
from rightsize.search.serving_layouts import replica_options
from rightsize.spec import load_spec

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from test_export_kubernetes import _by_kind  # noqa: E402

EX = Path(__file__).resolve().parent.parent / "examples" / "llama3-70b-chat-serving.yaml"


def _spec(tmp_path: Path, acc: str, precision: str, tp: int | None = None) -> Any:
    d = yaml.safe_load(EX.read_text())
    d["targets"] = {"accelerators": [acc], "objective": "cost", **({"tp": tp} if tp else {})}
    d["serving"]["weight_precision"] = d["serving"]["kv_precision"] = precision
    d.pop("infrastructure", None)
    path = tmp_path / f"{acc}-{precision}-{tp}.yaml"
    path.write_text(yaml.safe_dump(d))
    return load_spec(path)


def test_slice_shapes_come_from_googles_tables() -> None:
    v5e, v6e, v5p = tpu_slices("tpu-v5e"), tpu_slices("tpu-v6e"), tpu_slices("tpu-v5p")
    assert v5e is not None and v6e is not None and v5p is not None
    assert v5e.chip_counts == (1, 4, 8, 16, 32, 64, 128, 256)
    assert v5e.serving_chip_counts == (1, 4, 8) and not v5e.serving_multi_host
    assert "Sax" in v5e.serving_source  # Google: multi-host v5e inference only with Sax
    assert v6e.serving_chip_counts == v6e.chip_counts and 16 in v6e.serving_chip_counts
    assert v5p.serving_chip_counts == (4,)
    assert v6e.hosts(8) == 1 and v6e.hosts(16) == 4 and v6e.hosts(256) == 64
    assert v6e.topology(16) == "4x4" and v6e.topology(2) is None
    assert tpu_slices("h100-sxm") is None


@pytest.mark.parametrize(
    ("acc", "precision"), [("tpu-v5e", "int8"), ("tpu-v6e", "bf16"), ("tpu-v5p", "bf16")]
)
def test_every_replica_tried_is_a_deployable_slice(tmp_path: Path, acc: str, precision: str) -> None:
    spec = _spec(tmp_path, acc, precision)
    a = get_accelerator(acc)
    slices = tpu_slices(acc)
    assert slices is not None
    reps = replica_options(spec, a, node_for(acc), precision, {})
    assert reps, "some slice holds the model"
    assert {r.tp for r in reps} <= set(slices.serving_chip_counts)


def test_v5e_keeps_a_replica_on_one_host(tmp_path: Path) -> None:
    # 70B in bf16 needs more than the 128 GB of HBM of a v5e-8 host; before, the planner
    # offered tp32 over v5e hosts, which GKE serving cannot run: now it says what would fit
    with pytest.raises(Infeasible) as err:
        plan_serving(_spec(tmp_path, "tpu-v5e", "bf16"))
    assert "stays on one host: tpu-v5e on 8 chips" in str(err.value) and "Sax" in str(err.value)


def test_v6e_multi_host_replica_is_planned_on_four_chip_hosts_and_says_why(tmp_path: Path) -> None:
    plan = plan_serving(_spec(tmp_path, "tpu-v6e", "bf16", tp=16))
    lay = plan.best.layout
    assert lay is not None and (lay.gpus, lay.nodes, lay.gpus_per_node) == (16, 4, 4)
    note = next(a for a in plan.assumptions if "slice of 16 chips" in a)
    assert "4x4" in note and "4 hosts of 4 chips" in note and "sglang-jax" in note


def _plan(acc: str, node: str, tp: int, nodes: int, precision: str = "bf16") -> dict[str, Any]:
    plan = plan_dict("llama3-70b-chat-serving")
    plan["best"].update(accelerator=acc, node=node, tp=tp, pp=1, nodes_per_replica=nodes)
    plan["best"].update(weight_precision=precision, kv_precision=precision)
    plan["best"].pop("layout", None)
    plan["sizing"]["cost"]["priced_instance"] = None
    return plan


def test_v6e_multi_host_slice_exports_as_a_leader_worker_set() -> None:
    objs = _by_kind(render_files(_plan("tpu-v6e", "tpu-v6e-host", 16, 4), "kubernetes"))
    lws = objs["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]
    assert lws["size"] == 4
    for role in ("leaderTemplate", "workerTemplate"):
        pod = lws[role]["spec"]
        c = pod["containers"][0]
        assert c["resources"]["limits"]["google.com/tpu"] == 4
        assert pod["nodeSelector"] == {
            "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
            "cloud.google.com/gke-tpu-topology": "4x4",
        }
        assert {"name": "TPU_MULTIHOST_BACKEND", "value": "ray"} in c["env"]
        assert "vllm-tpu" in c["image"] and "nvidia.com/gpu" not in str(c)
    leader = lws["leaderTemplate"]["spec"]["containers"][0]["args"][0]
    assert "--tensor-parallel-size 16" in leader and "--distributed-executor-backend ray" in leader


def test_multi_host_v5e_replica_is_refused_with_googles_reason() -> None:
    with pytest.raises(BadInput, match="Sax"):
        render_files(_plan("tpu-v5e", "tpu-v5e-host", 16, 4), "kubernetes")


def test_a_slice_laid_on_the_wrong_hosts_is_refused() -> None:
    with pytest.raises(BadInput, match="4 host"):
        render_files(_plan("tpu-v6e", "tpu-v6e-host", 16, 2), "kubernetes")


def test_gke_allocatable_memory_matches_the_published_calculator() -> None:
    # hatemosphere/gke-node-allocatable-memory-calculator README, from GKE's documented
    # reservations: a 150 GiB node leaves 140.1423 GiB to pods
    from rightsize.export.k8s_platform import gke_allocatable_bytes

    assert gke_allocatable_bytes(150 * 2**30) / 2**30 == pytest.approx(140.1423, abs=1e-4)


@pytest.mark.parametrize(("tp", "vm_bytes"), [(8, 384 * 2**30), (4, 192 * 2**30), (1, 48 * 2**30)])
def test_a_v5e_serving_pod_fits_its_vms_memory(tp: int, vm_bytes: float) -> None:
    # ct5lp-hightpu-8t/4t/1t have 384/192/48 GB (the API's memoryMb / 1024: GiB); the planner's
    # 64 GiB per chip would not schedule
    from rightsize.export.k8s_platform import gke_allocatable_bytes

    objs = _by_kind(render_files(_plan("tpu-v5e", "tpu-v5e-host", tp, 1), "kubernetes"))
    c = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    req = c["resources"]["requests"]
    assert req["google.com/tpu"] == tp
    assert int(req["memory"].removesuffix("Gi")) * 2**30 <= gke_allocatable_bytes(vm_bytes)


NODES = {
    "tpu-v5e": "tpu-v5e-host",
    "tpu-v5p": "tpu-v5p-host",
    "tpu-v6e": "tpu-v6e-host",
    "tpu-v7": "tpu-v7-host",
}
EVERY_PLANNED_SHAPE = [
    (acc, chips)
    for acc in NODES
    for chips in (tpu_slices(acc).serving_chip_counts if tpu_slices(acc) else ())  # type: ignore[union-attr]
    if chips <= 64
]


@pytest.mark.parametrize(("acc", "chips"), EVERY_PLANNED_SHAPE)
def test_every_slice_the_planner_offers_exports(acc: str, chips: int) -> None:
    slices = tpu_slices(acc)
    assert slices is not None
    hosts = slices.hosts(chips)
    objs = _by_kind(render_files(_plan(acc, NODES[acc], chips, hosts), "kubernetes"))
    if hosts == 1:
        pod = objs["Deployment"]["spec"]["template"]["spec"]
    else:
        lws = objs["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]
        assert lws["size"] == hosts
        pod = lws["workerTemplate"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["google.com/tpu"] * hosts == chips
    assert pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == slices.topology(chips)
    leader = (objs["Deployment"] if hosts == 1 else objs["LeaderWorkerSet"])["spec"]
    text = str(leader)
    # vLLM TPU's TP counts JAX devices: two per TPU7x chip (tpu-inference's tpu7x 2x2x2 example: TP 16)
    assert f"--tensor-parallel-size', '{chips * slices.devices_per_chip}'" in text or (
        f"--tensor-parallel-size {chips * slices.devices_per_chip} " in text
    )


def test_fp8_weights_on_v6e_are_refused_with_what_vllm_tpu_loads() -> None:
    # tpu-inference's quantization table: FP8 on TPU7x only; INT8 W8A8 and INT4 AWQ on v5/v6
    with pytest.raises(BadInput, match="int8 or int4"):
        render_files(_plan("tpu-v6e", "tpu-v6e-host", 8, 1, "fp8"), "kubernetes")


def test_int8_weights_on_v5e_say_which_checkpoint_to_serve() -> None:
    text = render_files(_plan("tpu-v5e", "tpu-v5e-host", 8, 1, "int8"), "kubernetes")["serving.yaml"]
    head = text.split("apiVersion")[0]
    assert "pre-quantized checkpoint" in head and "INT8 W8A8" in head
    assert "KV cache: the plan's int8 KV is not written" in head
    assert "--quantization" not in text and "--kv-cache-dtype" not in text
    fp8_v7 = render_files(_plan("tpu-v7", "tpu-v7-host", 4, 1, "fp8"), "kubernetes")["serving.yaml"]
    assert "pre-quantized checkpoint" in fp8_v7.split("apiVersion")[0]


def test_the_planner_offers_only_weights_vllm_tpu_loads(tmp_path: Path) -> None:
    with pytest.raises(Infeasible) as err:
        plan_serving(_spec(tmp_path, "tpu-v6e", "fp8"))
    assert "loads no fp8 weights on tpu-v6e" in str(err.value) and "int8" in str(err.value)
    best = plan_serving(_spec(tmp_path, "tpu-v5e", "int8")).best
    assert (best.weight_precision, best.tp) == ("int8", 8)  # 70B int8 on one 2x4 v5e host
