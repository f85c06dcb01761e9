"""A throwaway single-host Slurm cluster for tests: munged, slurmctld and slurmd from
Debian's packages, started with a generated slurm.conf on free loopback ports, all state
in a temporary folder, every daemon stopped (by its own pid) afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol")


def missing() -> list[str]:
    return [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").exists()]


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _common_conf(root: Path, select: str = "CR_Core") -> str:
    host = socket.gethostname().split(".")[0]
    return f"""ClusterName=rightsize-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters={select}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/builtin
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
"""


def _conf(root: Path, cpus: int, gpus: int = 0) -> str:
    """One node, this host; `gpus` > 0 declares that many GPU gres backed by placeholder
    files (Slurm's gpu gres needs a File per device), for jobs that ask for GPUs but run no
    GPU code (TaskPlugin=task/none: nothing binds the devices)."""
    host = socket.gethostname().split(".")[0]
    gres = ""
    if gpus:
        for i in range(gpus):
            (root / f"gpu{i}").touch()
        files = f"{root}/gpu[0-{gpus - 1}]" if gpus > 1 else f"{root}/gpu0"
        (root / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={host} Name=gpu File={files}\n", encoding="utf-8"
        )
        gres = f" Gres=gpu:{gpus}"
    node = f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus}{gres} State=UNKNOWN\n"
    part = f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n"
    return _common_conf(root) + ("GresTypes=gpu\n" if gpus else "") + node + part


@dataclass(frozen=True)
class NodeShape:
    """One catalog node type as Slurm sees it: `count` nodes named `<name>-NNNN` in a
    partition `<name>` with the partition's MaxTime."""

    name: str
    count: int
    cores: int  # physical cores (the catalog's cpu_cores); two hardware threads each
    memory_mib: int
    gpus: int
    domain_nodes: int = 0  # nodes per scale-up domain (an NVL72 rack: 18); 0 = the node itself


def node_names(sh: NodeShape) -> list[str]:
    """The shape's node names in slurm.conf order."""
    return [f"{sh.name}-{i:04d}" for i in range(1, sh.count + 1)]


def topology_conf(shapes: list[NodeShape]) -> str:
    """topology/tree switches: one leaf per scale-up domain (consecutive nodes, as an NVL72
    rack's trays), one leaf per other node type, a spine above every leaf."""
    leaves = []
    lines = []
    for sh in shapes:
        names = node_names(sh)
        per = sh.domain_nodes if sh.domain_nodes > 1 else sh.count
        for r in range(0, sh.count, per):
            leaf = f"{sh.name}-rack{r // per + 1:02d}"
            leaves.append(leaf)
            chunk = names[r : r + per]
            nodes = f"{sh.name}-[{r + 1:04d}-{r + len(chunk):04d}]" if len(chunk) > 1 else chunk[0]
            lines.append(f"SwitchName={leaf} Nodes={nodes}")
    lines.append(f"SwitchName=spine Switches={','.join(leaves)}")
    return "\n".join(lines) + "\n"


PARTITION_MAX_TIME = "2-00:00:00"  # a common GPU partition limit: longer jobs must requeue


def catalog_conf(root: Path, shapes: list[NodeShape]) -> str:
    """Nodes shaped like the catalog's: sockets x cores x 2 threads, RealMemory, gres gpu.
    They are CLOUD nodes (powered down, resumed by a no-op program), which slurmctld
    schedules and `sbatch --test-only` evaluates without any slurmd running. Memory is a
    consumable resource (CR_Core_Memory) and partition limits are enforced at submission,
    as on production GPU clusters."""
    lines = [
        _common_conf(root, "CR_Core_Memory"),
        "GresTypes=gpu",
        "EnforcePartLimits=ALL",
        "SuspendProgram=/bin/true",
        "ResumeProgram=/bin/true",
        "SuspendTime=600",
        "ResumeTimeout=600",
    ]
    if any(sh.domain_nodes > 1 for sh in shapes):
        (root / "topology.conf").write_text(topology_conf(shapes), encoding="utf-8")
        lines += ["TopologyPlugin=topology/tree", "SchedulerParameters=max_switch_wait=86400"]
    for sh in shapes:
        sockets = 2 if sh.cores % 2 == 0 else 1
        nodes = f"{sh.name}-[0001-{sh.count:04d}]" if sh.count > 1 else f"{sh.name}-0001"
        lines.append(
            f"NodeName={nodes} Sockets={sockets} CoresPerSocket={sh.cores // sockets} ThreadsPerCore=2 "
            f"RealMemory={sh.memory_mib} Gres=gpu:{sh.gpus} State=CLOUD"
        )
        lines.append(f"PartitionName={sh.name} Nodes={nodes} MaxTime={PARTITION_MAX_TIME} State=UP")
    return "\n".join(lines) + "\n"


def _wait_for(check, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.3)
    return False


@contextlib.contextmanager
def slurm_cluster(root: Path, cpus: int = 4, gpus: int = 0) -> Iterator[dict[str, str]]:
    """Start the daemons; yield the environment that points Slurm's clients at them."""
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, cpus, gpus), encoding="utf-8")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        munge = [_exe("munged"), "-F", "--force", f"--socket={root}/munge.socket", f"--key-file={key}",
                 f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log", f"--seed-file={root}/munge.seed"]  # fmt: skip
        procs.append(_spawn(munge, env))
        if not _wait_for(lambda: (root / "munge.socket").exists(), 10):
            raise RuntimeError("munged did not start")
        procs.append(_spawn([_exe("slurmctld"), "-D", "-i", "-f", str(conf)], env))
        procs.append(_spawn([_exe("slurmd"), "-D", "-f", str(conf)], env))

        def idle() -> bool:
            out = subprocess.run([_exe("sinfo"), "-h", "-o", "%t"], env=env, capture_output=True, text=True)
            return out.returncode == 0 and out.stdout.strip() in ("idle", "mix")

        if not _wait_for(idle, 40):
            logs = "".join(
                (root / f).read_text() for f in ("slurmctld.log", "slurmd.log") if (root / f).exists()
            )
            raise RuntimeError("Slurm did not come up:\n" + logs[-3000:])
        yield env
    finally:
        _stop(procs)


def wait_job(job_id: str, env: dict[str, str], timeout_s: float) -> str:
    """The job's final state (COMPLETED, FAILED, ...) from scontrol, or TIMEOUT here."""
    end = time.monotonic() + timeout_s
    state = "UNKNOWN"
    while time.monotonic() < end:
        out = subprocess.run(
            [_exe("scontrol"), "show", "job", job_id], env=env, capture_output=True, text=True
        )
        for tok in out.stdout.split():
            if tok.startswith("JobState="):
                state = tok.split("=", 1)[1]
        if state in (
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "PREEMPTED",
        ):
            return state
        time.sleep(1.0)
    return f"still {state} after {timeout_s:g} s"


@contextlib.contextmanager
def catalog_cluster(root: Path, shapes: list[NodeShape]) -> Iterator[dict[str, str]]:
    """munged and slurmctld only, with `catalog_conf`'s nodes; yields the clients' environment."""
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(catalog_conf(root, shapes), encoding="utf-8")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        munge = [_exe("munged"), "-F", "--force", f"--socket={root}/munge.socket", f"--key-file={key}",
                 f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log", f"--seed-file={root}/munge.seed"]  # fmt: skip
        procs.append(_spawn(munge, env))
        if not _wait_for(lambda: (root / "munge.socket").exists(), 10):
            raise RuntimeError("munged did not start")
        procs.append(_spawn([_exe("slurmctld"), "-D", "-i", "-f", str(conf)], env))

        def answers() -> bool:
            out = subprocess.run([_exe("sinfo"), "-h", "-o", "%P"], env=env, capture_output=True, text=True)
            return out.returncode == 0 and bool(out.stdout.strip())

        if not _wait_for(answers, 40):
            log = root / "slurmctld.log"
            raise RuntimeError(
                "slurmctld did not come up:\n" + (log.read_text()[-3000:] if log.exists() else "")
            )
        yield env
    finally:
        _stop(procs)


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop the daemons this helper started, each by its own process group."""
    for p in reversed(procs):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def sbatch_test_only(
    script: Path, partition: str, env: dict[str, str], timeout_s: float = 30
) -> tuple[int, str]:
    """`sbatch --test-only -p PARTITION SCRIPT` from the script's folder: (exit code, output)."""
    out = subprocess.run(
        [_exe("sbatch"), "--test-only", "-p", partition, script.name],
        cwd=script.parent, env=env, capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    return out.returncode, (out.stdout + out.stderr).strip()
