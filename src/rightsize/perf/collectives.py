"""Collective communication time: ring/tree algorithms over the scale-up or scale-out fabric.

Bandwidth a group sees (per GPU, per direction):
- the whole group sits inside one scale-up domain (NVLink, Infinity Fabric):
  the scale-up link bandwidth times its achievable fraction;
- otherwise k members share each domain, and the traffic that leaves a domain
  runs over those k GPUs' NICs (rail-optimised fabric, every GPU has its own
  NIC share), so the bus bandwidth is min(scale-up, k x NIC per GPU).

Group placement follows Megatron-LM's rank order: TP innermost (stride 1), then
CP, then DP (and EP inside DP), PP outermost. A group of `size` ranks with rank
`stride` spans size x stride consecutive GPUs.

Times (Thakur et al. 2005; NCCL's bus-bandwidth definitions), for a payload of
`nbytes` (the full, unsharded buffer) over n ranks:
- all-reduce: 2 (n-1)/n x nbytes / bw   (reduce-scatter then all-gather)
- all-gather, reduce-scatter: (n-1)/n x nbytes / bw
- all-to-all: (n-1)/n x nbytes / bw
- point-to-point: nbytes / bw
plus a latency per algorithm step. All-reduce: ring steps inside a domain, a tree's
2 log2(n) steps across domains (NCCL switches to trees at scale). All-gather and
reduce-scatter have no tree in NCCL (its algorithm table lists only ring, plus NVLS
inside an NVLink SHARP domain and PAT for one GPU per node): n - 1 ring steps, which
is what makes ZeRO-3 / FSDP latency-bound at large data-parallel degree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.perf.hardware import Hardware


def group_link(size: np.ndarray, stride: np.ndarray, hw: Hardware) -> tuple[np.ndarray, np.ndarray]:
    """(bus bandwidth bytes/s, per-step latency s) for groups of `size` ranks at `stride`."""
    size = np.asarray(size, dtype=np.float64)
    stride = np.asarray(stride, dtype=np.float64)
    inside = size * stride <= hw.domain_gpus
    up_bw = hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction
    members_per_domain = np.clip(np.floor(hw.domain_gpus / stride), 1.0, size)
    out_bw = np.minimum(up_bw, members_per_domain * hw.scaleout_bytes_per_s_per_gpu * hw.scaleout_bw_fraction)
    up_scale, up_steps_ratio = torus_scale(size * stride, size, hw)
    if hw.mesh_scaleup and hw.domain_gpus > 1:
        # A full mesh gives each pair its own links (AMD CDNA 3 white paper: 7 Infinity Fabric links
        # per MI300X, one to each peer; Intel Gaudi 3 white paper: 21 of 24 200 GbE ports, three to
        # each of the 7 peers): a group of n drives only its n - 1 of a chip's domain_gpus - 1.
        links = hw.domain_gpus - 1.0
        up_scale = up_scale * np.clip((size - 1.0) / links, 1.0 / links, 1.0)
    bw = np.where(inside, up_bw * up_scale, out_bw)
    latency = np.where(inside, hw.scaleup_latency_s * up_steps_ratio, hw.scaleout_latency_s)
    return bw, latency


def torus_scale(span: np.ndarray, size: np.ndarray, hw: Hardware) -> tuple[np.ndarray, np.ndarray]:
    """(bandwidth factor, latency-step factor) for a group inside a torus scale-up domain.

    On a D-dimensional torus (TPU ICI, Trainium NeuronLink) a collective runs one ring per
    axis (Google Cloud TPU docs: "all-reduce bandwidth per pod"; Jouppi et al., TPU v4, ISCA
    2023). A chip's per-direction bandwidth is split evenly over its D axes, so a group that
    spans only k of them drives k/D of it; and a ring per axis takes sum(k_i - 1) latency
    steps for n = prod(k_i) members. The latency factor is taken against a flat ring's
    n - 1 steps, so the ring collectives (all-gather, reduce-scatter) charge exactly the
    per-axis steps; all-reduce, which charges `_steps` (a tree at scale), is then
    undercounted in latency for large groups, where its bandwidth term dominates.
    Both factors are 1 where the domain is switched or meshed (torus_dims 0).
    """
    size = np.asarray(size, dtype=np.float64)
    dims = hw.torus_dims
    if dims <= 0:
        one = np.ones_like(size)
        return one, one
    axis_len = max(float(hw.domain_gpus) ** (1.0 / dims), 2.0)
    span = np.maximum(np.asarray(span, dtype=np.float64), 1.0)
    axes = np.clip(np.ceil(np.log(span) / np.log(axis_len) - 1e-9), 1.0, dims)
    per_axis = np.maximum(size ** (1.0 / axes), 1.0)
    torus_steps = axes * (per_axis - 1.0)
    ring = np.maximum(size - 1.0, 1e-9)
    return axes / dims, np.where(size > 1, torus_steps / ring, 1.0)


def _steps(n: np.ndarray) -> np.ndarray:
    """Latency-bound algorithm steps: ring (n-1) for small groups, tree 2 log2 n for large."""
    return np.minimum(n - 1.0, 2.0 * np.log2(n + 1e-9))


def all_reduce_s(nbytes: np.ndarray, n: np.ndarray, bw: np.ndarray, latency: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=np.float64)
    t = 2.0 * (n - 1.0) / n * nbytes / bw + 2.0 * _steps(n) * latency
    return np.where(n > 1, t, 0.0)


def all_gather_s(nbytes: np.ndarray, n: np.ndarray, bw: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Also the time of a reduce-scatter of the same buffer: a ring of n - 1 steps."""
    n = np.asarray(n, dtype=np.float64)
    t = (n - 1.0) / n * nbytes / bw + (n - 1.0) * latency
    return np.where(n > 1, t, 0.0)


