"""DLRM-style recommendation models: embedding table bytes, placement across HBM, host memory and
SSD, the all-to-all that sharding causes, the dense part's compute, and the time of a training step
or an inference batch.

Embeddings (per table: rows x dim x bytes per element, + optimizer state per row when training):
- Placement is greedy by access density (lookups per sample per byte, hottest first) into the
  GPUs' aggregate HBM share for embeddings, then host DRAM, then NVMe SSD. HBM left over becomes a
  software cache for the spilled tables' rows. Accesses are assumed Zipf(1) over rows, so a cache
  of the k hottest of N rows hits (ln k + gamma) / (ln N + gamma) of lookups (harmonic numbers),
  unless the spec gives a hit rate.
- A lookup reads one row (dim x bytes); from HBM, the whole 32-byte sectors the row touches
  (an int8 row of 128 + 8 B costs 160 B). Time per tier = rows x bytes / (bandwidth x gather
  efficiency); SSD costs one 4 KB read per row at the drive's IOPS. Training's fused backward
  and optimizer read and write each row again (3 passes) and its optimizer state (2 passes of
  the state: exact Adagrad keeps one fp32 per element, row-wise Adagrad one per row). Tiers are paid in series (cache probe,
  then misses).
- Sharding: table- and column-wise sharding send every sample's pooled embeddings from the GPU
  owning the table to the GPU owning the sample: an all-to-all of a per-GPU buffer of
  local batch x tables x dim x bytes, (n-1)/n of which leaves the GPU; the backward sends the same
  gradients back. Row-wise shards produce partial sums for the whole global batch: a
  reduce-scatter forward and an all-gather backward of global batch x tables x dim x bytes. The
  indices go the other way first (input distribution, 8 B per index).
- An all-to-all across nodes is hierarchical: the share bound for GPUs in other nodes,
  (n - g)/n of the buffer, leaves through each GPU's own NIC; the rest, (g - 1)/n, uses the
  scale-up links; the slower of the two sets the time.
Dense part: bottom MLP, interaction ('dot': pairwise dot products; 'dcn': DCNv2 low-rank cross
layers, x_{l+1} = x0 * (U (V^T x_l) + b) + x_l, Wang et al. 2021), top MLP; GEMMs via perf.gemm.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from rightsize.constants import GiB
from rightsize.perf import datapipe
from rightsize.perf.collectives import (
    all_gather_s,
    all_reduce_s,
    all_to_all_group_s,
    group_link,
    reduce_scatter_s,
)
from rightsize.perf.gemm import gemm_time_s, train_gemm_time_s
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import ALLOCATOR_USABLE_FRACTION, FRAMEWORK_BYTES
from rightsize.spec.recsys import RecsysModel

EULER_GAMMA = 0.5772156649
ELEMENT_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0}
# Row-wise int8 quantisation (FBGEMM) stores an fp32 scale and bias with each row.
INT8_ROW_OVERHEAD_BYTES = 8.0
# Optimizer state per embedding row: row-wise Adagrad keeps one fp32 per row; full Adagrad one per element.
INDEX_BYTES = 8.0  # int64 indices (TorchRec KeyedJaggedTensor)
SSD_READ_BYTES_PER_ROW = 4096.0  # one 4 KB page per row
# A GPU reads device memory in 32-byte sectors: a warp's accesses coalesce into the 32-byte
# transactions that cover them (NVIDIA CUDA C++ Best Practices Guide, "Coalesced Access to
# Global Memory", compute capability 6.0 and later).
SECTOR_BYTES = 32.0
TRAIN_ROW_PASSES = 3.0  # forward read; fused backward + optimizer: read row, write row
TRAIN_STATE_PASSES = 2.0  # the fused optimizer reads and writes the row's state (Adagrad's accumulator)
WORKSPACE_BYTES = 1.0 * GiB
DENSE_TRAIN_BYTES_PER_PARAM = 12.0
# Training's elementwise kernels: forward read + write, backward twice that.
TRAIN_ELEMENTWISE_PASSES = 6.0
# A fused DCN cross layer's epilogue reads x0 and x_l besides the GEMM's own operands.
DCN_EPILOGUE_READS = 2.0  # fp32 weights, gradients, Adagrad state


def fetched_row_bytes(row: float) -> float:
    """HBM bytes one gathered row costs: the 32-byte sectors it touches, averaged over the
    offsets at which packed rows of this size start within a sector (a multiple of
    gcd(row, 32)). Rows of 256 or 512 B cost their size; an int8 row of 128 + 8 B, 160 B."""
    size = int(round(row))
    if size <= 0:
        return 0.0
    sector = int(SECTOR_BYTES)
    offsets = range(0, sector, math.gcd(size, sector))
    return SECTOR_BYTES * sum(math.ceil((o + size) / sector) for o in offsets) / len(offsets)


def row_bytes(dim: int, precision: str) -> float:
    """Bytes of one embedding row as stored."""
    extra = INT8_ROW_OVERHEAD_BYTES if precision == "int8" else 0.0
    return dim * ELEMENT_BYTES[precision] + extra


def state_bytes_per_row(dim: int, optimizer: str) -> float:
    """Optimizer state per row kept with the table while training."""
    return {"adagrad_rowwise": 4.0, "adagrad": 4.0 * dim, "adam": 8.0 * dim, "sgd": 0.0}.get(optimizer, 4.0)


def table_bytes(rows: float, dim: int, precision: str, optimizer: str | None = None) -> float:
    """rows x (dim x bytes per element [+ int8 scale/bias]) [+ optimizer state per row when training]."""
    state = state_bytes_per_row(dim, optimizer) if optimizer else 0.0
    return rows * (row_bytes(dim, precision) + state)


def zipf_hit_rate(cached_rows: float, total_rows: float) -> float:
    """Share of Zipf(1) lookups that hit a cache of the hottest `cached_rows` of `total_rows`:
    H(k) / H(N) with H(n) ~ ln n + gamma."""
    if total_rows <= 0 or cached_rows >= total_rows:
        return 1.0
    if cached_rows < 1:
        return 0.0
    return min(1.0, (math.log(cached_rows) + EULER_GAMMA) / (math.log(total_rows) + EULER_GAMMA))


# -------------------------------------------------------------------------------------- placement


@dataclass(frozen=True)
class TablePlacement:
    index: int
    rows: float
    bytes: float
    pooling: float
    tier: str  # 'hbm', 'host' or 'ssd'
    sharding: str  # 'table', 'row' or 'column' (HBM tables); 'cached' for spilled tables


@dataclass(frozen=True)
class Placement:
    """Where every table lives and what a sample's lookups cost per tier."""

    tables: tuple[TablePlacement, ...]
    gpus: int
    hbm_budget_bytes_per_gpu: float
    hbm_table_bytes: float  # all GPUs together
    hbm_cache_bytes: float
    host_bytes: float
    ssd_bytes: float
    cache_hit_rate: float
    lookups_per_sample: dict[str, float]  # rows read per sample from 'hbm', 'host', 'ssd'
    assumptions: list[str] = field(default_factory=list)

    @property
    def spilled(self) -> bool:
        return self.host_bytes + self.ssd_bytes > 0

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["tables"] = [asdict(t) for t in self.tables]
        return d


