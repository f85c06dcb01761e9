"""`rightsize monitor` on a fleet (issue #29): each workload's GPUs, as a real Prometheus holds
them (DCGM exporter series of its pods, backfilled with promtool), against the slot its fleet plan
gave it; the rest of the horizon re-planned with each workload's demand scaled by what was seen.

The synthetic cluster follows the plan's own slots hour by hour, with the service holding 1.5x
its slot (traffic above plan) and the weekly fine-tune 0.5x (smaller runs than planned); the
test checks the ratios come back, the findings name both, and the re-plan moves each workload's
capacity the observed way. Skipped without Prometheus/promtool unless RIGHTSIZE_REQUIRE_PROMETHEUS."""

from __future__ import annotations

import calendar
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rightsize.api import plan as run_plan
from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.monitor.fleet_use import selector_for, slot_gpus
from rightsize.monitor.run import monitor_fleet_run
from rightsize.spec.fleet import month_index
from rightsize.spec.fleet_load import load_fleet

sys.path.insert(0, str(Path(__file__).parent))
import monitor_synth as synth  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
if not (PROMETHEUS and PROMTOOL):
    if os.environ.get("RIGHTSIZE_REQUIRE_PROMETHEUS"):
        pytest.fail("prometheus/promtool are required (RIGHTSIZE_REQUIRE_PROMETHEUS is set)")
    pytest.skip("prometheus and promtool are not installed", allow_module_level=True)

END_S = calendar.timegm((2026, 11, 20, 0, 0, 0))  # the window: the 3 days before
WINDOW_S = 3 * 86400
STEP_S = 3600
FACTORS = {"chat": 1.5, "lora": 0.5}


def _fleet_file(tmp: Path) -> Path:
    shutil.copy(ROOT / "examples" / "fleet-2027" / "chat-70b.yaml", tmp / "chat-70b.yaml")
    # the LoRA job on a whole 8-GPU node, so that half its slot is 4 GPUs (alone, `objective: cost`
    # now plans it on one L40S: 1-GPU shapes are billed as such, issue 28)
    lora = yaml.safe_load((ROOT / "examples" / "llama3-8b-lora-weekly.yaml").read_text(encoding="utf-8"))
    lora["targets"].update({"accelerators": ["h100-sxm"], "gpus": 8})
    (tmp / "lora.yaml").write_text(yaml.safe_dump(lora), encoding="utf-8")
    fleet = {
        "kind": "fleet",
        "name": "monitored",
        "start": "2026-10",
        "horizon_months": 6,
        "workloads": [
            {"spec": "chat-70b.yaml", "name": "chat", "priority": 100, "load": {"peak_to_average": 1.75}},
            {"spec": "lora.yaml", "name": "lora", "priority": 50, "deferrable": False},
        ],
        "policy": {"capacity": ["reserved_1y", "on_demand"]},
    }
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet), encoding="utf-8")
    return path


