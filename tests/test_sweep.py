"""`rightsize sweep` (issue #32): one spec under a grid, named scenarios and seeded samples,
planned in this process and on a real Dask cluster (dask.distributed LocalCluster, worker
processes) with the same figures; bad variations refused before anything is planned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.spec.sweep import SweepSpec
from rightsize.sweep import run_sweep
from rightsize.sweep.scenarios import expand

ROOT = Path(__file__).resolve().parent.parent


def _sweep(tmp: Path, **extra: Any) -> Path:
    shutil.copy(ROOT / "examples" / "fleet-2027" / "chat-70b.yaml", tmp / "chat.yaml")
    sweep = {
        "kind": "sweep",
        "name": "t",
        "base": "chat.yaml",
        "grid": {"traffic.peak_rate": [70, 140]},
        "samples": {
            "count": 2,
            "seed": 3,
            "uniform": {"prices.h100-sxm.on_demand_usd_per_gpu_hour": [1.5, 4.0]},
        },
        "report": ["best.tp"],
        **extra,
    }
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
    return path


def test_local_and_dask_give_the_same_figures(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    path = _sweep(tmp_path)
    local = run_sweep(path)
    dask = run_sweep(path, engine="dask", workers=2)
    assert [r["scenario"] for r in local.rows] == [
        "base",
        "traffic.peak_rate=70",
        "traffic.peak_rate=140",
        "sample 1",
        "sample 2",
    ]
    assert all(r["status"] == "ok" for r in local.rows)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(local.rows) == strip(dask.rows)
    assert dask.engine == "dask" and dask.workers == 2
    # the varied figure moves the plan: twice the traffic, more GPUs
    figs = {r["scenario"]: r["figures"] for r in local.rows}
    assert figs["traffic.peak_rate=140"]["gpus"] > figs["traffic.peak_rate=70"]["gpus"]
    assert "best.tp" in figs["base"]


def test_samples_are_seeded(tmp_path: Path) -> None:
    spec = SweepSpec.model_validate(yaml.safe_load(_sweep(tmp_path).read_text()))
    base = yaml.safe_load((tmp_path / "chat.yaml").read_text())
    one, two = expand(spec, base), expand(spec, base)
    assert [s.overrides for s in one] == [s.overrides for s in two]
    p = one[-1].data["prices"]["h100-sxm"]["on_demand_usd_per_gpu_hour"]
    assert 1.5 <= p <= 4.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"grid": {"traffic.peak_rate": [70, "fast"]}}, "Sweep scenario 'traffic.peak_rate=fast'"),
        ({"grid": {"nothing.0.here": [1]}}, "is a value|not an index|invalid"),
        ({"scenarios": [{"name": "base", "set": {"traffic.rate": 5}}]}, "named 'base'"),
        ({"base": "../outside.yaml"}, "outside the sweep file's folder"),
        ({"grid": {"a..b": [1]}}, "dotted path"),
    ],
)
def test_bad_variations_are_refused_before_planning(
    tmp_path: Path, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(BadInput, match=message):
        run_sweep(_sweep(tmp_path, **extra))


def test_cli_sweep(tmp_path: Path, capsys: Any) -> None:
    path = _sweep(tmp_path, samples=None)
    assert main(["sweep", str(path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (
        d["kind"] == "sweep"
        and d["planned"] == 3
        and d["summary"]["gpus"]["max"] >= d["summary"]["gpus"]["min"]
    )
    for fmt in ("table", "markdown", "html"):
        assert main(["sweep", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out.replace("\\_", "_")  # Markdown escapes underscores
        assert "traffic.peak_rate=140" in out, fmt
    assert main(["sweep", str(path), "--address", "tcp://127.0.0.1:1"]) == 2
    assert "--engine dask" in capsys.readouterr().err


def test_bundled_example_expands() -> None:
    from rightsize.sweep.run import load_sweep
    from rightsize.sweep.scenarios import check

    spec, base, data = load_sweep(ROOT / "examples" / "fleet-2027" / "sweep-chat-prices.yaml")
    scenarios = expand(spec, data)
    check(scenarios, base.parent, str(base))
    assert len(scenarios) == 1 + 2 + 1 + 4  # the base, the grid, one named scenario, four samples
