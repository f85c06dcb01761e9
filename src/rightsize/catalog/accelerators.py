"""Accelerator types (``data/accelerators.yaml``): peak rates, memory, scale-up links, power."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rightsize.catalog.dtypes import DTYPES, normalize_dtype
from rightsize.catalog.efficiency import SCALAR_FIELDS, Efficiency, replace_efficiency
from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    require_list,
    require_mapping,
    require_str,
    sourced,
)
from rightsize.errors import BadInput

VENDORS = ("nvidia", "amd", "google", "intel", "aws")
FORM_FACTORS = ("sxm", "pcie", "oam", "superchip", "chip")
# How the scale-up domain is wired: an NVSwitch-style switch (every pair at full link rate),
# a full point-to-point mesh (Infinity Fabric, Gaudi's on-chip RoCE), PCIe through host
# switches, or a 2D / 3D torus (TPU ICI, Trainium NeuronLink) where collectives run a ring
# per axis.
TOPOLOGIES = ("switch", "mesh", "pcie", "torus2d", "torus3d")
TORUS_DIMS = {"torus2d": 2, "torus3d": 3}
# Each vendor's own name for its scale-up link, used when the accelerator does not say.
_DEFAULT_SCALEUP_NAME = {"nvidia": "NVLink", "amd": "Infinity Fabric", "google": "ICI", "aws": "NeuronLink"}

_KEYS = frozenset(
    {
        "id",
        "name",
        "vendor",
        "form_factor",
        "default_node",
        "peak_dense_flops_per_s",
        "hbm_bytes",
        "hbm_bytes_per_s",
        "scaleup_bytes_per_s",
        "scaleup_domain_gpus",
        "tdp_w",
        "sm_count",
        "scaleup_name",
        "scaleup_topology",
        "offered",
    }
)

# (field, whole number?, minimum, maximum): sanity bounds that catch unit slips
# (GB written for bytes, Gb/s for bytes/s, kW for W).
_FIGURES: tuple[tuple[str, bool, float, float], ...] = (
    ("hbm_bytes", False, 1e9, 1e13),
    ("hbm_bytes_per_s", False, 1e10, 1e14),
    ("scaleup_bytes_per_s", False, 1e9, 1e13),
    ("scaleup_domain_gpus", True, 1, 100_000),
    ("tdp_w", False, 10, 10_000),
    ("sm_count", True, 1, 10_000),
)
_PEAK_BOUNDS = (1e11, 1e18)


@dataclass(frozen=True)
class Accelerator:
    """One accelerator type. Rates are dense peaks; `efficiency` says how much of them is reachable."""

    id: str
    name: str
    vendor: str
    form_factor: str  # sxm / pcie / oam / superchip
    peak_dense_flops_per_s: dict[str, float]  # dtype -> FLOP/s (int8: OP/s), no 2:4 sparsity
    hbm_bytes: float
    hbm_bytes_per_s: float
    scaleup_bytes_per_s: float  # per GPU, per direction, inside the scale-up domain
    scaleup_domain_gpus: int
    tdp_w: float
    sm_count: int  # SMs (NVIDIA) or compute units (AMD)
    default_node: str  # an id in nodes.yaml
    efficiency: Efficiency
    sources: dict[str, Sourced]  # "hbm_bytes", "peak_dense_flops_per_s.bf16", ... -> figure
    scaleup_name: str = "NVLink"  # the vendor's own term: NVLink, Infinity Fabric, ICI, NeuronLink, PCIe
    scaleup_topology: str = "switch"  # one of TOPOLOGIES
    # False for a part nobody can buy or rent (a hyperscaler's own variant): searches that do
    # not name it skip it; `offered_source` says why, with its date.
    offered: bool = True
    offered_source: str = ""

    @property
    def torus_dims(self) -> int:
        """Axes of the scale-up torus (2 or 3), 0 where the domain is switched, meshed or PCIe."""
        return TORUS_DIMS.get(self.scaleup_topology, 0)

    def supports(self, dtype: str) -> bool:
        """Whether the catalog has a peak rate for ``dtype`` on this accelerator."""
        return normalize_dtype(dtype) in self.peak_dense_flops_per_s

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak FLOP/s in ``dtype``; `BadInput` naming the dtypes it has if it lacks this one."""
        name = normalize_dtype(dtype)
        if name not in self.peak_dense_flops_per_s:
            have = ", ".join(self.peak_dense_flops_per_s)
            raise BadInput(
                f"{self.name} ({self.id}) has no {dtype} peak rate in the catalog.",
                f"It supports: {have}.",
                f"Use one of those dtypes, or an accelerator that supports {name} "
                "(run `rightsize catalog` to see each accelerator's dtypes).",
            )
        return self.peak_dense_flops_per_s[name]

    def __hash__(self) -> int:
        return hash(
            (
                self.id,
                tuple(sorted(self.peak_dense_flops_per_s.items())),
                self.hbm_bytes,
                self.hbm_bytes_per_s,
                self.scaleup_bytes_per_s,
                self.scaleup_domain_gpus,
                self.efficiency,
            )
        )


