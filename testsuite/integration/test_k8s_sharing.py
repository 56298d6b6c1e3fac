# SPDX-License-Identifier: GPL-2.0-or-later
"""Slurm jobs and Kubernetes pods on the same nodes, through the real
slurmctld, slurmd, the test API server and kubectl: what pods hold is never
given to a job, jobs land topology-aware, and each job's devices are posted
as ResourceClaims that go away with the job."""
import json
import re

import pytest

from harness import fixture as fixture_mod
from harness import scenarios
from harness.alignment import describe, gres_used_idx, job_allocations, running_allocations
from harness.jobs import sbatch, wait_job
from harness.kube import claim_devices, cpu_ids_by_device, job_claims, kubectl
from harness.wait import wait_for
from conftest import FIXTURES

DEMO = FIXTURES / "demo.json"
# Releases whose slurmctld exits on `scontrol update jobid=B numnodes=0`
# (job expansion), under select/cons_tres as well: checked by hand with
# cons_tres on loopback, the daemon is gone without a log line.
EXPANSION_KILLS_SLURMCTLD = {"26.05.3"}


@pytest.fixture(scope="module")
def fx():
    return fixture_mod.load(str(DEMO))


@pytest.fixture(autouse=True)
def no_jobs_left(request):
    """Every test starts and ends with no job and no job claim."""
    yield
    cluster = request.getfixturevalue("k8s_cluster") if "k8s_cluster" in request.fixturenames else None
    if cluster is None:
        return
    cluster.run("scancel", "--user", "root", check=False)
    wait_for(lambda: not cluster.run("squeue", "-h", "-t", "PD,R,CG", check=False).stdout.strip(),
             timeout=60, what="all jobs to end")
    wait_for(lambda: not job_claims(cluster), timeout=30, what="job claims to be deleted")


def test_pod_held_cpus_and_gpus_never_go_to_jobs(k8s_cluster):
    scenarios.pod_held_never_given(k8s_cluster)


def test_claims_hold_exactly_the_jobs_devices(k8s_cluster):
    scenarios.claims_equal_allocations(k8s_cluster)


def test_claims_labelled_for_cluster_job_user_node(k8s_cluster):
    j = sbatch(k8s_cluster, "-w", "k8s-n3", "-o", "/dev/null", "-c2", "--wrap", "sleep 60")
    wait_job(k8s_cluster, j, states={"RUNNING"})
    claims = wait_for(lambda: job_claims(k8s_cluster, j), timeout=30, what="the job's claim")
    labels = claims[0]["metadata"]["labels"]
    assert labels["k8s-cons-tres.slurm.io/job-id"] == str(j)
    assert labels["k8s-cons-tres.slurm.io/node"] == "k8s-n3"
    assert labels["k8s-cons-tres.slurm.io/user"] == "root"
    assert labels["k8s-cons-tres.slurm.io/cluster"]
    # an admin finds them with kubectl by label
    out = kubectl(k8s_cluster, "get", "resourceclaims", "-n", "slurm", "-l",
                  f"k8s-cons-tres.slurm.io/job-id={j}", "-o", "name").stdout
    assert out.strip() == f"resourceclaim.resource.k8s.io/{claims[0]['metadata']['name']}"


def test_claims_go_away_when_jobs_end_are_cancelled_or_requeued(k8s_cluster):
    done = sbatch(k8s_cluster, "-o", "/dev/null", "-c2", "--wrap", "sleep 3")
    cancelled = sbatch(k8s_cluster, "-o", "/dev/null", "-c2", "--wrap", "sleep 120")
    requeued = sbatch(k8s_cluster, "-o", "/dev/null", "-c2", "--requeue", "--hold", "--wrap", "sleep 120")
    k8s_cluster.run("scontrol", "release", str(requeued))
    for j in (cancelled, requeued):
        wait_job(k8s_cluster, j, states={"RUNNING"})
        wait_for(lambda j=j: job_claims(k8s_cluster, j), timeout=30, what=f"claims of job {j}")
    wait_job(k8s_cluster, done, states={"COMPLETED"})
    wait_for(lambda: not job_claims(k8s_cluster, done), timeout=30, what="claims of the finished job to go")
    k8s_cluster.run("scancel", str(cancelled))
    wait_for(lambda: not job_claims(k8s_cluster, cancelled), timeout=30, what="claims of the cancelled job to go")
    k8s_cluster.run("scontrol", "requeuehold", str(requeued))
    wait_for(lambda: not job_claims(k8s_cluster, requeued), timeout=30, what="claims of the requeued job to go")


