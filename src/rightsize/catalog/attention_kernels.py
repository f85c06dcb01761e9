"""Head-dimension limits of fused attention kernels (``data/attention_kernels.yaml``).

Which head widths each named training kernel (flash1, flash2, cudnn, flash3) can run forward
and backward, per compute capability, the backends its stack tries next when it cannot, and
which kernel's limits a vendor's usual stack ('auto') has. perf.attention_kernels decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    read_data_file,
    require_mapping,
    sourced,
)

FILE = "attention_kernels.yaml"
# What a stack may fall back to: another named kernel, the memory-efficient fused kernel, or
# the unfused path (scores materialised).
BACKENDS = frozenset({"flash1", "flash2", "cudnn", "flash3", "efficient", "unfused"})
_KERNEL_KEYS = frozenset(
    {
        "max_head_dim",
        "max_head_dim_by_cc",
        "training_max_head_dim_by_cc",
        "training_ok_above_without_dropout_by_cc",
        "fallback",
        "fallback_source",
        "cite",
        "fallback_cite",
    }
)


@dataclass(frozen=True)
class KernelLimits:
    """One kernel's head-dimension limits and its stack's fallback order."""

    name: str
    max_head_dim: Sourced
    max_head_dim_by_cc: Mapping[str, Sourced]
    training_max_head_dim_by_cc: Mapping[str, Sourced]
    training_ok_above_without_dropout_by_cc: Mapping[str, Sourced]
    fallback: tuple[str, ...]
    fallback_source: str
    cite: str  # the limit's source, short (a plan's assumption line)
    fallback_cite: str  # the fallback order's source, short

    def runs(self, head_dim: float, cc: str | None, dropout: bool) -> bool:
        """Whether the kernel trains (forward and backward) this head width on this compute
        capability (None: not an NVIDIA part, only the architecture-independent limit)."""
        limit = self.max_head_dim_by_cc.get(cc or "", self.max_head_dim).value
        if head_dim > limit:
            return False
        train = self.training_max_head_dim_by_cc.get(cc or "")
        if train is None or head_dim <= train.value:
            return True
        above = self.training_ok_above_without_dropout_by_cc.get(cc or "")
        return above is not None and not dropout and head_dim > above.value

    def limit_text(self, cc: str | None) -> str:
        """The limit in words, with its source (for a plan's assumption line)."""
        limit = self.max_head_dim_by_cc.get(cc or "", self.max_head_dim)
        train = self.training_max_head_dim_by_cc.get(cc or "")
        if train is not None and train.value < limit.value:
            return f"trains head dims up to {train.value:g} on sm{(cc or '').replace('.', '')} ({self.cite})"
        return f"trains head dims up to {limit.value:g} ({self.cite})"


@dataclass(frozen=True)
class AttentionKernelCatalog:
    kernels: Mapping[str, KernelLimits]
    auto_kernel_by_vendor: Mapping[str, str]
    compute_capability: Mapping[str, str]  # accelerator id -> "major.minor"


def _by_cc(raw: Mapping[str, Any], name: str, key: str) -> dict[str, Sourced]:
    block = raw.get(name) or {}
    if not isinstance(block, Mapping):
        raise CatalogDataError(FILE, f"{key}.{name}", "expected a mapping of compute capability -> figure")
    return {
        str(cc): sourced(v, FILE, f"{key}.{name}.{cc}", minimum=8, maximum=1024) for cc, v in block.items()
    }


def _kernel(name: str, raw: Any) -> KernelLimits:
    key = f"kernels.{name}"
    block = require_mapping({name: raw}, name, FILE, "kernels")
    check_keys(block, _KERNEL_KEYS, FILE, key)
    fallback = block.get("fallback")
    if not isinstance(fallback, list) or not fallback or any(b not in BACKENDS for b in fallback):
        raise CatalogDataError(
            FILE, f"{key}.fallback", f"expected a list of {sorted(BACKENDS)}, got {fallback!r}"
        )
    return KernelLimits(
        name=name,
        max_head_dim=sourced(block.get("max_head_dim"), FILE, f"{key}.max_head_dim", minimum=8, maximum=1024),
        max_head_dim_by_cc=_by_cc(block, "max_head_dim_by_cc", key),
        training_max_head_dim_by_cc=_by_cc(block, "training_max_head_dim_by_cc", key),
        training_ok_above_without_dropout_by_cc=_by_cc(block, "training_ok_above_without_dropout_by_cc", key),
        fallback=tuple(str(b) for b in fallback),
        fallback_source=str(block.get("fallback_source", "")),
        cite=str(block.get("cite", "")),
        fallback_cite=str(block.get("fallback_cite", "")),
    )


@cache
def attention_kernel_catalog() -> AttentionKernelCatalog:
    """The shipped head-dimension limits (read once)."""
    raw = read_data_file(FILE)
    check_schema(raw, FILE)
    check_keys(
        raw, frozenset({"schema_version", "kernels", "auto_kernel_by_vendor", "compute_capability"}), FILE, ""
    )
    kernels = {str(n): _kernel(str(n), v) for n, v in require_mapping(raw, "kernels", FILE, "").items()}
    auto = {str(v): str(k) for v, k in require_mapping(raw, "auto_kernel_by_vendor", FILE, "").items()}
    for vendor, k in auto.items():
        if k not in kernels:
            raise CatalogDataError(FILE, f"auto_kernel_by_vendor.{vendor}", f"unknown kernel {k!r}")
    cc = require_mapping(raw, "compute_capability", FILE, "")
    accs = require_mapping(cc, "accelerators", FILE, "compute_capability")
    return AttentionKernelCatalog(
        kernels=kernels,
        auto_kernel_by_vendor=auto,
        compute_capability={str(a): str(v) for a, v in accs.items()},
    )