def _openmetrics(plan: Any, start_month: int) -> str:
    """Per hour, each workload's pods report DCGM engine activity on round(slot x factor) GPUs."""
    t = END_S - STEP_S * np.arange(WINDOW_S // STEP_S + 1)[::-1]
    lines = ["# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    for name, factor in FACTORS.items():
        held = np.rint(slot_gpus(plan, name, t.astype(float), start_month) * factor).astype(int)
        for k in range(int(held.max())):
            head = (
                f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{Hostname="n{k // 8}",gpu="{k % 8}",pod="{name}-{k // 8}"}}'
            )
            lines += [f"{head} 0.7 {ts}" for ts, n in zip(t.tolist(), held.tolist(), strict=True) if k < n]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("fleet-monitor")
    path = _fleet_file(tmp)
    fleet = load_fleet(path)
    plan = run_plan(fleet)
    (tmp / "fleet.om").write_text(_openmetrics(plan, fleet.start_month), encoding="utf-8")
    synth.backfill(str(tmp / "fleet.om"), str(tmp / "data"), str(PROMTOOL), timeout_s=120)
    with synth.prometheus_on_loopback(str(PROMETHEUS), str(tmp / "data"), str(tmp)) as url:
        yield {"url": url, "tmp": tmp, "path": path, "fleet": fleet, "plan": plan}


def _run(c: dict[str, Any], **kw: Any) -> Any:
    return monitor_fleet_run(
        c["fleet"], c["plan"], prometheus_url=c["url"], window_s=WINDOW_S, end_s=END_S, step_s=STEP_S,
        plan_fn=run_plan, **kw,
    )  # fmt: skip


def test_each_workload_against_its_slot_and_the_replan(cluster: dict[str, Any]) -> None:
    r = _run(cluster)
    uses = {u.name: u for u in r.uses}
    for name, factor in FACTORS.items():
        u = uses[name]
        assert u.planned_gpu_hours > 0, name
        assert u.use_ratio == pytest.approx(factor, rel=0.08), name
        assert u.activity == pytest.approx(0.7, abs=0.01)
    rules = {(f.rule, f.title.split()[0]) for f in r.findings}
    assert ("fleet-workload-above-slot", "chat") in rules
    assert ("fleet-workload-below-slot", "lora") in rules
    # re-planned from the month after the window, to the end of the horizon
    assert r.replan_from == "2026-12" and r.replan.horizon_months == 4
    before = {m["month"]: m["by_workload"] for m in r.plan.timeline}
    after = {m["month"]: m["by_workload"] for m in r.replan.timeline}
    for month in ("2026-12", "2027-01"):
        chat0, chat1 = before[month]["chat"]["gpus"], after[month]["chat"]["gpus"]
        assert chat1 > chat0 * 1.2, (month, chat0, chat1)  # the service's load is 1.5x: more replicas
        lora0 = before[month]["lora"]["gang_hours"]
        lora1 = after[month].get("lora", {}).get("gang_hours", 0.0)
        assert lora1 == pytest.approx(lora0 * 0.5, rel=0.1), (month, lora0, lora1)
    d = r.to_dict()
    assert d["kind"] == "fleet_monitor" and d["replan"]["from_month"] == "2026-12"
    json.dumps(d)  # JSON-ready


def test_selector_template_is_escaped_and_required() -> None:
    assert selector_for('{pod=~"$workload-.*"}', "a.b") == '{pod=~"a\\\\.b-.*"}'
    assert (
        selector_for('{namespace="$workload"}', 'x"y.z') == '{namespace="x\\"y.z"}'
    )  # exact: no regex escapes
    with pytest.raises(BadInput, match="inside a quoted label value"):
        selector_for("{pod=~$workload}", "chat")
    with pytest.raises(BadInput, match=r"does not contain \$workload"):
        selector_for('{pod="chat"}', "chat")


def test_window_outside_the_horizon_is_refused(cluster: dict[str, Any]) -> None:
    with pytest.raises(BadInput, match="outside the fleet's horizon"):
        monitor_fleet_run(
            cluster["fleet"], cluster["plan"], prometheus_url=cluster["url"], window_s=WINDOW_S,
            end_s=float(calendar.timegm((2028, 1, 1, 0, 0, 0))), step_s=STEP_S,
        )  # fmt: skip


def test_cli_fleet_monitor_with_capture_and_replay(cluster: dict[str, Any], capsys: Any) -> None:
    tmp, path = cluster["tmp"], str(cluster["path"])
    capture = tmp / "capture.json"
    args = ["monitor", path, "--window", "3d", "--step", "1h", "--end", "2026-11-20T00:00:00Z"]
    assert main([*args, "--prometheus", cluster["url"], "--save", str(capture), "--format", "json"]) == 0
    live = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in live["workloads"]] == ["chat", "lora"]
    assert main(["monitor", path, "--from", str(capture), "--format", "json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["workloads"] == live["workloads"] and replay["replan"] == live["replan"]
    for fmt in ("table", "markdown", "html"):
        assert main(["monitor", path, "--from", str(capture), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "chat" in out and "Re-plan from 2026-12" in out, fmt
    assert main([*args, "--prometheus", cluster["url"], "--selector", '{a="b"}']) == 2
    assert "--workload-selector" in capsys.readouterr().err


def test_month_index_of_the_window() -> None:
    assert month_index("2026-11") == 2026 * 12 + 10