def test_more_than_32_cpus_are_split_over_claims(k8s_cluster):
    j = sbatch(k8s_cluster, "-w", "k8s-n3", "-o", "/dev/null", "-c40", "--wrap", "sleep 60")
    wait_job(k8s_cluster, j, states={"RUNNING"})
    claims = wait_for(lambda: (c := job_claims(k8s_cluster, j)) and len(c) >= 2 and c, timeout=30,
                      what="the split claims")
    sizes = sorted(len(c["status"]["allocation"]["devices"]["results"]) for c in claims)
    assert all(s <= 32 for s in sizes)
    assert sum(sizes) == 40
    assert len(claims) == 2


def test_alignment_on_an_idle_node(k8s_cluster, fx):
    """On nodes with room, CPUs fill the fewest NUMA nodes and GPUs sit on them."""
    cases = [("k8s-n3", ["-c16"], 1), ("k8s-n1", ["-c4", "--gres=gpu:1"], 1),
             ("k8s-n2", ["-c8", "--gres=gpu:2"], 1)]
    for node, opts, numas in cases:
        j = sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", *opts, "--wrap", "sleep 60")
        wait_job(k8s_cluster, j, states={"RUNNING"})
        (a,) = job_allocations(k8s_cluster, j)
        d = describe(fx.node(node), a)
        assert len(d["cpu_numas"]) == numas, f"{opts} on {node}: CPUs on NUMA {d['cpu_numas']}"
        assert d["gpus_aligned"], f"{opts} on {node}: GPUs on NUMA {d['gpu_numas']}, CPUs {d['cpu_numas']}"


def test_pods_taking_and_releasing_devices_during_the_run(k8s_cluster, tmp_path):
    """A pod claim made now keeps its devices from the next jobs; deleting it
    gives them back."""
    node = "k8s-n3"
    claim = tmp_path / "claim.yaml"
    cpu_dev = {v: k[1] for k, v in cpu_ids_by_device(k8s_cluster).items() if k[0] == node}
    taken = list(range(16, 32))  # NUMA node 1 of k8s-n3
    results = ",".join(f'{{"request":"cpu","driver":"dra.cpu","pool":"{node}","device":"{cpu_dev[c]}"}}'
                       for c in taken)
    claim.write_text(f"""{{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
 "metadata":{{"name":"late-pod","namespace":"default"}},
 "spec":{{"devices":{{"requests":[{{"name":"cpu","exactly":{{"deviceClassName":"dra.cpu","count":{len(taken)}}}}},
   {{"name":"gpu","exactly":{{"deviceClassName":"gpu.nvidia.com","count":2}}}}]}}}}}}""")
    kubectl(k8s_cluster, "apply", "-f", str(claim))
    status = (f'{{"status":{{"allocation":{{"devices":{{"results":[{results},'
              f'{{"request":"gpu","driver":"gpu.nvidia.com","pool":"{node}","device":"gpu-2"}},'
              f'{{"request":"gpu","driver":"gpu.nvidia.com","pool":"{node}","device":"gpu-3"}}]}},'
              f'"nodeSelector":{{"nodeSelectorTerms":[{{"matchFields":[{{"key":"metadata.name",'
              f'"operator":"In","values":["{node}"]}}]}}]}}}}}}}}')
    kubectl(k8s_cluster, "patch", "resourceclaim", "late-pod", "-n", "default", "--subresource=status",
            "--type=merge", "-p", status)
    wait_for(lambda: "IDX:2-3" in k8s_cluster.run("scontrol", "-d", "show", "node", node).stdout,
             timeout=30, what="the pod's GPUs to be kept from Slurm")
    jobs = [sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "-c8", "--gres=gpu:1", "--wrap", "sleep 60")
            for _ in range(4)]
    for j in jobs:
        wait_job(k8s_cluster, j, states={"RUNNING", "PENDING"})
    for j, allocs in running_allocations(k8s_cluster, jobs).items():
        for a in allocs:
            assert not set(a.cpu_ids) & set(taken), f"job {j} got CPUs the late pod holds"
            assert not {2, 3} & set(a.gpu_idx), f"job {j} got GPUs the late pod holds"
    kubectl(k8s_cluster, "delete", "resourceclaim", "late-pod", "-n", "default")
    wait_for(lambda: "IDX:2-3" not in k8s_cluster.run("scontrol", "-d", "show", "node", node).stdout,
             timeout=30, what="the pod's GPUs to return to Slurm")


def test_admin_view_file_shows_free_and_held_devices(k8s_cluster):
    scenarios.admin_view_file(k8s_cluster)


