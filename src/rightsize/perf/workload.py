"""What one training evaluation is about: the model, the batch, the precision, and
the parallel configurations to evaluate, as a struct of numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from rightsize.perf.params import ALL_LINEAR, NF4_BYTES_PER_PARAM, trainable_params
from rightsize.perf.remat import CODES as REMAT_CODES
from rightsize.spec.model import ModelArch

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.spec.training import TrainingWorkload

# Remat policies by name (perf.remat): none 0, selective 1, full 2, then MaxText's names.
RECOMPUTE_CODES = dict(REMAT_CODES)

# NVFP4 (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv 2509.25149, 2025):
# 4-bit E2M1 values in 16-element blocks, each with an E4M3 scale: 0.5 + 1/16 bytes each.
NVFP4_BYTES_PER_ELEMENT = 0.5 + 1.0 / 16.0
RECOMPUTE_NAMES = {v: k for k, v in RECOMPUTE_CODES.items()}

# Bytes per parameter of each optimizer's state, kept in fp32 (mixed-precision
# training keeps an fp32 master copy: Micikevicius et al. 2018; Rajbhandari et al.
# 2020, ZeRO, section 3.1: "K = 12" for Adam = master weights + momentum + variance).
OPTIMIZER_STATE_BYTES_PER_PARAM = {"adamw": 12.0, "adam": 12.0, "sgd": 8.0}

# Bytes the optimizer update reads and writes per parameter it owns: Adam reads the
# fp32 master, m, v and the gradient (16), writes master, m, v (12) and the 16-bit
# working copy (2). SGD with momentum: reads master, momentum, grad (12), writes 10.
OPTIMIZER_UPDATE_BYTES_PER_PARAM = {"adamw": 30.0, "adam": 30.0, "sgd": 22.0}


@dataclass(frozen=True)
class TrainWorkload:
    """The scalar side of a training evaluation."""

    arch: ModelArch
    seq_len: int
    global_batch: int  # sequences per optimizer step
    precision: str  # compute dtype of the matrix multiplies: fp16 | bf16 | fp8
    optimizer: str = "adamw"
    flash_attention: bool = True
    dropout: bool = False
    method: str = "full"  # full | lora | qlora
    lora_rank: int = 16  # used when method is lora or qlora
    lora_targets: tuple[str, ...] = ALL_LINEAR
    moe_capacity_factor: float = 1.0  # busiest expert's load / the even share
    optimizer_offload: bool = False  # optimizer states in host memory, streamed for the update
    fp8_recipe: str = "auto"  # which GEMMs run in fp8 and how they are scaled (perf.layer)
    moe_dispatch_dtype: str = "bf16"  # MoE dispatch wire dtype: bf16 | fp8 (quantised before dispatch)
    moe_dispatcher: str = "auto"  # Megatron-Core token dispatcher: auto | alltoall | deepep | hybridep
    attention_kernel: str = "auto"  # flash1 | flash2 | cudnn | flash3 | auto (the accelerator's usual)
    cp_comm: str = "p2p"  # context-parallel attention: p2p | all_gather | a2a | torch_allgather
    cp_load_balance: bool = True  # zig-zag chunks balance causal work over cp ranks
    tp_comm_overlap: bool | None = None  # TP collectives overlapped with GEMMs; None: the stack's usual
    grad_reduce_in_fp32: bool | None = None  # gradient buffers in fp32; None: the stack's default
    cuda_graph_scope: str = "auto"  # what CUDA graphs capture (perf.host_overhead)

    @classmethod
    def from_spec(cls, arch: ModelArch, training: TrainingWorkload) -> TrainWorkload:
        """The workload of a spec's `training:` section (every field, fine-tuning included)."""
        lora = training.lora
        return cls(
            arch=arch,
            seq_len=training.seq_len,
            global_batch=training.global_batch_seqs,
            precision=training.precision,
            optimizer=training.optimizer,
            flash_attention=training.flash_attention,
            method=training.method,
            lora_rank=lora.rank if lora is not None else 16,
            lora_targets=tuple(lora.targets) if lora is not None else ALL_LINEAR,
            moe_capacity_factor=training.moe_capacity_factor,
            optimizer_offload=training.optimizer_offload,
            fp8_recipe=training.fp8_recipe,
            moe_dispatch_dtype=training.moe_dispatch_dtype,
            moe_dispatcher=training.moe_dispatcher,
            attention_kernel=training.attention_kernel,
            cp_comm=training.cp_comm,
            cp_load_balance=training.cp_load_balance,
            tp_comm_overlap=training.tp_comm_overlap,
            grad_reduce_in_fp32=training.grad_reduce_in_fp32,
            cuda_graph_scope=training.cuda_graph_scope,
        )

    @property
    def frozen_base(self) -> bool:
        """True when the base weights get no gradients (LoRA, QLoRA)."""
        return self.method != "full"

    @property
    def trainable_params(self) -> float:
        """Parameters with gradients and optimizer state (all, or only the adapters)."""
        return trainable_params(self.arch, self.method, rank=self.lora_rank, targets=self.lora_targets)

    @property
    def base_weight_bytes(self) -> float:
        """Bytes per base (transformer-block linear) weight held on the GPU.

        Full training keeps 16-bit working weights (fp8 GEMMs cast them on the fly). A frozen
        LoRA base needs no master copy, so it is stored in the compute precision (Transformer
        Engine's fp8 parameters, as in NVIDIA's MLPerf LoRA runs). QLoRA stores NF4.
        """
        if self.method == "qlora":
            return NF4_BYTES_PER_PARAM
        if self.method == "lora" and self.precision == "fp8":
            return 1.0
        return 2.0

    @property
    def fp8_dispatch(self) -> bool:
        """MoE tokens quantised once before an fp8 expert-parallel dispatch (spec moe_dispatch_dtype)."""
        return self.precision == "fp8" and self.moe_dispatch_dtype == "fp8"

    @property
    def moe_dispatch_bytes_per_element(self) -> float:
        """Bytes per element of the forward MoE dispatch on the wire: 16 bit, or fp8 plus its scales
        after an fp8 quantisation: one fp32 per 128 values (DeepSeek-V3 report sec. 3.3, 1x128
        tiles), the same 1/32 byte per value as MXFP8's one E8M0 per 32."""
        return 1.0 + 4.0 / 128.0 if self.fp8_dispatch else 2.0

    @property
    def gemm_elem_bytes(self) -> float:
        if self.precision == "nvfp4":
            return NVFP4_BYTES_PER_ELEMENT
        return 1.0 if self.precision == "fp8" else 2.0

    @property
    def grad_bytes(self) -> float:
        """Gradient buffer element size (held per parameter, and what the data-parallel
        reduction moves). Megatron-LM keeps fp32 main gradients for bf16 and fp8
        (accumulate_allreduce_grads_in_fp32) and fp16 gradients for fp16; a stack that sets
        `grad_reduce_in_fp32` false (Megatron-Core's DistributedDataParallelConfig, as
        Megatron-Bridge's performance recipes do) keeps and reduces them in 16 bit."""
        if self.grad_reduce_in_fp32 is not None:
            return 4.0 if self.grad_reduce_in_fp32 else 2.0
        return 2.0 if self.precision == "fp16" else 4.0

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len


