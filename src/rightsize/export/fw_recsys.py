"""A recommendation training plan as TorchRec's DLRM trainer's own arguments.

The trainer is `torchrec_dlrm/dlrm_main.py` of facebookresearch/dlrm at `DLRM_COMMIT`: the
reference MLPerf Training's DLRM-DCNv2 benchmark runs (its README, "Running the MLPerf DLRM v2
benchmark"), so what a user trains a Criteo-shaped DLRM with. It is on no package index; the
tests run its own `parse_args` from a byte-for-byte copy (tests/data/dlrm_release.py). It runs
on TorchRec `TORCHREC_VERSION` with FBGEMM-GPU of the same number, the pair built for PyTorch
2.7 (FBGEMM's release compatibility table, pytorch.org/FBGEMM/general/Releases.html: 1.2.0 for
PyTorch 2.7.x, CUDA 11.8/12.6/12.8, architectures 7.0 to 12.0a; TorchRec "Setting up TorchRec":
matching TorchRec and FBGEMM numbers are tested together, installed from PyTorch's per-CUDA
index), in the official PyTorch 2.7.0 CUDA 12.8 image (`PYTORCH_IMAGE`; CUDA 12.8 is the first
with Blackwell). That image is built for x86-64 hosts: Grace (Arm) nodes are refused.

What the trainer cannot express is refused with the reason: a model that is not Criteo-shaped
(13 dense features, 26 tables: `torchrec.datasets.criteo`), bf16/fp16 dense compute (it has
no autocast; fp32, or TF32 with --allow_tf32), tables stored other than fp32, tables on SSD, a
global batch that does not split evenly over the GPUs, and a run the plan expects to
checkpoint (dlrm_main.py writes no checkpoint).
"""

from __future__ import annotations

import math

from rightsize.errors import BadInput
from rightsize.export.names import Arg, ShellExpr
from rightsize.export.recsys_view import RecsysTrainingView

DLRM_REPOSITORY = "https://github.com/facebookresearch/dlrm"
DLRM_COMMIT = "090956ee2319ddd349a42232958aefccfe3f7b0a"  # main, 2025-10-02
DLRM_SCRIPT = "torchrec_dlrm/dlrm_main.py"
TORCHREC_VERSION = "1.2.0"
# The packages the trainer imports beyond PyTorch, pinned: torchrec 1.2.0 itself requires
# torchmetrics==1.0.3; torch==2.7.0 keeps pip from replacing the image's PyTorch. TorchRec and
# FBGEMM-GPU come from PyTorch's CUDA 12.8 index (their +cu128 builds), the rest from PyPI.
PIP_INDEX = "https://download.pytorch.org/whl/cu128"
PIP_PACKAGES = (
    f"torchrec=={TORCHREC_VERSION}",
    f"fbgemm-gpu=={TORCHREC_VERSION}",
    "torchmetrics==1.0.3",
    "torch==2.7.0",
    "pyre-extensions==0.0.32",
    "tqdm",
)
# Docker Hub pytorch/pytorch: PyTorch 2.7.0, CUDA 12.8 (a CUDA build FBGEMM 1.2.0 supports).
PYTORCH_IMAGE = "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime"
# Grace Blackwell superchips: their hosts are Arm (aarch64) Grace CPUs.
ARM_HOSTED = ("gb200", "gb300")
PIP_COMMAND = ("pip", "install", "--no-cache-dir", "--extra-index-url", PIP_INDEX, *PIP_PACKAGES)
VERSION = f"TorchRec {TORCHREC_VERSION} DLRM trainer (facebookresearch/dlrm {DLRM_COMMIT[:7]}, {DLRM_SCRIPT})"
DLRM_DIR_VAR = "DLRM_DIR"  # a checkout of DLRM_REPOSITORY at DLRM_COMMIT
CRITEO_DENSE = 13  # torchrec.datasets.criteo: DEFAULT_INT_NAMES
CRITEO_TABLES = 26  # DEFAULT_CAT_NAMES
# The MLPerf DLRM v2 recipe of the trainer's README at DLRM_COMMIT: Adagrad at learning rate
# 0.005 for a global batch of 65536, validation 20 times per epoch.
RECIPE_LR = 0.005
RECIPE_GLOBAL_BATCH = 65536
VALIDATIONS_PER_EPOCH = 20
STARTUP_S = 600  # start-up before the first step (the reliability model's restart time)


