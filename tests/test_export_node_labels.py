"""`export --node-label KEY=VALUE`: the labels a user's nodes carry select the pods and the
Kueue flavor, checked as Kubernetes checks them (never rewritten); and every stage that names
a device plugin's resource reads it from one table (`catalog.devices`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.catalog.devices import accelerator_resource, device_resource, vendors_with_device_plugin
from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.names import node_label
from rightsize.fleet.quotas import gpu_resource

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402

LABELS = {"example.com/pool": "h100-train", "node.kubernetes.io/instance-type": "my-h100"}


def _docs(files: dict[str, str]) -> list[dict[str, Any]]:
    return [d for text in files.values() if text.lstrip().startswith(("#", "a", "k")) for d in _load(text)]


def _load(text: str) -> list[dict[str, Any]]:
    try:
        return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError:  # a shell script or TOML among the files
        return []


def _selectors(docs: list[dict[str, Any]]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in ("nodeSelector", "nodeLabels") and isinstance(v, dict):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(docs)
    return found


@pytest.mark.parametrize("example", ["llama3-70b-chat-serving", "llama3-8b-lora-weekly"])
def test_user_labels_select_every_pod_and_flavor(example: str) -> None:
    files = render_files(plan_dict(example), "kubernetes", node_labels=LABELS)
    found = _selectors(_docs(files))
    assert found, "no nodeSelector or Kueue nodeLabels written"
    for sel in found:
        assert sel == LABELS  # the user's labels, not the priced instance type or a catalog id


def test_without_labels_the_priced_instance_type_is_used() -> None:
    found = _selectors(_docs(render_files(plan_dict("llama3-70b-chat-serving"), "kubernetes")))
    assert found and all("hgx" not in v for sel in found for v in sel.values())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no-equals", "has no '='"),
        ("bad key!=x", "not a valid Kubernetes qualified name"),
        ("example.com/pool=-starts-with-dash", "not a valid label value"),
        ("example.com/pool=" + "x" * 64, "not a valid label value"),
        ("example.com/pool=a b", "not a valid label value"),
    ],
)
def test_bad_labels_are_refused_not_rewritten(text: str, why: str) -> None:
    with pytest.raises(BadInput, match=why):
        node_label(text)


def test_cli_node_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).parent.parent / "examples" / "llama3-70b-chat-serving.yaml"
    out = tmp_path / "k8s"
    args = ["export", str(example), "--target", "kubernetes", "--out", str(out)]
    assert main([*args, "--node-label", "example.com/pool=serve", "--node-label", "zone=a"]) == 0
    sel = _selectors(_docs({p.name: p.read_text() for p in out.glob("*.yaml")}))
    assert sel and all(s == {"example.com/pool": "serve", "zone": "a"} for s in sel)
    capsys.readouterr()
    assert main([*args, "--node-label", "zone=a", "--node-label", "zone=b", "--force"]) == 2
    assert "given twice" in capsys.readouterr().err
    assert (
        main(
            ["export", str(example), "--target", "slurm", "--out", str(tmp_path / "s"), "--node-label", "a=b"]
        )
        == 2
    )
    assert "selects Kubernetes nodes" in capsys.readouterr().err


def test_device_resources_come_from_one_table() -> None:
    assert set(vendors_with_device_plugin()) == {"nvidia", "amd", "aws", "intel", "google"}
    expected = {
        "h100-sxm": "nvidia.com/gpu",
        "mi300x": "amd.com/gpu",
        "trn2": "aws.amazon.com/neuron",
        "gaudi3": "habana.ai/gaudi",
        "tpu-v5p": "google.com/tpu",
    }
    for acc, res in expected.items():
        assert accelerator_resource(acc) == res
        assert gpu_resource(acc) == res  # the fleet's Kueue quotas name the same resource
    assert device_resource("no-such-vendor") is None
