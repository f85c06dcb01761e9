"""Failures, checkpoints and goodput for a training run.

A cluster of n GPUs that each fail at rate lambda per hour has a mean time between
interruptions M = 1 / (n lambda). Saving a checkpoint blocks training for delta
seconds (its size over the nodes' aggregate write bandwidth). The first-order
optimal checkpoint interval is tau = sqrt(2 delta M) (Young 1974; Daly 2006, eq. 1).
Per unit of useful work the run pays delta / tau for saving and, per interruption,
the half interval of lost work plus the restart R:

    wall / useful = (1 + delta / tau) (1 + (tau / 2 + R) / M)

and goodput is its inverse.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from rightsize.catalog.reliability import Reliability

# Bytes per parameter in a training checkpoint: 16-bit weights (2) + fp32 master
# weights, Adam's first and second moments (12). BLOOM-176B's published checkpoint
# with optimizer states is 2.3 TB = 176e9 x ~13 bytes.
CHECKPOINT_BYTES_PER_PARAM = {"adamw": 14.0, "adam": 14.0, "sgd": 10.0}
# exp() arguments past this mean no useful work completes (and would overflow a float).
MAX_EXPONENT = 700.0


@dataclass(frozen=True)
class Goodput:
    mtbf_s: float
    checkpoint_bytes: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    goodput: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def checkpoint_bytes(params: float, optimizer: str) -> float:
    return params * CHECKPOINT_BYTES_PER_PARAM[optimizer]


def goodput(gpus: int, nodes: int, ckpt_bytes: float, rel: Reliability) -> Goodput:
    mtbf_s = 3600.0 / (gpus * rel.failure_rate_per_gpu_hour)
    write_s = ckpt_bytes / (max(nodes, 1) * rel.checkpoint_write_bytes_per_s_per_node)
    interval_s = max(math.sqrt(2.0 * write_s * mtbf_s), write_s)
    slowdown = (1.0 + write_s / interval_s) * (1.0 + (interval_s / 2.0 + rel.restart_s) / mtbf_s)
    return Goodput(
        mtbf_s=mtbf_s,
        checkpoint_bytes=ckpt_bytes,
        checkpoint_write_s=write_s,
        checkpoint_interval_s=interval_s,
        restart_s=rel.restart_s,
        goodput=1.0 / slowdown,
    )


def daly_goodput(gp: Goodput) -> Goodput:
    """Goodput under exponentially distributed failures, valid when the MTBF is minutes.

    The first-order model (perf.reliability: wall/useful = (1 + d/tau)(1 + (tau/2 + R)/M))
    linearises in 1/M and turns optimistic, then meaningless, once a restart R or a
    checkpoint interval tau is a sizeable share of the MTBF M (a restart longer than M still
    shows some goodput). Daly's complete model (J. T. Daly, "A higher order estimate of the
    optimum checkpoint interval for restart dumps", FGCS 22(3), 2006, eqs. 13 and 37):

        wall/useful = (M / tau) e^(R/M) (e^((tau + d)/M) - 1)
        tau_opt = sqrt(2 d M) (1 + sqrt(d / 2M) / 3 + d / 18M) - d   (d < 2M; else tau = M)

    which the first-order model approximates when M is long (a few parts in 10^4 at 16K GPUs)."""
    m, d, r = gp.mtbf_s, gp.checkpoint_write_s, gp.restart_s
    if d < 2.0 * m:
        tau = math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(d / (2.0 * m)) / 3.0 + d / (18.0 * m)) - d
    else:
        tau = m
    tau = max(tau, d)
    exponent = r / m + (tau + d) / m
    if exponent > MAX_EXPONENT:  # failures so frequent that no work completes: goodput ~ 0
        return replace(gp, checkpoint_interval_s=tau, goodput=0.0)
    slowdown = (m / tau) * math.exp(r / m) * math.expm1((tau + d) / m)
    return replace(gp, checkpoint_interval_s=tau, goodput=1.0 / slowdown)
