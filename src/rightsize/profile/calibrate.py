"""`rightsize calibrate PROFILE...`: fit the performance model's efficiencies to measurements.

The analytic model stays as it is (`perf.step.train_step`, `perf.gemm`, `perf.collectives`);
calibration only chooses the Hardware figures it reads, so a calibrated prediction is
still physics with fitted efficiencies, never a curve through the measured times.

Fitted, by minimising the squared log error of predicted against measured times
(Nelder-Mead over log parameters):

- `gemm_fraction` (GEMM efficiency; the shape dependence is `perf.gemm`'s wave and fill
  model) from the GEMM microbenchmarks and the forward + backward time of every point;
- `attention_fraction` (attention kernels) and `memory_bw_fraction` (memory-bound kernels
  and the optimizer update) and `kernel_overhead_s` (fixed cost per kernel) from the
  same points, the optimizer phase pinning the memory-bound efficiency;
- per tier, from a comms profile (collective and point-to-point time against message
  size: t = bus factor x bytes / bw + steps x latency, linear least squares over every
  op): within a node `scaleup_bw_fraction` and `scaleup_latency_s`; across nodes (records
  from `profile comms` under torchrun/srun on several hosts) `scaleout_bw_fraction` and
  `scaleout_latency_s`, which the fabric model of `plan --calibration` then uses.

The base Hardware is the catalog accelerator matching the profiled GPU's name, or, for a CPU
profile, a "cpu-host" Hardware whose peak and bandwidth are the host's measured best GEMM
throughput and copy bandwidth (fp32). The calibration file (JSON) holds the base hardware,
the overrides per accelerator id (what `plan --calibration` applies), the fit's residuals
with default against calibrated predictions, and the date. torch-free.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.atomic_write import write_text_atomic
from rightsize.errors import BadInput
from rightsize.perf.gemm import gemm_time_s
from rightsize.perf.hardware import Hardware
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.profile import jsonl
from rightsize.profile.fit import nelder_mead, nnls
from rightsize.profile.records import check_profile
from rightsize.spec.model import ModelArch

CALIBRATION_SCHEMA_VERSION = 1
CPU_HOST_ID = "cpu-host"
FITTED_FIELDS = ("gemm_fraction", "attention_fraction", "memory_bw_fraction", "kernel_overhead_s")

# Uncalibrated efficiencies for a host CPU (the "default" side of default-versus-calibrated):
# the catalog's typical GPU figures, since nothing better is known before measuring.
CPU_DEFAULTS = {
    "gemm_fraction": 0.7,
    "attention_fraction": 0.4,
    "memory_bw_fraction": 0.8,
    "kernel_overhead_s": 5e-6,
}
OPTIMIZER_WEIGHT = 0.5  # the optimizer phase's weight in the fit, relative to a compute point
PRIOR_WEIGHT = 0.02  # per squared log-ratio from the default efficiencies
FRACTION_BOUNDS = (0.02, 2.0)  # fitted fractions of the measured (or catalog) peak


def cpu_host_hardware(env: dict[str, Any], micro: list[dict[str, Any]], dtype: str = "fp32") -> Hardware:
    """A Hardware for the profiled host CPU from its measured GEMM peak and copy bandwidth."""
    gemm = [r["flops_per_s"] for r in micro if r.get("kind") == "gemm" and r.get("status") == "ok"]
    bw = [r["bytes_per_s"] for r in micro if r.get("kind") == "membw" and r.get("status") == "ok"]
    if not gemm or not bw:
        raise BadInput(
            "The profile has no GEMM or memory-bandwidth microbenchmark to base a CPU calibration on.",
            "`rightsize profile train` records them at the start of a sweep (unless --no-micro).",
            "Profile again without --no-micro, or pass that profile too.",
        )
    cores = int(env.get("cpu_count_physical") or env.get("cpu_count_logical") or 1)
    peak = float(max(gemm))
    return Hardware(
        accelerator_id=CPU_HOST_ID,
        dtype=dtype,
        peak_flops_per_s=peak,
        gemm_fraction=CPU_DEFAULTS["gemm_fraction"],
        attention_fraction=CPU_DEFAULTS["attention_fraction"],
        sm_count=cores,
        tile_m=64,
        tile_n=64,
        hbm_bytes=float(env.get("host_memory_bytes") or 0.0),
        hbm_bytes_per_s=float(max(bw)),
        memory_bw_fraction=CPU_DEFAULTS["memory_bw_fraction"],
        scaleup_bytes_per_s=float(max(bw)),
        scaleup_bw_fraction=1.0,
        scaleup_latency_s=20e-6,
        domain_gpus=1,
        scaleout_bytes_per_s_per_gpu=float(max(bw)),
        scaleout_bw_fraction=1.0,
        scaleout_latency_s=50e-6,
        gpus_per_node=1,
        kernel_overhead_s=CPU_DEFAULTS["kernel_overhead_s"],
        tdp_w=0.0,
        peak_16bit_flops_per_s=peak,
    )


def catalog_hardware(gpu_name: str, dtype: str) -> Hardware:
    """The catalog accelerator whose id best matches an NVML / torch device name."""
    from rightsize.catalog import get_accelerator
    from rightsize.catalog.registry import accelerators, node_for

    name = gpu_name.lower().replace(" ", "-")
    best, score = None, 0
    for acc_id in accelerators():
        tokens = [t for t in acc_id.split("-") if t]
        sc = sum(2 if t in name else 0 for t in tokens) + (1 if "sxm" in acc_id and "pcie" not in name else 0)
        if tokens and tokens[0] in name and sc > score:
            best, score = acc_id, sc
    if best is None:
        raise BadInput(
            f"No catalog accelerator matches the profiled GPU '{gpu_name}'.",
            "A GPU calibration adjusts a catalog accelerator's efficiencies.",
            "Run `rightsize catalog` to see the accelerators, and profile on one of them.",
        )
    acc = get_accelerator(best)
    return Hardware.from_catalog(acc, node_for(acc.id), dtype)


def _hw_from(base: Hardware, x: np.ndarray) -> Hardware:
    g, a, m, k = np.exp(x)
    return base.with_overrides(
        gemm_fraction=float(g),
        attention_fraction=float(a),
        memory_bw_fraction=float(m),
        kernel_overhead_s=float(k),
    )


def predict_points(
    hw: Hardware, arch: ModelArch, points: list[tuple[int, int]], precision: str, flash: bool = True
) -> list[dict[str, float]]:
    """Analytic (compute, optimizer, step) seconds of single-device training steps at (b, s)."""
    out: dict[tuple[int, int], dict[str, float]] = {}
    for s in sorted({s for _, s in points}):
        bs = sorted({b for b, s2 in points if s2 == s})
        big = int(np.lcm.reduce(np.array(bs, dtype=np.int64)))
        w = TrainWorkload(arch=arch, seq_len=s, global_batch=big, precision=precision, flash_attention=flash)
        cfg = ParallelConfigs.single()
        cfg = ParallelConfigs(
            tp=cfg.tp,
            pp=cfg.pp,
            dp=cfg.dp,
            cp=cfg.cp,
            ep=cfg.ep,
            vpp=cfg.vpp,
            micro_batch=np.array(bs, dtype=np.float64),
            recompute=cfg.recompute,
            sequence_parallel=cfg.sequence_parallel,
            zero_stage=cfg.zero_stage,
        )
        st = train_step(w, cfg, hw)
        for i, b in enumerate(bs):
            m = big / b  # the step holds m micro-batches of b; one of them is one measured step
            compute = float(st.compute[i]) / m
            opt = float(st.optimizer[i])
            out[(b, s)] = {"compute_s": compute, "optimizer_s": opt, "step_time_s": compute + opt}
    return [out[p] for p in points]


def _profile_parts(paths: list[Path]) -> dict[str, Any]:
    parts: dict[str, Any] = {
        "train": [],
        "micro": [],
        "comms": [],
        "env": {},
        "config": None,
        "device": "cpu",
    }
    for p in paths:
        recs = jsonl.read_profile(p)
        check_profile(recs, p)  # every field the fit reads: typed and in range, or a BadInput naming it
        hdr = next((r for r in recs if r.get("type") == "header"), None)
        if hdr is None:
            raise BadInput(
                f"The profile {p} has no header line.", "", "Pass a file written by `rightsize profile`."
            )
        parts["env"] = parts["env"] or hdr.get("environment") or {}
        kind = hdr.get("kind")
        if kind == "train":
            parts["config"] = parts["config"] or hdr.get("config")
            parts["device"] = (hdr.get("config") or {}).get("device") or "cpu"
        res = jsonl.results(recs)
        # single-process steps only: a data-parallel step (profile train under torchrun/srun)
        # includes the gradient all-reduce, which the compute fit must not absorb
        parts["train"] += [
            r
            for r in res
            if r.get("kind") == "train" and r.get("status") == "ok" and r.get("world_size", 1) == 1
        ]
        parts["micro"] += [r for r in res if r.get("kind") in ("gemm", "membw") and r.get("status") == "ok"]
        parts["comms"] += [r for r in res if r.get("kind") == "comms" and r.get("status") == "ok"]
    return parts


def _base_hardware(parts: dict[str, Any], dtype: str) -> Hardware:
    """What the fit starts from: the catalog's GPU the profile ran on, else this host's CPU
    as its microbenchmarks measured it."""
    env = parts["env"]
    if parts["device"] == "cuda" or env.get("gpu_name"):
        return catalog_hardware(str(env.get("gpu_name", "")), dtype)
    return cpu_host_hardware(env, parts["micro"], dtype)


def _overrides(base: Hardware, fitted: dict[str, float]) -> dict[str, float]:
    """The calibration file's figures: the fitted ones, and a measured host's own peaks."""
    overrides = dict(fitted)
    if base.accelerator_id == CPU_HOST_ID:  # the base itself was measured: keep it in the file
        overrides.update(
            peak_flops_per_s=base.peak_flops_per_s,
            peak_16bit_flops_per_s=base.peak_16bit_flops_per_s,
            hbm_bytes_per_s=base.hbm_bytes_per_s,
            scaleup_bytes_per_s=base.scaleup_bytes_per_s,
        )
    return overrides


def _residuals(
    base: Hardware,
    calibrated: Hardware,
    arch: ModelArch,
    train: list[dict[str, Any]],
    how: tuple[str, bool, str],
) -> list[dict[str, Any]]:
    """Each measured point's step time against the default and the calibrated prediction
    (`how`: dtype, flash attention, the statistic fitted)."""
    dtype, flash, st = how
    points = [(int(r["batch"]), int(r["seq_len"])) for r in train]
    default = predict_points(base, arch, points, dtype, flash)
    cal = predict_points(calibrated, arch, points, dtype, flash)
    out = []
    for r, d, c in zip(train, default, cal, strict=True):
        m = sum(r["time_s"][ph][st] for ph in ("forward", "backward", "optimizer"))
        out.append(
            {
                "batch": r["batch"],
                "seq_len": r["seq_len"],
                "measured_step_s": m,
                "default_step_s": d["step_time_s"],
                "calibrated_step_s": c["step_time_s"],
                "default_error": d["step_time_s"] / m - 1.0,
                "calibrated_error": c["step_time_s"] / m - 1.0,
            }
        )
    return out


def _fit_efficiencies(
    base: Hardware,
    arch: ModelArch | None,
    train: list[dict[str, Any]],
    gemms: list[dict[str, Any]],
    how: tuple[str, bool, str],
) -> tuple[dict[str, float], float]:
    """(fitted efficiencies, RMS log error) over the measured step phases and GEMMs, by
    Nelder-Mead in log space with a weak prior towards the catalog figures (`how`: dtype,
    flash attention, the statistic fitted); nothing fitted without observations."""
    dtype, flash, st = how
    points = [(int(r["batch"]), int(r["seq_len"])) for r in train] if arch is not None else []
    x0 = np.log(
        [base.gemm_fraction, base.attention_fraction, base.memory_bw_fraction, base.kernel_overhead_s]
    )
    measured_compute = np.array([r["time_s"]["forward"][st] + r["time_s"]["backward"][st] for r in train])
    measured_opt = np.array([r["time_s"]["optimizer"][st] for r in train])
    elem = 4.0 if dtype == "fp32" else 2.0

    def loss(x: np.ndarray) -> float:
        if np.any(x[:3] > math.log(FRACTION_BOUNDS[1])) or np.any(x[:3] < math.log(FRACTION_BOUNDS[0])):
            return 1e9
        hw = _hw_from(base, x)
        # A weak prior towards the defaults keeps parameters the data cannot pin down sane.
        err = PRIOR_WEIGHT * float(np.sum((x[:3] - x0[:3]) ** 2))
        if points and arch is not None:
            pred = predict_points(hw, arch, points, dtype, flash)
            pc = np.array([p["compute_s"] for p in pred])
            po = np.array([p["optimizer_s"] for p in pred])
            err += float(np.sum(np.log(pc / measured_compute) ** 2))
            err += OPTIMIZER_WEIGHT * float(np.sum(np.log(po / measured_opt) ** 2))
        for r in gemms:
            t = float(gemm_time_s(r["m"], r["n"], r["k"], hw, elem))
            err += float(np.log(t / r["time_s"]["median"]) ** 2)
        return err

    fitted: dict[str, float] = {}
    n_obs = len(points) * 2 + len(gemms)
    if n_obs:
        x, err = nelder_mead(loss, x0, step=0.7, iters=800)
        x, err = nelder_mead(loss, x, step=0.2, iters=800)  # restart: Nelder-Mead stalls otherwise
        fitted = dict(zip(FITTED_FIELDS, (float(v) for v in np.exp(x)), strict=True))
        rms = math.sqrt(err / n_obs)
    else:
        rms = 0.0
    return fitted, rms


def calibrate_profiles(
    paths: list[Path], exclude_batches: set[int] | None = None, statistic: str = "median"
) -> dict[str, Any]:
    """Fit the efficiencies to one or more profiles; the calibration document.

    `statistic` picks which per-point time is fitted: the median of the timed steps, or
    their minimum, which is steadier on a shared machine (interference only adds time).
    """
    parts = _profile_parts(paths)
    cfgd = parts["config"] or {}
    dtype = cfgd.get("dtype", "fp32")
    env = parts["env"]
    base = _base_hardware(parts, dtype)
    train = [r for r in parts["train"] if not exclude_batches or int(r["batch"]) not in exclude_batches]
    arch = ModelArch.model_validate(cfgd["arch"]) if cfgd.get("arch") else None
    flash = bool(cfgd.get("flash", True))
    gemms = [r for r in parts["micro"] if r.get("kind") == "gemm"]
    if not train and not gemms and not parts["comms"]:
        raise BadInput(
            "Nothing to calibrate on: the profiles hold no successful measurement.",
            "Calibration fits efficiencies to measured step, GEMM and collective times.",
            "Profile with `rightsize profile train --model ...` (and `profile comms`) first.",
        )
    points = [(int(r["batch"]), int(r["seq_len"])) for r in train] if arch is not None else []
    st = statistic
    fitted, rms = _fit_efficiencies(base, arch, train, gemms, (dtype, flash, st))
    comms_fit = _fit_comms(base, parts["comms"])
    fitted.update(comms_fit.pop("overrides", {}))
    calibrated = base.with_overrides(**fitted)
    overrides = _overrides(base, fitted)
    residuals = []
    if points and arch is not None:
        residuals = _residuals(base, calibrated, arch, train, (dtype, flash, st))
    errs = [abs(r["calibrated_error"]) for r in residuals]
    return {
        "schema_version": CALIBRATION_SCHEMA_VERSION,
        "created": jsonl.now_iso(),
        "hardware": {"environment": env, "base": asdict(base)},
        "model": cfgd.get("arch"),
        "overrides": {base.accelerator_id: overrides},
        "fit": {
            "profiles": [str(p) for p in paths],
            "statistic": statistic,
            "points": len(points),
            "gemm_points": len(gemms),
            "rms_log_error": rms,
            "median_abs_error": float(np.median(errs)) if errs else None,
            "max_abs_error": float(max(errs)) if errs else None,
            "residuals": residuals,
            "comms": comms_fit,
            "default": {f: getattr(base, f) for f in FITTED_FIELDS},
        },
    }


# Latency steps per collective as the model counts them (perf.collectives): all-reduce is a
# reduce-scatter plus an all-gather, each min(n-1, 2 log2 n) steps; ring point-to-point is one.
_STEPS = {
    "all_reduce": lambda n: 2.0 * np.minimum(n - 1.0, 2.0 * np.log2(n)),
    "all_gather": lambda n: np.minimum(n - 1.0, 2.0 * np.log2(n)),
    "reduce_scatter": lambda n: np.minimum(n - 1.0, 2.0 * np.log2(n)),
    "all_to_all": lambda n: n - 1.0,
    "p2p": lambda n: np.ones_like(n),
}
_BUS = {
    "all_reduce": lambda n: 2.0 * (n - 1.0) / n,
    "all_gather": lambda n: (n - 1.0) / n,
    "reduce_scatter": lambda n: (n - 1.0) / n,
    "all_to_all": lambda n: (n - 1.0) / n,
    "p2p": lambda n: np.ones_like(n),
}
# tier -> (Hardware bandwidth it calibrates, override names)
_TIER_FIELDS = {
    "intra_node": ("scaleup_bytes_per_s", "scaleup_bw_fraction", "scaleup_latency_s"),
    "inter_node": ("scaleout_bytes_per_s_per_gpu", "scaleout_bw_fraction", "scaleout_latency_s"),
}


def _fit_tier(base: Hardware, rows: list[dict[str, Any]], tier: str) -> dict[str, Any]:
    """t = steps(op, n) x latency + bus(op, n) x bytes / bandwidth over every op's rows,
    by relative non-negative least squares (each row divided by its time)."""
    n = np.array([float(r["world_size"]) for r in rows])
    nbytes = np.array([float(r["bytes"]) for r in rows])
    t = np.array([r["time_s"]["median"] for r in rows])
    bus = np.array([_BUS[r["op"]](np.array([ni]))[0] for r, ni in zip(rows, n, strict=True)])
    steps = np.array([_STEPS[r["op"]](np.array([ni]))[0] for r, ni in zip(rows, n, strict=True)])
    a = np.column_stack([bus * nbytes, steps])
    coef = nnls(a / t[:, None], np.ones_like(t))
    inv_bw, lat = float(coef[0]), float(coef[1])
    bw = 1.0 / inv_bw if inv_bw > 0 else float("inf")
    peak_field, frac_field, lat_field = _TIER_FIELDS[tier]
    return {
        "bus_bytes_per_s": bw,
        "latency_s": lat,
        "rows": len(rows),
        "ops": sorted({r["op"] for r in rows}),
        "max_relative_error": float(np.max(np.abs(a @ coef / t - 1.0))),
        "overrides": {frac_field: bw / getattr(base, peak_field), lat_field: lat},
    }


def _fit_comms(base: Hardware, comms: list[dict[str, Any]]) -> dict[str, Any]:
    """Bandwidth and per-step latency per tier (within a node: the scale-up link; across
    nodes: the scale-out fabric) from collective and point-to-point times. A record
    without a tier (the single-host profiler) is within a node."""
    by_tier: dict[str, list[dict[str, Any]]] = {}
    for r in comms:
        if r.get("op") in _STEPS and r.get("world_size", 0) >= 2:
            by_tier.setdefault(str(r.get("tier") or "intra_node"), []).append(r)
    tiers = {
        t: _fit_tier(base, rows, t) for t, rows in by_tier.items() if len(rows) >= 2 and t in _TIER_FIELDS
    }
    if not tiers:
        return {}
    overrides: dict[str, float] = {}
    for fit in tiers.values():
        overrides.update(fit.pop("overrides"))
    first = tiers.get("intra_node") or next(iter(tiers.values()))
    return {**first, "tiers": tiers, "overrides": overrides}


def write_calibration(doc: dict[str, Any], path: Path, force: bool = False) -> None:
    """Write the calibration file atomically; `force` may replace a read-only file."""
    text = json.dumps(doc, indent=2, default=float) + "\n"
    write_text_atomic(path, text, "the calibration file", force=force)


def hardware_from_calibration(doc: dict[str, Any], accelerator_id: str | None = None) -> Hardware:
    """The calibrated Hardware a calibration file describes (its base plus its overrides)."""
    base_fields = doc["hardware"]["base"]
    base = Hardware(**base_fields)
    acc = accelerator_id or base.accelerator_id
    return base.with_overrides(**doc["overrides"].get(acc, {}))


def predict_train_step(
    doc: dict[str, Any],
    arch: ModelArch,
    batch: int,
    seq_len: int,
    precision: str = "fp32",
    flash: bool = True,
) -> dict[str, float]:
    """Calibrated analytic prediction of one single-device training step."""
    return predict_points(hardware_from_calibration(doc), arch, [(batch, seq_len)], precision, flash)[0]


def compare_calibrated(
    default: Any, calibrated: Any, calibration: dict[str, dict[str, float]] | str | Path
) -> dict[str, Any]:
    """Default against calibrated predictions: the same plan (or estimate) made without and
    with the calibration's overrides, side by side, for the plan report to show both. The
    caller (the CLI) runs both plans; this module never reaches up to the API."""
    from rightsize.profile.calibration_file import load_calibration

    overrides = load_calibration(Path(calibration)) if isinstance(calibration, str | Path) else calibration

    def summary(p: Any) -> dict[str, Any]:
        best = getattr(p, "best", None)
        if best is None:
            return {}
        keys = ("accelerator", "gpus", "step_time_s", "mfu", "time_to_train_s", "cost_usd")
        return {k: getattr(best, k, None) for k in keys}  # None where a kind has no such figure

    d, c = summary(default), summary(calibrated)
    applies = sorted(set(overrides) & {d.get("accelerator"), c.get("accelerator")} - {None})
    change = {
        k: (c[k] / d[k] - 1.0) if isinstance(d.get(k), float) and d.get(k) and c.get(k) is not None else None
        for k in ("step_time_s", "mfu", "time_to_train_s", "cost_usd")
    }
    return {"default": d, "calibrated": c, "relative_change": change, "overrides_applied_to": applies}