def place_tables(
    rows: list[float],
    pooling: list[float],
    bytes_per_row: float,
    gpus: int,
    hbm_budget_bytes_per_gpu: float,
    host_budget_bytes: float,
    sharding: str = "auto",
    cache_hit_rate: float | None = None,
) -> Placement:
    """Greedy placement, hottest tables (lookups per byte) first: HBM (all GPUs' embedding share
    together), then host DRAM, then SSD. Leftover HBM caches spilled rows."""
    budget_total = max(hbm_budget_bytes_per_gpu, 0.0) * gpus
    order = sorted(range(len(rows)), key=lambda i: -pooling[i] / max(rows[i] * bytes_per_row, 1.0))
    hbm_used = host_used = ssd_used = 0.0
    placed: dict[int, TablePlacement] = {}
    notes: list[str] = []
    for i in order:
        size = rows[i] * bytes_per_row
        fits_one_gpu = size <= hbm_budget_bytes_per_gpu
        # Table-wise sharding needs a whole table to fit one GPU's share.
        can_hbm = (sharding != "table" or fits_one_gpu) and hbm_used + size <= budget_total
        if can_hbm:
            how = sharding if sharding in ("table", "row", "column") else ("table" if fits_one_gpu else "row")
            hbm_used += size
            placed[i] = TablePlacement(i, rows[i], size, pooling[i], "hbm", how)
        elif host_used + size <= host_budget_bytes:
            host_used += size
            placed[i] = TablePlacement(i, rows[i], size, pooling[i], "host", "cached")
        else:
            ssd_used += size
            placed[i] = TablePlacement(i, rows[i], size, pooling[i], "ssd", "cached")
    tables = tuple(placed[i] for i in range(len(rows)))
    spilled_rows = sum(t.rows for t in tables if t.tier != "hbm")
    cache_bytes = max(budget_total - hbm_used, 0.0) if spilled_rows else 0.0
    if cache_hit_rate is None:
        hit = zipf_hit_rate(cache_bytes / bytes_per_row, spilled_rows) if spilled_rows else 1.0
        if spilled_rows:
            notes.append(
                f"Lookups into spilled tables follow Zipf(1): an HBM cache of {cache_bytes / 1e9:.1f} GB "
                f"({cache_bytes / bytes_per_row:,.0f} of {spilled_rows:,.0f} rows) hits {hit:.0%}."
            )
    else:
        hit = cache_hit_rate
    lookups = {"hbm": 0.0, "host": 0.0, "ssd": 0.0}
    for t in tables:
        if t.tier == "hbm":
            lookups["hbm"] += t.pooling
        else:
            lookups["hbm"] += t.pooling * hit
            lookups[t.tier] += t.pooling * (1.0 - hit)
    return Placement(
        tables=tables,
        gpus=gpus,
        hbm_budget_bytes_per_gpu=hbm_budget_bytes_per_gpu,
        hbm_table_bytes=hbm_used,
        hbm_cache_bytes=cache_bytes,
        host_bytes=host_used,
        ssd_bytes=ssd_used,
        cache_hit_rate=hit,
        lookups_per_sample=lookups,
        assumptions=notes,
    )


