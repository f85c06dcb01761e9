"""Where a Kubernetes workload runs and with what: the accelerator's own stack.

Facts are data (`catalog/data/kubernetes.yaml`, each with its source): the device plugin's
extended resource (`nvidia.com/gpu`, `amd.com/gpu`, `aws.amazon.com/neuron`,
`habana.ai/gaudi`, `google.com/tpu`), the collective library (NCCL, RCCL, or none: a
non-GPU part never gets NCCL settings), the images pinned by exact tag, the RDMA device
resource and capability, and GKE's TPU node labels and slice shapes.

Node selection uses only labels nodes carry: the well-known
`node.kubernetes.io/instance-type` set to the instance the plan priced (`sizing.cost`:
`p5.48xlarge` on AWS, `a3-highgpu-8g` on GCP, `Standard_ND96isr_H100_v5` on Azure), the
TPU accelerator and topology labels on GKE (single-host or multi-host slices, whose shapes are
`catalog.tpu_slices`), or labels the caller gives. A catalog node id
(`hgx-b200`) is never used as a label value. A stack this export does not write (Gaudi,
Trainium training) is refused with the reason and what is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from rightsize.catalog.loader import read_data_file
from rightsize.catalog.tpu_slices import tpu_slices, tpu_vm
from rightsize.errors import BadInput
from rightsize.export.names import label_value, qualified_name
from rightsize.export.plan_view import HardwareView

DATA_FILE = "kubernetes.yaml"
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"


@dataclass(frozen=True)
class Image:
    image: str
    engine: str  # vllm / vllm-neuron / vllm-tpu for serving; maxtext or "" for training
    source: str
    megatron_dir: str = ""  # where the image carries Megatron-LM (pretrain_gpt.py)
    frameworks: tuple[str, ...] = ()  # training frameworks the image carries; empty: all


@dataclass(frozen=True)
class Stack:
    """One vendor's Kubernetes stack."""

    vendor: str
    resource: str  # the device plugin's extended resource
    collectives: str  # nccl / rccl / none
    serving: Image | None
    training: Image | None
    serving_refused: str
    training_refused: str
    neuron_cores_per_device: int


@dataclass(frozen=True)
class Rdma:
    resource: str
    per_pod: int
    capability: str
    source: str


@cache
def data() -> dict[str, Any]:
    """The parsed data file (cached)."""
    return read_data_file(DATA_FILE)


def _image(d: dict[str, Any] | None) -> Image | None:
    if not d:
        return None
    image = str(d["image"])
    assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image  # an exact tag
    return Image(
        image=image,
        engine=str(d.get("engine", "")),
        source=str(d["source"]),
        megatron_dir=str(d.get("megatron_dir", "")),
        frameworks=tuple(str(f) for f in d.get("frameworks", ())),
    )


def stack(hw: HardwareView) -> Stack:
    """The stack of the plan's accelerator vendor; BadInput for a vendor the data lacks."""
    stacks = data()["stacks"]
    d = stacks.get(hw.vendor)
    if d is None:
        raise BadInput(
            f"The plan runs on {hw.accelerator} (vendor {hw.vendor}); the Kubernetes export knows no device "
            "plugin, image or collective library for it.",
            f"Kubernetes exports are written for {', '.join(sorted(stacks))} accelerators.",
            "Plan for one of those accelerators.",
        )
    return Stack(
        vendor=hw.vendor,
        resource=qualified_name(str(d["resource"]), "resource name"),
        collectives=str(d["collectives"]),
        serving=_image(d.get("serving")),
        training=_image(d.get("training")),
        serving_refused=str(d.get("serving_refused", "")),
        training_refused=str(d.get("training_refused", "")),
        neuron_cores_per_device=int(d.get("neuron_cores_per_device", 0)),
    )


def _refuse(hw: HardwareView, what: str, st: Stack, why: str) -> BadInput:
    return BadInput(
        f"The plan's {what} runs on {hw.accelerator} ({st.resource}); the Kubernetes export does not write "
        f"its {what} stack.",
        why,
        f"Plan for NVIDIA or AMD GPUs, or run the {what} with the vendor's own tooling.",
    )


