"""Plain-text tables for the profiler's results (the JSON form is the result dict itself)."""

from __future__ import annotations

from typing import Any

from rightsize.constants import GiB


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def render_train(res: dict[str, Any]) -> str:
    lines = ["Training profile", ""]
    env = res["header"]["environment"]
    cfg = res["header"]["config"]
    lines.append(
        f"device {cfg['device']}  dtype {cfg['dtype']}  torch {env.get('torch')}  "
        f"{env.get('gpu_name') or env.get('cpu_model', env.get('processor', ''))}"
    )
    lines.append("")
    lines.append(
        f"{'batch':>6} {'seq':>6} {'status':>8} {'step ms':>9} {'fwd ms':>8} {'bwd ms':>8} {'opt ms':>8} "
        f"{'data %':>7} {'GFLOP/s':>9} {'mem GiB':>8}"
    )
    for r in res["results"]:
        if r.get("kind") != "train":
            continue
        if r["status"] != "ok":
            lines.append(f"{r['batch']:>6} {r['seq_len']:>6} {r['status']:>8}  {r.get('error', '')[:60]}")
            continue
        t = r["time_s"]
        mem = r["memory"].get("peak_allocated_bytes", r["memory"].get("peak_estimate_bytes", 0.0))
        lines.append(
            f"{r['batch']:>6} {r['seq_len']:>6} {'ok':>8} {_ms(t['step']['median']):>9} "
            f"{_ms(t['forward']['median']):>8} {_ms(t['backward']['median']):>8} "
            f"{_ms(t['optimizer']['median']):>8} {r['data_wait_fraction'] * 100:>6.1f}% "
            f"{r['achieved_flops_per_s'] / 1e9:>9.1f} {mem / GiB:>8.3f}"
            + ("  INPUT-BOUND" if r.get("input_bound") else "")
        )
    fit = res.get("fit", {})
    if "step_time_s" in fit:
        f = fit["step_time_s"]
        lines += [
            "",
            f"step time ~ {f['c0']:.3g} + {f['c1']:.3g} b s + {f['c2']:.3g} b s^2  (R^2 {f['r2']:.3f})",
        ]
    for s, bnd in sorted(fit.get("oom_boundary", {}).items(), key=lambda kv: int(kv[0])):
        if bnd.get("first_oom_batch"):
            lines.append(
                f"seq {s}: out of memory from batch {bnd['first_oom_batch']} (largest fit {bnd['max_ok_batch']})"
            )
    for n in fit.get("nonlinear", []):
        other = "seq_len" if n["axis"] == "batch" else "batch"
        lines.append(
            f"non-linear: {n['axis']} {n['from']:g} -> {n['to']:g} at {other} {n[other]}: "
            f"time ~ x^{n['exponent']:.2f} ({n['why']})"
        )
    lines += _telemetry(res.get("telemetry", {}))
    return "\n".join(lines)


def _telemetry(tele: dict[str, Any]) -> list[str]:
    if not tele:
        return []
    lines = ["", f"telemetry: {tele.get('samples', 0)} samples"]
    for note in tele.get("notes", []):
        lines.append(f"  note: {note}")
    for k, m in tele.get("metrics", {}).items():
        if not isinstance(m, dict) or not (k == "cpu_util_pct" or k.startswith("gpu")):
            continue
        ph = m["phases"]
        extra = (
            f"  alternating ~{ph['high_mean']:.0f} / ~{ph['low_mean']:.0f} ({ph['high_share']:.0%} high)"
            if ph.get("alternating")
            else ""
        )
        lines.append(
            f"  {k:<22} mean {m['mean']:9.1f}  std {m['std']:8.1f}  p5 {m['p5']:9.1f}  p95 {m['p95']:9.1f}{extra}"
        )
    for flag in tele.get("flags", []):
        lines.append(f"  FLAG: {flag}")
    return lines


def render_memory(res: dict[str, Any]) -> str:
    c, cmp = res["count"], res["comparison"]
    lines = [
        f"Training memory of {c['model']} on {c['device']} ({c['precision']}, {c['optimizer']}, "
        f"micro-batch {c['micro_batch']} x {c['seq_len']} tokens, flash attention {c['flash_attention']})",
        f"parameters: {c['params']:,}",
        "",
        f"{'component':<12} {'measured GiB':>13} {'analytic GiB':>13} {'error':>8}",
    ]
    for name, row in cmp.items():
        lines.append(
            f"{name:<12} {row['measured_bytes'] / GiB:>13.3f} {row['analytic_bytes'] / GiB:>13.3f} "
            f"{row['relative_error'] * 100:>7.2f}%"
        )
    lines.append(f"\ncounted in {c['seconds']:.2f} s")
    return "\n".join(lines)


