"""Rank, world size and rendezvous from torchrun's and srun's environments."""

from __future__ import annotations

from rightsize.profile.launcher import detect, expand_hostlist


def test_hostlists() -> None:
    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("a[9-11]-ib") == ["a9-ib", "a10-ib", "a11-ib"]
    assert expand_hostlist("node1") == ["node1"]


def test_torchrun_env() -> None:
    env = {"RANK": "3", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8",
           "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}  # fmt: skip
    got = detect(env)
    assert got is not None and got.launcher == "torchrun"
    assert (got.rank, got.world_size, got.local_rank, got.local_world_size) == (3, 16, 3, 8)
    assert got.init_method == "tcp://10.0.0.1:29500"


def test_srun_env() -> None:
    env = {"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_STEP_ID": "0",
           "SLURM_JOB_ID": "1234", "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_STEP_TASKS_PER_NODE": "8(x2)"}  # fmt: skip
    got = detect(env)
    assert got is not None and got.launcher == "srun"
    assert (got.rank, got.world_size, got.local_rank, got.local_world_size) == (9, 16, 1, 8)
    assert got.master_addr == "gpu07"
    # the same job and step give every rank the same port; another step another one
    again = detect({**env, "SLURM_PROCID": "0"})
    other = detect({**env, "SLURM_STEP_ID": "1"})
    assert again is not None and other is not None
    assert again.master_port == got.master_port != other.master_port


def test_alone_is_not_distributed() -> None:
    assert detect({}) is None
    assert detect({"RANK": "0", "WORLD_SIZE": "1"}) is None
    # the batch script of a Slurm job (no step) is not a rank
    assert detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "5"}) is None
