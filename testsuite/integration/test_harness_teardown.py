# SPDX-License-Identifier: GPL-2.0-or-later
"""The harness finds a run's slurmstepd at teardown although its process
title has overwritten the environment that carried the run mark."""
import shutil
import subprocess
import sys
from pathlib import Path

TESTSUITE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTSUITE))

from harness.cluster import marked_processes  # noqa: E402


def _stepd_holding(tmp_path: Path, run_dir: Path) -> subprocess.Popen:
    # a process named slurmstepd, without the run mark, with its log open
    # under run_dir, as a real stepd after setproctitle
    exe = tmp_path / "slurmstepd"
    shutil.copy("/bin/sleep", exe)
    log = run_dir / "log" / "slurmd.node1.log"
    log.parent.mkdir(parents=True)
    with open(log, "a") as f:
        return subprocess.Popen([str(exe), "60"], stdout=f, env={})


def test_a_stepd_without_the_mark_is_found_by_its_open_files(tmp_path):
    run_dir = tmp_path / "run"
    other = tmp_path / "run-other"
    other.mkdir()
    p = _stepd_holding(tmp_path, run_dir)
    try:
        assert p.pid in marked_processes(run_dir.resolve())
        assert p.pid not in marked_processes(other.resolve())
    finally:
        p.kill()
        p.wait()


def test_another_program_with_files_there_is_not_a_stepd(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "log").mkdir(parents=True)
    with open(run_dir / "log" / "x.log", "a") as f:
        p = subprocess.Popen(["/bin/sleep", "60"], stdout=f, env={})
    try:
        assert p.pid not in marked_processes(run_dir.resolve())
    finally:
        p.kill()
        p.wait()