def test_claims_go_away_when_the_node_fails(k8s_cluster):
    j = sbatch(k8s_cluster, "-w", "k8s-n4", "-o", "/dev/null", "-c4", "--no-requeue", "--wrap", "sleep 120")
    wait_job(k8s_cluster, j, states={"RUNNING"})
    wait_for(lambda: job_claims(k8s_cluster, j), timeout=30, what="the job's claim")
    k8s_cluster.run("scontrol", "update", "nodename=k8s-n4", "state=down", "reason=test node failure")
    try:
        wait_job(k8s_cluster, j, states={"NODE_FAIL", "FAILED", "CANCELLED"})
        wait_for(lambda: not job_claims(k8s_cluster, j), timeout=30, what="the failed node's claims to go")
    finally:
        # ReturnToService may have brought it back already
        k8s_cluster.run("scontrol", "update", "nodename=k8s-n4", "state=resume", check=False)
        wait_for(lambda: k8s_cluster.node_states().get("k8s-n4", "").startswith("idle"), timeout=60,
                 what="k8s-n4 back")


def test_claims_follow_a_job_that_shrinks(k8s_cluster):
    j = sbatch(k8s_cluster, "-N2", "--ntasks-per-node=1", "-c2", "-o", "/dev/null", "--wrap", "sleep 120")
    wait_job(k8s_cluster, j, states={"RUNNING"})
    nodes = {c["metadata"]["labels"]["k8s-cons-tres.slurm.io/node"]
             for c in wait_for(lambda: len(job_claims(k8s_cluster, j)) == 2 and job_claims(k8s_cluster, j),
                               timeout=30, what="claims on both nodes")}
    # NodeList=, not NumNodes=: 25.11 and later refuse NumNodes= on a
    # running job ("no longer pending"), under cons_tres too
    keep = sorted(nodes)[0]
    k8s_cluster.run("scontrol", "update", f"jobid={j}", f"nodelist={keep}")
    kept = wait_for(lambda: (a := job_allocations(k8s_cluster, j)) and len(a) == 1 and a[0], timeout=30,
                    what="the job to shrink to one node")
    assert kept.node == keep

    def one_claim_on_kept_node():
        claims = job_claims(k8s_cluster, j)
        return len(claims) == 1 and claims[0]["metadata"]["labels"]["k8s-cons-tres.slurm.io/node"] == kept.node
    wait_for(one_claim_on_kept_node, timeout=60, what="only the kept node's claim to remain")


def test_claims_follow_a_job_that_grows(k8s_cluster):
    """Job expansion: B's devices become A's, and A's claims hold exactly
    what Slurm then records for A (B's claims go)."""
    if k8s_cluster.release.version in EXPANSION_KILLS_SLURMCTLD:
        pytest.skip(f"Slurm {k8s_cluster.release.version}'s slurmctld exits on job expansion under "
                    "select/cons_tres too (scontrol: Unexpected message received)")
    a = sbatch(k8s_cluster, "-w", "k8s-n1", "-c2", "-o", "/dev/null", "--wrap", "sleep 120")
    wait_job(k8s_cluster, a, states={"RUNNING"})
    # the job that gives its devices away must have no step: an allocation
    out = k8s_cluster.run("salloc", "--no-shell", "-w", "k8s-n2", "-c2", f"--dependency=expand:{a}",
                          timeout=60)
    b = int(re.search(r"Granted job allocation (\d+)", out.stderr + out.stdout).group(1))
    wait_job(k8s_cluster, b, states={"RUNNING"})
    wait_for(lambda: job_claims(k8s_cluster, a) and job_claims(k8s_cluster, b), timeout=30,
             what="claims of both jobs")
    before = sum(len(x.cpu_ids) for x in job_allocations(k8s_cluster, a))
    k8s_cluster.run("scontrol", "update", f"jobid={b}", "numnodes=0")
    grown = wait_for(lambda: (al := job_allocations(k8s_cluster, a)) and
                     sum(len(x.cpu_ids) for x in al) > before and al,
                     timeout=30, what="job A to hold B's CPUs")
    cpu_ids = cpu_ids_by_device(k8s_cluster)
    want = {x.node: sorted(x.cpu_ids) for x in grown}

    def claims_equal_a():
        per_node = {}
        for c in job_claims(k8s_cluster, a):
            node, cpus, _ = claim_devices(c, cpu_ids)
            per_node.setdefault(node, []).extend(cpus)
        return not job_claims(k8s_cluster, b) and {n: sorted(c) for n, c in per_node.items()} == want
    wait_for(claims_equal_a, timeout=60, what=f"A's claims to equal Slurm's record {want} and B's to go")


