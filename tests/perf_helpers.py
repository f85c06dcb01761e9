"""Shared by the perf-mechanism tests: an accelerator's Hardware from the catalog, and the
Llama 2 7B shape the long-context and Float8 sources (NeMo, torchtitan) benchmark."""

from __future__ import annotations

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf.hardware import Hardware
from rightsize.spec.model import ModelArch


def catalog_hw(acc_id: str, dtype: str = "bf16") -> Hardware:
    acc = get_accelerator(acc_id)
    return Hardware.from_catalog(acc, node_for(acc.id), dtype)


def llama2_7b() -> ModelArch:
    return ModelArch(
        name="llama2-7b",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=32,
        ffn_hidden=11008,
        vocab=32000,
        mlp="swiglu",
    )
