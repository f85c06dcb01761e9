"""`rightsize monitor PLAN_OR_SPEC --prometheus URL | --from FILE`: the running system against
its plan, and a re-plan from what was observed. Parsing only; the logic is in `rightsize.monitor`."""

from __future__ import annotations

import argparse
import calendar
import time
from collections.abc import Callable
from typing import Any

from rightsize.cli.output_args import check_outputs, emit
from rightsize.errors import BadInput
from rightsize.report.render import FORMATS


def _duration(text: str) -> float:
    from rightsize.spec.units import parse_duration_s

    try:
        value = float(parse_duration_s(text))
    except Exception:
        raise argparse.ArgumentTypeError(f"expected a duration like 7d, 12h or 30m, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _end(text: str) -> float:
    """Unix seconds, or an ISO time such as 2026-11-20T12:00:00Z (UTC)."""
    try:
        return float(text)
    except ValueError:
        pass
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%d"):
        try:
            return float(calendar.timegm(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"expected unix seconds or 2026-11-20T12:00:00Z, got {text!r}")


def cmd_monitor(args: argparse.Namespace) -> int:
    from rightsize.api import plan as run_plan
    from rightsize.monitor import load_plan_or_spec, monitor
    from rightsize.monitor.run import response_cap_bytes
    from rightsize.report.render import render

    if bool(args.prometheus) == bool(args.from_file):
        raise BadInput(
            "Give exactly one of --prometheus URL and --from FILE.",
            "monitor reads a live Prometheus, or a capture saved from one with --save.",
            "Use --prometheus http://prometheus:9090, or --from capture.json.",
        )
    if args.save and not args.prometheus:
        raise BadInput("--save records what a live Prometheus answers; it needs --prometheus.")
    check_outputs(args, [args.plan, args.from_file], [("--save", args.save, "the --save capture")])
    fleet = _fleet(args.plan)
    if fleet is not None:
        return _monitor_fleet(args, fleet, run_plan)
    if args.workload_selector:
        raise BadInput(
            "--workload-selector picks a fleet's workloads; this spec is one workload.",
            fix="Use --selector (or --gpu-selector / --serving-selector) for one workload.",
        )
    plan, spec = load_plan_or_spec(args.plan, run_plan)
    result = monitor(
        plan,
        spec,
        prometheus_url=args.prometheus,
        from_file=args.from_file,
        window_s=args.window,
        end_s=args.end,
        step_s=args.step,
        selector=args.selector,
        gpu_selector=args.gpu_selector,
        serving_selector=args.serving_selector,
        timeout_s=args.timeout,
        max_response_bytes=response_cap_bytes(args.max_response_mib),
        capture_path=args.save,
        plan_fn=run_plan,
        force=args.force,
    )
    emit(render(result, args.format, "Monitor"), args)
    return 0


def _fleet(path: str) -> Any:
    """The resolved fleet when `path` is a `kind: fleet` spec; a saved fleet plan is refused."""
    from pathlib import Path

    if Path(path).suffix.lower() == ".json":
        from rightsize.safe_read import read_json_capped

        data = read_json_capped(Path(path), "the plan", 64 * 2**20, "Give the spec YAML.")
        if isinstance(data, dict) and data.get("kind") == "fleet_plan":
            raise BadInput(
                f"{path} is a saved fleet plan; monitoring a fleet re-plans the rest of its horizon.",
                "That needs the fleet's workload specs, which a saved plan does not carry.",
                "Give the fleet spec (YAML) instead: rightsize monitor fleet.yaml --prometheus URL.",
            )
        return None
    from rightsize.spec.fleet_load import as_fleet

    return as_fleet(path)


def _monitor_fleet(args: argparse.Namespace, fleet: Any, run_plan: Callable[..., Any]) -> int:
    from rightsize.monitor.run import monitor_fleet_run, response_cap_bytes
    from rightsize.report.render import render

    for option in ("selector", "gpu_selector", "serving_selector"):
        if getattr(args, option):
            raise BadInput(
                f"--{option.replace('_', '-')} is for one workload; a fleet's workloads are picked by "
                "--workload-selector.",
                fix="Use e.g. --workload-selector '{namespace=\"$workload\"}'.",
            )
    result = monitor_fleet_run(
        fleet,
        run_plan(fleet),
        prometheus_url=args.prometheus,
        from_file=args.from_file,
        window_s=args.window,
        end_s=args.end,
        step_s=args.step,
        workload_selector=args.workload_selector,
        timeout_s=args.timeout,
        max_response_bytes=response_cap_bytes(args.max_response_mib),
        capture_path=args.save,
        plan_fn=run_plan,
        force=args.force,
    )
    emit(render(result, args.format, "Fleet monitor"), args)
    return 0


def register(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add `monitor` to the `rightsize` parser."""
    sp = add(
        "monitor",
        "compare a running system (Prometheus: DCGM exporter, vLLM) with its plan, and re-plan; report only",
        FORMATS,
    )
    sp.add_argument(
        "plan", help="workload spec (YAML; planned now, and re-planned) or a plan from `plan --format json`"
    )
    sp.add_argument("--prometheus", metavar="URL", help="Prometheus base URL, e.g. http://prometheus:9090")
    sp.add_argument(
        "--from", dest="from_file", metavar="FILE", help="a capture written by --save (air-gapped use)"
    )
    sp.add_argument("--save", metavar="FILE", help="also write every Prometheus answer to FILE for --from")
    sp.add_argument("--window", type=_duration, default=7 * 86400.0, help="how far back to look (default 7d)")
    sp.add_argument(
        "--end", type=_end, help="end of the window: unix seconds or 2026-11-20T12:00:00Z (default now)"
    )
    sp.add_argument(
        "--step", type=_duration, help="resolution (default: the window in ~2,000 steps, at least 1m)"
    )
    sp.add_argument("--selector", help="PromQL label matchers for every query, e.g. '{cluster=\"east\"}'")
    sp.add_argument(
        "--gpu-selector", help="label matchers for the DCGM exporter's series (overrides --selector)"
    )
    sp.add_argument("--serving-selector", help="label matchers for vLLM's series (overrides --selector)")
    sp.add_argument(
        "--workload-selector",
        metavar="TEMPLATE",
        help=(
            "a fleet: label matchers of one workload's GPU series, $workload standing for its name "
            "(default: '{pod=~\"$workload-.*\"}', the exported jobs' pod names)"
        ),
    )
    sp.add_argument(
        "--timeout",
        type=_duration,
        default=30.0,
        help="per try (default 30s; 2 retries; the whole command at most 10x)",
    )
    sp.add_argument("--max-response-mib", type=float, help="largest answer read per query (default 64)")
    sp.set_defaults(func=cmd_monitor)
