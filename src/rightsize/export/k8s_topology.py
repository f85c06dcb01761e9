"""Kueue Topology-Aware Scheduling for a training JobSet on a multi-node scale-up domain
(`export.topology`).

Kueue (the pinned release line, v0.20; docs concepts/topology_aware_scheduling and
tasks/run/topology_aware_scheduling; annotation names from apis/kueue/v1beta1/topology_types.go):

- a `Topology` names the node labels of each level; the ResourceFlavor refers to it by
  `spec.topologyName`;
- the pod template asks for placement with annotations: `podset-required-topology: LEVEL`
  (every pod in one domain of that level), `podset-preferred-topology: LEVEL` (as few as it
  can), and `podset-slice-required-topology: LEVEL` + `podset-slice-size: N` (each slice of N
  pods in one domain). Kueue's TAS assigns pods to domains in rank order (completion index;
  pkg/controller/tas/topology_ungater.go), so a slice is N consecutive node ranks.

The domain level is the label the platform names for its scale-up domain
(`Domain.node_label`, platforms.yaml `domain_node_label`): on an NVL72, `nvidia.com/gpu.clique`,
the label the NVIDIA GPU Operator's DRA driver sets on each node with its NVLink clique
(docs.nvidia.com/topograph/v0.5.0/providers/dra); on a Trn2 UltraServer,
`neuron.amazonaws.com/ultraserver-server-id-4`, the label the Neuron Device Plugin sets on
each trn2u.48xlarge node with its 4-node UltraServer (AWS Neuron docs, "How to schedule MPI
jobs to run on Neuron UltraServer on EKS"; AWS's own examples use it as the topologyKey). The lowest level is the node
(`kubernetes.io/hostname`), which lets Kueue replace a failed node.
"""

from __future__ import annotations

from typing import Any

from rightsize.export.topology import GPU_CLIQUE_LABEL, Placement

DOMAIN_LABEL = GPU_CLIQUE_LABEL  # the NVL72 level (kept for callers that name it)
HOST_LABEL = "kubernetes.io/hostname"
LEVELS = [DOMAIN_LABEL, HOST_LABEL]
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SLICE = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"


def levels(p: Placement) -> list[str]:
    """The Kueue Topology's levels for the placement's domain: its node label, then the node."""
    return [p.domain.node_label, HOST_LABEL]


def pod_annotations(p: Placement, pods: int) -> dict[str, str]:
    """One pod per node: all in one domain when the job fits one; otherwise the fewest
    domains, with each slice of consecutive pods that must share a domain required to."""
    label = p.domain.node_label
    if pods <= p.domain.nodes:
        return {REQUIRED: label}
    out = {PREFERRED: label}
    if p.slice_nodes > 1:
        out |= {SLICE: label, SLICE_SIZE: str(p.slice_nodes)}
    return out


def describe(p: Placement, pods: int) -> str:
    how = ", ".join(f"{k.split('/')[1]}={v}" for k, v in pod_annotations(p, pods).items())
    return (
        f"placement: the {p.group} group ({p.group_gpus} {p.domain.unit}s) in one {p.domain.size}, "
        f"the job on {p.domains} domain(s): Kueue TAS ({how}); Topology levels {', '.join(levels(p))}"
    )


def annotate(pod_template: dict[str, Any], p: Placement, pods: int) -> None:
    pod_template.setdefault("metadata", {}).setdefault("annotations", {}).update(pod_annotations(p, pods))
