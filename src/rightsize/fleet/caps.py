"""How much burst capacity a provider plausibly has: GPUs of one accelerator at once.

Bundled figures (data), overridden by `policy.burst_caps` (user input). They are deliberately
modest: a large cloud region rents tens of nodes of a current accelerator on demand without a
reservation, and spot pools are smaller and come and go. A plan that needs more must commit
(reserve or own) or ask the provider for a quota and say so in `policy.burst_caps`.
"""

from __future__ import annotations

from rightsize.spec.fleet import BurstCaps

# GPUs at once, per pool: 32 nodes of 8 on demand, 16 nodes of 8 on spot.
ON_DEMAND_GPUS = 256
SPOT_GPUS = 128
SOURCE = (
    "rightsize's assumption for one region without a capacity reservation (32 nodes on demand, "
    "16 on spot); set policy.burst_caps to a provider's quota"
)


def burst_caps(caps: BurstCaps) -> dict[str, float]:
    """GPUs at once by capacity kind ('on_demand', 'spot') for each pool."""
    return {
        "on_demand": float(ON_DEMAND_GPUS if caps.on_demand_gpus is None else caps.on_demand_gpus),
        "spot": float(SPOT_GPUS if caps.spot_gpus is None else caps.spot_gpus),
    }
