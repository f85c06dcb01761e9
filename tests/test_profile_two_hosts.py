"""`rightsize profile comms` across two "hosts": two network namespaces made by the test,
joined by a veth pair, each with its own host name (UTS namespace); two ranks on the first,
one on the second. The ranks
take rank, world size and rendezvous from torchrun's variables; traffic between the hosts
crosses a real network interface. Both tiers come back: the world (inter-node) and the
first host's ranks (intra-node), merged by rank 0 into one profile that calibrates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rightsize.profile.calibrate import _fit_comms, catalog_hardware

ROOT = Path(__file__).resolve().parents[1]
NS = (f"rs-a-{os.getpid()}", f"rs-b-{os.getpid()}")
ADDR = ("10.77.0.1", "10.77.0.2")


def _can_make_namespaces() -> str | None:
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        return "needs root with `ip` and `unshare` to make network namespaces"
    probe = subprocess.run(["ip", "netns", "add", f"rs-probe-{os.getpid()}"], capture_output=True)
    if probe.returncode != 0:
        return f"network namespaces unavailable here: {probe.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", f"rs-probe-{os.getpid()}"], check=False)
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed: pip install 'rightsize[profile]'"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def two_hosts():  # type: ignore[no-untyped-def]
    veth = (f"rsva{os.getpid() % 100000}", f"rsvb{os.getpid() % 100000}")
    try:
        for ns in NS:
            _ip("netns", "add", ns)
        _ip("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
        for ns, dev, addr in zip(NS, veth, ADDR, strict=True):
            _ip("link", "set", dev, "netns", ns)
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield veth
    finally:
        for ns in NS:
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


@pytest.mark.skipif(_can_make_namespaces() is not None, reason=str(_can_make_namespaces()))
def test_comms_across_two_namespaced_hosts(two_hosts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "comms.jsonl"
    procs = []
    for rank in range(3):  # two ranks on host a (the intra-node tier), one on host b
        host = 0 if rank < 2 else 1
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "RANK": str(rank), "WORLD_SIZE": "3", "LOCAL_RANK": str(rank % 2), "LOCAL_WORLD_SIZE": str(2 - host),
            "MASTER_ADDR": ADDR[0], "MASTER_PORT": "29611", "GLOO_SOCKET_IFNAME": two_hosts[host],
            "OMP_NUM_THREADS": "1",
        }  # fmt: skip
        cmd = [sys.executable, "-m", "rightsize.cli.main", "profile", "comms", "--sizes", "4096,262144",
               "--iters", "2", "--out", str(out), "--format", "json", "-o", str(tmp_path / f"r{rank}.json")]  # fmt: skip
        wrapped = ["ip", "netns", "exec", NS[host], "unshare", "--uts", "sh", "-c",
                   f'hostname host{"ab"[host]} && exec "$@"', "sh", *cmd]  # fmt: skip
        procs.append(
            subprocess.Popen(wrapped, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("the ranks did not finish in 240 s")
    assert all(p.returncode == 0 for p in procs), "\n".join(x[-1500:] for x in logs)
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert recs[0]["type"] == "header" and recs[0]["config"]["hosts"] == ["hosta", "hostb"]
    res = [r for r in recs if r.get("type") == "result"]
    tiers = {(r["tier"], r["world_size"], r["hosts"]) for r in res}
    assert tiers == {("inter_node", 3, 2), ("intra_node", 2, 1)}
    for tier in ("inter_node", "intra_node"):
        assert {r["op"] for r in res if r["tier"] == tier} == {
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "all_to_all",
            "p2p",
        }
    assert all(len(r["per_rank_time_s"]) == r["world_size"] for r in res)
    fit = _fit_comms(catalog_hardware("NVIDIA H100 80GB HBM3", "bf16"), res)
    assert set(fit["tiers"]) == {"inter_node", "intra_node"}
    assert all(t["bus_bytes_per_s"] > 0 for t in fit["tiers"].values())
    assert "scaleout_bw_fraction" in fit["overrides"] and "scaleup_bw_fraction" in fit["overrides"]