def training_stack(hw: HardwareView) -> tuple[Stack, Image]:
    st = stack(hw)
    if st.training is None:
        raise _refuse(hw, "training", st, st.training_refused or "no training image is pinned for it")
    return st, st.training


def serving_stack(hw: HardwareView) -> tuple[Stack, Image]:
    st = stack(hw)
    if st.serving is None:
        raise _refuse(hw, "serving", st, st.serving_refused or "no serving image is pinned for it")
    return st, st.serving


def rdma() -> Rdma:
    d = data()["rdma"]
    return Rdma(
        resource=qualified_name(str(d["resource"]), "resource name"),
        per_pod=int(d["per_pod"]),
        capability=str(d["capability"]),
        source=str(d["source"]),
    )


def tpu_selector(hw: HardwareView, chips: int, hosts: int = 1) -> dict[str, str]:
    """GKE's TPU node labels for a slice of `chips` chips carried by `hosts` hosts (the
    topology of the whole slice, which every host's node carries); BadInput when the chip has
    no such slice shape, or a multi-host slice is laid out on other hosts than GKE gives it."""
    slices = tpu_slices(hw.accelerator)
    topo = slices.topology(chips) if slices else None
    if slices is None or topo is None:
        have = (
            ", ".join(f"{n} chips ({slices.topology(n)})" for n in slices.chip_counts)
            if slices
            else "none known"
        )
        raise BadInput(
            f"The plan uses {chips} {hw.accelerator} chips per replica; GKE's single-host and multi-host "
            f"slices of {hw.accelerator} are: {have}.",
            "A replica runs on one TPU slice (google.com/tpu counts each host's chips, and the topology "
            "label must name a slice shape that exists).",
            "Re-plan with this release (it plans only slice shapes), or set targets.tp to one of those chip counts.",
        )
    if chips not in slices.serving_chip_counts:
        raise BadInput(
            f"The plan serves one replica on a {chips}-chip {hw.accelerator} slice ({topo}), which spans "
            f"{slices.hosts(chips)} hosts; a serving replica on {hw.accelerator} stays on one host.",
            f"Why: {slices.serving_source}.",
            "Re-plan: the planner offers "
            + ", ".join(str(n) for n in slices.serving_chip_counts)
            + f" chips per replica on {hw.accelerator}.",
        )
    if hosts != slices.hosts(chips):
        raise BadInput(
            f"The plan lays a {chips}-chip {hw.accelerator} replica on {hosts} host(s); a {topo} slice has "
            f"{slices.hosts(chips)} host(s) of {chips // slices.hosts(chips)} chips.",
            "GKE schedules a multi-host slice as whole hosts of a fixed chip count.",
            "Re-plan the spec with this release (plans record the slice's hosts as nodes_per_replica).",
        )
    return {
        TPU_ACCELERATOR_LABEL: str(data()["tpu"][hw.accelerator]["accelerator"]),
        TPU_TOPOLOGY_LABEL: topo,
    }


def gke_allocatable_bytes(capacity_bytes: float) -> float:
    """Memory a GKE node leaves to pods: its capacity less GKE's tiered reservation and the
    eviction threshold (data: `gke_memory_reservation`, with its source)."""
    d = data()["gke_memory_reservation"]
    left, reserved = capacity_bytes / 2**30, 0.0
    for size_gib, share in d["tiers_gib"]:
        part = min(left, float(size_gib))
        reserved, left = reserved + part * float(share), left - part
    reserved += max(left, 0.0) * float(d["above"])
    return capacity_bytes - reserved * 2**30 - float(d["eviction_bytes"])


