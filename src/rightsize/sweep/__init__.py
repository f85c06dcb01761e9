"""Sweeps: one spec (a workload or a fleet) planned under many variations (a grid, named
scenarios, seeded samples of prices or growth), here or on a Dask cluster, with the same results.

- `spec.sweep` (in the spec package): the `kind: sweep` file, which names a base spec.
- `scenarios`: the variations, set at dotted paths into the base spec and checked before planning.
- `run`: every scenario through the one planner (`api.plan`), locally or on `dask.distributed`.
"""

from rightsize.sweep.run import SweepResult, run_sweep

__all__ = ["SweepResult", "run_sweep"]
