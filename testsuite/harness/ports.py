# SPDX-License-Identifier: GPL-2.0-or-later
"""Listening ports for the harness's daemons.

A port the kernel hands out for bind(0) comes from the ephemeral range, the
same range every outgoing connection (slurmctld's RPCs, srun, curl) takes its
local port from, and between the pick and the daemon's own bind another
cluster's connection can take it: slurmd then fails with "Address already in
use" (seen with two slurm-suite runs side by side). So ports come from below
the ephemeral range, where no connection lands, and each is reserved against
other harness processes by a lock on a file that this process holds until
it exits (the kernel drops the lock with the process: nothing goes stale).
"""
import fcntl
import random
import resource
import socket
import tempfile
from pathlib import Path

LOCK_DIR = Path(tempfile.gettempdir()) / "k8s-cons-tres-ports"
_held = {}  # port -> open lock file, for the life of the process


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _range() -> tuple:
    high = min(_ephemeral_low(), 65536) - 1
    return max(1024, high - 12000), high


def _reserve(port: int) -> bool:
    LOCK_DIR.mkdir(mode=0o1777, exist_ok=True)
    f = open(LOCK_DIR / str(port), "a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return False
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            f.close()
            return False
    _held[port] = f
    return True


def _fd_headroom():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and len(_held) + 64 > soft and (hard == resource.RLIM_INFINITY or soft < hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_ports(n: int) -> list:
    """n distinct TCP ports free on loopback, outside the ephemeral range and
    held for this process alone."""
    low, high = _range()
    _fd_headroom()
    rng = random.SystemRandom()
    out = []
    for _ in range(50 * n + 1000):
        if len(out) == n:
            return out
        port = rng.randint(low, high)
        if port not in _held and _reserve(port):
            out.append(port)
    raise RuntimeError(f"no {n} free ports in {low}-{high}")
