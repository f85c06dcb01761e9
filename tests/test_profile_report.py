"""A train profile's records become the report's scaling points and telemetry timeline."""

from __future__ import annotations

from rightsize.cli.profile_cmds import _profile_view
from rightsize.report.render import render_profile


def _result() -> dict[str, object]:
    def point(b: int, step: float) -> dict[str, object]:
        return {
            "kind": "train",
            "status": "ok",
            "batch": b,
            "seq_len": 64,
            "time_s": {"step": {"median": step}},
            "memory": {"peak_estimate_bytes": 1e6 * b},
            "tokens_per_s": b * 64 / step,
        }

    return {
        "header": {"config": {"model": "tiny"}, "environment": {"device": "cpu"}},
        "results": [point(1, 0.02), point(2, 0.03), {"kind": "train", "status": "oom", "batch": 64}],
        "telemetry": {"windows": {"train:b=1": {"cpu_util_pct": 90.0}, "train:b=2": {"cpu_util_pct": 50.0}}},
    }


def test_train_records_map_to_points_and_timeline() -> None:
    view = _profile_view(_result())
    assert [p["batch"] for p in view["points"]] == [1, 2]  # the OOM point is a result, not a scaling point
    assert view["points"][1]["step_s"] == 0.03
    assert view["points"][1]["peak_memory_bytes"] == 2e6
    assert [t["cpu_util_fraction"] for t in view["telemetry"]] == [0.9, 0.5]


def test_profile_html_has_scaling_and_telemetry_charts() -> None:
    html = render_profile(_profile_view(_result()), "html")
    for chart in ("scaling", "scaling-memory", "telemetry"):
        assert f'data-chart="{chart}"' in html
