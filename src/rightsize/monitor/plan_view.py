"""The one place `monitor` reads a plan: what was planned, as plain typed numbers.

A plan arrives as a live plan object (from a spec planned now) or as the JSON that
``rightsize plan --format json`` wrote. Both are read here, through `_get`, which takes
attributes and dict keys alike; the rest of `monitor` sees only `Planned`. When the plan's
types change (typed plan models), this adapter is the only file to follow them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.safe_read import clean_key, read_json_capped

DEFAULT_UTILISATION_TARGET = 0.8  # the serving policy's default (spec.inference.Policy)
DEFAULT_HEADROOM = 0.2


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    """obj.a.b or obj['a']['b'], whichever the object holds; `default` when absent. A JSON plan
    edited by hand may hold anything: a step through something that is neither a mapping nor an
    object with that attribute is a BadInput naming the key."""
    cur = obj
    for depth, key in enumerate(path):
        if cur is None:
            return default
        if isinstance(cur, dict):
            cur = cur.get(key)
        elif isinstance(cur, str | int | float | list | bool):
            raise _wrong(".".join(path[:depth]), "a mapping", cur)
        else:
            cur = getattr(cur, key, None)
    return default if cur is None else cur


def _wrong(key: str, expected: str, value: Any) -> BadInput:
    kind = (
        "list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else type(value).__name__
    )
    return BadInput(
        f"The plan's `{clean_key(key, 60)}` is a {kind}, not {expected}.",
        "A plan is read as `rightsize plan SPEC --format json` wrote it.",
        "Re-plan with `rightsize plan SPEC --format json -o plan.json` rather than editing the JSON.",
    )


def _num(value: Any, key: str = "value") -> float | None:
    """A figure of the plan as a float; None when absent or not finite; BadInput when not a number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _wrong(key, "a number", value)
    out = float(value)
    return out if math.isfinite(out) else None


def _count(value: Any, key: str, default: int) -> int:
    """A whole number of the plan (GPUs, replicas, tp): at least 0 and at most 10^9."""
    got = _num(value, key)
    if got is None:
        return default
    if got != int(got) or not 0 <= got <= 1e9:
        raise _wrong(key, "a whole number from 0 to 10^9", value)
    return int(got)


