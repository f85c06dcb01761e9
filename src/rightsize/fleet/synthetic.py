"""A synthetic fleet of many workloads for scale tests and benchmarks, as a `kind: fleet` mapping.

Workloads cycle over the bundled example specs (pre-training, a weekly fine-tune, a chat service,
a nightly batch job) with schedules that differ: staggered windows, priorities, volumes and load
shapes. The same arguments give the same fleet (no randomness).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from rightsize.spec.fleet import month_text

SPECS = (
    "fleet-2027/pretrain-8b.yaml",
    "llama3-8b-lora-weekly.yaml",
    "fleet-2027/chat-70b.yaml",
    "fleet-2027/nightly-batch.yaml",
)
WINDOWS = ("22:00-06:00", "20:00-04:00", "00:00-08:00", "18:00-02:00")


def synthetic_fleet(examples: Path, workloads: int, months: int, start: int = 2027 * 12) -> dict[str, Any]:
    """`workloads` entries over `months` months from `start` (months since year 0); each `spec:`
    is relative to `examples` (a fleet's entries stay inside its folder: `write_synthetic_fleet`
    copies them beside the fleet file)."""
    out: list[dict[str, Any]] = []
    for i in range(workloads):
        kind = i % len(SPECS)
        entry: dict[str, Any] = {
            "spec": SPECS[kind],
            "name": f"w{i:04d}",
            "priority": 10 + i % 7,
        }
        first = (i * 7) % max(1, months)
        if kind == 0:  # a pre-training run somewhere in the horizon, 3 months to finish
            entry["start"] = month_text(start + first)
            entry["end"] = month_text(start + min(months - 1, first + 2))
        elif kind == 1:  # a weekly fine-tune over part of the horizon
            entry["start"] = month_text(start + first // 2)
        elif kind == 2:  # a service with its own growth
            entry["growth_per_year"] = round(0.1 * (i % 6), 2)
            entry["load"] = {"peak_to_average": 1.5 + 0.25 * (i % 5)}
            entry["start"] = month_text(start + first // 3)
        else:  # a nightly batch job, a volume and window of its own
            entry["batch"] = {"requests": f"{1 + i % 4}M", "window": WINDOWS[i % len(WINDOWS)]}
        out.append(entry)
    return {
        "kind": "fleet",
        "name": f"synthetic-{workloads}x{months}",
        "start": month_text(start),
        "horizon_months": months,
        "workloads": out,
    }


def write_synthetic_fleet(
    folder: Path, examples: Path, workloads: int, months: int, policy: dict[str, Any] | None = None
) -> Path:
    """`folder/fleet.yaml`, a synthetic fleet, with the example specs it names copied beside it."""
    for rel in SPECS:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(examples / rel, folder / rel)
    data = synthetic_fleet(examples, workloads, months)
    if policy:
        data["policy"] = policy
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path
