# SPDX-License-Identifier: GPL-2.0-or-later
"""What works with select/cons_tres works with the plugin: core
reservations keep their cores on Kubernetes nodes, steered or not."""
import re
import subprocess

import pytest

from harness.alignment import job_allocations, parse_id_list
from harness.jobs import sbatch, show_job
from harness.wait import wait_for

SELECT_PLUGIN_CONS_TRES = 109


@pytest.fixture
def corecnt_scontrol(tmp_path):
    """scontrol that passes Slurm 22.05's client-side CoreCnt check.

    22.05's scontrol refuses CoreCnt= unless the select plugin id is
    cons_res's or cons_tres's, and 22.05's loader refuses a second plugin
    with id 109 (it loads every select plugin in PluginDir). slurmctld itself
    accepts the reservation; this shim only answers the client's question,
    so that what slurmctld and the plugin do with reserved cores is tested.
    """
    src = tmp_path / "corecnt_shim.c"
    src.write_text("#include <stdint.h>\n"
                   f"uint32_t slurmdb_setup_plugin_id_select(void) {{ return {SELECT_PLUGIN_CONS_TRES}; }}\n")
    lib = tmp_path / "corecnt_shim.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)

    def run(cluster, *args):
        env = cluster.env()
        env["LD_PRELOAD"] = str(lib)
        return subprocess.run(["scontrol", *args], env=env, capture_output=True, text=True,
                              timeout=60, check=True)
    return run


def test_reserved_cores_never_go_to_jobs_outside_the_reservation(k8s_cluster, corecnt_scontrol):
    node = "k8s-n3"
    corecnt_scontrol(k8s_cluster, "create", "reservation", "ReservationName=hold4", f"Nodes={node}",
                     "CoreCnt=4", "StartTime=now", "Duration=30", "Users=root")
    try:
        text = k8s_cluster.run("scontrol", "show", "reservation", "hold4").stdout
        m = re.search(r"CoreIDs=(\S+)", text)
        assert m, f"the reservation holds cores: {text}"
        reserved = set(parse_id_list(m.group(1)))
        assert len(reserved) == 4
        tpc = 2  # demo nodes: Slurm CPU id = core * 2 + thread
        # small jobs are steered to the engine's best cores, which the
        # engine must pick around the reservation's
        jobs = [sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", *opts, "--wrap", "sleep 60")
                for opts in (["-c2"], ["-c4"], ["-c2", "--gres=gpu:1"], ["-c8"], ["-c6"])]
        running = wait_for(lambda: {j: job_allocations(k8s_cluster, j) for j in jobs
                                    if show_job(k8s_cluster, j).get("JobState") == "RUNNING"} or None,
                           timeout=60, what="jobs running outside the reservation")
        for j, allocs in running.items():
            for a in allocs:
                cores = {c // tpc for c in a.cpu_ids}
                assert not cores & reserved, f"job {j} got reserved cores {sorted(cores & reserved)}"
        inside = sbatch(k8s_cluster, "-w", node, "--reservation=hold4", "-o", "/dev/null", "-n4",
                        "--wrap", "sleep 60")
        wait_for(lambda: show_job(k8s_cluster, inside).get("JobState") == "RUNNING", timeout=60,
                 what="the reservation's own job to run")
    finally:
        k8s_cluster.run("scancel", "--user", "root", check=False)
        k8s_cluster.run("scontrol", "delete", "reservation", "hold4", check=False)
