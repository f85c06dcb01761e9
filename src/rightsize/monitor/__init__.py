"""Keep measuring: read a running system from Prometheus (NVIDIA's DCGM exporter and vLLM
metrics), compare it with its plan over the window and by hour of day, and re-plan from
what was observed. It reports; it never acts on the system.

- `prom`: the Prometheus HTTP API (stdlib HTTP with deadlines, retries and size caps: `fetch`) and saved captures.
- `queries`: which names to ask (catalog metric map), and the answers in SI units.
- `fleet`: above 64 GPUs, what Prometheus aggregates (per step, and per GPU over the window),
  in chunks, so memory does not grow with GPUs x steps; `gpu_view` reads either form.
- `plan_view`: the one adapter that reads a plan (object or JSON).
- `compare`: measured against planned as advisor findings.
- `replan`: a recommender's demand, the spec re-planned, the difference.
"""

from rightsize.monitor.plan_view import Planned, load_plan_or_spec, planned
from rightsize.monitor.result import MonitorResult
from rightsize.monitor.run import monitor

__all__ = ["MonitorResult", "Planned", "load_plan_or_spec", "monitor", "planned"]
