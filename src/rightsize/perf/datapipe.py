"""Feeding the accelerators: JPEG decode and augmentation on CPU cores, video decode on NVDEC or
CPU cores, image bytes read from storage, and the memory tiers embedding rows live in.

The figures are catalog data (`catalog/data/datapipe.yaml`, each with its source); the formulas
are rates divided by rates:

    CPU cores per GPU   = images/s per GPU / images/s one core decodes and augments
    images/s per core   = 1 / (1 / decode rate + 1 / augmentation rate)   (stages in series)
    decode rate         = what one DataLoader worker decodes, not a single-thread benchmark: inside a
                          PyTorch DataLoader (worker processes, IPC, collation, SMT siblings) a core
                          decodes about a third of what one thread does alone (imread-benchmark)
    cores for loading   = node cores / GPUs - the training process's own core per GPU
    read bytes/s        = images/s x mean JPEG bytes
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from rightsize.catalog.loader import Sourced, read_data_file, sourced
from rightsize.constants import BITS_PER_BYTE

DATAPIPE_FILE = "datapipe.yaml"
ImageDecode = Literal["cpu", "gpu"]
VideoDecode = Literal["nvdec", "cpu"]


@dataclass(frozen=True)
class DataPipeFigures:
    """Every figure of datapipe.yaml, by dotted key ('images.decode_images_per_s_per_core', ...)."""

    figures: dict[str, Sourced]

    def value(self, key: str) -> float:
        return self.figures[key].value

    def get(self, key: str) -> float | None:
        fig = self.figures.get(key)
        return fig.value if fig is not None else None


def _walk(raw: object, prefix: str, out: dict[str, Sourced]) -> None:
    if isinstance(raw, dict):
        if "value" in raw:
            out[prefix] = sourced(raw, DATAPIPE_FILE, prefix)
            return
        for key, sub in raw.items():
            if prefix == "" and key in ("schema_version", "refs"):
                continue
            _walk(sub, f"{prefix}.{key}" if prefix else str(key), out)


@functools.cache
def figures() -> DataPipeFigures:
    """The shipped data-pipeline figures, read and validated once."""
    out: dict[str, Sourced] = {}
    _walk(read_data_file(DATAPIPE_FILE), "", out)
    return DataPipeFigures(out)


# ----------------------------------------------------------------------------------------- images


def images_per_s_per_core() -> float:
    """Images one CPU core of a DataLoader decodes and augments per second (in series)."""
    f = figures()
    decode = f.value("images.dataloader_decode_images_per_s_per_core")
    augment = f.value("images.augment_images_per_s_per_core")
    return 1.0 / (1.0 / decode + 1.0 / augment)


def image_cpu_cores_per_gpu(images_per_s_per_gpu: float, decode: ImageDecode) -> float:
    """CPU cores one GPU's input pipeline needs: images/s per GPU / images/s per core (CPU decode),
    or the small fixed need of a GPU-decoding pipeline (DALI)."""
    if decode == "gpu":
        return figures().value("images.gpu_decode_cpu_cores_per_gpu")
    return images_per_s_per_gpu / images_per_s_per_core()


def loader_cores_per_gpu(node_cores: float, gpus_per_node: int) -> float:
    """CPU cores per GPU left for its input pipeline: the node's share less the training process."""
    return max(node_cores / gpus_per_node - figures().value("images.training_process_cores_per_gpu"), 0.0)


def dataloader_host_bytes(cores: float) -> float:
    """Host RAM of the data-loader workers: one worker process per core."""
    return max(cores, 1.0) * figures().value("images.dataloader_host_bytes_per_worker")


def dataset_figures(name: str) -> tuple[float, float] | None:
    """(images, bytes) of a catalogued dataset, or None."""
    f = figures()
    images, size = f.get(f"datasets.{name}.images"), f.get(f"datasets.{name}.bytes")
    return (images, size) if images is not None and size is not None else None


def mean_image_bytes(dataset: str = "imagenet-1k") -> float:
    """Mean stored bytes of one image of a catalogued dataset (ImageNet-1k: 138 GB / 1.28M = 108 KB)."""
    found = dataset_figures(dataset)
    assert found is not None, f"no dataset {dataset!r} in {DATAPIPE_FILE}"
    images, size = found
    return size / images


# ------------------------------------------------------------------------------------------ video


def nvdec_engines(acc_id: str) -> int:
    """NVDEC engines on an accelerator (0 when the catalog has none for it)."""
    engines = figures().get(f"video.nvdec_engines.{acc_id}")
    return int(engines) if engines is not None else 0


def video_decode_fps_per_gpu(acc_id: str, decode: VideoDecode, pixels_vs_1080p: float = 1.0) -> float:
    """1080p-equivalent frames/s one GPU's NVDEC engines decode (inf for CPU decode: the CPU does it)."""
    if decode == "cpu":
        return float("inf")
    per_engine = figures().value("video.nvdec_fps_per_engine_1080p")
    return nvdec_engines(acc_id) * per_engine / pixels_vs_1080p


def video_cpu_cores(frames_per_s: float, decode: VideoDecode, pixels_vs_1080p: float = 1.0) -> float:
    """CPU cores for software decode of `frames_per_s` (0 with NVDEC)."""
    if decode == "nvdec":
        return 0.0
    return frames_per_s * pixels_vs_1080p / figures().value("video.cpu_decode_fps_per_core_1080p")


def default_stream_bytes_per_s() -> float:
    return figures().value("video.stream_bits_per_s_1080p") / BITS_PER_BYTE


# ------------------------------------------------------------------------------------ memory tiers


def l2_bytes(acc_id: str) -> float:
    """On-chip L2 cache of an accelerator (0 when the catalog has no figure for it)."""
    return figures().get(f"l2_bytes.{acc_id}") or 0.0


def tier(key: str) -> float:
    """A memory-tier figure: hbm_gather_fraction, host_access_latency_s, ssd_read_iops_per_drive, ..."""
    return figures().value(f"memory_tiers.{key}")
