"""TPU training on GKE: JAX + MaxText in a JobSet over TPU slices (`training.yaml`, `kueue.yaml`).

The plan's TPU chips become slices GKE offers (`catalog/data/kubernetes.yaml`: the chip's
slice shapes; more chips than the largest slice become several slices over the data-centre
network, MaxText's `dcn_data_parallelism`). One JobSet replicated job per slice shape, one
replica per slice, a pod per TPU host requesting its chips (`google.com/tpu`) with GKE's
accelerator and topology selectors; `alpha.jobset.sigs.k8s.io/exclusive-topology` keeps each
slice on its own node pool (one ICI domain). GKE injects the TPU worker ids and host names
into JobSet pods.

The MaxText config (`maxtext.yml` in a ConfigMap) is built as a dict and written with the
YAML dumper: the model's shape from the spec (layers, widths, heads, vocabulary, experts,
SwiGLU, tied embeddings), the plan's batch (per-device batch x chips x accumulation = the
global batch), sequence length, steps, checkpoint period (the plan's interval in steps),
tensor / expert / context parallelism within a slice with FSDP over the rest, and the data
and tokenizer. Every key is one MaxText's `configs/base.yml` defines (checked against the
list in the data file). What MaxText's Llama-style decoder cannot express (multi-head latent
attention, LayerNorm or GELU models, pipeline stages) is refused with the reason.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.catalog.tpu_slices import tpu_slices
from rightsize.errors import BadInput
from rightsize.export.header import comment_block, dump_yaml
from rightsize.export.k8s_common import dump, meta, object_name, pod_requests
from rightsize.export.k8s_platform import (
    TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL,
    Image,
    Stack,
    data,
    user_selector,
)
from rightsize.export.k8s_training import (
    CKPT_MOUNT,
    DATA_MOUNT,
    grace_s,
    kueue_file,
    pod_quotas,
    volume_claims,
)
from rightsize.export.plan_view import TrainingView

REMAT = {"none": "minimal", "selective": "save_dot_except_mlp", "full": "full"}  # MaxText remat_policy
# rightsize's names for MaxText's remat_policy=custom: which named tensors go to host memory
# (MaxText configs RematAndOffload; the Trillium recipes in benchmarks/maxtext_trillium_model_configs.py)
# MaxText's `remat_policy: custom`: each named tensor kept on the device or offloaded to host
# memory; every tensor not named is recomputed (configs/types.py, RematAndOffload). Splash
# attention saves its output and log-sum-exp as `context` (attention_op.py).
_QKV = ("query_proj", "key_proj", "value_proj")
CUSTOM_REMAT: dict[str, dict[str, str]] = {
    "input_qkv_offloaded": dict.fromkeys(("decoder_layer_input", *_QKV), "offload"),
    "input_qkv_out_offloaded": dict.fromkeys(("decoder_layer_input", *_QKV, "out_proj"), "offload"),
    "input_offloaded": {"decoder_layer_input": "offload"},
    "save_qkv_context": dict.fromkeys(("decoder_layer_input", *_QKV, "context"), "device"),
}
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16", "nvfp4": "bfloat16"}


def _refuse(v: TrainingView, why: str) -> BadInput:
    return BadInput(
        f"The plan trains {v.model.name} on {v.hw.accelerator}; the TPU export (MaxText) cannot express it: {why}.",
        "MaxText's Llama-style decoder blocks take the model and layout from its config keys.",
        "Plan for GPUs, or adapt a MaxText model config for this model by hand.",
    )


def slices(v: TrainingView) -> tuple[int, int, str, int]:
    """(slices, chips per slice, topology, hosts per slice) for the plan's chips: the slice rule
    the sizing's bill uses (`TpuSlices.job_slices`, `hosts`)."""
    shape = tpu_slices(v.hw.accelerator)
    if shape is None:
        raise _refuse(v, "GKE slice shapes of this TPU are not in the data")
    found = shape.job_slices(v.gpus)
    if found is None:
        raise _refuse(v, shape.no_shape(v.gpus))
    n, per = found
    return n, per, str(shape.topology(per)), shape.hosts(per)


