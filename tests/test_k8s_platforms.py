"""Every accelerator with its own stack on Kubernetes: the device plugin's resource, its
image, GKE's TPU selectors, and never `nvidia.com/gpu` or NCCL settings on a part that is
not NVIDIA; a stack the export does not write is refused with what is missing. Objects are
validated as in test_export_kubernetes (Kubernetes OpenAPI, vendored CRD schemas)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.plan_view import serving_view
from rightsize.export.vllm import gpu_memory_bytes, gpu_memory_utilization

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from test_export_kubernetes import _by_kind  # noqa: E402

# accelerator, node, TP of a replica, resource, priced instance, node labels expected
SERVING = [
    ("h100-sxm", "hgx-h100", 2, "nvidia.com/gpu", "aws p5.48xlarge (8 GPUs) in us-east-1",
     {"node.kubernetes.io/instance-type": "p5.48xlarge"}),
    ("mi300x", "mi300x-platform", 2, "amd.com/gpu", "estimate BM.GPU.MI300X.8 (8 GPUs) in us-east-1", {}),
    ("trn2", "trn2-48xlarge", 4, "aws.amazon.com/neuron", "aws trn2.48xlarge (16 GPUs) in us-east-1",
     {"node.kubernetes.io/instance-type": "trn2.48xlarge"}),
    ("tpu-v5p", "tpu-v5p-host", 4, "google.com/tpu", "gcp ct5p-hightpu-4t (4 GPUs) in us-east5",
     {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice", "cloud.google.com/gke-tpu-topology": "2x2x1"}),
    ("tpu-v6e", "tpu-v6e-host", 8, "google.com/tpu", "gcp ct6e-standard-8t (8 GPUs) in us-east5",
     {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x4"}),
    ("gaudi3", "gaudi3-hls2", 2, "habana.ai/gaudi", None, {}),  # Intel's vLLM fork (export.k8s_gaudi)
]  # fmt: skip


def _on(plan: dict[str, Any], acc: str, node: str, priced: str | None) -> dict[str, Any]:
    plan["best"]["accelerator"], plan["best"]["node"] = acc, node
    plan["sizing"]["cost"]["priced_instance"] = priced
    return plan


def _serving_plan(acc: str, node: str, tp: int, priced: str | None) -> dict[str, Any]:
    plan = _on(plan_dict("llama3-70b-chat-serving"), acc, node, priced)
    plan["best"]["tp"] = tp
    if acc.startswith("tpu-"):  # vLLM TPU loads no fp8 weights on v5p/v6e (test_tpu_serving_slices)
        plan["best"]["weight_precision"] = plan["best"]["kv_precision"] = "bf16"
    return plan


def _no_nvidia(text: str, vendor_is_nvidia: bool) -> None:
    if not vendor_is_nvidia:
        assert "nvidia.com/gpu" not in text and "NCCL_" not in text and "nvcr.io" not in text
        assert "vllm/vllm-openai" not in text


@pytest.mark.parametrize(("acc", "node", "tp", "resource", "priced", "labels"), SERVING)
def test_serving_on_each_accelerator(
    acc: str, node: str, tp: int, resource: str, priced: str, labels: dict[str, str]
) -> None:
    files = render_files(_serving_plan(acc, node, tp, priced), "kubernetes")
    text = files["serving.yaml"]
    _no_nvidia(text, acc.startswith("h"))
    objs = _by_kind(files)  # every object valid against its schema
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["resources"]["limits"][resource] == tp and c["resources"]["requests"][resource] == tp
    assert [r for r in c["resources"]["limits"] if r != "memory"] == [resource]
    assert pod.get("nodeSelector", {}) == labels
    assert ":" in c["image"] and not c["image"].endswith(":latest")
    args = c["args"]
    expected_tp = tp * 4 if acc == "trn2" else tp  # Neuron counts logical NeuronCores
    assert args[args.index("--tensor-parallel-size") + 1] == str(expected_tp)


def test_gaudi_replica_over_nodes_is_refused_with_what_is_missing() -> None:
    with pytest.raises(BadInput, match="one node per replica") as err:
        plan = _serving_plan("gaudi3", "gaudi3-hls2", 16, None)
        plan["best"]["nodes_per_replica"] = 2
        render_files(plan, "kubernetes")
    assert "HCCL_SOCKET_IFNAME" in err.value.why


def test_tpu_replica_without_a_single_host_slice_is_refused() -> None:
    with pytest.raises(BadInput, match="single-host and multi-host slices"):
        render_files(_serving_plan("tpu-v6e", "tpu-v6e-host", 2, None), "kubernetes")


@pytest.mark.parametrize(
    ("acc", "node", "stack"),
    [("gaudi3", "gaudi3-hls2", "Habana"), ("trn2", "trn2-48xlarge", "NeuronX")],
)  # fmt: skip
def test_training_on_a_non_gpu_part_is_refused_naming_its_stack(acc: str, node: str, stack: str) -> None:
    plan = _on(plan_dict("llama3-70b-pretrain"), acc, node, None)
    with pytest.raises(BadInput, match=stack):
        render_files(plan, "kubernetes")


def test_amd_training_uses_rocm_and_rccl_names() -> None:
    plan = _on(plan_dict("llama3-70b-pretrain"), "mi300x", "mi300x-platform", None)
    files = render_files(plan, "kubernetes")
    text = "".join(files.values())
    assert (
        "nvidia.com/gpu" not in text and "nvcr.io" not in text and "CUDA_DEVICE_MAX_CONNECTIONS" not in text
    )
    objs = _by_kind(files)
    job = objs["JobSet"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    c = job["template"]["spec"]["containers"][0]
    assert c["image"].startswith("rocm/") and c["resources"]["limits"]["amd.com/gpu"] == 8
    quota = {r["name"] for r in objs["ClusterQueue"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert "amd.com/gpu" in quota and "nvidia.com/gpu" not in quota
    assert "/workspace/Megatron-LM/pretrain_gpt.py" in c["args"][0]  # where the ROCm image carries it
    with pytest.raises(BadInput, match="carries megatron only"):
        render_files(plan, "kubernetes", "torchtitan")


@pytest.mark.parametrize("example", ["llama2-7b-batch1", "llama3-70b-chat-serving"])
def test_gpu_memory_utilization_holds_the_plan(example: str) -> None:
    """The fraction covers what one GPU holds (the plan's KV pool where the plan records its
    KV figures, as every plan written since they were recorded does), never the 0.1 floor; a
    plan without them (written before) gets it from the model's KV bytes per token and its
    streams, and more streams need more."""
    v = serving_view(plan_dict(example))
    frac = gpu_memory_utilization(v)
    assert 0.3 <= frac <= 0.95
    assert frac * v.hw.hbm_bytes >= min(gpu_memory_bytes(v), 0.95 * v.hw.hbm_bytes) - 0.01 * v.hw.hbm_bytes
    old = plan_dict(example)
    old["best"]["memory"].pop("kv_bytes_per_token", None)
    before = gpu_memory_utilization(serving_view(old))
    assert 0.3 <= before <= 0.95
    old["spec"]["serving"]["batch"] = 64  # more streams need more KV: the fraction grows
    old["spec"]["serving"]["scenario"] = "fixed_batch"
    assert gpu_memory_utilization(serving_view(old)) >= before or before == 0.95


@pytest.fixture(scope="module")
def tpu_plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real TPU training plan: the Llama 3 70B example planned for TPU v5p only."""
    import json

    from rightsize.api import plan
    from rightsize.report.render import result_dict, to_json

    root = Path(__file__).resolve().parents[1]
    text = (root / "examples" / "llama3-70b-pretrain.yaml").read_text()
    text = text.replace(
        "accelerators: [h100-sxm, h200-sxm, b200, a100-sxm-80gb, mi300x]", "accelerators: [tpu-v5p]"
    )
    text = text.replace("deadline: 60d", "deadline: 120d")
    spec = tmp_path_factory.mktemp("tpu") / "tpu.yaml"
    spec.write_text(text)
    return dict(json.loads(to_json(result_dict(plan(spec)))))


