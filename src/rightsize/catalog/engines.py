"""Serving engines' defaults (``data/engines.yaml``): batch limits, KV memory convention, block size.

Lookups are pure: `get_engine(name)` returns the sourced defaults of one engine, by its
name or a common alias (``trtllm``, ``TensorRT-LLM``). `None` is the engine-neutral
default the planner used before engines were named (vLLM's conventions). Each engine (and
each older release) says how much host time an iteration costs and whether the engine hides it
behind the GPU step (`iteration_host_s`, `overlaps_host`; applied in `perf.inference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    read_data_file,
    require_mapping,
    require_str,
    sourced,
)
from rightsize.errors import BadInput

FILE = "engines.yaml"
_NUMBERS = (
    "kv_memory_fraction",
    "max_num_seqs",
    "max_num_seqs_large_gpu",
    "large_gpu_gib",
    "max_batch_cap",
    "max_num_batched_tokens",
    "block_tokens",
    "iteration_overhead_s",
    "prefix_caching_default",
    "decode_kv_read_block_tokens",
    "decode_kv_bw_ratio",
)
_ALIASES = {
    "trtllm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
    "gptfast": "gpt-fast",
    "neuron-vllm": "vllm-neuron",
    "nxdi": "vllm-neuron",
    "habana": "optimum-habana",
}
DEFAULT_ENGINE = "vllm"
_RELEASE_NUMBERS = ("gqa_decode_kv_reread_fraction", "iteration_overhead_s")


def version_key(version: str) -> tuple[int, ...]:
    """'0.6.1' -> (0, 6, 1); the leading numeric parts of a release name ('1.0.0rc2' -> (1, 0, 0))."""
    parts: list[int] = []
    for piece in version.strip().lstrip("vV").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


@dataclass(frozen=True)
class EngineRelease:
    """What releases before `before` did differently, each figure sourced; `mechanism` says why."""

    before: tuple[int, ...]
    mechanism: str
    figures: dict[str, Sourced]
    host_overlap: bool | None = None  # None: as the current releases


@dataclass(frozen=True)
class EngineMemory:
    """What an engine keeps on each GPU besides weights and KV cache, by mechanism (`memory` in
    engines.yaml): a runtime reservation (CUDA context, library workspaces) per accelerator, the
    tensor-parallel communication buffers per TP degree, and the activations of the profiling
    forward pass over `profile_tokens` tokens, counted in 16-bit buffers of the model's hidden
    width (replicated on every TP rank) and of its MLP width (split over the TP ranks).
    `perf.engine_memory` turns them into bytes; `basis` says how the engine measures them."""

    basis: str
    runtime_reserved_gib: Sourced
    runtime_reserved_gib_by_accelerator: dict[str, Sourced]
    comm_buffers_gib_by_tp: dict[int, Sourced]
    activation_hidden_buffers: Sourced
    activation_ffn_buffers: Sourced
    profile_tokens: Sourced

    def runtime_gib(self, accelerator_id: str) -> float:
        fig = self.runtime_reserved_gib_by_accelerator.get(accelerator_id, self.runtime_reserved_gib)
        return fig.value

    def comm_gib(self, tp: int) -> float:
        """Communication buffers at `tp` (none at TP 1): the figure of the largest measured TP
        degree not above it (beyond the largest measured one, that one's)."""
        known = [t for t in sorted(self.comm_buffers_gib_by_tp) if t <= tp]
        return self.comm_buffers_gib_by_tp[known[-1]].value if known and tp > 1 else 0.0


@dataclass(frozen=True)
class EngineDefaults:
    """One engine's sourced defaults."""

    name: str
    versions: str
    kv_memory_basis: str  # 'total' or 'free'
    kv_reservation: str  # 'lifetime' or 'on_demand'
    figures: dict[str, Sourced]
    conventions_source: str
    # How the engine runs an int8 checkpoint: 'w8a8' (int8 weights and activations on the
    # tensor cores' int8 rate: vLLM/SGLang compressed-tensors, TensorRT-LLM SmoothQuant) or
    # 'weight_only' (int8 weights dequantised to 16 bit, as gpt-fast); `int8_source` says where.
    int8_scheme: str = "weight_only"
    int8_source: str = ""
    releases: tuple[EngineRelease, ...] = ()
    # Whether the engine's host work for one iteration (scheduling, input preparation, output
    # processing) runs while the GPU executes the previous one (an overlap / zero-overhead /
    # async scheduler): then only the host time beyond the GPU step is exposed.
    host_overlap: bool = False
    host_overlap_source: str = ""
    # Measured non-weight, non-KV memory per GPU (None: the engine-neutral flat workspace of
    # `perf.inference`)
    memory: EngineMemory | None = None

    def value(self, field: str) -> float | None:
        fig = self.figures.get(field)
        return fig.value if fig else None

    def release_value(self, field: str, version: str | None) -> float | None:
        """The figure an older release has for `field` (the earliest matching entry), None for
        the current releases or an unnamed version."""
        for rel in self._release_for(version):
            if field in rel.figures:
                return rel.figures[field].value
        return None

    def _release_for(self, version: str | None) -> list[EngineRelease]:
        """The older-release entries that apply to `version`, earliest first (none: current)."""
        key = version_key(version) if version else ()
        if not key:
            return []
        return [rel for rel in sorted(self.releases, key=lambda r: r.before) if key < rel.before]

    def iteration_host_s(self, version: str | None) -> float:
        """Host seconds per engine iteration for the release `version` (None: the current one)."""
        older = self.release_value("iteration_overhead_s", version)
        return older if older is not None else float(self.value("iteration_overhead_s") or 0.0)

    def overlaps_host(self, version: str | None) -> bool:
        """Whether the release `version` hides its per-iteration host work behind the GPU step."""
        for rel in self._release_for(version):
            if rel.host_overlap is not None:
                return rel.host_overlap
        return self.host_overlap

    def max_num_seqs(self, hbm_gib: float, accelerator_id: str) -> float | None:
        """The engine's default cap on running sequences on this GPU (None: only memory bounds it)."""
        large = self.value("large_gpu_gib")
        if large is not None and hbm_gib >= large and "a100" not in accelerator_id:
            return self.value("max_num_seqs_large_gpu")
        return self.value("max_num_seqs")


def _parse(name: str, raw: Any) -> EngineDefaults:
    if not isinstance(raw, dict):
        raise CatalogDataError(FILE, f"engines.{name}", "expected a mapping")
    figures = {f: sourced(raw[f], FILE, f"engines.{name}.{f}") for f in _NUMBERS if f in raw}
    basis = require_str(raw, "kv_memory_basis", FILE, f"engines.{name}")
    reservation = require_str(raw, "kv_reservation", FILE, f"engines.{name}")
    if basis not in ("total", "free") or reservation not in ("lifetime", "on_demand"):
        raise CatalogDataError(
            FILE, f"engines.{name}", "kv_memory_basis: total|free; kv_reservation: lifetime|on_demand"
        )
    for needed in ("kv_memory_fraction", "block_tokens", "iteration_overhead_s"):
        if needed not in figures:
            raise CatalogDataError(FILE, f"engines.{name}", f"missing '{needed}'")
    int8_scheme = str(raw.get("int8_scheme", "weight_only"))
    if int8_scheme not in ("w8a8", "weight_only") or (int8_scheme == "w8a8" and not raw.get("int8_source")):
        raise CatalogDataError(
            FILE, f"engines.{name}", "int8_scheme: w8a8|weight_only; w8a8 needs int8_source"
        )
    releases = []
    for n, rel in enumerate(raw.get("releases") or []):
        where = f"engines.{name}.releases[{n}]"
        if not isinstance(rel, dict):
            raise CatalogDataError(FILE, where, "expected a mapping")
        before = version_key(require_str(rel, "before", FILE, where))
        if not before:
            raise CatalogDataError(FILE, where, "'before' must be a version such as 0.7.0")
        figs = {f: sourced(rel[f], FILE, f"{where}.{f}", maximum=1.0) for f in _RELEASE_NUMBERS if f in rel}
        overlap = _overlap(rel, where)
        releases.append(EngineRelease(before, require_str(rel, "mechanism", FILE, where), figs, overlap))
    return EngineDefaults(
        name=name,
        versions=str(raw.get("versions", "")),
        kv_memory_basis=basis,
        kv_reservation=reservation,
        figures=figures,
        conventions_source=require_str(raw, "conventions_source", FILE, f"engines.{name}"),
        int8_scheme=int8_scheme,
        int8_source=str(raw.get("int8_source", "")),
        releases=tuple(releases),
        host_overlap=bool(_overlap(raw, f"engines.{name}")),
        host_overlap_source=str(raw.get("host_overlap_source", "")),
        memory=_memory(raw.get("memory"), f"engines.{name}.memory"),
    )


def _memory(raw: Any, where: str) -> EngineMemory | None:
    """An engine's `memory` block (absent: None)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise CatalogDataError(FILE, where, "expected a mapping")

    def fig(key: str, maximum: float) -> Sourced:
        if key not in raw:
            raise CatalogDataError(FILE, where, f"missing '{key}'")
        return sourced(raw[key], FILE, f"{where}.{key}", maximum=maximum)

    def table(key: str) -> dict[Any, Sourced]:
        block = raw.get(key) or {}
        if not isinstance(block, dict):
            raise CatalogDataError(FILE, f"{where}.{key}", "expected a mapping")
        return {k: sourced(v, FILE, f"{where}.{key}.{k}", maximum=64.0) for k, v in block.items()}

    comm = table("comm_buffers_gib_by_tp")
    if any(not isinstance(k, int) or k < 2 for k in comm):
        raise CatalogDataError(FILE, f"{where}.comm_buffers_gib_by_tp", "keys are TP degrees (2, 4, ...)")
    return EngineMemory(
        basis=require_str(raw, "basis", FILE, where),
        runtime_reserved_gib=fig("runtime_reserved_gib", 64.0),
        runtime_reserved_gib_by_accelerator={
            str(k): v for k, v in table("runtime_reserved_gib_by_accelerator").items()
        },
        comm_buffers_gib_by_tp={int(k): v for k, v in comm.items()},
        activation_hidden_buffers=fig("activation_hidden_buffers", 100.0),
        activation_ffn_buffers=fig("activation_ffn_buffers", 100.0),
        profile_tokens=fig("profile_tokens", 1e6),
    )


def _overlap(raw: dict[str, Any], where: str) -> bool | None:
    """`host_overlap` of an engine or release entry: a boolean with its `host_overlap_source`."""
    if "host_overlap" not in raw:
        return None
    value = raw["host_overlap"]
    if not isinstance(value, bool) or not raw.get("host_overlap_source"):
        raise CatalogDataError(FILE, where, "host_overlap: true|false, with a host_overlap_source")
    return value


@lru_cache(maxsize=1)
def engines() -> dict[str, EngineDefaults]:
    raw = read_data_file(FILE)
    block = require_mapping(raw, "engines", FILE, "<document>")
    return {str(k): _parse(str(k), v) for k, v in block.items()}


def engine_id(name: str | None) -> str:
    """Canonical engine id for a name or alias (case-insensitive); the default for None."""
    if not name:
        return DEFAULT_ENGINE
    key = name.strip().lower().replace(" ", "-")
    return _ALIASES.get(key, key)


def get_engine(name: str | None) -> EngineDefaults:
    key = engine_id(name)
    table = engines()
    if key not in table:
        raise BadInput(
            f"Unknown serving engine {name!r}.",
            f"Engines with known defaults: {', '.join(sorted(table))}.",
            "Name one of them (serving engine.name, or the `engine` column of a validation row).",
        )
    return table[key]
