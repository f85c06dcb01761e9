"""Re-derive engines.yaml `tensorrt-llm.memory` from NVIDIA's measured TensorRT-LLM KV capacities.

Each Llama-3.1-8B run of tests/data/trtllm_kv_capacity.csv (n sequences fit, n + 1 do not, each
holding its max_seq_len = ISL + OSL + 1000 in 32-token blocks, KV = fraction x (total - weights -
reserved)) bounds the reserved memory R between two values. R is modelled as

    R = runtime[accelerator] + comm[TP] + 2 bytes x max_num_tokens x (a x hidden + b x ffn / TP)

and the figures are the centre of the region every run allows (the point farthest from all
bounds, a linear programme), with each figure's own range. Prints them beside engines.yaml's.

Run: PYTHONPATH=src python benchmarks/derive_trtllm_memory.py
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.engines import get_engine
from rightsize.constants import GiB
from rightsize.perf.inference import Replica
from rightsize.spec.presets import get_preset

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "trtllm_kv_capacity.csv"
NAMES = ["runtime h100-sxm", "runtime gb300", "comm TP2", "comm TP4", "hidden buffers", "ffn buffers"]


def bounds() -> tuple[np.ndarray, np.ndarray]:
    """Rows of A_ub, b_ub (in GiB) for lo <= R <= hi of every Llama run, with a slack column."""
    with DATA.open(encoding="utf-8") as f:
        rows = [
            r
            for r in csv.DictReader(x for x in f if not x.startswith("#"))
            if r["model"] == "llama-3.1-8b-bf16"
        ]
    arch = get_preset("llama-3-8b")
    a_ub, b_ub = [], []
    for r in rows:
        acc = get_accelerator(r["accelerator"])
        tp, n, frac = int(r["tp"]), int(r["max_sequences"]), float(r["free_gpu_memory_fraction"])
        rep = Replica.build(arch, acc, node_for(acc.id), tp, "bf16", "bf16", engine="tensorrt-llm")
        seq = math.ceil((int(r["isl"]) + int(r["osl"]) + 1000) / 32) * 32
        per_seq = seq * rep.kv_bytes_per_token / rep.kv_shards / frac
        room = acc.hbm_bytes - rep.weight_bytes_per_gpu
        hi, lo = (room - n * per_seq) / GiB, (room - (n + 1) * per_seq) / GiB
        tokens = 2 * int(r["isl"])
        x = np.zeros(6)
        x[0 if acc.id == "h100-sxm" else 1] = 1.0
        x[2], x[3] = float(tp == 2), float(tp == 4)
        x[4] = 2.0 * tokens * arch.hidden / GiB
        x[5] = 2.0 * tokens * arch.ffn_hidden / tp / GiB
        a_ub += [np.r_[x, 1.0], np.r_[-x, 1.0]]
        b_ub += [hi, -lo]
    return np.array(a_ub), np.array(b_ub)


def main() -> None:
    a_ub, b_ub = bounds()
    free = [(0.0, None)] * 6
    centre = linprog(c=[0.0] * 6 + [-1.0], A_ub=a_ub, b_ub=b_ub, bounds=[*free, (None, None)])
    mem = get_engine("tensorrt-llm").memory
    assert mem is not None
    ours = [
        mem.runtime_gib("h100-sxm"),
        mem.runtime_gib("gb300"),
        mem.comm_gib(2),
        mem.comm_gib(4),
        mem.activation_hidden_buffers.value,
        mem.activation_ffn_buffers.value,
    ]
    print(f"distance of the centre from the nearest bound: {centre.x[6]:.3f} GiB")
    for i, name in enumerate(NAMES):
        ends = []
        for sign in (1.0, -1.0):
            c = np.zeros(7)
            c[i] = sign
            ends.append(linprog(c=c, A_ub=a_ub, b_ub=b_ub, bounds=[*free, (0.0, 0.0)]).x[i])
        print(
            f"{name:18s} centre {centre.x[i]:6.2f}  allowed {ends[0]:5.2f}-{ends[1]:5.2f}  engines.yaml {ours[i]:6.2f}"
        )


if __name__ == "__main__":
    main()
