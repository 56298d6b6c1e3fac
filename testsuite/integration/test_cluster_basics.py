# SPDX-License-Identifier: GPL-2.0-or-later
"""The plugin loads into the real slurmctld 22.05.8 and jobs run through it."""
import re

from harness.cluster import marked_processes
from harness.jobs import sbatch, wait_job


def test_select_type_is_ours(demo_cluster):
    out = demo_cluster.run("scontrol", "show", "config").stdout
    assert re.search(r"^SelectType\s+=\s+select/k8s_cons_tres$", out, re.M), out


def test_init_log_line(demo_cluster):
    log = (demo_cluster.run_dir / "log" / "slurmctld.log").read_text()
    assert re.search(r"select/k8s_cons_tres: starting in slurmctld, wrapping select/cons_tres", log)
    assert "select/k8s_cons_tres: core " in log and " started" in log
    assert "error: select/k8s_cons_tres" not in log


def test_sbatch_completes_on_every_node(demo_cluster):
    nodes = demo_cluster.state()["nodes"]
    jobs = {}
    for node in nodes:
        out = demo_cluster.run_dir / f"hostname-{node}.out"
        jobs[node] = (sbatch(demo_cluster, "-w", node, "-o", str(out), "--wrap", "hostname"), out)
    for node, (job_id, out) in jobs.items():
        job = wait_job(demo_cluster, job_id)
        assert job["JobState"] == "COMPLETED", job
        assert job["NodeList"] == node
        assert out.read_text().strip() != ""


def test_srun_four_tasks(demo_cluster):
    res = demo_cluster.run("srun", "-n4", "hostname", timeout=120)
    assert len(res.stdout.strip().splitlines()) == 4, res.stdout


def test_gpu_job_gets_gpus(demo_cluster):
    out = demo_cluster.run_dir / "gpu.out"
    job_id = sbatch(demo_cluster, "-c4", "--gres=gpu:2", "-o", str(out),
                    "--wrap", "echo CUDA=$CUDA_VISIBLE_DEVICES")
    job = wait_job(demo_cluster, job_id)
    assert job["JobState"] == "COMPLETED", job
    m = re.search(r"CUDA=(\d+),(\d+)", out.read_text())
    assert m, out.read_text()


def test_pending_job_is_not_rejected(demo_cluster):
    """A job that does not fit now but could later stays pending, not refused."""
    nodes = demo_cluster.state()["nodes"]
    blocker = sbatch(demo_cluster, "-w", nodes[0], "--exclusive", "-o", "/dev/null", "--wrap", "sleep 30")
    wait_job(demo_cluster, blocker, states={"RUNNING"})
    waiter = sbatch(demo_cluster, "-w", nodes[0], "-c2", "-o", "/dev/null", "--wrap", "true")
    job = wait_job(demo_cluster, waiter, states={"PENDING"}, timeout=20)
    assert job["Reason"] in ("Resources", "Priority", "None"), job
    demo_cluster.run("scancel", str(blocker))
    assert wait_job(demo_cluster, waiter)["JobState"] == "COMPLETED"


def test_asymmetric_fixture_and_clean_down(cluster_factory):
    c = cluster_factory("asymmetric.json")
    assert sorted(c.node_states()) == ["asym-a", "asym-b", "asym-c"]
    node = c.run("scontrol", "show", "node", "asym-b").stdout
    assert "CoresPerSocket=12" in node and "ThreadsPerCore=1" in node, node
    job_id = sbatch(c, "-w", "asym-b", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "true")
    assert wait_job(c, job_id)["JobState"] == "COMPLETED"
    assert marked_processes(c.run_dir), "the cluster's processes should carry the run mark"
    c.down()
    assert marked_processes(c.run_dir) == []
    assert c.status()["processes"] == {}  # pid files gone with the processes
