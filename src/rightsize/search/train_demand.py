"""From a chosen training configuration to the `Demand` it puts on the infrastructure.

The step is re-evaluated at several scale-out line rates so the fabric sizing can say
how much slower the job gets on slower NICs; everything else is read off the candidate.
"""

from __future__ import annotations

from rightsize.catalog import NodeType, get_node
from rightsize.catalog.facility import facility_defaults
from rightsize.perf.collectives import DciLink
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import count_params
from rightsize.perf.reliability import checkpoint_bytes
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.candidates import Candidate
from rightsize.search.demand import Demand, WorkloadKind
from rightsize.spec.training import TrainingSpec

# Line rates per GPU the fabric sizing compares (Gb/s): 100G to 1.6T NIC generations.
NIC_GBPS_OPTIONS = (100.0, 200.0, 400.0, 800.0, 1600.0)
# Raw text is about 4 bytes (UTF-8 characters) per token for English BPE tokenisers
# (OpenAI, "What are tokens and how to count them": 1 token ~ 4 characters of English).
RAW_TEXT_BYTES_PER_TOKEN = 4.0
# Tokenised data is stored as token ids: uint16 when the vocabulary fits in 2^16
# (GPT-2, Llama 2), else uint32 (Llama 3's 128K vocabulary), as in Megatron-LM's
# indexed datasets (`best_fitting_dtype`).
UINT16_VOCAB_LIMIT = 65536
# Host side of an LLM data pipeline: reading pre-tokenised shards and building batches
# takes about one dataloader worker per GPU plus the training process itself (Megatron
# and torchtitan defaults: num_workers 1-2); host memory holds the pinned batch buffers,
# the worker processes and the optimizer-step staging, budgeted at 32 GiB per GPU
# (estimate: a quarter of the 2 TiB of an 8-GPU DGX H100, which leaves room for offload).
LLM_CPU_CORES_PER_GPU = 2.0
LLM_HOST_MEMORY_BYTES_PER_GPU = 32.0 * 2**30


BF16_BYTES = 2.0


def token_bytes(vocab: int) -> float:
    return 2.0 if vocab <= UINT16_VOCAB_LIMIT else 4.0


def dci_link(node: NodeType, max_gpus: float) -> DciLink | None:
    """The data-centre interconnect a cluster of up to ``max_gpus`` GPUs of ``node`` would cross:
    None when one building powers them all (the step model then has no DCI term)."""
    site = facility_defaults().site
    if site is None:
        return None
    per_building = site.nodes_per_building(node.max_power_w) * node.gpus_per_node
    if max_gpus <= per_building:
        return None
    return DciLink(site.dci_bytes_per_s_per_building, site.dci_latency_s, per_building)


def step_by_nic(
    w: TrainWorkload, cfg: ParallelConfigs, i: int, hw: Hardware, dci: DciLink | None = None
) -> dict[float, float]:
    """Step time of configuration i if every GPU had each candidate scale-out line rate."""
    one = cfg.take(i)
    out: dict[float, float] = {}
    for gbps in NIC_GBPS_OPTIONS:
        st = train_step(w, one, hw.with_overrides(scaleout_bytes_per_s_per_gpu=gbps * 1e9 / 8.0), dci=dci)
        out[gbps] = float(st.step_time[0])
    return out


def training_demand(
    spec: TrainingSpec, w: TrainWorkload, cfg: ParallelConfigs, i: int, hw: Hardware, best: Candidate
) -> Demand:
    tokens_per_s = best.tokens_per_s_per_gpu * best.gpus
    train_tokens = spec.training.train_tokens
    params = count_params(w.arch).total
    method = getattr(spec.training, "method", "full")
    schedule = spec.infrastructure.schedule
    workload: WorkloadKind = "fine_tuning" if method != "full" or schedule is not None else "pretraining"
    step = best.step
    compute_share = (step["compute_s"] + step["optimizer_s"]) / step["step_time_s"]
    ckpt = float(best.reliability.get("checkpoint_bytes", checkpoint_bytes(params, w.optimizer)))
    tb = token_bytes(w.arch.vocab)
    runs_per_month = schedule.jobs_per_week * 52.0 / 12.0 if schedule is not None else None
    return Demand(
        workload=workload,
        name=spec.name or spec.model.name,
        accelerator=best.accelerator,
        node=best.node,
        gpus=best.gpus,
        compute_utilisation=best.mfu,
        duty_cycle=1.0,
        run_s=train_tokens / tokens_per_s if train_tokens else None,
        runs_per_month=runs_per_month,
        work_unit="token",
        work_units_per_s=tokens_per_s,
        work_units_total=train_tokens,
        dataset_bytes=(train_tokens or 0.0) * RAW_TEXT_BYTES_PER_TOKEN,
        data_read_bytes_per_s=tokens_per_s * tb,
        bytes_per_work_unit=tb,
        params=params,
        weights_bytes=params * BF16_BYTES,  # fp8 recipes keep bf16 weights too
        checkpoint_bytes=ckpt,
        host_memory_bytes_per_gpu=LLM_HOST_MEMORY_BYTES_PER_GPU,
        cpu_cores_per_gpu=LLM_CPU_CORES_PER_GPU,
        step_s=best.step_time_s,
        step_s_by_nic_gbps=step_by_nic(w, cfg, i, hw, dci_link(get_node(best.node), best.gpus)),
        compute_share_of_step=min(1.0, compute_share),
    )
