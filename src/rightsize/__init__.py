"""rightsize: right-size AI infrastructure with measured, explained plans.

Python API (mirrors the command line)::

    import rightsize
    plan = rightsize.plan("examples/llama3-70b-pretrain.yaml")
    print(plan.best.accelerator, plan.best.gpus, plan.best.parallel)
"""

from __future__ import annotations

from typing import Any

from rightsize._version import __version__

__all__ = ["__version__", "estimate", "plan"]


def plan(spec: Any) -> Any:
    """Search hardware and parallel layouts for a spec (path, dict or TrainingSpec)."""
    from rightsize.api import plan as _plan

    return _plan(spec)


def estimate(spec: Any) -> Any:
    """Evaluate one configuration (fixed accelerator and GPU count)."""
    from rightsize.api import estimate as _estimate

    return _estimate(spec)
