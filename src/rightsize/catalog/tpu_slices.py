"""Cloud TPU slice shapes: how many chips a slice of each TPU generation may have, how many
host VMs carry it, and what each of those VMs is.

A TPU replica runs on one slice (its chips joined by ICI); Google offers only certain slice
shapes, and a multi-host slice is carried by hosts of a fixed chip count (4 on v5e, v5p,
v6e and TPU7x), not by the 8-chip single-host machine types (ct5lp-hightpu-8t,
ct6e-standard-8t). A job larger than one slice runs on several slices of the largest shape
joined over the data-centre network (Multislice). Whether a serving replica may span a
multi-host slice depends on the generation: Google documents v5e inference as single-host
(multi-host only with Sax), while vLLM TPU and sglang-jax run replicas over the hosts of v6e
and TPU7x slices. The slice facts are data, read from the `tpu` block of
`catalog/data/kubernetes.yaml` (GKE's slice topologies, with their source), the same table
the Kubernetes export takes its node labels from; the VM machine types (vCPUs, memory, DCN
bandwidth) from `catalog/data/tpu_vms.yaml`. One value per quantity: the sizing, the fleet
and the exports read the rule here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from rightsize.catalog.loader import CatalogDataError, Sourced, read_data_file
from rightsize.catalog.nodes import NodeType
from rightsize.constants import GIGA

DATA_FILE = "kubernetes.yaml"
VM_FILE = "tpu_vms.yaml"
GIB = 2**30
THREADS_PER_CORE = 2  # Compute Engine: each vCPU is one hardware thread (tpu_vms.yaml)


@dataclass(frozen=True)
class TpuVm:
    """One TPU VM machine type (ct6e-standard-4t ...): what a host of a slice is."""

    name: str
    chips: int
    vcpus: int
    memory_bytes: float
    dcn_bits_per_s: float  # the VM's data-centre network bandwidth (its chips' share)
    nics: int
    nic_bits_per_s: float  # each NIC's share of the VM's DCN bandwidth
    host_share: float  # the VM's share of its physical host (chips / chips per host)
    source: str
    as_of: str


@dataclass(frozen=True)
class TpuSlices:
    """The slice shapes one TPU generation offers."""

    accelerator: str
    single_host: dict[int, str]  # chips -> topology of the slices one host carries
    multi_host: dict[int, str]  # chips -> topology of the slices spread over several hosts
    chips_per_host: int  # chips of each host of a multi-host slice
    serving_multi_host: bool  # whether a serving replica may span a multi-host slice's hosts
    serving_source: str  # why (the engines' or Google's documentation)
    devices_per_chip: int = 1  # JAX devices per chip (TPU7x: 2), what engines' TP sizes count
    serving_weights: tuple[str, ...] = ("bf16",)  # weight precisions vLLM TPU loads (pre-quantized)

    @property
    def chip_counts(self) -> tuple[int, ...]:
        """Every slice size offered, smallest first."""
        return tuple(sorted({*self.single_host, *self.multi_host}))

    @property
    def serving_chip_counts(self) -> tuple[int, ...]:
        """The slice sizes one serving replica may have: single-host shapes, and multi-host ones
        where the serving engines span hosts on this generation."""
        return self.chip_counts if self.serving_multi_host else tuple(sorted(self.single_host))

    def topology(self, chips: int) -> str | None:
        return self.single_host.get(chips) or self.multi_host.get(chips)

    def hosts(self, chips: int) -> int:
        """Host VMs of a slice of `chips` chips (1 for a single-host shape)."""
        if chips in self.single_host:
            return 1
        return max(1, chips // self.host_chips(chips))

    def host_chips(self, chips: int) -> int:
        """Chips of each host VM carrying a slice of `chips` chips: the shape's own count for a
        single-host shape (ct6e-standard-1t/4t/8t), `chips_per_host` for a multi-host slice
        (or more chips than one host carries); a count below every shape takes the smallest
        single-host shape that holds it. The one rule the sizing and the export share."""
        if chips in self.single_host:
            return chips
        if chips in self.multi_host or not self.single_host or chips > max(self.single_host):
            return self.chips_per_host
        return min(c for c in self.single_host if c >= chips)

    def job_slices(self, chips: int) -> tuple[int, int] | None:
        """(slices, chips per slice) a job of `chips` chips runs on: one slice where the count
        is a shape Google offers, else whole slices of the largest shape joined over the
        data-centre network (Multislice: 1,024 v6e chips = 4 x 256), as the search counts
        them (`search.space.gpu_count_candidates`) and the MaxText export writes them; None
        for any other count."""
        if chips in self.single_host or chips in self.multi_host:
            return 1, chips
        biggest = max(self.chip_counts)
        if chips > biggest and chips % biggest == 0:
            return chips // biggest, biggest
        return None

    def no_shape(self, chips: int) -> str:
        """Why a job of `chips` chips has no slice (the sentence a refusal or a finding uses)."""
        shapes = ", ".join(str(c) for c in self.chip_counts)
        return (
            f"{chips:,} {self.accelerator} chips is neither a slice shape Google offers ({shapes}) nor a "
            f"whole number of {max(self.chip_counts)}-chip slices (Multislice)"
        )


@dataclass(frozen=True)
class SliceBooking:
    """Whole slices a job of `chips_asked` chips holds: the slices it runs on where its count
    has a shape (`TpuSlices.job_slices`), else the fewest whole slices that hold it, with a
    note saying so (a scheduler grants whole slices; GKE has no node pool of another size)."""

    chips_asked: int
    slices: int
    chips_per_slice: int
    hosts_per_slice: int
    chips_per_host: int
    note: str | None = None

    @property
    def chips(self) -> int:
        return self.slices * self.chips_per_slice

    @property
    def hosts(self) -> int:
        return self.slices * self.hosts_per_slice


def book_slices(acc_id: str, chips: int) -> SliceBooking | None:
    """The whole slices a TPU job or replica of `chips` chips books; None off TPU."""
    slices = tpu_slices(acc_id)
    if slices is None:
        return None
    chips = max(1, int(chips))
    found = slices.job_slices(chips)
    note = None
    if found is None:
        biggest = max(slices.chip_counts)
        if chips < biggest:
            found = (1, min(c for c in slices.chip_counts if c >= chips))
        else:
            found = (-(-chips // biggest), biggest)
        n, per = found
        note = (
            f"{slices.no_shape(chips)}: booked {n} slice{'s' if n > 1 else ''} of {per} chips "
            f"({n * per:,} chips on {n * slices.hosts(per):,} host VM{'s' if n * slices.hosts(per) > 1 else ''}), "
            f"{n * per - chips:,} chips idle"
        )
    n, per = found
    return SliceBooking(chips, n, per, slices.hosts(per), slices.host_chips(per), note)


def _shapes(raw: object, where: str) -> dict[int, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CatalogDataError(DATA_FILE, where, "must map chip counts to topologies")
    return {int(k): str(v) for k, v in raw.items()}


@cache
def _all() -> dict[str, TpuSlices]:
    block = read_data_file(DATA_FILE).get("tpu") or {}
    out: dict[str, TpuSlices] = {}
    for acc_id, d in block.items():
        if not isinstance(d, dict):  # the block's `source` line
            continue
        where = f"tpu.{acc_id}"
        out[str(acc_id)] = TpuSlices(
            accelerator=str(acc_id),
            single_host=_shapes(d.get("single_host"), f"{where}.single_host"),
            multi_host=_shapes(d.get("slices"), f"{where}.slices"),
            chips_per_host=int(d.get("chips_per_host", 4)),
            serving_multi_host=bool(d.get("serving_multi_host", False)),
            serving_source=str(d.get("serving_source", "")),
            devices_per_chip=int(d.get("devices_per_chip", 1)),
            serving_weights=tuple(str(w) for w in d.get("serving_weights", ("bf16",))),
        )
    return out


def tpu_slices(acc_id: str) -> TpuSlices | None:
    """The slice shapes of a TPU generation; None for an accelerator that is not a TPU."""
    return _all().get(acc_id)


def _vm(acc_id: str, chips: int, mt: Any, gen: dict[str, Any], top: dict[str, Any]) -> TpuVm:
    where = f"vms.{acc_id}.machine_types.{chips}"
    if not isinstance(mt, dict) or not {"name", "vcpus", "memory_gib"} <= set(mt):
        raise CatalogDataError(VM_FILE, where, "needs name, vcpus and memory_gib")
    host_chips = int(gen["physical_host_chips"])
    dcn = float(gen["dcn_gbps_per_chip"]) * chips * GIGA
    line = gen.get("nic_gbps")
    nics = max(1, round(dcn / (float(line) * GIGA))) if line else 1
    return TpuVm(
        name=str(mt["name"]),
        chips=chips,
        vcpus=int(mt["vcpus"]),
        memory_bytes=float(mt["memory_gib"]) * GIB,
        dcn_bits_per_s=dcn,
        nics=nics,
        nic_bits_per_s=dcn / nics,
        host_share=chips / host_chips,
        source=f"{top['source']}; network: {gen['network_source']}",
        as_of=str(top["as_of"]),
    )


@cache
def _vms() -> dict[str, dict[int, TpuVm]]:
    top = read_data_file(VM_FILE)
    out: dict[str, dict[int, TpuVm]] = {}
    for acc_id, gen in (top.get("vms") or {}).items():
        if not isinstance(gen, dict) or not isinstance(gen.get("machine_types"), dict):
            raise CatalogDataError(VM_FILE, f"vms.{acc_id}", "needs machine_types")
        for key in ("dcn_gbps_per_chip", "physical_host_chips", "network_source"):
            if key not in gen:
                raise CatalogDataError(VM_FILE, f"vms.{acc_id}", f"missing '{key}'")
        out[str(acc_id)] = {
            int(c): _vm(str(acc_id), int(c), mt, gen, top) for c, mt in gen["machine_types"].items()
        }
    return out


def tpu_vm(acc_id: str, chips: int) -> TpuVm | None:
    """The TPU VM machine type of `chips` chips of a generation; None where the API lists none."""
    return _vms().get(acc_id, {}).get(chips)


def vm_machine_types(acc_id: str) -> dict[int, TpuVm]:
    """Every TPU VM machine type of a generation, by chips (empty off TPU)."""
    return dict(_vms().get(acc_id, {}))


def slice_host(node: NodeType, slice_chips: int) -> NodeType:
    """The host VM that carries a TPU slice of `slice_chips` chips, from the catalog's host
    `node` (the physical TPU host): the VM machine type of the chips each host of that slice
    carries (`TpuSlices.host_chips`: a multi-host v6e slice on ct6e-standard-4t, a single-host
    2x4 on ct6e-standard-8t), with that machine type's vCPUs, memory and DCN bandwidth from
    tpu_vms.yaml, and its share of the physical host's power (chips over the host's chips:
    Google publishes no TPU power, the host figure is the catalog's estimate). The node itself
    off TPU; a TPU generation without that VM in the data is a catalog error."""
    slices = tpu_slices(node.accelerator)
    if slices is None:
        return node
    chips = slices.host_chips(slice_chips)
    vm = tpu_vm(node.accelerator, chips)
    if vm is None:
        raise CatalogDataError(
            VM_FILE, f"vms.{node.accelerator}.machine_types.{chips}", f"no {chips}-chip VM for {node.id}"
        )
    power_w = node.max_power_w * chips / node.gpus_per_node
    if abs(vm.host_share * node.gpus_per_node - chips) > 1e-9:  # node is not the physical host
        raise CatalogDataError(
            VM_FILE, f"vms.{node.accelerator}.physical_host_chips", f"disagrees with {node.id}"
        )

    def sourced(value: float, what: str) -> Sourced:
        return Sourced(
            value, f"{vm.name} ({what}), a host of a {slice_chips}-chip slice: {vm.source}", vm.as_of
        )

    power = node.sources["max_power_w"]
    return replace(
        node,
        name=f"{node.name.split(' (')[0]} ({vm.name}, {chips} chip{'s' if chips > 1 else ''})",
        gpus_per_node=chips,
        nics_per_node=vm.nics,
        nic_bits_per_s=vm.nic_bits_per_s,
        cpu_cores=max(1, vm.vcpus // THREADS_PER_CORE),
        host_memory_bytes=vm.memory_bytes,
        max_power_w=power_w,
        sources={
            **node.sources,
            "gpus_per_node": sourced(chips, "chips"),
            "nics_per_node": sourced(vm.nics, "DCN links"),
            "nic_bits_per_s": sourced(vm.nic_bits_per_s, "DCN bandwidth per link"),
            "cpu_cores": sourced(vm.vcpus // THREADS_PER_CORE, f"{vm.vcpus} vCPUs, 2 per core"),
            "host_memory_bytes": sourced(vm.memory_bytes, "memory"),
            "max_power_w": Sourced(
                power_w,
                f"{vm.name} is {chips} of the physical host's {node.gpus_per_node} chips: that share of "
                f"{node.id}'s power ({power.source})",
                power.as_of,
            ),
        },
    )


def slice_vms(acc_id: str, chips: int, chips_per_replica: int | None = None) -> tuple[int, TpuVm] | None:
    """(VMs, their machine type) a TPU plan of `chips` chips rents: every slice's host VMs, a
    serving replica of `chips_per_replica` being one slice (1,024 v6e training chips: 256 x
    ct6e-standard-4t, not 128 of the 8-chip type the price list quotes); None off TPU."""
    per = chips_per_replica or chips
    booking = book_slices(acc_id, per)
    if booking is None:
        return None
    vm = tpu_vm(acc_id, booking.chips_per_host)
    if vm is None:
        return None
    return max(1, -(-chips // per)) * booking.hosts, vm


def plan_slices(acc_id: str, chips: int, chips_per_replica: int | None = None) -> tuple[int, int] | None:
    """(slices, chips per slice) of a TPU plan: each serving replica one slice, a job's chips
    equal slices (`TpuSlices.job_slices`); None off TPU or for a count with no slice shape. The
    bill's scale-up groups and the fabric's Multislice both read it."""
    slices = tpu_slices(acc_id)
    per = chips_per_replica or chips
    found = slices.job_slices(per) if slices is not None else None
    if found is None:
        return None
    return found[0] * max(1, -(-chips // per)), found[1]
