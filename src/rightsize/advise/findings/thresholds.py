"""The advisor's thresholds, each with the reason for its value."""

# Megatron-class runs at 40-55% MFU spend 70-85% of the step in GEMMs and attention;
# above this share the accelerator's math, not the fabric, sets the pace.
COMPUTE_BOUND_SHARE = 0.70
# Well-tuned large runs hide all but ~10-15% of their communication (MegaScale, Jiang et
# al. 2024, overlaps DP/TP/PP traffic to reach 55% MFU); more than this is network-bound.
EXPOSED_COMM_MAX_SHARE = 0.15
# Interleaved 1F1B keeps the bubble (pp - 1) / (m vpp) under ~10% (Narayanan et al. 2021).
BUBBLE_MAX_SHARE = 0.10
# The optimizer update is memory-bound; past 10% of the step the HBM stream, not the math,
# is what the step waits on (sharding it with ZeRO-1 removes most of it).
OPTIMIZER_MAX_SHARE = 0.10
# Convolutional networks spend 30-50% of a training step in BatchNorm, ReLU and pooling
# (memory-bound kernels) unless they are fused; past 30% the HBM stream sets the pace.
MEMORY_BOUND_LAYERS_MAX_SHARE = 0.30
# Decode whose time per token is within 1.5x of reading the weights once is bound by HBM
# bandwidth: a faster GEMM would not help, fewer bytes would.
MEMORY_BOUND_TPOT_RATIO = 1.5
# A data pipeline that stalls the step for more than 5% of its time is worth fixing: GPU decode
# (DALI) or more host cores cost less than the idle accelerators.
INPUT_WAIT_MAX_SHARE = 0.05
# Checkpoint stalls above 3% of wall time are worth an asynchronous checkpoint (Meta and
# Google report blocking checkpoint overheads of 1-3% at scale).
CHECKPOINT_MAX_SHARE = 0.03
# The plan already keeps 8% of HBM for allocator fragmentation (perf.memory); under 12%
# headroom in total, variable-length batches and NCCL buffer growth can still OOM.
MEMORY_HEADROOM_MIN = 0.12
# A serving replica whose weights fill more than 80% of HBM has little KV cache left:
# few concurrent sequences, small batches, poor throughput per GPU.
SERVING_WEIGHTS_MAX_SHARE = 0.80
# Power-capped GPUs that lose over 2% of their clocks cost more in time than the cooling
# upgrade that avoids it for a multi-week run.
THROTTLE_MAX_SLOWDOWN = 0.02
# Below a 90% chance of meeting the deadline over the efficiency spread, the plan needs
# more margin (without a spread: finishing in the last 10% of the window).
DEADLINE_MIN_PROBABILITY = 0.90
DEADLINE_MAX_SHARE = 0.90
# With under 15% latency headroom at the SLO percentile, a load spike or a slower kernel
# release breaks the SLO.
SLO_HEADROOM_MIN = 1.15
SLO_GOODPUT_MIN = 0.99
# Dense LLM pre-training reaches 38-55% MFU when well run (Llama 3: 38-43%; MegaScale 55%);
# below 35% the GPUs are paid for but idle.
MFU_TARGET = 0.35
# Replicas less than half busy at the design peak are capacity paid for and unused.
SERVING_UTILISATION_MIN = 0.50
# Finishing before 60% of the deadline means fewer GPUs would still meet it.
FASTER_THAN_NEEDED_SHARE = 0.60
# Savings under 5% are within the model's error and not worth a different purchase.
MIN_SAVING = 0.05
# RDMA back-end fabrics run 200-400 Gb/s per GPU; serving replicas inside one node need only
# a 25-100 Gb/s front-end network per node.
TRAINING_FABRIC_GBPS_PER_GPU = 200.0
# Multi-node LLM training fabrics run 200-400 Gb/s per GPU (8x400G per HGX node); below
# 100 Gb/s, or with PCIe-only scale-up (under 100 GB/s), gradient reduction dominates.
SLOW_NIC_GBPS_PER_GPU = 100.0
SLOW_SCALEUP_BYTES_PER_S = 100e9
# Per-GPU NICs, switches and optics are ~10% of an HGX cluster's capital cost (NVIDIA
# reference architectures): what an unneeded back-end fabric wastes.
BACKEND_FABRIC_COST_SHARE = 0.10
# Re-cabling a fabric or adding power and cooling mid-life costs on the order of a quarter
# of the original build (downtime, stranded switches, facility work).
REBUILD_IMPACT = 0.25
# Informational findings (the healthy class) rank below every actionable one.
INFO_IMPACT = 0.01
# NCCL reaches ~90% of NIC line rate on a well-configured rail-optimised fabric.
SCALEOUT_EFFICIENCY = 0.9
# Gradient reduction hides under ~70% of the backward (perf.step.DP_OVERLAP_FRACTION), and
# the backward is ~2/3 of forward + backward compute.
BACKWARD_WINDOW_SHARE = 0.7 * 2.0 / 3.0
# fp32 gradient buffers (Megatron's accumulate_allreduce_grads_in_fp32) against bf16 weights.
GRAD_BYTES_PER_WEIGHT_BYTE = 2.0