def parse_accelerator(
    raw: Any, file: str, key: str, efficiencies: Mapping[str, Efficiency], default_eff: Efficiency
) -> Accelerator:
    """One accelerator entry; its efficiency is its own block or the default one."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _KEYS, file, key)
    acc_id = require_str(raw, "id", file, key)
    key = f"{key}({acc_id})"
    if acc_id != acc_id.lower() or " " in acc_id:
        raise CatalogDataError(file, f"{key}.id", "ids are lower-case with no spaces")
    vendor = require_str(raw, "vendor", file, key)
    if vendor not in VENDORS:
        raise CatalogDataError(file, f"{key}.vendor", f"unknown vendor {vendor!r}; use one of {VENDORS}")
    form_factor = require_str(raw, "form_factor", file, key)
    if form_factor not in FORM_FACTORS:
        raise CatalogDataError(
            file, f"{key}.form_factor", f"unknown form factor {form_factor!r}; use one of {FORM_FACTORS}"
        )
    sources: dict[str, Sourced] = {}

    peaks_raw = require_mapping(raw, "peak_dense_flops_per_s", file, key)
    peaks: dict[str, float] = {}
    for dtype, fig in peaks_raw.items():
        fig_key = f"{key}.peak_dense_flops_per_s.{dtype}"
        if dtype not in DTYPES:
            raise CatalogDataError(file, fig_key, f"unknown dtype; use one of {', '.join(DTYPES)}")
        s = sourced(fig, file, fig_key, minimum=_PEAK_BOUNDS[0], maximum=_PEAK_BOUNDS[1])
        peaks[dtype] = s.value
        sources[f"peak_dense_flops_per_s.{dtype}"] = s
    if "bf16" not in peaks and "fp16" not in peaks:
        raise CatalogDataError(file, f"{key}.peak_dense_flops_per_s", "must include bf16 or fp16")

    values: dict[str, float] = {}
    for field, integer, lo, hi in _FIGURES:
        if field not in raw:
            raise CatalogDataError(file, key, f"missing '{field}'")
        s = sourced(raw[field], file, f"{key}.{field}", integer=integer, minimum=lo, maximum=hi)
        values[field] = s.value
        sources[field] = s

    topology = str(
        raw.get("scaleup_topology", "pcie" if form_factor == "pcie" else _default_topology(vendor))
    )
    if topology not in TOPOLOGIES:
        raise CatalogDataError(
            file, f"{key}.scaleup_topology", f"unknown topology {topology!r}; use one of {TOPOLOGIES}"
        )
    default_name = "PCIe" if topology == "pcie" else _DEFAULT_SCALEUP_NAME.get(vendor, "scale-up link")
    scaleup_name = str(raw.get("scaleup_name", default_name))
    offered, offered_source = _offered(raw.get("offered"), file, f"{key}.offered")
    return Accelerator(
        offered=offered,
        offered_source=offered_source,
        scaleup_name=scaleup_name,
        scaleup_topology=topology,
        id=acc_id,
        name=require_str(raw, "name", file, key),
        vendor=vendor,
        form_factor=form_factor,
        peak_dense_flops_per_s=peaks,
        hbm_bytes=values["hbm_bytes"],
        hbm_bytes_per_s=values["hbm_bytes_per_s"],
        scaleup_bytes_per_s=values["scaleup_bytes_per_s"],
        scaleup_domain_gpus=int(values["scaleup_domain_gpus"]),
        tdp_w=values["tdp_w"],
        sm_count=int(values["sm_count"]),
        default_node=require_str(raw, "default_node", file, key),
        efficiency=efficiencies.get(acc_id, default_eff),
        sources=sources,
    )


def _offered(raw: Any, file: str, key: str) -> tuple[bool, str]:
    """`offered: {value: false, source, as_of}`: whether the part can be bought or rented, and
    the dated source that says so. Absent: offered (every listed part is, unless it says not)."""
    if raw is None:
        return True, ""
    if not isinstance(raw, Mapping) or set(raw) != {"value", "source", "as_of"}:
        raise CatalogDataError(file, key, "expected a mapping {value: true|false, source, as_of}")
    value = raw["value"]
    if not isinstance(value, bool):
        raise CatalogDataError(file, f"{key}.value", f"must be true or false, got {value!r}")
    checked = sourced({**raw, "value": 1}, file, key)  # the same source and date checks as a figure
    return value, f"{checked.source} (as of {checked.as_of})"


def _default_topology(vendor: str) -> str:
    """NVIDIA SXM parts sit behind NVSwitch; AMD's 8-GPU platforms are a full mesh."""
    return "mesh" if vendor in ("amd", "intel") else "switch"


