"""Cluster reliability figures (failure rate, restart cost, checkpoint bandwidth), sourced."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from rightsize.catalog.loader import Sourced, read_data_file, require_mapping, sourced

_FILE = "reliability.yaml"
_FIELDS = ("failure_rate_per_gpu_hour", "restart_s", "checkpoint_write_bytes_per_s_per_node")
_ASYNC_SYNC = "async_checkpoint_sync_s"


@dataclass(frozen=True)
class Reliability:
    failure_rate_per_gpu_hour: float
    restart_s: float
    checkpoint_write_bytes_per_s_per_node: float
    sources: dict[str, Sourced]
    # The fixed part of an asynchronous save's blocking time (perf.checkpoint); 0 when not given.
    async_checkpoint_sync_s: float = 0.0


@cache
def reliability() -> Reliability:
    raw = read_data_file(_FILE)
    block = require_mapping(raw, "default", _FILE, "default")
    figures = {f: sourced(block.get(f), _FILE, f"default.{f}") for f in (*_FIELDS, _ASYNC_SYNC)}
    return Reliability(
        failure_rate_per_gpu_hour=figures["failure_rate_per_gpu_hour"].value,
        restart_s=figures["restart_s"].value,
        checkpoint_write_bytes_per_s_per_node=figures["checkpoint_write_bytes_per_s_per_node"].value,
        sources=figures,
        async_checkpoint_sync_s=figures[_ASYNC_SYNC].value,
    )
