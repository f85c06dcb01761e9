"""Rank, world size and rendezvous from the launcher that started this process.

- torchrun (and any launcher that sets the same variables): RANK, WORLD_SIZE,
  LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; joined with `env://`.
- srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE or
  SLURM_STEP_TASKS_PER_NODE, and the first host of SLURM_STEP_NODELIST (or
  SLURM_JOB_NODELIST) as the rendezvous address; the port is MASTER_PORT when set, else
  derived from the job and step ids so two steps of one job do not collide.

A process that sees neither (or a world of one) is not distributed: the profiler then
starts its own local ranks as before.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

PORT_BASE = 20000
PORT_SPAN = 20000


@dataclass(frozen=True)
class Launch:
    """This process's place in a launched job."""

    launcher: str  # "torchrun" or "srun"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int
    host: str

    @property
    def init_method(self) -> str:
        return f"tcp://{self.master_addr}:{self.master_port}"


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list ("gpu[01-03,07],login1") as host names, in order."""
    hosts: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text):
        m = re.fullmatch(r"(.*?)\[([^\]]*)\](.*)", part)
        if not m:
            hosts.append(part)
            continue
        prefix, ranges, suffix = m.groups()
        for rng in ranges.split(","):
            lo, _, hi = rng.partition("-")
            if not hi:
                hosts.append(f"{prefix}{lo}{suffix}")
                continue
            width = len(lo)
            hosts += [f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), int(hi) + 1)]
    return hosts


def _first_int(text: str | None, default: int) -> int:
    """SLURM_STEP_TASKS_PER_NODE looks like "4(x2),3": the first count."""
    m = re.match(r"\d+", text or "")
    return int(m.group()) if m else default


def detect(env: Mapping[str, str] | None = None) -> Launch | None:
    """The launch this process belongs to, or None when it runs on its own."""
    e = os.environ if env is None else env
    host = socket.gethostname()
    if "RANK" in e and "WORLD_SIZE" in e and int(e["WORLD_SIZE"]) > 1:
        return Launch(
            launcher="torchrun",
            rank=int(e["RANK"]),
            world_size=int(e["WORLD_SIZE"]),
            local_rank=int(e.get("LOCAL_RANK", "0")),
            local_world_size=int(e.get("LOCAL_WORLD_SIZE", e["WORLD_SIZE"])),
            master_addr=e.get("MASTER_ADDR", "127.0.0.1"),
            master_port=int(e.get("MASTER_PORT", "29500")),
            host=host,
        )
    if "SLURM_PROCID" in e and int(e.get("SLURM_NTASKS", "1")) > 1 and "SLURM_STEP_ID" in e:
        nodelist = e.get("SLURM_STEP_NODELIST") or e.get("SLURM_JOB_NODELIST") or host
        first = expand_hostlist(nodelist)[0]
        job, step = int(e.get("SLURM_JOB_ID", "0")), int(e.get("SLURM_STEP_ID", "0") or 0)
        port = int(e["MASTER_PORT"]) if "MASTER_PORT" in e else PORT_BASE + (job * 7 + step) % PORT_SPAN
        ntasks = int(e["SLURM_NTASKS"])
        per_node = e.get("SLURM_STEP_TASKS_PER_NODE") or e.get("SLURM_TASKS_PER_NODE")
        return Launch(
            launcher="srun",
            rank=int(e["SLURM_PROCID"]),
            world_size=ntasks,
            local_rank=int(e.get("SLURM_LOCALID", "0")),
            local_world_size=_first_int(per_node, ntasks),
            master_addr=e.get("MASTER_ADDR", first),
            master_port=port,
            host=host,
        )
    return None
