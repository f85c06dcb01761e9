"""Short-term reserved capacity ("capacity blocks"): GPUs reserved for days to weeks and paid for
every hour of the days booked, read from the dated table `catalog/data/capacity_blocks.yaml`.

In the fleet's program (`fleet.program_jobs`) a job books its own blocks: whole copies of its gang
for whole days inside a month (AWS sells 1-14 days in 1-day steps, then 7-day steps to 182 days,
and a block can be extended), its work on them fitting the days booked. Services do not use blocks.
Their availability is the provider's account limit on instances across blocks, which
`policy.burst_caps.capacity_block_gpus` overrides.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from rightsize.catalog.loader import CatalogDataError, Sourced, read_data_file, require_mapping, sourced

BLOCKS_FILE = "capacity_blocks.yaml"
KIND = "capacity_block"


@dataclass(frozen=True)
class BlockPrice:
    accelerator: str
    provider: str
    instance: str
    region: str
    gpus_per_instance: int
    usd_per_instance_hour: Sourced

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_instance_hour.value / self.gpus_per_instance


@dataclass(frozen=True)
class BlockTable:
    prices: dict[str, BlockPrice]
    instances_across_blocks: Sourced


@cache
def block_table() -> BlockTable:
    raw = read_data_file(BLOCKS_FILE)
    blocks = require_mapping(raw, "blocks", BLOCKS_FILE, "<document>")
    prices = {}
    for acc, rec in blocks.items():
        key = f"blocks.{acc}"
        if not isinstance(rec, dict):
            raise CatalogDataError(BLOCKS_FILE, key, "expected a mapping")
        gpus = sourced(rec.get("gpus_per_instance"), BLOCKS_FILE, f"{key}.gpus_per_instance", integer=True)
        price = sourced(
            rec.get("usd_per_instance_hour"), BLOCKS_FILE, f"{key}.usd_per_instance_hour", minimum=0.05
        )
        texts = {k: rec.get(k) for k in ("provider", "instance", "region")}
        for k, v in texts.items():
            if not isinstance(v, str) or not v:
                raise CatalogDataError(BLOCKS_FILE, f"{key}.{k}", "must be a non-empty string")
        prices[str(acc)] = BlockPrice(
            str(acc),
            str(texts["provider"]),
            str(texts["instance"]),
            str(texts["region"]),
            int(gpus.value),
            price,
        )
    caps = require_mapping(raw, "caps", BLOCKS_FILE, "<document>")
    across = sourced(
        caps.get("instances_across_blocks"), BLOCKS_FILE, "caps.instances_across_blocks", integer=True
    )
    return BlockTable(prices, across)


def block_price(accelerator: str) -> BlockPrice | None:
    """The block price of an accelerator; None where no provider's block price is listed."""
    return block_table().prices.get(accelerator)


def block_cap_gpus(gpus_per_node: int, user_gpus: int | None) -> float:
    """Most GPUs in blocks at once: the user's figure, else the account limit on instances."""
    if user_gpus is not None:
        return float(user_gpus)
    return float(block_table().instances_across_blocks.value * gpus_per_node)