reduce_scatter_s = all_gather_s
all_to_all_s = all_gather_s


def all_to_all_group_s(send_bytes: np.ndarray, n: np.ndarray, stride: np.ndarray, hw: Hardware) -> np.ndarray:
    """All-to-all in which each of n ranks (at `stride`) sends `send_bytes`, an equal share
    to every rank (its own share stays put): MoE token dispatch and combine.

    Unlike a ring, every rank exchanges with every other, so the traffic to ranks in other
    scale-up domains leaves through each GPU's own NIC share: of m members per domain, a
    rank sends (m - 1)/n of its bytes over the scale-up links and (n - m)/n over the NIC.
    The two proceed concurrently; the slower sets the time.
    """
    n = np.asarray(n, dtype=np.float64)
    stride = np.asarray(stride, dtype=np.float64)
    send_bytes = np.asarray(send_bytes, dtype=np.float64)
    members = np.clip(np.floor(hw.domain_gpus / stride), 1.0, n)
    up_bw = hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction
    out_bw = hw.scaleout_bytes_per_s_per_gpu * hw.scaleout_bw_fraction
    intra = (members - 1.0) / n * send_bytes / up_bw
    inter = (n - members) / n * send_bytes / out_bw
    latency = np.where(members < n, hw.scaleout_latency_s, hw.scaleup_latency_s)
    t = np.maximum(intra, inter) + _steps(n) * latency
    return np.where(n > 1, t, 0.0)


def moe_dispatch_s(
    send_bytes: np.ndarray, n: np.ndarray, stride: np.ndarray, hw: Hardware, routed_copies: float
) -> np.ndarray:
    """One MoE dispatch (or combine) over n expert-parallel ranks at `stride`, each sending
    `send_bytes`: a token's `routed_copies` copies to the ranks holding its experts, evenly.

    Within one scale-up domain it is `all_to_all_group_s`. Across domains the dispatch is
    hierarchical, as DeepSeek's (DeepSeek-V3 report sec. 3.2.2: a token crosses InfiniBand once
    per target node, to the GPU of the same in-node index, which forwards it over NVLink to
    the GPUs hosting its experts) and Megatron-Core's HybridEP and DeepEP backends do: a token
    with k copies spread over D domains crosses the scale-out network once per distinct
    remote domain, D (1 - (1 - 1/D)^k) (D - 1) / D times on average, not k (D - 1) / D. The
    copies forwarded on arrival ride the scale-up links with those sent within the domain."""
    n = np.asarray(n, dtype=np.float64)
    stride = np.asarray(stride, dtype=np.float64)
    send_bytes = np.asarray(send_bytes, dtype=np.float64)
    members = np.clip(np.floor(hw.domain_gpus / stride), 1.0, n)
    domains = n / members
    k = max(float(routed_copies), 1.0)
    distinct = domains * (1.0 - (1.0 - 1.0 / domains) ** k)  # expected distinct domains of k copies
    dedup = np.minimum(distinct / k, 1.0)
    up_bw = hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction
    out_bw = hw.scaleout_bytes_per_s_per_gpu * hw.scaleout_bw_fraction
    inter_bytes = (n - members) / n * send_bytes * dedup
    intra = np.maximum((n - 1.0) / n * send_bytes - inter_bytes, (members - 1.0) / n * send_bytes) / up_bw
    inter = inter_bytes / out_bw
    latency = np.where(members < n, hw.scaleout_latency_s, hw.scaleup_latency_s)
    t = np.maximum(intra, inter) + _steps(n) * latency
    return np.where(n > 1, t, 0.0)


def p2p_s(nbytes: np.ndarray, bw: np.ndarray, latency: np.ndarray) -> np.ndarray:
    return nbytes / bw + latency


@dataclass(frozen=True)
class DciLink:
    """The data-centre interconnect between buildings: what one building sends and receives
    (bytes/s), its one-way latency, and how many GPUs one building powers."""

    bytes_per_s_per_building: float
    latency_s: float
    gpus_per_building: int

    def buildings(self, gpus: np.ndarray) -> np.ndarray:
        return np.maximum(np.ceil(np.asarray(gpus, dtype=np.float64) / self.gpus_per_building), 1.0)


def dci_all_reduce_s(model_bytes: np.ndarray, buildings: np.ndarray, link: DciLink) -> np.ndarray:
    """Cross-building stage of a hierarchical all-reduce of one model's gradients (`model_bytes`,
    all shards together): reduce-scatter inside each building, a ring all-reduce between the B
    buildings of the 1/B share each building owns, all-gather inside each building. Every
    building then sends 2 (B-1)/B x model_bytes over its DCI, in 2 (B-1) ring steps (Thakur
    et al. 2005; the layout of HSDP / hybrid-sharded data parallel, which shards within a
    building and replicates across them)."""
    b = np.asarray(buildings, dtype=np.float64)
    t = 2.0 * (b - 1.0) / b * model_bytes / link.bytes_per_s_per_building + 2.0 * (b - 1.0) * link.latency_s
    return np.where(b > 1, t, 0.0)