# ------------------------------------------------------------------------------------ dense part


def dense_layers(m: RecsysModel) -> list[tuple[int, int]]:
    """(din, dout) of every matrix multiply in the dense part, per sample, in order."""
    layers: list[tuple[int, int]] = []
    width = m.dense_features
    for out in m.bottom_mlp:
        layers.append((width, out))
        width = out
    features = len(m.tables) + 1  # pooled embeddings + the bottom MLP's output
    if m.interaction == "dcn":
        x0 = features * m.embedding_dim
        for _ in range(m.dcn_layers):
            layers += [(x0, m.dcn_low_rank), (m.dcn_low_rank, x0)]
        width = x0
    else:
        width = m.embedding_dim + features * (features - 1) // 2
    for out in m.top_mlp:
        layers.append((width, out))
        width = out
    return layers


def dense_params(m: RecsysModel) -> float:
    """Weights and biases of the dense part (low-rank DCN: U and V per layer, one bias)."""
    params = 0.0
    for din, dout in dense_layers(m):
        params += din * dout
    bias_widths = list(m.bottom_mlp) + list(m.top_mlp)
    if m.interaction == "dcn":
        bias_widths += [(len(m.tables) + 1) * m.embedding_dim] * m.dcn_layers
    return params + sum(bias_widths)


def dense_macs_per_sample(m: RecsysModel) -> float:
    macs = float(sum(din * dout for din, dout in dense_layers(m)))
    if m.interaction == "dot":
        features = len(m.tables) + 1
        macs += features * (features - 1) / 2 * m.embedding_dim
    return macs


