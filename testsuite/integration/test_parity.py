# SPDX-License-Identifier: GPL-2.0-or-later
"""What works with select/cons_tres works with the plugin: core
reservations keep their cores on Kubernetes nodes, steered or not."""
import json
import subprocess

import pytest

from harness import scenarios
from harness.alignment import format_id_list, job_allocations
from harness.jobs import sbatch, show_job
from harness.kube import kubectl
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
        if cluster.release.version == "22.05.8":
            env["LD_PRELOAD"] = str(lib)  # later releases need no shim
        res = subprocess.run(["scontrol", *args], env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, f"scontrol {' '.join(args)}: {res.stderr or res.stdout}"
        return res
    return run


def test_reserved_cores_never_go_to_jobs_outside_the_reservation(k8s_cluster, corecnt_scontrol):
    scenarios.reserved_cores_kept(k8s_cluster, lambda *args: corecnt_scontrol(k8s_cluster, *args))


def _hold_gpus(cluster, tmp_path, node, gpus):
    """A pod's claim holding these GPUs of a node, as kube-scheduler writes it."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "gpu-hog", "namespace": "default"},
             "spec": {"devices": {"requests": [
                 {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": len(gpus)}}]}}}
    path = tmp_path / "hog.json"
    path.write_text(json.dumps(claim))
    kubectl(cluster, "apply", "-f", str(path))
    results = [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{g}"} for g in gpus]
    status = {"status": {"allocation": {"devices": {"results": results}, "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}
    kubectl(cluster, "patch", "resourceclaim", "gpu-hog", "-n", "default", "--subresource=status",
            "--type=merge", "-p", json.dumps(status))
    idx = format_id_list(gpus)
    wait_for(lambda: f"IDX:{idx}" in cluster.run("scontrol", "-d", "show", "node", node).stdout,
             timeout=30, what="the pod's GPUs to be kept from Slurm")


def test_cpus_follow_gpus_that_span_sockets(k8s_cluster, tmp_path):
    """--cpus-per-gpu over GPUs on both sockets: as under cons_tres, every
    GPU's socket gets CPUs of the job (none stranded on the other socket).
    Pods hold GPUs 2,3,5,6,7 of k8s-n3: free are 0-1 (socket 0) and 4
    (socket 1), so a job of 3 GPUs spans both sockets."""
    from conftest import FIXTURES
    from harness import fixture as fixture_mod

    node = "k8s-n3"
    fxn = fixture_mod.load(str(FIXTURES / "demo.json")).node(node)
    numa_per_socket = fxn.numa_nodes // fxn.sockets
    core_socket = {c: numa // numa_per_socket for numa in range(fxn.numa_nodes)
                   for c in fxn.cores_of_numa(numa)}
    _hold_gpus(k8s_cluster, tmp_path, node, [2, 3, 5, 6, 7])
    j = None
    try:
        j = sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "--cpus-per-gpu=1", "--gpus-per-node=3", "-n3",
                   "--wrap", "sleep 60")
        wait_for(lambda: show_job(k8s_cluster, j).get("JobState") == "RUNNING", timeout=60,
                 what="the GPU job to run")
        (alloc,) = job_allocations(k8s_cluster, j)
        cpu_sockets = {core_socket[c // fxn.threads_per_core] for c in alloc.cpu_ids}
        gpu_sockets = {fxn.gpus[g].numa // numa_per_socket for g in alloc.gpu_idx}
        assert sorted(alloc.gpu_idx) == [0, 1, 4]
        assert gpu_sockets <= cpu_sockets, \
            f"GPUs {alloc.gpu_idx} on sockets {gpu_sockets}, CPUs {alloc.cpu_ids} on {cpu_sockets}"
    finally:
        if j:
            k8s_cluster.run("scancel", str(j), check=False)
        kubectl(k8s_cluster, "delete", "resourceclaim", "gpu-hog", "-n", "default", check=False)


def test_oversubscribed_cores_stay_claimed_while_any_job_uses_them(k8s_cluster):
    """OverSubscribe=FORCE: two jobs on the same cores. Each job's claims
    hold all its devices, so a shared CPU is named by both claims and stays
    out of Kubernetes until the last of those jobs ends; nothing about it is
    an error."""
    from harness.kube import claim_devices, cpu_ids_by_device, job_claims

    node = "k8s-n4"
    log = k8s_cluster.run_dir / "log" / "slurmctld.log"
    errors_before = log.read_text().count("error: select/k8s_cons_tres")
    k8s_cluster.run("scontrol", "update", "partitionname=main", "oversubscribe=FORCE:2")
    jobs = []
    try:
        # 40 CPUs each on a node of 64: the
        # second job can only share
        for _ in range(2):
            jobs.append(sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "-N1", "-n40", "--mem=16",
                               "--wrap", "sleep 120"))
        running = wait_for(lambda: all(show_job(k8s_cluster, j).get("JobState") == "RUNNING" for j in jobs)
                           and {j: job_allocations(k8s_cluster, j)[0] for j in jobs},
                           timeout=60, what="both jobs running")
        shared = set(running[jobs[0]].cpu_ids) & set(running[jobs[1]].cpu_ids)
        assert shared, f"the jobs share cores: {running}"
        cpu_ids = cpu_ids_by_device(k8s_cluster)

        def claimed(j):
            out = set()
            for c in job_claims(k8s_cluster, j):
                _, cpus, _ = claim_devices(c, cpu_ids)
                out.update(cpus)
            return out
        wait_for(lambda: all(claimed(j) == set(running[j].cpu_ids) for j in jobs), timeout=30,
                 what="both jobs' claims with all their CPUs")
        k8s_cluster.run("scancel", str(jobs[0]))
        wait_for(lambda: not job_claims(k8s_cluster, jobs[0]), timeout=30, what="the first job's claims to go")
        assert shared <= claimed(jobs[1]), "the shared CPUs stay claimed by the job still using them"
        assert log.read_text().count("error: select/k8s_cons_tres") == errors_before, \
            "sharing cores logs no error"
    finally:
        k8s_cluster.run("scancel", *[str(j) for j in jobs], check=False)
        k8s_cluster.run("scontrol", "update", "partitionname=main", "oversubscribe=NO")


def test_what_slurm_asks_of_the_select_plugins_name_and_id(k8s_cluster):
    """Slurm 22.05 decides some features by SelectType's name or the select
    plugin's answers; each must answer as for cons_tres:
    - gres_ctld.c / job_scheduler.c: "cons_tres" in SelectType allows GPU
      counts that differ by node (--gpus=3 over 2 nodes: 2 + 1);
    - gres.c: SELECT_CR_PLUGIN (forwarded to cons_tres) allows per-task and
      per-job GPU requests (--gpus-per-task, --gpus).
    (state_control.c's CoreCnt check is a client-side plugin id test that
    22.05 cannot satisfy; see test_reserved_cores_never_go_to_jobs_outside_the_reservation.)"""
    hetero = sbatch(k8s_cluster, "-N2", "--gpus=3", "-o", "/dev/null", "--wrap", "sleep 30")
    per_task = sbatch(k8s_cluster, "-n2", "--gpus-per-task=1", "-o", "/dev/null", "--wrap", "sleep 30")
    try:
        for j in (hetero, per_task):
            wait_for(lambda: show_job(k8s_cluster, j).get("JobState") == "RUNNING", timeout=60,
                     what=f"job {j} to run")
        gpus = sorted(len(a.gpu_idx) for a in job_allocations(k8s_cluster, hetero))
        assert gpus == [1, 2], f"--gpus=3 over 2 nodes: {gpus}"
        assert sum(len(a.gpu_idx) for a in job_allocations(k8s_cluster, per_task)) == 2
    finally:
        k8s_cluster.run("scancel", str(hetero), str(per_task), check=False)


def test_the_next_job_gets_the_devices_a_job_just_freed(k8s_cluster):
    """Right after a job ends, the next job_test sees its cores and GPUs
    free: job_fini updates what the engine counts as held by Slurm jobs,
    under the lock slurmctld already holds there. A job that waits for the
    first (afterany: its first job_test comes just after the first's
    job_fini) with the same shape on the same idle node gets exactly the
    first job's CPUs and GPUs, the node's best and, as under cons_tres, its
    first free ones. With a stale view the engine would count the first
    job's cores as busy and send the second to the next NUMA node.
    k8s-n4 has no pod holding anything."""
    node = "k8s-n4"
    shape = ["-w", node, "-N1", "-n1", "-c16", "--gpus-per-node=2", "-o", "/dev/null"]
    first = sbatch(k8s_cluster, *shape, "--wrap", "sleep 2")
    second = sbatch(k8s_cluster, *shape, f"--dependency=afterany:{first}", "--wrap", "sleep 60")
    try:
        a = wait_for(lambda: show_job(k8s_cluster, first).get("JobState") == "RUNNING"
                     and job_allocations(k8s_cluster, first), timeout=60, what="the first job to run")
        b = wait_for(lambda: show_job(k8s_cluster, second).get("JobState") == "RUNNING"
                     and job_allocations(k8s_cluster, second), timeout=60, what="the second job to run")
        assert (b[0].cpu_ids, b[0].gpu_idx) == (a[0].cpu_ids, a[0].gpu_idx), \
            f"first job {a}, the one right after it {b}"
        assert a[0].gpu_idx == [0, 1] and a[0].cpu_ids == list(range(16)), \
            f"the first job has NUMA node 0 and its GPUs: {a}"
    finally:
        k8s_cluster.run("scancel", str(first), str(second), check=False)
