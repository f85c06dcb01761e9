"""vLLM on Intel Gaudi in Kubernetes: the container of Intel's prebuilt vLLM image for Gaudi
(`k8s_platform`, stack `intel`), its arguments and environment (`export.vllm_gaudi`).

- The image's entrypoint is Intel's own launcher (`python3 -m entrypoints.entrypoint_main`,
  the fork's .cd/Dockerfile.ubuntu.pytorch.vllm): the container runs `vllm serve` itself,
  with the model as its positional argument.
- `habana.ai/gaudi` devices (requests = limits), the `SYS_NICE` capability (Intel's
  Kubernetes job example), /dev/shm in memory; `HABANA_VISIBLE_DEVICES` is left to the
  device plugin (it names the devices it allocated).
- FP8 plans (Intel Neural Compressor) mount a PersistentVolumeClaim holding the
  calibration output at `QUANT_CONFIG_DIR` and set `QUANT_CONFIG` to its config file: fill
  the volume with Intel's calibration procedure before the first replica starts. Its size
  (1 GiB) is an allowance for INC's per-layer scale files, not a sourced figure.
"""

from __future__ import annotations

from typing import Any

from rightsize.export.k8s_common import meta, object_name
from rightsize.export.k8s_platform import Image
from rightsize.export.names import argv
from rightsize.export.plan_view import ServingView
from rightsize.export.vllm_gaudi import (
    QUANT_CONFIG_DIR,
    QUANT_CONFIG_FILE,
    VLLM_GAUDI_VERSION,
    gaudi_arg_list,
    gaudi_env,
    uses_inc,
)
from rightsize.export.vllm_gaudi import (
    header_lines as engine_lines,
)

ENGINE = "vllm-gaudi"
COMMAND = ["vllm", "serve"]
INC_CLAIM_SIZE = "1Gi"
INC_VOLUME = "inc-calibration"


def version(image: Image) -> str:
    """The engine release a header names, or "" for other images."""
    return VLLM_GAUDI_VERSION if image.engine == ENGINE else ""


def claim_name(name: str) -> str:
    return f"{name[:50]}-inc"


def container(v: ServingView, base: dict[str, Any], port: int) -> dict[str, Any]:
    """`base` (the common serving container: image, ports, MODEL, HF_TOKEN, devices, shm)
    running the fork's `vllm serve` with its arguments and environment."""
    c = dict(base)
    c["command"] = list(COMMAND)
    c["args"] = ["$(MODEL)", *argv([*gaudi_arg_list(v), ("--port", port)])]  # $(MODEL): from the env
    env = [*c["env"], *({"name": k, "value": val} for k, val, _ in gaudi_env(v))]
    mounts = list(c["volumeMounts"])
    if uses_inc(v):
        env.append({"name": "QUANT_CONFIG", "value": f"{QUANT_CONFIG_DIR}/{QUANT_CONFIG_FILE}"})
        mounts.append({"name": INC_VOLUME, "mountPath": QUANT_CONFIG_DIR, "readOnly": True})
    c["env"], c["volumeMounts"] = env, mounts
    c["securityContext"] = {"capabilities": {"add": ["SYS_NICE"]}}
    return c


def volumes(v: ServingView, name: str) -> list[dict[str, Any]]:
    if not uses_inc(v):
        return []
    return [{"name": INC_VOLUME, "persistentVolumeClaim": {"claimName": claim_name(name), "readOnly": True}}]


def claims(v: ServingView, name: str, image: Image) -> list[dict[str, Any]]:
    """The INC calibration volume of an FP8 Gaudi plan (none otherwise)."""
    if image.engine != ENGINE or not uses_inc(v):
        return []
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta(claim_name(name), v.header),
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": INC_CLAIM_SIZE}},
            },
        }
    ]


def header_lines(v: ServingView, image: Image) -> list[str]:
    if image.engine != ENGINE:
        return []
    lines = engine_lines(v)
    if uses_inc(v):
        lines.append(
            f"calibration volume: PersistentVolumeClaim {claim_name(object_name(v.header))} mounted at "
            f"{QUANT_CONFIG_DIR}; QUANT_CONFIG={QUANT_CONFIG_DIR}/{QUANT_CONFIG_FILE}"
        )
    return lines