def pooled_bytes_per_sample(m: RecsysModel, comm_bytes: float, tables: int | None = None) -> float:
    """Pooled embeddings of one sample: tables x dim x bytes (the all-to-all payload per sample)."""
    return (len(m.tables) if tables is None else tables) * m.embedding_dim * comm_bytes


def dense_time_s(m: RecsysModel, hw: Hardware, batch: float, elem_bytes: float, training: bool) -> float:
    """Forward (and backward) time of the dense part for `batch` samples on one GPU."""
    total = 0.0
    for din, dout in dense_layers(m):
        if training:
            fwd, bwd = train_gemm_time_s(batch, dout, din, hw, elem_bytes)
            total += float(fwd) + float(bwd)
        else:
            total += float(gemm_time_s(batch, dout, din, hw, elem_bytes))
    # Elementwise work (activations, DCN's x0 * (...) + x_l, interaction), memory-bound. Training
    # runs it as separate kernels (read, write; backward twice that). An inference engine
    # (TensorRT) fuses bias, activation and the DCN combination into the GEMM epilogues, whose
    # only extra traffic is reading the combination's x0 and x_l (the GEMM output is already counted).
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    if training:
        elems = sum(dout for _, dout in dense_layers(m)) * batch
        return total + elems * TRAIN_ELEMENTWISE_PASSES * elem_bytes / mem_bw
    if m.interaction == "dcn":
        x0 = (len(m.tables) + 1) * m.embedding_dim
        total += m.dcn_layers * DCN_EPILOGUE_READS * x0 * batch * elem_bytes / mem_bw
    return total


# ---------------------------------------------------------------------------------- communication


def hierarchical_all_to_all_s(buffer_bytes: float, gpus: int, hw: Hardware) -> float:
    """All-to-all of a per-GPU buffer over `gpus` GPUs (perf.collectives.all_to_all_group_s): the
    off-node share over each GPU's NIC, the on-node share over the scale-up links, the slower sets it."""
    if gpus <= 1:
        return 0.0
    t = all_to_all_group_s(np.array(buffer_bytes), np.array(float(gpus)), np.array(1.0), hw)
    return float(np.asarray(t).reshape(-1)[0])


@dataclass(frozen=True)
class EmbeddingComm:
    """Bytes a GPU sends per step (one direction) and the time, forward + backward."""

    input_dist_bytes: float
    pooled_all_to_all_bytes: float  # per GPU buffer of table/column-wise tables, forward
    row_wise_bytes: float  # reduce-scatter buffer of row-wise tables, forward
    time_s: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def embedding_comm(
    m: RecsysModel, placement: Placement, hw: Hardware, global_batch: float, comm_bytes: float, training: bool
) -> EmbeddingComm:
    """Input distribution + pooled-embedding all-to-all (and row-wise reduce-scatter) over the GPUs."""
    g = placement.gpus
    local = global_batch / g
    if g <= 1:
        return EmbeddingComm(0.0, 0.0, 0.0, 0.0)
    tw = sum(1 for t in placement.tables if t.sharding in ("table", "column", "cached"))
    rw = sum(1 for t in placement.tables if t.sharding == "row")
    idx = local * m.lookups_per_sample * INDEX_BYTES
    a2a = local * pooled_bytes_per_sample(m, comm_bytes, tw)
    rs = global_batch * pooled_bytes_per_sample(m, comm_bytes, rw)
    directions = 2.0 if training else 1.0
    t = hierarchical_all_to_all_s(idx, g, hw) + directions * hierarchical_all_to_all_s(a2a, g, hw)
    if rw:
        bw, lat = group_link(np.array([float(g)]), np.array([1.0]), hw)
        t += float(reduce_scatter_s(np.array(rs), np.array(float(g)), bw, lat)[0])
        if training:
            t += float(all_gather_s(np.array(rs), np.array(float(g)), bw, lat)[0])
    return EmbeddingComm(idx, a2a, rs, t)


