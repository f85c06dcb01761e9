"""Tensor-parallel exchanges of a parallel attention/MLP block (GPT-J, GPT-NeoX, PaLM, Falcon).

A sequential block computes ``x = x + attn(ln1(x)); x = x + mlp(ln2(x))``. Under Megatron-LM's
tensor parallelism (Shoeybi et al. 2019, Fig. 3) each half is a column-parallel linear followed
by a row-parallel one: the row-parallel output (attention out-projection, MLP down-projection)
holds partial sums that an all-reduce completes in the forward ("g"), and the column-parallel
input's gradient is partial and all-reduced in the backward ("f"). Two exchanges of the [T, h]
activations per direction per layer.

A parallel block computes ``x = x + attn(ln1(x)) + mlp(ln2(x))`` (``ModelArch.parallel_block``):
both branches read the same residual input and their outputs are summed, so the two partial sums
can be added before one all-reduce. GPT-NeoX does exactly that (megatron/model/transformer.py,
``gpt_j_residual``: the attention and MLP output linears are built with
``parallel_output=self.gpt_j_residual`` and the layer returns ``residual + self.reduce(output)``,
"we can do a single allreduce after we add mlp / attn outputs"). Its backward still all-reduces
each branch's input gradient in its own column-parallel linear (``copy_to_model_parallel_region``,
one per branch), so the backward keeps two. This module takes that public implementation:
one exchange forward, two backward. Serving runs the forward only, with the same one: vLLM's
Falcon decoder layer (vllm/model_executor/models/falcon.py) builds both output linears with
``reduce_results=False`` when ``parallel_attn`` and "can use only one all-reduce operator to
reduce the results from both MLP and Attention layers" (`perf.inference.Replica.tp_comm_s`).

What other stacks do differs, and the planner cannot see which one ran: NeMo's Falcon layer
(``FalconTransformerLayer`` over Megatron-Core linears, each reducing its own output) sums the
branches after both reductions and saves nothing; a stack that fuses both branches' input
projections into one column-parallel GEMM (PaLM, Chowdhery et al. 2022, sec. 2: "the MLP and
Attention input matrix multiplications can be fused") or sums the two norms' input gradients
before reducing (the layer norm's backward is linear in its incoming gradient) would save the
backward one too. TII's Gigatron, which trained Falcon, is not public.
"""

from __future__ import annotations

import numpy as np

from rightsize.spec.model import ModelArch

# (forward, backward) exchanges of the [T, h] activations per layer under tensor parallelism.
SEQUENTIAL_TP_EXCHANGES = (2.0, 2.0)  # Megatron-LM: g after out-proj and MLP down; f before QKV and MLP up
PARALLEL_TP_EXCHANGES = (1.0, 2.0)  # GPT-NeoX gpt_j_residual: one reduce of the summed branches; f per branch


def tp_exchanges(arch: ModelArch) -> tuple[float, float]:
    """(forward, backward) tensor-parallel exchanges per layer for this architecture's block."""
    return PARALLEL_TP_EXCHANGES if arch.parallel_block else SEQUENTIAL_TP_EXCHANGES


def tp_collectives_s(arch: ModelArch, one_exchange_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of a layer's tensor-parallel collectives, from the seconds of
    one exchange (an all-reduce, or an all-gather + reduce-scatter pair under sequence
    parallelism) of the layer's [T, h] activations."""
    fwd, bwd = tp_exchanges(arch)
    return fwd * one_exchange_s, bwd * one_exchange_s
