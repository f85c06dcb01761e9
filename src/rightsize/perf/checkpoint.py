"""Checkpoint saves by mechanism: synchronous, or asynchronous as the training stacks run them.

Synchronous (`perf.reliability.goodput`): the step waits while the whole state, C bytes, is
written at the write rate W: it blocks for d = C / W, and a failure loses the work since the
last checkpoint, tau / 2 on average, plus the restart R.

Asynchronous: Megatron-Core distributed checkpointing with `--async-save` (torch_dist format),
NeMo 2.0's `MegatronStrategy(ckpt_async_save=True)` (the same Megatron-Core path), torchtitan's
`checkpoint.async_mode` (PyTorch DCP `async_save`) and MaxText's `async_checkpointing` (Orbax).
Each copies the state from the accelerators to host memory (staging) and writes it to storage
from a background process or thread while the next steps run. The step pays

    blocking = C / gpus / host_link + sync

each GPU copying its own shard over its host link (PCIe or NVLink-C2C, the accelerator's
`host_link_bytes_per_s`, the figure activation offload reads), plus a fixed synchronisation
(save plan, metadata, hand-off; reliability.yaml `async_checkpoint_sync_s`, measured 0.78 s
at 1,856 H200). The write to storage, w = C / W, runs behind the steps. A save must complete
before the next one starts (Megatron-Core finalises the previous save first; Orbax waits for
it), so an interval tau shorter than w would block for the excess w - tau every checkpoint:
the overhead (d + w - tau) / tau falls as tau grows to w, so the interval is never set below w
and the excess is zero. Within that bound the interval is Daly's optimum for the blocking part
(`perf.reliability.daly_goodput`: it alone costs steps).

Lost work. A failure loses the work since the last COMPLETED checkpoint. With saves starting
every tau and each durable w later (w <= tau), a failure s seconds after a save starts falls
back to that save if s >= w and to the one before if s < w: on average tau / 2 + w. The
failure term of Daly's model carries it as a longer restart, R + w:

    wall / useful = (M / tau) e^((R + w) / M) (e^((tau + d) / M) - 1)     (Daly 2006, eq. 13)

What is not modelled: the background write's contention with the trainer for host CPUs (the
same PyTorch blog shows training throughput dipping while the write runs; process-based
writers, as Megatron-Core and torchtitan's `async_with_pinned_mem` use, remove most of it).

Which plans save asynchronously (`async_save_for`): a language-model training plan on an
accelerator whose exported stack runs async saves (NVIDIA and AMD: Megatron-LM, torchtitan,
NeMo; Google TPU: MaxText). Intel Gaudi is exported to Intel's Megatron-LM fork, whose async
save this project has no source for on HPU, and AWS Trainium has no exported stack: both are
planned with synchronous saves, as vision and recommendation training are (the torchvision
and TorchRec reference scripts save with `torch.save` on the training process).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from rightsize.catalog.reliability import Reliability
from rightsize.perf.reliability import MAX_EXPONENT, Goodput, daly_goodput, goodput

# Vendors whose exported language-model training stack saves asynchronously (module docstring).
ASYNC_VENDORS = {
    "nvidia": "Megatron-LM --async-save, torchtitan checkpoint.async_mode, NeMo ckpt_async_save",
    "amd": "Megatron-LM --async-save, torchtitan checkpoint.async_mode, NeMo ckpt_async_save (ROCm builds)",
    "google": "MaxText async_checkpointing (Orbax)",
}


@dataclass(frozen=True)
class CheckpointGoodput(Goodput):
    """Goodput with the save's mechanism: `checkpoint_write_s` is what a step waits for per
    checkpoint (the whole write when synchronous; staging and sync when asynchronous), and
    `background_s` the write to storage behind the steps (0 when synchronous)."""

    async_save: float = 0.0  # 1.0: asynchronous (a float so that `as_dict` stays numbers)
    staging_s: float = 0.0  # device-to-host copy of each GPU's shard
    sync_s: float = 0.0  # the fixed part of an asynchronous save's blocking time
    background_s: float = 0.0  # the write to storage, overlapped with later steps

    @property
    def is_async(self) -> bool:
        return self.async_save > 0.0

    @property
    def lost_per_failure_s(self) -> float:
        """Work lost per interruption besides the restart: back to the last completed save."""
        return self.checkpoint_interval_s / 2.0 + self.background_s


def async_save_for(vendor: str, requested: str = "auto") -> bool:
    """Whether a language-model training plan on `vendor`'s accelerators saves asynchronously:
    as the spec asks (`training.checkpoint_save`), or where its exported stack can ('auto')."""
    if requested != "auto":
        return requested == "async"
    return vendor in ASYNC_VENDORS


def lost_to_completion_s(gp: Goodput) -> float:
    """The background write a failure also loses (0 for a synchronous save or a plain Goodput)."""
    return float(getattr(gp, "background_s", 0.0))


def _slowdown(m: float, tau: float, d: float, r: float) -> float:
    exponent = r / m + (tau + d) / m
    if exponent > MAX_EXPONENT:
        return math.inf
    return (m / tau) * math.exp(r / m) * math.expm1((tau + d) / m)


def checkpoint_goodput(
    gpus: int,
    nodes: int,
    ckpt_bytes: float,
    rel: Reliability,
    *,
    async_save: bool,
    host_link_bytes_per_s: float,
    write_bytes_per_s: float | None = None,
) -> CheckpointGoodput:
    """Goodput of a job whose checkpoint of `ckpt_bytes` is written at `write_bytes_per_s` in
    all (None: the nodes' client rate, reliability.yaml), synchronously or asynchronously
    (module docstring), under exponentially distributed failures (Daly's complete model)."""
    if write_bytes_per_s:
        rel = replace(rel, checkpoint_write_bytes_per_s_per_node=write_bytes_per_s / max(nodes, 1))
    sync = daly_goodput(goodput(gpus, nodes, ckpt_bytes, rel))
    if not async_save or ckpt_bytes <= 0:
        return CheckpointGoodput(**sync.as_dict())
    write_s = sync.checkpoint_write_s  # C / W: now in the background
    staging_s = ckpt_bytes / max(gpus, 1) / host_link_bytes_per_s
    blocking_s = staging_s + rel.async_checkpoint_sync_s
    base = replace(sync, checkpoint_write_s=blocking_s, restart_s=rel.restart_s + write_s)
    opt = daly_goodput(base)  # Daly's interval for the blocking part, failures losing R + w
    tau = max(opt.checkpoint_interval_s, write_s)
    slow = _slowdown(sync.mtbf_s, tau, blocking_s, rel.restart_s + write_s)
    return CheckpointGoodput(
        mtbf_s=sync.mtbf_s,
        checkpoint_bytes=ckpt_bytes,
        checkpoint_write_s=blocking_s,
        checkpoint_interval_s=tau,
        restart_s=rel.restart_s,
        goodput=0.0 if math.isinf(slow) else 1.0 / slow,
        async_save=1.0,
        staging_s=staging_s,
        sync_s=rel.async_checkpoint_sync_s,
        background_s=write_s,
    )


def async_interval_s(blocking_s: float, mtbf_s: float, restart_s: float) -> float:
    """Daly's interval for an asynchronous save that blocks `blocking_s` (the storage is then
    sized to finish each write within it: `sizing.storage`)."""
    gp = Goodput(mtbf_s, 0.0, blocking_s, 0.0, restart_s, 0.0)
    return daly_goodput(gp).checkpoint_interval_s


def describe(gp: Goodput) -> str:
    """One line for the plan: 'checkpoint: async, 0.79 s blocking, 87 s background every 31 min'."""
    every = gp.checkpoint_interval_s
    per = f"{every / 60.0:.0f} min" if every >= 120 else f"{every:.0f} s"
    if isinstance(gp, CheckpointGoodput) and gp.is_async:
        return (
            f"checkpoint: async, {gp.checkpoint_write_s:.2g} s blocking "
            f"({gp.staging_s:.2g} s device-to-host copy + {gp.sync_s:.2g} s sync), "
            f"{gp.background_s:.3g} s background write every {per}"
        )
    return f"checkpoint: sync, {gp.checkpoint_write_s:.3g} s blocking write every {per}"
