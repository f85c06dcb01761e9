"""Listing the hardware catalog and the model presets."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rightsize.catalog import accelerators, nodes
from rightsize.catalog.platforms import platforms
from rightsize.constants import GB, TERA
from rightsize.perf.params import active_params, count_params
from rightsize.perf.recsys import dense_params
from rightsize.perf.vision import count_model
from rightsize.spec import preset_aliases, presets
from rightsize.spec.recsys import get_recsys_model, recsys_model_names
from rightsize.spec.vision import get_vision_model, vision_model_names


def catalog_dict() -> dict[str, Any]:
    accs = {}
    for a in accelerators().values():
        d = asdict(a)
        d["efficiency"] = asdict(a.efficiency)
        accs[a.id] = d
    return {
        "accelerators": accs,
        "nodes": {n.id: asdict(n) for n in nodes().values()},
        "platforms": {p.id: asdict(p) for p in platforms().values()},
    }


def _link(acc: Any) -> str:
    """The scale-up link in the vendor's own words, with its topology: "ICI (3D torus)"."""
    topo = {"switch": "switched", "mesh": "full mesh", "pcie": "host PCIe", "torus2d": "2D torus"}
    return f"{acc.scaleup_name} ({topo.get(acc.scaleup_topology, '3D torus')})"


def render_catalog() -> str:
    head = (
        f"{'id':<15} {'bf16 TFLOP/s':>12} {'fp8 TFLOP/s':>11} {'HBM GB':>7} {'HBM TB/s':>8} "
        f"{'scale-up GB/s':>13} {'domain':>6} {'TDP W':>6}  {'scale-up link':<24} default node"
    )
    lines = ["Accelerators (dense peak; scale-up per direction):", head]
    for a in accelerators().values():
        fp8 = f"{a.peak_dense_flops_per_s['fp8'] / TERA:,.0f}" if a.supports("fp8") else "-"
        bf16 = a.peak_dense_flops_per_s.get("bf16", a.peak_dense_flops_per_s.get("fp16", 0.0))
        lines.append(
            f"{a.id:<15} {bf16 / TERA:>12,.0f} {fp8:>11} {a.hbm_bytes / GB:>7,.0f} "
            f"{a.hbm_bytes_per_s / 1e12:>8.2f} {a.scaleup_bytes_per_s / GB:>13,.0f} "
            f"{a.scaleup_domain_gpus:>6} {a.tdp_w:>6,.0f}  {_link(a):<24} {a.default_node}"
        )
    unoffered = [a.id for a in accelerators().values() if not a.offered]
    if unoffered:  # a hyperscaler's own variant: searches skip it unless a spec names it
        lines.append(
            f"Not offered for purchase or rent (planned only when a spec names them): {', '.join(unoffered)}"
        )
    lines += ["", "Node types:", f"{'id':<22} {'accelerator':<15} {'GPUs':>4} {'NICs':>9} {'max kW':>7}"]
    for n in nodes().values():
        nics = f"{n.nics_per_node}x{n.nic_bits_per_s / 1e9:.0f}G"
        lines.append(
            f"{n.id:<22} {n.accelerator:<15} {n.gpus_per_node:>4} {nics:>9} {n.max_power_w / 1e3:>7.1f}"
        )
    lines += ["", "Platforms (what each accelerator runs in; unit: what a plan calls one):"]
    lines.append(
        f"{'id':<14} {'unit':<5} {'scale-up group':<18} {'scale-out':<48} {'runs the network, halls'}"
    )
    for p in platforms().values():
        who = (
            f"{p.operator or 'provider'}, {p.operator or 'provider'}"
            if p.provider_network
            else "buyer, buyer"
        )
        lines.append(f"{p.id:<14} {p.unit_noun:<5} {p.scaleup_domain:<18} {p.scaleout_name[:48]:<48} {who}")
    lines += ["", "Every figure carries a source and a date: `rightsize catalog --format json`."]
    return "\n".join(lines)


def models_dict() -> dict[str, Any]:
    out = {}
    for name, m in presets().items():
        out[name] = {
            **m.model_dump(),
            "aliases": preset_aliases(name),
            "params": count_params(m).total,
            "active_params": active_params(m),
        }
    # one namespace of preset names; `kind` says which spec kind takes each
    out = {name: {"kind": "language", **v} for name, v in out.items()}
    out.update({name: {"kind": "vision", **v} for name, v in _vision_dict().items()})
    out.update({name: {"kind": "recommendation", **v} for name, v in _recsys_dict().items()})
    return out


def _vision_dict() -> dict[str, Any]:
    out = {}
    for name in vision_model_names():
        m = get_vision_model(name)
        counts = count_model(m)
        out[name] = {
            "title": m.title,
            "family": m.family,
            "image_size": m.image_size,
            "params": counts.params,
            "optimizer": m.optimizer,
            "source": m.source,
        }
    return out


def _recsys_dict() -> dict[str, Any]:
    out = {}
    for name in recsys_model_names():
        m = get_recsys_model(name)
        out[name] = {
            "title": m.title,
            "tables": len(m.tables),
            "embedding_rows": m.total_rows,
            "embedding_dim": m.embedding_dim,
            "embedding_params": m.total_rows * m.embedding_dim,
            "dense_params": dense_params(m),
            "interaction": m.interaction,
            "source": m.source,
        }
    return out


def render_models() -> str:
    lines = [
        f"{'preset':<16} {'params':>8} {'active':>8} {'layers':>6} {'hidden':>6} {'heads':>5} {'kv':>4} "
        f"{'ffn':>6} {'vocab':>7} {'mlp':<6} experts"
    ]
    for name, m in presets().items():
        total, active = count_params(m).total, active_params(m)
        experts = f"{m.experts_per_token}/{m.experts}" if m.is_moe else "-"
        lines.append(
            f"{name:<16} {total / 1e9:>7.1f}B {active / 1e9:>7.1f}B {m.layers:>6} {m.hidden:>6} {m.heads:>5} "
            f"{m.kv_heads:>4} {m.ffn_hidden:>6} {m.vocab:>7} {m.mlp:<6} {experts}"
        )
    lines = ["Language models (`model:` in training and inference specs):", *lines]
    lines += [
        "",
        "Vision models (`kind: vision`):",
        f"{'preset':<16} {'params':>8} {'family':<6} {'image':>5}  title",
    ]
    for name, v in _vision_dict().items():
        lines.append(
            f"{name:<16} {v['params'] / 1e6:>7.1f}M {v['family']:<6} {v['image_size']:>5}  {v['title']}"
        )
    lines += [
        "",
        "Recommendation models (`kind: recommendation`):",
        f"{'preset':<18} {'tables':>6} {'rows':>8} {'dim':>4} {'dense':>7}  title",
    ]
    for name, r in _recsys_dict().items():
        lines.append(
            f"{name:<18} {r['tables']:>6} {r['embedding_rows'] / 1e6:>7.0f}M {r['embedding_dim']:>4} "
            f"{r['dense_params'] / 1e6:>6.2f}M  {r['title']}"
        )
    return "\n".join(lines)
