"""Hardware catalog: accelerators, node types and mechanism efficiencies, each figure sourced and dated.

The data lives in ``rightsize/catalog/data/*.yaml``; this package only reads, validates
and looks it up. It holds no formulas (the performance model lives in `rightsize.perf`).
"""

from rightsize.catalog.accelerators import Accelerator, with_efficiency
from rightsize.catalog.dtypes import DTYPES, normalize_dtype
from rightsize.catalog.efficiency import Efficiency
from rightsize.catalog.loader import CatalogDataError, Sourced
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.prices import (
    CloudPrice,
    NodeCapex,
    OnPremDefaults,
    cloud_price,
    cloud_prices,
    node_capex,
    onprem_defaults,
)
from rightsize.catalog.registry import (
    Catalog,
    accelerators,
    build_catalog,
    get_accelerator,
    get_node,
    node_for,
    nodes,
    not_offered_notes,
    offered_accelerators,
)

__all__ = [
    "DTYPES",
    "Accelerator",
    "Catalog",
    "CatalogDataError",
    "Efficiency",
    "NodeType",
    "Sourced",
    "accelerators",
    "build_catalog",
    "get_accelerator",
    "get_node",
    "node_for",
    "nodes",
    "not_offered_notes",
    "offered_accelerators",
    "normalize_dtype",
    "with_efficiency",
    "CloudPrice",
    "NodeCapex",
    "OnPremDefaults",
    "cloud_price",
    "cloud_prices",
    "node_capex",
    "onprem_defaults",
]
