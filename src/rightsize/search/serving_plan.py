"""The records of a serving plan: each candidate deployment and the plan; and the
tensor-parallel degrees a serving search considers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rightsize.perf.serving_multinode import ReplicaLayout
from rightsize.search.demand import Demand

TP_OPTIONS = (1, 2, 4, 8, 16, 32, 64)


@dataclass
class ServingCandidate:
    accelerator: str
    node: str
    tp: int
    replicas: int
    weight_precision: str
    kv_precision: str
    replica_capacity_rps: float  # highest rate one replica sustains within every SLO
    design_rate_rps: float  # peak x (1 + headroom)
    latency_s: dict[str, float] = field(default_factory=dict)  # ttft/tpot/e2e at p50/p90/p95/p99
    slo_headroom: dict[str, float] = field(default_factory=dict)  # limit / achieved at the SLO percentile
    goodput: float | None = None
    cost_usd_per_hour: float | None = None  # whole nodes billed, on demand
    # The hour's bill / the output tokens (requests) served in it at the traffic's average rate
    # (search.serving_costs owns the definition; the plan's figure is the sizing's, see settle_service).
    cost_usd_per_m_output_tokens: float | None = None
    cost_usd_per_request: float | None = None
    output_tokens_per_joule: float | None = None
    output_tokens_per_s: float = 0.0
    memory: dict[str, float] = field(default_factory=dict)
    pp: int = 1  # pipeline stages per replica
    nodes_per_replica: int = 1
    layout: ReplicaLayout | None = None  # how a replica's GPUs are placed and wired (exporters read it)
    disaggregation: Any = None  # search.serving_disagg.DisaggDecision when the search weighed it

    @property
    def gpus_per_replica(self) -> int:
        return self.layout.gpus if self.layout is not None else self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.gpus_per_replica * self.replicas

    @property
    def replica_shape(self) -> str:
        """One replica's parallel layout as text, from its `layout` record: tp8, tp8 x pp2
        (2 nodes), tp8 x ep16 (2 nodes)."""
        lay = self.layout
        tp, pp, ep, nodes = (
            (lay.tp, lay.pp, lay.ep, lay.nodes)
            if lay is not None
            else (self.tp, self.pp, 1, self.nodes_per_replica)
        )
        text = " x ".join([f"tp{tp}"] + [f"pp{pp}"] * (pp > 1) + [f"ep{ep}"] * (ep > 1))
        return text if nodes <= 1 else f"{text} ({nodes} nodes)"

    # The figures every kind's best option answers (a plan made with and without a calibration
    # is compared on them): a deployment has no step, MFU or run time; its cost is per hour, as
    # the vision and recommendation options' inference cost is.
    @property
    def cost_usd(self) -> float | None:
        return self.cost_usd_per_hour

    @property
    def step_time_s(self) -> float | None:
        return None

    @property
    def mfu(self) -> float | None:
        return None

    @property
    def time_to_train_s(self) -> float | None:
        return None


@dataclass
class ServingPlan:
    name: str
    model: str
    scenario: str
    objective: str
    best: ServingCandidate
    alternatives: list[tuple[ServingCandidate, str]]
    pareto: list[ServingCandidate]
    rejected: list[tuple[str, str]]
    assumptions: list[str]
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    # Filled after the search: what the chosen configuration asks of the infrastructure,
    # and the bill of materials the sizing package derives from it (see api.plan).
    demand: Demand | None = None
    sizing: Any = None
    uncertainty: dict[str, Any] | None = None  # P10/P50/P90 from search.uncertainty