def tenant_claim(cluster, tmp_path, name, labels, node, results):
    """A claim in the tenant namespace ml-team with these labels, allocated
    as kube-scheduler would: exactly `results` on `node`."""
    count = {d: sum(1 for r in results if r["request"] == d) for d in ("cpu", "gpu")}
    classes = {"cpu": "dra.cpu", "gpu": "gpu.nvidia.com"}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": "ml-team", "labels": labels},
             "spec": {"devices": {"requests": [
                 {"name": d, "exactly": {"deviceClassName": classes[d], "count": n}}
                 for d, n in count.items() if n]}}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(claim))
    kubectl(cluster, "create", "namespace", "ml-team", check=False)
    kubectl(cluster, "apply", "-f", str(path))
    status = {"status": {"allocation": {"devices": {"results": results}, "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}
    kubectl(cluster, "patch", "resourceclaim", name, "-n", "ml-team", "--subresource=status",
            "--type=merge", "-p", json.dumps(status))


def test_a_tenant_claim_with_the_plugins_labels_frees_nothing(k8s_cluster, tmp_path):
    """A tenant copies a running job's claim labels onto a claim in their
    own namespace: its devices stay the pod's, kept from every job."""
    node = "k8s-n3"
    job = sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "-c2", "--wrap", "sleep 120")
    wait_job(k8s_cluster, job, states={"RUNNING"})
    real = wait_for(lambda: job_claims(k8s_cluster, job), timeout=30, what=f"claims of job {job}")
    labels = real[0]["metadata"]["labels"]
    mine = {a.node: set(a.cpu_ids) for a in job_allocations(k8s_cluster, job)}[node]
    cpu_dev = {v: k[1] for k, v in cpu_ids_by_device(k8s_cluster).items() if k[0] == node}
    taken = [c for c in range(16, 32) if c not in mine]  # NUMA node 1, never the job's own
    results = [{"request": "cpu", "driver": "dra.cpu", "pool": node, "device": cpu_dev[c]} for c in taken]
    results += [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{g}"}
                for g in (2, 3)]
    try:
        tenant_claim(k8s_cluster, tmp_path, "spoof", labels, node, results)
        wait_for(lambda: "IDX:2-3" in k8s_cluster.run("scontrol", "-d", "show", "node", node).stdout,
                 timeout=30, what="the spoofed claim's GPUs to be kept from Slurm")
        jobs = [sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "-c8", "--gres=gpu:1", "--wrap", "sleep 60")
                for _ in range(4)]
        running = wait_for(lambda: running_allocations(k8s_cluster, jobs), timeout=60,
                           what="jobs running beside the spoofed claim")
        for j, allocs in running.items():
            for a in allocs:
                assert not set(a.cpu_ids) & set(taken), f"job {j} got CPUs of the spoofed claim"
                assert not {2, 3} & set(a.gpu_idx), f"job {j} got GPUs of the spoofed claim"
    finally:
        kubectl(k8s_cluster, "delete", "resourceclaim", "spoof", "-n", "ml-team", check=False)
    wait_for(lambda: "IDX:2-3" not in k8s_cluster.run("scontrol", "-d", "show", "node", node).stdout,
             timeout=30, what="the spoofed claim's GPUs to return to Slurm")



def test_a_tenant_claim_copying_a_running_jobs_devices_keeps_them_after_the_job(k8s_cluster, tmp_path):
    """A tenant claim with the plugin's labels naming a subset of a running
    job's own devices (one of its CPUs and its GPU): the job's end neither
    deletes it nor frees its devices; they stay the pod's and no later job
    gets them. Without the one ownership rule the claim would pass for the
    job's and go with it."""
    node = "k8s-n3"
    job = sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "-c2", "--gres=gpu:1", "--wrap", "sleep 300")
    wait_job(k8s_cluster, job, states={"RUNNING"})
    real = wait_for(lambda: job_claims(k8s_cluster, job), timeout=30, what=f"claims of job {job}")
    labels = real[0]["metadata"]["labels"]
    mine = {a.node: a for a in job_allocations(k8s_cluster, job)}[node]
    assert len(mine.gpu_idx) == 1, mine
    gpu, cpu = mine.gpu_idx[0], sorted(mine.cpu_ids)[0]
    cpu_dev = {v: k[1] for k, v in cpu_ids_by_device(k8s_cluster).items() if k[0] == node}
    results = [{"request": "cpu", "driver": "dra.cpu", "pool": node, "device": cpu_dev[cpu]},
               {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{gpu}"}]
    log = k8s_cluster.run_dir / "log" / "slurmctld.log"
    try:
        tenant_claim(k8s_cluster, tmp_path, "copycat", labels, node, results)
        # while the job runs both hold them: told, never a silent union
        wait_for(lambda: f"pod claim ml-team/copycat holds a device of Slurm job {job}" in log.read_text(),
                 timeout=30, what="the overlap to be logged")
        k8s_cluster.run("scancel", str(job))
        wait_for(lambda: not k8s_cluster.run("squeue", "-h", "-j", str(job), check=False).stdout.strip(),
                 timeout=60, what=f"job {job} to end")
        # the job's end took its own claims, not the tenant's, and freed nothing of it
        wait_for(lambda: not job_claims(k8s_cluster, job), timeout=30, what=f"job {job}'s claims to go")
        assert kubectl(k8s_cluster, "get", "resourceclaim", "copycat", "-n", "ml-team", check=False).returncode == 0
        wait_for(lambda: gpu in gres_used_idx(k8s_cluster, node), timeout=30,
                 what=f"GPU {gpu} to stay held for the tenant's claim")
        jobs = [sbatch(k8s_cluster, "-w", node, "-o", "/dev/null", "-c2", "--gres=gpu:1", "--wrap", "sleep 60")
                for _ in range(3)]
        running = wait_for(lambda: len(running_allocations(k8s_cluster, jobs)) == 3 and
                           running_allocations(k8s_cluster, jobs), timeout=60,
                           what="later jobs running beside the tenant's claim")
        for j, allocs in running.items():
            for a in allocs:
                assert gpu not in a.gpu_idx, f"job {j} got GPU {gpu} of the tenant's claim"
                assert cpu not in a.cpu_ids, f"job {j} got CPU {cpu} of the tenant's claim"
    finally:
        kubectl(k8s_cluster, "delete", "resourceclaim", "copycat", "-n", "ml-team", check=False)


def test_pod_gpus_stay_out_until_slurm_can_mark_them(cluster_factory):
    """After a slurmctld restart, a node's GPUs cannot be held by index
    until its slurmd registers: the GPU a pod holds there (gpu-0 on k8s-n1)
    is kept out by keeping every GPU job off the node, and the log says so
    at error level. Once slurmd registers, the pod's GPU is held by index
    and the others go to jobs."""
    import os
    import signal
    node = "k8s-n1"
    c = cluster_factory()
    wait_for(lambda: "IDX:0" in c.run("scontrol", "-d", "show", "node", node).stdout,
             timeout=30, what="the pod's GPU to be held")
    slurmd = c._pids()[f"slurmd.{node}"]
    os.kill(slurmd, signal.SIGTERM)
    wait_for(lambda: not c._alive_ours(slurmd), timeout=30, what=f"slurmd of {node} to exit")
    c.stop_slurmctld()
    log = c.run_dir / "log" / "slurmctld.log"
    seen = len(log.read_text())
    c.start_slurmctld()
    if c.release.version == "22.05.8":
        # 22.05's slurmctld has no GPU bitmaps before slurmd registers
        wait_for(lambda: "cannot be marked by index" in log.read_text()[seen:], timeout=30,
                 what=f"the error that {node}'s pod GPUs cannot be marked yet")
        line = next(l for l in log.read_text()[seen:].splitlines() if "cannot be marked by index" in l)
        assert "error:" in line and node in line, line
        c.start_slurmd(node)
        wait_for(lambda: "marked now" in log.read_text()[seen:], timeout=60,
                 what=f"{node}'s pod GPUs to be marked once slurmd registered")
    else:
        # later releases read gres.conf in slurmctld: held by index at once
        wait_for(lambda: "held by Kubernetes kept from Slurm jobs" in log.read_text()[seen:], timeout=30,
                 what=f"{node}'s pod GPU to be held again")
        assert "IDX:0" in c.run("scontrol", "-d", "show", "node", node).stdout
        assert "cannot be marked by index" not in log.read_text()[seen:]
        c.start_slurmd(node)
    c.wait_nodes_idle([node])
    j = sbatch(c, "-w", node, "-o", "/dev/null", "-c1", "--gres=gpu:7", "--wrap", "sleep 60")
    wait_job(c, j, states={"RUNNING"})
    (a,) = running_allocations(c, [j])[j]
    assert 0 not in a.gpu_idx and len(a.gpu_idx) == 7, a