def parse_accelerators(
    raw: Mapping[str, Any], file: str, efficiencies: Mapping[str, Efficiency], default_eff: Efficiency
) -> dict[str, Accelerator]:
    """All accelerators of a document, in file order; ids must be unique."""
    check_schema(raw, file)
    check_keys(raw, frozenset({"schema_version", "refs", "accelerators"}), file, "<document>")
    result: dict[str, Accelerator] = {}
    for i, entry in enumerate(require_list(raw, "accelerators", file)):
        acc = parse_accelerator(entry, file, f"accelerators[{i}]", efficiencies, default_eff)
        if acc.id in result:
            raise CatalogDataError(file, f"accelerators[{i}].id", f"duplicate id {acc.id!r}")
        result[acc.id] = acc
    return result


def with_efficiency(acc: Accelerator, **overrides: float) -> Accelerator:
    """A copy of ``acc`` with some efficiency figures replaced (calibration, sensitivity studies).

    Keys are `Efficiency` field names (``memory_bw_fraction=0.8``) or
    ``gemm_peak_fraction_<dtype>`` (``gemm_peak_fraction_bf16=0.75``). The replaced figures
    carry the source "override via with_efficiency()" dated today.
    """
    if not overrides:
        return acc
    try:
        eff = replace_efficiency(
            acc.efficiency,
            overrides,
            source="override via with_efficiency() (calibration or sensitivity study)",
            as_of=datetime.date.today().isoformat(),
        )
    except KeyError as exc:
        raise BadInput(
            f"Unknown efficiency field {exc.args[0]!r} for {acc.id}.",
            f"Known fields: {', '.join(SCALAR_FIELDS)}, and gemm_peak_fraction_<dtype>.",
            "Use one of those names.",
        ) from None
    except ValueError as exc:
        raise BadInput(
            f"Bad efficiency override for {acc.id}.",
            str(exc),
            "Fractions lie in (0, 1] (bus-bandwidth fractions up to 2), times are in seconds, tiles are whole numbers.",
        ) from None
    return dataclasses.replace(acc, efficiency=eff)
