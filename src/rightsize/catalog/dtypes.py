"""Compute dtype names: the catalog's canonical spellings and the aliases users type."""

from __future__ import annotations

# Canonical names, widest first. fp32 means non-tensor (vector) FP32; the rest run on
# tensor / matrix cores.
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4")

_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
}


def normalize_dtype(name: str) -> str:
    """Lower-case canonical dtype name (``"BFloat16"`` -> ``"bf16"``); unknown names pass through lowered."""
    key = name.strip().lower().replace("-", "_")
    return _ALIASES.get(key, key)
