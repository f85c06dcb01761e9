"""`Demand`: what a chosen configuration asks of the infrastructure around its accelerators.

Every planner (training, fine-tuning, serving, vision, recommendation) ends by filling one
`Demand` for its chosen configuration. The sizing modules (nodes and racks, fabric, storage,
power and cooling, reliability, cost, growth, sensitivity) read only this and the spec's
`infrastructure` section, so they never re-derive performance and never depend on the
workload kind. All quantities are SI floats with the unit in the name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

WorkloadKind = Literal["pretraining", "fine_tuning", "serving", "batch_inference"]


@dataclass(frozen=True)
class Demand:
    # --- what and where -----------------------------------------------------------
    workload: WorkloadKind
    name: str
    accelerator: str  # catalog accelerator id
    node: str  # catalog node id
    gpus: int
    # --- how busy the accelerators are ----------------------------------------------
    # Share of peak the GPUs run at while working (MFU for training, busy share of the
    # roofline for serving); sets typical power between idle and TDP.
    compute_utilisation: float
    # Share of wall time the GPUs are working (1 for a training run; the average load
    # over the provisioned capacity for serving).
    duty_cycle: float
    # --- time -------------------------------------------------------------------------
    # Wall time of one run with no failures (training); None for a continuous service.
    run_s: float | None
    # Runs per month for recurring jobs (fine-tuning weekly = 52/12); None for a one-off.
    runs_per_month: float | None
    # --- work done, for per-unit cost and energy ----------------------------------------
    work_unit: str  # "token", "image", "sample", "output_token"
    # Across the whole cluster: a job's rate while it works; a service's AVERAGE rate served
    # (its duty cycle is already in it: cost and energy per unit never multiply by it again).
    work_units_per_s: float
    work_units_total: float | None  # per run (training); None for a service
    # --- data -------------------------------------------------------------------------
    dataset_bytes: float  # raw dataset (0 for serving)
    data_read_bytes_per_s: float  # sustained read rate that keeps every GPU fed
    bytes_per_work_unit: float  # bytes read per unit (tokenised token, JPEG image, ...)
    # --- state ------------------------------------------------------------------------
    params: float  # model parameters
    weights_bytes: float  # model weights as loaded for this workload
    checkpoint_bytes: float  # one full checkpoint (weights + optimizer state); 0 for serving
    host_memory_bytes_per_gpu: float = 0.0  # host RAM the data pipeline / offload needs per GPU
    cpu_cores_per_gpu: float = 0.0  # CPU cores the data pipeline needs per GPU
    # --- communication ------------------------------------------------------------------
    step_s: float | None = None  # time of one step (training) on the node's own NICs
    # Step time if each GPU had this scale-out line rate (Gb/s -> s); lets the fabric sizing
    # say how much slower the job gets at 200/400/800 Gb/s per GPU. Empty for serving
    # replicas that fit in one node.
    step_s_by_nic_gbps: dict[float, float] = field(default_factory=dict)
    # Share of the step that is compute (not exposed communication or bubble): the part an
    # efficiency change scales, for sensitivity.
    compute_share_of_step: float = 1.0
    # --- serving ------------------------------------------------------------------------
    replicas: int | None = None
    gpus_per_replica: int | None = None
    design_rate_rps: float | None = None  # peak x (1 + headroom)
    base_rate_rps: float | None = None  # peak without margin
    # Disaggregated serving: each request's KV cache sent from a prefill replica to a decode
    # replica over the scale-out NICs, at the design rate (0 when it stays in a scale-up domain).
    kv_transfer_bytes_per_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data (the NIC sweep's keys become strings: '400' Gb/s)."""
        d = asdict(self)
        d["step_s_by_nic_gbps"] = {f"{k:g}": v for k, v in self.step_s_by_nic_gbps.items()}
        return d

    @property
    def continuous(self) -> bool:
        """A service runs all month; a job runs for run_s."""
        return self.run_s is None
