# SPDX-License-Identifier: GPL-2.0-or-later
"""Kubernetes nodes as Slurm EXTERNAL nodes (NodeDiscovery=external, Slurm
25.05+): no slurmd and no slurm.conf line for them. The plugin creates each
from its Node object and slices (topology, memory, GPUs with their index),
external jobs (`sbatch --external`) land on them with what pods hold kept
out, and Kubernetes' view of the node follows: cordon and NotReady drain it,
their end resumes it, a Node gone deletes it. Runs on the newest release the
plugin is built for (26.05.3); skipped, saying how to build it, when it is
not built, unless K8S_REQUIRE_SLURM_RELEASES=1."""
import re

import pytest

from harness.alignment import running_allocations
from harness.cluster import Cluster, new_run_dir
from harness.jobs import show_job, wait_job
from harness.kube import job_claims, kubectl, pod_held
from harness.wait import wait_for
from conftest import FIXTURES
from test_releases_plugin import require

RELEASE = "26.05.3"
KUBE_NODES = ["k8s-n1", "k8s-n2", "k8s-n3", "k8s-n4"]


@pytest.fixture(scope="module")
def ext_cluster():
    require(RELEASE)
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.up(str(FIXTURES / "demo.json"), slurm=RELEASE, external=True)
        yield c
    finally:
        c.down()


def node(c, name) -> str:
    return c.run("scontrol", "show", "node", name, check=False).stdout


def field(text, key) -> str:
    m = re.search(rf"\b{key}=(\S*)", text)
    return m.group(1) if m else ""


def external_job(c, *args) -> int:
    out = c.run("sbatch", "--external", "--parsable", *args).stdout.strip()
    return int(out.split(";")[0])


def end_jobs(c):
    c.run("scancel", "--user", "root", check=False)
    wait_for(lambda: not c.run("squeue", "-h", check=False).stdout.strip(), timeout=60,
             what="all jobs to end")


def test_nodes_appear_with_their_slices_topology_and_gpus(ext_cluster):
    c = ext_cluster
    for name in KUBE_NODES:
        text = node(c, name)
        assert "EXTERNAL" in field(text, "State"), text
        assert field(text, "CPUTot") == "64", text
        assert field(text, "Sockets") == "2" and field(text, "CoresPerSocket") == "16", text
        assert field(text, "ThreadsPerCore") == "2", text
        assert field(text, "RealMemory") == "64000", text
        assert re.search(r"\bGres=gpu:[a-z0-9_]+:8\b", text), text
        assert "k8s" in field(text, "AvailableFeatures").split(","), text
    # no slurmd was started for them, and none was created twice
    assert not [n for n in c._pids() if n.startswith("slurmd.")]
    names = c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()
    assert sorted(set(names)) == KUBE_NODES and len(names) == len(KUBE_NODES)


def test_external_jobs_avoid_pod_held_devices_and_get_claims(ext_cluster):
    c = ext_cluster
    held = pod_held(c)
    jobs = [external_job(c, "-w", n, "-c", "4", "--gres=gpu:1", "--mem=100") for n in KUBE_NODES]
    for j in jobs:
        wait_job(c, j, states={"RUNNING"})
    allocs = running_allocations(c, jobs)
    for j in jobs:
        for a in allocs[j]:
            cpus, gpus = held.get(a.node, (set(), set()))
            assert not set(a.cpu_ids) & set(cpus), f"job {j} on {a.node} got pod-held CPUs"
            assert not set(a.gpu_idx) & set(gpus), f"job {j} on {a.node} got pod-held GPUs"
        wait_for(lambda: job_claims(c, j), timeout=30, what=f"claims of external job {j}")
    end_jobs(c)
    wait_for(lambda: not job_claims(c), timeout=30, what="claims of ended external jobs to go")


def test_cordon_and_not_ready_drain_and_their_end_resumes(ext_cluster):
    c = ext_cluster
    kubectl(c, "cordon", "k8s-n3")
    wait_for(lambda: "cordoned in Kubernetes" in field(node(c, "k8s-n3"), "Reason") + node(c, "k8s-n3"),
             timeout=30, what="k8s-n3 drained for the cordon")
    assert "DRAIN" in field(node(c, "k8s-n3"), "State")
    kubectl(c, "uncordon", "k8s-n3")
    wait_for(lambda: "DRAIN" not in field(node(c, "k8s-n3"), "State"), timeout=30,
             what="k8s-n3 resumed after uncordon")
    ready = c.apiserver()["controlUrl"] + "/_test/nodes/k8s-n4/ready"
    _post(ready, {"status": "False"})
    wait_for(lambda: "not Ready" in node(c, "k8s-n4"), timeout=30, what="k8s-n4 drained when NotReady")
    _post(ready, {"status": "True"})
    wait_for(lambda: "DRAIN" not in field(node(c, "k8s-n4"), "State"), timeout=30,
             what="k8s-n4 resumed when Ready again")


def test_a_node_gone_from_kubernetes_is_deleted_and_restart_rediscovers(ext_cluster):
    c = ext_cluster
    kubectl(c, "delete", "node", "k8s-n2")
    wait_for(lambda: "k8s-n2" not in c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split(), timeout=30,
             what="k8s-n2 deleted from Slurm")
    # slurmctld restarts: nodes come back from its state, none twice
    c.stop_slurmctld()
    c.start_slurmctld()
    wait_for(lambda: sorted(c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()) ==
             ["k8s-n1", "k8s-n3", "k8s-n4"], timeout=60, what="the three remaining nodes after restart")
    j = external_job(c, "-w", "k8s-n1", "-c", "2")
    wait_job(c, j, states={"RUNNING"})
    assert show_job(c, j)["NodeList"] == "k8s-n1"
    end_jobs(c)


def _post(url, body):
    import json
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()