# ------------------------------------------------------------------------------------ lookup time


@dataclass(frozen=True)
class LookupTime:
    hbm_s: float
    host_s: float
    ssd_s: float
    latency_s: float  # access round trips of the tiers used (inference)

    @property
    def total_s(self) -> float:
        return self.hbm_s + self.host_s + self.ssd_s + self.latency_s

    def as_dict(self) -> dict[str, float]:
        return {**asdict(self), "total_s": self.total_s}


def lookup_time(
    placement: Placement,
    hw: Hardware,
    samples_per_gpu: float,
    row: float,
    training: bool,
    state_row: float = 0.0,
) -> LookupTime:
    """Time one GPU spends reading its share of embedding rows for `samples_per_gpu` samples;
    training also reads and writes each looked-up row's optimizer state (`state_row` bytes)."""
    passes = TRAIN_ROW_PASSES if training else 1.0
    state_passes = TRAIN_STATE_PASSES if training else 0.0
    lk = placement.lookups_per_sample
    hbm_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction * datapipe.tier("hbm_gather_fraction")
    host_bw = hw.host_link_bytes_per_s * datapipe.tier("host_gather_fraction")  # catalog efficiency.yaml
    iops = datapipe.tier("ssd_read_iops_per_drive") * datapipe.tier("ssd_drives_per_gpu")
    ssd_bw = datapipe.tier("ssd_read_bytes_per_s_per_drive") * datapipe.tier("ssd_drives_per_gpu")
    hbm_row = fetched_row_bytes(row) * passes + fetched_row_bytes(state_row) * state_passes
    hbm_s = samples_per_gpu * lk["hbm"] * hbm_row / hbm_bw
    host_s = samples_per_gpu * lk["host"] * (row * passes + state_row * state_passes) / host_bw
    ssd_rows = samples_per_gpu * lk["ssd"] * passes
    ssd_s = max(ssd_rows / iops, ssd_rows * SSD_READ_BYTES_PER_ROW / ssd_bw)
    latency = datapipe.tier("hbm_access_latency_s")
    if lk["host"] > 0:
        latency += datapipe.tier("host_access_latency_s")
    if lk["ssd"] > 0:
        latency += datapipe.tier("ssd_access_latency_s")
    return LookupTime(hbm_s, host_s, ssd_s, latency)


# ---------------------------------------------------------------------------------------- memory


def dense_train_bytes(m: RecsysModel, batch_per_gpu: float, act_bytes: float) -> float:
    """HBM per GPU that is not embeddings, training: dense weights/grads/state, activations, workspace."""
    acts = batch_per_gpu * (
        sum(dout for _, dout in dense_layers(m)) * 2 + (len(m.tables) + 1) * m.embedding_dim
    )
    return (
        dense_params(m) * DENSE_TRAIN_BYTES_PER_PARAM + acts * act_bytes + WORKSPACE_BYTES + FRAMEWORK_BYTES
    )


def dense_serve_bytes(m: RecsysModel, batch_per_gpu: float, act_bytes: float) -> float:
    acts = batch_per_gpu * 2 * max(dout for _, dout in dense_layers(m))
    return dense_params(m) * act_bytes + acts * act_bytes + WORKSPACE_BYTES + FRAMEWORK_BYTES


def embedding_budget_per_gpu(hw: Hardware, other_bytes: float) -> float:
    return hw.hbm_bytes * ALLOCATOR_USABLE_FRACTION - other_bytes


def dense_allreduce_s(m: RecsysModel, hw: Hardware, gpus: int) -> float:
    """Ring all-reduce of the dense gradients (fp32) over all GPUs."""
    if gpus <= 1:
        return 0.0
    bw, lat = group_link(np.array([float(gpus)]), np.array([1.0]), hw)
    return float(all_reduce_s(np.array(dense_params(m) * 4.0), np.array(float(gpus)), bw, lat)[0])
