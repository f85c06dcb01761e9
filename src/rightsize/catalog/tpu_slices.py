"""Cloud TPU slice shapes: how many chips a slice of each TPU generation may have, and how
many host VMs carry it.

A TPU replica runs on one slice (its chips joined by ICI); Google offers only certain slice
shapes, and a multi-host slice is carried by hosts of a fixed chip count (4 on v5e, v5p,
v6e and TPU7x), not by the 8-chip single-host machine types (ct5lp-hightpu-8t,
ct6e-standard-8t). Whether a serving replica may span a multi-host slice depends on the
generation: Google documents v5e inference as single-host (multi-host only with Sax), while
vLLM TPU and sglang-jax run replicas over the hosts of v6e and TPU7x slices. The facts are data, read from the `tpu` block of
`catalog/data/kubernetes.yaml` (GKE's slice topologies, with their source), the same table
the Kubernetes export takes its node labels from: one value per quantity.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from rightsize.catalog.loader import CatalogDataError, Sourced, read_data_file
from rightsize.catalog.nodes import NodeType

DATA_FILE = "kubernetes.yaml"


@dataclass(frozen=True)
class TpuSlices:
    """The slice shapes one TPU generation offers."""

    accelerator: str
    single_host: dict[int, str]  # chips -> topology of the slices one host carries
    multi_host: dict[int, str]  # chips -> topology of the slices spread over several hosts
    chips_per_host: int  # chips of each host of a multi-host slice
    serving_multi_host: bool  # whether a serving replica may span a multi-host slice's hosts
    serving_source: str  # why (the engines' or Google's documentation)
    devices_per_chip: int = 1  # JAX devices per chip (TPU7x: 2), what engines' TP sizes count
    serving_weights: tuple[str, ...] = ("bf16",)  # weight precisions vLLM TPU loads (pre-quantized)

    @property
    def chip_counts(self) -> tuple[int, ...]:
        """Every slice size offered, smallest first."""
        return tuple(sorted({*self.single_host, *self.multi_host}))

    @property
    def serving_chip_counts(self) -> tuple[int, ...]:
        """The slice sizes one serving replica may have: single-host shapes, and multi-host ones
        where the serving engines span hosts on this generation."""
        return self.chip_counts if self.serving_multi_host else tuple(sorted(self.single_host))

    def topology(self, chips: int) -> str | None:
        return self.single_host.get(chips) or self.multi_host.get(chips)

    def hosts(self, chips: int) -> int:
        """Host VMs of a slice of `chips` chips (1 for a single-host shape)."""
        if chips in self.single_host:
            return 1
        return max(1, chips // self.host_chips(chips))

    def host_chips(self, chips: int) -> int:
        """Chips of each host VM carrying a slice of `chips` chips: the shape's own count for a
        single-host shape (ct6e-standard-1t/4t/8t), `chips_per_host` for a multi-host slice
        (or more chips than one host carries); a count below every shape takes the smallest
        single-host shape that holds it. The one rule the sizing and the export share."""
        if chips in self.single_host:
            return chips
        if chips in self.multi_host or not self.single_host or chips > max(self.single_host):
            return self.chips_per_host
        return min(c for c in self.single_host if c >= chips)


def _shapes(raw: object, where: str) -> dict[int, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CatalogDataError(DATA_FILE, where, "must map chip counts to topologies")
    return {int(k): str(v) for k, v in raw.items()}


@cache
def _all() -> dict[str, TpuSlices]:
    block = read_data_file(DATA_FILE).get("tpu") or {}
    out: dict[str, TpuSlices] = {}
    for acc_id, d in block.items():
        if not isinstance(d, dict):  # the block's `source` line
            continue
        where = f"tpu.{acc_id}"
        out[str(acc_id)] = TpuSlices(
            accelerator=str(acc_id),
            single_host=_shapes(d.get("single_host"), f"{where}.single_host"),
            multi_host=_shapes(d.get("slices"), f"{where}.slices"),
            chips_per_host=int(d.get("chips_per_host", 4)),
            serving_multi_host=bool(d.get("serving_multi_host", False)),
            serving_source=str(d.get("serving_source", "")),
            devices_per_chip=int(d.get("devices_per_chip", 1)),
            serving_weights=tuple(str(w) for w in d.get("serving_weights", ("bf16",))),
        )
    return out


def tpu_slices(acc_id: str) -> TpuSlices | None:
    """The slice shapes of a TPU generation; None for an accelerator that is not a TPU."""
    return _all().get(acc_id)


def slice_host(node: NodeType, slice_chips: int) -> NodeType:
    """The host VM that carries a TPU slice of `slice_chips` chips, from the catalog's host
    `node`: a multi-host v5e/v6e slice runs on 4-chip VMs (ct5lp-hightpu-4t, ct6e-standard-4t),
    not the catalog's 8-chip single-host machine type. Its CPU cores, memory, NICs and power
    scale with its chips (Google's v5e VM table halves vCPUs and memory from -8t to -4t: 224 ->
    112 vCPUs, 384 -> 192 GB); the node itself off TPU, or where the chips per host agree."""
    slices = tpu_slices(node.accelerator)
    chips = slices.host_chips(slice_chips) if slices is not None else node.gpus_per_node
    if chips == node.gpus_per_node:
        return node
    share = chips / node.gpus_per_node
    why = Sourced(
        chips,
        f"catalog/data/kubernetes.yaml tpu.{node.accelerator}: a {slice_chips}-chip slice runs on hosts of "
        f"{chips} chips; host CPU, memory, NICs and power scaled by chips from {node.id}",
        "2026-11",
    )
    return replace(
        node,
        name=f"{node.name.split(' (')[0]} ({chips} chips per host)",
        gpus_per_node=chips,
        nics_per_node=max(1, round(node.nics_per_node * share)),
        cpu_cores=max(1, round(node.cpu_cores * share)),
        host_memory_bytes=node.host_memory_bytes * share,
        max_power_w=node.max_power_w * share,
        sources={**node.sources, "gpus_per_node": why},
    )
