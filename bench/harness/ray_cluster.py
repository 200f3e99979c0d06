"""A Ray cluster on loopback only, for tests and benchmarks (head, optionally one worker node).

Ray advertises the machine's LAN address unless told otherwise; test machines must talk to
127.0.0.0/8 only. ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` keeps the node IP at 127.0.0.1 and
``--node-ip-address=127.0.0.1`` binds to it. ``ray start`` clusters use token authentication, so
every process (CLI, driver) gets the same ``RAY_AUTH_MODE=token`` and a fresh ``RAY_AUTH_TOKEN``.
:func:`non_loopback_connections` lists any TCP connection a Ray process holds to another address.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from runners.llamacpp.server import free_loopback_port


@dataclass(frozen=True)
class LoopbackCluster:
    address: str
    env: dict[str, str]  # what a driver or CLI process needs to join it


_free_port = free_loopback_port


def _ray_cli() -> str:
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else (shutil.which("ray") or "ray")


@contextmanager
def loopback_cluster(num_cpus: int = 2, worker_node: bool = False) -> Iterator[LoopbackCluster]:
    port = _free_port()
    temp_dir = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short: Ray's socket paths have a length limit
    env = {
        **os.environ,
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    address = f"127.0.0.1:{port}"
    head = [
        _ray_cli(),
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--num-cpus={num_cpus}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
    ]
    try:
        subprocess.run(head, env=env, check=True, capture_output=True, text=True, timeout=120)
        if worker_node:
            worker = [_ray_cli(), "start", f"--address={address}", "--node-ip-address=127.0.0.1", "--num-cpus=1"]
            subprocess.run(worker, env=env, check=True, capture_output=True, text=True, timeout=120)
        yield LoopbackCluster(
            address,
            {
                k: env[k]
                for k in (
                    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
                    "RAY_AUTH_MODE",
                    "RAY_AUTH_TOKEN",
                    "RAY_USAGE_STATS_ENABLED",
                )
            },
        )
    finally:
        subprocess.run([_ray_cli(), "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _ray_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "ray::" in cmdline or "/ray/" in cmdline or "raylet" in cmdline or "gcs_server" in cmdline:
            pids.append(int(entry.name))
    return pids


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in (Path("/proc") / str(pid) / "fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _remote_is_loopback(hex_address: str) -> bool:
    host = hex_address.split(":")[0]
    if len(host) == 8:  # IPv4, little-endian
        return bytes.fromhex(host)[::-1][0] == 127
    raw = bytes.fromhex(host)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    if words == b"\0" * 15 + b"\1":
        return True  # ::1
    if words[:12] == b"\0" * 10 + b"\xff\xff":
        return words[12] == 127  # ::ffff:127.x.x.x
    return False


def non_loopback_connections() -> list[str]:
    """TCP connections held by Ray processes whose other end is not on 127.0.0.0/8 or ::1."""
    inodes = set().union(*(_socket_inodes(pid) for pid in _ray_pids()))
    bad = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if inode in inodes and state != "0A" and not _remote_is_loopback(remote):  # 0A: LISTEN
                bad.append(f"{table}: {local} -> {remote} (state {state})")
    return bad
