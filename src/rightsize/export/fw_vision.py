"""A vision training plan as torchvision's classification reference's own arguments.

The trainer is `references/classification/train.py` of torchvision `TV_VERSION` (tag v0.21.0),
the recipe torchvision trained its published ResNet and ViT weights with (its README), in the
official PyTorch 2.6.0 image (`IMAGE`: the pytorch/pytorch Dockerfile's official stage installs
torch, torchvision and torchaudio from the release index; PyTorch's version table pairs 2.6.0
with torchvision 0.21.0). It is not in the torchvision wheel; the tests run its own
`get_args_parser` from a byte-for-byte copy (tests/data/torchvision_release.py).

train.py saves a checkpoint at the end of every epoch (`--output-dir`) but cannot resume it in
this release: it loads with `torch.load(weights_only=True)` a checkpoint holding its argparse
Namespace, which PyTorch 2.6+ refuses. `RESUME_FILE`, a launcher written beside the job, allows
argparse.Namespace (`torch.serialization.add_safe_globals`), drops `--resume` until the first
checkpoint exists, and runs train.py as `__main__` with the same arguments.

What train.py cannot express is refused with the reason: DALI (GPU) decode, fp8, LARS/LAMB, a
model or optimizer without a torchvision recipe, a fractional epoch count, Blackwell parts (the
image's CUDA 12.6 build has no sm_100/sm_120 code) and Grace (Arm) hosts (the image is x86-64).
"""

from __future__ import annotations

from dataclasses import dataclass

from rightsize.catalog import get_accelerator
from rightsize.errors import BadInput
from rightsize.export.names import Arg, ShellExpr, python_literal
from rightsize.export.vision_view import VisionTrainingView

TV_VERSION = "0.21.0"
TV_REPOSITORY = "https://github.com/pytorch/vision"
TRAIN_SCRIPT = "references/classification/train.py"
IMAGE = "pytorch/pytorch:2.6.0-cuda12.6-cudnn9-runtime"
VERSION = f"torchvision {TV_VERSION} classification reference ({TRAIN_SCRIPT}, tag v{TV_VERSION})"
VISION_DIR_VAR = "VISION_DIR"  # a checkout of TV_REPOSITORY at the tag
RESUME_FILE = "train_resumable.py"
ARM_HOSTED = ("gb200", "gb300")  # Grace Blackwell superchips: Arm (aarch64) hosts
STARTUP_S = 600  # start-up before the first step (the reliability model's restart time)
# preset -> torchvision.models builder name
MODELS = {"resnet50": "resnet50", "vit-b16": "vit_b_16", "vit-l16": "vit_l_16"}


@dataclass(frozen=True)
class Recipe:
    opt: str  # the optimizer it uses (train.py's default is SGD)
    global_batch: int  # the batch its learning rate was set for
    args: tuple[Arg, ...]


# The README's recipe per model (torchvision 0.21.0 references/classification/README.md), without
# the batch, epochs, precision and workers, which are the plan's. `opt` the optimizer it uses
# (train.py's default is SGD), `global_batch` the batch its learning rate was set for (the
# README's note on the published weights: GPUs x --batch-size).
RECIPES = {
    "vit_b_16": Recipe("adamw", 64 * 64, (
        ("--opt", "adamw"), ("--lr", 0.003), ("--wd", 0.3), ("--lr-scheduler", "cosineannealinglr"),
        ("--lr-warmup-method", "linear"), ("--lr-warmup-epochs", 30), ("--lr-warmup-decay", 0.033),
        ("--label-smoothing", 0.11), ("--mixup-alpha", 0.2), ("--auto-augment", "ra"), ("--clip-grad-norm", 1),
        ("--ra-sampler", None), ("--cutmix-alpha", 1.0), ("--model-ema", None))),
    "vit_l_16": Recipe("sgd", 16 * 64, (
        ("--lr", 0.5), ("--lr-scheduler", "cosineannealinglr"), ("--lr-warmup-method", "linear"),
        ("--lr-warmup-epochs", 5), ("--label-smoothing", 0.1), ("--mixup-alpha", 0.2), ("--auto-augment", "ta_wide"),
        ("--random-erase", 0.1), ("--weight-decay", 0.00002), ("--norm-weight-decay", 0.0), ("--clip-grad-norm", 1),
        ("--ra-sampler", None), ("--cutmix-alpha", 1.0), ("--model-ema", None), ("--val-resize-size", 232))),
}  # fmt: skip
# ResNet-50 with SGD: Goyal et al. 2017 (arXiv:1706.02677), the large-batch recipe train.py's
# defaults follow (lr 0.1 per 256 images, momentum 0.9, weight decay 1e-4, /10 every 30 epochs):
# the learning rate scaled linearly with the global batch (section 2.1) and reached by a linear
# warm-up over 5 epochs from the base rate (section 2.2).
BASE_LR, BASE_BATCH, WARMUP_EPOCHS = 0.1, 256, 5


