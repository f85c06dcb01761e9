"""Exact training-memory counts from the real module on the meta device (needs torch).

`rightsize profile memory --model llama3.1-405b --device meta` builds the decoder of
`torch_model` without allocating anything, runs one forward and backward on meta tensors
and one optimizer step, and counts:

- weights: the bytes of every parameter in the compute dtype;
- gradients: one main-gradient buffer per parameter that received a gradient, in the
  main-gradient dtype (fp32 for bf16 / fp8 training as Megatron-LM's
  accumulate_allreduce_grads_in_fp32; fp16 for fp16);
- optimizer: what `torch.optim.AdamW` (or SGD with momentum) really allocates for fp32
  master copies of the parameters, plus the fp32 master copies themselves;
- activations: the bytes of tensors autograd saves for backward during the forward,
  collected with `torch.autograd.graph.saved_tensors_hooks` and deduplicated by storage
  (a view keeps its whole storage alive); parameters and buffers are not activations.
  Those saved inside the layers are split from those saved by the output layer and loss.

`compare_with_analytic` puts the count next to `perf.memory.train_memory` for micro-batch 1,
tp = pp = dp = 1, no recomputation.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from rightsize.profile.torch_model import Decoder, build_decoder, lm_loss
from rightsize.spec.model import ModelArch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass
class MemoryCount:
    model: str
    device: str
    precision: str
    optimizer: str
    seq_len: int
    micro_batch: int
    flash_attention: bool
    params: int
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float  # saved inside the transformer layers (and the embedding)
    loss_bytes: float  # saved by the final norm, the output layer and the loss
    seconds: float

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.loss_bytes
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_bytes": self.total_bytes}


class _SavedBytes:
    """Sums the storages autograd saves, once each, skipping parameters and buffers."""

    def __init__(self, exclude: set[int]) -> None:
        self.seen: set[int] = set(exclude)
        self.bytes = 0.0

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        key = st._cdata
        if key not in self.seen:
            self.seen.add(key)
            self.bytes += float(st.nbytes())
        return t


def _storage_keys(model: torch.nn.Module) -> set[int]:
    keys = {p.untyped_storage()._cdata for p in model.parameters()}
    keys |= {b.untyped_storage()._cdata for b in model.buffers()}
    return keys


def _forward_counted(model: Decoder, tokens: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """(loss, bytes saved by embedding + layers, bytes saved by final norm + head + loss)."""
    counter = _SavedBytes(_storage_keys(model))
    hooks = torch.autograd.graph.saved_tensors_hooks
    with hooks(counter.pack, lambda t: t):
        x = model.embed(tokens)
        with torch.no_grad():
            cos, sin = model._rope(tokens.shape[1], x)
        for layer in model.layers:
            x = layer(x, cos, sin)
        layers = counter.bytes
        x = model.norm(x)
        weight = model.embed.weight if model.head is None else model.head.weight
        loss = lm_loss(torch.nn.functional.linear(x, weight), tokens)
    return loss, layers, counter.bytes - layers


def count_training_memory(
    arch: ModelArch,
    seq_len: int,
    micro_batch: int = 1,
    precision: str = "bf16",
    optimizer: str = "adamw",
    flash_attention: bool = True,
    device: str = "meta",
) -> MemoryCount:
    """Count the bytes of one training step of `arch` (see the module docstring)."""
    started = time.perf_counter()
    dtype = DTYPES[precision]
    model = build_decoder(arch, device=device, dtype=dtype, flash=flash_attention)
    tokens = torch.zeros((micro_batch, seq_len), dtype=torch.long, device=device)
    loss, act, loss_act = _forward_counted(model, tokens)
    loss.backward()
    params = list(model.parameters())
    weights = sum(p.numel() * p.element_size() for p in params)
    grad_dtype = torch.float16 if precision == "fp16" else torch.float32
    grad_size = torch.empty((), dtype=grad_dtype).element_size()
    with_grad = [p for p in params if p.grad is not None]
    gradients = sum(p.numel() * grad_size for p in with_grad)
    # fp32 master weights with fp32 gradients: the optimizer allocates its state for these.
    # Parameters of one shape get the same state, so one of each shape is stepped.
    shapes: dict[tuple[int, ...], int] = {}
    for p in with_grad:
        shapes[tuple(p.shape)] = shapes.get(tuple(p.shape), 0) + 1
    del model, loss
    state, master_bytes = 0, 0
    for shape, n in shapes.items():
        master = torch.nn.Parameter(torch.empty(shape, dtype=torch.float32, device=device))
        master.grad = torch.empty_like(master)
        opt: torch.optim.Optimizer
        if optimizer in ("adam", "adamw"):
            opt = torch.optim.AdamW([master], foreach=False)
        else:
            opt = torch.optim.SGD([master], lr=0.1, momentum=0.9, foreach=False)
        opt.step()
        state += n * sum(
            v.numel() * v.element_size()
            for v in opt.state[master].values()
            if isinstance(v, torch.Tensor) and v.dim() > 0
        )
        master_bytes += n * master.numel() * master.element_size()
    return MemoryCount(
        model=arch.name,
        device=device,
        precision=precision,
        optimizer=optimizer,
        seq_len=seq_len,
        micro_batch=micro_batch,
        flash_attention=flash_attention,
        params=sum(p.numel() for p in params),
        weights_bytes=float(weights),
        gradients_bytes=float(gradients),
        optimizer_bytes=float(state + master_bytes),
        activations_bytes=act,
        loss_bytes=loss_act,
        seconds=time.perf_counter() - started,
    )


def analytic_memory(
    arch: ModelArch,
    seq_len: int,
    micro_batch: int = 1,
    precision: str = "bf16",
    optimizer: str = "adamw",
    flash_attention: bool = True,
) -> dict[str, float]:
    """`perf.memory.train_memory` for one GPU holding the whole model (tp = pp = dp = 1)."""
    from rightsize.perf.memory import train_memory
    from rightsize.perf.workload import ParallelConfigs, TrainWorkload

    w = TrainWorkload(
        arch=arch,
        seq_len=seq_len,
        global_batch=micro_batch,
        precision=precision,
        optimizer=optimizer,
        flash_attention=flash_attention,
    )
    cfg = ParallelConfigs.single(micro_batch=micro_batch)
    mem = train_memory(w, cfg, _placeholder_hardware())
    out = {k: float(v) for k, v in mem.as_dict(0).items() if k != "capacity_bytes"}
    out["total_bytes"] = out["total_bytes"] - out.pop("framework_bytes")  # not a tensor count
    return out


def compare_with_analytic(count: MemoryCount, arch: ModelArch) -> dict[str, Any]:
    """The meta count beside the analytic model, per component, with relative differences
    (analytic / measured - 1). The analytic `logits` term is compared with `loss_bytes`."""
    arch_fields = analytic_memory(
        arch, count.seq_len, count.micro_batch, count.precision, count.optimizer, count.flash_attention
    )
    pairs = {
        "weights": (count.weights_bytes, arch_fields["weights_bytes"]),
        "gradients": (count.gradients_bytes, arch_fields["gradients_bytes"]),
        "optimizer": (count.optimizer_bytes, arch_fields["optimizer_bytes"]),
        "activations": (count.activations_bytes, arch_fields["activations_bytes"]),
        "loss": (count.loss_bytes, arch_fields["logits_bytes"]),
        "total": (count.total_bytes, arch_fields["total_bytes"]),
    }
    return {
        name: {
            "measured_bytes": m,
            "analytic_bytes": a,
            "relative_error": (a / m - 1.0) if m else (0.0 if a == 0 else float("inf")),
        }
        for name, (m, a) in pairs.items()
    }


def _placeholder_hardware() -> Any:
    """Memory does not depend on speeds; only capacity is read (and not used here)."""
    from rightsize.perf.hardware import Hardware

    return Hardware(
        accelerator_id="meta",
        dtype="bf16",
        peak_flops_per_s=1.0,
        gemm_fraction=1.0,
        attention_fraction=1.0,
        sm_count=1,
        tile_m=128,
        tile_n=128,
        hbm_bytes=float("inf"),
        hbm_bytes_per_s=1.0,
        memory_bw_fraction=1.0,
        scaleup_bytes_per_s=1.0,
        scaleup_bw_fraction=1.0,
        scaleup_latency_s=0.0,
        domain_gpus=1,
        scaleout_bytes_per_s_per_gpu=1.0,
        scaleout_bw_fraction=1.0,
        scaleout_latency_s=0.0,
        gpus_per_node=1,
        kernel_overhead_s=0.0,
    )
