"""What every framework writer shares: the pinned releases, the `Launch` they return, the
checkpoint interval in steps, and the inputs every job needs (tokenizer, data)."""

from __future__ import annotations

from dataclasses import dataclass

from rightsize.errors import BadInput
from rightsize.export.names import Arg, ShellExpr, shell_args
from rightsize.export.plan_view import TrainingView

# The releases the arguments are written for (and checked against in the tests).
FRAMEWORKS = {
    "megatron": "Megatron-LM core_v0.13.0 (pretrain_gpt.py)",
    "torchtitan": "torchtitan v0.1.0 (torchtitan.train, TOML job config)",
    "nemo": "NeMo 2.3.0 (nemo_toolkit, in the NeMo 25.04 container; nemo.collections.llm recipes)",
}
# Megatron-LM on NVIDIA: the base image of the release's own CI (.gitlab/stages/01.build.yml at
# core_v0.13.0); the NGC PyTorch image carries no Megatron-LM, so the tag is checked out beside
# it ($MEGATRON_DIR on Slurm; an init container on Kubernetes). Not the NeMo 25.04 image's own
# Megatron-LM: NeMo 2.3.0 pins 0.12.0rc4, which lacks flags the export writes.
MEGATRON_IMAGE = "nvcr.io/nvidia/pytorch:25.05-py3"
MEGATRON_REPOSITORY = "https://github.com/NVIDIA/Megatron-LM.git"
MEGATRON_TAG = "core_v0.13.0"
# The container each release runs in, on NVIDIA GPUs (for the job writers that pin an image;
# a plan for another vendor needs that vendor's build of the framework).
CONTAINERS = {
    "megatron": f"{MEGATRON_IMAGE} with Megatron-LM checked out at {MEGATRON_TAG}",
    "torchtitan": "a PyTorch 2.8 image with torchtitan==0.1.0 installed",
    "nemo": "nvcr.io/nvidia/nemo:25.04",
}

# The environment variables every training job reads: the Slurm and Kubernetes writers require
# the ones an argument names (a missing one stops the job with its name before anything starts).
TOKENIZER_VAR = "TOKENIZER_MODEL"  # a Hugging Face tokenizer: its hub id or a local folder
DATA_VAR = "DATA_PATH"
TOKENIZER = ShellExpr("$" + TOKENIZER_VAR)
DATA = ShellExpr("$" + DATA_VAR)


@dataclass(frozen=True)
class Launch:
    """How the framework starts: the command each torchrun/srun task runs, and extra files.

    `arg_list` holds the arguments as (flag, value) pairs; `args` is the same as shell text
    (`names.shell_args`: each entry `--flag WORD`, the value quoted), ready to join with
    spaces or continued lines into a script; `names.argv(arg_list)` gives an argument vector.
    `notes` are lines for the job file's header: what was chosen for the framework and why.
    `env` is what the framework itself needs of the environment, as (name, value, why); value
    None: the variable must be unset. It takes precedence over the writer's fabric settings.
    """

    framework: str
    version: str
    entry: str  # the module or script torchrun runs (or srun, for NeMo): code-made shell text
    arg_list: tuple[Arg, ...]
    files: dict[str, str]  # file name -> content written beside the job script
    torchrun: bool  # True: srun starts one torchrun per node; False: srun starts one task per GPU
    notes: tuple[str, ...] = ()
    env: tuple[tuple[str, str | None, str], ...] = ()

    @property
    def args(self) -> list[str]:
        """The arguments as shell text, one quoted `--flag WORD` per entry."""
        return shell_args(self.arg_list)


def save_interval_steps(v: TrainingView) -> int:
    """Checkpoint every Young/Daly interval from the reliability model, in optimizer steps."""
    return max(1, round(v.checkpoint_interval_s / v.step_time_s))


def refuse(framework: str, what: str, why: str, fix: str) -> BadInput:
    """The framework cannot express the plan: say what, why, and what to use instead."""
    return BadInput(f"{FRAMEWORKS[framework]} cannot run this plan: {what}.", why, fix)


def container_note(v: TrainingView, framework: str) -> str:
    """The header line naming where the release runs: the pinned image on NVIDIA GPUs, the
    vendor's own build elsewhere."""
    if v.hw.vendor == "nvidia":
        return f"Container: {CONTAINERS[framework]}."
    release = FRAMEWORKS[framework].split(" (")[0]
    return f"Container: the {v.hw.vendor.upper()} build of {release}, not the framework's own release image."


def tokens_per_step(v: TrainingView) -> int:
    return v.global_batch * v.seq_len
