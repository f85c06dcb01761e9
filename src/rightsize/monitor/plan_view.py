"""The one place `monitor` reads a plan: what was planned, as plain typed numbers.

A plan arrives as a live plan object (from a spec planned now) or as the JSON that
``rightsize plan --format json`` wrote. Both are read here, through `_get`, which takes
attributes and dict keys alike; the rest of `monitor` sees only `Planned`. When the plan's
types change (typed plan models), this adapter is the only file to follow them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput

DEFAULT_UTILISATION_TARGET = 0.8  # the serving policy's default (spec.inference.Policy)
DEFAULT_HEADROOM = 0.2


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    """obj.a.b or obj['a']['b'], whichever the object holds; `default` when absent."""
    cur = obj
    for key in path:
        if cur is None:
            return default
        cur = cur.get(key) if isinstance(cur, dict) else getattr(cur, key, None)
    return default if cur is None else cur


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None


@dataclass
class Planned:
    """What the plan promised, in SI units; None where the plan does not say."""

    kind: str  # "serving" | "training"
    name: str
    accelerator: str
    gpus: int
    replicas: int = 1
    tp: int = 1
    replica_capacity_rps: float | None = None
    design_rate_rps: float | None = None
    peak_rate_rps: float | None = None
    mean_rate_rps: float | None = None
    headroom: float = DEFAULT_HEADROOM
    utilisation_target: float = DEFAULT_UTILISATION_TARGET
    slo: dict[str, float] = field(default_factory=dict)  # ttft_s, tpot_s (limits)
    slo_percentile: float = 95.0
    latency_s: dict[str, float] = field(default_factory=dict)  # planned ttft/tpot at the percentile
    prompt_mean_tokens: float | None = None
    output_mean_tokens: float | None = None
    memory_bytes_per_gpu: float | None = None
    hbm_bytes_per_gpu: float | None = None
    gpu_tdp_w: float | None = None
    gpu_typical_w: float | None = None
    gpu_activity: float | None = None  # the activity the power plan assumed
    usd_per_month: float | None = None
    usd_per_gpu_hour: float | None = None
    hours_per_month: float = 730.5

    @property
    def usable_capacity_rps(self) -> float | None:
        """What the replicas serve while each stays under the utilisation target."""
        if self.replica_capacity_rps is None:
            return None
        return self.replicas * self.replica_capacity_rps * self.utilisation_target

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "usable_capacity_rps": self.usable_capacity_rps}


def _sizing(plan: Any) -> dict[str, Any]:
    if isinstance(plan, dict):
        s = plan.get("sizing")
        return s if isinstance(s, dict) else {}
    from rightsize.advise.view import sizing_dict

    return sizing_dict(plan)


def _kind(plan: Any) -> str:
    if isinstance(plan, dict):
        k = str(plan.get("kind", ""))
        return "serving" if k.startswith("serving") else ("training" if k.startswith("training") else k)
    name = type(plan).__name__
    return "serving" if name == "ServingPlan" else ("training" if name == "TrainingPlan" else name)


def planned(plan: Any, spec: Any = None) -> Planned:
    """Read a plan (object or JSON dict), filling traffic and SLO from the spec when given."""
    kind = _kind(plan)
    best = _get(plan, "best")
    if best is None or kind not in ("serving", "training"):
        raise BadInput(
            f"`monitor` compares serving and training plans; this is a {kind or 'plan of unknown kind'}.",
            "Other plan kinds have no running-system metrics mapped yet.",
            "Give a serving or training spec (or its `rightsize plan --format json` output).",
        )
    sizing = _sizing(plan)
    acc = str(_get(best, "accelerator", default=""))
    p = Planned(
        kind=kind,
        name=str(_get(plan, "name", default="plan")),
        accelerator=acc,
        gpus=int(_get(best, "gpus", default=0)),
    )
    power = sizing.get("power") or {}
    p.gpu_tdp_w = _num(power.get("gpu_tdp_w"))
    p.gpu_typical_w = _num(power.get("gpu_typical_w"))
    p.gpu_activity = _num(power.get("gpu_activity_fraction"))
    on_demand = _get(sizing, "cost", "cloud", "on_demand", default={})
    p.usd_per_month = _num(on_demand.get("usd_per_month"))
    p.usd_per_gpu_hour = _num(on_demand.get("usd_per_gpu_hour"))
    p.hours_per_month = _num(_get(sizing, "run", "hours_per_month")) or p.hours_per_month
    p.hbm_bytes_per_gpu = _hbm(acc)
    if kind == "serving":
        _serving(p, plan, best, sizing, spec)
    else:
        mem = _get(best, "memory", default={}) or _get(best, "memory_per_gpu", default={})
        p.memory_bytes_per_gpu = _num(mem.get("total_bytes")) if isinstance(mem, dict) else None
    return p


def _hbm(acc: str) -> float | None:
    from rightsize.catalog import get_accelerator
    from rightsize.errors import RightsizeError

    try:
        return float(get_accelerator(acc).hbm_bytes) if acc else None
    except (RightsizeError, KeyError):
        return None


def _serving(p: Planned, plan: Any, best: Any, sizing: dict[str, Any], spec: Any) -> None:
    p.replicas = int(_get(best, "replicas", default=1))
    p.tp = int(_get(best, "tp", default=1))
    p.replica_capacity_rps = _num(_get(best, "replica_capacity_rps"))
    p.design_rate_rps = _num(_get(best, "design_rate_rps"))
    mem = _get(best, "memory", default={})
    weights, kv_tokens, kv_per_token = (
        _num(mem.get("weights_bytes_per_gpu")),
        _num(mem.get("kv_capacity_tokens")),
        _num(mem.get("kv_bytes_per_token")),
    )
    if weights is not None and kv_tokens is not None and kv_per_token is not None:
        p.memory_bytes_per_gpu = weights + kv_tokens * kv_per_token / max(p.tp, 1)
    margins = sizing.get("margins") or []
    for m in margins:
        if isinstance(m, dict) and m.get("what") == "peak request rate":
            p.peak_rate_rps = _num(m.get("base"))
            p.headroom = _num(m.get("margin_fraction")) or p.headroom
    if spec is not None:
        tr, slo = _get(spec, "traffic"), _get(spec, "slo")
        p.peak_rate_rps = _num(_get(tr, "peak_rate_per_s")) or p.peak_rate_rps
        p.mean_rate_rps = _num(_get(tr, "rate_per_s"))
        p.headroom = float(_get(spec, "policy", "headroom", default=p.headroom))
        p.utilisation_target = float(_get(spec, "policy", "utilisation_target", default=p.utilisation_target))
        p.prompt_mean_tokens = _num(_get(tr, "prompt_tokens", "mean_tokens"))
        p.output_mean_tokens = _num(_get(tr, "output_tokens", "mean_tokens"))
        for k in ("ttft_s", "tpot_s", "e2e_s"):
            v = _num(_get(slo, k))
            if v is not None:
                p.slo[k] = v
        p.slo_percentile = float(_get(slo, "percentile", default=95.0))
    if p.peak_rate_rps is None and p.design_rate_rps is not None:
        p.peak_rate_rps = p.design_rate_rps / (1.0 + p.headroom)
    lat = _get(best, "latency_s", default={}) or {}
    pct = int(round(p.slo_percentile))
    for k in ("ttft", "tpot"):
        v = _num(lat.get(f"{k}_p{pct}_s"))
        if v is not None:
            p.latency_s[f"{k}_s"] = v


def load_plan_or_spec(path: str, plan_fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(plan, spec): a YAML spec is planned now with `plan_fn` (the API's `plan`, passed in
    because `api` sits below `monitor`); a JSON plan is read as it is (spec None)."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(
            f"{path}: no such file.",
            fix="Give a workload spec (YAML) or a plan from `rightsize plan --format json`.",
        )
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise BadInput(f"{path} is not valid JSON: {err}.") from None
        if not isinstance(data, dict) or "best" not in data:
            raise BadInput(
                f"{path} is JSON but not a plan.",
                "A plan is what `rightsize plan SPEC --format json` writes (it has 'kind' and 'best').",
                "Give the spec YAML, or save its plan with `rightsize plan SPEC --format json -o plan.json`.",
            )
        return data, None
    from rightsize.spec import load_spec

    spec = load_spec(p)
    return plan_fn(spec), spec