def _maxtext(files: dict[str, str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    import yaml

    objs = _by_kind(files)
    return yaml.safe_load(objs["ConfigMap"]["data"]["maxtext.yml"]), objs


@pytest.mark.parametrize("chips", [None, 512])
def test_tpu_training_is_maxtext_on_gke_slices(tpu_plan: dict[str, Any], chips: int | None) -> None:
    """TPU training: a JobSet of MaxText pods on GKE TPU slices (chips per host, accelerator
    and topology selectors, one node pool per slice), a MaxText config whose batch and
    parallelism multiply out to the plan's, and no NVIDIA resource, NCCL or torchrun."""
    import copy

    plan = copy.deepcopy(tpu_plan)
    assert plan["best"]["accelerator"] == "tpu-v5p"
    if chips:  # v6e: more chips than its largest (256-chip) slice -> slices over DCN
        _on(plan, "tpu-v6e", "tpu-v6e-host", None)
        plan["best"]["gpus"], plan["sizing"]["nodes"]["nodes"] = chips, chips // 8
        plan["best"]["parallel"].update(tp=4, dp=chips // 4)
    files = render_files(plan, "kubernetes")
    text = "".join(files.values())
    assert "nvidia.com/gpu" not in text and "NCCL_" not in text and "torchrun" not in text
    cfg, objs = _maxtext(files)
    js = objs["JobSet"]
    assert (
        js["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"]
        == "cloud.google.com/gke-nodepool"
    )
    rj = js["spec"]["replicatedJobs"][0]
    pod = rj["template"]["spec"]["template"]["spec"]
    per_host = pod["containers"][0]["resources"]["limits"]["google.com/tpu"]
    hosts, n_slices = rj["template"]["spec"]["parallelism"], rj["replicas"]
    total = plan["best"]["gpus"]
    assert per_host * hosts * n_slices == total
    sel = pod["nodeSelector"]
    dims = [int(x) for x in sel["cloud.google.com/gke-tpu-topology"].split("x")]
    assert math.prod(dims) == total // n_slices
    assert sel["cloud.google.com/gke-tpu-accelerator"] == ("tpu-v6e-slice" if chips else "tpu-v5p-slice")
    ici = cfg["ici_tensor_parallelism"] * cfg["ici_expert_parallelism"] * cfg["ici_context_parallelism"]
    ici *= cfg.get("ici_fsdp_parallelism", 1) * cfg.get("ici_data_parallelism", 1)
    assert ici == total // n_slices and cfg["dcn_data_parallelism"] == n_slices
    gb = _global_batch(plan)
    assert cfg["per_device_batch_size"] * total * cfg["gradient_accumulation_steps"] == pytest.approx(gb)
    assert cfg["base_num_decoder_layers"] == plan["spec"]["model"]["layers"]
    assert cfg["max_target_length"] == plan["spec"]["training"]["seq_len"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert env["DATA_PATH"] in mounts and cfg["base_output_directory"] in mounts
    quota = {
        r["name"]: r["nominalQuota"]
        for r in objs["ClusterQueue"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert quota["google.com/tpu"] == total


def _global_batch(plan: dict[str, Any]) -> float:
    from rightsize.export.plan_view import training_view

    return float(training_view(plan).global_batch)


def test_tpu_training_refuses_what_maxtext_cannot_express(tpu_plan: dict[str, Any]) -> None:
    import copy

    plan = copy.deepcopy(tpu_plan)
    plan["best"]["gpus"] = 4096 + 4  # no slice shape, not a whole number of slices
    with pytest.raises(BadInput, match="slice"):
        render_files(plan, "kubernetes")
    plan = copy.deepcopy(tpu_plan)
    plan["spec"]["model"]["mlp"] = "gelu"
    with pytest.raises(BadInput, match="SwiGLU"):
        render_files(plan, "kubernetes")


@pytest.mark.parametrize(
    ("policy", "names", "placement"),
    [
        ("input_offloaded", {"decoder_layer_input"}, "offload"),
        (
            "save_qkv_context",
            {"decoder_layer_input", "query_proj", "key_proj", "value_proj", "context"},
            "device",
        ),
        ("input_qkv_offloaded", {"decoder_layer_input", "query_proj", "key_proj", "value_proj"}, "offload"),
    ],
)
def test_maxtext_custom_remat_names_each_tensor_as_the_recipes_do(
    tpu_plan: dict[str, Any], policy: str, names: set[str], placement: str
) -> None:
    """The Ironwood recipes' custom remat policies: the named tensors kept on the device or
    offloaded, every other one recomputed (MaxText's RematAndOffload)."""
    import copy

    plan = copy.deepcopy(tpu_plan)
    plan["best"]["parallel"]["recompute"] = policy
    cfg, _ = _maxtext(render_files(plan, "kubernetes"))
    assert cfg["remat_policy"] == "custom"
    assert {k for k, v in cfg.items() if v in ("offload", "device")} == names
    assert {cfg[n] for n in names} == {placement}
