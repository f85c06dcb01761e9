"""Exposed time of activation offload to host memory, per layer of one micro-batch.

Offloaded activations leave the device in the forward and come back for the backward as
asynchronous copies over the accelerator's host link (`Hardware.host_link_bytes_per_s`: PCIe,
or NVLink-C2C on Grace parts), overlapped with compute; only what the copies cannot hide is
exposed. Two schedules:

- Named tensors (MaxText's `*_offloaded` remat policies, JAX pinned-host offload): every layer
  sends its named tensors while it computes, so each layer's copy hides behind that layer's
  own forward (and its reload behind its own backward).

- Megatron-Core layer offload (`cpu_offloading`, `cpu_offloading_num_layers` = k of the L
  layers; perf.remat `layer_offload_<n>of8`). Megatron-Core hands it to Transformer Engine's
  `get_cpu_offload_context`, whose default synchroniser since TE 2.10 (Nov 2025; transformer_
  engine/pytorch/cpu_offload.py, `DefaultOffloadSynchronizer._init_offload_synchronization_dicts`,
  NVIDIA/TransformerEngine at d0067d0, Aug 2026) offloads layers 0..k-1 on one offload stream:
  layer i's whole saved stack starts copying when layer i+1's forward starts, and the forward
  of layer L-k+i waits until that copy is done (its memory is released there, which keeps the
  peak at L-k layers' stacks); in the backward, layer i's reload starts when layer L-1-k+i's
  backward starts, on the same stream, and layer i's backward waits for it. The stream runs
  the copies one after another. With per-layer compute t and one layer's copy c, each copy
  has the L-k-1 layers between its start and its deadline to hide under. Where that is at
  least one layer, the stream, once it is the bottleneck (c > t), ends copy i at t + (i+1) c
  against a deadline of (L-k+i) t: the lateness grows with i and the forward stalls by

      max(k c - (L-2) t, 0)

  in all (the last copy's lateness; earlier stalls are part of it). Where k = L-1 every copy
  is due at the layer it starts in, and the forward waits k c. The backward's reloads follow
  the same pattern with the backward's per-layer compute. The older handler (TE <= 2.9,
  `AsyncDoubleBufferGroupOffloadHandler`, its `layer_window_map`) gives each copy a window of
  L/k layers instead (k c - L t exposed in all once c > L/k t), within two layers of this: the
  whole stack is not copied behind one layer's compute in either.
"""

from __future__ import annotations

import numpy as np

from rightsize.perf import remat
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import named_offloaded_bytes_per_token_layer, offloaded_stack_bytes_per_token
from rightsize.perf.workload import ParallelConfigs, TrainWorkload


def layer_offload_stall_s(
    k: np.ndarray, layers: float, copy_s: np.ndarray, layer_s: np.ndarray
) -> np.ndarray:
    """Seconds one pass (forward or backward) of a micro-batch waits on Transformer Engine's
    offload stream when `k` of `layers` layers each copy `copy_s` seconds of stack and each
    layer computes `layer_s` seconds (module docstring); 0 where k is 0."""
    overlapped = np.maximum(k * copy_s - (layers - 2.0) * layer_s, 0.0)
    stall = np.where(layers - k - 1.0 < 1.0, k * copy_s, overlapped)
    return np.where(k > 0, stall, 0.0)


def offload_exposed_s(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, compute: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) exposed seconds of one layer's activation offload, per micro-batch:
    a named policy's per-layer copy beyond that layer's compute (`compute`: its forward and
    backward seconds), plus a layer-offload policy's stalls spread over the stage's layers."""
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    fwd, bwd = compute
    named_s = rows * named_offloaded_bytes_per_token_layer(w, cfg) / hw.host_link_bytes_per_s
    exposed_f = np.maximum(named_s - fwd, 0.0)
    exposed_b = np.maximum(named_s - bwd, 0.0)
    code = remat.codes(cfg.recompute)
    if not np.any(remat.STACK_OFFLOADED[code] > 0):
        return exposed_f, exposed_b
    # Layer offload runs without pipeline parallelism only (perf.memory), so the stage is the model.
    layers = float(w.arch.layers)
    k = np.minimum(remat.offloaded_layers(code, layers), layers - 1.0)
    stack_s = rows * offloaded_stack_bytes_per_token(w, cfg) / hw.host_link_bytes_per_s
    exposed_f = exposed_f + layer_offload_stall_s(k, layers, stack_s, fwd) / layers
    exposed_b = exposed_b + layer_offload_stall_s(k, layers, stack_s, bwd) / layers
    return exposed_f, exposed_b
