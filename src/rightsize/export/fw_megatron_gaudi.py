"""Megatron-LM on Intel Gaudi: Intel's fork (github.com/HabanaAI/Megatron-LM, tag `TAG`, forked
from core_r0.11.0: the Megatron-LM of Intel Gaudi software 1.22.0 per its Support Matrix),
run as its own examples/llama/pretrain_llama.sh runs it (arguments checked in the tests
against the fork's parser, tests/data/megatron_gaudi_1.22.0_arguments.json).

The plan's model, layout and schedule are `fw_megatron`'s (one mapping for every Megatron),
translated to the fork:

- HPU execution as Intel's script sets it: `PT_HPU_GPU_MIGRATION=1` (Intel's GPU Migration
  Toolkit maps the CUDA calls and the `nccl` backend to HPU and HCCL, so
  `--distributed-backend nccl` is what the script passes), `PT_HPU_LAZY_MODE=1` (the script's
  default), `--transformer-impl transformer_engine` (Intel's Transformer Engine for Gaudi),
  fused SDPA and RMSNorm (`--use-fused-sdpa 1`, `--use-fused-rmsnorm 1`, with
  `--no-create-attention-mask-in-dataloader` as the script adds for fused SDPA),
  `--no-gradient-accumulation-fusion`, `--no-masked-softmax-fusion` (CUDA kernels) and the
  `fusedadamw` optimizer; `--attention-backend` is left at the fork's default.
- `--moe-router-dtype fp32` is the fork's `--moe-router-fp32`.
- What the fork has no flag for is refused with the reason: an explicit pipeline layout
  (uneven stages), recompute of named modules, Megatron's custom FSDP (ZeRO-3).
"""

from __future__ import annotations

from rightsize.errors import BadInput
from rightsize.export.fw_common import Launch
from rightsize.export.fw_megatron import megatron
from rightsize.export.names import Arg
from rightsize.export.plan_view import TrainingView

TAG = "1.22.0"
VERSION = f"Intel's Megatron-LM fork for Gaudi, tag {TAG} (core_r0.11.0 base; Intel Gaudi software 1.22.0)"
EXAMPLE = "HabanaAI/Megatron-LM examples/llama/pretrain_llama.sh at tag 1.22.0"
# flag the core_v0.13.0 mapping writes -> why the fork cannot take the plan with it
UNSUPPORTED = {
    "--pipeline-model-parallel-layout": "an uneven pipeline layout (the fork splits layers evenly)",
    "--recompute-modules": "recompute of named modules (the fork recomputes whole layers or selective attention)",
    "--use-custom-fsdp": "Megatron's custom FSDP for ZeRO-3 (the fork shards optimizer state only)",
    "--data-parallel-sharding-strategy": "Megatron's custom FSDP for ZeRO-3 (the fork shards optimizer state only)",
}
DROPPED = ("--attention-backend",)  # the fork's default (auto); attention runs through fused SDPA
HPU_ARGS: tuple[Arg, ...] = (
    ("--transformer-impl", "transformer_engine"),
    ("--distributed-backend", "nccl"),  # HCCL through the GPU Migration Toolkit
    ("--use-fused-sdpa", 1),
    ("--no-create-attention-mask-in-dataloader", None),
    ("--no-gradient-accumulation-fusion", None),
    ("--no-masked-softmax-fusion", None),
    ("--optimizer", "fusedadamw"),
)
ENV: tuple[tuple[str, str | None, str], ...] = (
    ("PT_HPU_GPU_MIGRATION", "1", f"CUDA calls and the nccl backend run on HPU and HCCL ({EXAMPLE})"),
    ("PT_HPU_LAZY_MODE", "1", f"lazy execution, the script's default ({EXAMPLE})"),
)


def megatron_gaudi(v: TrainingView) -> Launch:
    """`fw_megatron`'s arguments for the plan, translated to Intel's fork (see the module)."""
    base = megatron(v)
    out: list[Arg] = []
    for flag, value in base.arg_list:
        if flag in UNSUPPORTED:
            raise BadInput(
                f"{VERSION} cannot run this plan on {v.hw.accelerator}: it needs {UNSUPPORTED[flag]}.",
                f"The fork has no {flag} (its parser at tag {TAG}); on Gaudi, Megatron-LM is Intel's fork.",
                "Re-plan with parallel.recompute none/selective/full, ZeRO 1-2 and layers divisible by the "
                "pipeline stages, or plan for NVIDIA or AMD GPUs.",
            )
        if flag in DROPPED:
            continue
        if flag == "--moe-router-dtype":
            out.append(("--moe-router-fp32", None))
            continue
        out.append((flag, value))
    if v.model.norm == "rmsnorm":
        out.append(("--use-fused-rmsnorm", 1))
    notes = (
        f"Megatron-LM: {VERSION}, cloned into MEGATRON_DIR (git clone https://github.com/HabanaAI/Megatron-LM; "
        f"git checkout {TAG}), run on Intel Gaudi software {TAG} (its PyTorch 2.7.1 installer image or "
        "bare metal), one task per device under srun (ranks from Slurm), HPU settings as in "
        f"{EXAMPLE}.",
        *base.notes[1:],  # the recipe and layout notes; the first names NVIDIA's container
    )
    return Launch(
        "megatron", VERSION, base.entry, (*out, *HPU_ARGS), {}, base.torchrun, notes, (*base.env, *ENV)
    )
