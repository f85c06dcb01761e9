"""Node types (``data/nodes.yaml``): the server or tray that hosts a number of accelerators."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    require_list,
    require_str,
    sourced,
)
from rightsize.constants import BITS_PER_BYTE

_KEYS = frozenset(
    {
        "id",
        "name",
        "accelerator",
        "gpus_per_node",
        "nics_per_node",
        "nic_bits_per_s",
        "cpu_cores",
        "host_memory_bytes",
        "local_nvme_bytes",
        "local_nvme_drives",
        "max_power_w",
        "rack_units",
    }
)

# (field, whole number?, minimum, maximum): sanity bounds that catch unit slips.
_FIGURES: tuple[tuple[str, bool, float, float], ...] = (
    ("gpus_per_node", True, 1, 1024),
    ("nics_per_node", True, 1, 64),
    ("nic_bits_per_s", False, 1e9, 1e13),
    ("cpu_cores", True, 1, 4096),
    ("host_memory_bytes", False, 1e9, 1e14),
    ("local_nvme_bytes", False, 1e9, 1e16),
    ("max_power_w", False, 100, 1_000_000),
    ("rack_units", True, 1, 60),
)


@dataclass(frozen=True)
class NodeType:
    """One node type: accelerators per node, compute NICs, host resources, power and space."""

    id: str
    name: str
    accelerator: str  # an id in accelerators.yaml
    gpus_per_node: int
    nics_per_node: int  # compute (scale-out) NICs only
    nic_bits_per_s: float  # line rate of one compute NIC
    cpu_cores: int
    host_memory_bytes: float
    local_nvme_bytes: float
    max_power_w: float
    rack_units: int
    sources: dict[str, Sourced]
    # how many drives hold local_nvme_bytes, where the node's own spec says (trn2.48xlarge: 4 x
    # 1.9 TB); None: storage.yaml's reference drive size decides the count
    local_nvme_drives: int | None = None

    @property
    def scaleout_bytes_per_s_per_gpu(self) -> float:
        """NIC line rate per GPU, bytes/s: nics x bits/s / 8 / GPUs (each GPU's share of the node's NICs)."""
        return self.nics_per_node * self.nic_bits_per_s / BITS_PER_BYTE / self.gpus_per_node

    def __hash__(self) -> int:
        return hash((self.id, self.accelerator, self.gpus_per_node, self.nics_per_node, self.nic_bits_per_s))


def parse_node(raw: Any, file: str, key: str, accelerator_ids: Collection[str]) -> NodeType:
    """One node entry; its accelerator must be one of ``accelerator_ids``."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _KEYS, file, key)
    node_id = require_str(raw, "id", file, key)
    key = f"{key}({node_id})"
    if node_id != node_id.lower() or " " in node_id:
        raise CatalogDataError(file, f"{key}.id", "ids are lower-case with no spaces")
    accelerator = require_str(raw, "accelerator", file, key)
    if accelerator not in accelerator_ids:
        raise CatalogDataError(
            file,
            f"{key}.accelerator",
            f"unknown accelerator {accelerator!r}; known: {', '.join(sorted(accelerator_ids))}",
        )
    sources: dict[str, Sourced] = {}
    values: dict[str, float] = {}
    for field, integer, lo, hi in _FIGURES:
        if field not in raw:
            raise CatalogDataError(file, key, f"missing '{field}'")
        s = sourced(raw[field], file, f"{key}.{field}", integer=integer, minimum=lo, maximum=hi)
        values[field] = s.value
        sources[field] = s
    drives = None
    if "local_nvme_drives" in raw:
        sources["local_nvme_drives"] = sourced(
            raw["local_nvme_drives"], file, f"{key}.local_nvme_drives", integer=True, minimum=1, maximum=64
        )
        drives = int(sources["local_nvme_drives"].value)
    return NodeType(
        id=node_id,
        name=require_str(raw, "name", file, key),
        accelerator=accelerator,
        gpus_per_node=int(values["gpus_per_node"]),
        nics_per_node=int(values["nics_per_node"]),
        nic_bits_per_s=values["nic_bits_per_s"],
        cpu_cores=int(values["cpu_cores"]),
        host_memory_bytes=values["host_memory_bytes"],
        local_nvme_bytes=values["local_nvme_bytes"],
        max_power_w=values["max_power_w"],
        rack_units=int(values["rack_units"]),
        sources=sources,
        local_nvme_drives=drives,
    )


def parse_nodes(raw: Mapping[str, Any], file: str, accelerator_ids: Collection[str]) -> dict[str, NodeType]:
    """All nodes of a document, in file order; ids must be unique."""
    check_schema(raw, file)
    check_keys(raw, frozenset({"schema_version", "refs", "nodes"}), file, "<document>")
    result: dict[str, NodeType] = {}
    for i, entry in enumerate(require_list(raw, "nodes", file)):
        node = parse_node(entry, file, f"nodes[{i}]", accelerator_ids)
        if node.id in result:
            raise CatalogDataError(file, f"nodes[{i}].id", f"duplicate id {node.id!r}")
        result[node.id] = node
    return result
