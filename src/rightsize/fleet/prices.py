"""What one GPU-hour of each kind of capacity costs in a pool, from the dated price table.

Cloud kinds (on-demand, 1- and 3-year reserved, spot) are the catalog's USD per GPU-hour; a
capacity block (short-term reserved GPUs, `fleet.blocks`) its own dated table's, paid for every
hour of the days booked. Owning
is the on-premises total cost of one node per GPU-hour, every hour of the year (amortised capex,
energy at the facility power, facility and operations), from `sizing.cost.size_cost`; the shared
fabric and storage are sized once for the pool (`fleet.fleet_cost`). A reservation is paid for
every hour of its term inside the horizon, used or not; an owned node is bought: its capital in
full when bought, its running cost for the hours inside the horizon, and its life beyond the
horizon stated (as the straight-line value left).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from rightsize.catalog import get_node
from rightsize.catalog.prices import cloud_price
from rightsize.catalog.tpu_slices import slice_host
from rightsize.errors import BadInput
from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.blocks import block_price
from rightsize.search.demand import Demand
from rightsize.sizing.cost import size_cost
from rightsize.spec.infrastructure import Infrastructure

COMMITTED = ("onprem", "reserved_3y", "reserved_1y")
BURST = ("on_demand", "spot")
TERM_MONTHS = {"reserved_1y": 12, "reserved_3y": 36}


@dataclass(frozen=True)
class PoolPrices:
    accelerator: str
    node: str
    gpus_per_node: int
    usd_per_gpu_hour: dict[str, float]  # capacity kind -> price; kinds without a price are absent
    term_months: dict[str, int]  # committed kind -> months it is paid for
    onprem_facility_w_per_node: float = 0.0
    onprem_capex_usd_per_node: float = 0.0
    unavailable: dict[str, str] = field(default_factory=dict)  # kind -> why it has no price
    burst_caps_gpus: dict[str, float] = field(default_factory=dict)  # on_demand/spot -> most GPUs at once
    onprem_opex_usd_per_gpu_hour: float = 0.0  # owning less the capital: energy, facility, operations
    block_offer: str = ""  # whose capacity block is priced: provider, instance, price and date

    owned_capital: str = "full"  # policy.owned_capital: full | depreciated

    def capital_counted(self, left_fraction: np.ndarray | float) -> np.ndarray:
        """The capital of one node as counted: in full, or less the share of its life left."""
        left = np.asarray(left_fraction, dtype=float)
        if self.owned_capital == "depreciated":
            return self.onprem_capex_usd_per_node * (1.0 - left)
        return self.onprem_capex_usd_per_node * np.ones_like(left)

    def onprem_node_price(self, hours_in_horizon: np.ndarray, left_fraction: np.ndarray) -> np.ndarray | None:
        """A node bought outright: its capital (`capital_counted`) plus its running cost for the
        hours it serves inside the horizon; None when the capital is not known apart."""
        if self.onprem_capex_usd_per_node <= 0:
            return None
        running = self.gpus_per_node * self.onprem_opex_usd_per_gpu_hour * hours_in_horizon
        return self.capital_counted(left_fraction) + running

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def pool_prices(demand: Demand, allowed: list[str], infra: Infrastructure) -> PoolPrices:
    """Prices of every allowed capacity kind for the pool of `demand`'s accelerator and node."""
    # a TPU pool's host is the VM its slices run on (ct6e-standard-4t for a multi-host v6e slice)
    node = slice_host(get_node(demand.node), demand.gpus_per_replica or demand.gpus)
    prices: dict[str, float] = {}
    terms: dict[str, int] = {}
    missing: dict[str, str] = {}
    facility_w = capex = opex = 0.0
    cloud_kinds = [k for k in allowed if k not in ("onprem", BLOCK)]
    if cloud_kinds:
        try:
            cp = cloud_price(demand.accelerator)
        except BadInput as exc:
            missing.update({k: exc.what for k in cloud_kinds})
        else:
            table = {
                "on_demand": cp.on_demand,
                "reserved_1y": cp.reserved_1y,
                "reserved_3y": cp.reserved_3y,
                "spot": cp.spot,
            }
            for k in cloud_kinds:
                price = table[k]
                if price is None:  # the catalog or the user leaves this kind unpriced
                    missing[k] = f"no {k.replace('_', ' ')} price for {demand.accelerator}"
                    continue
                prices[k] = price
                if k in TERM_MONTHS:
                    terms[k] = TERM_MONTHS[k]
    offer = ""
    if BLOCK in allowed:
        bp = block_price(demand.accelerator)
        if bp is None:
            missing[BLOCK] = (
                f"no capacity block price for {demand.accelerator} (catalog capacity_blocks.yaml)"
            )
        else:
            prices[BLOCK] = bp.usd_per_gpu_hour
            offer = (
                f"{bp.provider} {bp.instance} capacity block, ${bp.usd_per_instance_hour.value:,.2f}/instance-hour "
                f"({bp.region}, as of {bp.usd_per_instance_hour.as_of})"
            )
    if "onprem" in allowed:
        one_node = dataclasses.replace(
            demand, gpus=node.gpus_per_node, replicas=None, run_s=None, runs_per_month=None
        )
        try:
            cost = size_cost(
                one_node, node, 1, None, 0.0, 0.0, 0.0, 0.0, 0.0, None, None, infra.cost, "onprem"
            )
        except BadInput as exc:
            missing["onprem"] = exc.what
        else:
            assert cost.onprem is not None  # deployment onprem either costs or raises
            prices["onprem"] = cost.onprem.usd_per_gpu_hour_owned
            terms["onprem"] = round(cost.onprem.amortisation_years * 12)
            facility_w = cost.onprem.facility_power_w
            capex = cost.onprem.capex_usd
            life_h = cost.onprem.amortisation_years * 365.0 * 24.0
            opex = max(0.0, cost.onprem.usd_per_gpu_hour_owned - capex / (life_h * node.gpus_per_node))
    return PoolPrices(
        demand.accelerator,
        node.id,
        node.gpus_per_node,
        prices,
        terms,
        facility_w,
        capex,
        missing,
        onprem_opex_usd_per_gpu_hour=opex,
        block_offer=offer,
    )