def _text(value: Any, key: str, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise _wrong(key, "text", value)
    return value


def _section(value: Any, key: str) -> dict[str, Any]:
    """A mapping of the plan; {} when absent."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _wrong(key, "a mapping", value)
    return value


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
        return _section(plan.get("sizing"), "sizing")
    from rightsize.advise.view import sizing_dict

    return sizing_dict(plan)


def _kind(plan: Any) -> str:
    if isinstance(plan, dict):
        k = _text(plan.get("kind"), "kind", "")
        return "serving" if k.startswith("serving") else ("training" if k.startswith("training") else k)
    name = type(plan).__name__
    return "serving" if name == "ServingPlan" else ("training" if name == "TrainingPlan" else name)


def planned(plan: Any, spec: Any = None) -> Planned:
    """Read a plan (object or JSON dict), filling traffic and SLO from the spec when given. A figure
    of the wrong type is a BadInput naming its key; an absent one is None (the plan does not say)."""
    kind = _kind(plan)
    best = _get(plan, "best")
    if best is None or kind not in ("serving", "training"):
        raise BadInput(
            f"`monitor` compares serving and training plans; this is a {clean_key(kind) or 'plan of unknown kind'}.",
            "Other plan kinds have no running-system metrics mapped yet.",
            "Give a serving or training spec (or its `rightsize plan --format json` output).",
        )
    if isinstance(plan, dict):
        _section(best, "best")
    sizing = _sizing(plan)
    acc = _text(_get(best, "accelerator"), "best.accelerator", "")
    p = Planned(
        kind=kind,
        name=_text(_get(plan, "name"), "name", "plan"),
        accelerator=acc,
        gpus=_count(_get(best, "gpus"), "best.gpus", 0),
    )
    power = _section(sizing.get("power"), "sizing.power")
    p.gpu_tdp_w = _num(power.get("gpu_tdp_w"), "sizing.power.gpu_tdp_w")
    p.gpu_typical_w = _num(power.get("gpu_typical_w"), "sizing.power.gpu_typical_w")
    p.gpu_activity = _num(power.get("gpu_activity_fraction"), "sizing.power.gpu_activity_fraction")
    on_demand = _section(_get(sizing, "cost", "cloud", "on_demand"), "sizing.cost.cloud.on_demand")
    p.usd_per_month = _num(on_demand.get("usd_per_month"), "sizing.cost.cloud.on_demand.usd_per_month")
    p.usd_per_gpu_hour = _num(
        on_demand.get("usd_per_gpu_hour"), "sizing.cost.cloud.on_demand.usd_per_gpu_hour"
    )
    p.hours_per_month = (
        _num(_get(sizing, "run", "hours_per_month"), "sizing.run.hours_per_month") or p.hours_per_month
    )
    p.hbm_bytes_per_gpu = _hbm(acc)
    if kind == "serving":
        _serving(p, best, sizing)
        if spec is not None:
            _from_spec(p, spec)
        _latency(p, best)
    else:
        mem = _get(best, "memory") or _get(best, "memory_per_gpu")
        if isinstance(mem, dict):
            p.memory_bytes_per_gpu = _num(mem.get("total_bytes"), "best.memory.total_bytes")
    return p


def _hbm(acc: str) -> float | None:
    from rightsize.catalog import get_accelerator
    from rightsize.errors import RightsizeError

    try:
        return float(get_accelerator(acc).hbm_bytes) if acc else None
    except (RightsizeError, KeyError):
        return None


def _serving(p: Planned, best: Any, sizing: dict[str, Any]) -> None:
    p.replicas = _count(_get(best, "replicas"), "best.replicas", 1)
    p.tp = _count(_get(best, "tp"), "best.tp", 1)
    p.replica_capacity_rps = _num(_get(best, "replica_capacity_rps"), "best.replica_capacity_rps")
    p.design_rate_rps = _num(_get(best, "design_rate_rps"), "best.design_rate_rps")
    mem = _section(_get(best, "memory"), "best.memory")
    weights, kv_tokens, kv_per_token = (
        _num(mem.get(key), f"best.memory.{key}")
        for key in ("weights_bytes_per_gpu", "kv_capacity_tokens", "kv_bytes_per_token")
    )
    if weights is not None and kv_tokens is not None and kv_per_token is not None:
        p.memory_bytes_per_gpu = weights + kv_tokens * kv_per_token / max(p.tp, 1)
    margins = sizing.get("margins") or []
    if not isinstance(margins, list):
        raise _wrong("sizing.margins", "a list", margins)
    for m in margins:
        if isinstance(m, dict) and m.get("what") == "peak request rate":
            p.peak_rate_rps = _num(m.get("base"), "sizing.margins.base")
            p.headroom = _num(m.get("margin_fraction"), "sizing.margins.margin_fraction") or p.headroom


def _from_spec(p: Planned, spec: Any) -> None:
    """Traffic and SLO from the spec the plan was made from (a live spec: already validated)."""
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


def _latency(p: Planned, best: Any) -> None:
    if p.peak_rate_rps is None and p.design_rate_rps is not None:
        p.peak_rate_rps = p.design_rate_rps / (1.0 + p.headroom)
    lat = _section(_get(best, "latency_s"), "best.latency_s")
    pct = int(round(p.slo_percentile))
    for k in ("ttft", "tpot"):
        v = _num(lat.get(f"{k}_p{pct}_s"), f"best.latency_s.{k}_p{pct}_s")
        if v is not None:
            p.latency_s[f"{k}_s"] = v


MAX_PLAN_BYTES = 64 * 2**20
"""A saved plan is tens of KB; the cap is checked before a byte is read."""


def load_plan_or_spec(path: str, plan_fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(plan, spec): a YAML spec is planned now with `plan_fn` (the API's `plan`, passed in
    because `api` sits below `monitor`); a JSON plan is read as it is (spec None), through the
    capped reader (a regular file; size, depth and number caps before parsing)."""
    p = Path(path)
    if p.suffix.lower() == ".json":
        fix = "Give the spec YAML, or save its plan with `rightsize plan SPEC --format json -o plan.json`."
        data = read_json_capped(p, "the plan", MAX_PLAN_BYTES, fix)
        if not isinstance(data, dict) or "best" not in data:
            raise BadInput(
                f"{path} is JSON but not a plan.",
                "A plan is what `rightsize plan SPEC --format json` writes (it has 'kind' and 'best').",
                fix,
            )
        return data, None
    from rightsize.spec import load_spec

    spec = load_spec(p)
    return plan_fn(spec), spec