def _refuse(what: str, why: str, fix: str) -> BadInput:
    return BadInput(f"{VERSION} cannot run this plan: {what}.", why, fix)


def check(v: RecsysTrainingView) -> None:
    """Refuse what dlrm_main.py cannot express (module docstring)."""
    a = v.arch
    if v.hw.accelerator in ARM_HOSTED:
        raise _refuse(
            f"{v.hw.accelerator} nodes, whose hosts are Arm (Grace) CPUs",
            f"The pinned image {PYTORCH_IMAGE} carries CUDA PyTorch for x86-64 only (its arm64 variant installs the "
            "CPU build: pytorch/pytorch Dockerfile, official stage).",
            "Plan an x86-hosted NVIDIA node (HGX B200, H100, H200), or build the trainer's environment for arm64.",
        )
    if (
        a.dense_features != CRITEO_DENSE
        or len(v.table_rows) != CRITEO_TABLES
        or a.interaction not in ("dot", "dcn")
    ):
        raise _refuse(
            f"the model {a.name} has {a.dense_features} dense features, {len(v.table_rows)} tables and "
            f"{a.interaction} interaction",
            "dlrm_main.py trains Criteo-shaped models only (13 dense features, 26 tables; "
            "torchrec.datasets.criteo), with dot-product or DCN interaction.",
            "Plan a Criteo-shaped model (dlrm-dcnv2-criteo), or write a TorchRec trainer for this model.",
        )
    if v.dense_precision in ("bf16", "fp16"):
        raise _refuse(
            f"dense compute in {v.dense_precision}",
            "dlrm_main.py has no autocast: its MLPs and interaction run in fp32, or TF32 with "
            "--allow_tf32; the plan's step time assumes the faster 16-bit rate.",
            "Plan with train.precision: tf32 (or fp32) to export this trainer.",
        )
    if v.table_precision != "fp32":
        raise _refuse(
            f"{v.table_precision} embedding tables",
            "dlrm_main.py builds its tables as EmbeddingBagConfig with the default fp32 rows.",
            "Plan with embeddings.precision: fp32.",
        )
    if v.ssd_table_bytes > 0:
        raise _refuse(
            "tables on SSD",
            "dlrm_main.py lets TorchRec's planner place tables in HBM or host memory (UVM); it has no SSD tier.",
            "Plan with more GPUs, or fewer table rows, so the tables fit HBM and host memory.",
        )
    if v.global_batch % v.gpus:
        raise _refuse(
            f"a global batch of {v.global_batch} over {v.gpus} GPUs",
            "--batch_size is per GPU; the global batch is it times the world size.",
            "Plan a global batch that is a multiple of the GPU count.",
        )
    work_s = v.run_s * (1.0 + v.safety_margin)
    if work_s > v.checkpoint_interval_s:
        raise _refuse(
            f"a {work_s / 3600:.1f} h run (safety margin included) that the plan checkpoints every "
            f"{v.checkpoint_interval_s / 3600:.1f} h",
            "dlrm_main.py writes no checkpoint: a failure restarts the run from the beginning.",
            "Split the run into jobs shorter than the interval (fewer epochs or samples each), or add "
            "checkpointing (DistributedModelParallel's state_dict) to the trainer.",
        )
    # dlrm_main.py's --adagrad is torch.optim.Adagrad, which TorchRec fuses as FBGEMM
    # EXACT_ADAGRAD (torchrec 1.2.0 distributed/utils.py): one accumulator per weight. The
    # trainer keeps every table and that state in HBM (it has no option for UVM caching), so
    # they must fit the HBM the plan leaves for embeddings; a plan that puts tables in host
    # memory behind an HBM cache cannot run as planned.
    if v.embedding_budget_bytes_per_gpu and 2 * v.tables_bytes > v.embedding_budget_bytes_per_gpu * v.gpus:
        raise _refuse(
            f"{2 * v.tables_bytes / 1e9:.0f} GB of tables and Adagrad state over {v.gpus} GPUs with "
            f"{v.embedding_budget_bytes_per_gpu / 1e9:.0f} GB each for embeddings",
            "dlrm_main.py keeps every table and its Adagrad state (FBGEMM EXACT_ADAGRAD: one accumulator "
            "per weight, twice the tables' bytes) in HBM; the plan keeps what does not fit in host memory "
            "behind an HBM cache, which the trainer cannot do.",
            "Plan with more GPUs (targets.gpus) so the tables and their state fit HBM, or give the trainer a "
            "TorchRec sharding plan with UVM caching.",
        )


