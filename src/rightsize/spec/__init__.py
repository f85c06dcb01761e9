"""The input side of rightsize: spec schema, human units, model architectures and presets.

This package describes; it computes nothing. Human strings ("30d", "16M", "2.5 TB/s") become SI
floats here, once, and a spec file becomes a validated, frozen `TrainingSpec` (`kind: training`, the
default) or `InferenceSpec` (`kind: inference`); `Spec` is either.

Names are imported on first use (PEP 562), so that reading one kind of spec does not build the
pydantic models of every other kind.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rightsize.spec.hf_config import read_hf_config, read_hf_config_fields
    from rightsize.spec.inference import (
        SLO,
        Engine,
        InferenceSpec,
        InferenceTargets,
        InferenceWorkload,
        KVPrecision,
        LengthDist,
        Policy,
        Precision,
        Speculative,
        Traffic,
    )
    from rightsize.spec.load import SPEC_KINDS, Spec, load_spec, parse_spec, spec_json_schema
    from rightsize.spec.model import ModelArch
    from rightsize.spec.presets import (
        get_preset,
        preset_aliases,
        preset_fields,
        preset_names,
        presets,
        resolve_preset_name,
    )
    from rightsize.spec.training import ParallelSettings, Targets, TrainingSpec, TrainingWorkload
    from rightsize.spec.units import (
        Bytes,
        BytesPerS,
        Count,
        CountInt,
        DurationS,
        PowerW,
        parse_bytes,
        parse_bytes_per_s,
        parse_count,
        parse_count_int,
        parse_duration_s,
        parse_flops_per_s,
        parse_power_w,
    )

# `presets` is also the name of a submodule: bind the function now, so that importing the
# submodule later cannot shadow it (presets and units are light: no pydantic models).
from rightsize.spec.presets import (  # noqa: E402
    get_preset,
    preset_aliases,
    preset_fields,
    preset_names,
    presets,
    resolve_preset_name,
)

_WHERE = {
    "read_hf_config": "rightsize.spec.hf_config",
    "read_hf_config_fields": "rightsize.spec.hf_config",
    "SLO": "rightsize.spec.inference",
    "Engine": "rightsize.spec.inference",
    "InferenceSpec": "rightsize.spec.inference",
    "InferenceTargets": "rightsize.spec.inference",
    "InferenceWorkload": "rightsize.spec.inference",
    "KVPrecision": "rightsize.spec.inference",
    "LengthDist": "rightsize.spec.inference",
    "Policy": "rightsize.spec.inference",
    "Precision": "rightsize.spec.inference",
    "Speculative": "rightsize.spec.inference",
    "Traffic": "rightsize.spec.inference",
    "SPEC_KINDS": "rightsize.spec.load",
    "Spec": "rightsize.spec.load",
    "load_spec": "rightsize.spec.load",
    "parse_spec": "rightsize.spec.load",
    "spec_json_schema": "rightsize.spec.load",
    "ModelArch": "rightsize.spec.model",
    "get_preset": "rightsize.spec.presets",
    "preset_aliases": "rightsize.spec.presets",
    "preset_fields": "rightsize.spec.presets",
    "preset_names": "rightsize.spec.presets",
    "presets": "rightsize.spec.presets",
    "resolve_preset_name": "rightsize.spec.presets",
    "ParallelSettings": "rightsize.spec.training",
    "Targets": "rightsize.spec.training",
    "TrainingSpec": "rightsize.spec.training",
    "TrainingWorkload": "rightsize.spec.training",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'rightsize.spec' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "SLO",
    "SPEC_KINDS",
    "Bytes",
    "BytesPerS",
    "Count",
    "CountInt",
    "DurationS",
    "Engine",
    "InferenceSpec",
    "InferenceTargets",
    "InferenceWorkload",
    "KVPrecision",
    "LengthDist",
    "ModelArch",
    "ParallelSettings",
    "Policy",
    "PowerW",
    "Precision",
    "Spec",
    "Speculative",
    "Targets",
    "Traffic",
    "TrainingSpec",
    "TrainingWorkload",
    "get_preset",
    "load_spec",
    "parse_bytes",
    "parse_bytes_per_s",
    "parse_count",
    "parse_count_int",
    "parse_duration_s",
    "parse_flops_per_s",
    "parse_power_w",
    "parse_spec",
    "preset_aliases",
    "preset_fields",
    "preset_names",
    "presets",
    "read_hf_config",
    "read_hf_config_fields",
    "resolve_preset_name",
    "spec_json_schema",
]