def tpu_pod_memory_cap_bytes(hw: HardwareView, chips: int) -> float | None:
    """The most memory a pod holding `chips` chips of one TPU VM can request: what GKE leaves
    of that VM's RAM (ct5lp-hightpu-8t has 384 GiB, less than the 512 GiB of the physical v5e
    host; catalog/data/tpu_vms.yaml); None where the data gives no VM of that chip count."""
    vm = tpu_vm(hw.accelerator, chips)
    ram = vm.memory_bytes if vm is not None else None
    return math.floor(gke_allocatable_bytes(ram) / 2**30) * 2**30 if ram else None  # whole GiB, rounded down


def tpu_precision_notes(hw: HardwareView, weight_precision: str, kv_precision: str) -> list[str]:
    """What a vLLM TPU deployment needs for the plan's precisions (manifest header lines);
    BadInput when vLLM TPU loads no weights of that precision on this generation (tpu-inference's
    quantization table, `serving_weights` in the data)."""
    slices = tpu_slices(hw.accelerator)
    if slices is None:
        return []
    out: list[str] = []
    if weight_precision not in ("bf16", "fp16"):
        if weight_precision not in slices.serving_weights:
            raise BadInput(
                f"The plan serves {weight_precision} weights on {hw.accelerator}; vLLM TPU loads "
                f"{', '.join(slices.serving_weights)} weights there.",
                "vLLM TPU takes quantized weights from a pre-quantized checkpoint, and tpu-inference lists "
                "INT8 W8A8 and INT4 AWQ on v5e, v5p and v6e, FP8 and FP4 on TPU7x only.",
                "Re-plan with serving.weight_precision: "
                + " or ".join(w for w in slices.serving_weights if w != "bf16")
                + " (or bf16).",
            )
        out.append(
            f"weights: {weight_precision} as planned only from a pre-quantized checkpoint (vLLM TPU reads the "
            "method from its config, tpu-inference: INT8 W8A8 compressed-tensors, INT4 AWQ, FP8 compressed-tensors "
            "on TPU7x): set MODEL to one; the 16-bit checkpoint would not fit the planned memory"
        )
    if kv_precision not in ("bf16", "fp16"):
        times = "four" if kv_precision in ("int4", "fp4") else "twice"
        out.append(
            f"KV cache: the plan's {kv_precision} KV is not written (tpu-inference's quantized KV cache is "
            f"untested); the engine keeps it in bf16, {times} the bytes per token the plan counts, so fewer "
            "sequences fit per replica than planned"
        )
    return out


def instance_selector(priced: tuple[str, str] | None) -> dict[str, str]:
    """`node.kubernetes.io/instance-type` = the instance the plan priced, when a cloud whose
    node controller sets that label priced it; empty otherwise (an estimate names no
    instance a node carries)."""
    d = data()["instance_label"]
    if priced is None or priced[0] not in d["providers"]:
        return {}
    return {str(d["key"]): label_value(priced[1], "instance type")}


def user_selector(user_labels: dict[str, str] | None) -> dict[str, str]:
    """The caller's node labels (`--node-label`), each key and value checked as Kubernetes
    requires."""
    return {
        qualified_name(k, "node label key"): label_value(v, "node label value")
        for k, v in (user_labels or {}).items()
    }


def node_selector(
    hw: HardwareView,
    priced: tuple[str, str] | None,
    user_labels: dict[str, str] | None,
    tpu_chips: int = 0,
    tpu_hosts: int = 1,
) -> dict[str, str]:
    """The labels pods (and the Kueue ResourceFlavor) select nodes by: the caller's labels
    when given, else the priced instance type; a TPU adds GKE's TPU labels."""
    out = user_selector(user_labels)
    if hw.vendor == "google":  # the slice's labels, not the priced host (its chip count may differ)
        return out | tpu_selector(hw, tpu_chips, tpu_hosts)
    return out or instance_selector(priced)


def instruct_model(hf_id: str | None) -> str | None:
    """The instruction-tuned release of a base checkpoint (data: `instruct_models`), or None."""
    if not hf_id:
        return None
    found = data()["instruct_models"]["models"].get(hf_id)
    return str(found) if found else None
