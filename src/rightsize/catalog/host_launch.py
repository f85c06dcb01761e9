"""Host launch costs (``data/host_launch.yaml``): the CPU time to issue one operation to the
accelerator, by the host CPU that drives it, each sourced.

`rightsize.perf.host_overhead` builds the step's host timeline from them; no formula here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_schema,
    read_data_file,
    require_mapping,
    sourced,
)

HOST_LAUNCH_FILE = "host_launch.yaml"
DEFAULT_HOST_CPU = "x86"


@dataclass(frozen=True)
class HostLaunchFigures:
    """Seconds per host-issued operation by host CPU, and which CPU drives each accelerator."""

    per_op_s: dict[str, float]
    host_cpu: dict[str, str]
    te_fp8_module_factor: float  # host time of a TE module in fp8 over the same in 16 bit
    sources: dict[str, Sourced]

    def per_op_s_for(self, accelerator_id: str) -> float:
        """Host seconds per issued operation on the host that drives `accelerator_id`."""
        return self.per_op_s[self.host_cpu.get(accelerator_id, DEFAULT_HOST_CPU)]


def _host_cpu_entry(raw: object, key: str, known: Mapping[str, float]) -> str:
    if not isinstance(raw, Mapping) or set(raw) != {"cpu", "source", "as_of"}:
        raise CatalogDataError(HOST_LAUNCH_FILE, key, "expected a mapping {cpu, source, as_of}")
    cpu = raw["cpu"]
    if cpu not in known:
        raise CatalogDataError(HOST_LAUNCH_FILE, f"{key}.cpu", f"{cpu!r} is not one of {sorted(known)}")
    if not isinstance(raw["source"], str) or not raw["source"].strip():
        raise CatalogDataError(HOST_LAUNCH_FILE, f"{key}.source", "must be a non-empty string")
    return str(cpu)


@cache
def host_launch_figures() -> HostLaunchFigures:
    raw = read_data_file(HOST_LAUNCH_FILE)
    check_schema(raw, HOST_LAUNCH_FILE)
    sources: dict[str, Sourced] = {}
    per_op: dict[str, float] = {}
    for cpu, entry in require_mapping(raw, "per_op_s", HOST_LAUNCH_FILE, "per_op_s").items():
        s = sourced(entry, HOST_LAUNCH_FILE, f"per_op_s.{cpu}", minimum=1e-7, maximum=1e-3)
        sources[f"per_op_s.{cpu}"] = s
        per_op[str(cpu)] = s.value
    if DEFAULT_HOST_CPU not in per_op:
        raise CatalogDataError(HOST_LAUNCH_FILE, "per_op_s", f"missing the default host '{DEFAULT_HOST_CPU}'")
    host_cpu = {
        str(acc): _host_cpu_entry(entry, f"host_cpu.{acc}", per_op)
        for acc, entry in require_mapping(raw, "host_cpu", HOST_LAUNCH_FILE, "host_cpu").items()
    }
    fp8 = sourced(
        raw.get("te_fp8_module_factor"), HOST_LAUNCH_FILE, "te_fp8_module_factor", minimum=1.0, maximum=10.0
    )
    sources["te_fp8_module_factor"] = fp8
    return HostLaunchFigures(
        per_op_s=per_op, host_cpu=host_cpu, te_fp8_module_factor=fp8.value, sources=sources
    )
