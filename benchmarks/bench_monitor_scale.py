"""Monitor at fleet scale: peak memory and time of `rightsize monitor` over a synthetic fleet.

Default: a month of 1,024 GPUs scraped every 15 s (DCGM activity and power-violation counter,
177 million samples each), backfilled with promtool into a real Prometheus on loopback; the
monitor runs in a subprocess whose peak RSS (getrusage) and wall time are printed, with the
findings it made (the slow, throttled GPU n17/gpu3 must be found).

    PYTHONPATH=src python benchmarks/bench_monitor_scale.py [--gpus 1024] [--days 30] [--interval 15]
        [--workdir DIR] [--keep]

The OpenMetrics text (tens of GB at full size) is deleted once backfilled; --workdir with an
existing `data/` reuses the blocks (same --gpus/--days/--interval/--end).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import monitor_synth as synth  # noqa: E402

SPEC = ROOT / "tests" / "data" / "monitor" / "serving.yaml"
# 2025-12-21 00:00 UTC: fixed, so a --workdir's blocks can be reused, and the month before it lies
# inside one 1458 h block range (promtool parses the whole file once per block range).
END_S = 1_766_275_200
BLOCK = "1458h"
CHILD = """
import json, resource, sys, time
t0 = time.time()
from rightsize.api import plan as run_plan
from rightsize.monitor import monitor
from rightsize.spec import load_spec
spec = load_spec(sys.argv[1])
r = monitor(run_plan(spec), spec, prometheus_url=sys.argv[2], window_s=float(sys.argv[3]),
            end_s=float(sys.argv[4]), timeout_s=600.0, deadline_s=7200.0)
doc = r.to_dict()
print(json.dumps({"seconds": time.time() - t0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "findings": [f["title"] for f in doc["findings"]],
                  "summary": {row["what"]: row["measured"] for row in doc["summary"]},
                  "step_s": doc["window"]["step_s"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--interval", type=int, default=15)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the workdir (its TSDB blocks)")
    args = ap.parse_args()
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        sys.exit("needs Debian's prometheus package (prometheus and promtool on PATH)")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-monitor-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    metrics = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_POWER_VIOLATION")
    if not data.exists():
        om = work / "fleet.om"
        t0 = time.time()
        n = synth.write_fleet_openmetrics(str(om), args.gpus, args.days, args.interval, END_S, metrics)
        t1 = time.time()
        print(
            f"generated {n:,} samples ({om.stat().st_size / 2**30:.1f} GiB of OpenMetrics) in {t1 - t0:.0f} s"
        )
        synth.backfill(str(om), str(data), promtool, timeout_s=4 * 3600, block=BLOCK)
        om.unlink()
        print(f"backfilled with promtool in {time.time() - t1:.0f} s")
    try:
        with synth.prometheus_on_loopback(prometheus, str(data), str(work), ready_s=600) as url:
            env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(SPEC), url, str(args.days * 86400.0), str(float(END_S))],
                check=True,
                capture_output=True,
                text=True,
                env=env,
                timeout=7200,
            )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps({"gpus": args.gpus, "days": args.days, "interval_s": args.interval,
                          "samples_per_metric": int(args.gpus * args.days * 86400 / args.interval),
                          **got}, indent=1))  # fmt: skip
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