def _refuse(what: str, why: str, fix: str) -> BadInput:
    return BadInput(f"{VERSION} cannot run this plan: {what}.", why, fix)


def check(v: VisionTrainingView) -> str:
    """The torchvision model name; BadInput for what train.py cannot run as planned."""
    if v.hw.accelerator in ARM_HOSTED:
        raise _refuse(
            f"{v.hw.accelerator} nodes, whose hosts are Arm (Grace) CPUs",
            f"The pinned image {IMAGE} carries CUDA PyTorch for x86-64 only (its arm64 variant installs the CPU "
            "build: pytorch/pytorch Dockerfile, official stage).",
            "Plan an x86-hosted NVIDIA node, or build the trainer's environment for arm64.",
        )
    if "fp4" in get_accelerator(v.hw.accelerator).peak_dense_flops_per_s:  # FP4 tensor cores: Blackwell
        raise _refuse(
            f"{v.hw.accelerator} (Blackwell)",
            f"PyTorch 2.6.0's CUDA 12.6 build in {IMAGE} has no Blackwell code (CUDA 12.8 is the first with it).",
            "Plan Hopper, Ada or Ampere GPUs for this recipe, or run a newer torchvision reference yourself.",
        )
    model = MODELS.get(v.model)
    if model is None:
        raise _refuse(
            f"the model {v.model}",
            f"The export writes torchvision's recipes for {', '.join(MODELS)}.",
            "Plan one of those models, or run your own trainer with the plan's figures.",
        )
    if v.decode == "gpu":
        raise _refuse(
            "GPU (DALI) image decode",
            "train.py decodes and augments with the PyTorch DataLoader on CPU workers; it has no DALI path.",
            "Plan with train.decode: cpu.",
        )
    if v.precision == "fp8":
        raise _refuse(
            "fp8 compute",
            "train.py's --amp is torch.cuda.amp (fp16 autocast with loss scaling); it has no fp8.",
            "Plan with train.precision: bf16 or fp16.",
        )
    recipe_opt = RECIPES[model].opt if model in RECIPES else "sgd"
    if v.optimizer != recipe_opt:
        raise _refuse(
            f"{v.optimizer} for {model}",
            f"torchvision's recipe trains {model} with {recipe_opt}; train.py offers SGD, RMSprop and AdamW only "
            "and no recipe for this pair.",
            f"Plan with train.optimizer: {recipe_opt}.",
        )
    if abs(v.epochs - round(v.epochs)) > 1e-9 or v.epochs < 1:
        raise _refuse(
            f"{v.epochs:g} epochs",
            "train.py runs whole epochs (--epochs is an integer) and schedules its learning rate by epoch.",
            "Plan a whole number of epochs.",
        )
    return model


def workers(v: VisionTrainingView) -> int:
    """DataLoader worker processes per GPU: the plan's decode cores (at least one)."""
    return max(1, round(v.loader_cores_per_gpu))


