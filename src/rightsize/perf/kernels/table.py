"""Tables of measured kernel latencies for one accelerator, engine and version.

What is measured, and how each operation is keyed (all latencies in seconds, sizes SI):

| op | key | grid axes |
| --- | --- | --- |
| `gemm` | dtype (bf16, fp8, fp4, int8, int4: weight format) | m (tokens), n (output features), k (input features) |
| `context_attention` | dtype, kv_heads per GPU, head_dim | heads per GPU, seq_len, batch |
| `generation_attention` | kv_dtype, kv_heads per GPU, head_dim | heads per GPU, batch, context_len (tokens per sequence) |
| `all_reduce` | dtype, gpus | bytes |

On disk a table is JSON Lines, the format `rightsize profile kernels` writes: a `header`
line (`kind: kernels`, accelerator, engine, version, source, as_of, environment) and one
`result` line per measurement (`status: ok`, `op`, the key fields, the axis fields and
`latency_s`). Other sources (AIConfigurator's database, through its package) build the
same `KernelTable` in memory.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.perf.kernels.grid import Grid

# op -> (key fields, axis fields), in the order the grids are built and queried.
OP_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gemm": (("dtype",), ("m", "n", "k")),
    "context_attention": (("dtype", "kv_heads", "head_dim"), ("heads", "seq_len", "batch")),
    "generation_attention": (("kv_dtype", "kv_heads", "head_dim"), ("heads", "batch", "context_len")),
    "all_reduce": (("dtype", "gpus"), ("bytes",)),
}
KIND = "kernels"


@dataclass(frozen=True)
class KernelTable:
    """Measured latencies of one (accelerator, engine, version), with their provenance."""

    accelerator: str
    engine: str
    version: str
    source: str
    as_of: str
    grids: Mapping[tuple[str, tuple[Any, ...]], Grid] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.engine} {self.version} on {self.accelerator}".strip()

    def grid(self, op: str, *key: Any) -> Grid | None:
        return self.grids.get((op, tuple(key)))

    def ops(self) -> dict[str, int]:
        """Measured points per op."""
        out: dict[str, int] = defaultdict(int)
        for (op, _), g in self.grids.items():
            out[op] += g.measured
        return dict(out)


def build_table(
    meta: Mapping[str, str], records: Iterable[Mapping[str, Any]], *, where: str = "kernel table"
) -> KernelTable:
    """A table from result records ({op, key fields, axis fields, latency_s})."""
    rows: dict[tuple[str, tuple[Any, ...]], list[tuple[tuple[float, ...], float]]] = defaultdict(list)
    for n, rec in enumerate(records, start=1):
        op = rec.get("op")
        if op not in OP_FIELDS:
            raise BadInput(
                f"{where}: record {n} has op {op!r}.",
                f"Known ops: {', '.join(OP_FIELDS)}.",
                "Write tables with `rightsize profile kernels` or fix the record.",
            )
        keys, axes = OP_FIELDS[op]
        try:
            key = tuple(rec[k] for k in keys)
            coords = tuple(float(rec[a]) for a in axes)
            latency = float(rec["latency_s"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(
                f"{where}: record {n} ({op}) lacks or misstates {exc}.",
                f"A {op} record needs {', '.join((*keys, *axes, 'latency_s'))}.",
                "Fix the record or measure the table again.",
            ) from None
        rows[(op, key)].append((coords, latency))
    grids = {k: Grid.from_points(OP_FIELDS[k[0]][1], v) for k, v in rows.items()}
    for name in ("accelerator", "source", "as_of"):
        if not meta.get(name):
            raise BadInput(
                f"{where}: the header has no '{name}'.",
                "Every kernel table says what it measured, where it comes from and when.",
                "Add the field to the header line.",
            )
    return KernelTable(
        accelerator=str(meta["accelerator"]),
        engine=str(meta.get("engine") or "pytorch"),
        version=str(meta.get("version") or ""),
        source=str(meta["source"]),
        as_of=str(meta["as_of"]),
        grids=grids,
    )


def read_table(path: Path) -> KernelTable:
    """Read a JSON Lines kernel table (a torn last line, as a crashed sweep leaves, is skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BadInput(
            f"Cannot read kernel table '{path}'.",
            str(exc),
            "Give the file `rightsize profile kernels` wrote.",
        ) from None
    header: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                break
            raise BadInput(f"{path}:{n} is not JSON.", fix="Measure the table again.") from None
        if obj.get("type") == "header":
            header = obj
        elif obj.get("type") == "result" and obj.get("status", "ok") == "ok":
            records.append(obj)
    if header is None or header.get("kind") != KIND:
        raise BadInput(
            f"'{path}' is not a kernel table.",
            "Its first line must be a header with kind: kernels.",
            "Write one with `rightsize profile kernels`.",
        )
    return build_table(header, records, where=str(path))
