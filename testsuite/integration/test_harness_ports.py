# SPDX-License-Identifier: GPL-2.0-or-later
"""The harness's listening ports (harness/ports.py): outside the kernel's
ephemeral range, and never handed to two harness processes at once."""
import subprocess
import sys
from pathlib import Path

TESTSUITE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTSUITE))

from harness import ports  # noqa: E402

PICK = ("import sys, time; sys.path.insert(0, sys.argv[1]); from harness.ports import free_ports; "
        "print(*free_ports(int(sys.argv[2])), flush=True); sys.stdin.read()")


def test_ports_are_below_the_ephemeral_range():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    got = ports.free_ports(20)
    assert len(set(got)) == 20
    assert all(1024 <= p < low for p in got), got


def test_processes_never_share_a_port():
    # 8 processes, each holding 400 of the ~12,000 ports: random picks would
    # collide almost surely without the reservation
    procs = [subprocess.Popen([sys.executable, "-c", PICK, str(TESTSUITE), "400"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(8)]
    try:
        picked = [set(map(int, p.stdout.readline().split())) for p in procs]
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=30)
    assert all(len(s) == 400 for s in picked)
    assert len(set().union(*picked)) == 8 * 400


def test_a_port_is_free_again_once_its_process_ended():
    p = subprocess.run([sys.executable, "-c", PICK.replace("sys.stdin.read()", "pass"),
                        str(TESTSUITE), "1"], capture_output=True, text=True, timeout=30, check=True)
    port = int(p.stdout.split()[0])
    assert ports._reserve(port)
