"""The input side of rightsize: spec schema, human units, model architectures and presets.

This package describes; it computes nothing. Human strings ("30d", "16M", "2.5 TB/s") become SI
floats here, once, and a spec file becomes a validated, frozen `TrainingSpec` (`kind: training`, the
default) or `InferenceSpec` (`kind: inference`); `Spec` is either.
"""

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
