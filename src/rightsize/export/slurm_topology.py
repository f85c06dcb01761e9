"""Slurm placement of a training job on a multi-node scale-up domain (`export.topology`).

Slurm 22.05+ places jobs by switches with the tree topology plugin (slurm.conf
`TopologyPlugin=topology/tree`, switches in `topology.conf`; slurm.schedmd.com/topology.html,
topology.conf.html). A scale-up domain (`export.topology`) is one leaf switch: an NVL72 rack
with its 18 trays, a Trn2 UltraServer with its 4 trn2u.48xlarge instances; the leaves hang
under a spine switch. The job asks for the fewest racks it can use with
`--switches=COUNT@WAIT` (sbatch.html: the job waits up to WAIT for that many leaf switches,
at most SchedulerParameters=max_switch_wait, 300 s unless the operator raises it, and then
runs on more). Ranks follow the allocation's node order in blocks of the GPUs per node
(`--distribution=block`), and Slurm orders a job's nodes as slurm.conf lists them, so with
each rack's trays listed together consecutive ranks share a rack.

Because `--switches` is a wish with a time limit, a job whose groups span nodes checks its
allocation before it starts: every group's nodes must be on one leaf switch (`scontrol show
topology`), else it stops with the reason instead of training slower than planned.
`topology.conf.example` beside the script is the file an operator writes (node names to be
replaced by the cluster's own).
"""

from __future__ import annotations

from rightsize.export.shell_words import comment_lines, safe_token
from rightsize.export.topology import Placement

SWITCH_WAIT = "1-00:00:00"  # how long the job may wait for its racks (capped by max_switch_wait)
SKIP_VAR = "RIGHTSIZE_SKIP_PLACEMENT_CHECK"


def sbatch_options(p: Placement) -> list[tuple[str, str]]:
    return [("switches", f"{p.domains}@{SWITCH_WAIT}"), ("distribution", "block:block")]


def header_lines(p: Placement) -> list[str]:
    d = p.domain
    where = (
        f"one {d.size} ({d.nodes} nodes, one leaf switch in topology.conf)"
        if p.domains == 1
        else f"{p.domains} x {d.size} ({d.nodes} nodes each, one leaf switch each)"
    )
    return [
        f"placement: {where}; --switches={p.domains}@{SWITCH_WAIT} (the wait is capped by "
        "SchedulerParameters=max_switch_wait); ranks in block order (tp-cp-ep-dp-pp, TP fastest)",
        f"the {p.group} group ({p.group_gpus} {p.domain.unit}s, {p.group_nodes} node(s)) stays in one domain"
        + ("; checked against `scontrol show topology` before training starts" if p.group_nodes > 1 else ""),
    ]


def check_lines(p: Placement) -> list[str]:
    """Bash that stops the job when a group's nodes are not on one leaf switch. Fixed text
    but for one whole number (the nodes of a group)."""
    if p.group_nodes <= 1:
        return []
    why = f"the {p.group} group spans {p.group_nodes} nodes that must share one {p.domain.name} domain"
    return [
        *comment_lines([f"Placement check: {why} (ranks in block order over the node list)."]),
        f"GROUP_NODES={p.group_nodes}",
        f'if [[ -z "${{{SKIP_VAR}:-}}" ]]; then',
        "    declare -A LEAF=()",
        "    while read -r sw nodes; do",
        '        for h in $(scontrol show hostnames "$nodes"); do LEAF[$h]=$sw; done',
        '    done < <(scontrol show topology | awk \'$2 == "Level=0" {sub("SwitchName=", "", $1); '
        'for (i = 3; i <= NF; i++) if ($i ~ /^Nodes=/) {sub("Nodes=", "", $i); print $1, $i}}\')',
        '    mapfile -t HOSTS < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        "    for ((i = 0; i < ${#HOSTS[@]}; i += GROUP_NODES)); do",
        "        for ((j = i; j < i + GROUP_NODES; j++)); do",
        '            if [[ -z "${LEAF[${HOSTS[j]}]:-}" || "${LEAF[${HOSTS[j]}]}" != "${LEAF[${HOSTS[i]}]:-}" ]]; then',
        '                echo "placement: nodes ${HOSTS[i]} and ${HOSTS[j]} of one group are not on one leaf switch '
        f'({why}); configure topology/tree (see topology.conf.example) or set {SKIP_VAR}=1 to run anyway" >&2',
        "                exit 1",
        "            fi",
        "        done",
        "    done",
        "fi",
    ]


def topology_conf(p: Placement, node: str) -> str:
    """An example topology.conf: one leaf switch per domain the job uses, a spine above.
    Node names `<node type>-NNNN` stand for the cluster's own; racks list their nodes in
    slurm.conf order."""
    base = safe_token(node)
    width = max(2, len(str(p.domains)))
    lines = comment_lines([
        "Slurm topology.conf (slurm.schedmd.com/topology.conf.html) for this job: one leaf switch per "
        f"{p.domain.size} ({p.domain.nodes} nodes), a spine above them.",
        f"Replace the node names with the cluster's own, each {p.domain.slug}'s nodes together and in slurm.conf's order.",
        "slurm.conf: TopologyPlugin=topology/tree; SchedulerParameters=max_switch_wait=86400 "
        f"(the job's --switches wait, {SWITCH_WAIT}, is capped by it).",
    ])  # fmt: skip
    leaves = []
    for r in range(p.domains):
        first, last = r * p.domain.nodes + 1, (r + 1) * p.domain.nodes
        name = f"{base}-{p.domain.slug}{r + 1:0{width}d}"
        leaves.append(name)
        lines.append(f"SwitchName={name} Nodes={base}-[{first:04d}-{last:04d}]")
    lines.append(f"SwitchName={base}-spine Switches={','.join(leaves)}")
    return "\n".join(lines) + "\n"
