"""What the Kubernetes writers share: object names, metadata, pod resources, /dev/shm."""

from __future__ import annotations

import math
from typing import Any

from rightsize.export.header import dump_yaml_all, k8s_annotations
from rightsize.export.names import k8s_name
from rightsize.export.plan_view import Header

NAME_MAX = 40  # the plan's object name; JobSet pods are `<name>-workers-<i>-<j>` (a 63-character label)


def object_name(h: Header) -> str:
    """The objects' name: the plan name through `names.k8s_name` (kept when valid, else a slug
    with a hash), short enough for the suffixes added to it (`-config`, `-queue`, pod names)."""
    return k8s_name(h.name, NAME_MAX, what="plan name")


def meta(name: str, h: Header, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {"app.kubernetes.io/part-of": object_name(h), **(labels or {})},
            "annotations": k8s_annotations(h)}  # fmt: skip


def gib(n_bytes: float) -> str:
    """A quantity in whole GiB, at least 1."""
    return f"{max(1, math.ceil(n_bytes / 2**30))}Gi"


def pod_requests(
    devices: int, cpus: float, mem_bytes: float, resource: str, extra: dict[str, int] | None = None
) -> dict[str, Any]:
    """One pod's requests (= limits for the extended resources, as the device plugins require)."""
    cpu, mem = str(max(1, math.ceil(cpus))), gib(mem_bytes)
    devs = {resource: devices, **(extra or {})}
    return {"requests": {"cpu": cpu, "memory": mem, **devs}, "limits": {"memory": mem, **devs}}


def shm() -> tuple[dict[str, Any], dict[str, Any]]:
    """/dev/shm in memory: NCCL and PyTorch workers exchange through it."""
    return {"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "dshm", "mountPath": "/dev/shm"}


def dump(head: str, docs: list[dict[str, Any]]) -> str:
    return head + dump_yaml_all(docs)
