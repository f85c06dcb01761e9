"""Instance shapes (``data/shapes.yaml``): the smaller instances a provider rents an accelerator in.

``prices.yaml`` prices each accelerator on its node-sized instance (8 GPUs, say); a provider
that also rents 1-, 2- or 4-GPU shapes of the same part lists them here, each an instance
record in the schema of ``prices.yaml`` ``cloud:`` and on the same per-column basis. The
billing (`catalog.billing`) picks the cheapest whole instances that hold a plan's replicas
among these and the node records. A TPU has no shapes here: its VM machine types are read
from ``tpu_vms.yaml`` (`catalog.tpu_slices`), priced per chip-hour (`catalog.billing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    check_keys,
    check_schema,
    read_data_file,
    require_mapping,
)
from rightsize.catalog.prices import (
    CloudPrice,
    PriceBasis,
    check_basis,
    parse_cloud_price,
    price_basis,
    shipped_prices,
)
from rightsize.catalog.registry import accelerators, nodes

SHAPES_FILE = "shapes.yaml"


def parse_shapes(
    raw: Mapping[str, Any],
    file: str,
    node_gpus: Mapping[str, int],
    basis: Mapping[str, PriceBasis],
    default_preemptions: Any,
) -> dict[str, tuple[CloudPrice, ...]]:
    """Every accelerator's shapes, in file order (pure: tests feed synthetic documents).

    `node_gpus` maps each accelerator id to the GPUs of its node: a shape must hold fewer
    (the node-sized instance is priced in ``prices.yaml``), and an unknown accelerator id or
    a second record for one provider's instance type and region is an error.
    """
    check_schema(raw, file)
    check_keys(raw, frozenset({"schema_version", "shapes"}), file, "<document>")
    out: dict[str, tuple[CloudPrice, ...]] = {}
    for acc_id, entry in require_mapping(raw, "shapes", file, "<document>").items():
        key = f"shapes.{acc_id}"
        if acc_id not in node_gpus:
            raise CatalogDataError(
                file, key, f"unknown accelerator {acc_id!r}; known: {', '.join(sorted(node_gpus))}"
            )
        if not isinstance(entry, list) or not entry:
            raise CatalogDataError(file, key, "expected a non-empty list of instance records")
        records: list[CloudPrice] = []
        for i, item in enumerate(entry):
            where = f"{key}[{i}]"
            price = parse_cloud_price(item, file, where, acc_id, default_preemptions)
            check_basis(price, basis, file, where)
            assert price.instance is not None  # parse_cloud_price requires one
            if price.instance.gpus >= node_gpus[acc_id]:
                raise CatalogDataError(
                    file,
                    f"{where}.gpus_per_instance",
                    f"{price.instance.gpus} GPUs is not smaller than the {node_gpus[acc_id]}-GPU node; "
                    "price a node-sized instance in prices.yaml",
                )
            if any(_same(r, price) for r in records):
                raise CatalogDataError(
                    file, f"{where}.instance", "a second record for this instance and region"
                )
            records.append(price)
        out[acc_id] = tuple(records)
    return out


def _same(a: CloudPrice, b: CloudPrice) -> bool:
    ia, ib = a.instance, b.instance
    return (
        ia is not None
        and ib is not None
        and (ia.provider, ia.instance, ia.region)
        == (
            ib.provider,
            ib.instance,
            ib.region,
        )
    )


def node_gpus_by_accelerator() -> dict[str, int]:
    """Each accelerator's GPUs per node: its default node in ``nodes.yaml``."""
    all_nodes = nodes()
    return {acc.id: all_nodes[acc.default_node].gpus_per_node for acc in accelerators().values()}


@cache
def shapes() -> dict[str, tuple[CloudPrice, ...]]:
    """The shipped shapes, accelerator id -> its smaller instance records."""
    return parse_shapes(
        read_data_file(SHAPES_FILE),
        SHAPES_FILE,
        node_gpus_by_accelerator(),
        price_basis(),
        shipped_prices().default_preemptions,
    )
