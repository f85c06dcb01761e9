"""The Kubernetes extended resource each vendor's device plugin advertises for one accelerator
(`nvidia.com/gpu`, `amd.com/gpu`, `aws.amazon.com/neuron`, `habana.ai/gaudi`, `google.com/tpu`).

One table (`data/kubernetes.yaml`, `stacks.<vendor>.resource`, each with its source) read by
every stage that names the resource: the Kubernetes and Kueue exports and the fleet's quotas.
"""

from __future__ import annotations

from functools import cache

from rightsize.catalog.loader import read_data_file
from rightsize.catalog.registry import get_accelerator

DATA_FILE = "kubernetes.yaml"


@cache
def _resources() -> dict[str, str]:
    stacks = read_data_file(DATA_FILE)["stacks"]
    return {str(vendor): str(d["resource"]) for vendor, d in stacks.items()}


def vendors_with_device_plugin() -> tuple[str, ...]:
    return tuple(sorted(_resources()))


def device_resource(vendor: str) -> str | None:
    """The extended resource of `vendor`'s device plugin; None for a vendor the data lacks."""
    return _resources().get(vendor)


def accelerator_resource(accelerator: str) -> str | None:
    """The extended resource pods request for catalog accelerator `accelerator`; None when unknown."""
    try:
        vendor = get_accelerator(accelerator).vendor
    except Exception:  # noqa: BLE001 - an unknown id has no resource
        return None
    return device_resource(vendor)