def vision_arg_list(v: VisionTrainingView, data: ShellExpr, ckpt: ShellExpr) -> list[Arg]:
    """train.py's arguments: the plan's model, batch, epochs, precision, workers, data and
    checkpoint folder; the recipe's optimizer and schedule."""
    model = check(v)
    args: list[Arg] = [
        ("--data-path", data),
        ("--model", model),
        ("--batch-size", v.batch_per_gpu),
        ("--epochs", round(v.epochs)),
        ("--workers", workers(v)),
    ]
    if model in RECIPES:
        args += RECIPES[model].args
    else:
        scale = v.global_batch / BASE_BATCH
        args += [("--opt", "sgd"), ("--lr", round(BASE_LR * scale, 6))]
        if scale > 1:
            args += [("--lr-warmup-epochs", WARMUP_EPOCHS), ("--lr-warmup-method", "linear"),
                     ("--lr-warmup-decay", round(1 / scale, 6))]  # fmt: skip
    args += [("--amp", None), ("--output-dir", ckpt), ("--resume", ShellExpr(ckpt.text + "/checkpoint.pth"))]
    return args


def notes(v: VisionTrainingView) -> list[str]:
    model = check(v)
    if model in RECIPES:
        lr = f"optimizer and schedule: the README's {model} recipe, set for a global batch of {RECIPES[model].global_batch}"
        if RECIPES[model].global_batch != v.global_batch:
            lr += f"; the plan's is {v.global_batch}: tune the learning rate"
    else:
        lr = (f"SGD at lr {BASE_LR} x {v.global_batch}/{BASE_BATCH} with a {WARMUP_EPOCHS}-epoch linear warm-up "
              "(Goyal et al. 2017, the large-batch rule); momentum, weight decay and steps: train.py's defaults")  # fmt: skip
    epoch = v.epoch_s
    return [
        f"trainer: {TRAIN_SCRIPT} of {TV_REPOSITORY} at tag v{TV_VERSION}, in {IMAGE} (PyTorch 2.6.0, torchvision {TV_VERSION})",
        f"batch: {v.batch_per_gpu} images per GPU x {v.gpus} GPUs = {v.global_batch}; {round(v.epochs)} epochs of "
        f"{v.images_per_epoch:.4g} images ({v.steps} steps); {workers(v)} DataLoader workers per GPU (the plan's decode cores)",
        f"precision: the plan's {v.precision} as --amp (fp16 autocast with loss scaling, the same tensor-core rate)",
        lr,
        f"checkpoints: every epoch ({epoch:.0f} s planned) to CKPT_DIR, all kept (model_N.pth, and checkpoint.pth: "
        f"{(round(v.epochs) + 1) * v.checkpoint_bytes / 1e9:.1f} GB at the end); the plan's "
        f"Young/Daly interval is {v.checkpoint_interval_s:.0f} s"
        + (
            ""
            if epoch <= v.checkpoint_interval_s
            else ": an epoch is longer, so a failure loses up to an epoch"
        ),
        f"resume: {RESUME_FILE} (beside the job) lets train.py load its own checkpoint.pth (PyTorch 2.6 refuses its "
        "argparse Namespace under weights_only) and starts fresh until one exists",
        "data: DATA_PATH = an ImageFolder root with train/ and val/ (one folder per class)",
    ]


def resume_script() -> str:
    """The launcher: `python train_resumable.py TRAIN_PY ARGS...` runs TRAIN_PY as __main__ with
    ARGS, argparse.Namespace allowed in checkpoints, and `--resume FILE` dropped while FILE does
    not exist (the first start)."""
    return "\n".join([
        f'"""Run torchvision {TV_VERSION}\'s {TRAIN_SCRIPT} so that it can resume its own checkpoints (written by rightsize)."""',
        "import argparse",
        "import os",
        "import runpy",
        "import sys",
        "",
        "import torch",
        "",
        "torch.serialization.add_safe_globals([argparse.Namespace])  # train.py saves its args in each checkpoint",
        "script, args = sys.argv[1], sys.argv[2:]",
        f"if {python_literal('--resume')} in args:",
        f"    at = args.index({python_literal('--resume')})",
        "    if not os.path.exists(args[at + 1]):  # no checkpoint yet: the first start",
        "        del args[at : at + 2]",
        "sys.argv = [script, *args]",
        "sys.path.insert(0, os.path.dirname(os.path.abspath(script)))",
        "runpy.run_path(script, run_name='__main__')",
        "",
    ])  # fmt: skip
