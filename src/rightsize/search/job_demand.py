"""What a chosen vision or recommendation option asks of the infrastructure, built once for both
kinds: the facts a kind knows of its option (`KindFacts`), the step time across NIC speeds, and
the `Demand` of a training run or a service that sizing reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rightsize.catalog import NodeType
from rightsize.search.calibrated import calibrated_hardware
from rightsize.search.demand import Demand

# NIC speeds (Gb/s per GPU) a training demand gives the step time at, for the fabric sizing.
NIC_SWEEP_GBPS = (100.0, 200.0, 400.0, 800.0, 1600.0)


@dataclass(frozen=True)
class KindFacts:
    """What a chosen vision or recommendation option asks of the infrastructure, beyond its rate:
    the work unit and the bytes read per unit, the model's size, the host side, and how much of
    the accelerator and of the step the compute is."""

    unit: str
    unit_bytes: float
    params: float
    weights_bytes: float
    checkpoint_bytes: float
    host_memory_bytes_per_gpu: float
    cpu_cores_per_gpu: float
    compute_utilisation: float
    compute_share_of_step: float


def nic_sweep(
    acc: Any,
    node: NodeType,
    precision: str,
    calibration: Any,
    step_at: Callable[[Any], float | None],
    power_limit_w: float | None = None,
) -> dict[float, float]:
    """The step time at each NIC speed of the sweep (`step_at(hardware)`; None: no such step),
    on boards capped at `power_limit_w` (None: the TDP) as the plan's own step was."""
    sweep: dict[float, float] = {}
    for gbps in NIC_SWEEP_GBPS:
        hw = calibrated_hardware(acc, node, precision, calibration, power_limit_w).with_overrides(
            scaleout_bytes_per_s_per_gpu=gbps * 1e9 / 8.0
        )
        step = step_at(hw)
        if step is not None:
            sweep[gbps] = step
    return sweep


def _demand(name: str, best: Any, facts: KindFacts, **kind: Any) -> Demand:
    """The Demand fields every kind fills alike from its option and facts; `kind` the rest."""
    return Demand(
        name=name,
        accelerator=best.accelerator,
        node=best.node,
        gpus=best.gpus,
        compute_utilisation=facts.compute_utilisation,
        runs_per_month=None,
        work_unit=facts.unit,
        bytes_per_work_unit=facts.unit_bytes,
        params=facts.params,
        weights_bytes=facts.weights_bytes,
        host_memory_bytes_per_gpu=facts.host_memory_bytes_per_gpu,
        cpu_cores_per_gpu=facts.cpu_cores_per_gpu,
        compute_share_of_step=facts.compute_share_of_step,
        **kind,
    )


def training_demand(
    name: str,
    best: Any,
    facts: KindFacts,
    units: tuple[float, float, float],
    sweep: dict[float, float],
) -> Demand:
    """The Demand of a training run; `units` is (units/s, units in the run, dataset bytes)."""
    units_per_s, units_total, dataset_bytes = units
    assert best.time_to_train_s is not None
    return _demand(
        name,
        best,
        facts,
        workload="pretraining",
        duty_cycle=1.0,
        run_s=best.time_to_train_s * (best.goodput or 1.0),  # failure-free: sizing applies goodput
        work_units_per_s=units_per_s,
        work_units_total=units_total,
        dataset_bytes=dataset_bytes,
        data_read_bytes_per_s=units_per_s * facts.unit_bytes,
        checkpoint_bytes=facts.checkpoint_bytes,
        step_s=best.step["step_s"],
        step_s_by_nic_gbps=sweep,
    )


def serving_demand(
    name: str, best: Any, facts: KindFacts, rates: tuple[float, float, float], replicas: tuple[int, int]
) -> Demand:
    """The Demand of a service; `rates` is (base units/s, design units/s, load: the share of the
    fleet's capacity the base rate uses), `replicas` is (replicas, GPUs per replica)."""
    base, design, load = rates
    return _demand(
        name,
        best,
        facts,
        workload="serving",
        duty_cycle=min(1.0, load),
        run_s=None,
        work_units_per_s=base,
        work_units_total=None,
        dataset_bytes=0.0,
        data_read_bytes_per_s=base * facts.unit_bytes,
        checkpoint_bytes=0.0,
        step_s=None,
        step_s_by_nic_gbps={},
        replicas=replicas[0],
        gpus_per_replica=replicas[1],
        design_rate_rps=design,
        base_rate_rps=base,
    )
