"""Fleet planning at organisation scale (issues #29, #32): a synthetic fleet of N workloads over M
months (`rightsize.fleet.synthetic`: the bundled example specs with staggered schedules, volumes and
load shapes) planned from the command line in a fresh process, `--format json` on stdout.

Reports the wall time, the parts of it (solo plans, solves), the solver's status and gap, whether
stdout was valid JSON, and whether two runs gave the same plan. Target: 300 workloads over 36
months within a minute on a 2-core machine.

Run: `python benchmarks/bench_fleet_scale.py [--workloads 300] [--months 36] [--twice]` (prints JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from rightsize.fleet.synthetic import write_synthetic_fleet  # noqa: E402


def _run(path: Path) -> tuple[float, dict[str, Any] | None, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RIGHTSIZE_PROGRESS": "0"}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rightsize.cli.main", "plan", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    try:
        return wall, json.loads(proc.stdout), proc.stderr[-500:]
    except json.JSONDecodeError:
        return wall, None, proc.stderr[-500:]


def _fingerprint(d: dict[str, Any]) -> str:
    return json.dumps([d["cost"]["pooled_usd"], d["cost"]["dedicated_usd"], d["purchases"]], sort_keys=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=300)
    ap.add_argument("--months", type=int, default=36)
    ap.add_argument("--twice", action="store_true", help="plan twice and compare the plans")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_synthetic_fleet(Path(tmp), ROOT / "examples", args.workloads, args.months)
        wall, data, err = _run(path)
        out: dict[str, Any] = {
            "workloads": args.workloads,
            "months": args.months,
            "cpus": os.cpu_count(),
            "wall_s": round(wall, 2),
            "stdout_is_json": data is not None,
        }
        if data is None:
            out["stderr"] = err
            print(json.dumps(out, indent=2))
            return 1
        s = data["solver"]
        out.update(
            {
                "seconds": {k: round(v, 2) for k, v in data["seconds"].items()},
                "solo_plans": data["solo_plans"],
                "solver": {
                    k: s[k]
                    for k in (
                        "status",
                        "stopped_at_time_limit",
                        "mip_gap",
                        "variables",
                        "integer_variables",
                        "constraints",
                    )
                },
                "dedicated_solves": s["dedicated"],
                "pooled_usd": round(data["cost"]["pooled_usd"], 2),
                "dedicated_usd": round(data["cost"]["dedicated_usd"], 2),
                "within_a_minute": wall <= 60.0,
            }
        )
        if args.twice:
            wall2, again, _ = _run(path)
            out["second_wall_s"] = round(wall2, 2)
            out["same_plan_twice"] = again is not None and _fingerprint(again) == _fingerprint(data)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