def epochs_and_limit(v: RecsysTrainingView) -> tuple[int, int | None]:
    """(--epochs, --limit_train_batches): whole epochs as they are; a run shorter than one
    epoch as one epoch cut at its steps; a fractional count above one is refused."""
    if v.epochs < 1:
        return 1, v.steps
    if abs(v.epochs - round(v.epochs)) > 1e-9:
        raise _refuse(
            f"{v.epochs:g} epochs",
            "dlrm_main.py runs whole epochs (--epochs is an integer; --limit_train_batches cuts every epoch).",
            "Plan a whole number of epochs.",
        )
    return round(v.epochs), None


def dlrm_arg_list(v: RecsysTrainingView, data: ShellExpr) -> list[Arg]:
    """dlrm_main.py's arguments: the plan's model, batch, epochs and data (the MLPerf v2
    materialized multi-hot dataset at `data`), the README's recipe for the rest."""
    check(v)
    a = v.arch
    epochs, limit = epochs_and_limit(v)
    steps_per_epoch = max(1, math.ceil(v.samples_per_epoch / v.global_batch))
    args: list[Arg] = [
        ("--epochs", epochs),
        ("--batch_size", v.batch_per_gpu),
        ("--num_embeddings_per_feature", ",".join(str(r) for r in v.table_rows)),
        ("--embedding_dim", v.embedding_dim),
        ("--dense_arch_layer_sizes", ",".join(str(x) for x in a.bottom_mlp)),
        ("--over_arch_layer_sizes", ",".join(str(x) for x in a.top_mlp)),
        ("--interaction_type", "dcn" if a.interaction == "dcn" else "original"),
    ]
    if a.interaction == "dcn":
        args += [("--dcn_num_layers", a.dcn_layers), ("--dcn_low_rank_dim", a.dcn_low_rank)]
    if a.optimizer.startswith("adagrad"):
        args.append(("--adagrad", None))
    args += [
        ("--learning_rate", RECIPE_LR),
        ("--synthetic_multi_hot_criteo_path", data),
        ("--validation_freq_within_epoch", max(1, steps_per_epoch // VALIDATIONS_PER_EPOCH)),
        ("--pin_memory", None),
        ("--mmap_mode", None),
    ]
    if limit is not None:
        args.append(("--limit_train_batches", limit))
    if v.dense_precision == "tf32":
        args.append(("--allow_tf32", None))
    return args


def notes(v: RecsysTrainingView) -> list[str]:
    """Header lines: what was chosen for the trainer, and why."""
    lr = f"learning rate {RECIPE_LR} (the README's MLPerf DLRM v2 recipe, global batch {RECIPE_GLOBAL_BATCH})"
    if v.global_batch != RECIPE_GLOBAL_BATCH:
        lr += f"; the plan's global batch is {v.global_batch}: tune it"
    return [
        f"trainer: {DLRM_SCRIPT} at {DLRM_REPOSITORY} commit {DLRM_COMMIT} (the MLPerf DLRM-DCNv2 reference)",
        f"environment: {PYTORCH_IMAGE} with {' '.join(PIP_COMMAND)}",
        f"batch: {v.batch_per_gpu} per GPU x {v.gpus} GPUs = the plan's global batch {v.global_batch}; "
        f"{v.steps} steps over {v.epochs:g} epoch(s) of {v.samples_per_epoch:.4g} samples",
        f"dense compute: {v.dense_precision}"
        + (" (--allow_tf32)" if v.dense_precision == "tf32" else "")
        + f"; tables fp32, {len(v.table_rows)} of them, {v.tables_bytes / 1e9:.1f} GB, placed by TorchRec's planner",
        lr,
        "optimizer: --adagrad is torch.optim.Adagrad, fused by TorchRec as FBGEMM EXACT_ADAGRAD (one "
        "accumulator per weight; the plan assumed row-wise state)",
        f"data: DATA_PATH = the MLPerf v2 materialized multi-hot Criteo dataset ({v.dataset_bytes / 1e12:.1f} TB "
        "planned; the README's materialize_synthetic_multihot_dataset.py); read with --mmap_mode",
        f"checkpoints: none (dlrm_main.py writes none); the plan's interval {v.checkpoint_interval_s / 3600:.1f} h "
        f"exceeds the run ({v.run_s / 3600:.2f} h), so a failure reruns the job",
    ]
