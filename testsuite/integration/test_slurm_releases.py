# SPDX-License-Identifier: GPL-2.0-or-later
"""Every Slurm release the harness knows (harness/slurm_release.py) comes up on
loopback and runs jobs: its own slurmctld, slurmd and commands, with plain
select/cons_tres (the plugin in those releases: test_releases_plugin.py).

A release without a cached build (build-aux/slurm-release.sh VERSION) is
skipped, unless K8S_REQUIRE_SLURM_RELEASES=1 (set by run-tests, which builds
them first) makes that a failure.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness import slurm_release
from harness.jobs import sbatch, wait_job
from conftest import release_unavailable


@pytest.mark.parametrize("version", slurm_release.RELEASES)
def test_release_runs_a_job_on_every_node(cluster_factory, version):
    release = slurm_release.get(version)
    if not release.built():
        release_unavailable(release.version, release.not_built_reason())
    c = cluster_factory("demo.json", select="cons_tres", kubernetes=False, slurm=version)

    # The daemons are this release's, and so is the scontrol that asks.
    for name, pid in c._pids().items():
        exe = Path(os.readlink(f"/proc/{pid}/exe"))
        assert exe.name.startswith(name.split(".")[0]), f"{name} runs {exe}"  # Debian: slurmctld-wlm
        if release.private:
            assert exe.parent == (release.prefix / "sbin").resolve(), f"{name} runs {exe}"
    config = c.run("scontrol", "show", "config").stdout
    assert re.search(rf"^SLURM_VERSION\s+=\s+{re.escape(version)}$", config, re.M), config
    assert re.search(r"^SelectType\s+=\s+select/cons_tres$", config, re.M), config

    # A batch job with a GPU on each node (gres.conf as this release takes it),
    # then one step over all nodes (slurmstepd, cred/none).
    nodes = c.state()["nodes"]
    jobs = {node: sbatch(c, "-w", node, "--gres=gpu:1", "-o", str(c.run_dir / f"{node}.out"),
                         "--wrap", "echo $SLURMD_NODENAME gpu=$CUDA_VISIBLE_DEVICES")
            for node in nodes}
    for node, job_id in jobs.items():
        job = wait_job(c, job_id)
        assert job["JobState"] == "COMPLETED" and job["NodeList"] == node, job
        out = (c.run_dir / f"{node}.out").read_text().split()
        assert out[0] == node and re.fullmatch(r"gpu=\d", out[1]), out
    res = c.run("srun", f"-N{len(nodes)}", "bash", "-c", "echo $SLURMD_NODENAME", timeout=120)
    assert sorted(res.stdout.split()) == sorted(nodes), res.stdout


def test_harness_and_build_script_know_the_same_releases():
    script = Path(slurm_release.__file__).resolve().parents[2] / "build-aux" / "slurm-release.sh"
    listed = subprocess.run([str(script), "--list"], capture_output=True, text=True, check=True).stdout
    assert tuple(listed.split()) == slurm_release.PRIVATE