def render_comms(res: dict[str, Any]) -> str:
    lines = [
        f"Collectives ({res['header']['config']['backend']}, world size {res['header']['config']['world_size']})",
        "",
        f"{'op':<16} {'bytes':>10} {'time us':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}",
    ]
    for r in res["results"]:
        if r.get("kind") == "comms":
            lines.append(
                f"{r['op']:<16} {r['bytes']:>10} {r['time_s']['median'] * 1e6:>10.1f} "
                f"{r['alg_bytes_per_s'] / 1e9:>11.3f} {r['bus_bytes_per_s'] / 1e9:>11.3f}"
            )
    return "\n".join(lines + _telemetry(res.get("telemetry", {})))


def render_serve(res: dict[str, Any]) -> str:
    s = res["summary"]
    lines = [
        "Serving load test",
        f"requests {s['requests']} (completed {s['completed']}, failed {s['failed']}) in {s['duration_s']:.2f} s",
        f"throughput {s['request_throughput_per_s']:.2f} req/s, {s['output_token_throughput_per_s']:.1f} output tok/s, "
        f"{s['total_token_throughput_per_s']:.1f} total tok/s",
    ]
    if s.get("failures"):
        lines.append("failed by kind: " + ", ".join(f"{kind} {n}" for kind, n in s["failures"].items()))
    if s.get("goodput_requests_per_s") is not None:
        lines.append(f"goodput {s['goodput_requests_per_s']:.2f} req/s against SLOs {s['slo']}")
    if s.get("slo_attainment") is not None:
        lines.append(
            f"SLO {'met' if s.get('slo_met') else 'NOT met'}: {s['slo_attainment']:.1%} of all requests "
            f"met every SLO (target {s['slo_attainment_target']:.0%})"
        )
    counts = (res.get("header") or {}).get("config", {}).get("input_len_counts")
    if counts:
        lines.append(f"prompt length counted in {counts}")
    lines += ["", f"{'metric':<6} {'mean ms':>9} {'median':>9} {'p90':>9} {'p95':>9} {'p99':>9}"]
    for k in ("ttft_s", "tpot_s", "itl_s", "e2el_s"):
        m = s.get(k) or {}
        if m:
            lines.append(
                f"{k[:-2].upper():<6} {_ms(m['mean']):>9} {_ms(m['median']):>9} {_ms(m['p90']):>9} "
                f"{_ms(m['p95']):>9} {_ms(m['p99']):>9}"
            )
    for e in s.get("errors", []):
        lines.append(f"error: {e}")
    return "\n".join(lines)


def render_calibration(doc: dict[str, Any], path: str | None) -> str:
    lines = ["Calibration" + (f" written to {path}" if path else "")]
    fit = doc["fit"]
    for acc, fields in doc["overrides"].items():
        lines.append(f"\n{acc}:")
        for k, v in fields.items():
            default = fit.get("default", {}).get(k)
            lines.append(
                f"  {k:<24} {v:.4g}" + (f"   (default {default:.4g})" if default is not None else "")
            )
    if fit.get("residuals"):
        lines += [
            "",
            f"{'batch':>6} {'seq':>6} {'measured ms':>12} {'default ms':>11} {'err':>7} {'calibrated ms':>14} {'err':>7}",
        ]
        for r in fit["residuals"]:
            lines.append(
                f"{r['batch']:>6} {r['seq_len']:>6} {_ms(r['measured_step_s']):>12} {_ms(r['default_step_s']):>11} "
                f"{r['default_error'] * 100:>6.1f}% {_ms(r['calibrated_step_s']):>14} {r['calibrated_error'] * 100:>6.1f}%"
            )
        lines.append(
            f"\ncalibrated step-time error: median {fit['median_abs_error'] * 100:.1f}%, max {fit['max_abs_error'] * 100:.1f}%"
        )
    if fit.get("comms"):
        c = fit["comms"]
        lines.append(
            f"collectives: bus bandwidth {c['bus_bytes_per_s'] / 1e9:.3f} GB/s, latency {c['latency_s'] * 1e6:.1f} us"
        )
    return "\n".join(lines)