# Configurations evaluated per vectorised pass. The model runs a few hundred array
# operations per pass; over 65536 rows their temporaries (512 KiB each) stay in cache and
# are reused from the allocator's free lists, where one pass over a million rows writes
# every temporary to fresh memory: the 405B search's step model ran 2.4x faster in runs
# of 65536 than in one pass of 159273 layouts (this machine, 2026-11-23).
EVAL_CHUNK_ROWS = 65536


@dataclass
class ParallelConfigs:
    """N parallel configurations, one per array element (struct of arrays)."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    vpp: np.ndarray
    micro_batch: np.ndarray
    recompute: np.ndarray  # RECOMPUTE_CODES
    sequence_parallel: np.ndarray  # bool
    zero_stage: np.ndarray

    def __post_init__(self) -> None:
        n = max(np.size(getattr(self, f.name)) for f in fields(self))
        for f in fields(self):
            # float64 throughout: the model's arithmetic is floating point, and converting
            # integer arrays in every expression costs more than the arithmetic itself.
            dtype = bool if f.name == "sequence_parallel" else np.float64
            arr = np.broadcast_to(np.asarray(getattr(self, f.name), dtype=dtype), (n,))
            setattr(self, f.name, np.ascontiguousarray(arr))

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    @cached_property
    def gpus(self) -> np.ndarray:
        """tp x pp x dp x cp per configuration (computed once: the search reads it often)."""
        return self.tp * self.pp * self.dp * self.cp

    def take(self, index: np.ndarray | int | slice) -> ParallelConfigs:
        idx = index if isinstance(index, slice) else np.atleast_1d(np.asarray(index))
        # The columns are already of their dtype and one length: skip __post_init__'s
        # conversions (the search takes subsets hundreds of times).
        out = object.__new__(ParallelConfigs)
        for f in fields(self):
            setattr(out, f.name, np.ascontiguousarray(getattr(self, f.name)[idx]))
        return out

    def chunks(self) -> list[slice]:
        """The configurations in runs of at most EVAL_CHUNK_ROWS (see there)."""
        n = len(self)
        return [slice(a, min(a + EVAL_CHUNK_ROWS, n)) for a in range(0, n, EVAL_CHUNK_ROWS)]

    def row(self, i: int) -> dict[str, int | bool | str]:
        """One configuration as plain Python values (for reports)."""
        out: dict[str, int | bool | str] = {}
        for f in fields(self):
            v = getattr(self, f.name)[i]
            out[f.name] = bool(v) if f.name == "sequence_parallel" else int(v)
        out["recompute"] = RECOMPUTE_NAMES[int(self.recompute[i])]
        return out

    @classmethod
    def single(
        cls,
        *,
        tp: int = 1,
        pp: int = 1,
        dp: int = 1,
        cp: int = 1,
        ep: int = 1,
        vpp: int = 1,
        micro_batch: int = 1,
        recompute: str = "none",
        sequence_parallel: bool = False,
        zero_stage: int = 0,
    ) -> ParallelConfigs:
        return cls(
            tp=np.array([tp]),
            pp=np.array([pp]),
            dp=np.array([dp]),
            cp=np.array([cp]),
            ep=np.array([ep]),
            vpp=np.array([vpp]),
            micro_batch=np.array([micro_batch]),
            recompute=np.array([RECOMPUTE_CODES[recompute]]),
            sequence_parallel=np.array([sequence_parallel]),
            zero_stage=np.array([zero_stage]),
        )