def maxtext_config(v: TrainingView, run_name: str, n_slices: int, per_slice: int) -> dict[str, Any]:
    m = v.model
    if m.kv_lora_rank or m.mlp != "swiglu" or m.norm != "rmsnorm":
        raise _refuse(
            v,
            "only SwiGLU + RMSNorm decoders with standard attention map onto MaxText's llama2/mixtral blocks",
        )
    if v.pp > 1:
        raise _refuse(v, f"the plan pipelines over {v.pp} stages; this export maps TP, EP, CP and FSDP only")
    chips = n_slices * per_slice
    inner = v.tp * v.ep * v.cp
    if per_slice % inner:
        raise _refuse(v, f"TP{v.tp} x EP{v.ep} x CP{v.cp} does not divide a {per_slice}-chip slice")
    micro = v.micro_batch * v.dp  # sequences per microbatch across the job
    accumulation = max(1, v.global_batch // micro) if v.global_batch % micro == 0 else 1
    cfg: dict[str, Any] = {
        "base_config": "base.yml",
        "run_name": run_name,
        "base_output_directory": CKPT_MOUNT,
        "base_emb_dim": m.hidden,
        "base_num_query_heads": m.heads,
        "base_num_kv_heads": m.kv_heads,
        "base_num_decoder_layers": m.layers,
        "base_mlp_dim": m.ffn_hidden,
        "head_dim": m.head_dim,
        "vocab_size": m.vocab,
        "rope_max_timescale": int(m.rope_theta),  # the model's rotary base (Llama 3: 500,000)
        "mlp_activations": ["silu", "linear"],
        "logits_via_embedding": m.tied_embeddings,
        "enable_dropout": False,
        "decoder_block": "mixtral" if m.experts else "llama2",
        "max_target_length": v.seq_len,
        "per_device_batch_size": v.global_batch / (chips * accumulation),
        "gradient_accumulation_steps": accumulation,
        "steps": v.steps,
        "enable_checkpointing": True,
        "async_checkpointing": v.checkpoint_async,  # Orbax async save, as the plan priced it
        "checkpoint_period": max(1, math.floor(v.checkpoint_interval_s / v.step_time_s)),
        "ici_tensor_parallelism": v.tp,
        "ici_expert_parallelism": v.ep,
        "ici_context_parallelism": v.cp,
        ("ici_fsdp_parallelism" if v.zero_stage else "ici_data_parallelism"): per_slice // inner,
        "dcn_data_parallelism": n_slices,
        "remat_policy": "custom" if v.recompute in CUSTOM_REMAT else REMAT.get(v.recompute, v.recompute),
        "dtype": DTYPES[v.precision],
        "dataset_type": "grain",
        "grain_file_type": "arrayrecord",
        "grain_train_files": f"{DATA_MOUNT}/*.array_record",
        "tokenizer_type": "huggingface",
        "tokenizer_path": m.hf_id or f"{DATA_MOUNT}/tokenizer",
    }
    cfg |= CUSTOM_REMAT.get(v.recompute, {})
    if m.experts:
        cfg |= {"num_experts": m.experts, "num_experts_per_tok": m.experts_per_token,
                "base_moe_mlp_dim": m.expert_ffn_hidden or m.ffn_hidden}  # fmt: skip
    if v.zero_stage:
        cfg["ici_data_parallelism"] = 1
    unknown = set(cfg) - set(data()["maxtext"]["keys"])
    assert not unknown, f"keys MaxText's base.yml does not define: {sorted(unknown)}"
    return cfg


def _pod(
    v: TrainingView, image: Image, st: Stack, name: str, chips_per_host: int, selector: dict[str, str]
) -> dict[str, Any]:
    module = str(data()["maxtext"]["module"])
    container = {
        "name": "maxtext",
        "image": image.image,
        "command": ["python3", "-m", module, "/config/maxtext.yml"],
        "env": [{"name": "CKPT_DIR", "value": f"{CKPT_MOUNT}/{name}"}, {"name": "DATA_PATH", "value": DATA_MOUNT}],
        "resources": pod_requests(chips_per_host, v.cpu_cores_need_per_gpu * chips_per_host,
                                  v.host_memory_need_bytes_per_gpu * chips_per_host, st.resource),
        "volumeMounts": [{"name": "config", "mountPath": "/config"}, {"name": "checkpoints", "mountPath": CKPT_MOUNT},
                         {"name": "data", "mountPath": DATA_MOUNT, "readOnly": True}],
    }  # fmt: skip
    return {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": grace_s(v),
        "nodeSelector": selector,
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{name}-config"}},
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": f"{name}-checkpoints"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data", "readOnly": True}},
        ],
    }


def tpu_training_files(
    v: TrainingView, st: Stack, image: Image, restarts: int, node_labels: dict[str, str] | None = None
) -> dict[str, str]:
    name = object_name(v.header)
    n_slices, per_slice, topology, hosts = slices(v)
    chips_per_host = per_slice // hosts
    tpu = data()["tpu"][v.hw.accelerator]
    # the user's labels (--node-label) and the slice's GKE TPU labels
    selector = user_selector(node_labels) | {
        TPU_ACCELERATOR_LABEL: str(tpu["accelerator"]),
        TPU_TOPOLOGY_LABEL: topology,
    }
    config = maxtext_config(v, name, n_slices, per_slice)
    pod = _pod(v, image, st, name, chips_per_host, selector)
    queue = f"{name}-queue"
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {**meta(name, v.header), "labels": {"app.kubernetes.io/part-of": name, "kueue.x-k8s.io/queue-name": queue},
                     "annotations": {**meta(name, v.header)["annotations"],
                                     "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}},
        "spec": {
            "failurePolicy": {"maxRestarts": restarts},
            "network": {"enableDNSHostnames": True, "subdomain": name},
            "replicatedJobs": [{"name": "slice", "replicas": n_slices, "template": {"spec": {
                "parallelism": hosts, "completions": hosts, "completionMode": "Indexed", "backoffLimit": 0,
                "template": {"spec": pod}}}}],
        },
    }  # fmt: skip
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{name}-config", v.header),
          "data": {"maxtext.yml": dump_yaml(config)}}  # fmt: skip
    head = comment_block(
        v.header,
        "Kubernetes TPU training manifests (JobSet v0.13, Kueue v1beta1, JAX + MaxText)",
        [
            f"{v.gpus} x {v.hw.accelerator} as {n_slices} slice(s) of {per_slice} chips ({topology}), "
            f"{hosts} host pod(s) of {chips_per_host} {st.resource} each; TP{v.tp} EP{v.ep} CP{v.cp}, FSDP over the rest",
            f"image {image.image} ({image.source})",
            f"data: ArrayRecord files under {DATA_MOUNT} (the data volume), tokenizer {config['tokenizer_path']}; "
            f"checkpoints every {config['checkpoint_period']} steps under {CKPT_MOUNT}",
            f"rotary base {v.model.rope_theta:,.0f} (rope_max_timescale, from the model spec)",
        ],
    )
    containers = pod["containers"]
    return {
        "training.yaml": dump(head, [cm, jobset, *volume_claims(v, name)]),
        "kueue.yaml": kueue_file(v, queue, pod_quotas(containers[0], hosts * n_slices), selector),
    }
