"""Which attention backend a training stack really runs for a model's head width.

Fused attention kernels train only some head widths (catalog attention_kernels.yaml):
FlashAttention-1 up to 128, FlashAttention-2 and PyTorch SDPA's flash backend up to 256 (with a
tighter backward on sm86/89/120), cuDNN fused attention up to 128 except on Hopper and
Blackwell, FlashAttention-3 up to 256. Real stacks do not fail on a wider head: PyTorch SDPA
picks its memory-efficient backend, Transformer Engine the next backend that passes its filters,
and a stack that called FlashAttention-1 directly runs its own unfused attention. The plan prices
what the stack runs: another fused kernel (its catalogued fraction, never above the kernel it
replaces), or the unfused path, whose s x s scores are held in memory and timed as two GEMMs and
a memory-bound softmax (perf.attention, perf.memory).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from rightsize.catalog.attention_kernels import attention_kernel_catalog
from rightsize.errors import BadInput
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import qk_head_dim, v_head_dim
from rightsize.perf.workload import TrainWorkload

# How each backend is named in a plan's assumptions.
BACKEND_NAMES = {
    "flash1": "FlashAttention-1",
    "flash2": "FlashAttention-2",
    "cudnn": "cuDNN fused attention",
    "flash3": "FlashAttention-3",
    "efficient": "the memory-efficient fused kernel (PyTorch SDPA / xFormers CUTLASS)",
    "unfused": "unfused attention (s x s scores materialised)",
}


@dataclass(frozen=True)
class AttentionBackend:
    """The backend a stack runs for this model on this accelerator, and why."""

    requested: str  # the spec's kernel ('auto': the accelerator's usual stack)
    runs: str  # a kernel name, 'efficient' or 'unfused'
    note: str | None  # the plan's assumption line when the stack falls back

    @property
    def fused(self) -> bool:
        return self.runs != "unfused"


def model_head_dim(w: TrainWorkload) -> int:
    """The width a kernel is checked against: the wider of query/key and value heads (MLA)."""
    return max(qk_head_dim(w.arch), v_head_dim(w.arch))


def _vendor(acc_id: str) -> str | None:
    from rightsize.catalog.registry import get_accelerator

    try:
        return get_accelerator(acc_id).vendor
    except BadInput:  # a user-built Hardware: no vendor stack known
        return None


@cache
def _resolve(kernel: str, acc_id: str, head_dim: int, dropout: bool) -> tuple[str, str, str | None]:
    """(limits' kernel, backend run, note) for a spec kernel on an accelerator and head width."""
    cat = attention_kernel_catalog()
    limits_of = cat.auto_kernel_by_vendor.get(_vendor(acc_id) or "") if kernel == "auto" else kernel
    if limits_of is None or limits_of not in cat.kernels:
        return kernel, kernel, None
    cc = cat.compute_capability.get(acc_id)
    first = cat.kernels[limits_of]
    if first.runs(head_dim, cc, dropout):
        return limits_of, kernel, None
    runs = "unfused"
    for backend in first.fallback:
        nxt = cat.kernels.get(backend)
        if nxt is None or nxt.runs(head_dim, cc, dropout):
            runs = backend
            break
    asked = (
        f"the stack's usual kernel ({BACKEND_NAMES[limits_of]})"
        if kernel == "auto"
        else BACKEND_NAMES[kernel]
    )
    note = (
        f"Attention: {asked} cannot train {head_dim}-wide heads on {acc_id}; it {first.limit_text(cc)}. "
        f"Priced as what the stack falls back to: {BACKEND_NAMES[runs]} ({first.fallback_cite})."
    )
    return limits_of, runs, note


def attention_backend(w: TrainWorkload, hw: Hardware) -> AttentionBackend:
    """The attention backend `w` trains with on `hw` (the spec's kernel when it can run the
    model's head width, else the stack's fallback)."""
    if not w.flash_attention:
        return AttentionBackend(w.attention_kernel, "unfused", None)
    _, runs, note = _resolve(w.attention_kernel, hw.accelerator_id, model_head_dim(w), w.dropout)
    return AttentionBackend(w.attention_kernel, runs, note)


def with_supported_attention(w: TrainWorkload, hw: Hardware) -> tuple[TrainWorkload, Hardware]:
    """`w` and `hw` as the stack runs them: where the spec's kernel cannot train the model's head
    width, the unfused path (`w.flash_attention` off: scores in memory, perf.attention's unfused
    time) or the fallback kernel's fraction in place of the requested kernel's (`hw`'s ratio for
    that kernel). Unchanged when the kernel runs; applying it twice changes nothing more."""
    b = attention_backend(w, hw)
    if b.note is None:
        return w, hw
    if not b.fused:
        return replace(w, flash_attention=False), hw
    own = f"attention_ratio_{w.attention_kernel}"
    if b.runs == "efficient":
        # The memory-efficient kernel is of FlashAttention-1's generation (xFormers' CUTLASS
        # kernel; the catalog's flash1 fraction covers both): its fraction where catalogued,
        # never above the kernel it replaces.
        ratio = np.minimum(hw.attention_ratio_flash1, getattr(hw, own))
    else:
        ratio = getattr(hw, f"attention_ratio_{b.runs}")
    return w, hw.with_overrides(**{own: ratio})


def attention_notes(w: TrainWorkload, hw: Hardware) -> list[str]:
    """The plan's assumption line when the stack falls back for this model on `hw` (else none)."""
    note = attention_backend(w, hw).note
    return [note] if note else []
